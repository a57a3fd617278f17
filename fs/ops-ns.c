/* SPDX-License-Identifier: MIT */
/*
 * ops-ns.c: FUSE handlers that change the namespace of a copy-on-write
 * part: mknod (FIFOs, sockets and regular files only), mkdir, symlink,
 * link, unlink, rmdir, rename (with RENAME_NOREPLACE and RENAME_EXCHANGE).
 *
 * A name that still exists in the lower layer is hidden by a whiteout in
 * the parent's sidecar; a new directory made where the lower had one is
 * opaque; a renamed directory keeps its lower as an "origin" redirect, so
 * renaming a lower directory copies nothing and never fails with EXDEV.
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
}

/* Make a node for an entry just created in p's upper dir. */
static int new_node(struct fs_workspace *ws, struct node *p, const char *name, const char *en,
                    struct node **ret)
{
        struct stat st;
        struct node *n;
        if (fstatat(p->ufd, en, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return negative_errno();
        n = node_new(ws, NODE_COW, st.st_mode, upper_ino(&st));
        if (!n || !(n->name = strdup(name))) {
                if (n)
                        node_free(n);
                return -ENOMEM;
        }
        n->parent = p;
        n->layer = p->layer;
        n->upper = true;
        if (S_ISDIR(st.st_mode)) {
                n->opaque = true;
                n->ufd = openat(p->ufd, en, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (n->ufd < 0) {
                        int r = negative_errno();
                        node_free(n);
                        return r;
                }
        } else {
                (void)upper_node_pin(n);
        }
        *ret = node_insert_new(ws, n);
        return 0;
}

/* Common start of every "make a new name" op. ns_lock held. */
static int prepare_new(struct fs_workspace *ws, struct node *p, const char *name, char en[256],
                       bool dir)
{
        struct node *old = NULL;
        json_t *rec = NULL;
        int r = check_parent(p);
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
        if (dir)
                rec = json_pack("{s:b}", "opaque", 1);
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

static void own(int dfd, const char *en, fuse_req_t req)
{
        const struct fuse_ctx *c = fuse_req_ctx(req);
        const struct fs_workspace *ws = req_ws(req);
        if (geteuid() == 0)
                (void)fchownat(dfd, en, fs_uid_store(ws, c->uid), fs_gid_store(ws, c->gid),
                               AT_SYMLINK_NOFOLLOW);
}

void ops_mknod(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode, dev_t rdev)
{
        struct fs_workspace *ws = req_ws(req);
        struct node *p = ino_node(ws, parent), *n = NULL;
        char en[256];
        int r;
        (void)rdev;

        /* No device nodes, ever: the daemon has host privileges. */
        if (!S_ISFIFO(mode) && !S_ISREG(mode) && !S_ISSOCK(mode)) {
                pthread_rwlock_rdlock(&ws->ns_lock);
                journal_failure(ws, req, JOURNAL_MKNOD, p, name, NULL, -EPERM);
                pthread_rwlock_unlock(&ws->ns_lock);
                fuse_reply_err(req, p->kind == NODE_COW ? EPERM : EROFS);
                return;
        }
        pthread_rwlock_wrlock(&ws->ns_lock);
        r = prepare_new(ws, p, name, en, false);
        if (r == 0) {
                if (mknodat(p->ufd, en, (mode & S_IFMT) | (mode & 0777), 0) < 0) {
                        r = negative_errno();
                        quota_refund_files(ws, 1);
                } else {
                        own(p->ufd, en, req);
                        r = new_node(ws, p, name, en, &n);
                        if (r == 0)
                                r = ops_journal(ws, req, JOURNAL_MKNOD, p, name,
                                                &(struct journal_entry){
                                                        .mode = mode, .uid = -1, .gid = -1});
                }
        }
        journal_failure(ws, req, JOURNAL_MKNOD, p, name, NULL, r);
        pthread_rwlock_unlock(&ws->ns_lock);
        reply_entry(req, ws, n, r);
}

void ops_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name, mode_t mode)
{
        struct fs_workspace *ws = req_ws(req);
        struct node *p = ino_node(ws, parent), *n = NULL;
        char en[256];
        int r;

        pthread_rwlock_wrlock(&ws->ns_lock);
        r = prepare_new(ws, p, name, en, true);
        if (r == 0) {
                if (mkdirat(p->ufd, en, mode & 0777) < 0) {
                        r = negative_errno();
                        quota_refund_files(ws, 1);
                } else {
                        own(p->ufd, en, req);
                        r = new_node(ws, p, name, en, &n);
                        if (r == 0)
                                r = ops_journal(ws, req, JOURNAL_MKDIR, p, name,
                                                &(struct journal_entry){
                                                        .mode = mode, .uid = -1, .gid = -1});
                }
        }
        journal_failure(ws, req, JOURNAL_MKDIR, p, name, NULL, r);
        pthread_rwlock_unlock(&ws->ns_lock);
        reply_entry(req, ws, n, r);
}

void ops_symlink(fuse_req_t req, const char *link, fuse_ino_t parent, const char *name)
{
        struct fs_workspace *ws = req_ws(req);
        struct node *p = ino_node(ws, parent), *n = NULL;
        char en[256];
        int r;

        if (strnlen(link, PATH_MAX) >= PATH_MAX) {
                fuse_reply_err(req, ENAMETOOLONG);
                return;
        }
        pthread_rwlock_wrlock(&ws->ns_lock);
        r = prepare_new(ws, p, name, en, false);
        if (r == 0) {
                /* The target is stored verbatim and never resolved by the daemon. */
                if (symlinkat(link, p->ufd, en) < 0) {
                        r = negative_errno();
                        quota_refund_files(ws, 1);
                } else {
                        own(p->ufd, en, req);
                        r = new_node(ws, p, name, en, &n);
                        if (r == 0)
                                r = ops_journal(ws, req, JOURNAL_SYMLINK, p, name,
                                                &(struct journal_entry){
                                                        .path2 = link, .uid = -1, .gid = -1});
                }
        }
        journal_failure(ws, req, JOURNAL_SYMLINK, p, name, link, r);
        pthread_rwlock_unlock(&ws->ns_lock);
        reply_entry(req, ws, n, r);
}

void ops_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent, const char *newname)
{
        struct fs_workspace *ws = req_ws(req);
        struct node *n = ino_node(ws, ino), *p = ino_node(ws, newparent);
        char en[256], srcen[256];
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
        r = copyup(ws, n, COPYUP_DATA);
        if (r == 0)
                r = prepare_new(ws, p, newname, en, false);
        if (r < 0)
                goto out;
        r = upper_name_escape(n->name, srcen);
        if (r < 0)
                goto refund;
        rec = json_pack("{s:I}", "ino", (json_int_t)n->ino);
        r = rec ? upper_meta_set_rec(p, newname, rec) : -ENOMEM;
        json_decref(rec);
        if (r < 0)
                goto refund;
        if (n->hfd >= 0 && geteuid() == 0)
                r = linkat(n->hfd, "", p->ufd, en, AT_EMPTY_PATH);
        else
                r = linkat(n->parent->ufd, srcen, p->ufd, en, 0);
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
        goto out;
refund:
        quota_refund_files(ws, 1);
out:
        pthread_rwlock_unlock(&ws->ns_lock);
        reply_entry(req, ws, r == 0 ? n : NULL, r);
}

/* Remove the upper entry of child c (name in p) and hide the lower one. ns_lock held. */
static int remove_entry(struct fs_workspace *ws, struct node *p, const char *name, const char *en,
                        struct node *c)
{
        int has = cow_lower_has(ws, p, name);
        if (has < 0)
                return has;
        if (has) {
                int r = copyup_dir(ws, p);
                if (r < 0)
                        return r;
        }
        bool last = true;
        if (c->upper) {
                struct stat st;
                bool dir = S_ISDIR(c->type);
                if (fstatat(p->ufd, en, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        return negative_errno();
                if (dir)
                        (void)upper_dir_clear_markers(c->ufd);
                if (unlinkat(p->ufd, en, dir ? AT_REMOVEDIR : 0) < 0)
                        return negative_errno();
                quota_refund_files(ws, 1);
                if (S_ISREG(st.st_mode) && st.st_nlink == 1)
                        quota_refund_bytes(ws, (uint64_t)st.st_size);
                /* Another hard link keeps the node alive (reached through its pinned fd). */
                last = dir || st.st_nlink <= 1;
                if (last)
                        c->upper = false;
        }
        (void)upper_meta_set_rec(p, name, NULL);
        if (has) {
                int r = upper_meta_set_whiteout(p, name, true);
                if (r < 0)
                        return r;
        }
        if (last) {
                c->unlinked = true;
                c->has_lower = false;
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
        struct node *p = ino_node(ws, parent), *c = NULL;
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
        if (S_ISDIR(n->type)) {
                if (n->has_lower)
                        r = upper_json_set_name(rec, "origin", n->lower.path);
                else
                        r = json_object_set_new(rec, "opaque", json_true());
        } else if (n->metacopy) {
                r = json_object_set_new(rec, "metacopy", json_true());
                if (r == 0)
                        r = upper_json_set_name(rec, "origin", n->lower.path);
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
                     struct node *np, const char *newname, unsigned flags)
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
        if (r == 0 && dst && (flags & RENAME_EXCHANGE))
                r = bring_up(ws, dst);
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
                if (dst && dst->upper) {
                        struct stat st;
                        if (fstatat(np->ufd, nen, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                                quota_refund_files(ws, 1);
                                if (S_ISREG(st.st_mode) && st.st_nlink == 1)
                                        quota_refund_bytes(ws, (uint64_t)st.st_size);
                                /* Another hard link keeps the replaced file alive. */
                                dst_last = S_ISDIR(st.st_mode) || st.st_nlink <= 1;
                        }
                        if (S_ISDIR(dst->type))
                                (void)upper_dir_clear_markers(dst->ufd);
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
                if (dst && dst_last) {
                        dst->unlinked = true;
                        dst->upper = false;
                }
                r = node_set_parent(ws, src, np, newname);
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
        int r;
        pthread_rwlock_wrlock(&ws->ns_lock);
        r = do_rename(ws, req, ino_node(ws, parent), name, ino_node(ws, newparent), newname, flags);
        if (r < 0 && r != -ENOENT) {
                struct node *np = ino_node(ws, newparent);
                _cleanup_free_ char *dir = np->kind == NODE_COW ? node_path(np) : NULL, *to = NULL;
                if (dir && asprintf(&to, "%s/%s", dir, newname) < 0)
                        to = NULL;
                journal_failure(ws, req, JOURNAL_RENAME, ino_node(ws, parent), name, to, r);
        }
        pthread_rwlock_unlock(&ws->ns_lock);
        fuse_reply_err(req, -r);
}
