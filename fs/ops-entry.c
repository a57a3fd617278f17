/* SPDX-License-Identifier: MIT */
/*
 * ops-entry.c: FUSE handlers that look things up without changing them:
 * lookup, forget, getattr, directory listing, statfs, readlink.
 *
 * Caching: every change goes through this mount, so the kernel's caches
 * stay right by themselves and entries, attributes and negative entries
 * get a long timeout; directories are listed from a snapshot taken at
 * opendir and may be cached (cache_readdir). Only /.cloister files, which
 * change behind the kernel's back, are uncached.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

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

int ops_lookup_node(struct fs_workspace *ws, struct node *parent, const char *name,
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

void ops_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
        struct fs_workspace *ws = req_ws(req);
        struct node *p = ino_node(ws, parent), *n = NULL;
        struct fuse_entry_param e;
        struct stat st;
        int r;

        r = gitindex_wait(ws, p, name);
        if (r == 0)
                r = ops_lookup_node(ws, p, name, &n);
        if (r == -ENOENT) {
                /* A negative entry: cached as long as a positive one would be. */
                e = (struct fuse_entry_param){.entry_timeout = ops_timeout(p)};
                if (p->kind == NODE_MIRROR)
                        e.entry_timeout = 1.0; /* the host may add it */
                fuse_reply_entry(req, &e);
                return;
        }
        if (r < 0) {
                fuse_reply_err(req, -r);
                return;
        }
        pthread_rwlock_rdlock(&ws->ns_lock);
        r = ops_getattr(ws, n, NULL, &st);
        pthread_rwlock_unlock(&ws->ns_lock);
        if (r < 0) {
                node_forget(ws, n, 1);
                fuse_reply_err(req, -r);
                return;
        }
        ops_fill_entry(ws, n, &st, &e);
        fuse_reply_entry(req, &e);
}

void ops_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
        struct fs_workspace *ws = req_ws(req);
        node_forget(ws, ino_node(ws, ino), nlookup);
        fuse_reply_none(req);
}

void ops_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets)
{
        struct fs_workspace *ws = req_ws(req);
        for (size_t i = 0; i < count; i++)
                node_forget(ws, ino_node(ws, forgets[i].ino), forgets[i].nlookup);
        fuse_reply_none(req);
}

void ops_getattr_req(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
        struct fs_workspace *ws = req_ws(req);
        struct node *n = ino_node(ws, ino);
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

void ops_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
        struct fs_workspace *ws = req_ws(req);
        struct node *n = ino_node(ws, ino);
        struct handle *h;

        if (!S_ISDIR(n->type)) {
                fuse_reply_err(req, ENOTDIR);
                return;
        }
        h = calloc(1, sizeof(*h));
        if (!h) {
                fuse_reply_err(req, ENOMEM);
                return;
        }
        h->fd = h->lower_fd = h->stale_fd = -1;
        h->node = n;
        node_ref(ws, n);
        fi->fh = (uint64_t)(uintptr_t)h;
        fi->keep_cache = 1;
        /*
         * The kernel's readdir cache only for dirs that never change: with it on
         * copy-on-write dirs, the concurrency test (random streams plus
         * readers) saw listings that missed entries made meanwhile.
         */
        fi->cache_readdir = n->kind == NODE_SYNTH;
        fuse_reply_open(req, fi);
}

/*
 * The snapshot is taken when a listing starts (offset 0), not at opendir:
 * the kernel notes its readdir-cache version before asking for offset 0, so
 * a change made after our snapshot keeps a stale listing out of its cache.
 */
