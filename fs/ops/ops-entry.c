/* SPDX-License-Identifier: MIT */
/*
 * ops-entry.c: FUSE handlers that look things up without changing them:
 * lookup, forget, getattr, directory listing, statfs, readlink.
 *
 * Caching: every change goes through this mount, so the kernel's caches
 * stay right by themselves and entries, attributes and negative entries
 * get a long timeout; directories are listed from a snapshot taken when a
 * listing starts, with name cookies as offsets, and the kernel may keep the
 * listings (cache_readdir) of all but mirrors. Only /.cloister files, which
 * change behind the kernel's back, are uncached.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <sodium.h>

#include "ops.h"
#include "lib/util.h"

double ops_timeout(const struct node *n)
{
        return n && n->kind == NODE_CTL ? 0.0 : FS_TIMEOUT_LONG;
}

static int synth_getattr(struct fs_workspace *ws, struct node *n, struct stat *st)
{
        *st = (struct stat){0};
        st->st_ino = n->ino;
        st->st_uid = ws->uid;
        st->st_gid = ws->gid;
        st->st_blksize = 4096;
        st->st_mtim = st->st_ctim = st->st_atim = ws->root->lower.mtime;
        if (n->kind == NODE_SYNTH) {
                st->st_mode = S_IFDIR | 0755;
                st->st_nlink = 2;
                for (size_t i = 0; i < n->n_children; i++)
                        if (S_ISDIR(n->children[i]->type))
                                st->st_nlink++;
                st->st_size = 4096;
        } else {
                st->st_mode = S_IFREG | 0444;
                st->st_nlink = 1;
                if (n->ctl == CTL_WORKSPACE)
                        st->st_size = (off_t)strlen(ws->workspace_json);
        }
        return 0;
}

int ops_getattr(struct fs_workspace *ws, struct node *n, struct handle *h, struct stat *st)
{
        int r;

        switch (n->kind) {
        case NODE_SYNTH:
        case NODE_CTL:
                return synth_getattr(ws, n, st);
        case NODE_MIRROR:
                r = mirror_getattr(ws, n, st);
                /*
                 * The repo's own objects read as the agent's, as in an
                 * unprivileged run; a mirror shows its host owners, whom a
                 * root-run agent is not.
                 */
                if (r == 0 && n->mirror == &ws->objects)
                        fs_owner_show(ws, st);
                return r;
        case NODE_COW:
                if (h && h->fd >= 0 && h->is_upper && !S_ISDIR(n->type) && !n->metacopy) {
                        /* An open upper file, maybe unlinked already. */
                        if (fstat(h->fd, st) < 0)
                                return negative_errno();
                        attr_view(ws, n, h->fd, st);
                        st->st_ino = n->ino;
                        owner_show(ws, n, h->fd, st);
                        links_nlink(ws, n, h->fd, st);
                        return 0;
                }
                r = cow_getattr(ws, n, st);
                if (r == 0 && n->upper)
                        owner_show(ws, n, S_ISDIR(n->type) ? n->ufd : n->hfd, st);
                return r;
        }
        return -EIO;
}

void ops_fill_entry(struct fs_workspace *ws, struct node *n, const struct stat *st,
                    struct fuse_entry_param *e)
{
        *e = (struct fuse_entry_param){0};
        e->ino = node_ino(ws, n);
        e->attr = *st;
        e->attr_timeout = e->entry_timeout = ops_timeout(n);
}

/* Look name up in parent (one lookup taken on *ret); ns_lock taken inside. */
static int ops_lookup_node(struct fs_workspace *ws, struct node *parent, const char *name,
                           struct node **ret)
{
        int r;

        if (!S_ISDIR(parent->type))
                return -ENOTDIR;
        if (strnlen(name, 256) > 255)
                return -ENAMETOOLONG;
        switch (parent->kind) {
        case NODE_SYNTH:
                if (streq(name, ".") || streq(name, ".."))
                        return -EINVAL;
                for (size_t i = 0; i < parent->n_children; i++)
                        if (streq(parent->children[i]->name, name)) {
                                struct node *c = node_find_lookup(ws, parent->children[i]->ino);
                                if (!c)
                                        return -EIO;
                                *ret = c;
                                return 0;
                        }
                return -ENOENT;
        case NODE_MIRROR:
                return mirror_lookup(ws, parent, name, ret);
        case NODE_COW:
                pthread_rwlock_rdlock(&ws->ns_lock);
                r = cow_lookup(ws, parent, name, ret);
                pthread_rwlock_unlock(&ws->ns_lock);
                return r;
        default:
                return -ENOTDIR;
        }
}

