/* SPDX-License-Identifier: MIT */
/*
 * ops-data.c: FUSE handlers for file data and attributes: open, create,
 * read, write, flush, fsync, release, setattr, fallocate, lseek.
 *
 * Reads are served from a host fd (the upper file, the inflated blob or the
 * mirror file) with splice; a lower file opened for reading is never copied
 * up. Writes reserve quota for the bytes that extend the file, under the
 * file's lock, before they reach the disk: past the cap a write is cut
 * short or fails with ENOSPC, and what was written stays intact.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ops.h"
#include "lib/util.h"

/* An open file's handle joins ws->handles, which a checkpoint moves. */
static void handle_track(struct fs_workspace *ws, struct handle *h)
{
        pthread_mutex_lock(&ws->handles_lock);
        if (!h->tracked) {
                h->hprev = NULL;
                h->hnext = ws->handles;
                if (ws->handles)
                        ws->handles->hprev = h;
                ws->handles = h;
                h->tracked = true;
        }
        pthread_mutex_unlock(&ws->handles_lock);
}

static void handle_untrack(struct fs_workspace *ws, struct handle *h)
{
        if (!h->tracked)
                return;
        pthread_mutex_lock(&ws->handles_lock);
        if (h->hprev)
                h->hprev->hnext = h->hnext;
        else
                ws->handles = h->hnext;
        if (h->hnext)
                h->hnext->hprev = h->hprev;
        h->tracked = false;
        pthread_mutex_unlock(&ws->handles_lock);
}

static void handle_free(struct fs_workspace *ws, struct handle *h)
{
        if (!h)
                return;
        handle_untrack(ws, h);
        if (h->node && h->fd >= 0) {
                /* unlinked: itable_lock is enough to read it (core.h), and no
                 * handler lock is held here (a RELEASE beside a link, TSan). */
                bool unlinked;
                pthread_mutex_lock(&ws->itable_lock);
                unlinked = h->node->unlinked;
                pthread_mutex_unlock(&ws->itable_lock);
                if (unlinked) { /* maybe the file's last fd: reap.c */
                        reap_close(ws, h->fd);
                        h->fd = -1;
                }
        }
        safe_close(h->fd);
        safe_close(h->lower_fd);
        safe_close(h->stale_fd);
        free(h->buf);
        lower_entry_clear(&h->lower_entry);
        if (h->node) {
                unsigned refs;
                bool unlinked;
                pthread_mutex_lock(&ws->itable_lock);
                refs = h->node->refs;
                unlinked = h->node->unlinked;
                pthread_mutex_unlock(&ws->itable_lock);
                /* The last close of a removed file gives its space back, as on a disk. */
                if (refs == 1 && unlinked)
                        quota_reclaim(ws, h->node);
                node_unref(ws, h->node);
        }
        free(h);
}

/* Before the first write through a handle: copy the data of a metacopy up. */
static int fill_before_write(struct fs_workspace *ws, struct node *n)
{
        int r = 0;
        if (!n->metacopy)
                return 0;
        pthread_rwlock_wrlock(&ws->ns_lock);
        if (n->metacopy)
                r = copyup(ws, n, COPYUP_DATA);
        pthread_rwlock_unlock(&ws->ns_lock);
        return r;
}

/*
 * A read may still be inside fuse_reply_buf() (on its buffer) when the
 * kernel, having received the reply, already sends RELEASE: the last
 * reference frees the handle.
 */
static void handle_put(struct fs_workspace *ws, struct handle *h)
{
        /* (never NULL; said so that GCC's -Wstringop-overflow, which sees
         * handle_free()'s check through the inlining, does not warn) */
        if (!h)
                return;
        if (atomic_fetch_sub(&h->refs, 1) == 1)
                handle_free(ws, h);
}

static int truncate_upper_fd(struct fs_workspace *ws, struct node *n, int fd, uint64_t size)
{
        uint64_t before, grant = 0;
        struct stat st;
        int r = 0;

        pthread_mutex_lock(&n->lock);
        if (fstat(fd, &st) < 0) {
                r = negative_errno();
                goto out;
        }
        /* Up: the new size, no block (the store allocates none for it). */
        before = quota_cost(&st);
        if (size > before) {
                r = quota_charge_bytes(ws, size - before);
                if (r < 0)
                        goto out;
                grant = size - before;
        }
        if (ftruncate(fd, (off_t)size) < 0) {
                r = negative_errno();
                quota_refund_bytes(ws, grant);
                goto out;
        }
        quota_settle_fd(ws, fd, grant, before);
out:
        pthread_mutex_unlock(&n->lock);
        return r;
}

