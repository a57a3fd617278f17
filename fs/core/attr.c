/* SPDX-License-Identifier: MIT */
/*
 * attr.c: the parts of a mode that the host's upper files must not or
 * cannot hold, and the host's limits that the mount reports as its own.
 *
 * The mount is nosuid,nodev, so setuid/setgid bits and device nodes are
 * inert inside it, but a host file with those bits would not be: the
 * daemon runs with host privileges and others read the upper tree. So:
 *
 *   - an upper directory's S_ISUID/S_ISGID live in the xattr below, read
 *     once when its node is made (node->xbits); its sticky bit is the
 *     host's (harmless on the host);
 *   - an upper non-directory with any of S_ISUID/S_ISGID/S_ISVTX, or a
 *     device node, carries S_ISVTX on the host as a marker ("read the
 *     xattr") and the xattr holds the mode the agent sees; only marked
 *     files pay for the extra read on getattr. A device node is an empty,
 *     mode 0 regular file on the host: its type and rdev are in the xattr
 *     (and the type in its name's sidecar record, for readdir).
 *
 * The xattr is on the inode, so hard links share it and rename keeps it.
 * Value: "<st_mode in octal> <rdev in decimal>". It is trusted.* (only
 * CAP_SYS_ADMIN may read or write it on the host, and agents only ever see
 * user.* xattrs). Without it (an unprivileged daemon, or an upper
 * filesystem without trusted xattrs) special bits are dropped and device
 * nodes are refused, as before. docs/fs-design.md has the table.
 *
 * Every access goes through /proc/self/fd/N of a pinned fd (O_PATH fds
 * included): never by a name the agent could have swapped.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "core.h"
#include "lib/util.h"

#define ATTR_XATTR        "trusted.cloister.mode"
#define ATTR_SPECIAL_DIR  ((mode_t)(S_ISUID | S_ISGID))
#define ATTR_SPECIAL_FILE ((mode_t)(S_ISUID | S_ISGID | S_ISVTX))

/* The stored mode and rdev of the inode behind fd; -ENODATA if none, -EIO if damaged. */
static int xget(int fd, mode_t *ret_mode, dev_t *ret_rdev)
{
        char p[FS_FD_PATH_MAX], v[64];
        unsigned long long mode, rdev;
        int used = 0;
        ssize_t k;

        fs_fd_path(fd, p);
        k = getxattr(p, ATTR_XATTR, v, sizeof(v) - 1);
        if (k < 0)
                return errno == ERANGE ? -EIO : negative_errno();
        v[k] = 0;
        if (sscanf(v, "%llo %llu%n", &mode, &rdev, &used) != 2 || used != k || mode > 0177777)
                return -EIO;
        *ret_mode = (mode_t)mode;
        *ret_rdev = (dev_t)rdev;
        return 0;
}

static int xset(int fd, mode_t mode, dev_t rdev)
{
        char p[FS_FD_PATH_MAX], v[64];
        int n = snprintf(v, sizeof(v), "%llo %llu", (unsigned long long)mode,
                         (unsigned long long)rdev);
        fs_fd_path(fd, p);
        return setxattr(p, ATTR_XATTR, v, (size_t)n, 0) < 0 ? negative_errno() : 0;
}

static int xremove(int fd)
{
        char p[FS_FD_PATH_MAX];
        fs_fd_path(fd, p);
        if (removexattr(p, ATTR_XATTR) < 0 && errno != ENODATA)
                return negative_errno();
        return 0;
}

static int chmod_fd(int fd, mode_t mode)
{
        char p[FS_FD_PATH_MAX];
        fs_fd_path(fd, p);
        return chmod(p, mode) < 0 ? negative_errno() : 0;
}

/* Does the file system take a file of exactly max bytes, and not one more? */
static bool max_size_is(int fd, uint64_t max)
{
        return ftruncate(fd, (off_t)max) == 0 &&
               (max == INT64_MAX || ftruncate(fd, (off_t)(max + 1)) < 0);
}

/*
 * The largest size the host's upper filesystem takes for a file. The usual
 * answers are tried first, each checked exactly (that size, and not one
 * byte more): no limit but off_t's (xfs, btrfs, tmpfs), and ext4's 2^32 - 1
 * blocks of 1 to 64 KiB. Else bisection, whose 63 ftruncate(2) calls, each
 * a journaled inode update, were 2 ms of every mount.
 */
