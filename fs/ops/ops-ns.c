/* SPDX-License-Identifier: MIT */
/*
 * ops-ns.c: FUSE handlers that change the namespace of a copy-on-write
 * part: mknod, mkdir, symlink, link, unlink, rmdir, rename (with
 * RENAME_NOREPLACE and RENAME_EXCHANGE).
 *
 * A name that still exists in the lower layer is hidden by a whiteout in
 * the parent's sidecar; a new directory made where the lower had one is
 * opaque; a renamed directory keeps its lower as an "origin" redirect, so
 * renaming a lower directory copies nothing and never fails with EXDEV.
 * A device node is an empty placeholder file on the host (attr.c): the
 * daemon never makes a real one. A removed entry's node keeps its upper
 * inode (or lower entry) for whoever still has it open.
 * Each handler holds ws->ns_lock exclusively and replies once.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ops.h"
#include "lib/util.h"

static int check_parent(struct node *p)
{
        if (p->kind == NODE_MIRROR || p->kind == NODE_SYNTH || p->kind == NODE_CTL)
                return -EROFS;
        if (!S_ISDIR(p->type))
                return -ENOTDIR;
        return 0;
}

static int check_name(const char *name, char en[static 256])
{
        if (strnlen(name, 256) > 255)
                return -ENAMETOOLONG;
        if (!fs_name_valid(name))
                return -EINVAL;
        return upper_name_escape(name, en);
}

/* Does name exist in the merged view of p? 1 yes, 0 no; *ret gets a lookup when 1. */
static int exists(struct fs_workspace *ws, struct node *p, const char *name, struct node **ret)
{
        int r = cow_lookup(ws, p, name, ret);
        if (r == -ENOENT)
                return 0;
        return r < 0 ? r : 1;
}

static void reply_entry(fuse_req_t req, struct fs_workspace *ws, struct node *n, int r)
{
        struct fuse_entry_param e;
        struct stat st;
        if (r == 0) {
                pthread_rwlock_rdlock(&ws->ns_lock);
                r = ops_getattr(ws, n, NULL, &st);
                pthread_rwlock_unlock(&ws->ns_lock);
        }
        if (r < 0) {
                if (n)
                        node_forget(ws, n, 1);
                fuse_reply_err(req, -r);
                return;
        }
        ops_fill_entry(ws, n, &st, &e);
        fuse_reply_entry(req, &e);
        shed_repay(ws);
}

/* Make a node for an entry just created in p's upper dir; takes fd (see make_entry). */
static int new_node(struct fs_workspace *ws, struct node *p, const char *name, mode_t type, int fd,
                    mode_t xbits, struct node **ret)
{
        struct stat st;
        struct node *n;
        if (fstat(fd, &st) < 0) {
                int r = negative_errno();
                safe_close(fd);
                return r;
        }
        n = node_new(ws, NODE_COW, type, upper_ino(&st));
        if (!n || !(n->name = strdup(name))) {
                if (n)
                        node_free(n);
                safe_close(fd);
                return -ENOMEM;
        }
        n->parent = p;
        n->layer = p->layer;
        n->upper = true;
        if (S_ISDIR(type)) {
                n->opaque = true;
                n->ufd = fd;
                n->xbits = xbits;
        } else {
                n->hfd = fd;
        }
        *ret = node_insert_new(ws, n);
        return 0;
}

