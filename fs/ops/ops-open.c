/* SPDX-License-Identifier: MIT */
/*
 * ops-open.c: FUSE handlers that make and drop handles: open,
 * create, release. A lower file opened for reading is never copied up;
 * opening for writing copies metadata only, and the first write the data.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ops.h"
#include "lib/util.h"

static int open_cow(struct fs_workspace *ws, fuse_req_t req, struct node *n, int flags,
                    struct handle *h, struct fuse_file_info *fi)
{
        int acc = flags & O_ACCMODE;
        bool trunc = flags & O_TRUNC, wr = acc != O_RDONLY || trunc;
        int r;

        if (!wr) {
                pthread_rwlock_rdlock(&ws->ns_lock);
                if (n->upper && !n->metacopy) {
                        r = upper_open(n, O_RDONLY | O_NONBLOCK, &h->fd);
                        h->is_upper = true;
                } else if (n->has_lower) {
                        r = lower_entry_copy(&n->lower, &h->lower_entry);
                        h->lazy_lower = r == 0;
                } else {
                        r = -ENOENT;
                }
                pthread_rwlock_unlock(&ws->ns_lock);
                fi->keep_cache = 1;
                return r;
        }
        pthread_rwlock_wrlock(&ws->ns_lock);
        /* Opening for writing copies metadata only; the first write copies the data. */
        r = copyup(ws, n,
                   trunc                ? COPYUP_EMPTY
                   : (flags & O_APPEND) ? COPYUP_DATA /* it will be written */
                                        : COPYUP_META);
        if (r == 0)
                r = upper_open(n, (acc == O_RDONLY ? O_RDWR : acc) | O_NONBLOCK, &h->fd);
        if (r == 0) {
                h->is_upper = h->writable = true;
                if (trunc) {
                        r = ops_truncate_upper_fd(ws, n, h->fd, 0);
                        if (r == 0)
                                r = ops_journal(ws, req, JOURNAL_TRUNCATE, n, NULL, NULL);
                        if (r == 0 && ops_open_kills_suidgid(ws, req, h->fd))
                                r = ops_kill_suidgid(ws, req, n);
                }
        }
        pthread_rwlock_unlock(&ws->ns_lock);
        /* Unchanged data may stay cached; a truncation was done by us, not the kernel. */
        fi->keep_cache = !trunc;
        return r;
}

/* h, opened on n, becomes fi's: its first reference, and a checkpoint's to move. */
static void handle_publish(struct fs_workspace *ws, struct handle *h, struct node *n,
                           struct fuse_file_info *fi)
{
        h->node = n;
        node_ref(ws, n);
        fi->noflush = 1; /* writes are synchronous: close has nothing to flush */
        atomic_store(&h->refs, 1);
        fi->fh = (uint64_t)(uintptr_t)h;
        if (h->is_upper)
                ops_handle_track(ws, h); /* a checkpoint may move it (layers-online.c) */
}

/* Open n for fi: *ret_h is its handle, published (handle_publish). */
static int do_open(fuse_req_t req, struct fs_workspace *ws, struct node *n,
                   struct fuse_file_info *fi, struct handle **ret_h)
{
        int acc = fi->flags & O_ACCMODE;
        struct handle *h;
        int r;

        if (S_ISDIR(n->type))
                return -EISDIR;
        h = handle_new();
        if (!h)
                return -ENOMEM;
        switch (n->kind) {
        case NODE_CTL:
                if (acc != O_RDONLY || (fi->flags & O_TRUNC)) {
                        r = -EROFS;
                        break;
                }
                r = control_read_all(ws, n->ctl, &h->buf, &h->len);
                fi->direct_io = 1;
                break;
        case NODE_MIRROR:
                if (acc != O_RDONLY || (fi->flags & O_TRUNC)) {
                        r = -EROFS;
                        break;
                }
                r = mirror_open(ws, n, O_RDONLY, &h->fd);
                fi->keep_cache = 1;
                break;
        case NODE_COW:
                r = open_cow(ws, req, n, fi->flags, h, fi);
                break;
        default:
                r = -EROFS;
        }
        if (r < 0) {
                ops_handle_free(ws, h);
                return r;
        }
        /*
         * An O_DIRECT read on a cached handle that comes back short (at EOF)
         * is finished by the kernel from the page cache if the file has grown
         * meanwhile (generic_file_read_iter), so a read racing a rewrite could
         * return the old head and the new tail. A direct_io handle reads only
         * from us, which is what O_DIRECT asks for anyway.
         */
        if ((fi->flags & O_DIRECT) && acc == O_RDONLY && n->kind != NODE_CTL)
                fi->direct_io = 1;
        handle_publish(ws, h, n, fi);
        *ret_h = h;
        return 0;
}

