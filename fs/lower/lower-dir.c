/* SPDX-License-Identifier: MIT */
/*
 * lower-dir.c: a plain host directory as a read-only lower layer (a
 * non-git workspace, and the hidden home's seed snapshot).
 *
 * Trust boundary: the directory is the host's, and may hold symlinks that
 * point anywhere. Every path is resolved beneath the root with openat2()
 * and RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS, and
 * the last component is never followed: a symlink is reported as a link.
 * Device nodes and sockets are hidden.
 */
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lower-private.h"
#include "lib/util.h"

static int open_beneath(int root, const char *path, int flags)
{
        struct open_how how = {
                .flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
                .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
                           RESOLVE_NO_XDEV,
        };
        int fd = (int)syscall(SYS_openat2, root, *path ? path : ".", &how, sizeof(how));
        return fd < 0 ? negative_errno() : fd;
}

static bool type_shown(mode_t m)
{
        return S_ISREG(m) || S_ISDIR(m) || S_ISLNK(m) || S_ISFIFO(m);
}

static void fill_from_stat(const struct stat *st, struct lower_entry *e)
{
        e->mode = st->st_mode & ~(mode_t)(S_ISUID | S_ISGID);
        e->size = (uint64_t)st->st_size;
        e->size_known = true;
        e->mtime = st->st_mtim;
        e->ctime = st->st_ctim;
}

static int dir_root(struct lower *l, struct lower_entry *ret)
{
        struct stat st;
        char *p;
        if (fstat(l->root_fd, &st) < 0)
                return negative_errno();
        p = strdup("");
        if (!p)
                return -ENOMEM;
        *ret = (struct lower_entry){.path = p};
        fill_from_stat(&st, ret);
        return 0;
}

static int dir_child(struct lower *l, const struct lower_entry *dir, const char *name,
                     struct lower_entry *ret)
{
        _cleanup_close_ int dfd = -1;
        struct stat st;
        char *p;

        dfd = open_beneath(l->root_fd, dir->path, O_PATH | O_DIRECTORY);
        if (dfd < 0)
                return dfd == -ELOOP ? -ENOENT : dfd;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return negative_errno();
        if (!type_shown(st.st_mode))
                return -ENOENT;
        p = lower_path_join(dir->path, name);
        if (!p)
                return -ENOMEM;
        *ret = (struct lower_entry){.path = p};
        fill_from_stat(&st, ret);
        return 0;
}

static int dir_lookup_path(struct lower *l, const char *path, struct lower_entry *ret)
{
        _cleanup_close_ int fd = -1;
        struct stat st;
        char *p;

        fd = open_beneath(l->root_fd, path, O_PATH);
        if (fd < 0)
                return fd == -ELOOP ? -ENOENT : fd;
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!type_shown(st.st_mode))
                return -ENOENT;
        p = strdup(path);
        if (!p)
                return -ENOMEM;
        *ret = (struct lower_entry){.path = p};
        fill_from_stat(&st, ret);
        return 0;
}

static int dir_size(struct lower *l, struct lower_entry *e)
{
        (void)l;
        e->size_known = true;
        return 0;
}

static int dir_list(struct lower *l, const struct lower_entry *dir, lower_list_fn fn,
                    void *userdata)
{
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int fd, r = 0;

        fd = open_beneath(l->root_fd, dir->path, O_RDONLY | O_DIRECTORY);
        if (fd < 0)
                return fd;
        d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return negative_errno();
        }
        while ((de = readdir(d))) {
                struct stat st;
                struct lower_entry e = {0};
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                    !type_shown(st.st_mode))
                        continue;
                fill_from_stat(&st, &e);
                r = fn(de->d_name, &e, userdata);
                if (r < 0)
                        break;
                r = 0;
        }
        return r;
}

static int dir_open_data(struct lower *l, const struct lower_entry *e, int *ret_fd)
{
        int fd = open_beneath(l->root_fd, e->path, O_RDONLY | O_NONBLOCK);
        if (fd < 0)
                return fd;
        *ret_fd = fd;
        return 0;
}

static int dir_readlink(struct lower *l, const struct lower_entry *e, char **ret)
{
        _cleanup_close_ int fd = open_beneath(l->root_fd, e->path, O_PATH);
        char buf[4097];
        ssize_t n;
        char *s;
        if (fd < 0)
                return fd;
        n = readlinkat(fd, "", buf, sizeof(buf) - 1);
        if (n < 0)
                return negative_errno();
        buf[n] = 0;
        s = strdup(buf);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static void dir_free(struct lower *l)
{
        safe_close(l->root_fd);
        free(l->source);
        free(l);
}

static const struct lower_ops lower_dir_ops = {
        .root = dir_root,
        .child = dir_child,
        .lookup_path = dir_lookup_path,
        .size = dir_size,
        .list = dir_list,
        .open_data = dir_open_data,
        .readlink = dir_readlink,
        .free = dir_free,
};

int lower_dir_open(const char *source, struct lower **ret, char **ret_error)
{
        struct lower *l = calloc(1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        l->ops = &lower_dir_ops;
        l->cache_dirfd = -1;
        l->root_fd = open(source, O_PATH | O_DIRECTORY | O_CLOEXEC);
        l->source = strdup(source);
        if (l->root_fd < 0 || !l->source) {
                int r = l->root_fd < 0 ? negative_errno() : -ENOMEM;
                if (ret_error &&
                    asprintf(ret_error, "cannot open directory '%s': %s", source, strerror(-r)) < 0)
                        *ret_error = NULL;
                dir_free(l);
                return r;
        }
        *ret = l;
        return 0;
}