/* Common start of every "make a new name" op. ns_lock held. */
static int prepare_new(struct fs_workspace *ws, struct node *p, const char *name, char en[256],
                       mode_t type)
{
        struct node *old = NULL;
        json_t *rec = NULL;
        int r;

        assert_rwlocked(&ws->ns_lock);
        r = check_parent(p);
        if (r < 0)
                return r;
        r = check_name(name, en);
        if (r < 0)
                return r;
        r = exists(ws, p, name, &old);
        if (r < 0)
                return r;
        if (r > 0) {
                node_forget(ws, old, 1);
                return -EEXIST;
        }
        r = copyup_dir(ws, p);
        if (r < 0)
                return r;
        r = quota_charge_files(ws, 1);
        if (r < 0)
                return r;
        /* A new dir hides whatever the lower had there; a file simply shadows it. */
        if (S_ISDIR(type))
                rec = json_pack("{s:b}", "opaque", 1);
        else if (S_ISCHR(type) || S_ISBLK(type))
                rec = json_object();
        r = rec || (!S_ISDIR(type) && !S_ISCHR(type) && !S_ISBLK(type)) ? 0 : -ENOMEM;
        if (r == 0)
                r = upper_rec_add_type(rec, type);
        if (r == 0)
                r = upper_meta_set_rec(p, name, rec);
        json_decref(rec);
        if (r == 0)
                r = upper_meta_set_whiteout(p, name, false);
        if (r < 0)
                quota_refund_files(ws, 1);
        return r;
}

/* Failed attempts are journaled too, with their errno: a reviewer sees what was tried. */
static void journal_failure(struct fs_workspace *ws, fuse_req_t req, enum journal_op op,
                            struct node *p, const char *name, const char *path2, int r)
{
        if (r < 0 && p->kind == NODE_COW)
                (void)ops_journal(
                        ws, req, op, p, name,
                        &(struct journal_entry){.path2 = path2, .result = r, .uid = -1, .gid = -1});
}

/*
 * Make the entry en in p's upper dir (ns_lock held, prepare_new done):
 * *ret_fd is the new inode's fd (a dir's O_RDONLY fd, else O_PATH) with its
 * owner and mode settled. A device node is built under a temporary name and
 * renamed into place, so its name never shows a half-made placeholder.
 */
