/* SPDX-License-Identifier: MIT */
/*
 * lifetime.c: a run-scoped daemon's lifetime (lifetime.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include "lifetime.h"
#include "util.h"

static int open_lock(const char *state)
{
        _cleanup_free_ char *p = NULL;
        int fd;

        if (asprintf(&p, "%s/" LIFETIME_LOCK, state) < 0)
                return -ENOMEM;
        fd = open(p, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        return fd < 0 ? negative_errno() : fd;
}

int lifetime_hold(const char *state)
{
        int fd = open_lock(state);

        if (fd < 0)
                return fd;
        while (flock(fd, LOCK_SH) < 0) {
                if (errno != EINTR) {
                        int r = negative_errno();
                        close(fd);
                        return r;
                }
        }
        return fd;
}

int lifetime_open(const char *state)
{
        return open_lock(state);
}

bool lifetime_over(int fd)
{
        return fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0;
}
