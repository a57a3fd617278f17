/* SPDX-License-Identifier: MIT */
/*
 * daemon.h: fs/daemon, the private header of the top folder of fs/.
 *
 * Owns: the workspace daemon's life: building a workspace from its options
 * (daemon.c), mounting the layer stack it serves (layers-mount.c), the FUSE
 * session and its handler table (session.c), the data path it reports
 * (datapath.c), the control socket that
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

/* session.c: the handler table (admit.c in front of the ops_* handlers) */
extern const struct fuse_lowlevel_ops fs_ops;