static int make_entry(struct fs_workspace *ws, fuse_req_t req, struct node *p, const char *en,
                      mode_t mode, dev_t rdev, const char *link, int *ret_fd, mode_t *xbits)
{
        mode_t type = mode & S_IFMT;
        bool dev = S_ISCHR(type) || S_ISBLK(type);
        const char *at = dev ? UPPER_PREFIX "tmp.dev" : en;
        _cleanup_close_ int fd = -1;
        uint64_t reserved = 0;
        int r;

        assert_rwlocked(&ws->ns_lock);
        *xbits = 0;
        if (dev) {
                (void)unlinkat(p->ufd, at, 0); /* left by a crash */
                fd = openat(p->ufd, at, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0);
                r = fd < 0 ? negative_errno() : 0;
                fd = safe_close(fd);
        } else if (S_ISDIR(type)) {
                /* The new directory's own block (quota.c), settled below. */
                reserved = QUOTA_DIR_BLOCK;
                r = quota_charge_bytes(ws, reserved);
                if (r == 0 && mkdirat(p->ufd, en, mode & 01777) < 0) {
                        r = negative_errno();
                        quota_refund_bytes(ws, reserved);
                }
        } else if (S_ISLNK(type)) {
                /* The target is stored verbatim and never resolved by the daemon;
                 * it costs its length or its block (quota.c), settled below. */
                reserved = (strlen(link) + 4095) / 4096 * 4096;
                r = quota_charge_bytes(ws, reserved);
                if (r == 0 && symlinkat(link, p->ufd, en) < 0) {
                        r = negative_errno();
                        quota_refund_bytes(ws, reserved);
                }
        } else {
                r = mknodat(p->ufd, en, type | (mode & 0777), 0) < 0 ? negative_errno() : 0;
        }
        if (r < 0)
                return r;
        fd = openat(p->ufd, at,
                    (S_ISDIR(type) ? O_RDONLY | O_DIRECTORY : O_PATH) | O_NOFOLLOW | O_CLOEXEC);
        r = fd < 0 ? negative_errno() : ops_settle_new(ws, req, p, fd, type, mode, rdev, xbits);
        if (r == 0 && dev && renameat2(p->ufd, at, p->ufd, en, RENAME_NOREPLACE) < 0)
                r = negative_errno();
        if (r < 0) {
                (void)unlinkat(p->ufd, at, S_ISDIR(type) ? AT_REMOVEDIR : 0);
                quota_refund_bytes(ws, reserved);
                return r;
        }
        if (S_ISDIR(type))
                quota_settle(ws, reserved, 0, quota_dir_cost(fd));
        else if (reserved)
                quota_settle_fd(ws, fd, reserved, 0);
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* mknod, mkdir, symlink: make name in p and reply with its entry. */
static void do_make(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev,
                    const char *link, enum journal_op op)
{
        struct fs_workspace *ws = req_ws(req);
        struct node *p = req_node(req, parent), *n = NULL;
        mode_t type = mode & S_IFMT, xbits = 0;
        char en[256];
        int fd = -1, r;

        pthread_rwlock_wrlock(&ws->ns_lock);
        fs_dir_changed(p);
        r = quota_dir_begin(ws, p, QUOTA_DIR_BLOCK); /* the name's room in p */
        if (r == 0) {
                r = prepare_new(ws, p, name, en, type);
                if (r < 0)
                        quota_dir_end(ws, p);
        }
        if (r == 0) {
                r = make_entry(ws, req, p, en, mode, rdev, link, &fd, &xbits);
                quota_dir_end(ws, p);
                if (r < 0) {
                        (void)upper_meta_set_rec(p, name, NULL);
                        quota_refund_files(ws, 1);
                } else {
                        r = new_node(ws, p, name, type, fd, xbits, &n);
                }
                if (r == 0)
                        r = ops_journal(ws, req, op, p, name,
                                        &(struct journal_entry){.mode = S_ISLNK(type) ? 0 : mode,
                                                                .path2 = link,
                                                                .uid = -1,
                                                                .gid = -1});
        }
        journal_failure(ws, req, op, p, name, link, r);
        pthread_rwlock_unlock(&ws->ns_lock);
        reply_entry(req, ws, n, r);
}

void ops_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
        struct fs_workspace *ws = req_ws(req);
        struct node *p = req_node(req, parent);
        mode_t type = mode & S_IFMT;
        int r = 0;

        if (!S_ISFIFO(type) && !S_ISREG(type) && !S_ISSOCK(type) && !S_ISCHR(type) &&
            !S_ISBLK(type))
                r = -EINVAL;
        else if ((S_ISCHR(type) || S_ISBLK(type)) && p->kind == NODE_COW && !ws->xattr_ok)
                r = -EPERM; /* nowhere to keep it off the host (attr.c) */
        if (r < 0) {
                pthread_rwlock_rdlock(&ws->ns_lock);
                journal_failure(ws, req, JOURNAL_MKNOD, p, name, NULL, r);
                pthread_rwlock_unlock(&ws->ns_lock);
                fuse_reply_err(req, p->kind == NODE_COW ? -r : EROFS);
                return;
        }
        do_make(req, parent, name, mode, rdev, NULL, JOURNAL_MKNOD);
}

void ops_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
        do_make(req, parent, name, S_IFDIR | (mode & 07777), 0, NULL, JOURNAL_MKDIR);
}

void ops_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
        if (strnlen(link, PATH_MAX) >= PATH_MAX) {
                fuse_reply_err(req, ENAMETOOLONG);
                return;
        }
        do_make(req, parent, name, S_IFLNK | 0777, 0, link, JOURNAL_SYMLINK);
}

