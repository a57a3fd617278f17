/* SPDX-License-Identifier: MIT */
/*
 * fs.h: the cloister workspace filesystem, one FUSE session per workspace.
 *
 * The mount root is synthetic and read-only; beneath it are the copy-on-write
 * repo, the hidden home, read-only mirrors and the /.cloister control dir.
 * docs/fs-design.md describes the state directory, whiteouts, the inode map
 * and the caching rules. Library code: nothing here prints; errors come back
 * as a negative errno plus, where useful, a one-line message.
 */
#pragma once

#include <stdbool.h>

struct config;
typedef struct fs_workspace fs_workspace;

/*
 * Prepare the state directory and open every layer of the workspace
 * described by c (nothing is mounted yet). On failure returns a negative
 * errno and, if ret_error is not NULL, a malloc'd one-line reason.
 */
int fs_workspace_new(const struct config *c, fs_workspace **ret, char **ret_error);
void fs_workspace_free(fs_workspace *w);

/*
 * Mount at the config's mountpoint and serve until unmounted or signalled
 * (SIGTERM, SIGINT, SIGHUP). Once the mount serves requests, one byte is
 * written to ready_fd (if >= 0) and it is closed. Returns 0 after a clean
 * unmount.
 */
int fs_workspace_serve(fs_workspace *w, int ready_fd, char **ret_error);

/*
 * Is a daemon serving this mountpoint? 1 yes (its pid in *ret_pid), 0 no
 * (stale mounts are detached and a stale pid file removed), < 0 error.
 */
int fs_mount_probe(const char *state, const char *mountpoint, int *ret_pid);

/* Unmount and wait up to timeout_ms for the daemon to exit; 0 if not mounted. */
int fs_unmount(const char *state, const char *mountpoint, int timeout_ms);
