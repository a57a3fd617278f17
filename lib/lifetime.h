/* SPDX-License-Identifier: MIT */
/*
 * lifetime.h: a daemon that `cloister run` starts for a workspace (the
 * broker, the egress proxy) serves as long as any run of that workspace
 * lives, and no longer.
 *
 * Each run holds a shared flock on <state>/runs.lock for its whole life;
 * the kernel drops it however the run ends, SIGKILL included. A daemon
 * started "for runs" checks now and then whether it can take the lock
 * exclusively: when it can, no run is left, and it stops while it holds
 * the lock, so that a run starting meanwhile waits for it to be gone and
 * then starts a fresh one. The last run to end also stops the daemons at
 * once (mounts/sandbox), so the check only matters after runs are killed.
 * runs.lock is not run.lock, whose shared-to-exclusive upgrade tells the
 * last run it is the last: a daemon's attempt must never get in its way.
 */
#pragma once

#include <stdbool.h>

#define LIFETIME_LOCK     "runs.lock"
#define LIFETIME_CHECK_MS 1000 /* how often a daemon looks */

/* A run: hold <state>/runs.lock shared (waiting while a daemon stops). The
 * fd is the hold; -errno on failure. */
int lifetime_hold(const char *state);
/* A daemon: open <state>/runs.lock (the fd to pass to lifetime_over). */
int lifetime_open(const char *state);
/* true: no run holds it (and the caller now holds it, until it closes fd). */
bool lifetime_over(int fd);