void ops_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
        struct fs_workspace *ws = req_ws(req);
        struct node *n = req_node(req, ino), *p = req_node(req, newparent);
        struct shed_stale stale = {0};
        char en[256], srcen[256];
        bool begun = false;
        json_t *rec;
        int r;

        if (n->kind != NODE_COW || p->kind != NODE_COW) {
                fuse_reply_err(req, n->kind == NODE_COW && p->kind == NODE_COW ? EXDEV : EROFS);
                return;
        }
        if (n->layer != p->layer || S_ISDIR(n->type)) {
                fuse_reply_err(req, S_ISDIR(n->type) ? EPERM : EXDEV);
                return;
        }
        pthread_rwlock_wrlock(&ws->ns_lock);
        fs_dir_changed(p);
        r = quota_dir_begin(ws, p, QUOTA_DIR_BLOCK); /* the name's room in p */
        if (r < 0)
                goto out;
        begun = true;
        r = copyup(ws, n, COPYUP_DATA);
        if (r == 0)
                r = prepare_new(ws, p, newname, en, n->type);
        if (r < 0)
                goto out;
        r = upper_name_escape(n->name, srcen);
        if (r < 0)
                goto refund;
        rec = json_pack("{s:I}", "ino", (json_int_t)n->ino);
        r = rec ? upper_rec_add_type(rec, n->type) : -ENOMEM;
        if (r == 0)
                r = upper_meta_set_rec(p, newname, rec);
        json_decref(rec);
        if (r < 0)
                goto refund;
        if (n->hfd >= 0 && geteuid() == 0) {
                r = linkat(n->hfd, "", p->ufd, en, AT_EMPTY_PATH);
        } else if (n->indexed) {
                /* Its own name may lie below (links.c): the inode itself. */
                char fdp[FS_FD_PATH_MAX];
                fs_fd_path(n->hfd, fdp);
                r = linkat(AT_FDCWD, fdp, p->ufd, en, AT_SYMLINK_FOLLOW);
        } else {
                r = linkat(n->parent->ufd, srcen, p->ufd, en, 0);
        }
        if (r < 0) {
                r = negative_errno();
                (void)upper_meta_set_rec(p, newname, NULL);
                goto refund;
        }
        pthread_mutex_lock(&ws->itable_lock);
        n->nlookup++;
        pthread_mutex_unlock(&ws->itable_lock);
        {
                _cleanup_free_ char *dir = node_path(p), *to = NULL;
                if (!dir || asprintf(&to, "%s/%s", dir, newname) < 0)
                        to = NULL;
                r = ops_journal(ws, req, JOURNAL_LINK, n, NULL,
                                &(struct journal_entry){.path2 = to, .uid = -1, .gid = -1});
        }
        /* The newest name is the one the node goes by from now on: `link
         * tmp final` then `unlink tmp` (git's objects) leaves no other
         * name to drop its entry by (shed.c). The old name's entry was
         * cached for long, when the file had one name: dropped below. */
        shed_stale_keep(ws, n, &stale);
        (void)node_set_parent(ws, n, p, newname);
        goto out;
refund:
        quota_refund_files(ws, 1);
out:
        if (begun)
                quota_dir_end(ws, p);
        pthread_rwlock_unlock(&ws->ns_lock);
        reply_entry(req, ws, r == 0 ? n : NULL, r);
        shed_stale_drop(ws, &stale);
}

/* Nobody holds it open any more: the space of a removed file comes back. */
static void reclaim_if_closed(struct fs_workspace *ws, struct node *n)
{
        unsigned refs;
        pthread_mutex_lock(&ws->itable_lock);
        refs = n->refs;
        pthread_mutex_unlock(&ws->itable_lock);
        if (refs == 0 && !fs_node_opens_unseen(ws, n))
                quota_reclaim(ws, n);
}

/* Remove the upper entry of child c (name in p) and hide the lower one. ns_lock held. */
static int remove_entry(struct fs_workspace *ws, struct node *p, const char *name, const char *en,
                        struct node *c)
{
        bool last = true, alias = false;
        int has;

