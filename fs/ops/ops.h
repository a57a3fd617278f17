/* SPDX-License-Identifier: MIT */
/*
 * ops.h: fs/ops, the private header of the FUSE request side.
 *
 * Owns: the libfuse low-level handlers (ops-entry.c: lookups, attributes,
 * listings; ops-open.c, ops-rw.c, ops-attr.c: open files, their data and
 * attributes; ops-ns.c: names; ops-xattr.c), what they share (ops-common.c,
 * and ops-handle.c for the open-file handle), the gate in front of them (admit.c), the
 * shedding of cached nodes when descriptors run short (shed.c) and the
 * request loop (loop.c). struct handle, an open file, lives here.
 *
 * May call: core/ (the copy-on-write core) and what it may: layers/,
 * lower/, format/, journal/, gitdir/ and lib/. daemon/ calls in (session.c
 * fills its fuse_lowlevel_ops with the admit_* and ops_* handlers); nothing
 * here calls daemon/.
 * tests/lint/fs-layers.py checks both the includes and the calls.
 */
#pragma once

#include "core.h"

/*
 * An open file or directory: fi->fh. fd, stale_fd, lower_fd, is_upper,
 * lazy_lower, buf and len change while reads run (the first read opens the
 * lower data; a write elsewhere moves a reader to the upper file; a
 * checkpoint moves fd): they are written holding node->lock, and a read
 * takes its copy of them holding it (do_read). A descriptor or buffer
 * replaced stays open until the handle is freed, so a read that copied it
 * may still use it unlocked. refs is atomic; the list links and tracked
 * are ws->handles_lock's; write_error is written by the checkpoint while it
 * holds write_gate exclusively, read by writes holding it shared.
 */
struct handle {
        struct node *node;
        int fd;                /* files: the host fd (upper, lower data or mirror) */
        bool writable;         /* an upper fd opened for writing */
        _Atomic bool is_upper; /* fd is the node's upper file (peeked at unlocked: do_read) */
        int lower_fd;          /* reads of a metacopy opened for writing: the lower data */
        int stale_fd; /* the lower fd replaced by the upper one, kept for reads in flight */
        _Atomic bool lazy_lower; /* lower data not opened yet: done at the first read, so opens
                                    served from the page cache cost nothing (peeked at
                                    unlocked: do_read) */
        struct lower_entry lower_entry; /* lazy_lower: the lower entry opened, the handle's own copy
                             (the node's may go with a copy-up meanwhile) */
        _Atomic int refs;               /* the open file, plus each read replying from buf */
        char *buf; /* control files and small blobs: the content, freed only with
                      the handle (reads reply from it unlocked); dirs: unused */
        size_t len;
        struct cow_dirent *ents; /* dirs: a snapshot, in cookie order (ops-entry.c) */
        bool listed;
        size_t n_ents;
        uint64_t gen; /* dirs: the node's list_gen that ents was read at */
        /* files: ws->handles (layers-online.c), under ws->handles_lock */
        struct handle *hprev, *hnext;
        bool tracked;
        int write_error; /* a checkpoint could not carry it to the new layer: writes fail */
        /* Made for one request on a connection that opens nothing
         * (ops_request_handle): writable ones were opened at this
         * checkpoint count, and a write finding another count retries. */
        bool per_request;
        uint64_t checkpoints;
};

/* loop.c: this thread has served a request before (fs_loop_settle_thread). */
extern __thread bool fs_loop_settled;
void fs_loop_settle_thread(void);

/* The connection a request came on (session.c); every handler asks it or
 * req_ws first, which also settles a thread of libfuse's io_uring rings on
 * its first request. */
static inline struct fs_conn *req_conn(fuse_req_t req)
{
        if (__builtin_expect(!fs_loop_settled, 0))
                fs_loop_settle_thread();
        return fuse_req_userdata(req);
}

/* The workspace a request is for. */
static inline struct fs_workspace *req_ws(fuse_req_t req)
{
        return req_conn(req)->ws;
}

/* The node ino names on the request's connection: FUSE_ROOT_ID is that
 * connection's root (a part's own on its connection), any other is the
 * node's address. */
static inline struct node *req_node(fuse_req_t req, fuse_ino_t ino)
{
        return ino == FUSE_ROOT_ID ? req_conn(req)->root : (struct node *)(uintptr_t)ino;
}

