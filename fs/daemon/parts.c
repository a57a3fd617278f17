/* SPDX-License-Identifier: MIT */
/*
 * parts.c: the copy-on-write parts (the repo, the home) on FUSE
 * connections of their own, each mounted over the part's directory of the
 * root's mount, on which the kernel sends no OPEN, RELEASE or FLUSH
 * (docs/fs-design.md, "Zero-message opens").
 *
 * Why a connection per part: the kernel's switch (an OPEN answered ENOSYS
 * once) holds for a whole connection, and the root's must keep its OPENs:
 * a mirror or /.cloister file opened for writing fails with EROFS there,
 * and /.cloister/changes is a snapshot taken at its open. On a part,
 * every read and write goes through the daemon anyway, and what an open
 * handle carried is made per request (ops_request_handle).
 *
 * A part that cannot be split (a daemon not root, see parts_start; a
 * mount refused) stays served on the root's connection with its opens, as
 * before: `cloister status` says which and why. A kernel without
 * FUSE_NO_OPEN_SUPPORT (before Linux 4.20) would fail every open answered
 * ENOSYS: there the part's connection serves its OPENs (session.c).
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core.h"
#include "daemon.h"
#include "ops.h"
#include "lib/util.h"

/* Workers of a part's loop: the root's has 16, for the same agent. */
#define PART_WORKERS 16

/*
 * A part's loop. One that ends unasked (its connection aborted, through
 * /sys/fs/fuse/connections or a read error of the device) ends the daemon,
 * as the root's would: a workspace whose /workspace answers ENOTCONN under
 * a live daemon would be taken for a healthy mount, and never mounted
 * afresh.
 */
static void *part_main(void *arg)
{
        struct fs_conn *c = arg;

        c->error = fs_loop_run(c->se, PART_WORKERS, NULL, NULL);
        atomic_store(&c->live, false);
        if (!atomic_load(&c->stopping)) {
                fuse_log(FUSE_LOG_ERR, "cloister: %s is no longer served (%s): unmounting\n",
                         c->layer->mpath,
                         c->error < 0 ? strerror(-c->error) : "its connection ended");
                atomic_store(&c->ws->parts_lost, true);
                fuse_session_exit(c->ws->se);
        }
        return NULL;
}

/*
 * The device's own calls, as libfuse makes them without custom io: custom
 * io is how a session takes a /dev/fuse descriptor mounted by someone else
 * (its "/dev/fd/N" mountpoint does too, but keeps a copy of that string it
 * never frees).
 */
static ssize_t part_writev(int fd, struct iovec *iov, int count, void *userdata)
{
        (void)userdata;
        return writev(fd, iov, count);
}

static ssize_t part_read(int fd, void *buf, size_t len, void *userdata)
{
        (void)userdata;
        return read(fd, buf, len);
}

static ssize_t part_splice(int fdin, off_t *offin, int fdout, off_t *offout, size_t len,
                           unsigned int flags, void *userdata)
{
        (void)userdata;
        return splice(fdin, offin, fdout, offout, len, flags);
}

static const struct fuse_custom_io part_io = {
        .writev = part_writev,
        .read = part_read,
        .splice_receive = part_splice,
        .splice_send = part_splice,
};

/* openat2(2) from dirfd, for a directory, with resolve's rules; -errno. */
static int open_dir_at(int dirfd, const char *path, uint64_t resolve)
{
        struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC, .resolve = resolve};
        long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));

        return fd < 0 ? negative_errno() : (int)fd;
}

#define PART_RESOLVE (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

/*
 * Mount c's part over its directory, as the root's mount is made (its
 * fsname, nosuid, nodev, default_permissions, allow_other), on a /dev/fuse
 * descriptor of our own that c's session then serves (part_io). The
 * directory is found from the root mount's own root (ws->conn.mnt_fd,
 * opened when it was mounted), beneath it and through no symlink, and
 * mounted over through its descriptor: no path from the host is walked
 * again, so nothing swapped into the mountpoint's path meanwhile can
 * redirect the mount. Made here rather than by libfuse so that the unmount
 * needs no path either: c->mnt_fd, the part's root, names the mount,
 * where a path would be looked up through the root's connection, which no
 * loop serves any more by then.
 */
