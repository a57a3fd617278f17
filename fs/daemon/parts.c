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
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The options of a part's mount: the root's, without io_uring. */
static int part_options(struct fs_workspace *ws, char **ret)
{
        char id[FS_STATE_ID_MAX];
        int r = fs_state_id(ws->state, id);

        if (r < 0)
                return r;
        if (asprintf(ret,
                     "default_permissions,nosuid,nodev,fsname=cloister:%s:%s,subtype=cloister%s",
                     ws->name, id, geteuid() == 0 ? ",allow_other" : "") < 0)
                return -ENOMEM;
        return 0;
}

static void part_free(struct fs_conn *c)
{
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
        _cleanup_free_ char *opts = NULL;
        sigset_t stop, old;
        struct fs_conn *c;
        int r;

        session_part_ops(&ops);
        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->ws = ws;
        c->root = l->root;
        c->layer = l;
        c->no_open = true;
        if (asprintf(&c->mountpoint, "%s%s", ws->mountpoint, l->mpath) < 0) {
                c->mountpoint = NULL;
                part_free(c);
                return -ENOMEM;
        }
        r = part_options(ws, &opts);
        if (r == 0 && (fuse_opt_add_arg(&args, "cloister") < 0 ||
                       fuse_opt_add_arg(&args, "-o") < 0 || fuse_opt_add_arg(&args, opts) < 0))
                r = -ENOMEM;
        if (r == 0) {
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
        /* Through the root's connection, served by now: mount(2) looks the path up. */
        if (fuse_session_mount(c->se, c->mountpoint) != 0) {
                *ret_why = "the part's mount was refused (the daemon's log says why)";
                l->conn = NULL;
                part_free(c);
                return -EIO;
        }
        c->mounted = true;
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
                fuse_session_unmount(c->se);
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
                fuse_session_exit(c->se);
                if (c->mounted) {
                        fuse_session_unmount(c->se);
                        c->mounted = false;
                }
                if (c->started) {
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