/*
 * The inode number n goes by in an entry sent to the kernel. Only the
 * root's is FUSE_ROOT_ID: a part's root is never an entry on its own
 * connection (no lookup of "." or ".."), and on the root's it is a child.
 */
static inline fuse_ino_t node_ino(struct fs_workspace *ws, struct node *n)
{
        return n == ws->root ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)n;
}

static inline struct handle *fi_handle(struct fuse_file_info *fi)
{
        return fi ? (struct handle *)(uintptr_t)fi->fh : NULL;
}

/* ops-common.c: what the handlers share */
/* The one constructor of a handle: no descriptor, no node yet; NULL out of memory. */
struct handle *handle_new(void);
/* Journal an operation on node n (path computed under the caller's ns_lock). */
int ops_journal(struct fs_workspace *ws, fuse_req_t req, enum journal_op op, struct node *n,
                const char *name, const struct journal_entry *extra);
/*
 * Owner and mode of an entry just made in p (fd: O_PATH or a dir's fd on
 * it): the caller's uid and gid (p's gid under a setgid p, whose subdirs
 * get setgid too), special bits and device type kept off the host (attr.c).
 */
int ops_settle_new(struct fs_workspace *ws, fuse_req_t req, struct node *p, int fd, mode_t type,
                   mode_t mode, dev_t rdev, mode_t *xbits);

/* ops-entry.c */
int ops_getattr(struct fs_workspace *ws, struct node *n, struct handle *h, struct stat *st);
void ops_fill_entry(struct fs_workspace *ws, struct node *n, const struct stat *st,
                    struct fuse_entry_param *e);
double ops_timeout(const struct node *n);
void ops_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void ops_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup);
void ops_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets);
void ops_getattr_req(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ops_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ops_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void ops_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                     struct fuse_file_info *fi);
void ops_releasedir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ops_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void ops_statfs(fuse_req_t req, fuse_ino_t ino);
void ops_readlink(fuse_req_t req, fuse_ino_t ino);

/* ops-handle.c: an open file's handle, and what the data handlers share */
/* Join ws->handles, which a checkpoint moves. */
void ops_handle_track(struct fs_workspace *ws, struct handle *h);
/* Free h now (no reference taken yet; NULL is a no-op). */
void ops_handle_free(struct fs_workspace *ws, struct handle *h);
/* Drop a reference; the last one frees h. */
void ops_handle_put(struct fs_workspace *ws, struct handle *h);
/* Before the first write through a handle: copy the data of a metacopy up. */
int ops_fill_before_write(struct fs_workspace *ws, struct node *n);
/* Truncate n's upper fd to size, the growth charged to the quota (n->lock taken). */
int ops_truncate_upper_fd(struct fs_workspace *ws, struct node *n, int fd, uint64_t size);
/* Have the kernel ask n's attributes again (its cached mode changed). */
void ops_kill_notify(struct fs_workspace *ws, struct node *n);
/* Drop n's set-uid/set-gid as the kernel asked, journalled. ns_lock held exclusively. */
int ops_kill_suidgid(struct fs_workspace *ws, fuse_req_t req, struct node *n);
/* Does this O_TRUNC open of the upper file fd ask that set-uid/set-gid be
 * dropped? With KILLPRIV_V2, as the kernel flagged it (loop.c); without it
 * (declined over io_uring, kept declined when the rings then failed to
 * start, or a kernel without it), as the kernel's rule would: the file has
 * a set-id bit and the caller lacks CAP_FSETID. */
bool ops_open_kills_suidgid(struct fs_workspace *ws, fuse_req_t req, int fd);

/* ops-open.c */
/*
 * The handle a request on an open file is served through, with a
 * reference the caller drops (ops_handle_put): fi's, or, where the
 * connection opens nothing (fh 0), one made for this request on n, for
 * writing if write (the data copied up first).
 */
int ops_request_handle(fuse_req_t req, struct node *n, struct fuse_file_info *fi, bool write,
                       struct handle **ret);
void ops_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ops_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                struct fuse_file_info *fi);
void ops_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
/* OPEN and FLUSH on a part's connection: ENOSYS, which the kernel remembers,
 * sending neither again on that connection (served as on the root's where
 * the kernel can't: fs_conn.no_open). */
void ops_open_part(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ops_flush_part(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);

/* ops-rw.c */
void ops_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void ops_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *bufv, off_t off,
                   struct fuse_file_info *fi);