        assert_rwlocked(&ws->ns_lock);
        has = cow_lower_has(ws, p, name);
        if (has < 0)
                return has;
        if (has) {
                int r = copyup_dir(ws, p);
                if (r < 0)
                        return r;
        }
        if (copyup_has_names_below(c)) {
                /* Its other names stay: one copy for them all, counted (links.c). */
                int r = copyup(ws, c, COPYUP_DATA);
                if (r < 0)
                        return r;
        }
        if (c->upper) {
                int r = links_name_gone(ws, p, en, c, &alias);
                if (r < 0)
                        return r;
        }
        if (alias) {
                /* A name below of an indexed file: hidden, one alias less. */
                last = links_view_nlink(ws, c) == 0;
        } else if (c->upper) {
                struct stat st;
                bool dir = S_ISDIR(c->type);
                if (fstatat(p->ufd, en, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return negative_errno();
                /* Open files keep reaching the inode through the node's pinned fd. */
                if (!dir)
                        (void)upper_node_pin(c);
                /* A directory's attributes, blocks and sidecar go with it
                 * now (a file's when it is reclaimed, once nobody has it open). */
                uint64_t xattrs = dir ? quota_xattrs_of(c->ufd) + quota_dir_cost(c->ufd) : 0;
                if (dir)
                        (void)upper_dir_clear_markers(c->ufd);
                if (unlinkat(p->ufd, en, dir ? AT_REMOVEDIR : 0) < 0)
                        return negative_errno();
                quota_refund_files(ws, 1);
                quota_refund_bytes(ws, xattrs);
                /* Another hard link keeps the node alive (reached through its pinned fd). */
                last = dir || (c->indexed ? links_view_nlink(ws, c) == 0 : st.st_nlink <= 1);
        }
        (void)upper_meta_set_rec(p, name, NULL);
        if (has) {
                int r = upper_meta_set_whiteout(p, name, true);
                if (r < 0)
                        return r;
        }
        if (last) {
                links_drop_if_gone(ws, c);
                node_mark_unlinked(ws, c);
                reclaim_if_closed(ws, c);
        } else if (c->parent == p && c->name && streq(c->name, name)) {
                pthread_mutex_lock(&ws->itable_lock);
                c->name_stale = true;
                pthread_mutex_unlock(&ws->itable_lock);
        }
        return 0;
}

static bool dir_empty(struct fs_workspace *ws, struct node *d, int *ret)
{
        struct cow_dirent *ents = NULL;
        size_t n = 0;
        *ret = cow_list(ws, d, &ents, &n);
        fs_dirents_free(ents, n);
        return *ret == 0 && n == 0;
}

static void do_remove(fuse_req_t req, fuse_ino_t parent, const char *name, bool dir)
{
        struct fs_workspace *ws = req_ws(req);
        struct node *p = req_node(req, parent), *c = NULL;
        char en[256];
        int r;

        r = check_parent(p);
        if (r == 0)
                r = check_name(name, en);
        if (r < 0) {
                fuse_reply_err(req, -r);
                return;
        }
        pthread_rwlock_wrlock(&ws->ns_lock);
        fs_dir_changed(p);
        r = cow_lookup(ws, p, name, &c);
        if (r < 0)
                goto out;
        if (dir && !S_ISDIR(c->type))
                r = -ENOTDIR;
        else if (!dir && S_ISDIR(c->type))
                r = -EISDIR;
        else if (dir && !dir_empty(ws, c, &r))
                r = r < 0 ? r : -ENOTEMPTY;
        if (r == 0)
                r = remove_entry(ws, p, name, en, c);
        if (r == 0)
                r = ops_journal(ws, req, dir ? JOURNAL_RMDIR : JOURNAL_UNLINK, p, name, NULL);
        else
                journal_failure(ws, req, dir ? JOURNAL_RMDIR : JOURNAL_UNLINK, p, name, NULL, r);
out:
        pthread_rwlock_unlock(&ws->ns_lock);
        if (c)
                node_forget(ws, c, 1);
        fuse_reply_err(req, -r);
}

void ops_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
        do_remove(req, parent, name, false);
}

void ops_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
        do_remove(req, parent, name, true);
}

