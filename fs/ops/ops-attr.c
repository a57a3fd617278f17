/* SPDX-License-Identifier: MIT */
/*
 * ops-attr.c: the SETATTR handler: mode, owner, times and size of a
 * node, copied up first, each change journalled.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ops.h"
#include "lib/util.h"

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
        struct node *n = req_node(req, ino);
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
                r = ops_truncate_upper_fd(ws, n, h && h->writable ? h->fd : fd,
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
                r = ops_kill_suidgid(ws, req, n);
out:
        if (r == 0)
                r = ops_getattr(ws, n, h, &st);
        pthread_rwlock_unlock(&ws->ns_lock);
        if (r < 0)
                fuse_reply_err(req, -r);
        else
                fuse_reply_attr(req, &st, ops_timeout(n));
}
