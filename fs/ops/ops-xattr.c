/* SPDX-License-Identifier: MIT */
/*
 * ops-xattr.c: extended attributes. Only the "user." namespace exists for
 * the agent: security.*, trusted.* and system.* read as absent and cannot be
 * set (a capability or ACL must never reach the host's upper files). A
 * git lower file has none, a frozen layer's has its own (frozen.c); setting
 * or removing one makes a metacopy, not a data copy.
 * Their names and values count in [limits] bytes, at most FS_XATTR_FILE_MAX
 * per file (fs-private.h).
 */
#include <fcntl.h>
#include <linux/limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "ops.h"
#include "lib/util.h"

static int xattr_fd(struct node *n)
{
        int fd = -1, r;
        if (S_ISDIR(n->type))
                return fcntl(n->ufd, F_DUPFD_CLOEXEC, 3);
        if (S_ISLNK(n->type)) {
                errno = EPERM;
                return -1;
        }
        if (S_ISSOCK(n->type)) {
                /* A socket can't be opened: its pinned O_PATH fd, which the
                 * f*xattr calls take through /proc/self/fd (xattr_* below). */
                r = upper_node_pin(n);
                if (r < 0) {
                        errno = -r;
                        return -1;
                }
                return fcntl(n->hfd, F_DUPFD_CLOEXEC, 3);
        }
        r = upper_open(n, O_RDONLY | O_NONBLOCK, &fd);
        if (r < 0) {
                errno = -r;
                return -1;
        }
        return fd;
}

/* The f*xattr calls, through /proc/self/fd/N: they then work on O_PATH fds too. */
static ssize_t xget(int fd, const char *name, void *buf, size_t size)
{
        char p[FS_FD_PATH_MAX];
        fs_fd_path(fd, p);
        return getxattr(p, name, buf, size);
}

static ssize_t xlist(int fd, char *buf, size_t size)
{
        char p[FS_FD_PATH_MAX];
        fs_fd_path(fd, p);
        return listxattr(p, buf, size);
}

static int xset(int fd, const char *name, const void *value, size_t size, int flags)
{
        char p[FS_FD_PATH_MAX];
        fs_fd_path(fd, p);
        return setxattr(p, name, value, size, flags);
}

static int xremove(int fd, const char *name)
{
        char p[FS_FD_PATH_MAX];
        fs_fd_path(fd, p);
        return removexattr(p, name);
}

/* Keep only user.* names in a listxattr buffer; returns the new length. */
static size_t filter_user(char *buf, size_t len)
{
        size_t out = 0;
        for (size_t i = 0; i < len;) {
                size_t l = strnlen(buf + i, len - i) + 1;
                if (startswith(buf + i, "user.")) {
                        memmove(buf + out, buf + i, l);
                        out += l;
                }
                i += l;
        }
        return out;
}

/* The value's size, or a negative errno; into buf when size is not 0. */
static ssize_t do_getxattr(struct fs_workspace *ws, struct node *n, const char *name, char *buf,
                           size_t size)
{
        ssize_t r;

        if (!startswith(name, "user.") || n->kind == NODE_SYNTH || n->kind == NODE_CTL)
                return -ENODATA;
        if (n->kind == NODE_MIRROR)
                return mirror_getxattr(n, name, buf, size);
        pthread_rwlock_rdlock(&ws->ns_lock);
        if (S_ISLNK(n->type) || (!n->upper && !(n->has_lower && n->lower.fz))) {
                r = -ENODATA;
        } else if (!n->upper) {
                r = frozen_getxattr(n, name, buf, size); /* frozen.c */
        } else {
                _cleanup_close_ int fd = xattr_fd(n);
                r = fd < 0 ? -1 : xget(fd, name, buf, size);
                if (r < 0)
                        r = negative_errno();
        }
        pthread_rwlock_unlock(&ws->ns_lock);
        return r;
}

/* The one reply of getxattr and listxattr: r bytes of buf, or its size alone when asked 0. */
static void xattr_reply(fuse_req_t req, ssize_t r, const char *buf, size_t size)
{
        if (r < 0)
                fuse_reply_err(req, (int)-r);
        else if (size == 0)
                fuse_reply_xattr(req, (size_t)r);
        else
                fuse_reply_buf(req, buf, (size_t)r);
}

void ops_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
        struct fs_workspace *ws = req_ws(req);
        _cleanup_free_ char *buf = size ? malloc(size) : NULL;
        ssize_t r = size && !buf ? -ENOMEM : do_getxattr(ws, req_node(req, ino), name, buf, size);

        xattr_reply(req, r, buf, size);
}