/*
 * The kernel caches the mode it last saw, and neither an OPEN's nor a
 * WRITE's reply carries one: have it ask again. Attributes only (offset
 * -1), which takes no inode lock in the kernel, so it is safe while the
 * request that dropped the bits is still being served.
 */
static void kill_notify(struct fs_workspace *ws, struct node *n)
{
        (void)fuse_lowlevel_notify_inval_inode(ws->se, node_ino(ws, n), -1, 0);
}

/*
 * FUSE_HANDLE_KILLPRIV_V2: the kernel asked (a truncate or chown by a
 * writer without CAP_FSETID, an O_TRUNC open) that set-uid and set-gid be
 * dropped, which it no longer does itself. ns_lock held exclusively.
 */
static int kill_suidgid(struct fs_workspace *ws, fuse_req_t req, struct node *n)
{
        mode_t m;
        int r;

        if (S_ISDIR(n->type) || S_ISLNK(n->type) || !n->upper)
                return 0;
        r = upper_node_pin(n);
        if (r < 0)
                return r;
        if (n->hfd < 0)
                return -EIO;
        r = attr_kill_suidgid(ws, n, n->hfd, &m);
        if (r <= 0)
                return r;
        kill_notify(ws, n);
        return ops_journal(ws, req, JOURNAL_CHMOD, n, NULL,
                           &(struct journal_entry){.mode = m, .uid = -1, .gid = -1});
}

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
                        r = truncate_upper_fd(ws, n, h->fd, 0);
                        if (r == 0)
                                r = ops_journal(ws, req, JOURNAL_TRUNCATE, n, NULL, NULL);
                        if (r == 0 && fs_loop_kill_suidgid())
                                r = kill_suidgid(ws, req, n);
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
                handle_track(ws, h); /* a checkpoint may move it (layers-online.c) */
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
                handle_free(ws, h);
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
        int r = do_open(req, ws, ino_node(ws, ino), fi, &h);

        if (r < 0)
                fuse_reply_err(req, -r);
        else if (fuse_reply_open(req, fi) == -ENOENT) /* interrupted */
                handle_free(ws, h);
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
                        handle_free(ws, h);
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
        int r = do_create(req, ws, ino_node(ws, parent), name, mode, fi, &e, &h);

        if (r < 0) {
                fuse_reply_err(req, -r);
                return;
        }
        if (fuse_reply_create(req, &e, fi) == -ENOENT) /* interrupted */
                handle_free(ws, h);
        shed_repay(ws);
}

/* What a read replies: bytes of memory (control files, small blobs) or a
 * splice from an fd. Both stay valid while the read holds its reference. */
struct read_reply {
        bool from_mem;
        const char *mem;
        size_t len;
        struct fuse_bufvec buf;
};

static int do_read(struct fs_workspace *ws, struct handle *h, size_t size, off_t off,
                   struct read_reply *ret)
{
        const char *mem;
        size_t len;
        int fd;