void ops_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
        struct fs_workspace *ws = req_ws(req);
        struct handle *h = NULL;
        int r = do_open(req, ws, req_node(req, ino), fi, &h);

        if (r < 0)
                fuse_reply_err(req, -r);
        else if (fuse_reply_open(req, fi) == -ENOENT) /* interrupted */
                ops_handle_free(ws, h);
}

void ops_open_part(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
        if (req_conn(req)->no_open)
                fuse_reply_err(req, ENOSYS);
        else
                admit_open(req, ino, fi);
}

void ops_flush_part(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
        if (req_conn(req)->no_open)
                fuse_reply_err(req, ENOSYS);
        else
                ops_flush(req, ino, fi);
}

/*
 * A handle for one request on a connection that opens nothing. Reading
 * needs what an open for reading makes (the upper file, or the lower
 * entry, read at the first read); writing, the data copied up and the
 * upper file open for writing, under the namespace lock taken shared where
 * nothing is to be copied. Nothing of it outlives the request, so there is
 * nothing to keep, track or move: a checkpoint that switches the upper
 * file meanwhile is seen by its count (write_begin, ops-rw.c).
 */
static int request_handle_new(fuse_req_t req, struct fs_workspace *ws, struct node *n, bool write,
                              struct handle **ret)
{
        struct fuse_file_info fi = {.flags = O_RDONLY};
        struct handle *h;
        int r;

        if (n->kind != NODE_COW)
                return -EBADF; /* a part's connection serves nothing else */
        if (S_ISDIR(n->type))
                return -EISDIR;
        h = handle_new();
        if (!h)
                return -ENOMEM;
        h->per_request = true;
        if (!write) {
                r = open_cow(ws, req, n, O_RDONLY, h, &fi);
        } else {
                pthread_rwlock_rdlock(&ws->ns_lock);
                if (!n->upper || n->metacopy) {
                        pthread_rwlock_unlock(&ws->ns_lock);
                        pthread_rwlock_wrlock(&ws->ns_lock);
                        r = copyup(ws, n, COPYUP_DATA);
                } else {
                        r = 0;
                }
                if (r == 0)
                        r = upper_open(n, O_RDWR | O_NONBLOCK, &h->fd);
                /* A mode that lets the store's owner write only (0200), for a daemon not root. */
                if (r == -EACCES)
                        r = upper_open(n, O_WRONLY | O_NONBLOCK, &h->fd);
                h->is_upper = h->writable = r == 0;
                h->checkpoints = atomic_load(&ws->checkpoints);
                pthread_rwlock_unlock(&ws->ns_lock);
        }
        if (r < 0) {
                ops_handle_free(ws, h);
                return r;
        }
        h->node = n;
        node_ref(ws, n);
        atomic_store(&h->refs, 1);
        *ret = h;
        return 0;
}

int ops_request_handle(fuse_req_t req, struct node *n, struct fuse_file_info *fi, bool write,
                       struct handle **ret)
{
        struct handle *h = fi_handle(fi);

        if (h) {
                atomic_fetch_add(&h->refs, 1);
                *ret = h;
                return 0;
        }
        return request_handle_new(req, req_ws(req), n, write, ret);
}

/*
 * Create name in p (or open it, if it exists by now) for fi: *e is its
 * entry and *ret_h its handle, published (handle_publish).
 */
static int do_create(fuse_req_t req, struct fs_workspace *ws, struct node *p, const char *name,
                     mode_t mode, struct fuse_file_info *fi, struct fuse_entry_param *e,
                     struct handle **ret_h)
{
        struct node *n = NULL, *existing = NULL;
        struct handle *h = NULL;
        struct stat st;
        char en[256];
        int fd = -1, r, acc = fi->flags & O_ACCMODE;
        bool charged = false, dir_begun = false;

