/* SPDX-License-Identifier: MIT */
/*
 * owner.c: whose a stored owner is, when the agent runs as a host uid of
 * its own (fs_options.agent, a root-run sandbox).
 *
 * The agent's files are stored as the daemon's (root's) and shown as the
 * agent's host uid, so that the identity owns nothing on the host and the
 * kernel's default_permissions lets the agent write its own files. That
 * leaves one case the stored uid can't tell apart: a file that really is
 * root's, made or chowned to root by root itself through the mount (a host
 * tool, an archive extracted as root, a conformance suite). Such an inode
 * carries the xattr below, so it is shown as root's, not the agent's:
 *
 *   trusted.cloister.owner = "u", "g" or "ug": the stored uid, gid or both
 *   are the daemon's own ids, not the agent's.
 *
 * Only marked inodes differ from the default, so only root's own files pay
 * for the xattr when they are made; every upper node reads it once, on its
 * first getattr, and caches the answer (node->owner). The xattr is on the
 * inode: hard links share it, rename keeps it. Agents never see trusted.*
 * xattrs. Without trusted xattrs on the upper filesystem (ws->xattr_ok
 * false) root's files show as the agent's, as docs/fs-design.md says.
 *
 * Every access goes through /proc/self/fd/N of a pinned fd, never a name.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/xattr.h>

#include "core.h"
#include "lib/util.h"

#define OWNER_XATTR "trusted.cloister.owner"

static bool identity(const struct fs_workspace *ws)
{
        return ws->uid != ws->store_uid || ws->gid != ws->store_gid;
}

static unsigned owner_read(int fd)
{
        char p[FS_FD_PATH_MAX], v[8];
        unsigned flags = OWNER_LOADED;
        ssize_t k;

        fs_fd_path(fd, p);
        k = getxattr(p, OWNER_XATTR, v, sizeof(v));
        for (ssize_t i = 0; i < k; i++) {
                if (v[i] == 'u')
                        flags |= OWNER_ROOT_UID;
                else if (v[i] == 'g')
                        flags |= OWNER_ROOT_GID;
        }
        return flags;
}

unsigned owner_load(struct fs_workspace *ws, struct node *n, int fd)
{
        unsigned flags;

        if (!identity(ws) || !ws->xattr_ok)
                return OWNER_LOADED;
        if (!n)
                return fd >= 0 ? owner_read(fd) : OWNER_LOADED;
        flags = __atomic_load_n(&n->owner, __ATOMIC_ACQUIRE);
        if (flags & OWNER_LOADED)
                return flags;
        if (fd < 0)
                return OWNER_LOADED; /* nothing stored yet: the agent's */
        flags = owner_read(fd);
        __atomic_store_n(&n->owner, (uint8_t)flags, __ATOMIC_RELEASE);
        return flags;
}

void owner_show(struct fs_workspace *ws, struct node *n, int fd, struct stat *st)
{
        unsigned flags;

        if (!identity(ws))
                return;
        if (st->st_uid != ws->store_uid && st->st_gid != ws->store_gid)
                return;
        flags = owner_load(ws, n, fd);
        if (st->st_uid == ws->store_uid && !(flags & OWNER_ROOT_UID))
                st->st_uid = ws->uid;
        if (st->st_gid == ws->store_gid && !(flags & OWNER_ROOT_GID))
                st->st_gid = ws->gid;
}

unsigned owner_flags_for(const struct fs_workspace *ws, uid_t stored_uid, uid_t uid,
                         gid_t stored_gid, gid_t gid)
{
        unsigned flags = OWNER_LOADED;

        /* uid, gid: who the caller asked for; stored_*: what the host file got. */
        if (stored_uid == ws->store_uid && uid != ws->uid)
                flags |= OWNER_ROOT_UID;
        if (stored_gid == ws->store_gid && gid != ws->gid)
                flags |= OWNER_ROOT_GID;
        return flags;
}

int owner_mark(struct fs_workspace *ws, struct node *n, int fd, unsigned flags)
{
        char p[FS_FD_PATH_MAX], v[3];
        size_t len = 0;
        int r = 0;

        if (!identity(ws) || !ws->xattr_ok)
                return 0;
        if (flags & OWNER_ROOT_UID)
                v[len++] = 'u';
        if (flags & OWNER_ROOT_GID)
                v[len++] = 'g';
        fs_fd_path(fd, p);
        if (len > 0) {
                if (setxattr(p, OWNER_XATTR, v, len, 0) < 0)
                        r = negative_errno();
        } else if (removexattr(p, OWNER_XATTR) < 0 && errno != ENODATA) {
                r = negative_errno();
        }
        if (r == 0 && n)
                __atomic_store_n(&n->owner, (uint8_t)(flags | OWNER_LOADED), __ATOMIC_RELEASE);
        return r;
}