static uint64_t probe_max_size(int dfd)
{
        _cleanup_close_ int fd = openat(dfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        uint64_t lo = 0, hi = INT64_MAX;

        if (fd < 0)
                return INT64_MAX; /* no O_TMPFILE on the host: trust the host to refuse */
        if (ftruncate(fd, (off_t)hi) == 0)
                return hi;
        for (unsigned bits = 10; bits <= 16; bits++) {
                uint64_t ext4 = ((UINT64_C(1) << 32) - 1) << bits;
                if (max_size_is(fd, ext4))
                        return ext4;
        }
        while (lo + 1 < hi) {
                uint64_t mid = lo + (hi - lo) / 2;
                if (ftruncate(fd, (off_t)mid) == 0)
                        lo = mid;
                else
                        hi = mid;
        }
        return lo;
}

static bool same_fs(int a, int b)
{
        struct stat sa, sb;

        return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev;
}

static bool probe_xattr(int dfd)
{
        char p[FS_FD_PATH_MAX];
        if (geteuid() != 0)
                return false;
        fs_fd_path(dfd, p);
        if (setxattr(p, "trusted.cloister.probe", "1", 1, 0) < 0)
                return false;
        (void)removexattr(p, "trusted.cloister.probe");
        return true;
}

int attr_probe(struct fs_workspace *ws)
{
        ws->xattr_ok =
                probe_xattr(ws->repo.upper_fd) && (!ws->has_home || probe_xattr(ws->home.upper_fd));
        ws->max_file_size = probe_max_size(ws->repo.upper_fd);
        /* Both are in the state directory, usually one file system: probed once then. */
        if (ws->has_home && !same_fs(ws->repo.upper_fd, ws->home.upper_fd))
                ws->max_file_size = MIN(ws->max_file_size, probe_max_size(ws->home.upper_fd));
        return 0;
}

int attr_dir_load(struct fs_workspace *ws, struct node *dir)
{
        return attr_dir_load_fd(ws, dir, dir->ufd);
}

int attr_dir_load_fd(struct fs_workspace *ws, struct node *dir, int fd)
{
        mode_t m;
        dev_t rdev;
        int r;

        dir->xbits = 0;
        if (!ws->xattr_ok || fd < 0)
                return 0;
        r = xget(fd, &m, &rdev);
        if (r == -ENODATA || r == -EIO)
                return 0; /* none, or damaged: the host's mode stands */
        if (r < 0)
                return r;
        dir->xbits = m & ATTR_SPECIAL_DIR;
        return 0;
}

void attr_view(struct fs_workspace *ws, struct node *n, int fd, struct stat *st)
{
        mode_t m;
        dev_t rdev;

        if (S_ISDIR(st->st_mode)) {
                st->st_mode = (st->st_mode & ~ATTR_SPECIAL_DIR) | n->xbits;
                return;
        }
        if (!(st->st_mode & S_ISVTX))
                return;
        st->st_mode &= ~ATTR_SPECIAL_FILE;
        if (!ws->xattr_ok || fd < 0 || xget(fd, &m, &rdev) < 0)
                return; /* a marker without a valid record: plain bits */
        /* The node's type is what the kernel knows: never change it under it. */
        st->st_mode = (n->type & S_IFMT) | (m & 07777);
        if (S_ISCHR(n->type) || S_ISBLK(n->type)) {
                st->st_rdev = rdev;
                st->st_size = 0;
                st->st_blocks = 0;
        }
}

int attr_set_mode(struct fs_workspace *ws, mode_t type, int fd, mode_t mode, dev_t rdev,
                  mode_t *xbits)
{
        bool dir = S_ISDIR(type), dev = S_ISCHR(type) || S_ISBLK(type);
        mode_t special = mode & (dir ? ATTR_SPECIAL_DIR : ATTR_SPECIAL_FILE);
        mode_t host = dir ? mode & 01777 : dev ? 0 : mode & 0777;
        int r;

        if (!ws->xattr_ok) {
                if (dev)
                        return -EPERM;
                special = 0;
                host &= ~(mode_t)S_ISVTX;
                if (dir)
                        host |= mode & S_ISVTX;
        }
        if (special || dev) {
                /* The record first: a marker never points at nothing. */
                r = xset(fd, (type & S_IFMT) | (mode & 07777), rdev);
                if (r < 0)
                        return r;
                if (!dir)
                        host |= S_ISVTX;
        }
        r = chmod_fd(fd, host);
        if (r < 0)
                return r;
        if (!special && !dev && ws->xattr_ok && (dir ? xbits && *xbits : true)) {
                r = xremove(fd);
                if (r < 0)
                        return r;
        }
        if (dir && xbits)
                *xbits = special;
        return 0;
}

/*
 * Only a marked file (S_ISVTX on the host) can hold the bits, so an
 * ordinary file costs the one fstat. security.capability needs nothing:
 * the agent can never set a security.* xattr (ops-xattr.c).
 */
int attr_kill_suidgid(struct fs_workspace *ws, struct node *n, int fd, mode_t *ret_mode)
{
        struct stat st;
        mode_t m, now;
        dev_t rdev;
        int r;

        /* A chown drops them from any non-directory (a device node too). */
        if (S_ISDIR(n->type) || S_ISLNK(n->type) || !ws->xattr_ok)
                return 0;
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!(st.st_mode & S_ISVTX))
                return 0;
        r = xget(fd, &m, &rdev);
        if (r == -ENODATA)
                return 0;
        if (r < 0)
                return r;
        now = m & ~(mode_t)S_ISUID;
        if (m & S_IXGRP)
                now &= ~(mode_t)S_ISGID;
        if (now == m)
                return 0;
        r = attr_set_mode(ws, n->type, fd, now & 07777, rdev, NULL);
        if (r < 0)
                return r;
        if (ret_mode)
                *ret_mode = now & 07777;
        return 1;
}

int attr_rdev(struct fs_workspace *ws, int fd, dev_t *ret)
{
        mode_t m;
        if (!ws->xattr_ok)
                return -ENODATA;
        return xget(fd, &m, ret);
}