/* The user.* names' length, or a negative errno; the names into buf (XATTR_LIST_MAX). */
static ssize_t do_listxattr(struct fs_workspace *ws, struct node *n, char *buf, size_t size)
{
        ssize_t k = 0;
        size_t len;

        if (n->kind == NODE_SYNTH || n->kind == NODE_CTL)
                return 0;
        /* List everything, then filter: the caller's size applies to the filtered list. */
        if (n->kind == NODE_MIRROR) {
                k = mirror_listxattr(n, buf, XATTR_LIST_MAX);
        } else {
                pthread_rwlock_rdlock(&ws->ns_lock);
                if (n->upper && !S_ISLNK(n->type)) {
                        _cleanup_close_ int fd = xattr_fd(n);
                        k = fd < 0 ? -1 : xlist(fd, buf, XATTR_LIST_MAX);
                        if (k < 0)
                                k = negative_errno();
                } else if (n->has_lower && n->lower.fz && !S_ISLNK(n->type)) {
                        k = frozen_listxattr(n, buf, XATTR_LIST_MAX);
                }
                pthread_rwlock_unlock(&ws->ns_lock);
        }
        if (k < 0)
                return k;
        len = filter_user(buf, (size_t)k);
        return size && len > size ? -ERANGE : (ssize_t)len;
}

void ops_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
        struct fs_workspace *ws = req_ws(req);
        _cleanup_free_ char *buf = malloc(XATTR_LIST_MAX);
        ssize_t r = buf ? do_listxattr(ws, req_node(req, ino), buf, size) : -ENOMEM;

        xattr_reply(req, r, buf, size);
}

/*
 * Set or remove one attribute, its cost charged to [limits] bytes first
 * (quota.c): the difference from the value it replaces, refunded if the
 * kernel refuses. ENOSPC past FS_XATTR_FILE_MAX on one inode, or past the
 * quota. ns_lock is held for writing, so nothing else changes fd's
 * attributes meanwhile.
 */
#define XATTR_BLOCK 4096

static int xattr_change_charged(struct fs_workspace *ws, int fd, const char *name,
                                const char *value, size_t size, int flags, bool remove)
{
        ssize_t had = xget(fd, name, NULL, 0);
        uint64_t old_cost = had >= 0 ? quota_xattr_cost(name, (size_t)had) : 0;
        uint64_t new_cost = remove ? 0 : quota_xattr_cost(name, size), charged = 0;
        struct stat st;
        int r;

        if (had < 0 && errno != ENODATA)
                return negative_errno();
        if (had < 0 && remove)
                return -ENODATA;
        if (!remove && new_cost > old_cost) {
                if (quota_xattrs_of(fd) - old_cost + new_cost > FS_XATTR_FILE_MAX)
                        return -ENOSPC;
                r = quota_charge_bytes(ws, new_cost - old_cost);
                if (r < 0)
                        return r;
                charged = new_cost - old_cost;
        }
        /* The store may give the attributes a block of their own (ext4),
         * which st_blocks shows: reserved too, then settled (quota.c). */
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!remove && quota_charge_bytes(ws, XATTR_BLOCK) < 0) {
                quota_refund_bytes(ws, charged);
                return -ENOSPC;
        }
        if ((remove ? xremove(fd, name) : xset(fd, name, value, size, flags)) < 0) {
                r = negative_errno();
                quota_refund_bytes(ws, charged + (remove ? 0 : XATTR_BLOCK));
                return r;
        }
        quota_settle_fd(ws, fd, remove ? 0 : XATTR_BLOCK, quota_cost(&st));
        if (old_cost > new_cost)
                quota_refund_bytes(ws, old_cost - new_cost);
        return 0;
}

static int do_change_xattr(fuse_req_t req, struct fs_workspace *ws, struct node *n,
                           const char *name, const char *value, size_t size, int flags, bool remove)
{
        int r;

        if (n->kind != NODE_COW)
                return -EROFS;
        if (!startswith(name, "user."))
                return -EOPNOTSUPP;
        if (S_ISLNK(n->type))
                return -EPERM; /* as ext4: no user.* on symlinks */
        pthread_rwlock_wrlock(&ws->ns_lock);
        if (remove && !n->upper && !(n->has_lower && n->lower.fz)) {
                r = -ENODATA;
                goto out;
        }
        if (remove && !n->upper) {
                /* A frozen file's attribute: copy up only if it has it (ENODATA as ext4). */
                r = (int)frozen_getxattr(n, name, NULL, 0);
                if (r < 0)
                        goto out;
        }
        r = copyup(ws, n, COPYUP_META);
        if (r == 0) {
                _cleanup_close_ int fd = xattr_fd(n);
                if (fd < 0)
                        r = negative_errno();
                else
                        r = xattr_change_charged(ws, fd, name, value, size, flags, remove);
        }
        if (r == 0)
                r = ops_journal(ws, req, remove ? JOURNAL_REMOVEXATTR : JOURNAL_SETXATTR, n, NULL,
                                &(struct journal_entry){.name = name, .uid = -1, .gid = -1});
out:
        pthread_rwlock_unlock(&ws->ns_lock);
        return r;
}

static void change_xattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
                         size_t size, int flags, bool remove)
{
        struct fs_workspace *ws = req_ws(req);

        fuse_reply_err(req, -do_change_xattr(req, ws, req_node(req, ino), name, value, size, flags,
                                             remove));
}

void ops_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
                  int flags)
{
        change_xattr(req, ino, name, value, size, flags, false);
}

void ops_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
        change_xattr(req, ino, name, NULL, 0, 0, true);
}
