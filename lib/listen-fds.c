/* SPDX-License-Identifier: MIT */
/*
 * listen-fds.c: socket activation's receiving end (see listen-fds.h).
 *
 * The variables come from whoever started us, so they are parsed strictly:
 * a LISTEN_FDS that is not a plain decimal number is an error, not zero,
 * because a daemon that silently ignores the sockets it was given would
 * bind its own next to them and nobody would notice.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "listen-fds.h"
#include "util.h"

/* A decimal number without sign, spaces or leading zeros; -EINVAL otherwise. */
static int parse_decimal(const char *s, unsigned long max, unsigned long *ret)
{
        unsigned long v = 0;

        if (!s || !*s || (s[0] == '0' && s[1]))
                return -EINVAL;
        for (; *s; s++) {
                if (*s < '0' || *s > '9')
                        return -EINVAL;
                if (v > (max - (unsigned long)(*s - '0')) / 10)
                        return -EINVAL;
                v = v * 10 + (unsigned long)(*s - '0');
        }
        *ret = v;
        return 0;
}

int listen_fds_take(void)
{
        const char *pid_s = getenv("LISTEN_PID"), *fds_s = getenv("LISTEN_FDS");
        unsigned long pid, n;
        int r = 0;

        if (!pid_s)
                goto out;
        if (parse_decimal(pid_s, (unsigned long)INT32_MAX, &pid) < 0 || pid == 0) {
                r = -EINVAL;
                goto out;
        }
        if (pid != (unsigned long)getpid())
                goto out; /* for a process before us (we were exec'd by it): not ours */
        if (parse_decimal(fds_s, LISTEN_FDS_MAX, &n) < 0) {
                r = -EINVAL;
                goto out;
        }
        for (int fd = LISTEN_FDS_START; fd < LISTEN_FDS_START + (int)n; fd++) {
                int flags = fcntl(fd, F_GETFD);

                if (flags < 0 || fcntl(fd, F_SETFD, flags | FD_CLOEXEC) < 0) {
                        r = -EBADF;
                        goto out;
                }
        }
        r = (int)n;
out:
        unsetenv("LISTEN_PID");
        unsetenv("LISTEN_FDS");
        unsetenv("LISTEN_FDNAMES");
        return r;
}

int listen_fd_unix_path(int fd, char *buf, size_t size)
{
        struct sockaddr_un sa;
        socklen_t len = sizeof(sa);
        int type, listening;
        socklen_t olen = sizeof(int);
        struct stat sb;
        size_t n;

        if (fstat(fd, &sb) < 0)
                return negative_errno();
        if (!S_ISSOCK(sb.st_mode))
                return -ENOTSOCK;
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &olen) < 0)
                return negative_errno();
        if (type != SOCK_STREAM)
                return -EPROTOTYPE;
        olen = sizeof(int);
        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &olen) < 0)
                return negative_errno();
        if (!listening)
                return -EINVAL;
        memset(&sa, 0, sizeof(sa));
        if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
                return negative_errno();
        if (sa.sun_family != AF_UNIX || len <= offsetof(struct sockaddr_un, sun_path) ||
            sa.sun_path[0] == '\0')
                return -EAFNOSUPPORT; /* unnamed, abstract, or not a unix socket */
        n = strnlen(sa.sun_path,
                    MIN((size_t)len - offsetof(struct sockaddr_un, sun_path), sizeof(sa.sun_path)));
        if (n + 1 > size)
                return -ENAMETOOLONG;
        memcpy(buf, sa.sun_path, n);
        buf[n] = '\0';
        return 0;
}
