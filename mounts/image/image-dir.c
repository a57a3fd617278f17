/* SPDX-License-Identifier: MIT */
/*
 * image-dir.c: dir:PATH as one layer: the tree written as a tar, in name
 * order, owned by 0:0, with nothing of the host's (no user names, no
 * access times, no extended attributes), so that the same tree gives the
 * same layer and so the same digest. With SOURCE_DATE_EPOCH, no time is
 * later than it (the reproducible-builds convention). The tar is then
 * unpacked like any other layer, through every check of image-unpack.c.
 *
 * The tree is read with directory fds and O_NOFOLLOW: a symlink in it is
 * stored as a symlink, never followed.
 */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image-private.h"
#include "lib/util.h"

#define DIR_DEPTH_MAX 256

struct walk {
        struct archive *a;
        uint64_t epoch; /* 0: none */
        char **error;
        char buf[1 << 16];
};

static int name_cmp(const void *x, const void *y)
{
        return strcmp(*(char *const *)x, *(char *const *)y);
}

/* The names in dirfd, sorted bytewise (NULL-terminated). */
static int names_sorted(int dirfd, char ***ret)
{
        int fd = dup(dirfd);
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_strv_free_ char **v = NULL;
        size_t n = 0, allocated = 0;
        struct dirent *de;

        if (fd < 0)
                return negative_errno();
        d = fdopendir(fd);
        if (!d) {
                close(fd);
                return negative_errno();
        }
        rewinddir(d);
        while ((errno = 0, de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (n + 2 > allocated) {
                        size_t a = MAX(allocated * 2, (size_t)16);
                        char **nv = realloc(v, a * sizeof(char *));
                        if (!nv)
                                return -ENOMEM;
                        v = nv;
                        allocated = a;
                }
                v[n] = strdup(de->d_name);
                if (!v[n])
                        return -ENOMEM;
                v[++n] = NULL;
        }
        if (errno)
                return negative_errno();
        if (!v && !(v = calloc(1, sizeof(char *))))
                return -ENOMEM;
        qsort(v, n, sizeof(char *), name_cmp);
        *ret = TAKE_PTR(v);
        return 0;
}

static int entry_add(struct walk *w, int dirfd, const char *name, const char *rel,
                     const struct stat *st)
{
        struct archive_entry *e = archive_entry_new();
        _cleanup_close_ int fd = -1;
        int r = 0;

        if (!e)
                return -ENOMEM;
        archive_entry_set_pathname(e, rel);
        archive_entry_set_mode(e, st->st_mode);
        archive_entry_set_uid(e, 0);
        archive_entry_set_gid(e, 0);
        archive_entry_set_mtime(
                e, w->epoch && (uint64_t)st->st_mtime > w->epoch ? (time_t)w->epoch : st->st_mtime,
                0);
        if (S_ISREG(st->st_mode)) {
                archive_entry_set_size(e, st->st_size);
                fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
                if (fd < 0)
                        r = negative_errno();
        } else if (S_ISLNK(st->st_mode)) {
                char target[PATH_MAX];
                ssize_t n = readlinkat(dirfd, name, target, sizeof(target) - 1);
                if (n < 0)
                        r = negative_errno();
                else {
                        target[n] = '\0';
                        archive_entry_set_symlink(e, target);
                }
        } else if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode)) {
                archive_entry_set_rdev(e, st->st_rdev);
        }
        if (r == 0 && archive_write_header(w->a, e) != ARCHIVE_OK)
                r = -EIO;
        for (off_t left = S_ISREG(st->st_mode) ? st->st_size : 0; r == 0 && left > 0;) {
                ssize_t n = read(fd, w->buf, (size_t)MIN((off_t)sizeof(w->buf), left));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        r = n < 0 ? negative_errno() : -EIO; /* it shrank meanwhile */
                        break;
                }
                if (archive_write_data(w->a, w->buf, (size_t)n) != n)
                        r = -EIO;
                left -= n;
        }
        archive_entry_free(e);
        if (r < 0)
                return image_errorf(w->error, r, "dir: '%s': %s", rel,
                                    r == -EIO && archive_error_string(w->a)
                                            ? archive_error_string(w->a)
                                            : strerror(-r));
        return 0;
}

static int walk_dir(struct walk *w, int dirfd, const char *prefix, unsigned depth)
{
        _cleanup_strv_free_ char **names = NULL;
        int r;

        if (depth > DIR_DEPTH_MAX)
                return image_errorf(w->error, -ELOOP, "dir: '%s': nested deeper than %d", prefix,
                                    DIR_DEPTH_MAX);
        r = names_sorted(dirfd, &names);
        if (r < 0)
                return image_errorf(w->error, r, "dir: '%s': %s", prefix, strerror(-r));
        for (char **n = names; *n; n++) {
                _cleanup_free_ char *rel = NULL;
                struct stat st;

                if (asprintf(&rel, "%s%s", prefix, *n) < 0)
                        return -ENOMEM;
                if (fstatat(dirfd, *n, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return image_errorf(w->error, negative_errno(), "dir: '%s': %m", rel);
                if (S_ISSOCK(st.st_mode))
                        continue; /* a socket is nothing an image can carry */
                if (S_ISDIR(st.st_mode)) {
                        _cleanup_free_ char *sub = NULL;
                        _cleanup_close_ int fd =
                                openat(dirfd, *n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (fd < 0)
                                return image_errorf(w->error, negative_errno(), "dir: '%s': %m",
                                                    rel);
                        if (asprintf(&sub, "%s/", rel) < 0)
                                return -ENOMEM;
                        r = entry_add(w, dirfd, *n, sub, &st);
                        if (r >= 0)
                                r = walk_dir(w, fd, sub, depth + 1);
                } else
                        r = entry_add(w, dirfd, *n, rel, &st);
                if (r < 0)
                        return r;
        }
        return 0;
}

int image_dir_tar(const char *dir, const char *layer_path, uint64_t source_date_epoch,
                  char **ret_error)
{
        _cleanup_close_ int root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_close_ int out = -1;
        struct walk *w = NULL;
        const char *env = getenv("SOURCE_DATE_EPOCH");
        int r;

        if (root < 0)
                return image_errorf(ret_error, negative_errno(), "dir:%s: %m", dir);
        out = open(layer_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (out < 0)
                return image_errorf(ret_error, negative_errno(), "%s: %m", layer_path);
        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->error = ret_error;
        w->epoch = source_date_epoch;
        if (!w->epoch && env && *env)
                w->epoch = strtoull(env, NULL, 10);
        w->a = archive_write_new();
        if (!w->a || archive_write_set_format_pax_restricted(w->a) != ARCHIVE_OK ||
            archive_write_add_filter_none(w->a) != ARCHIVE_OK ||
            archive_write_open_fd(w->a, out) != ARCHIVE_OK) {
                r = image_errorf(ret_error, -EIO, "%s: cannot write a tar", layer_path);
                goto out;
        }
        r = walk_dir(w, root, "", 0);
        if (r >= 0 && archive_write_close(w->a) != ARCHIVE_OK)
                r = image_errorf(ret_error, -EIO, "%s: %s", layer_path, archive_error_string(w->a));
out:
        if (w->a)
                archive_write_free(w->a);
        free(w);
        return r;
}
