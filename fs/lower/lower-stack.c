/* SPDX-License-Identifier: MIT */
/*
 * lower-stack.c: frozen layers over the git (or dir) lower, shown as one
 * lower layer (docs/fs-design.md, "Layers, checkpoints and forks").
 *
 * View 0 is the base lower; view k is frozen layer k over view k-1. A
 * frozen layer has the format of an upper tree (upper.c): its entries
 * shadow view k-1, its sidecars hold whiteouts (which hide view k-1's
 * names), opaque dirs (which hide all of it), redirects ("origin": a path
 * of view k-1 a moved dir merges with) and metacopies (a file whose data
 * is view k-1's entry at "origin" or at its own name). A name in a dir of
 * view k is resolved exactly as cow.c resolves one over the base, one
 * layer at a time, top down.
 *
 * Entries of a frozen layer carry a struct frozen_entry: the inode (an fd), a
 * dir's sidecar and what the entry continues into below. Fents are
 * reference-counted and hold their layer, so a lower_entry stays usable (read,
 * list, copy up) whatever happens to the stack it came from: a checkpoint
 * while mounted pushes a layer and builds a new stack, and nodes and open
 * files keep the entries they have. Base entries stay the base's own
 * lower entries (their path is the base path, for git's attributes), with their
 * view path in vpath when a redirect above makes it differ.
 *
 * Trust: frozen layers hold the agent's names, but were written by the
 * daemon and are never written again. Every access is from a directory fd
 * with one escaped name and O_NOFOLLOW; symlinks are never followed.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format.h"
#include "lower-private.h"
#include "lib/util.h"

struct lower_stack {
        struct lower l; /* first: a struct lower * is a struct lower_stack * */
        struct frozen_layer *top;
        struct lower *base;
};

static struct lower_stack *stack_of(struct lower *l)
{
        return (struct lower_stack *)l;
}

static struct frozen_entry *frozen_entry_new(struct frozen_layer *layer, int fd)
{
        struct frozen_entry *f = calloc(1, sizeof(*f));

        if (!f) {
                safe_close(fd);
                return NULL;
        }
        atomic_init(&f->refs, 1);
        atomic_fetch_add(&layer->refs, 1);
        f->layer = layer;
        f->k = layer->k;
        f->fd = fd;
        pthread_mutex_init(&f->lock, NULL);
        return f;
}

static json_t *meta_of(const struct lower_entry *dir)
{
        return dir->fz ? (json_t *)dir->fz->meta : NULL;
}

static json_t *meta_rec(const struct lower_entry *dir, const char *name)
{
        return json_object_get(json_object_get(meta_of(dir), "c"), name);
}

static bool meta_whiteout(const struct lower_entry *dir, const char *name)
{
        return json_object_get(json_object_get(meta_of(dir), "wh"), name) != NULL;
}

