/* SPDX-License-Identifier: MIT */
/*
 * claims.h: where a workspace's host paths may lie, against its own and
 * every known workspace's (claims.c, known.h).
 */
#pragma once

struct config;

/*
 * Refuse (-EEXIST, *ret_error names the other workspace and its config) a
 * workspace whose state or mountpoint overlaps (lies inside, or contains)
 * another known workspace's state, mountpoint or sources ([repo] source,
 * [mirror] source, [home] seed), or its own sources; whose [broker] dir
 * overlaps a source, its own or another's; whose sources overlap another's
 * state, mountpoint or broker dir; whose state lies inside its own
 * mountpoint; or whose mountpoint lies inside its own state but outside
 * <state>/mnt. Paths are compared resolved (symlinks, and bind mounts by
 * device and inode). A config naming the very same state is the same
 * workspace, and is left to the state's lock. *ret_section, *ret_key: the
 * key of c at fault (e.g. "workspace", "state"). For cloister mount, run
 * and check, before they write. The remembered workspaces are found through
 * the index claims_record fills (O(depth of each path), not a load of every
 * config), each compared as its config is now.
 */
int claims_check(const struct config *c, const char **ret_section, const char **ret_key,
                 char **ret_error);
/*
 * The same for a fork of c about to be made at state: its state (and its
 * mountpoint, <state>/mnt) must not overlap any path of c or of any known
 * workspace (also the configs beside new_config), the same state included.
 * That nothing is there yet is fs_fork_state's check (it makes the state
 * with mkdir). Called before the fork writes anything.
 */
int claims_check_fork(const struct config *c, const char *new_config, const char *state,
                      char **ret_error);
/*
 * Record c's claims in this user's index of known workspaces
 * ($XDG_STATE_HOME/cloister/claims, claims.c), so that later checks find
 * them by where they lie, not by loading every config. For cloister mount,
 * once its check passed, and again once the mount serves (its state exists
 * then, and is found by its device and inode too).
 */
int claims_record(const struct config *c);
