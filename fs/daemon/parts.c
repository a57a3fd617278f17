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
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core.h"
#include "daemon.h"
#include "ops.h"
#include "lib/util.h"

/* Workers of a part's loop: the root's has 16, for the same agent. */
#define PART_WORKERS 16

static void *part_main(void *arg)
{
        struct fs_conn *c = arg;

        c->error = fs_loop_run(c->se, PART_WORKERS, NULL, NULL);
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

/*
 * Mount c's part over its directory, as the root's mount is made (its
 * fsname, nosuid, nodev, default_permissions, allow_other), on a /dev/fuse
 * descriptor of our own that c's session then serves (part_io). Made here rather than by libfuse so
 * that the unmount needs no path: an O_PATH descriptor of the part's root
 * (c->mnt_fd) names the mount, where a path would be looked up through the
 * root's connection, which no loop serves any more by then.
 */
static int part_mount(struct fs_workspace *ws, struct fs_conn *c, const char **ret_why)
{
        char id[FS_STATE_ID_MAX];
        _cleanup_free_ char *fsname = NULL, *data = NULL;
        _cleanup_close_ int dev = -1;
        struct stat st;
        int r = fs_state_id(ws->state, id);

        if (r < 0)
                return r;
        /* Through the root's connection, served by now. */
        if (stat(c->mountpoint, &st) < 0 || !S_ISDIR(st.st_mode)) {
                *ret_why = "the part's directory cannot be seen in the workspace's mount";
                return -ENOTDIR;
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
        if (mount(fsname, c->mountpoint, "fuse.cloister", MS_NOSUID | MS_NODEV, data) < 0) {
                *ret_why = "the part's mount was refused";
                return negative_errno();
        }
        c->mounted = true;
        c->mnt_fd = open(c->mountpoint, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (c->mnt_fd < 0) {
                r = negative_errno();
                (void)umount2(c->mountpoint, MNT_DETACH);
                c->mounted = false;
                *ret_why = "the part's mount cannot be opened";
                return r;
        }
        if (fuse_session_custom_io(c->se, &part_io, sizeof(part_io), dev) != 0) {
                *ret_why = "libfuse refused the part's descriptor";
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
        free(c->mountpoint);
        free(c);
}

/* Mount and serve layer l's part on a connection of its own; *ret_why on failure. */
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
        if (asprintf(&c->mountpoint, "%s%s", ws->mountpoint, l->mpath) < 0) {
                c->mountpoint = NULL;
                part_free(c);
                return -ENOMEM;
        }
        /* The mount's options are part_mount's: the session takes none. */
        if (fuse_opt_add_arg(&args, "cloister") < 0) {
                r = -ENOMEM;
        } else {
                c->se = fuse_session_new(&args, &ops, sizeof(ops), c);
                if (!c->se) {
                        *ret_why = "cannot create the part's FUSE session";
                        r = -EIO;
                }
        }
        fuse_opt_free_args(&args);
        if (r < 0) {
                part_free(c);
                return r;
        }
        /* From its first request on, the handlers find it through the layer. */
        l->conn = c;
        r = part_mount(ws, c, ret_why);
        if (r < 0) {
                l->conn = NULL;
                part_free(c);
                return r;
        }
        /* Its loop's stop comes from parts_stop, not from a signal: the root's loop takes those. */
        sigemptyset(&stop);
        sigaddset(&stop, SIGINT);
        sigaddset(&stop, SIGTERM);
        sigaddset(&stop, SIGHUP);
        pthread_sigmask(SIG_BLOCK, &stop, &old);
        r = -pthread_create(&c->thread, NULL, part_main, c);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r < 0) {
                /* Nothing was served on it: the part is the root's again. */
                l->conn = NULL;
                *ret_why = "cannot start the part's loop";
                part_free(c);
                return r;
        }
        c->started = true;
        return 0;
}

void parts_start(struct fs_workspace *ws)
{
        struct layer *parts[2] = {&ws->repo, ws->has_home ? &ws->home : NULL};
        const char *why = NULL;

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
        for (size_t i = 0; i < ELEMENTSOF(parts); i++) {
                const char *w = NULL;

                if (parts[i] && part_start(ws, parts[i], &w) < 0 && !why)
                        why = w ? w : "out of memory";
        }
        ws->parts_split = ws->repo.conn != NULL;
        ws->parts_why = why;
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
