/* SPDX-License-Identifier: MIT */
/*
 * mkdir.h: make a directory and its missing parents, as `mkdir -p` does.
 */
#pragma once

#include <sys/types.h>

/*
 * Make path with mode, and each missing parent with parent_mode (an
 * existing one is left as it is). A path that exists already, as anything,
 * is not an error here: a caller that needs a directory, or a private one,
 * checks it after. Returns 0 or a negative errno.
 */
int mkdir_p(const char *path, mode_t parent_mode, mode_t mode);
/* Only the missing parents of path, with mode (for a file or socket to come). */
int mkdir_parents(const char *path, mode_t mode);