/* The sidecar record an entry carries to a new name. */
static json_t *moved_rec(struct node *n)
{
        json_t *rec = json_pack("{s:I}", "ino", (json_int_t)n->ino);
        int r = 0;
        if (!rec)
                return NULL;
        r = upper_rec_add_type(rec, n->type);
        if (r == 0 && S_ISDIR(n->type)) {
                if (n->has_lower)
                        r = upper_json_set_name(rec, "origin", lower_entry_vpath(&n->lower));
                else
                        r = json_object_set_new(rec, "opaque", json_true());
        } else if (r == 0 && n->metacopy) {
                r = json_object_set_new(rec, "metacopy", json_true());
                if (r == 0)
                        r = upper_json_set_name(rec, "origin", lower_entry_vpath(&n->lower));
        }
        if (r < 0) {
                json_decref(rec);
                return NULL;
        }
        return rec;
}

static int bring_up(struct fs_workspace *ws, struct node *n)
{
        /* A rename moves metadata only: files become metacopies, dirs redirects. */
        return copyup(ws, n, S_ISREG(n->type) ? COPYUP_META : COPYUP_DATA);
}

static int do_rename(struct fs_workspace *ws, fuse_req_t req, struct node *p, const char *name,
                     struct node *np, const char *newname, unsigned flags,
                     struct shed_stale stale[static 2])
{
        struct node *src = NULL, *dst = NULL;
        char en[256], nen[256];
        json_t *srec = NULL, *drec = NULL;
        int r;

        r = check_parent(p);
        if (r == 0)
                r = check_parent(np);
        if (r == 0 && p->layer != np->layer)
                r = -EXDEV;
        if (r == 0)
                r = check_name(name, en);
        if (r == 0)
                r = check_name(newname, nen);
        if (r < 0)
                return r;
        if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE))
                return -EINVAL;
        r = cow_lookup(ws, p, name, &src);
        if (r < 0)
                return r;
        r = exists(ws, np, newname, &dst);
        if (r < 0)
                goto out;
        if (dst && (flags & RENAME_NOREPLACE)) {
                r = -EEXIST;
                goto out;
        }
        if (!dst && (flags & RENAME_EXCHANGE)) {
                r = -ENOENT;
                goto out;
        }
        if (dst == src) {
                r = 0; /* same file: POSIX says do nothing */
                goto out;
        }
        if (dst && !(flags & RENAME_EXCHANGE)) {
                if (S_ISDIR(src->type) && !S_ISDIR(dst->type)) {
                        r = -ENOTDIR;
                        goto out;
                }
                if (!S_ISDIR(src->type) && S_ISDIR(dst->type)) {
                        r = -EISDIR;
                        goto out;
                }
                if (S_ISDIR(dst->type) && !dir_empty(ws, dst, &r)) {
                        r = r < 0 ? r : -ENOTEMPTY;
                        goto out;
                }
        }
        r = copyup_dir(ws, p);
        if (r == 0)
                r = copyup_dir(ws, np);
        if (r == 0)
                r = bring_up(ws, src);
        if (r == 0 && dst && ((flags & RENAME_EXCHANGE) || copyup_has_names_below(dst)))
                r = bring_up(ws, dst);
        /* Names of indexed files that lie below become names here first (links.c). */
        if (r == 0)
                r = links_materialize(ws, p, name, en, src);
        if (r == 0 && dst)
                r = links_materialize(ws, np, newname, nen, dst);
        if (r < 0)
                goto out;
        srec = moved_rec(src);
        if (!srec) {
                r = -ENOMEM;
                goto out;
        }
        if (flags & RENAME_EXCHANGE) {
                drec = moved_rec(dst);
                if (!drec) {
                        r = -ENOMEM;
                        goto out;
                }
                if (renameat2(p->ufd, en, np->ufd, nen, RENAME_EXCHANGE) < 0) {
                        r = negative_errno();
                        goto out;
                }
                r = upper_meta_set_rec(np, newname, srec);
                if (r == 0)
                        r = upper_meta_set_rec(p, name, drec);
                if (r < 0)
                        goto out;
                if (!shed_stale_is(src, p, name))
                        shed_stale_keep(ws, src, &stale[0]);
                if (!shed_stale_is(dst, np, newname))
                        shed_stale_keep(ws, dst, &stale[1]);
                r = node_set_parent(ws, src, np, newname);
                if (r == 0)
                        r = node_set_parent(ws, dst, p, name);
        } else {
                int had_lower = cow_lower_has(ws, p, name);
                if (had_lower < 0) {
                        r = had_lower;
                        goto out;
                }
                bool dst_last = true;
                uint64_t dst_xattrs = 0; /* a replaced directory's, refunded with it */
                if (dst && dst->upper) {
                        struct stat st;
                        if (!S_ISDIR(dst->type))
                                (void)upper_node_pin(dst); /* for whoever has it open */
                        if (fstatat(np->ufd, nen, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                                quota_refund_files(ws, 1);
                                /* Another hard link keeps the replaced file alive. */
                                dst_last = S_ISDIR(st.st_mode) ||
                                           (dst->indexed ? links_view_nlink(ws, dst) <= 1
                                                         : st.st_nlink <= 1);
                        }
                        if (S_ISDIR(dst->type)) {
                                dst_xattrs = quota_xattrs_of(dst->ufd) + quota_dir_cost(dst->ufd);
                                (void)upper_dir_clear_markers(dst->ufd);
                        }
                }
                r = upper_meta_set_rec(np, newname, srec);
                if (r == 0)
                        r = upper_meta_set_whiteout(np, newname, false);
                if (r < 0)
                        goto out;
                if (renameat(p->ufd, en, np->ufd, nen) < 0) {
                        r = negative_errno();
                        (void)upper_meta_set_rec(np, newname, NULL);
                        goto out;
                }
                (void)upper_meta_set_rec(p, name, NULL);
                if (had_lower)
                        (void)upper_meta_set_whiteout(p, name, true);
                quota_refund_bytes(ws, dst_xattrs);
                if (!shed_stale_is(src, p, name))
                        shed_stale_keep(ws, src, &stale[0]);
                r = node_set_parent(ws, src, np, newname);
                if (dst && dst_last) {
                        links_drop_if_gone(ws, dst);
                        node_mark_unlinked(ws, dst);
                        reclaim_if_closed(ws, dst);
                }
        }
        if (r == 0) {
                _cleanup_free_ char *to = node_path(src);
                r = ops_journal(ws, req, JOURNAL_RENAME, p, name,
                                &(struct journal_entry){.path2 = to, .uid = -1, .gid = -1});
        }
out:
        json_decref(srec);
        json_decref(drec);
        if (src)
                node_forget(ws, src, 1);
        if (dst)
                node_forget(ws, dst, 1);
        return r;
}