static int part_mount(struct fs_workspace *ws, struct fs_conn *c, const char **ret_why)
{
        char id[FS_STATE_ID_MAX], target[FS_FD_PATH_MAX];
        _cleanup_free_ char *fsname = NULL, *data = NULL;
        _cleanup_close_ int dev = -1, dir = -1;
        struct stat st, root_st;
        struct statx stx;
        int r = fs_state_id(ws->state, id);

        if (r < 0)
                return r;
        /* Through the root's connection, served by now. */
        dir = open_dir_at(ws->conn.mnt_fd, c->layer->mpath + 1, PART_RESOLVE | RESOLVE_NO_XDEV);
        if (dir < 0 || fstat(dir, &st) < 0 || fstat(ws->conn.mnt_fd, &root_st) < 0 ||
            st.st_dev != root_st.st_dev) {
                *ret_why = "its directory cannot be found in the workspace's mount";
                return dir < 0 ? dir : -ENOTDIR;
        }
        dev = open("/dev/fuse", O_RDWR | O_CLOEXEC);
        if (dev < 0) {
                *ret_why = "/dev/fuse cannot be opened";
                return negative_errno();
        }
        if (asprintf(&fsname, "cloister:%s:%s", ws->name, id) < 0) {
                fsname = NULL;
                return -ENOMEM;
        }
        if (asprintf(&data,
                     "fd=%d,rootmode=%o,user_id=%u,group_id=%u,default_permissions,allow_other",
                     dev, (unsigned)(st.st_mode & S_IFMT), (unsigned)getuid(),
                     (unsigned)getgid()) < 0) {
                data = NULL;
                return -ENOMEM;
        }
        fs_fd_path(dir, target);
        if (mount(fsname, target, "fuse.cloister", MS_NOSUID | MS_NODEV, data) < 0) {
                *ret_why = "its mount was refused";
                return negative_errno();
        }
        c->mounted = true;
        /*
         * The same way down again, now into the part's mount: a device of
         * its own, asked without a request (no loop serves it yet).
         */
        c->mnt_fd = open_dir_at(ws->conn.mnt_fd, c->layer->mpath + 1, PART_RESOLVE);
        if (c->mnt_fd < 0 ||
            statx(c->mnt_fd, "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, STATX_TYPE, &stx) < 0 ||
            makedev(stx.stx_dev_major, stx.stx_dev_minor) == root_st.st_dev) {
                r = c->mnt_fd < 0 ? c->mnt_fd : -EIO;
                (void)umount2(target, MNT_DETACH);
                c->mounted = false;
                *ret_why = "its mount cannot be opened";
                return r;
        }
        if (fuse_session_custom_io(c->se, &part_io, sizeof(part_io), dev) != 0) {
                *ret_why = "libfuse refused its descriptor";
                return -EIO; /* part_free unmounts it through mnt_fd */
        }
        TAKE_FD(dev); /* the session's now: fuse_session_destroy() closes it */
        return 0;
}

/* Detach c's mount, by its descriptor (see part_mount). */
static void part_unmount(struct fs_conn *c)
{
        char p[FS_FD_PATH_MAX];

        if (!c->mounted)
                return;
        fs_fd_path(c->mnt_fd, p);
        (void)umount2(p, MNT_DETACH);
        c->mounted = false;
}

static void part_free(struct fs_conn *c)
{
        part_unmount(c);
        safe_close(c->mnt_fd);
        if (c->se)
                fuse_session_destroy(c->se);
        free(c);
}

/*
 * Mount and serve layer l's part on a connection of its own; *ret_why on
 * failure. Published (l->conn) once mounted, and never freed before
 * parts_free from then on: the handlers, the shed and the index build read
 * it without a lock (fs_node_session). Until then a failure frees it.
 */
static int part_start(struct fs_workspace *ws, struct layer *l, const char **ret_why)
{
        static struct fuse_lowlevel_ops ops;
        struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
        sigset_t stop, old;
        struct fs_conn *c;
        int r = 0;

        session_part_ops(&ops);
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->mnt_fd = -1;
        c->ws = ws;
        c->root = l->root;
        c->layer = l;
        c->no_open = true;
        /* The mount's options are part_mount's: the session takes none. */
        if (fuse_opt_add_arg(&args, "cloister") < 0) {
                r = -ENOMEM;
        } else {
                c->se = fuse_session_new(&args, &ops, sizeof(ops), c);
                if (!c->se) {
                        *ret_why = "cannot create its FUSE session";
                        r = -EIO;
                }
        }
        fuse_opt_free_args(&args);
        if (r == 0)
                r = part_mount(ws, c, ret_why);
        if (r < 0) {
                part_free(c);
                return r;
        }
        /* Live before its loop reads a request: its handlers' notifications go to it. */
        atomic_store(&c->live, true);
        l->conn = c;
        /* Its loop's stop comes from parts_stop, not from a signal: the root's loop takes those. */
        sigemptyset(&stop);
        sigaddset(&stop, SIGINT);
        sigaddset(&stop, SIGTERM);
        sigaddset(&stop, SIGHUP);
        pthread_sigmask(SIG_BLOCK, &stop, &old);
        r = -pthread_create(&c->thread, NULL, part_main, c);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r < 0) {
                /* Nothing was served on it: the part is the root's again (parts_free frees it). */
                atomic_store(&c->live, false);
                part_unmount(c);
                *ret_why = "cannot start its loop";
                return r;
        }
        c->started = true;
        return 0;
}