static int list_dir(struct fs_workspace *ws, struct node *n, struct handle *h)
{
        int r;
        fs_dirents_free(h->ents, h->n_ents);
        h->ents = NULL;
        h->n_ents = 0;
        switch (n->kind) {
        case NODE_SYNTH:
                return synth_list(n, &h->ents, &h->n_ents);
        case NODE_MIRROR:
                return mirror_list(ws, n, &h->ents, &h->n_ents);
        case NODE_COW:
                pthread_rwlock_rdlock(&ws->ns_lock);
                r = cow_list(ws, n, &h->ents, &h->n_ents);
                pthread_rwlock_unlock(&ws->ns_lock);
                return r;
        default:
                return -ENOTDIR;
        }
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                       struct fuse_file_info *fi, bool plus)
{
        struct fs_workspace *ws = req_ws(req);
        struct handle *h = fi_handle(fi);
        struct node *dir = ino_node(ws, ino);
        _cleanup_free_ char *buf = NULL;
        size_t pos = 0;

        buf = malloc(size);
        if (!buf) {
                fuse_reply_err(req, ENOMEM);
                return;
        }
        if (off == 0 || !h->listed) {
                int r = list_dir(ws, dir, h);
                if (r < 0) {
                        fuse_reply_err(req, -r);
                        return;
                }
                h->listed = true;
        }
        for (size_t i = (size_t)off; i < h->n_ents + 2; i++) {
                const char *name;
                struct stat st = {0};
                size_t need;

                if (i == 0) {
                        name = ".";
                        st.st_ino = dir->ino;
                        st.st_mode = S_IFDIR;
                } else if (i == 1) {
                        name = "..";
                        st.st_ino = dir->parent ? dir->parent->ino : dir->ino;
                        st.st_mode = S_IFDIR;
                } else {
                        name = h->ents[i - 2].name;
                        st.st_ino = h->ents[i - 2].ino;
                        st.st_mode = h->ents[i - 2].type;
                }
                if (!plus) {
                        need = fuse_add_direntry(req, buf + pos, size - pos, name, &st,
                                                 (off_t)(i + 1));
                        if (need > size - pos)
                                break;
                        pos += need;
                        continue;
                }
                need = fuse_add_direntry_plus(req, NULL, 0, name, NULL, 0);
                if (need > size - pos)
                        break;
                {
                        struct fuse_entry_param e = {0};
                        struct node *c = NULL;
                        if (i >= 2) {
                                int r = ops_lookup_node(ws, dir, name, &c);
                                if (r < 0)
                                        continue; /* gone since opendir */
                                pthread_rwlock_rdlock(&ws->ns_lock);
                                r = ops_getattr(ws, c, NULL, &st);
                                pthread_rwlock_unlock(&ws->ns_lock);
                                if (r < 0) {
                                        node_forget(ws, c, 1);
                                        continue;
                                }
                                ops_fill_entry(ws, c, &st, &e);
                        } else {
                                e.attr = st;
                        }
                        pos += fuse_add_direntry_plus(req, buf + pos, size - pos, name, &e,
                                                      (off_t)(i + 1));
                }
        }
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
        struct node *n = ino_node(ws, ino);
        int r = 0;
        (void)fi;
        pthread_rwlock_rdlock(&ws->ns_lock);
        if (n->kind == NODE_COW && n->ufd >= 0 &&
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

void ops_readlink(fuse_req_t req, fuse_ino_t ino)
{
        struct fs_workspace *ws = req_ws(req);
        struct node *n = ino_node(ws, ino);
        _cleanup_free_ char *target = NULL;
        int r;

        if (!S_ISLNK(n->type)) {
                fuse_reply_err(req, EINVAL);
                return;
        }
        if (n->kind == NODE_MIRROR) {
                r = mirror_readlink(ws, n, &target);
        } else {
                pthread_rwlock_rdlock(&ws->ns_lock);
                if (n->upper) {
                        char en[256], buf[PATH_MAX + 1];
                        ssize_t k;
                        r = upper_name_escape(n->name, en);
                        if (r == 0) {
                                /* The pinned fd: the name may be gone (hard links). */
                                k = n->hfd >= 0
                                            ? readlinkat(n->hfd, "", buf, sizeof(buf) - 1)
                                            : readlinkat(n->parent->ufd, en, buf, sizeof(buf) - 1);
                                if (k < 0)
                                        r = negative_errno();
                                else {
                                        buf[k] = 0;
                                        target = strdup(buf);
                                        r = target ? 0 : -ENOMEM;
                                }
                        }
                } else {
                        r = lower_readlink(n->layer->lower, &n->lower, &target);
                }
                pthread_rwlock_unlock(&ws->ns_lock);
        }
        if (r < 0)
                fuse_reply_err(req, -r);
        else
                fuse_reply_readlink(req, target);
}
