/* SPDX-License-Identifier: MIT */
/*
 * known.h: the configs this user knows (known.c), for `cloister list` and
 * for the check of where a workspace's paths may lie (claims.h).
 */
#pragma once

#include <stddef.h>

/* $XDG_CONFIG_HOME/cloister or $XDG_STATE_HOME/cloister (kind "config" or "state"), or the
 * ~/.config and ~/.local/state defaults. */
int known_xdg_dir(const char *kind, char **ret);
/* Remember a config ($XDG_STATE_HOME/cloister/configs), once. */
int known_config_remember(const char *config_path);
/*
 * The configs in $XDG_CONFIG_HOME/cloister, the remembered ones, and the
 * *.ini in also_dir (if not NULL): each once, resolved (realpath), those
 * that no longer exist left out; *ret is NULL-terminated (strv_free).
 */
int known_configs(const char *also_dir, char ***ret, size_t *ret_n);
/*
 * The same without the remembered ones: the configs of the two folders only.
 * The remembered ones are found by where they lie (claims.c's index).
 */
int known_configs_in_folders(const char *also_dir, char ***ret, size_t *ret_n);