void parts_start(struct fs_workspace *ws)
{
        struct layer *parts[2] = {&ws->repo, ws->has_home ? &ws->home : NULL};
        struct statfs sf;
        bool split = false;

        if (ws->parts_off) {
                ws->parts_why = "[fs] zero_message_opens = off";
                return;
        }
        /*
         * fusermount3, which mounts for a user, runs as root, and the kernel
         * lets into a FUSE mount without allow_other only a process all of
         * whose ids are the owner's: it cannot reach a directory of the
         * user's own mount to mount over it.
         */
        if (geteuid() != 0) {
                ws->parts_why = "the daemon is not root: fusermount3 cannot mount inside the "
                                "workspace's own mount";
                return;
        }
        /* The root's mount, opened as it was made (session.c); not a FUSE
         * mount if its path was swapped meanwhile. Served now: fstatfs asks. */
        if (ws->conn.mnt_fd < 0 || fstatfs(ws->conn.mnt_fd, &sf) < 0 ||
            (unsigned long)sf.f_type != FUSE_SUPER_MAGIC) {
                ws->parts_why = "the workspace's mount could not be opened when it was made";
                return;
        }
        for (size_t i = 0; i < ELEMENTSOF(parts); i++) {
                const char *w = NULL;
                int r;

                if (!parts[i])
                        continue;
                r = part_start(ws, parts[i], &w);
                if (r == 0) {
                        split = true;
                } else if (!ws->parts_why) {
                        /* The first part that could not be split, by name. */
                        snprintf(ws->parts_why_buf, sizeof(ws->parts_why_buf), "%s: %s%s%s",
                                 parts[i]->mpath, w ? w : "out of memory",
                                 r != -ENOMEM && r != -EIO ? ": " : "",
                                 r != -ENOMEM && r != -EIO ? strerror(-r) : "");
                        ws->parts_why = ws->parts_why_buf;
                }
        }
        ws->parts_split = split;
}

void parts_stop(struct fs_workspace *ws)
{
        struct layer *parts[2] = {&ws->repo, &ws->home};

        /* The parts first: the root's mount is under them. */
        for (size_t i = 0; i < ELEMENTSOF(parts); i++) {
                struct fs_conn *c = parts[i]->conn;

                if (!c)
                        continue;
                /* Its connection ends with the mount, unless something in it
                 * is still in use: its loop is told to stop as well. */
                atomic_store(&c->stopping, true);
                part_unmount(c);
                fuse_session_exit(c->se);
        }
        for (size_t i = 0; i < ELEMENTSOF(parts); i++) {
                struct fs_conn *c = parts[i]->conn;

                if (c && c->started) {
                        pthread_join(c->thread, NULL);
                        c->started = false;
                }
        }
}

void parts_free(struct fs_workspace *ws)
{
        struct layer *parts[2] = {&ws->repo, &ws->home};

        for (size_t i = 0; i < ELEMENTSOF(parts); i++) {
                struct fs_conn *c = parts[i]->conn;

                if (!c)
                        continue;
                parts[i]->conn = NULL;
                part_free(c);
        }
}
