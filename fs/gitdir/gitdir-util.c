/* SPDX-License-Identifier: MIT */
/*
 * gitdir-util.c: error messages and the *at() file helpers gitdir writes
 * the destination with.
 *
 * The destination is a directory fd the daemon created; every name below it
 * is created with O_EXCL (or mkdirat) and opened with O_NOFOLLOW, so even a
 * planted symlink could never redirect a write outside it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gitdir-private.h"

int gitdir_error(char **err, int r, const char *fmt, ...)
{
        va_list ap;
        char *m = NULL;

        if (!err || *err)
                return r;
        va_start(ap, fmt);
        if (vasprintf(&m, fmt, ap) < 0)
                m = NULL;
        va_end(ap);
        *err = m;
        return r;
}

int gitdir_git_error(char **err, int gr, const char *what)
{
        const git_error *e = git_error_last(); /* may be NULL */
        int r;

        switch (gr) {
        case GIT_ENOTFOUND:
                r = -ENOENT;
                break;
        case GIT_EEXISTS:
                r = -EEXIST;
                break;
        case GIT_EAMBIGUOUS:
        case GIT_EINVALIDSPEC:
        case GIT_EINVALID:
        case GIT_EPEEL:
                r = -EINVAL;
                break;
        case GIT_EOWNER:
                r = -EPERM;
                break;
        case GIT_ELOCKED:
                r = -EBUSY;
                break;
        default:
                r = -EIO;
        }
        if (e && e->message)
                return gitdir_error(err, r, "%s: %s", what, e->message);
        return gitdir_error(err, r, "%s: libgit2 error %d", what, gr);
}

int gitdir_write_file(int dirfd, const char *name, const void *data, size_t len, char **err)
{
        _cleanup_close_ int fd = -1;
        const char *p = data;

        fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return gitdir_error(err, negative_errno(), "create %s: %m", name);
        while (len > 0) {
                ssize_t n = write(fd, p, len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return gitdir_error(err, negative_errno(), "write %s: %m", name);
                }
                p += n;
                len -= (size_t)n;
        }
        if (close(TAKE_FD(fd)) < 0)
                return gitdir_error(err, negative_errno(), "close %s: %m", name);
        return 0;
}

int gitdir_mkdirs(int dirfd, const char *path, int *ret_fd, char **err)
{
        _cleanup_free_ char *copy = strdup(path);
        _cleanup_close_ int cur = -1;
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        cur = fcntl(dirfd, F_DUPFD_CLOEXEC, 3);
        if (cur < 0)
                return gitdir_error(err, negative_errno(), "dup: %m");
        for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
                int next;

                if (streq(c, ".") || streq(c, ".."))
                        return gitdir_error(err, -EINVAL, "bad path component in %s", path);
                if (mkdirat(cur, c, 0755) < 0 && errno != EEXIST)
                        return gitdir_error(err, negative_errno(), "mkdir %s: %m", path);
                next = openat(cur, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0)
                        return gitdir_error(err, negative_errno(), "open %s: %m", path);
                safe_close(cur);
                cur = next;
        }
        *ret_fd = TAKE_FD(cur);
        return 0;
}

int gitdir_write_loose_ref(int dirfd, const char *refname, const git_oid *id, char **err)
{
        _cleanup_free_ char *dir = strdup(refname);
        _cleanup_close_ int fd = -1;
        char hex[GIT_OID_HEXSZ + 2];
        char *slash;
        int r;

        if (!dir)
                return -ENOMEM;
        slash = strrchr(dir, '/');
        if (!slash)
                return gitdir_error(err, -EINVAL, "bad ref name %s", refname);
        *slash = '\0';
        r = gitdir_mkdirs(dirfd, dir, &fd, err);
        if (r < 0)
                return r;
        git_oid_fmt(hex, id);
        hex[GIT_OID_HEXSZ] = '\n';
        hex[GIT_OID_HEXSZ + 1] = '\0';
        return gitdir_write_file(fd, slash + 1, hex, GIT_OID_HEXSZ + 1, err);
}
