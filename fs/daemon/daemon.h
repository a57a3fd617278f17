/* SPDX-License-Identifier: MIT */
/*
 * daemon.h: fs/daemon, the private header of the top folder of fs/.
 *
 * Owns: the workspace daemon's life: building a workspace from its options
 * (daemon.c), mounting the layer stack it serves (layers-mount.c), the FUSE
 * session and its handler table (session.c), the data path it reports
 * (datapath.c) and the transport it serves on (uring.c), the control socket that
 * switches layers while mounted (layers-online.c), and finding, owning and
 * unmounting a mount from outside (mountctl.c). fs.h, one folder up, is
 * the public header these implement for mounts/.
 *
 * May call: every folder below it (ops/, core/, layers/, lower/, format/)
 * and journal/, gitdir/, lib/. Nothing in fs/ calls daemon/.
 * tests/lint/fs-layers.py checks both the includes and the calls.
 */
#pragma once

#include <fuse_lowlevel.h>

#include "core.h"

/* layers-mount.c: the writable layer and the stack of frozen ones under it */
int layers_mount(struct fs_workspace *ws, int fsdir, char **ret_error);
/* layers-online.c: <state>/fs.sock, for checkpoints while mounted */
int layers_online_start(struct fs_workspace *ws, char **ret_error);
void layers_online_stop(struct fs_workspace *ws);

/* mountctl.c: the start time (clock ticks after boot) of a process, to tell
 * a daemon from a later process that reused its pid. */
int fs_proc_starttime(int pid, unsigned long long *ret);

/* datapath.c: <state>/fs/datapath.json, the transport and the features
 * negotiated at FUSE_INIT (fs_datapath_read in fs.h reads it) */
int datapath_write(struct fs_workspace *ws);

/*
 * uring.c: FUSE over io_uring or /dev/fuse. The rings' memory is bounded:
 * one queue per possible CPU, each of at most FS_URING_DEPTH_MAX entries of
 * max_write + FS_URING_ENTRY_EXTRA bytes, FS_URING_MEMORY in all (the depth
 * shrinks with more CPUs; below one entry a queue, no io_uring).
 */
#define FS_URING_DEPTH_MAX   8u          /* libfuse's default depth */
#define FS_URING_MEMORY      (64u << 20) /* all queues' buffers together */
#define FS_URING_ENTRY_EXTRA 8192u       /* a request's header and a page of slack */
/* Before the session: ws->uring_depth, 0 with ws->uring_why when not. */
void uring_plan(struct fs_workspace *ws, unsigned max_write);
/* At FUSE_INIT: ask for it only as planned; ws->uring says if asked. */
void uring_negotiate(struct fs_workspace *ws, struct fuse_conn_info *conn);
/* After INIT's reply (fs_loop_run's hook): did libfuse's rings start? */
void uring_confirm(void *ws);
/* After serving, before anything the handlers use goes: stop the rings. */
int uring_stop(struct fs_workspace *ws);

/* session.c: the handler table (admit.c in front of the ops_* handlers) */
extern const struct fuse_lowlevel_ops fs_ops;
/* A part's connection's table: fs_ops but for INIT, OPEN and FLUSH. */
void session_part_ops(struct fuse_lowlevel_ops *ops);

/*
 * parts.c: each copy-on-write part on a connection of its own that sends
 * no OPEN, mounted over its directory of the root's mount (which must be
 * served by then). parts_start falls back to the root's connection for a
 * part that can't be split, with ws->parts_why; parts_stop unmounts them
 * and ends their loops; parts_free, once nothing notifies them any more.
 */
void parts_start(struct fs_workspace *ws);
void parts_stop(struct fs_workspace *ws);
void parts_free(struct fs_workspace *ws);
