/* SPDX-License-Identifier: MIT */
/*
 * mount-server.h: `cloister mount --server` (mount-server.c), a long-lived
 * process per user that starts the FUSE daemons `cloister mount` asks it
 * for, and what cmd-mount.c and it share.
 *
 * Why: every daemon forked from its own short-lived `cloister mount` owns a
 * private copy of every page the dynamic loader wrote (relocations of the
 * commands module's 31 libraries: libcrypto's alone is about 400 kB).
 * Daemons forked from one process that loaded the module once share those
 * pages with it and with each other, copy-on-write.
 */
#pragma once

#include "config.h"

/* mount_server_request's answer when no server of ours listens: fork as before. */
#define MOUNT_SERVER_NONE (-1)

/* $XDG_STATE_HOME/cloister/mount.sock (known_xdg_dir); 0 or a negative errno. */
int mount_server_path(char **ret);

/* `cloister mount --server`: serve until SIGTERM, SIGINT or SIGHUP; the exit code. */
int mount_server_main(void);

/*
 * Ask the server of this user, if one listens, to start c's daemon (c was
 * loaded from file and checked by the caller). MOUNT_SERVER_NONE if none
 * does, else what `cloister mount` exits with (0: it serves; the reason
 * for any other code is on stderr), and the daemon's pid in *ret_pid.
 */
int mount_server_request(const char *file, const struct config *c, int *ret_pid);

/*
 * Start c's daemon in a child of this process (cmd-mount.c): 0 once it
 * serves, with its pid in *ret_pid, else the exit code, the reason on
 * stderr. close_in_child: a descriptor the daemon must not keep, or -1.
 */
int mount_daemon_fork(const struct config *c, int close_in_child, int *ret_pid);
