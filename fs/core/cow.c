/* SPDX-License-Identifier: MIT */
/*
 * cow.c: how a copy-on-write part looks to the agent: lookup, attributes
 * and directory listings merged from the upper tree and the lower layer.
 *
 * A name in a directory is, in order: the upper entry if one exists (its
 * sidecar record may give it a lower origin, metacopy data or opacity);
 * nothing if the directory's sidecar holds a whiteout for it; else the
 * lower entry of the directory's lower (if the directory merges with one).
 * Callers hold ws->ns_lock (shared is enough).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"
#include "lib/util.h"

struct cow_resolved {
        bool upper;
        bool indexed; /* upper: the writable layer's link index copy (links.c), in hfd */
        int hfd;
        struct stat ust;
        bool has_lower;
        struct lower_entry lower;
        bool metacopy, opaque;
        uint64_t ino;
        mode_t type;
};

static uint64_t rec_ino(json_t *rec)
{
        json_t *i = json_object_get(rec, "ino");
        return json_is_integer(i) ? (uint64_t)json_integer_value(i) : 0;
}

/* The lower entry that the upper entry `name` in dir merges with, if any. */
static int rec_lower(struct fs_workspace *ws, struct node *dir, const char *name, json_t *rec,
                     struct lower_entry *ret)
{
        struct lower *l = dir->layer->lower;
        _cleanup_free_ char *origin = NULL;
        if (json_is_true(json_object_get(rec, "opaque")))
                return -ENOENT;
        origin = upper_json_get_name(rec, "origin");
        if (origin)
                return lower_lookup_path(l, origin, ret);
        if (!dir->has_lower)
                return -ENOENT;
        (void)ws;
        return lower_child(l, &dir->lower, name, ret);
}

static int resolve(struct fs_workspace *ws, struct node *dir, const char *name,
                   struct cow_resolved *c)
{
        char en[256];
        int r;

