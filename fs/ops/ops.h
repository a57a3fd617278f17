/* SPDX-License-Identifier: MIT */
/*
 * ops.h: helpers shared by the FUSE handlers (ops-*.c).
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
        int fd;           /* files: the host fd (upper, lower data or mirror) */
        bool writable;    /* an upper fd opened for writing */
        bool is_upper;    /* fd is the node's upper file */
        int lower_fd;     /* reads of a metacopy opened for writing: the lower data */
        int stale_fd;     /* the lower fd replaced by the upper one, kept for reads in flight */
        bool lazy_lower;  /* lower data not opened yet: done at the first read, so opens served
                             from the page cache cost nothing */
        struct lent lent; /* lazy_lower: the lower entry opened, the handle's own copy (the
                             node's may go with a copy-up meanwhile) */
        _Atomic int refs; /* the open file, plus each read replying from buf */
        char *buf;        /* control files and small blobs: the content, freed only with
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
};

static inline struct fs_workspace *req_ws(fuse_req_t req)
{
        return fuse_req_userdata(req);
}

static inline struct node *ino_node(struct fs_workspace *ws, fuse_ino_t ino)
{
        return ino == FUSE_ROOT_ID ? ws->root : (struct node *)(uintptr_t)ino;
}

static inline fuse_ino_t node_ino(struct fs_workspace *ws, struct node *n)
{
        return n == ws->root ? FUSE_ROOT_ID : (fuse_ino_t)(uintptr_t)n;
}

static inline struct handle *fi_handle(struct fuse_file_info *fi)
{
        return fi ? (struct handle *)(uintptr_t)fi->fh : NULL;
}

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

/* ops-data.c */
void ops_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ops_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                struct fuse_file_info *fi);
void ops_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi);
void ops_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *bufv, off_t off,
                   struct fuse_file_info *fi);
void ops_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ops_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi);
void ops_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void ops_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                 struct fuse_file_info *fi);
void ops_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
                   struct fuse_file_info *fi);
void ops_lseek(fuse_req_t req, fuse_ino_t ino, off_t off, int whence, struct fuse_file_info *fi);

/* ops-ns.c */
void ops_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev);
void ops_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode);
void ops_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name);
void ops_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname);
void ops_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void ops_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void ops_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                const char *newname, unsigned int flags);

/*
 * Owner and mode of an entry just made in p (fd: O_PATH or a dir's fd on
 * it): the caller's uid and gid (p's gid under a setgid p, whose subdirs
 * get setgid too), special bits and device type kept off the host (attr.c).
 */
int ops_settle_new(struct fs_workspace *ws, fuse_req_t req, struct node *p, int fd, mode_t type,
                   mode_t mode, dev_t rdev, mode_t *xbits);

/* ops-xattr.c */
void ops_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
                  int flags);
void ops_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size);
void ops_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size);
void ops_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name);

/* Journal an operation on node n (path computed under the caller's ns_lock). */
int ops_journal(struct fs_workspace *ws, fuse_req_t req, enum journal_op op, struct node *n,
                const char *name, const struct journal_entry *extra);