void ops_rename(fuse_req_t req, fuse_ino_t parent, const char *name, fuse_ino_t newparent,
                const char *newname, unsigned int flags)
{
        struct fs_workspace *ws = req_ws(req);
        struct shed_stale stale[2] = {0};
        int r;
        pthread_rwlock_wrlock(&ws->ns_lock);
        fs_dir_changed(req_node(req, parent));
        fs_dir_changed(req_node(req, newparent));
        /* The name's room in the new parent; the old one's sidecar changes too. */
        r = quota_dir_begin(ws, req_node(req, newparent), QUOTA_DIR_BLOCK);
        if (r == 0) {
                (void)quota_dir_begin(ws, req_node(req, parent), 0);
                r = do_rename(ws, req, req_node(req, parent), name, req_node(req, newparent),
                              newname, flags, stale);
                quota_dir_end(ws, req_node(req, parent));
                quota_dir_end(ws, req_node(req, newparent));
        }
        if (r < 0 && r != -ENOENT) {
                struct node *np = req_node(req, newparent);
                _cleanup_free_ char *dir = np->kind == NODE_COW ? node_path(np) : NULL, *to = NULL;
                if (dir && asprintf(&to, "%s/%s", dir, newname) < 0)
                        to = NULL;
                journal_failure(ws, req, JOURNAL_RENAME, req_node(req, parent), name, to, r);
        }
        pthread_rwlock_unlock(&ws->ns_lock);
        fuse_reply_err(req, -r);
        shed_stale_drop(ws, &stale[0]);
        shed_stale_drop(ws, &stale[1]);
}