/*
 * The entry of name in p, into *e: 1 for a node (with *stale to drop after
 * the reply, if the name is one of several), 0 for a negative entry, or a
 * negative errno.
 */
static int do_lookup(struct fs_workspace *ws, struct node *p, const char *name,
                     struct fuse_entry_param *e, struct shed_stale *stale)
{
        struct node *n = NULL;
        struct stat st;
        int r;

        r = gitindex_wait(ws, p, name);
        if (r == 0)
                r = ops_lookup_node(ws, p, name, &n);
        if (r == -EMFILE || r == -ENFILE)
                shed_wake(ws); /* faster than a round: say so, and fail this one */
        if (r == -ENOENT) {
                /* A negative entry: cached as long as a positive one would be. */
                *e = (struct fuse_entry_param){.entry_timeout = ops_timeout(p)};
                if (p->kind == NODE_MIRROR)
                        e->entry_timeout = 1.0; /* the host may add it */
                return 0;
        }
        if (r < 0)
                return r;
        pthread_rwlock_rdlock(&ws->ns_lock);
        r = ops_getattr(ws, n, NULL, &st);
        /* Another name of a file with several (ops.h, shed_stale):
         * this entry is dropped after its use. */
        if (r == 0 && st.st_nlink > 1 && !shed_stale_is(n, p, name)) {
                stale->name = strdup(name);
                if (stale->name) {
                        stale->parent = p;
                        node_ref(ws, p);
                }
        }
        pthread_rwlock_unlock(&ws->ns_lock);
        if (r < 0) {
                node_forget(ws, n, 1);
                return r;
        }
        ops_fill_entry(ws, n, &st, e);
        return 1;
}

void ops_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
        struct fs_workspace *ws = req_ws(req);
        struct shed_stale stale = {0};
        struct fuse_entry_param e;
        int r = do_lookup(ws, req_node(req, parent), name, &e, &stale);

        if (r < 0)
                fuse_reply_err(req, -r);
        else
                fuse_reply_entry(req, &e);
        if (r > 0) {
                shed_stale_drop(ws, &stale);
                shed_repay(ws);
        }
}

void ops_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
        struct fs_workspace *ws = req_ws(req);
        node_forget(ws, req_node(req, ino), nlookup);
        fuse_reply_none(req);
}

void ops_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
        struct fs_workspace *ws = req_ws(req);
        for (size_t i = 0; i < count; i++)
                node_forget(ws, req_node(req, forgets[i].ino), forgets[i].nlookup);
        fuse_reply_none(req);
}

void ops_getattr_req(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
        struct fs_workspace *ws = req_ws(req);
        struct node *n = req_node(req, ino);
        struct stat st;
        int r;

        pthread_rwlock_rdlock(&ws->ns_lock);
        r = ops_getattr(ws, n, fi_handle(fi), &st);
        pthread_rwlock_unlock(&ws->ns_lock);
        if (r < 0)
                fuse_reply_err(req, -r);
        else
                fuse_reply_attr(req, &st, ops_timeout(n));
}

static int synth_list(struct node *n, struct cow_dirent **ret, size_t *ret_n)
{
        struct cow_dirent *d = calloc(n->n_children + 1, sizeof(*d));
        if (!d)
                return -ENOMEM;
        for (size_t i = 0; i < n->n_children; i++) {
                d[i].name = strdup(n->children[i]->name);
                d[i].ino = n->children[i]->ino;
                d[i].type = n->children[i]->type;
                if (!d[i].name) {
                        fs_dirents_free(d, i);
                        return -ENOMEM;
                }
        }
        *ret = d;
        *ret_n = n->n_children;
        return 0;
}

/*
 * The kernel may keep a dir's listing (FOPEN_CACHE_DIR) where every change
 * to it goes through this mount: it then drops the listing itself when it
 * sees the dir change (its iversion and mtime, checked at each rewind).
 * Not mirrors, which the host changes, and no copy-on-write dir while the
 * .git index is being built, which the daemon adds behind the kernel.
 */
