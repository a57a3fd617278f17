/* SPDX-License-Identifier: MIT */
/*
 * ops-common.c: what the handlers of ops-entry.c, ops-open.c, ops-rw.c,
 * ops-attr.c, ops-ns.c and ops-xattr.c share: who is asking (the journal's
 * caller), the journal entry of a change, the one constructor of a file
 * handle, and the owner and mode of a new entry. Here (and in ops-handle.c
 * for the open-file handle), so that no handler file calls another.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ops.h"
#include "lib/util.h"

/* Who is asking, for the journal and for ownership of new entries. */
static struct journal_caller ops_caller(fuse_req_t req)
{
        const struct fuse_ctx *c = fuse_req_ctx(req);
        const struct fs_workspace *ws = req_ws(req);
        /* Only the agent runs as the sandbox's host uid: nothing else on the host has it. */
        bool agent = ws->uid != ws->store_uid && c->uid == ws->uid;

        return (struct journal_caller){.pid = c->pid,
                                       .uid = c->uid,
                                       .gid = c->gid,
                                       .in_sandbox = agent,
                                       .sandbox_uid = agent ? ws->agent_uid : 0};
}

int ops_journal(struct fs_workspace *ws, fuse_req_t req, enum journal_op op, struct node *n,
                const char *name, const struct journal_entry *extra)
{
        struct journal_caller who = ops_caller(req);
        struct journal_entry e = extra ? *extra : (struct journal_entry){.uid = -1, .gid = -1};
        _cleanup_free_ char *dir = NULL, *path = NULL;
        int r;

        if (!ws->journal || n->kind != NODE_COW)
                return 0;
        dir = node_path(n);
        if (!dir)
                return -ENOMEM;
        if (name) {
                if (asprintf(&path, "%s%s%s", dir, streq(dir, "/") ? "" : "/", name) < 0)
                        return -ENOMEM;
        } else {
                path = TAKE_PTR(dir);
        }
        e.op = op;
        e.path = path;
        r = journal_append(ws->journal, &who, &e);
        /* EDQUOT: the journal reached its bound just now (admit.c refuses what follows). */
        return r == -EDQUOT ? r : r < 0 ? -EIO : 0;
}

struct handle *handle_new(void)
{
        struct handle *h = calloc(1, sizeof(*h));

        if (h)
                h->fd = h->lower_fd = h->stale_fd = -1;
        return h;
}

int ops_settle_new(struct fs_workspace *ws, fuse_req_t req, struct node *p, int fd, mode_t type,
                   mode_t mode, dev_t rdev, mode_t *xbits)
{
        const struct fuse_ctx *c = fuse_req_ctx(req);
        gid_t gid = fs_gid_store(ws, c->gid); /* as stored */
        gid_t shown_gid = c->gid;             /* as the caller sees it */
        bool dir = S_ISDIR(type);
        int r;

        if (p->xbits & S_ISGID) {
                /* A setgid directory hands its group down, and setgid to its subdirs. */
                struct stat pst;
                if (fstat(p->ufd, &pst) < 0)
                        return negative_errno();
                gid = pst.st_gid;
                owner_show(ws, p, p->ufd, &pst);
                shown_gid = pst.st_gid;
                if (dir)
                        mode |= S_ISGID;
        }
        if (geteuid() == 0) {
                uid_t uid = fs_uid_store(ws, c->uid);
                unsigned flags = owner_flags_for(ws, uid, c->uid, gid, shown_gid);

                if (fchownat(fd, "", uid, gid, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
                        return negative_errno();
                /* Root's own new file among the agent's: say so, or it shows as the agent's. */
                if (flags & (OWNER_ROOT_UID | OWNER_ROOT_GID)) {
                        r = owner_mark(ws, NULL, fd, flags);
                        if (r < 0)
                                return r;
                }
        }
        if (S_ISLNK(type))
                return 0;
        if (S_ISCHR(type) || S_ISBLK(type) ||
            (mode & (dir ? (mode_t)(S_ISUID | S_ISGID) : (mode_t)07000)))
                return attr_set_mode(ws, type, fd, mode, rdev, xbits);
        return 0;
}