        if (!h->is_upper && h->node->kind == NODE_COW && h->node->upper && !h->node->metacopy) {
                /* Opened on the lower data, but the file has been written since
                 * (through another handle): read what it holds now, as ext4 would. */
                int ufd = -1, r = 0;
                bool move;
                pthread_rwlock_rdlock(&ws->ns_lock);
                pthread_mutex_lock(&h->node->lock);
                /* Decided again under the locks: the peek above may have seen a
                 * copy-up half done (upper set, metacopy not yet), or another
                 * read may have moved the handle meanwhile. */
                move = !h->is_upper && h->node->upper && !h->node->metacopy;
                if (move)
                        r = upper_open(h->node, O_RDONLY | O_NONBLOCK, &ufd);
                if (r == 0 && ufd >= 0 && h->stale_fd >= 0 && h->fd >= 0) {
                        /* Again, after a checkpoint froze the file it was switched to
                         * (layers-online.c): the same number, now on the new file. */
                        if (dup3(ufd, h->fd, O_CLOEXEC) < 0)
                                r = negative_errno();
                        ufd = safe_close(ufd);
                }
                if (r == 0 && ufd >= 0) {
                        /* Concurrent reads on this handle may still splice from the
                         * old fd or reply from buf: both stay until the handle is
                         * freed (this happens once per handle; later switches, after
                         * checkpoints, reuse the descriptor: above). */
                        h->stale_fd = h->fd;
                        h->fd = ufd;
                }
                if (move && r == 0) {
                        h->is_upper = true;
                        h->lazy_lower = false;
                        handle_track(ws, h); /* a later checkpoint re-marks it */
                }
                pthread_mutex_unlock(&h->node->lock);
                pthread_rwlock_unlock(&ws->ns_lock);
        }
        if (h->lazy_lower) {
                struct node *n = h->node;
                int r = 0;
                pthread_rwlock_rdlock(&ws->ns_lock);
                pthread_mutex_lock(&n->lock);
                if (h->lazy_lower) {
                        /* Small blobs are served from memory: no cache file to write. */
                        r = lower_read_small(n->layer->lower, &h->lower_entry, FS_SMALL_BLOB,
                                             &h->buf, &h->len);
                        if (r == -EFBIG || r == -EOPNOTSUPP)
                                r = lower_open_data(n->layer->lower, &h->lower_entry, &h->fd);
                        h->lazy_lower = r < 0;
                }
                pthread_mutex_unlock(&n->lock);
                pthread_rwlock_unlock(&ws->ns_lock);
                if (r < 0)
                        return r;
        }
        /* A consistent view of what this read serves from; it stays valid while
         * the read holds its reference on h (see above). */
        pthread_mutex_lock(&h->node->lock);
        fd = h->fd;
        mem = h->buf;
        len = h->len;
        pthread_mutex_unlock(&h->node->lock);
        if (fd < 0) { /* control files and small blobs: from memory */
                size_t start = MIN((size_t)off, len);
                ret->from_mem = true;
                ret->mem = mem ? mem + start : NULL;
                ret->len = MIN(size, len - start);
                return 0;
        }
        ret->buf = FUSE_BUFVEC_INIT(size);
        ret->buf.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
        ret->buf.buf[0].fd = fd;
        ret->buf.buf[0].pos = off;
        if (h->writable && h->node->metacopy) {
                /* Opened for writing but not written yet: the data is still the lower's. */
                int r = 0;
                pthread_rwlock_rdlock(&ws->ns_lock);
                pthread_mutex_lock(&h->node->lock);
                if (h->node->metacopy && h->lower_fd < 0)
                        r = lower_open_data(h->node->layer->lower, &h->node->lower, &h->lower_fd);
                if (h->node->metacopy && h->lower_fd >= 0)
                        ret->buf.buf[0].fd = h->lower_fd;
                pthread_mutex_unlock(&h->node->lock);
                pthread_rwlock_unlock(&ws->ns_lock);
                if (r < 0)
                        return r;
        }
        return 0;
}

void ops_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
        struct fs_workspace *ws = req_ws(req);
        struct handle *h = fi_handle(fi);
        struct read_reply rr = {0};
        int r;

        (void)ino;
        atomic_fetch_add(&h->refs, 1);
        r = do_read(ws, h, size, off, &rr);
        if (r < 0)
                fuse_reply_err(req, -r);
        else if (rr.from_mem)
                fuse_reply_buf(req, rr.mem, rr.len);
        else
                fuse_reply_data(req, &rr.buf, FUSE_BUF_SPLICE_MOVE);
        handle_put(ws, h);
}

