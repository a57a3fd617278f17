/* SPDX-License-Identifier: MIT */
/*
 * pidfile.h: a pid file that names one process, not whatever process gets
 * its number later. It holds "PID STARTTIME" (the start time from
 * /proc/PID/stat, in clock ticks since boot): a process whose start time
 * differs is another, and is never signalled in the file's name.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/* The start time of pid (field 22 of /proc/PID/stat); -ESRCH if it is gone. */
int pidfile_starttime(pid_t pid, unsigned long long *ret);
/* Write "PID STARTTIME\n" of this process to dirfd/name, atomically (0600). */
int pidfile_write(int dirfd, const char *name);
/* The live process the file at dirfd/name names, or 0 (none, gone, or reused). */
pid_t pidfile_read(int dirfd, const char *name);
/*
 * SIGTERM to the process the file names, and wait up to timeout_ms for it
 * to be gone (then SIGKILL). The file is removed. 0, or -errno.
 */
int pidfile_stop(int dirfd, const char *name, int timeout_ms);
