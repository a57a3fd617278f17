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
 *
 * A changed file's data is read from the daemon's upper store instead when
 * the store's file is the one the view shows: a read through the mount
 * costs the daemon a request per 128 KiB (and a wakeup of one of its
 * threads), the store is a plain directory. The store is as
 * agent-controlled as the view (it is where the agent's writes land), so
 * it is opened the same way, and its file is used only if its size and
 * times equal the view's lstat; anything else falls back to the view.
 */
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <linux/magic.h>
#include <strings.h>
#include <sys/statfs.h>
#include <sys/syscall.h>

#include "fs.h"
#include "lib/readall.h"
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

/* Read the open regular file fd (fstat'ed as st) whole, bounded by REVIEW_MAX_FILE_SIZE. */
static int fd_read_all(int fd, const struct stat *st, void **ret, size_t *ret_len)
{
        char *buf = NULL;
        int r;

        if (!S_ISREG(st->st_mode))
                return -EINVAL;
        r = fd_read_whole(fd, (size_t)st->st_size, REVIEW_MAX_FILE_SIZE, &buf, ret_len);
        if (r >= 0)
                *ret = buf;
        return r;
}

int review_view_read(int dirfd, const char *name, void **ret, size_t *ret_len)
{
        _cleanup_close_ int fd = -1;
        struct stat st;

        /* O_NONBLOCK: a FIFO swapped in after lstat must not hang us; fstat rejects it. */
        fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        return fd_read_all(fd, &st, ret, ret_len);
}

/*
 * syncfs(2) starts the write-back of what the kernel still holds for the
 * mount (pages dirtied through a shared mapping); FUSE ends a page's
 * write-back before the daemon has it, so one may still be on its way when
 * the changes list is read, as any write racing the diff may.
 */
int review_view_settle(review *r)
{
        _cleanup_close_ int fd = -1;
        struct statfs sf;

        fd = openat(r->viewfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || fstatfs(fd, &sf) < 0)
                return review_fail(r, negative_errno(), "workspace view '%s': %m", r->o.view);
        /* Not a FUSE mount (a plain tree given as the view): nothing is held back. */
        if ((unsigned long)sf.f_type != FUSE_SUPER_MAGIC)
                return 0;
        if (syncfs(fd) < 0)
                return review_fail(r, negative_errno(), "flushing the workspace view '%s': %m",
                                   r->o.view);
        return 0;
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
        return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

int review_upper_read(review *r, const char *rel, const struct stat *vst, void **ret,
                      size_t *ret_len)
{
        struct open_how how = {
                .flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | O_NOATIME,
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
                           RESOLVE_NO_XDEV,
        };
        _cleanup_free_ void *data = NULL;
        _cleanup_close_ int fd = -1;
        char path[PATH_MAX];
        struct stat st;
        size_t len = 0;
        long k;

        if (r->upperfd < 0 || fs_upper_path(rel, path, sizeof(path)) < 0)
                return -EAGAIN;
        k = syscall(SYS_openat2, r->upperfd, path, &how, sizeof(how));
        if (k < 0 && errno == EPERM) {
                /* O_NOATIME needs us to own the file; the daemon's atime then moves, as a read
                 * would. */
                how.flags &= ~(uint64_t)O_NOATIME;
                k = syscall(SYS_openat2, r->upperfd, path, &how, sizeof(how));
        }
        if (k < 0)
                return -EAGAIN; /* not in the store (a lower file), or not ours to read */
        fd = (int)k;
        /*
         * The store's file is the one the view shows only if the daemon would
         * report the same size and times for it: a metacopy is empty there
         * (the view shows the lower size), and any write since the view's
         * lstat moves ctime, which no one can set.
         */
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size != vst->st_size ||
            !same_time(&st.st_mtim, &vst->st_mtim) || !same_time(&st.st_ctim, &vst->st_ctim))
                return -EAGAIN;
        k = fd_read_all(fd, &st, &data, &len);
        if (k < 0 || len != (size_t)vst->st_size)
                return -EAGAIN; /* changing as we read: let the view say what it holds */
        *ret = TAKE_PTR(data);
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
