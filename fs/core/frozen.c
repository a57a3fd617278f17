/* SPDX-License-Identifier: MIT */
/*
 * frozen.c: entries of frozen layers as the agent sees them, and their
 * metadata carried into the writable layer by a copy-up
 * (docs/fs-design.md, "Lookups through the stack").
 *
 * A frozen entry was an upper entry once, so it is shown exactly as it was
 * then: the host inode's stat with attr.c's modes and owner.c's owners
 * applied, its user.* xattrs. A copy-up copies the host representation as
 * it is (owner, host mode, the trusted.cloister.* records, user.* xattrs,
 * times), so the copy shows the same; only ctime is the copy's own, as for
 * a copy-up from the git lower. Every access is through the entry's pinned
 * fd (/proc/self/fd/N), never by a name.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "core.h"
#include "lib/util.h"

int frozen_getattr(struct fs_workspace *ws, struct node *n, struct stat *st)
{
        struct frozen_entry *f = n->lower.fz;
        int r;

        if (fstatat(f->fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
                return negative_errno();
        attr_view(ws, n, f->fd, st);
        if (f->metacopy) {
                pthread_mutex_lock(&n->lock);
                r = lower_size(n->layer->lower, &n->lower);
                pthread_mutex_unlock(&n->lock);
                if (r < 0)
                        return r;
                st->st_size = (off_t)n->lower.size;
                st->st_blocks = (blkcnt_t)((n->lower.size + 511) / 512);
        }
        owner_show(ws, n, f->fd, st);
        st->st_ino = n->ino;
        st->st_nlink = lower_frozen_nlink(f, n->ino, st->st_nlink);
        if (n->unlinked && !S_ISDIR(n->type))
                st->st_nlink = 0; /* removed while open: its frozen name is hidden */
        return 0;
}

ssize_t frozen_getxattr(struct node *n, const char *name, void *buf, size_t size)
{
        char p[FS_FD_PATH_MAX];
        ssize_t k;

        fs_fd_path(n->lower.fz->fd, p);
        k = getxattr(p, name, buf, size);
        return k < 0 ? negative_errno() : k;
}

ssize_t frozen_listxattr(struct node *n, char *buf, size_t size)
{
        char p[FS_FD_PATH_MAX];
        ssize_t k;

        fs_fd_path(n->lower.fz->fd, p);
        k = listxattr(p, buf, size);
        return k < 0 ? negative_errno() : k;
}

/* Copy the xattrs that are ours or the agent's: user.*, trusted.cloister.*. */
static int copy_xattrs(struct fs_workspace *ws, const char *src, const char *dst,
                       uint64_t *ret_charged)
{
        char names[FS_XATTR_FILE_MAX + 1024];
        ssize_t len = listxattr(src, names, sizeof(names));
        int r;

        if (len < 0)
                return errno == ENOTSUP || errno == EPERM ? 0 : negative_errno();
        for (ssize_t i = 0; i < len;) {
                const char *name = names + i;
                bool user = startswith(name, "user.");
                _cleanup_free_ char *val = NULL;
                ssize_t v;

                i += (ssize_t)strnlen(name, (size_t)(len - i)) + 1;
                if (!user && !startswith(name, "trusted.cloister."))
                        continue;
                val = malloc(FS_XATTR_FILE_MAX);
                if (!val)
                        return -ENOMEM;
                v = getxattr(src, name, val, FS_XATTR_FILE_MAX);
                if (v < 0)
                        continue;
                if (user) {
                        r = quota_charge_bytes(ws, quota_xattr_cost(name, (size_t)v));
                        if (r < 0)
                                return r;
                        *ret_charged += quota_xattr_cost(name, (size_t)v);
                }
                if (setxattr(dst, name, val, (size_t)v, 0) < 0)
                        return negative_errno();
        }
        return 0;
}

int frozen_copy_meta(struct fs_workspace *ws, struct node *n, int dst, uint64_t *ret_charged)
{
        struct frozen_entry *f = n->lower.fz;
        char src[FS_FD_PATH_MAX], dp[FS_FD_PATH_MAX];
        struct stat st;
        int r;

        *ret_charged = 0;
        if (fstatat(f->fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
                return negative_errno();
        if (geteuid() == 0 &&
            fchownat(dst, "", st.st_uid, st.st_gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
                return negative_errno();
        fs_fd_path(f->fd, src);
        fs_fd_path(dst, dp);
        /* The records first (attr.c): a marker bit never points at nothing. A
         * symlink has no mode and no user.* xattrs, but may have owner.c's record. */
        r = copy_xattrs(ws, src, dp, ret_charged);
        if (r < 0)
                return r;
        if (!S_ISLNK(st.st_mode) && chmod(dp, st.st_mode & 07777) < 0)
                return negative_errno();
        if (utimensat(dst, "", (struct timespec[]){st.st_atim, st.st_mtim},
                      AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
                return negative_errno();
        return 0;
}