        *c = (struct cow_resolved){.hfd = -1};
        if (strnlen(name, 256) > 255)
                return -ENAMETOOLONG;
        if (!fs_name_valid(name))
                return -EINVAL;
        r = upper_name_escape(name, en);
        if (r < 0)
                return r;
        if (dir->upper) {
                if (fstatat(dir->ufd, en, &c->ust, AT_SYMLINK_NOFOLLOW) == 0) {
                        json_t *rec = upper_meta_rec(dir, name);
                        struct lower_entry le = {0};
                        c->upper = true;
                        c->type = upper_rec_type(rec, c->ust.st_mode);
                        c->ino = rec_ino(rec);
                        if (!c->ino)
                                c->ino = upper_ino(&c->ust);
                        c->metacopy =
                                S_ISREG(c->type) && json_is_true(json_object_get(rec, "metacopy"));
                        c->opaque = json_is_true(json_object_get(rec, "opaque"));
                        if (S_ISDIR(c->type) || c->metacopy) {
                                r = rec_lower(ws, dir, name, rec, &le);
                                if (r == 0 && (le.mode & S_IFMT) == c->type) {
                                        c->has_lower = true;
                                        c->lower = le;
                                } else {
                                        lower_entry_clear(&le);
                                        if (r < 0 && r != -ENOENT && r != -ENOTDIR)
                                                return r;
                                        if (c->metacopy)
                                                return -EIO; /* data is gone: never happens */
                                }
                        }
                        return 0;
                }
                if (errno != ENOENT)
                        return negative_errno();
                if (upper_meta_whiteout(dir, name))
                        return -ENOENT;
        }
        if (!dir->has_lower)
                return -ENOENT;
        r = lower_child(dir->layer->lower, &dir->lower, name, &c->lower);
        if (r < 0)
                return r == -ENOTDIR ? -ENOENT : r;
        c->has_lower = true;
        c->type = c->lower.mode & S_IFMT;
        c->ino = lower_entry_ino(dir->layer->part, &c->lower);
        if (c->lower.fz && !S_ISDIR(c->type) &&
            (c->lower.fz->nlink > 1 || c->lower.fz->indexed || links_top_any(ws)) &&
            links_open_top(ws, c->ino, &c->hfd) == 0) {
                /* One of several names of a file copied up into the link index (links.c). */
                if (fstatat(c->hfd, "", &c->ust, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0) {
                        r = negative_errno();
                        c->hfd = safe_close(c->hfd);
                        lower_entry_clear(&c->lower);
                        return r;
                }
                lower_entry_clear(&c->lower);
                c->has_lower = false;
                c->upper = c->indexed = true;
        }
        return 0;
}

static int node_from(struct fs_workspace *ws, struct node *dir, const char *name,
                     struct cow_resolved *c, struct node **ret)
{
        struct node *n = node_find_lookup(ws, c->ino);
        if (n && !n->unlinked) {
                lower_entry_clear(&c->lower);
                safe_close(c->hfd);
                *ret = n;
                return 0;
        }
        /* A node whose name was removed is stale (it may live on for open
         * files); the entry found now gets a fresh node. */
        bool stale = n != NULL;
        if (n)
                node_forget(ws, n, 1);
        n = node_new(ws, NODE_COW, c->type, c->ino);
        if (!n || !(n->name = strdup(name))) {
                if (n)
                        node_free(n);
                lower_entry_clear(&c->lower);
                safe_close(c->hfd);
                return -ENOMEM;
        }
        n->hfd = TAKE_FD(c->hfd);
        n->indexed = c->indexed;
        n->parent = dir;
        n->layer = dir->layer;
        n->upper = c->upper;
        n->metacopy = c->metacopy;
        n->opaque = c->opaque;
        n->has_lower = c->has_lower;
        n->lower = c->lower;
        c->lower = (struct lower_entry){0};
        if (S_ISDIR(c->type) && c->upper) {
                char en[256];
                int r = upper_name_escape(name, en);
                if (r == 0)
                        n->ufd = openat(dir->ufd, en,
                                        O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (n->ufd < 0) {
                        r = r < 0 ? r : negative_errno();
                        node_free(n);
                        return r;
                }
                r = attr_dir_load(ws, n);
                if (r < 0) {
                        node_free(n);
                        return r;
                }
        } else if (S_ISDIR(c->type) && n->lower.fz) {
                int r = attr_dir_load_fd(ws, n, n->lower.fz->fd);
                if (r < 0) {
                        node_free(n);
                        return r;
                }
        }
        if (c->upper && !S_ISDIR(c->type)) {
                int r = upper_node_pin(n);
                if (r < 0) {
                        node_free(n);
                        return r;
                }
                /* A name of this layer of a file that is in its link index too. */
                if (!n->indexed && c->ust.st_nlink > 1 && n->layer == &ws->repo)
                        n->indexed = links_in_index(ws->repo.upper_fd, n->ino, n->hfd);
        }
        *ret = stale ? node_insert_new(ws, n) : node_insert_lookup(ws, n);
        return 0;
}

int cow_lookup(struct fs_workspace *ws, struct node *parent, const char *name, struct node **ret)
{
        struct cow_resolved c;
        int r = resolve(ws, parent, name, &c);
        if (r < 0)
                return r;
        return node_from(ws, parent, name, &c, ret);
}

int cow_layer_root(struct fs_workspace *ws, struct layer *l, struct node *parent, const char *name,
                   struct node **ret)
{
        struct node *n;
        int r;