static bool listing_cacheable(struct fs_workspace *ws, struct node *n)
{
        switch (n->kind) {
        case NODE_SYNTH:
                return true;
        case NODE_COW:
                return atomic_load(&ws->index.state) != GITINDEX_BUILDING;
        default:
                return false;
        }
}

static int do_opendir(struct fs_workspace *ws, struct node *n, struct fuse_file_info *fi)
{
        struct handle *h;

        if (!S_ISDIR(n->type))
                return -ENOTDIR;
        h = handle_new();
        if (!h)
                return -ENOMEM;
        h->node = n;
        node_ref(ws, n);
        fi->fh = (uint64_t)(uintptr_t)h;
        /*
         * A dir moved to a new parent: the kernel's cached listing still has
         * the old parent in "..", and the kernel does not drop it on a rename
         * of the dir itself; an open without keep_cache does.
         */
        fi->keep_cache = !atomic_exchange(&n->moved, false);
        fi->cache_readdir = listing_cacheable(ws, n);
        return 0;
}

void ops_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
        struct fs_workspace *ws = req_ws(req);
        int r = do_opendir(ws, req_node(req, ino), fi);

        if (r < 0)
                fuse_reply_err(req, -r);
        else
                fuse_reply_open(req, fi);
}

/*
 * Listing cookies. A readdir offset names the entry to go on after, not a
 * place in one snapshot: the kernel's readdir cache mixes handles (a reader
 * takes what the cache holds, then goes on with its own handle and so its
 * own snapshot), and a snapshot rebuilt because the namespace changed must
 * go on where the old one stopped. With offsets that were indexes, readers
 * of a changing dir got entries twice or not at all (listing-race.py). So
 * an entry's offset is a keyed hash of its name (SipHash; the key is drawn
 * at mount, so the agent cannot make names collide on purpose), entries
 * are listed in that order, and offset k means "the entries whose cookie
 * is above k". 0 is the start, 1 and 2 come after "." and "..".
 */
#define COOKIE_DOTDOT 2

static uint64_t name_cookie(const struct fs_workspace *ws, const char *name)
{
        unsigned char h[crypto_shorthash_BYTES];
        uint64_t v;

        crypto_shorthash(h, (const unsigned char *)name, strlen(name), ws->dir_key);
        memcpy(&v, h, sizeof(v));
        return (v >> 2) + COOKIE_DOTDOT + 1; /* a positive off_t above the dots */
}

static int cookie_cmp(const void *a, const void *b)
{
        const struct cow_dirent *x = a, *y = b;
        if (x->off != y->off)
                return x->off < y->off ? -1 : 1;
        return strcmp(x->name, y->name);
}

