/* SPDX-License-Identifier: MIT */
/*
 * pidfile.c: pid files that can't name a reused pid (pidfile.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pidfile.h"
#include "util.h"

int pidfile_starttime(pid_t pid, unsigned long long *ret)
{
        char path[64], stat[1024], *p;
        unsigned long long t;
        ssize_t n;
        int fd;

        /* open and read, not stdio: a spawned child calls this before its exec
         * (sandbox-registry.c), where nothing may allocate. */
        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -ESRCH;
        n = read(fd, stat, sizeof(stat) - 1);
        close(fd);
        if (n <= 0)
                return -ESRCH;
        stat[n] = '\0';
        /* "PID (comm) S ...": comm may hold anything, so after the last ')'. */
        p = strrchr(stat, ')');
        if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
                return -ESRCH;
        /* Field 22 (starttime); after ')' come fields 3.. */
        if (sscanf(p + 2,
                   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
                   "%*d %*d %*d %llu",
                   &t) != 1)
                return -EIO;
        *ret = t;
        return 0;
}

int pidfile_write(int dirfd, const char *name)
{
        char tmp[300], line[64];
        unsigned long long t;
        int fd, n, r = pidfile_starttime(getpid(), &t);

        if (r < 0)
                return r;
        n = snprintf(line, sizeof(line), "%d %llu\n", (int)getpid(), t);
        if (snprintf(tmp, sizeof(tmp), "%s.tmp", name) >= (int)sizeof(tmp))
                return -ENAMETOOLONG;
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return negative_errno();
        r = write(fd, line, (size_t)n) == n ? 0 : -EIO;
        close(fd);
        if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
                r = negative_errno();
        if (r < 0)
                (void)unlinkat(dirfd, tmp, 0);
        return r;
}

pid_t pidfile_read(int dirfd, const char *name)
{
        char buf[64];
        unsigned long long want, have;
        int pid, fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        ssize_t n;

        if (fd < 0)
                return 0;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return 0;
        buf[n] = '\0';
        if (sscanf(buf, "%d %llu", &pid, &want) != 2 || pid <= 1)
                return 0;
        if (pidfile_starttime(pid, &have) < 0 || have != want)
                return 0;
        return pid;
}

int pidfile_stop(int dirfd, const char *name, int timeout_ms)
{
        pid_t pid = pidfile_read(dirfd, name);
        int pidfd;
        struct timespec t0, t;

        if (pid <= 0) {
                (void)unlinkat(dirfd, name, 0);
                return 0;
        }
        /* A pidfd pins the process: the signals reach it and no other. */
        pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
        if (pidfd < 0)
                return errno == ESRCH ? 0 : negative_errno();
        if (syscall(SYS_pidfd_send_signal, pidfd, SIGTERM, NULL, 0) < 0 && errno != ESRCH) {
                int r = negative_errno();
                close(pidfd);
                return r;
        }
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (;;) {
                struct pollfd p = {.fd = pidfd, .events = POLLIN};
                long left;

                clock_gettime(CLOCK_MONOTONIC, &t);
                left = timeout_ms -
                       ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
                if (left <= 0) {
                        (void)syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
                        (void)poll(&p, 1, 1000);
                        break;
                }
                if (poll(&p, 1, (int)left) > 0)
                        break;
        }
        close(pidfd);
        (void)unlinkat(dirfd, name, 0);
        return 0;
}
