/* SPDX-License-Identifier: MIT */
/*
 * mirror.c: read-only passthrough of a host directory ([mirror "NAME"] and
 * /.cloister/objects).
 *
 * Trust boundary: the host directory may hold symlinks to anywhere. Every
 * node keeps an O_PATH | O_NOFOLLOW fd and children are found with
 * single-component *at() calls on it, so the daemon never follows a link:
 * symlinks are shown as links and their targets are for the agent's own
 * (sandboxed) resolution. Names matching an `exclude` glob do not exist.
 * Every mutating operation fails with EROFS (ops-*.c check the node kind).
 */
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "core.h"
#include "lib/util.h"

static uint64_t mirror_ino(const struct mirror *m, const struct stat *st)
{
        uint64_t h = 0xcbf29ce484222325ULL;
        uint64_t v[3] = {m->part, (uint64_t)st->st_dev, (uint64_t)st->st_ino};
        for (size_t i = 0; i < 3; i++)
                for (size_t b = 0; b < 8; b++)
                        h = (h ^ ((v[i] >> (b * 8)) & 0xff)) * 0x100000001b3ULL;
        return (h & ((1ULL << 62) - 1)) | MIRROR_INO_TAG;
}

static bool shown(mode_t m)
{
        return S_ISREG(m) || S_ISDIR(m) || S_ISLNK(m) || S_ISFIFO(m);
}

/* The path below the mirror root, for globs with a '/'. */
static char *rel_path(const struct node *dir, const char *name)
{
        size_t len = strlen(name) + 1;
        char *p, *q;
        for (const struct node *i = dir;
             i && i->kind == NODE_MIRROR && i->parent && i->parent->kind == NODE_MIRROR;
             i = i->parent)
                len += strlen(i->name) + 1;
        p = malloc(len);
        if (!p)
                return NULL;
        q = p + len - 1;
        *q = 0;
        q -= strlen(name);
        memcpy(q, name, strlen(name));
        for (const struct node *i = dir;
             i && i->kind == NODE_MIRROR && i->parent && i->parent->kind == NODE_MIRROR;
             i = i->parent) {
                *--q = '/';
                q -= strlen(i->name);
                memcpy(q, i->name, strlen(i->name));
        }
        memmove(p, q, strlen(q) + 1);
        return p;
}

static bool excluded(const struct node *dir, const char *name)
{
        const struct mirror *m = dir->mirror;
        _cleanup_free_ char *rel = NULL;
        if (!m->exclude || !m->exclude[0])
                return false;
        rel = rel_path(dir, name);
        for (char *const *g = m->exclude; *g; g++)
                if (fnmatch(*g, name, FNM_PERIOD) == 0 ||
                    (rel && fnmatch(*g, rel, FNM_PATHNAME | FNM_PERIOD) == 0))
                        return true;
        return false;
}

static int make_node(struct fs_workspace *ws, struct mirror *m, struct node *parent,
                     const char *name, int fd, const struct stat *st, struct node **ret)
{
        struct node *n = node_new(ws, NODE_MIRROR, st->st_mode, mirror_ino(m, st));
        if (!n || !(n->name = strdup(name))) {
                if (n)
                        node_free(n);
                safe_close(fd);
                return -ENOMEM;
        }
        n->mirror = m;
        n->parent = parent;
        n->hfd = fd;
        *ret = node_insert_lookup(ws, n);
        return 0;
}

int mirror_root(struct fs_workspace *ws, struct mirror *m, struct node *parent, const char *name,
                struct node **ret)
{
        struct stat st;
        int fd = fcntl(m->root_fd, F_DUPFD_CLOEXEC, 3), r;
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0) {
                safe_close(fd);
                return negative_errno();
        }
        r = make_node(ws, m, parent, name, fd, &st, ret);
        if (r == 0)
                (*ret)->refs++; /* permanent */
        return r;
}

int mirror_lookup(struct fs_workspace *ws, struct node *parent, const char *name, struct node **ret)
{
        struct stat st;
        struct node *n;
        int fd;

        if (!fs_name_valid(name))
                return -EINVAL;
        if (excluded(parent, name))
                return -ENOENT;
        fd = openat(parent->hfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0 || !shown(st.st_mode)) {
                safe_close(fd);
                return -ENOENT;
        }
        n = node_find_lookup(ws, mirror_ino(parent->mirror, &st));
        if (n) {
                safe_close(fd);
                *ret = n;
                return 0;
        }
        return make_node(ws, parent->mirror, parent, name, fd, &st, ret);
}

