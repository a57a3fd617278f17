/* SPDX-License-Identifier: MIT */
/*
 * review-view.c: reading the agent's workspace view.
 *
 * Trust boundary: everything under the view is agent-controlled and may
 * change while we read it. Paths are resolved beneath a directory fd with
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
 * the last component is opened with O_NOFOLLOW or read with lstat/readlink,
 * so an agent symlink is only ever recorded, never followed. Sizes and
 * lengths are bounded before anything is allocated.
 */
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <strings.h>
#include <sys/syscall.h>

#include "review-private.h"

bool review_path_ok(const char *rel)
{
        const char *p = rel;
        size_t len = strlen(rel);

        if (len == 0 || len >= PATH_MAX || rel[0] == '/' || rel[len - 1] == '/')
                return false;
        while (*p) {
                const char *e = strchrnul(p, '/');
                size_t n = (size_t)(e - p);
                if (n == 0 || n > NAME_MAX || (n == 1 && p[0] == '.') ||
                    (n == 2 && p[0] == '.' && p[1] == '.') ||
                    (n == 4 && strncasecmp(p, ".git", 4) == 0))
                        return false;
                p = *e ? e + 1 : e;
        }
        return true;
}

int review_view_parent(int rootfd, const char *rel, int *ret_fd, const char **ret_base)
{
        const char *slash = strrchr(rel, '/');
        struct open_how how = {
                .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
        };
        _cleanup_free_ char *dir = NULL;
        long fd;

        if (!slash) {
                fd = openat(rootfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0)
                        return negative_errno();
                *ret_fd = (int)fd;
                *ret_base = rel;
                return 0;
        }
        dir = strndup(rel, (size_t)(slash - rel));
        if (!dir)
                return -ENOMEM;
        fd = syscall(SYS_openat2, rootfd, dir, &how, sizeof(how));
        if (fd < 0)
                return negative_errno();
        *ret_fd = (int)fd;
        *ret_base = slash + 1;
        return 0;
}

int review_view_read(int dirfd, const char *name, void **ret, size_t *ret_len)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, cap;
        struct stat st;

        /* O_NONBLOCK: a FIFO swapped in after lstat must not hang us; fstat rejects it. */
        fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        if ((uint64_t)st.st_size > REVIEW_MAX_FILE_SIZE)
                return -EFBIG;
        cap = (size_t)st.st_size + 1; /* +1 to see growth past the stat size */
        buf = malloc(cap);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t n;
                if (len == cap) {
                        if (cap > REVIEW_MAX_FILE_SIZE)
                                return -EFBIG;
                        size_t ncap = MIN(cap * 2, (size_t)REVIEW_MAX_FILE_SIZE + 1);
                        char *nb = realloc(buf, ncap);
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
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

int review_view_readlink(int dirfd, const char *name, char **ret)
{
        _cleanup_free_ char *buf = malloc(PATH_MAX);
        ssize_t n;

        if (!buf)
                return -ENOMEM;
        n = readlinkat(dirfd, name, buf, PATH_MAX);
        if (n < 0)
                return negative_errno();
        if (n >= PATH_MAX)
                return -ENAMETOOLONG;
        buf[n] = 0;
        *ret = TAKE_PTR(buf);
        return 0;
}
