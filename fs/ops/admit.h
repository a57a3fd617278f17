/* SPDX-License-Identifier: MIT */
/*
 * admit.h: the FUSE handlers behind the journal's gate and the descriptors'
 * (admit.c): each refuses with EDQUOT once the journal was cut at its bound,
 * or with EMFILE to the sandbox once the daemon's descriptors reach the part
 * kept for the host, else calls the ops_* handler of the same name.
 */
#pragma once

#include "core.h"

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
