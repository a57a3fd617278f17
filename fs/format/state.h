/* SPDX-License-Identifier: MIT */
/*
 * state.h: host-side helpers for the state directory (state.c).
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

int state_mkdir_p(const char *path, mode_t mode);
/* Open (and with create, make) a directory name in dfd, never following a link. */
int state_open_dir(int dfd, const char *name, bool create);
/* Remove name in dfd and everything below it, never following a link. */
int state_rm_rf_at(int dfd, const char *name, unsigned depth);
/* Copy the host file or tree source to the relative path dest below dest_root. */
int state_copy_seed(const char *source, int dest_root, const char *dest);