/* The first entry whose cookie is above off. */
static size_t cookie_after(const struct cow_dirent *d, size_t n, uint64_t off)
{
        size_t lo = 0, hi = n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (d[mid].off <= off)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

static int list_dir(struct fs_workspace *ws, struct node *n, struct handle *h)
{
        int r;

        fs_dirents_free(h->ents, h->n_ents);
        h->ents = NULL;
        h->n_ents = 0;
        h->listed = false;
        switch (n->kind) {
        case NODE_SYNTH:
                r = synth_list(n, &h->ents, &h->n_ents);
                break;
        case NODE_MIRROR:
                r = mirror_list(ws, n, &h->ents, &h->n_ents);
                break;
        case NODE_COW:
                pthread_rwlock_rdlock(&ws->ns_lock);
                h->gen = atomic_load(&n->list_gen);
                r = cow_list(ws, n, &h->ents, &h->n_ents);
                pthread_rwlock_unlock(&ws->ns_lock);
                break;
        default:
                return -ENOTDIR;
        }
        if (r < 0)
                return r;
        for (size_t i = 0; i < h->n_ents; i++)
                h->ents[i].off = name_cookie(ws, h->ents[i].name);
        if (h->n_ents)
                qsort(h->ents, h->n_ents, sizeof(*h->ents), cookie_cmp);
        h->listed = true;
        return 0;
}

/*
 * A new snapshot at each start of a listing (the kernel notes its cache's
 * version before asking for offset 0, so a change made after the snapshot
 * keeps a stale listing out of its cache) and, for a copy-on-write dir,
 * whenever its names changed since. That one is needed: a handle whose last
 * pass is long over may be asked to go on where the kernel's cache ends
 * (another reader filled it, this one rewound and was served from it), and
 * its old snapshot, older than the cache, would add stale entries to it
 * that later readers get. Cookies let the new snapshot go on where the old one stopped. A
 * mirror's snapshot lasts one pass, as the host's dir.
 */
static bool listing_stale(struct fs_workspace *ws, struct node *n, struct handle *h, off_t off)
{
        return off == 0 || !h->listed ||
               (n->kind == NODE_COW && h->gen != atomic_load(&n->list_gen));
}

/* Bytes that entries [i, j) of one cookie take in a reply. */
static size_t group_size(fuse_req_t req, const struct cow_dirent *d, size_t i, size_t j, bool plus)
{
        size_t need = 0;
        for (; i < j; i++)
                need += plus ? fuse_add_direntry_plus(req, NULL, 0, d[i].name, NULL, 0)
                             : fuse_add_direntry(req, NULL, 0, d[i].name, NULL, 0);
        return need;
}

/* Add entry e of dir to buf (readdirplus: looked up, so the kernel gets a reference). */
static size_t add_entry(fuse_req_t req, struct fs_workspace *ws, struct node *dir, char *buf,
                        size_t room, const struct cow_dirent *e, bool plus)
{
        struct fuse_entry_param ep;
        struct stat st = {.st_ino = e->ino, .st_mode = e->type};
        struct node *c = NULL;
        int r;

        if (!plus)
                return fuse_add_direntry(req, buf, room, e->name, &st, (off_t)e->off);
        if (shed_short(ws)) {
                /* No node (ino 0): the kernel looks the entry up if it is used. */
                ep = (struct fuse_entry_param){.attr = st};
                return fuse_add_direntry_plus(req, buf, room, e->name, &ep, (off_t)e->off);
        }
        r = ops_lookup_node(ws, dir, e->name, &c);
        if (r < 0)
                return 0; /* gone since the snapshot */
        pthread_rwlock_rdlock(&ws->ns_lock);
        r = ops_getattr(ws, c, NULL, &st);
        pthread_rwlock_unlock(&ws->ns_lock);
        if (r < 0 || (!S_ISDIR(st.st_mode) && st.st_nlink > 1)) {
                node_forget(ws, c, 1);
                if (r < 0)
                        return 0;
                /* A file with several names: no entry the kernel would keep
                 * (fs-private.h, shed_stale); it looks the name up when used. */
                ep = (struct fuse_entry_param){.attr = {.st_ino = e->ino, .st_mode = e->type}};
                return fuse_add_direntry_plus(req, buf, room, e->name, &ep, (off_t)e->off);
        }
        ops_fill_entry(ws, c, &st, &ep);
        return fuse_add_direntry_plus(req, buf, room, e->name, &ep, (off_t)e->off);
}

/* A listing's entries from off into buf (size bytes): *ret_pos of them, or a negative errno. */
static int readdir_fill(fuse_req_t req, struct fs_workspace *ws, struct node *dir, struct handle *h,
                        char *buf, size_t size, off_t off, bool plus, size_t *ret_pos)
{
        size_t pos = 0, i;

        if (listing_stale(ws, dir, h, off)) {
                int r = list_dir(ws, dir, h);
                if (r < 0)
                        return r;
        }
        /* "." and "..": the attributes readdirplus gives them are not used. */
        for (off_t k = off; k < COOKIE_DOTDOT; k++) {
                struct stat st = {.st_mode = S_IFDIR};
                struct fuse_entry_param e = {0};
                const char *name = k == 0 ? "." : "..";
                size_t need;

                st.st_ino = k == 0 || !dir->parent ? dir->ino : dir->parent->ino;
                e.attr = st;
                need = plus ? fuse_add_direntry_plus(req, buf + pos, size - pos, name, &e, k + 1)
                            : fuse_add_direntry(req, buf + pos, size - pos, name, &st, k + 1);
                if (need > size - pos)
                        goto reply;
                pos += need;
        }
        i = cookie_after(h->ents, h->n_ents, (uint64_t)off);
        while (i < h->n_ents) {
                size_t j = i + 1;
                /* Names of one cookie go in one reply, or the offset would skip
                 * some; unless they fill a reply alone (never seen: 62 bits). */
                while (j < h->n_ents && h->ents[j].off == h->ents[i].off)
                        j++;
                if (pos > 0 && group_size(req, h->ents, i, j, plus) > size - pos)
                        break;
                for (; i < j; i++) {
                        size_t need = plus ? fuse_add_direntry_plus(req, NULL, 0, h->ents[i].name,
                                                                    NULL, 0)
                                           : 0;
                        if (plus && need > size - pos)
                                goto reply;
                        need = add_entry(req, ws, dir, buf + pos, size - pos, &h->ents[i], plus);
                        if (need > size - pos)
                                goto reply;
                        pos += need;
                }
        }
reply:
        *ret_pos = pos;
        return 0;
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi, bool plus)
{
        struct fs_workspace *ws = req_ws(req);
        _cleanup_free_ char *buf = off < 0 ? NULL : malloc(size);
        size_t pos = 0;
        int r = off < 0 ? -EINVAL
                : !buf  ? -ENOMEM
                        : readdir_fill(req, ws, req_node(req, ino), fi_handle(fi), buf, size, off,
                                       plus, &pos);

        if (r < 0)
                fuse_reply_err(req, -r);
        else
                fuse_reply_buf(req, buf, pos);
}

void ops_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
        do_readdir(req, ino, size, off, fi, false);
}