/* The bytes written, or a negative errno. */
static ssize_t do_write(fuse_req_t req, struct handle *h, struct fuse_bufvec *bufv, off_t off)
{
        struct fs_workspace *ws = req_ws(req);
        struct node *n = h->node;
        size_t len = fuse_buf_size(bufv);
        uint64_t before, want, grant = 0;
        struct stat st;
        ssize_t res = 0;
        mode_t killed_mode = 0;
        bool killed = false;
        int r;

        if (!h->writable)
                return n->kind == NODE_COW ? -EBADF : -EROFS;
        if (off < 0)
                return -EINVAL;
        /* The host's maximum file size, as a local filesystem would cut the write. */
        if ((uint64_t)off >= ws->max_file_size)
                return -EFBIG;
        if (len > ws->max_file_size - (uint64_t)off)
                len = (size_t)(ws->max_file_size - (uint64_t)off);
        r = fill_before_write(ws, n);
        if (r < 0)
                return r;
        pthread_rwlock_rdlock(&ws->write_gate);
        if (h->write_error) {
                r = h->write_error;
                pthread_rwlock_unlock(&ws->write_gate);
                return r;
        }
        pthread_mutex_lock(&n->lock);
        if (fstat(h->fd, &st) < 0) {
                r = -errno;
                goto out;
        }
        /* Before the data, as the kernel's file_remove_privs() does. */
        if (fs_loop_kill_suidgid() && (st.st_mode & S_ISVTX)) {
                r = attr_kill_suidgid(ws, n, h->fd, &killed_mode);
                if (r < 0)
                        goto out;
                killed = r > 0;
                if (killed)
                        kill_notify(ws, n);
        }
        before = quota_cost(&st);
        want = quota_write_bound(h->fd, &st, (uint64_t)off, len, false);
        if (want > 0) {
                grant = quota_charge_bytes_upto(ws, want);
                if (grant < want) {
                        /* Cut the write at the cap, like a full disk would. */
                        uint64_t fit = quota_write_fit(h->fd, &st, (uint64_t)off, len, grant);
                        uint64_t need = quota_write_bound(h->fd, &st, (uint64_t)off, fit, false);
                        quota_refund_bytes(ws, grant - need);
                        grant = need;
                        if (fit == 0) {
                                r = -ENOSPC;
                                goto out;
                        }
                        len = (size_t)fit;
                }
        }
        {
                struct fuse_bufvec out = FUSE_BUFVEC_INIT(len);
                out.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
                out.buf[0].fd = h->fd;
                out.buf[0].pos = off;
                res = fuse_buf_copy(&out, bufv, 0);
        }
        if (res < 0) {
                quota_refund_bytes(ws, grant);
                r = (int)res;
                goto out;
        }
        quota_settle_fd(ws, h->fd, grant, before);
        r = 0;
out:
        pthread_mutex_unlock(&n->lock);
        pthread_rwlock_unlock(&ws->write_gate);
        if (killed) {
                int k;
                pthread_rwlock_rdlock(&ws->ns_lock);
                k = ops_journal(ws, req, JOURNAL_CHMOD, n, NULL,
                                &(struct journal_entry){.mode = killed_mode, .uid = -1, .gid = -1});
                pthread_rwlock_unlock(&ws->ns_lock);
                if (r == 0 && k < 0)
                        r = k;
        }
        if (r == 0) {
                pthread_rwlock_rdlock(&ws->ns_lock);
                r = ops_journal(ws, req, JOURNAL_WRITE, n, NULL,
                                &(struct journal_entry){.offset = (uint64_t)off,
                                                        .length = (uint64_t)res,
                                                        .uid = -1,
                                                        .gid = -1});
                pthread_rwlock_unlock(&ws->ns_lock);
        }
        return r < 0 ? r : res;
}

void ops_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *bufv, off_t off,
                   struct fuse_file_info *fi)
{
        ssize_t r = do_write(req, fi_handle(fi), bufv, off);

        (void)ino;
        if (r < 0)
                fuse_reply_err(req, (int)-r);
        else
                fuse_reply_write(req, (size_t)r);
}

void ops_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
        (void)ino;
        (void)fi;
        fuse_reply_err(req, 0);
}

void ops_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi)
{
        struct fs_workspace *ws = req_ws(req);
        struct handle *h = fi_handle(fi);
        struct node *p;
        int r = 0;
        (void)ino;
        pthread_rwlock_rdlock(&ws->write_gate);
        if (h->fd >= 0 && h->writable && (datasync ? fdatasync(h->fd) : fsync(h->fd)) < 0)
                r = errno;
        pthread_rwlock_unlock(&ws->write_gate);
        if (r == 0 && h->writable) {
                /* The file's record (its st_ino) is in its dir's sidecar: sync that too. */
                pthread_rwlock_rdlock(&ws->ns_lock);
                p = h->node->unlinked ? NULL : h->node->parent;
                if (p && p->kind == NODE_COW)
                        r = -upper_meta_sync(p);
                pthread_rwlock_unlock(&ws->ns_lock);
        }
        if (r == 0 && ws->journal && journal_flush(ws->journal) < 0)
                r = EIO;
        fuse_reply_err(req, r);
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
        handle_put(ws, h);
        fuse_reply_err(req, 0);
}

