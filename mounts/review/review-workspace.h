/* SPDX-License-Identifier: MIT */
/*
 * review-workspace.h: a configured workspace as seen by review: the mount's
 * view of the repo and the home, its changes list, and mounting on demand.
 */
#pragma once

#include <stdbool.h>

#include "review.h"

struct config;
typedef struct review_workspace review_workspace;

/*
 * Paths of the workspace's view under its mountpoint. With `mount`, mount it
 * (`cloister mount CONFIG`) unless a daemon already serves it; the mount is
 * undone by review_workspace_close(). c must outlive w. On failure,
 * *ret_error (if not NULL) may get a malloc'd one-line reason.
 */
int review_workspace_open(const struct config *c, const char *config_path, bool mount,
                          review_workspace **ret, char **ret_error);
/* Unmount if we mounted; frees w. Returns < 0 if the unmount failed. */
int review_workspace_close(review_workspace *w);
/* Fill o with the view, changes, home and exclusions (in_memory etc. left false). */
void review_workspace_options(const review_workspace *w, struct review_options *o);