        if (p->kind != NODE_COW)
                return p->kind == NODE_MIRROR || p->kind == NODE_SYNTH ? -EROFS : -ENOTDIR;
        pthread_rwlock_wrlock(&ws->ns_lock);
        fs_dir_changed(p);
        r = cow_lookup(ws, p, name, &existing);
        if (r == 0) {
                /* It exists (e.g. made behind a cached negative entry): open it. */
                pthread_rwlock_unlock(&ws->ns_lock);
                if (fi->flags & O_EXCL) {
                        node_forget(ws, existing, 1);
                        return -EEXIST;
                }
                h = handle_new();
                r = h ? open_cow(ws, req, existing, fi->flags, h, fi) : -ENOMEM;
                n = existing;
                goto reply;
        }
        if (r != -ENOENT)
                goto unlock;
        r = quota_dir_begin(ws, p, QUOTA_DIR_BLOCK); /* the name's room in p */
        if (r < 0)
                goto unlock;
        dir_begun = true;
        r = upper_name_escape(name, en);
        if (r < 0)
                goto unlock;
        r = copyup_dir(ws, p);
        if (r < 0)
                goto unlock;
        r = quota_charge_files(ws, 1);
        if (r < 0)
                goto unlock;
        charged = true;
        r = upper_meta_set_rec(p, name, NULL);
        if (r == 0)
                r = upper_meta_set_whiteout(p, name, false);
        if (r < 0)
                goto unlock;
        fd = openat(p->ufd, en,
                    O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK |
                            (acc == O_RDONLY ? O_RDWR : acc),
                    mode & 0777);
        if (fd < 0) {
                r = negative_errno();
                goto unlock;
        }
        r = ops_settle_new(ws, req, p, fd, S_IFREG, mode, 0, NULL);
        if (r == 0 && fstat(fd, &st) < 0)
                r = negative_errno();
        if (r < 0) {
                (void)unlinkat(p->ufd, en, 0);
                goto unlock;
        }
        charged = false;
        n = node_new(ws, NODE_COW, S_IFREG, upper_ino(&st));
        if (!n || !(n->name = strdup(name))) {
                if (n)
                        node_free(n);
                n = NULL;
                r = -ENOMEM;
                goto unlock;
        }
        n->parent = p;
        n->layer = p->layer;
        n->upper = true;
        n->hfd = openat(p->ufd, en, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        n = node_insert_new(ws, n);
        r = ops_journal(ws, req, JOURNAL_CREATE, p, name,
                        &(struct journal_entry){.mode = mode, .uid = -1, .gid = -1});
unlock:
        if (dir_begun)
                quota_dir_end(ws, p);
        pthread_rwlock_unlock(&ws->ns_lock);
        if (charged)
                quota_refund_files(ws, 1);
        if (r == 0) {
                h = handle_new();
                if (h) {
                        h->fd = TAKE_FD(fd);
                        h->is_upper = h->writable = true;
                } else
                        r = -ENOMEM;
        }
reply:
        safe_close(fd);
        if (r == 0) {
                pthread_rwlock_rdlock(&ws->ns_lock);
                r = ops_getattr(ws, n, h, &st);
                pthread_rwlock_unlock(&ws->ns_lock);
        }
        if (r < 0) {
                if (n)
                        node_forget(ws, n, 1);
                if (h)
                        ops_handle_free(ws, h);
                return r;
        }
        ops_fill_entry(ws, n, &st, e);
        handle_publish(ws, h, n, fi);
        *ret_h = h;
        return 0;
}

void ops_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                struct fuse_file_info *fi)
{
        struct fs_workspace *ws = req_ws(req);
        struct fuse_entry_param e;
        struct handle *h = NULL;
        int r = do_create(req, ws, req_node(req, parent), name, mode, fi, &e, &h);

        if (r < 0) {
                fuse_reply_err(req, -r);
                return;
        }
        if (req_conn(req)->no_open) {
                /*
                 * The kernel sends no RELEASE on a connection that answered an
                 * OPEN with ENOSYS, not even for a file it created (its check
                 * is at the close): no handle outlives the create, and its
                 * reads and writes are made handles of their own.
                 */
                ops_handle_put(ws, h);
                h = NULL;
                fi->fh = 0;
        }
        if (fuse_reply_create(req, &e, fi) == -ENOENT && h) /* interrupted */
                ops_handle_free(ws, h);
        shed_repay(ws);
}

void ops_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
        struct fs_workspace *ws = req_ws(req);
        struct handle *h = fi_handle(fi);
        (void)ino;
        /*
         * No journal flush here: a file's pending entries are written within
         * a window anyway, and holding them past the close is what lets a
         * file made, written, closed and removed within one be summed up.
         */
        ops_handle_put(ws, h);
        fuse_reply_err(req, 0);
}
