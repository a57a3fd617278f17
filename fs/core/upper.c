/* SPDX-License-Identifier: MIT */
/*
 * upper.c: a node's upper half: its sidecar as loaded and changed in
 * memory (whiteouts and records, each save settled with the quota), the
 * pin on a non-directory's upper file, its stat as the agent sees it, and
 * opening it. How names and sidecars look on disk is format/sidecar.c's.
 * Trust boundary: all access is through the directory's fd with
 * single-component names and O_NOFOLLOW.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "core.h"
#include "lib/readall.h"
#include "lib/util.h"

/* What one record can grow a sidecar by: a name of up to NAME_MAX bytes
 * (escaped by JSON, or twice more in hex when it is not UTF-8) and its
 * fields, a renamed lower entry's origin path included, fit two blocks; a
 * block more for its temporary name in the directory. */
#define META_GROW (3 * QUOTA_DIR_BLOCK)

json_t *upper_meta(struct node *dir)
{
        json_t *m;
        _cleanup_close_ int fd = -1;

        pthread_mutex_lock(&dir->lock);
        if (dir->meta || dir->ufd < 0)
                goto out;
        fd = openat(dir->ufd, UPPER_META, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0)
                dir->meta = upper_meta_load_fd(fd);
        /* A missing or damaged sidecar reads as empty (a crash before its rename). */
        if (!dir->meta || !json_is_object(dir->meta)) {
                json_decref(dir->meta);
                dir->meta = json_object();
        }
out:
        m = dir->meta;
        pthread_mutex_unlock(&dir->lock);
        return m;
}

/* Write dir's sidecar from its in-memory entries, or remove it when none is left. */
static int upper_meta_save(struct node *dir)
{
        json_t *m = upper_meta(dir);

        if (!m)
                return -ENOMEM;
        return upper_meta_write(dir->ufd, m);
}

int upper_meta_sync(struct node *dir)
{
        _cleanup_close_ int fd = -1;

        if (dir->ufd < 0)
                return 0;
        fd = openat(dir->ufd, UPPER_META, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : negative_errno();
        return fdatasync(fd) < 0 ? negative_errno() : 0;
}

static json_t *section(struct node *dir, const char *key, bool create)
{
        json_t *m = upper_meta(dir), *s;
        if (!m)
                return NULL;
        s = json_object_get(m, key);
        if (!s && create) {
                s = json_object();
                if (!s || json_object_set_new(m, key, s) < 0)
                        return NULL;
        }
        return s;
}

bool upper_meta_whiteout(struct node *dir, const char *name)
{
        json_t *wh;
        if (dir->ufd < 0)
                return false;
        wh = section(dir, "wh", false);
        return wh && json_object_get(wh, name);
}

/*
 * Save dir's sidecar after a change; grew: reserved (quota_dir_begin) by
 * the caller, which ends it. A shrinking save is never refused: the agent
 * must be able to remove what fills its quota.
 */
static int meta_save_settled(struct node *dir, bool grew)
{
        struct fs_workspace *ws = dir->layer ? dir->layer->ws : NULL;
        int r;

        if (!grew && ws)
                (void)quota_dir_begin(ws, dir, 0);
        r = upper_meta_save(dir);
        if (ws)
                quota_dir_end(ws, dir);
        return r;
}

/* A record is about to be added to dir's sidecar: reserve what it can grow by. */
static int meta_reserve(struct node *dir)
{
        struct fs_workspace *ws = dir->layer ? dir->layer->ws : NULL;

        return ws ? quota_dir_begin(ws, dir, META_GROW) : 0;
}

int upper_meta_set_whiteout(struct node *dir, const char *name, bool on)
{
        json_t *wh = section(dir, "wh", on);

        if (!on) {
                if (!wh || !json_object_get(wh, name))
                        return 0;
                json_object_del(wh, name);
                return meta_save_settled(dir, false);
        }
        if (!wh)
                return -ENOMEM;
        /*
         * Never refused: a whiteout completes a removal or a rename already
         * made (and removing must free a full quota). One per name of the
         * layers below, so what passes the bound is bounded by those.
         */
        if (meta_reserve(dir) < 0 && dir->layer && dir->layer->ws)
                (void)quota_dir_begin(dir->layer->ws, dir, 0);
        if (json_object_set_new_nocheck(wh, name, json_integer(1)) < 0) {
                (void)meta_save_settled(dir, true);
                return -ENOMEM;
        }
        return meta_save_settled(dir, true);
}

json_t *upper_meta_rec(struct node *dir, const char *name)
{
        json_t *c;
        if (dir->ufd < 0)
                return NULL;
        c = section(dir, "c", false);
        return c ? json_object_get(c, name) : NULL;
}

int upper_meta_set_rec(struct node *dir, const char *name, json_t *rec)
{
        json_t *c = section(dir, "c", rec != NULL);
        int r;

        if (!rec) {
                if (!c || !json_object_get(c, name))
                        return 0;
                json_object_del(c, name);
                return meta_save_settled(dir, false);
        }
        if (!c)
                return -ENOMEM;
        r = meta_reserve(dir);
        if (r < 0)
                return r;
        if (json_object_set_nocheck(c, name, rec) < 0) {
                (void)meta_save_settled(dir, true);
                return -ENOMEM;
        }
        return meta_save_settled(dir, true);
}

int upper_node_pin(struct node *n)
{
        char en[256];
        int r;
        if (n->hfd >= 0 || S_ISDIR(n->type) || !n->upper || !n->parent)
                return 0;
        if (n->unlinked)
                return -ENOENT;
        r = upper_name_escape(n->name, en);
        if (r < 0)
                return r;
        n->hfd = openat(n->parent->ufd, en, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        return n->hfd < 0 ? negative_errno() : 0;
}

int upper_fstat(struct fs_workspace *ws, struct node *n, struct stat *st)
{
        char en[256];
        int r;

        if (S_ISDIR(n->type)) {
                /* Its own fd: right for a layer root and for a dir rmdir'ed while open. */
                if (fstat(n->ufd, st) < 0)
                        return negative_errno();
                attr_view(ws, n, n->ufd, st);
                return 0;
        }
        if (n->hfd >= 0) {
                if (fstatat(n->hfd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
                        return negative_errno();
                attr_view(ws, n, n->hfd, st);
                return 0;
        }
        if (n->unlinked || !n->parent || n->parent->kind != NODE_COW)
                return -ENOENT;
        r = upper_name_escape(n->name, en);
        if (r < 0)
                return r;
        if (fstatat(n->parent->ufd, en, st, AT_SYMLINK_NOFOLLOW) < 0)
                return negative_errno();
        attr_view(ws, n, -1, st);
        return 0;
}

int upper_open(struct node *n, int flags, int *ret_fd)
{
        char en[256];
        int fd, r;

        if (n->hfd >= 0 && !S_ISLNK(n->type)) {
                /* The pinned inode itself, whatever happened to its name since (a hard
                 * link's other name removed, unlinked while open, renamed over). */
                char p[FS_FD_PATH_MAX];
                fs_fd_path(n->hfd, p);
                fd = open(p, (flags & ~O_NOFOLLOW) | O_CLOEXEC);
                if (fd < 0)
                        return negative_errno();
                *ret_fd = fd;
                return 0;
        }
        if (n->unlinked || !n->parent || n->parent->kind != NODE_COW)
                return n->unlinked ? -ENOENT : -EISDIR;
        r = upper_name_escape(n->name, en);
        if (r < 0)
                return r;
        fd = openat(n->parent->ufd, en, flags | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        *ret_fd = fd;
        return 0;
}
