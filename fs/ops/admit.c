/* SPDX-License-Identifier: MIT */
/*
 * admit.c: the journal's gate in front of every mutating request.
 *
 * The journal records each operation after it took effect (ops-*.c). Once
 * the journal has reached its bound ([limits] journal) and was cut, an
 * operation could no longer be recorded, so it must not happen at all: these
 * wrappers, installed in the ops table (session.c), refuse it with EDQUOT
 * before the handler runs. Reads, lookups and listings are never gated by
 * the journal.
 *
 * The second gate is the daemon's descriptors (shed.c, shed_admit): every
 * request that may leave the daemon holding one more (a lookup makes a
 * node, an open a handle, a change a copied-up node) is refused with
 * EMFILE to a caller in the sandbox once the count reaches the part kept
 * for the host, so that the agent can never stop the host's review.
 */
#include <errno.h>
#include <fcntl.h>

#include "ops.h"

static bool fds_refused(fuse_req_t req, bool handle)
{
        if (shed_admit(req_ws(req), fuse_req_ctx(req)->pid, handle) == 0)
                return false;
        fuse_reply_err(req, EMFILE);
        return true;
}

static bool journal_refused(fuse_req_t req)
{
        if (journal_admit(req_ws(req)->journal) == 0)
                return false;
        fuse_reply_err(req, EDQUOT);
        return true;
}

static bool refused(fuse_req_t req)
{
        return journal_refused(req) || fds_refused(req, false);
}

void admit_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
        if (!fds_refused(req, false))
                ops_lookup(req, parent, name);
}

void admit_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set,
                   struct fuse_file_info *fi)
{
        if (!refused(req))
                ops_setattr(req, ino, attr, to_set, fi);
}

void admit_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
        if (!refused(req))
                ops_mknod(req, parent, name, mode, rdev);
}

void admit_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
        if (!refused(req))
                ops_mkdir(req, parent, name, mode);
}

void admit_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
        if (!refused(req))
                ops_unlink(req, parent, name);
}

void admit_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
        if (!refused(req))
                ops_rmdir(req, parent, name);
}

void admit_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
        if (!refused(req))
                ops_symlink(req, link, parent, name);
}

void admit_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                  const char *newname, unsigned int flags)
{
        if (!refused(req))
                ops_rename(req, parent, name, newparent, newname, flags);
}

void admit_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
        if (!refused(req))
                ops_link(req, ino, newparent, newname);
}

/* Opening for writing only prepares a copy-up; O_TRUNC changes the file. */
void admit_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
        if ((fi->flags & O_TRUNC) && journal_refused(req))
                return;
        if (!fds_refused(req, true))
                ops_open(req, ino, fi);
}

void admit_create(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode,
                  struct fuse_file_info *fi)
{
        if (!journal_refused(req) && !fds_refused(req, true))
                ops_create(req, parent, name, mode, fi);
}

void admit_write_buf(fuse_req_t req, fuse_ino_t ino, struct fuse_bufvec *bufv, off_t off,
                     struct fuse_file_info *fi)
{
        if (!refused(req))
                ops_write_buf(req, ino, bufv, off, fi);
}

void admit_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value,
                    size_t size, int flags)
{
        if (!refused(req))
                ops_setxattr(req, ino, name, value, size, flags);
}

void admit_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
        if (!refused(req))
                ops_removexattr(req, ino, name);
}

void admit_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset, off_t length,
                     struct fuse_file_info *fi)
{
        if (!refused(req))
                ops_fallocate(req, ino, mode, offset, length, fi);
}