void ops_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                     struct fuse_file_info *fi)
{
        do_readdir(req, ino, size, off, fi, true);
}

void ops_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
        struct fs_workspace *ws = req_ws(req);
        struct handle *h = fi_handle(fi);
        (void)ino;
        fs_dirents_free(h->ents, h->n_ents);
        node_unref(ws, h->node);
        free(h);
        fuse_reply_err(req, 0);
}

void ops_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
        struct fs_workspace *ws = req_ws(req);
        struct node *n = req_node(req, ino);
        int r = 0;
        (void)fi;
        pthread_rwlock_rdlock(&ws->ns_lock);
        /* The sidecar first: its whiteouts and records are part of what the dir lists. */
        if (n->kind == NODE_COW && n->ufd >= 0)
                r = -upper_meta_sync(n);
        if (r == 0 && n->kind == NODE_COW && n->ufd >= 0 &&
            (datasync ? fdatasync(n->ufd) : fsync(n->ufd)) < 0)
                r = errno;
        pthread_rwlock_unlock(&ws->ns_lock);
        fuse_reply_err(req, r);
}

void ops_statfs(fuse_req_t req, fuse_ino_t ino)
{
        struct fs_workspace *ws = req_ws(req);
        struct statvfs sv = {0};
        uint64_t ub = atomic_load(&ws->used_bytes), uf = atomic_load(&ws->used_files);
        (void)ino;
        sv.f_bsize = sv.f_frsize = 4096;
        sv.f_blocks = ws->max_bytes / 4096;
        sv.f_bfree = sv.f_bavail = ub >= ws->max_bytes ? 0 : (ws->max_bytes - ub) / 4096;
        sv.f_files = ws->max_files;
        sv.f_ffree = sv.f_favail = uf >= ws->max_files ? 0 : ws->max_files - uf;
        sv.f_namemax = 255;
        fuse_reply_statfs(req, &sv);
}

static int do_readlink(struct fs_workspace *ws, struct node *n, char **ret)
{
        int r;

        if (!S_ISLNK(n->type))
                return -EINVAL;
        if (n->kind == NODE_MIRROR)
                return mirror_readlink(ws, n, ret);
        pthread_rwlock_rdlock(&ws->ns_lock);
        if (n->upper) {
                char en[256], buf[PATH_MAX + 1];
                ssize_t k;
                r = upper_name_escape(n->name, en);
                if (r == 0) {
                        /* The pinned fd: the name may be gone (hard links). */
                        k = n->hfd >= 0 ? readlinkat(n->hfd, "", buf, sizeof(buf) - 1)
                                        : readlinkat(n->parent->ufd, en, buf, sizeof(buf) - 1);
                        if (k < 0)
                                r = negative_errno();
                        else {
                                buf[k] = 0;
                                *ret = strdup(buf);
                                r = *ret ? 0 : -ENOMEM;
                        }
                }
        } else {
                r = lower_readlink(n->layer->lower, &n->lower, ret);
        }
        pthread_rwlock_unlock(&ws->ns_lock);
        return r;
}

void ops_readlink(fuse_req_t req, fuse_ino_t ino)
{
        struct fs_workspace *ws = req_ws(req);
        _cleanup_free_ char *target = NULL;
        int r = do_readlink(ws, req_node(req, ino), &target);

        if (r < 0)
                fuse_reply_err(req, -r);
        else
                fuse_reply_readlink(req, target);
}
