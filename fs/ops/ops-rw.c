/* SPDX-License-Identifier: MIT */
/*
 * ops-rw.c: FUSE handlers for file data: read, write, flush,
 * fsync, fallocate, lseek.
 *
 * Reads are served from a host fd (the upper file, the inflated blob or the
 * mirror file) with splice. Writes reserve quota for the bytes that extend
 * the file, under the file's lock, before they reach the disk: past the cap
 * a write is cut short or fails with ENOSPC, and what was written stays
 * intact.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ops.h"
#include "lib/util.h"

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
                        ops_handle_track(ws, h); /* a later checkpoint re-marks it */
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
        struct handle *h = NULL;
        struct read_reply rr = {0};
        int r = ops_request_handle(req, req_node(req, ino), fi, false, &h);

        if (r < 0) {
                fuse_reply_err(req, -r);
                return;
        }
        r = do_read(ws, h, size, off, &rr);
        if (r < 0)
                fuse_reply_err(req, -r);
        else if (rr.from_mem)
                fuse_reply_buf(req, rr.mem, rr.len);
        else
                fuse_reply_data(req, &rr.buf, FUSE_BUF_SPLICE_MOVE);
        ops_handle_put(ws, h);
}

/*
 * What changes a file's data starts with: its data copied up (a metacopy's),
 * the write gate (a checkpoint waits for the writes in flight), the
 * handle's error from a checkpoint that could not move it, the file's lock
 * (quota exactness) and its size and blocks now. On 0 the gate and the lock
 * are held, for write_end(); on an error neither is.
 */
static int write_begin(struct fs_workspace *ws, struct handle *h, struct stat *st)
{
        int r = ops_fill_before_write(ws, h->node);

        if (r < 0)
                return r;
        pthread_rwlock_rdlock(&ws->write_gate);
        r = h->write_error;
        /* A handle made for this request, on an upper file a checkpoint has
         * frozen since: the caller makes another, on the new layer's copy. */
        if (r == 0 && h->per_request && h->checkpoints != atomic_load(&ws->checkpoints))
                r = -ERESTART;
        if (r == 0) {
                pthread_mutex_lock(&h->node->lock);
                if (fstat(h->fd, st) == 0)
                        return 0;
                r = negative_errno();
                pthread_mutex_unlock(&h->node->lock);
        }
        pthread_rwlock_unlock(&ws->write_gate);
        return r;
}

static void write_end(struct fs_workspace *ws, struct handle *h)
{
        pthread_mutex_unlock(&h->node->lock);
        pthread_rwlock_unlock(&ws->write_gate);
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
        r = write_begin(ws, h, &st);
        if (r < 0)
                return r;
        /* Before the data, as the kernel's file_remove_privs() does. */
        if (fs_loop_kill_suidgid() && (st.st_mode & S_ISVTX)) {
                r = attr_kill_suidgid(ws, n, h->fd, &killed_mode);
                if (r < 0)
                        goto out;
                killed = r > 0;
                if (killed)
                        ops_kill_notify(ws, n);
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
        write_end(ws, h);
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

/*
 * A write, or a fallocate, through fi's handle or one made for it: made
 * again if a checkpoint froze the file between the making and the write
 * gate (-ERESTART from write_begin; a checkpoint per attempt is already
 * far more than any workspace makes).
 */
#define WRITE_ATTEMPTS 16

void ops_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *bufv, off_t off,
                   struct fuse_file_info *fi)
{
        struct fs_workspace *ws = req_ws(req);
        ssize_t r = -ERESTART;

        for (unsigned i = 0; r == -ERESTART && i < WRITE_ATTEMPTS; i++) {
                struct handle *h = NULL;

                r = ops_request_handle(req, req_node(req, ino), fi, true, &h);
                if (r == 0) {
                        r = do_write(req, h, bufv, off);
                        ops_handle_put(ws, h);
                }
        }
        if (r == -ERESTART)
                r = -EAGAIN;
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
        struct handle *h = NULL;
        struct node *p;
        bool wrote;
        int r = -ops_request_handle(req, req_node(req, ino), fi, false, &h);

        if (r != 0) {
                fuse_reply_err(req, r);
                return;
        }
        /* Without an open, any upper file may have been written through the
         * file being synced: the data of a copied-up file, on any fd. */
        wrote = h->writable || (h->per_request && h->is_upper);
        pthread_rwlock_rdlock(&ws->write_gate);
        if (h->fd >= 0 && wrote && (datasync ? fdatasync(h->fd) : fsync(h->fd)) < 0)
                r = errno;
        pthread_rwlock_unlock(&ws->write_gate);
        if (r == 0 && wrote) {
                /* The file's record (its st_ino) is in its dir's sidecar: sync that too. */
                pthread_rwlock_rdlock(&ws->ns_lock);
                p = h->node->unlinked ? NULL : h->node->parent;
                if (p && p->kind == NODE_COW)
                        r = -upper_meta_sync(p);
                pthread_rwlock_unlock(&ws->ns_lock);
        }
        ops_handle_put(ws, h);
        if (r == 0 && ws->journal && journal_flush(ws->journal) < 0)
                r = EIO;
        fuse_reply_err(req, r);
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
        r = write_begin(ws, h, &st);
        if (r < 0)
                return r;
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
        write_end(ws, h);
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
        struct fs_workspace *ws = req_ws(req);
        int r = -ERESTART;

        for (unsigned i = 0; r == -ERESTART && i < WRITE_ATTEMPTS; i++) {
                struct handle *h = NULL;

                r = ops_request_handle(req, req_node(req, ino), fi, true, &h);
                if (r == 0) {
                        r = do_fallocate(req, h, mode, offset, length);
                        ops_handle_put(ws, h);
                }
        }
        fuse_reply_err(req, r == -ERESTART ? EAGAIN : -r);
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
        struct handle *h = NULL;
        off_t r = ops_request_handle(req, req_node(req, ino), fi, false, &h);

        if (r == 0) {
                r = do_lseek(req, h, off, whence);
                ops_handle_put(req_ws(req), h);
        }
        if (r < 0)
                fuse_reply_err(req, (int)-r);
        else
                fuse_reply_lseek(req, r);
}
