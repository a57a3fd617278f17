/* SPDX-License-Identifier: MIT */
/*
 * readall.c: one bounded read-whole loop for the file-system daemon's
 * sidecars and the review's reads of the upper store. Reading in as few
 * read(2) calls as the size allows matters: jansson's json_loadfd read a
 * sidecar one byte per call. And its pair, the one write-whole loop.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "readall.h"
#include "util.h"

int fd_read_whole(int fd, size_t size, size_t max, char **ret, size_t *ret_len)
{
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, cap;

        if (size > max)
                return -EFBIG;
        /* +1: room to see growth past the stat size (and for a caller's NUL). */
        cap = size + 1;
        buf = malloc(cap);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t n;

                if (len == cap) {
                        size_t ncap = MIN(cap * 2, max + 1);
                        char *nb;

                        if (cap > max)
                                return -EFBIG;
                        nb = realloc(buf, ncap);
                        if (!nb)
                                return -ENOMEM;
                        buf = nb;
                        cap = ncap;
                }
                n = read(fd, buf + len, cap - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return negative_errno();
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        /* len < cap here: a full buffer is grown before the read that sees the end. */
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

int fd_write_whole(int fd, const void *buf, size_t len)
{
        const char *p = buf;

        while (len > 0) {
                ssize_t n = write(fd, p, len);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        return -EIO; /* no progress and no errno: don't spin */
                p += n;
                len -= (size_t)n;
        }
        return 0;
}