int mirror_getattr(struct fs_workspace *ws, struct node *n, struct stat *st)
{
        (void)ws;
        if (fstatat(n->hfd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
                return negative_errno();
        st->st_ino = n->ino;
        st->st_mode &= ~(mode_t)(S_ISUID | S_ISGID);
        return 0;
}

int mirror_list(struct fs_workspace *ws, struct node *dir, struct cow_dirent **ret, size_t *ret_n)
{
        _cleanup_closedir_ DIR *d = NULL;
        struct cow_dirent *ents = NULL;
        size_t n = 0, cap = 0;
        struct dirent *de;
        int fd;
        (void)ws;

        fd = openat(dir->hfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || !(d = fdopendir(fd))) {
                safe_close(fd);
                return negative_errno();
        }
        while ((de = readdir(d))) {
                struct stat st;
                if (streq(de->d_name, ".") || streq(de->d_name, "..") || excluded(dir, de->d_name))
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                    !shown(st.st_mode))
                        continue;
                if (n == cap) {
                        struct cow_dirent *x;
                        cap = cap ? cap * 2 : 32;
                        x = realloc(ents, cap * sizeof(*x));
                        if (!x) {
                                fs_dirents_free(ents, n);
                                return -ENOMEM;
                        }
                        ents = x;
                }
                ents[n].name = strdup(de->d_name);
                if (!ents[n].name) {
                        fs_dirents_free(ents, n);
                        return -ENOMEM;
                }
                ents[n].ino = mirror_ino(dir->mirror, &st);
                ents[n].type = st.st_mode & S_IFMT;
                n++;
        }
        *ret = ents;
        *ret_n = n;
        return 0;
}

int mirror_open(struct fs_workspace *ws, struct node *n, int flags, int *ret_fd)
{
        struct stat a, b;
        int fd;
        (void)ws;
        if (!S_ISREG(n->type) && !S_ISFIFO(n->type))
                return -EACCES;
        if (!n->parent || n->parent->kind != NODE_MIRROR)
                return -EISDIR;
        fd = openat(n->parent->hfd, n->name, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        /* The host may have replaced the name meanwhile: only serve the same file. */
        if (fstat(fd, &a) < 0 || fstatat(n->hfd, "", &b, AT_EMPTY_PATH) < 0 ||
            a.st_ino != b.st_ino || a.st_dev != b.st_dev) {
                safe_close(fd);
                return -ESTALE;
        }
        *ret_fd = fd;
        return 0;
}

int mirror_readlink(struct fs_workspace *ws, struct node *n, char **ret)
{
        char buf[PATH_MAX + 1];
        ssize_t k;
        (void)ws;
        k = readlinkat(n->hfd, "", buf, sizeof(buf) - 1);
        if (k < 0)
                return negative_errno();
        buf[k] = 0;
        *ret = strdup(buf);
        return *ret ? 0 : -ENOMEM;
}

static int open_for_xattr(struct node *n)
{
        if (S_ISDIR(n->type))
                return openat(n->hfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (S_ISREG(n->type) && n->parent && n->parent->kind == NODE_MIRROR)
                return openat(n->parent->hfd, n->name,
                              O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        errno = ENODATA;
        return -1;
}

int mirror_getxattr(struct node *n, const char *name, void *buf, size_t size)
{
        _cleanup_close_ int fd = -1;
        ssize_t k;
        if (!startswith(name, "user."))
                return -ENODATA;
        fd = open_for_xattr(n);
        if (fd < 0)
                return negative_errno();
        k = fgetxattr(fd, name, buf, size);
        return k < 0 ? negative_errno() : (int)k;
}

int mirror_listxattr(struct node *n, char *buf, size_t size)
{
        _cleanup_close_ int fd = -1;
        fd = open_for_xattr(n);
        if (fd < 0)
                return errno == ENODATA ? 0 : negative_errno();
        {
                ssize_t k = flistxattr(fd, buf, size);
                return k < 0 ? negative_errno() : (int)k;
        }
}