void ops_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ops_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void ops_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
                   struct fuse_file_info *fi);
void ops_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi);

/* ops-attr.c */
void ops_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                 struct fuse_file_info *fi);

/* ops-ns.c */
void ops_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev);
void ops_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void ops_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name);
void ops_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname);
void ops_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void ops_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void ops_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                const char *newname, unsigned int flags);

/* ops-xattr.c */
void ops_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
                  int flags);
void ops_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void ops_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void ops_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);

/* admit.c: the FUSE handlers behind the journal's gate and the descriptors'
 * (admit.c): each refuses with EDQUOT once the journal was cut at its bound,
 * or with EMFILE to the sandbox once the daemon's descriptors reach the part
 * kept for the host, else calls the ops_* handler of the same name. */
void admit_lookup(fuse_req_t req, fuse_ino_t parent, const char *name);
void admit_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                   struct fuse_file_info *fi);
void admit_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev);
void admit_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void admit_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void admit_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void admit_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name);
void admit_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                  const char *newname, unsigned int flags);
void admit_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname);
void admit_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void admit_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                  struct fuse_file_info *fi);
void admit_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *bufv, off_t off,
                     struct fuse_file_info *fi);
void admit_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
                    size_t size, int flags);
void admit_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);
void admit_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
                     struct fuse_file_info *fi);

/* shed.c: drop cached entries (the kernel's) of nodes holding descriptors
 * when too many are open. init after RLIMIT_NOFILE is raised; start once
 * the session serves; kick with itable_lock held; stop before it goes. */
void shed_init(struct fs_workspace *ws);
int shed_start(struct fs_workspace *ws);
void shed_kick(struct fs_workspace *ws);
/* Too many descriptors may be open for more nodes to be made at no one's
 * asking (readdirplus); kicks a round. Takes itable_lock. */
bool shed_short(struct fs_workspace *ws);
/* After replying with a new entry: while short, this worker has the kernel
 * drop a few unused entries before it takes another request, so that a
 * stream of lookups cannot outrun the rounds. Holding no lock. */
void shed_repay(struct fs_workspace *ws);
/*
 * A file with several names has a kernel entry per name it was handed out
 * by, and any one of them keeps the node and its descriptor; shed.c knows
 * one name, the node's. So an entry handed out by another name, or a name
 * the node stops going by (link, rename), is dropped right after the reply
 * (it lives on only while in use). shed_stale_is: parent/name is n's own
 * name (nothing to drop). keep (ns_lock held): remember n's name now.
 * drop (after replying, holding no lock): have the shed thread drop it
 * (a worker would wait for the parent's lock, which the syscall that
 * looked the name up may hold while it waits for a worker).
 */
struct shed_stale {
        struct node *parent; /* a reference held */
        char *name;
};
bool shed_stale_is(const struct node *n, const struct node *parent, const char *name);
void shed_stale_keep(struct fs_workspace *ws, struct node *n, struct shed_stale *s);
void shed_stale_drop(struct fs_workspace *ws, struct shed_stale *s);
/* An operation ran out of descriptors: a round now. Holding no lock. */
void shed_wake(struct fs_workspace *ws);
/* May a request of the caller pid make the daemon hold one more
 * descriptor? 0, or -EMFILE for a caller in the sandbox past shed.cap. */
int shed_admit(struct fs_workspace *ws, pid_t pid, bool handle);
void shed_stop(struct fs_workspace *ws);

/* loop.c: serve se until it is unmounted or stopped by a signal */
int fs_loop_run(struct fuse_session *se, unsigned max_workers, void (*after_init)(void *),
                void *arg);
/* A handler about to wait for something another request must first end (a
 * directory lock the kernel holds for it): another worker reads meanwhile. */
void fs_loop_hand_on(void);
/* Is this thread one of the loop's workers (not one of libfuse's io_uring
 * ring threads, which serve their queue in order and may not wait for a
 * request queued behind them)? */
bool fs_loop_serving(void);
/* Did the kernel ask, in the request this thread is serving, that set-uid
 * and set-gid be dropped (FUSE_WRITE_KILL_SUIDGID on a WRITE,
 * FUSE_OPEN_KILL_SUIDGID on an OPEN)? libfuse 3.18 passes neither flag to
 * the handlers, so the loop reads them from the request itself. */
bool fs_loop_kill_suidgid(void);