/* A dir's sidecar, or {} when it has none (or a damaged one, as upper.c reads it). */
static json_t *meta_load(int dirfd)
{
        _cleanup_close_ int fd = openat(dirfd, UPPER_META, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        json_t *m = fd >= 0 ? upper_meta_load_fd(fd) : NULL;

        return m ? m : json_object();
}

static int set_view_path(struct lower_entry *e, const char *vp)
{
        char *p = strdup(vp);

        if (!p)
                return -ENOMEM;
        if (e->fz) {
                free(e->path);
                e->path = p;
        } else if (streq(e->path, vp)) {
                free(p);
                free(e->vpath);
                e->vpath = NULL;
        } else {
                free(e->vpath);
                e->vpath = p;
        }
        return 0;
}

/*
 * A view: the base and the frozen layers up to top (NULL: the base alone).
 * Names are looked up through all of them, and a file with hard links is
 * the copy in the topmost layer's link index (links.c) that has it.
 */
struct view {
        struct lower *base;
        struct frozen_layer *top;
};

static int view_root(struct frozen_layer *f, struct lower *base, struct lower_entry *ret);
static int view_child(const struct view *v, const struct lower_entry *dir, const char *name,
                      struct lower_entry *ret);

/* Look path up in view k (f; NULL: the base). */
static int view_lookup(struct frozen_layer *f, struct lower *base, const char *path,
                       struct lower_entry *ret)
{
        struct view v = {.base = base, .top = f};
        struct lower_entry cur = {0};
        const char *p = path;
        int r;

        if (!f)
                return lower_lookup_path(base, path, ret);
        r = view_root(f, base, &cur);
        while (r == 0 && *p) {
                const char *e = strchrnul(p, '/');
                char name[256];
                struct lower_entry next = {0};

                if ((size_t)(e - p) >= sizeof(name)) {
                        r = -ENAMETOOLONG;
                        break;
                }
                memcpy(name, p, (size_t)(e - p));
                name[e - p] = 0;
                r = view_child(&v, &cur, name, &next);
                lower_entry_clear(&cur);
                cur = next;
                p = *e ? e + 1 : e;
        }
        if (r < 0) {
                lower_entry_clear(&cur);
                return r == -ENOTDIR ? -ENOENT : r;
        }
        *ret = cur;
        return 0;
}

/* What the entry of layer k continues into below: a dir's merged dir, a metacopy's data. */
static int entry_below(struct frozen_entry *f, const struct view *v,
                       const struct lower_entry *parent, const char *name, json_t *rec,
                       struct lower_entry *ret)
{
        _cleanup_free_ char *origin = upper_json_get_name(rec, "origin");
        struct view below = {.base = v->base, .top = f->layer->below};

        if (origin)
                return view_lookup(f->layer->below, v->base, origin, ret);
        /* Not moved: the same name in the dir this one's parent merges with. */
        if (!parent->fz || parent->fz->opaque || !parent->fz->below.mode)
                return -ENOENT;
        return view_child(&below, &parent->fz->below, name, ret);
}

/*
 * A file with more than one host link may have been copied up, with all its
 * names, into the link index of a layer above its own (links.c): the
 * topmost such copy is the file. Returns an O_PATH fd on it (*ret: its
 * layer), or -1.
 */
static int index_find(const struct view *v, struct frozen_layer *own, uint64_t ino,
                      struct frozen_layer **ret)
{
        char name[sizeof(LINKS_DIR) + 20];

        snprintf(name, sizeof(name), LINKS_DIR "/%016llx", (unsigned long long)ino);
        for (struct frozen_layer *f = v->top; f && f->k > own->k; f = f->below) {
                int fd, has = __atomic_load_n(&f->has_index, __ATOMIC_RELAXED);
                if (has < 0) {
                        has = faccessat(f->root_fd, LINKS_DIR, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
                        __atomic_store_n(&f->has_index, has, __ATOMIC_RELAXED);
                }
                if (!has)
                        continue;
                fd = openat(f->root_fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                if (fd >= 0) {
                        *ret = f;
                        return fd;
                }
        }
        return -1;
}

/* The entry `name` (stored as en, stat st) of layer k's dir `parent`. */
static int make_entry(const struct view *v, const struct lower_entry *parent, const char *name,
                      const char *en, const struct stat *st_name, const char *vpath,
                      struct lower_entry *ret)
{
        struct frozen_entry *pf = parent->fz, *f;
        struct frozen_layer *layer = pf->layer;
        json_t *rec = meta_rec(parent, name), *jino = json_object_get(rec, "ino");
        mode_t type = upper_rec_type(rec, st_name->st_mode);
        uint64_t ino =
                json_is_integer(jino) ? (uint64_t)json_integer_value(jino) : upper_ino(st_name);
        bool dir = S_ISDIR(type), indexed = false;
        const struct stat *st = st_name;
        struct stat stx;
        int fd = -1, r;

        if (!dir) {
                /* Hard links (or a name a copy-up could not use): a copy above, in a
                 * link index, is the file now (links.c). */
                fd = index_find(v, layer, ino, &layer);
                if (fd >= 0 && fstatat(fd, "", &stx, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) == 0) {
                        st = &stx;
                        indexed = true;
                } else {
                        fd = safe_close(fd);
                        layer = pf->layer;
                }
        }
        if (fd < 0)
                fd = openat(pf->fd, en,
                            (dir ? O_RDONLY | O_DIRECTORY : O_PATH) | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        f = frozen_entry_new(layer, fd);
        if (!f)
                return -ENOMEM;
        f->type = type;
        f->indexed = indexed;
        f->nlink = st->st_nlink;
        f->opaque = dir && json_is_true(json_object_get(rec, "opaque"));
        f->metacopy = !indexed && S_ISREG(type) && json_is_true(json_object_get(rec, "metacopy"));
        *ret = (struct lower_entry){
                .path = strdup(vpath),
                .mode = type | (st->st_mode & (dir ? 01777 : 0777)),
                .size = (uint64_t)st->st_size,
                .size_known = !f->metacopy,
                .mtime = st->st_mtim,
                .ctime = st->st_ctim,
                .ino = ino,
                .fz = f,
        };
        if (!ret->path) {
                lower_entry_clear(ret);
                return -ENOMEM;
        }
        if (dir) {
                f->meta = meta_load(fd);
                if (!f->meta) {
                        lower_entry_clear(ret);
                        return -ENOMEM;
                }
                if (!f->opaque) {
                        r = entry_below(f, v, parent, name, rec, &f->below);
                        if (r == 0 && !S_ISDIR(f->below.mode))
                                lower_entry_clear(&f->below); /* a file there: nothing to merge */
                        else if (r < 0 && r != -ENOENT && r != -ENOTDIR) {
                                lower_entry_clear(ret);
                                return r;
                        }
                }
        } else if (f->metacopy) {
                r = entry_below(f, v, parent, name, rec, &f->below);
                if (r == 0 && !S_ISREG(f->below.mode)) {
                        lower_entry_clear(&f->below);
                        r = -EIO;
                }
                if (r < 0) {
                        lower_entry_clear(ret);
                        return r == -ENOENT ? -EIO : r; /* its data is gone: never happens */
                }
        }
        return 0;
}

static int view_child(const struct view *v, const struct lower_entry *dir, const char *name,
                      struct lower_entry *ret)
{
        struct lower *base = v->base;
        _cleanup_free_ char *vp = lower_path_join(lower_entry_vpath(dir), name);
        char en[256];
        struct stat st;
        int r;

        if (!vp)
                return -ENOMEM;
        if (!S_ISDIR(dir->mode))
                return -ENOTDIR;
        if (!dir->fz) {
                /* A dir of the base: its entry, at its own path, seen at vp. */
                r = lower_child(base, dir, name, ret);
                if (r == 0 && dir->vpath && (r = set_view_path(ret, vp)) < 0)
                        lower_entry_clear(ret);
                return r;
        }
        r = upper_name_escape(name, en);
        if (r < 0)
                return r;
        if (fstatat(dir->fz->fd, en, &st, AT_SYMLINK_NOFOLLOW) == 0)
                return make_entry(v, dir, name, en, &st, vp, ret);
        if (errno != ENOENT)
                return negative_errno();
        if (meta_whiteout(dir, name) || dir->fz->opaque || !dir->fz->below.mode)
                return -ENOENT;
        r = view_child(v, &dir->fz->below, name, ret);
        if (r == 0 && (r = set_view_path(ret, vp)) < 0)
                lower_entry_clear(ret);
        return r;
}

static int view_root(struct frozen_layer *f, struct lower *base, struct lower_entry *ret)
{
        struct frozen_entry *e;
        struct stat st;
        int fd, r;

        if (!f)
                return lower_root(base, ret);
        fd = fcntl(f->root_fd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0 || fstat(fd, &st) < 0) {
                safe_close(fd);
                return negative_errno();
        }
        e = frozen_entry_new(f, fd);
        if (!e)
                return -ENOMEM;
        e->type = S_IFDIR;
        e->meta = meta_load(fd);
        *ret = (struct lower_entry){.path = strdup(""),
                                    .mode = S_IFDIR | (st.st_mode & 01777),
                                    .size = (uint64_t)st.st_size,
                                    .size_known = true,
                                    .mtime = st.st_mtim,
                                    .ctime = st.st_ctim,
                                    .ino = lower_ino(f->part, ""),
                                    .fz = e};
        if (!ret->path || !e->meta) {
                lower_entry_clear(ret);
                return -ENOMEM;
        }
        r = view_root(f->below, base, &e->below);
        if (r < 0)
                lower_entry_clear(ret);
        return r;
}

static int stack_root(struct lower *l, struct lower_entry *ret)
{
        return view_root(stack_of(l)->top, stack_of(l)->base, ret);
}

static int stack_child(struct lower *l, const struct lower_entry *dir, const char *name,
                       struct lower_entry *ret)
{
        struct view v = {.base = stack_of(l)->base, .top = stack_of(l)->top};

        return view_child(&v, dir, name, ret);
}

static int stack_lookup_path(struct lower *l, const char *path, struct lower_entry *ret)
{
        return view_lookup(stack_of(l)->top, stack_of(l)->base, path, ret);
}

/* The entry whose data a file is: itself, or what a metacopy points at. */
static const struct lower_entry *data_of(const struct lower_entry *e)
{
        while (e->fz && e->fz->metacopy)
                e = &e->fz->below;
        return e;
}

static int stack_size(struct lower *l, struct lower_entry *e)
{
        struct lower *base = stack_of(l)->base;
        struct frozen_entry *f = e->fz;
        int r = 0;

        if (!f)
                return lower_size(base, e);
        if (!f->metacopy)
                return 0; /* its own size, from its stat */
        pthread_mutex_lock(&f->lock);
        r = stack_size(l, &f->below);
        if (r == 0) {
                e->size = f->below.size;
                e->size_known = true;
        }
        pthread_mutex_unlock(&f->lock);
        return r;
}

static int stack_open_data(struct lower *l, const struct lower_entry *e, int *ret_fd)
{
        char p[FS_FD_PATH_MAX];
        int fd;

        e = data_of(e);
        if (!e->fz)
                return lower_open_data(stack_of(l)->base, e, ret_fd);
        fs_fd_path(e->fz->fd, p);
        fd = open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        *ret_fd = fd;
        return 0;
}

static int stack_read_small(struct lower *l, struct lower_entry *e, size_t max, char **ret,
                            size_t *ret_len)
{
        struct lower_entry *d = (struct lower_entry *)data_of(e);

        if (d->fz)
                return -EOPNOTSUPP; /* a frozen file: read from its inode */
        return lower_read_small(stack_of(l)->base, d, max, ret, ret_len);
}

static int stack_readlink(struct lower *l, const struct lower_entry *e, char **ret)
{
        char buf[PATH_MAX + 1];
        ssize_t n;

        if (!e->fz)
                return lower_readlink(stack_of(l)->base, e, ret);
        n = readlinkat(e->fz->fd, "", buf, sizeof(buf) - 1);
        if (n < 0)
                return negative_errno();
        buf[n] = 0;
        *ret = strdup(buf);
        return *ret ? 0 : -ENOMEM;
}

/* ---- listing: each layer's names, minus what the layers above hide ---- */

struct hide {
        const struct hide *up; /* the layer above's, or NULL */
        const struct lower_entry *dir;
        char **names; /* this layer's names, sorted */
        size_t n;
};

struct lister {
        lower_list_fn fn;
        void *userdata;
        const struct hide *hide;
        const struct lower_entry *base_dir; /* base level: its path, for the inos */
        unsigned part;
};

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool hidden(const struct hide *h, const char *name)
{
        for (; h; h = h->up)
                if ((h->n && bsearch(&name, h->names, h->n, sizeof(char *), cmp_str)) ||
                    meta_whiteout(h->dir, name))
                        return true;
        return false;
}

static int base_cb(const char *name, const struct lower_entry *child, void *userdata)
{
        struct lister *ls = userdata;
        struct lower_entry c = *child;
        _cleanup_free_ char *p = NULL;

        if (hidden(ls->hide, name))
                return 0;
        p = lower_path_join(ls->base_dir->path, name);
        if (!p)
                return -ENOMEM;
        c.ino = lower_ino(ls->part, p);
        return ls->fn(name, &c, ls->userdata);
}

static int list_view(struct lower *base, unsigned part, const struct lower_entry *dir,
                     const struct hide *up, lower_list_fn fn, void *userdata)
{
        _cleanup_closedir_ DIR *d = NULL;
        struct hide h = {.up = up, .dir = dir};
        size_t cap = 0;
        struct dirent *de;
        int fd, r = 0;

        if (!dir->fz) {
                struct lister ls = {
                        .fn = fn, .userdata = userdata, .hide = up, .base_dir = dir, .part = part};
                return lower_list(base, dir, base_cb, &ls);
        }
        fd = openat(dir->fz->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || !(d = fdopendir(fd))) {
                safe_close(fd);
                return negative_errno();
        }
        while ((de = readdir(d))) {
                const char *name = upper_name_unescape(de->d_name);
                json_t *rec, *ino;
                struct stat st;
                struct lower_entry c = {0};

                if (!name || streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (h.n + 1 >= cap) {
                        char **v = realloc(h.names, (cap = cap ? cap * 2 : 32) * sizeof(char *));
                        if (!v) {
                                r = -ENOMEM;
                                break;
                        }
                        h.names = v;
                }
                if (!(h.names[h.n] = strdup(name))) {
                        r = -ENOMEM;
                        break;
                }
                h.n++;
                if (hidden(up, name))
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                rec = meta_rec(dir, name);
                ino = json_object_get(rec, "ino");
                c.mode = upper_rec_type(rec, st.st_mode) | (st.st_mode & 07777);
                c.ino = json_is_integer(ino) ? (uint64_t)json_integer_value(ino) : upper_ino(&st);
                r = fn(name, &c, userdata);
                if (r < 0)
                        break;
        }
        if (r == 0 && !dir->fz->opaque && dir->fz->below.mode) {
                if (h.n)
                        qsort(h.names, h.n, sizeof(char *), cmp_str);
                r = list_view(base, part, &dir->fz->below, &h, fn, userdata);
        }
        for (size_t i = 0; i < h.n; i++)
                free(h.names[i]);
        free(h.names);
        return r;
}

static int stack_list(struct lower *l, const struct lower_entry *dir, lower_list_fn fn,
                      void *userdata)
{
        return list_view(stack_of(l)->base, stack_of(l)->top->part, dir, NULL, fn, userdata);
}

static void stack_free(struct lower *l)
{
        lower_frozen_layer_unref(stack_of(l)->top);
        free(stack_of(l));
}

static const struct lower_ops lower_stack_ops = {
        .root = stack_root,
        .child = stack_child,
        .lookup_path = stack_lookup_path,
        .size = stack_size,
        .list = stack_list,
        .open_data = stack_open_data,
        .readlink = stack_readlink,
        .free = stack_free,
        .read_small = stack_read_small,
};

bool lower_is_stack(const struct lower *l)
{
        return l && l->ops == &lower_stack_ops;
}

int lower_stack_push(struct lower *below, unsigned part, int root_fd, const char *id,
                     struct lower **ret)
{
        struct lower_stack *s = calloc(1, sizeof(*s));
        struct frozen_layer *f = calloc(1, sizeof(*f));

        if (!s || !f) {
                free(s);
                free(f);
                safe_close(root_fd);
                return -ENOMEM;
        }
        atomic_init(&f->refs, 1);
        pthread_mutex_init(&f->lock, NULL);
        f->has_index = -1;
        f->root_fd = root_fd;
        f->part = part;
        snprintf(f->id, sizeof(f->id), "%s", id);
        if (lower_is_stack(below)) {
                f->below = stack_of(below)->top;
                atomic_fetch_add(&f->below->refs, 1);
                f->base = stack_of(below)->base;
        } else {
                f->base = below;
        }
        f->k = f->below ? f->below->k + 1 : 1;
        s->l.ops = &lower_stack_ops;
        s->l.root_fd = -1;
        s->l.cache_dirfd = -1;
        s->top = f;
        s->base = f->base;
        *ret = &s->l;
        return 0;
}

int lower_stack_set_path(struct lower_entry *e, const char *vpath)
{
        return set_view_path(e, vpath);
}

int lower_stack_adopt(struct lower *l, int fd, mode_t type, bool opaque, bool metacopy, void *meta,
                      struct lower_entry *below, uint64_t ino, const char *path,
                      struct lower_entry *ret)
{
        struct frozen_entry *f;
        struct stat st;

        if (!lower_is_stack(l))
                return -EINVAL;
        if (fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
                return negative_errno();
        f = frozen_entry_new(stack_of(l)->top, -1);
        if (!f)
                return -ENOMEM;
        f->fd = fd;
        f->type = type & S_IFMT;
        f->opaque = opaque;
        f->metacopy = metacopy;
        f->meta = meta ? json_incref(meta) : (S_ISDIR(type) ? meta_load(fd) : NULL);
        if (below) {
                f->below = *below;
                *below = (struct lower_entry){0};
        }
        *ret = (struct lower_entry){
                .path = strdup(path),
                .mode = (type & S_IFMT) | (st.st_mode & (S_ISDIR(type) ? 01777 : 0777)),
                .size = (uint64_t)st.st_size,
                .size_known = !metacopy,
                .mtime = st.st_mtim,
                .ctime = st.st_ctim,
                .ino = ino,
                .fz = f,
        };
        if (!ret->path || (S_ISDIR(type) && !f->meta)) {
                f->fd = -1; /* the caller's still */
                lower_entry_clear(ret);
                return -ENOMEM;
        }
        return 0;
}

size_t lower_stack_layers(const struct lower *l, int *fds, size_t max)
{
        size_t n = 0;

        if (!lower_is_stack(l))
                return 0;
        for (const struct frozen_layer *f = ((const struct lower_stack *)l)->top; f && n < max;
             f = f->below)
                fds[n++] = f->root_fd;
        return n;
}

nlink_t lower_frozen_nlink(struct frozen_entry *f, uint64_t ino, nlink_t host)
{
        struct frozen_layer *l = f->layer;
        unsigned a;

        if (S_ISDIR(f->type) || (host <= 1 && !f->indexed) ||
            (!f->indexed && !links_in_index(l->root_fd, ino, f->fd)))
                return host;
        pthread_mutex_lock(&l->lock);
        if (!l->aliases)
                l->aliases = links_aliases_load(l->root_fd);
        a = links_aliases_get(l->aliases, ino);
        pthread_mutex_unlock(&l->lock);
        return host > 0 ? host - 1 + a : 0;
}