        n = node_new(ws, NODE_COW, S_IFDIR, lower_ino(l->part, ""));
        if (!n || !(n->name = strdup(name))) {
                if (n)
                        node_free(n);
                return -ENOMEM;
        }
        n->parent = parent;
        n->layer = l;
        n->upper = true;
        n->ufd = fcntl(l->upper_fd, F_DUPFD_CLOEXEC, 3);
        if (n->ufd < 0) {
                node_free(n);
                return negative_errno();
        }
        r = attr_dir_load(ws, n);
        if (r < 0) {
                node_free(n);
                return r;
        }
        if (l->lower) {
                r = lower_root(l->lower, &n->lower);
                if (r < 0) {
                        node_free(n);
                        return r;
                }
                n->has_lower = true;
        }
        n = node_insert_lookup(ws, n);
        n->refs++; /* permanent */
        l->root = n;
        *ret = n;
        return 0;
}

bool cow_name_current(struct fs_workspace *ws, struct node *n)
{
        struct cow_resolved c;
        bool same;

        if (!n->parent || n->unlinked || n->parent->kind != NODE_COW ||
            resolve(ws, n->parent, n->name, &c) < 0)
                return false;
        same = c.ino == n->ino;
        lower_entry_clear(&c.lower);
        safe_close(c.hfd);
        return same;
}

int cow_lower_has(struct fs_workspace *ws, struct node *dir, const char *name)
{
        struct lower_entry e = {0};
        int r;
        (void)ws;
        if (!dir->has_lower)
                return 0;
        r = lower_child(dir->layer->lower, &dir->lower, name, &e);
        lower_entry_clear(&e);
        if (r == -ENOENT || r == -ENOTDIR)
                return 0;
        return r < 0 ? r : 1;
}

/* ---- listing ---- */

struct listing {
        struct cow_dirent *d;
        size_t n, cap;
        size_t n_upper; /* d[0..n_upper) are the upper entries, sorted by name */
        struct node *dir;
        int r;
};

static int listing_add(struct listing *li, const char *name, uint64_t ino, mode_t type)
{
        if (li->n == li->cap) {
                size_t cap = li->cap ? li->cap * 2 : 32;
                struct cow_dirent *d = realloc(li->d, cap * sizeof(*d));
                if (!d)
                        return -ENOMEM;
                li->d = d;
                li->cap = cap;
        }
        li->d[li->n].name = strdup(name);
        if (!li->d[li->n].name)
                return -ENOMEM;
        li->d[li->n].ino = ino;
        li->d[li->n].type = type;
        li->n++;
        return 0;
}

void fs_dirents_free(struct cow_dirent *d, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(d[i].name);
        free(d);
}

static int name_cmp(const void *a, const void *b)
{
        return strcmp(((const struct cow_dirent *)a)->name, ((const struct cow_dirent *)b)->name);
}

static int lower_cb(const char *name, const struct lower_entry *child, void *userdata)
{
        struct listing *li = userdata;
        struct cow_dirent key = {.name = (char *)name};
        _cleanup_free_ char *p = NULL;
        if ((li->n_upper && bsearch(&key, li->d, li->n_upper, sizeof(*li->d), name_cmp)) ||
            upper_meta_whiteout(li->dir, name))
                return 0;
        if (child->ino) /* a stack says (lower-stack.c) */
                return listing_add(li, name, child->ino, child->mode & S_IFMT);
        p = lower_path_join(li->dir->lower.path, name);
        if (!p)
                return -ENOMEM;
        return listing_add(li, name, lower_ino(li->dir->layer->part, p), child->mode & S_IFMT);
}

static int list_upper(struct listing *li)
{
        struct node *dir = li->dir;
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int r, fd = openat(dir->ufd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (fd < 0 || !(d = fdopendir(fd))) {
                r = negative_errno();
                safe_close(fd);
                return r;
        }
        while ((de = readdir(d))) {
                const char *name = upper_name_unescape(de->d_name);
                json_t *rec;
                uint64_t ino;
                mode_t type = DTTOIF(de->d_type);
                if (!name || streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                rec = upper_meta_rec(dir, name);
                ino = rec_ino(rec);
                if (!ino || de->d_type == DT_UNKNOWN) {
                        struct stat st;
                        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                                continue;
                        if (!ino)
                                ino = upper_ino(&st);
                        type = st.st_mode & S_IFMT;
                }
                type = upper_rec_type(rec, type);
                r = listing_add(li, name, ino, type);
                if (r < 0)
                        return r;
        }
        li->n_upper = li->n;
        if (li->n_upper) /* li->d is NULL for an empty dir: qsort's base must not be */
                qsort(li->d, li->n_upper, sizeof(*li->d), name_cmp);
        return 0;
}

int cow_list(struct fs_workspace *ws, struct node *dir, struct cow_dirent **ret, size_t *ret_n)
{
        struct listing li = {.dir = dir};
        int r = 0;
        (void)ws;

        if (dir->unlinked) {
                /* rmdir'ed while open: empty, as on ext4 */
                *ret = NULL;
                *ret_n = 0;
                return 0;
        }
        if (dir->upper) {
                r = list_upper(&li);
                if (r < 0)
                        goto out;
        }
        if (dir->has_lower) {
                /* Only lower names that neither an upper entry nor a whiteout hides. */
                r = lower_list(dir->layer->lower, &dir->lower, lower_cb, &li);
                if (r < 0)
                        goto out;
        }
        *ret = li.d;
        *ret_n = li.n;
        li.d = NULL;
        li.n = 0;
        r = 0;
out:
        fs_dirents_free(li.d, li.n);
        return r;
}

/*
 * 2 + subdirectories, as on ext4, merged from both layers: a whole listing,
 * so it is kept until the dir's names change (every lookup of a dir asks).
 * Several holders of the shared ns_lock may fill it at once; they see the
 * same list_gen and so store the same count, and the count is stored before
 * the generation that makes it valid.
 */
static int merged_nlink(struct fs_workspace *ws, struct node *n, nlink_t *ret)
{
        uint64_t gen = atomic_load(&n->list_gen) + 1;
        struct cow_dirent *d = NULL;
        size_t nd = 0;
        nlink_t k = 2;
        int r;

        if (atomic_load_explicit(&n->nlink_gen, memory_order_acquire) == gen) {
                *ret = atomic_load_explicit(&n->nlink, memory_order_relaxed);
                return 0;
        }
        r = cow_list(ws, n, &d, &nd);
        if (r < 0)
                return r;
        for (size_t i = 0; i < nd; i++)
                if (S_ISDIR(d[i].type))
                        k++;
        fs_dirents_free(d, nd);
        atomic_store_explicit(&n->nlink, k, memory_order_relaxed);
        atomic_store_explicit(&n->nlink_gen, gen, memory_order_release);
        *ret = k;
        return 0;
}

int cow_getattr(struct fs_workspace *ws, struct node *n, struct stat *st)
{
        int r;

        if (n->upper) {
                r = upper_fstat(ws, n, st);
                if (r < 0)
                        return r;
                if (!S_ISDIR(n->type) && n->hfd >= 0)
                        links_nlink(ws, n, n->hfd, st);
                if (n->metacopy) {
                        pthread_mutex_lock(&n->lock);
                        r = lower_size(n->layer->lower, &n->lower);
                        pthread_mutex_unlock(&n->lock);
                        if (r < 0)
                                return r;
                        st->st_size = (off_t)n->lower.size;
                        st->st_blocks = (blkcnt_t)((n->lower.size + 511) / 512);
                }
        } else if (n->has_lower && n->lower.fz) {
                r = frozen_getattr(ws, n, st);
                if (r < 0)
                        return r;
        } else {
                if (!n->has_lower)
                        return -ENOENT;
                *st = (struct stat){0};
                pthread_mutex_lock(&n->lock);
                r = lower_size(n->layer->lower, &n->lower);
                pthread_mutex_unlock(&n->lock);
                if (r < 0)
                        return r;
                st->st_mode = n->lower.mode & ~(mode_t)(S_ISUID | S_ISGID);
                st->st_size = (off_t)n->lower.size;
                st->st_blocks = (blkcnt_t)((n->lower.size + 511) / 512);
                st->st_mtim = st->st_atim = n->lower.mtime;
                /* The home's seeds are copied afresh at every mount: their host
                 * ctime is the mount's, so report the mtime, which stays. */
                st->st_ctim = n->layer == &ws->home ? n->lower.mtime : n->lower.ctime;
                st->st_uid = ws->uid;
                st->st_gid = ws->gid;
                st->st_nlink = n->unlinked ? 0 : 1;
                st->st_blksize = 4096;
        }
        st->st_ino = n->ino;
        if (S_ISDIR(n->type) && n->unlinked) {
                st->st_nlink = 0; /* as ext4 says of a dir rmdir'ed while open */
        } else if (S_ISDIR(n->type) && n->has_lower) {
                r = merged_nlink(ws, n, &st->st_nlink);
                if (r < 0)
                        return r;
        }
        return 0;
}