/* Apply the metadata parts of a setattr to n's upper entry. ns_lock held exclusively. */
static int setattr_meta(struct fs_workspace *ws, fuse_req_t req, struct node *n,
                        const struct stat *attr, int to_set)
{
        int fd, r;

        assert_wrlocked(&ws->ns_lock);
        /*
         * Through the node's own fd, never by opening the file: a socket can't be
         * opened, a FIFO would block, and the name may be gone (unlinked while
         * open, a hard link's other name removed).
         */
        if (!S_ISDIR(n->type)) {
                r = upper_node_pin(n);
                if (r < 0)
                        return r;
        }
        fd = S_ISDIR(n->type) ? n->ufd : n->hfd;
        if (fd < 0)
                return -EIO;
        if (to_set & FUSE_SET_ATTR_MODE) {
                mode_t m = attr->st_mode & 07777;
                dev_t rdev = 0;
                if (S_ISLNK(n->type))
                        return -EOPNOTSUPP; /* as ext4 (the kernel refuses it first) */
                if (S_ISCHR(n->type) || S_ISBLK(n->type)) {
                        r = attr_rdev(ws, fd, &rdev);
                        if (r < 0)
                                return r;
                }
                r = attr_set_mode(ws, n->type, fd, m, rdev, &n->xbits);
                if (r < 0)
                        return r;
                r = ops_journal(ws, req, JOURNAL_CHMOD, n, NULL,
                                &(struct journal_entry){.mode = m, .uid = -1, .gid = -1});
                if (r < 0)
                        return r;
        }
        if (to_set & (FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID)) {
                uid_t u = to_set & FUSE_SET_ATTR_UID ? attr->st_uid : (uid_t)-1;
                gid_t g = to_set & FUSE_SET_ATTR_GID ? attr->st_gid : (gid_t)-1;
                unsigned was = owner_load(ws, n, fd), now = was;
                uid_t su = u == (uid_t)-1 ? u : fs_uid_store(ws, u);
                gid_t sg = g == (gid_t)-1 ? g : fs_gid_store(ws, g);
                unsigned asked = owner_flags_for(ws, su, u, sg, g);

                /* The kernel checked the change against the owner shown; store it as kept. */
                if (fchownat(fd, "", su, sg, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
                        return negative_errno();
                if (u != (uid_t)-1)
                        now = (now & ~OWNER_ROOT_UID) | (asked & OWNER_ROOT_UID);
                if (g != (gid_t)-1)
                        now = (now & ~OWNER_ROOT_GID) | (asked & OWNER_ROOT_GID);
                if (now != was) {
                        r = owner_mark(ws, n, fd, now);
                        if (r < 0)
                                return r;
                }
                r = ops_journal(ws, req, JOURNAL_CHOWN, n, NULL,
                                &(struct journal_entry){
                                        .uid = to_set & FUSE_SET_ATTR_UID ? (int64_t)u : -1,
                                        .gid = to_set & FUSE_SET_ATTR_GID ? (int64_t)g : -1});
                if (r < 0)
                        return r;
        }
        if (to_set & (FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME)) {
                struct timespec ts[2] = {{.tv_nsec = UTIME_OMIT}, {.tv_nsec = UTIME_OMIT}};
                if (to_set & FUSE_SET_ATTR_ATIME_NOW)
                        ts[0].tv_nsec = UTIME_NOW;
                else if (to_set & FUSE_SET_ATTR_ATIME)
                        ts[0] = attr->st_atim;
                if (to_set & FUSE_SET_ATTR_MTIME_NOW)
                        ts[1].tv_nsec = UTIME_NOW;
                else if (to_set & FUSE_SET_ATTR_MTIME)
                        ts[1] = attr->st_mtim;
                if (utimensat(fd, "", ts, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
                        return negative_errno();
                r = ops_journal(ws, req, JOURNAL_UTIMENS, n, NULL, NULL);
                if (r < 0)
                        return r;
        } else if ((to_set & FUSE_SET_ATTR_CTIME) &&
                   !(to_set & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID))) {
                /* Only a ctime bump (e.g. chown -1 -1): a no-op chown does exactly that. */
                if (fchownat(fd, "", (uid_t)-1, (gid_t)-1, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
                        return negative_errno();
        }
        return 0;
}

void ops_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                 struct fuse_file_info *fi)
{
        struct fs_workspace *ws = req_ws(req);
        struct node *n = ino_node(ws, ino);
        struct handle *h = fi_handle(fi);
        int meta = to_set & ~FUSE_SET_ATTR_SIZE;
        struct stat st;
        int r = 0;

        if (n->kind != NODE_COW) {
                fuse_reply_err(req, EROFS);
                return;
        }
        pthread_rwlock_wrlock(&ws->ns_lock);
        if (to_set & FUSE_SET_ATTR_SIZE) {
                _cleanup_close_ int fd = -1;
                if (!S_ISREG(n->type)) {
                        r = S_ISDIR(n->type) ? -EISDIR : -EINVAL;
                        goto out;
                }
                /* Past what the host can hold: EFBIG, as the host says, before any quota. */
                if ((uint64_t)attr->st_size > ws->max_file_size) {
                        r = -EFBIG;
                        goto out;
                }
                r = copyup(ws, n, attr->st_size == 0 ? COPYUP_EMPTY : COPYUP_DATA);
                if (r < 0)
                        goto out;
                if (!(h && h->writable)) {
                        r = upper_open(n, O_WRONLY | O_NONBLOCK, &fd);
                        if (r < 0)
                                goto out;
                }
                r = truncate_upper_fd(ws, n, h && h->writable ? h->fd : fd,
                                      (uint64_t)attr->st_size);
                if (r < 0)
                        goto out;
                r = ops_journal(ws, req, JOURNAL_TRUNCATE, n, NULL,
                                &(struct journal_entry){
                                        .offset = (uint64_t)attr->st_size, .uid = -1, .gid = -1});
                if (r < 0)
                        goto out;
        }
        /*
         * Nothing to set at all is a ctime-only change (chown(-1, -1)): without
         * the writeback cache the kernel sends no FUSE_SET_ATTR_CTIME for it.
         */
        if (to_set == 0)
                meta = FUSE_SET_ATTR_CTIME;
        if (meta & (FUSE_SET_ATTR_MODE | FUSE_SET_ATTR_UID | FUSE_SET_ATTR_GID |
                    FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_CTIME)) {
                r = copyup(ws, n, COPYUP_META);
                if (r < 0)
                        goto out;
                r = setattr_meta(ws, req, n, attr, meta);
        }
        /*
         * FATTR_KILL_SUIDGID reaches us as FUSE_SET_ATTR_KILL_SUID (the same
         * bit): a truncate or chown. A SETATTR of nothing is, with
         * KILLPRIV_V2, a chown(-1, -1) or the kernel's file_remove_privs()
         * before an unprivileged write, each of which drops the bits on ext4;
         * the kernel no longer turns them into a mode.
         */
        if (r == 0 && ws->killpriv_v2 && (to_set & FUSE_SET_ATTR_KILL_SUID || to_set == 0) &&
            !(to_set & FUSE_SET_ATTR_MODE))
                r = kill_suidgid(ws, req, n);
out:
        if (r == 0)
                r = ops_getattr(ws, n, h, &st);
        pthread_rwlock_unlock(&ws->ns_lock);
        if (r < 0)
                fuse_reply_err(req, -r);
        else
                fuse_reply_attr(req, &st, ops_timeout(n));
}

/*
 * fallocate: allocating (with or without KEEP_SIZE), zeroing a range and
 * punching a hole, each charged as the host allocates (quota.c): the most
 * the range can take first, plus a block for the extent the store may
 * split, then what it took. A range that does not fit is refused with
 * ENOSPC before anything is allocated. Inserting or collapsing a range
 * moves a file's blocks around in ways no bound here covers: EOPNOTSUPP.
 */
#define FALLOC_MODES (FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE | FALLOC_FL_ZERO_RANGE)
#define FALLOC_SLACK 4096

static int do_fallocate(fuse_req_t req, struct handle *h, int mode, off_t offset, off_t length)
{
        struct fs_workspace *ws = req_ws(req);
        struct node *n = h->node;
        bool punch = mode & FALLOC_FL_PUNCH_HOLE, keep = mode & FALLOC_FL_KEEP_SIZE;
        uint64_t grant = 0, before;
        struct stat st;
        int r = 0;

        if (!h->writable)
                return n->kind == NODE_COW ? -EBADF : -EROFS;
        if ((mode & ~FALLOC_MODES) || (punch && (mode & FALLOC_FL_ZERO_RANGE)))
                return -EOPNOTSUPP;
        if (punch && !keep)
                return -EINVAL; /* as fallocate(2) */
        if (offset < 0 || length <= 0)
                return -EINVAL;
        if ((uint64_t)offset + (uint64_t)length > ws->max_file_size)
                return -EFBIG;
        r = fill_before_write(ws, n);
        if (r < 0)
                return r;
        pthread_rwlock_rdlock(&ws->write_gate);
        if (h->write_error) {
                r = h->write_error;
                pthread_rwlock_unlock(&ws->write_gate);
                return r;
        }
        pthread_mutex_lock(&n->lock);
        if (fstat(h->fd, &st) < 0) {
                r = -errno;
                goto out;
        }
        before = quota_cost(&st);
        grant = FALLOC_SLACK;
        if (!punch)
                grant += quota_write_bound(h->fd, &st, (uint64_t)offset, (uint64_t)length, keep);
        if (quota_charge_bytes(ws, grant) < 0) {
                grant = 0;
                r = -ENOSPC;
                goto out;
        }
        if (fallocate(h->fd, mode, offset, length) < 0) {
                r = -errno;
                quota_refund_bytes(ws, grant);
                goto out;
        }
        quota_settle_fd(ws, h->fd, grant, before);
out:
        pthread_mutex_unlock(&n->lock);
        pthread_rwlock_unlock(&ws->write_gate);
        /* A hole or zeroes change what the file reads: journaled as a write. */
        if (r == 0 && (punch || (mode & FALLOC_FL_ZERO_RANGE))) {
                pthread_rwlock_rdlock(&ws->ns_lock);
                r = ops_journal(ws, req, JOURNAL_WRITE, n, NULL,
                                &(struct journal_entry){.offset = (uint64_t)offset,
                                                        .length = (uint64_t)length,
                                                        .uid = -1,
                                                        .gid = -1});
                pthread_rwlock_unlock(&ws->ns_lock);
        }
        return r;
}

void ops_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
                   struct fuse_file_info *fi)
{
        (void)ino;
        fuse_reply_err(req, -do_fallocate(req, fi_handle(fi), mode, offset, length));
}

/* The offset found, or a negative errno. */
static off_t do_lseek(fuse_req_t req, struct handle *h, off_t off, int whence)
{
        struct fs_workspace *ws = req_ws(req);
        uint64_t size = h->len;
        off_t r;

        if (h->fd >= 0) {
                r = lseek(h->fd, off, whence);
                return r < 0 ? -errno : r;
        }
        /* Data in memory or not opened yet: no holes, so answer from the size. */
        if (h->lazy_lower) {
                pthread_rwlock_rdlock(&ws->ns_lock);
                pthread_mutex_lock(&h->node->lock);
                if (lower_size(h->node->layer->lower, &h->node->lower) == 0)
                        size = h->node->lower.size;
                pthread_mutex_unlock(&h->node->lock);
                pthread_rwlock_unlock(&ws->ns_lock);
        }
        if ((whence != SEEK_DATA && whence != SEEK_HOLE) || off < 0)
                return -EINVAL;
        if ((uint64_t)off >= size)
                return -ENXIO;
        return whence == SEEK_DATA ? off : (off_t)size;
}

void ops_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi)
{
        off_t r = do_lseek(req, fi_handle(fi), off, whence);

        (void)ino;
        if (r < 0)
                fuse_reply_err(req, (int)-r);
        else
                fuse_reply_lseek(req, r);
}
