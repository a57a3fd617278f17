/* SPDX-License-Identifier: MIT */
/*
 * links.c: hard links whose names lie in different layers
 * (docs/fs-design.md, "Hard links across layers").
 *
 * Each layer may hold a link index, <root>/.cloister~links/: one entry per
 * file with more than one name that was copied up into the layer, named
 * by its st_ino (16 hex digits), a host hard link to the copy, and
 * aliases.json, {"<ino>": N}: how many of the file's names still lie in the
 * layers below (not made again in this layer). A copy-up of such a file
 * goes to the index, not to the name it came by: every name, in whatever
 * layer it lies, finds the same copy, because a lookup that finds a file
 * with more than one host link asks the indexes above its own layer (the
 * writable layer's here, the frozen ones' in lower-stack.c), topmost first.
 * So st_nlink is the host's, less the index's own link, plus the aliases.
 * A name below that is removed, or replaced, or renamed, counts one alias
 * less; renaming or linking one first makes it a name of this layer
 * (materialize). When no name is left, the index entry goes too.
 *
 * A SIGKILL between the two writes of such a change (the alias count, the
 * dir's name or sidecar) leaves st_nlink one off; the data and the names
 * are always right. Caller holds ws->ns_lock (exclusively to change).
 */
#include <assert.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core.h"
#include "lib/readall.h"
#include "lib/util.h"

#define ALIASES     LINKS_ALIASES
#define ALIASES_MAX (64u * 1024 * 1024)

static json_t *top_aliases(struct fs_workspace *ws)
{
        if (!ws->links)
                ws->links = links_aliases_load(ws->repo.upper_fd);
        return ws->links;
}

static int index_dir(struct fs_workspace *ws, bool create)
{
        int fd;

        if (create && mkdirat(ws->repo.upper_fd, LINKS_DIR, 0700) < 0 && errno != EEXIST)
                return negative_errno();
        fd = openat(ws->repo.upper_fd, LINKS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? negative_errno() : fd;
}

/* Write the writable layer's aliases.json whole (temporary file, rename). */
static int aliases_save(struct fs_workspace *ws)
{
        _cleanup_close_ int dfd = -1, fd = -1;
        _cleanup_free_ char *s = json_dumps(top_aliases(ws), JSON_COMPACT);
        size_t n;

        if (!s)
                return -ENOMEM;
        dfd = openat(ws->repo.upper_fd, LINKS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return negative_errno();
        fd = openat(dfd, ALIASES ".tmp", O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
                    0600);
        n = strlen(s);
        if (fd < 0 || write(fd, s, n) != (ssize_t)n)
                return negative_errno();
        return renameat(dfd, ALIASES ".tmp", dfd, ALIASES) < 0 ? negative_errno() : 0;
}

static int aliases_set(struct fs_workspace *ws, uint64_t ino, unsigned n)
{
        json_t *a = top_aliases(ws);
        char k[17];

        links_key_of(ino, k);
        if (!a)
                return -ENOMEM;
        if (n == 0)
                json_object_del(a, k);
        else if (json_object_set_new(a, k, json_integer(n)) < 0)
                return -ENOMEM;
        return aliases_save(ws);
}

int links_open_top(struct fs_workspace *ws, uint64_t ino, int *ret_fd)
{
        char name[sizeof(LINKS_DIR) + 20];
        int fd;

        snprintf(name, sizeof(name), LINKS_DIR "/%016llx", (unsigned long long)ino);
        fd = openat(ws->repo.upper_fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        *ret_fd = fd;
        return 0;
}

void links_nlink(struct fs_workspace *ws, struct node *n, int fd, struct stat *st)
{
        if (S_ISDIR(n->type) || n->layer != &ws->repo || (st->st_nlink <= 1 && !n->indexed))
                return;
        if (n->indexed || links_in_index(ws->repo.upper_fd, n->ino, fd)) {
                nlink_t a = links_aliases_get(top_aliases(ws), n->ino);
                st->st_nlink = st->st_nlink > 0 ? st->st_nlink - 1 + a : 0;
        }
}

/* The name (p, en) is not in the writable layer: it lies below, an alias. */
static bool is_alias(struct node *p, const char *en)
{
        struct stat st;

        return p->ufd < 0 || (fstatat(p->ufd, en, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT);
}

/*
 * What the index costs beside its entries: its directory's blocks and
 * aliases.json's, charged as a sidecar's are (quota.c), and counted the
 * same at mount (quota_init).
 */
static uint64_t index_cost(struct fs_workspace *ws)
{
        _cleanup_close_ int dfd = index_dir(ws, false);
        struct stat st;
        uint64_t cost;

        if (dfd < 0)
                return 0;
        cost = quota_dir_cost(dfd);
        if (fstatat(dfd, ALIASES, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
                cost += quota_cost(&st);
        return cost;
}

static int copyup_indexed(struct fs_workspace *ws, struct node *n, nlink_t names,
                          int (*fill)(struct fs_workspace *ws, struct node *n, int out,
                                      uint64_t *ret_charged));

int links_copyup(struct fs_workspace *ws, struct node *n, nlink_t names,
                 int (*fill)(struct fs_workspace *ws, struct node *n, int out,
                             uint64_t *ret_charged))
{
        /* Its entry's room in the index, aliases.json's growth, and the
         * index's own directory the first time (ns_lock held exclusively). */
        uint64_t reserve = 3 * QUOTA_DIR_BLOCK, before;
        int r = quota_charge_bytes(ws, reserve);

        if (r < 0)
                return r;
        before = index_cost(ws);
        r = copyup_indexed(ws, n, names, fill);
        quota_settle(ws, reserve, before, index_cost(ws));
        return r;
}

static int copyup_indexed(struct fs_workspace *ws, struct node *n, nlink_t names,
                          int (*fill)(struct fs_workspace *ws, struct node *n, int out,
                                      uint64_t *ret_charged))
{
        char key[17], tmp[32];
        _cleanup_close_ int dfd = -1, out = -1;
        uint64_t charged = 0;
        int r;

        links_key_of(n->ino, key);
        snprintf(tmp, sizeof(tmp), "%s.tmp", key);
        r = quota_charge_files(ws, 1);
        if (r < 0)
                return r;
        dfd = index_dir(ws, true);
        if (dfd < 0) {
                quota_refund_files(ws, 1);
                return dfd;
        }
        /* Every name is an alias until one is made again here. */
        r = aliases_set(ws, n->ino, (unsigned)names);
        if (r < 0)
                goto fail;
        (void)unlinkat(dfd, tmp, 0); /* left by a crash */
        if (S_ISREG(n->type)) {
                out = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (out < 0) {
                        r = negative_errno();
                        goto fail;
                }
                r = fill(ws, n, out, &charged);
        } else if (S_ISLNK(n->type)) {
                _cleanup_free_ char *target = NULL;
                r = lower_readlink(n->layer->lower, &n->lower, &target);
                if (r == 0 && symlinkat(target, dfd, tmp) < 0)
                        r = negative_errno();
                if (r == 0)
                        out = openat(dfd, tmp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                r = r < 0 ? r : out < 0 ? negative_errno() : fill(ws, n, out, &charged);
        } else {
                if (S_ISFIFO(n->type))
                        r = mkfifoat(dfd, tmp, 0600);
                else if (S_ISSOCK(n->type))
                        r = mknodat(dfd, tmp, S_IFSOCK | 0600, 0);
                else {
                        int k = openat(dfd, tmp,
                                       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0);
                        r = k < 0 ? -1 : 0;
                        safe_close(k);
                }
                if (r < 0) {
                        r = negative_errno();
                        goto fail;
                }
                out = openat(dfd, tmp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
                r = out < 0 ? negative_errno() : fill(ws, n, out, &charged);
        }
        if (r < 0)
                goto fail;
        if (renameat(dfd, tmp, dfd, key) < 0) {
                r = negative_errno();
                goto fail;
        }
        safe_close(n->hfd);
        n->hfd = openat(dfd, key, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (n->hfd < 0)
                return negative_errno();
        n->upper = true;
        n->indexed = true;
        n->metacopy = false;
        n->has_lower = false;
        lower_entry_clear(&n->lower);
        return 0;
fail:
        (void)unlinkat(dfd, tmp, 0);
        quota_refund_bytes(ws, charged);
        quota_refund_files(ws, 1);
        return r;
}

int links_materialize(struct fs_workspace *ws, struct node *p, const char *name, const char *en,
                      struct node *n)
{
        char path[FS_FD_PATH_MAX];
        json_t *rec;
        unsigned a;
        int r;

        if (!n->indexed || S_ISDIR(n->type) || !is_alias(p, en))
                return 0;
        /* Rename, the one caller, has copied p up already (both parents go
         * up before any name moves), so this never copies up: links.c stays
         * below copyup.c. */
        assert(p->ufd >= 0);
        r = quota_dir_begin(ws, p, QUOTA_DIR_BLOCK); /* the name's room in p */
        if (r < 0)
                return r;
        r = quota_charge_files(ws, 1);
        if (r < 0) {
                quota_dir_end(ws, p);
                return r;
        }
        rec = json_pack("{s:I}", "ino", (json_int_t)n->ino);
        r = rec ? upper_rec_add_type(rec, n->type) : -ENOMEM;
        if (r == 0)
                r = upper_meta_set_rec(p, name, rec);
        json_decref(rec);
        fs_fd_path(n->hfd, path);
        if (r == 0 && linkat(AT_FDCWD, path, p->ufd, en, AT_SYMLINK_FOLLOW) < 0)
                r = negative_errno();
        quota_dir_end(ws, p);
        if (r < 0) {
                quota_refund_files(ws, 1);
                return r;
        }
        a = links_aliases_get(top_aliases(ws), n->ino);
        return aliases_set(ws, n->ino, a > 0 ? a - 1 : 0);
}

int links_name_gone(struct fs_workspace *ws, struct node *p, const char *en, struct node *n,
                    bool *ret_alias)
{
        unsigned a;

        *ret_alias = false;
        if (!n->indexed || S_ISDIR(n->type) || !is_alias(p, en))
                return 0;
        *ret_alias = true;
        a = links_aliases_get(top_aliases(ws), n->ino);
        return aliases_set(ws, n->ino, a > 0 ? a - 1 : 0);
}

nlink_t links_view_nlink(struct fs_workspace *ws, struct node *n)
{
        struct stat st;

        if (n->hfd < 0 || fstatat(n->hfd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
                return 0;
        links_nlink(ws, n, n->hfd, &st);
        return st.st_nlink;
}

void links_drop_if_gone(struct fs_workspace *ws, struct node *n)
{
        char name[sizeof(LINKS_DIR) + 20];

        if (!n->indexed || links_view_nlink(ws, n) > 0)
                return;
        snprintf(name, sizeof(name), LINKS_DIR "/%016llx", (unsigned long long)n->ino);
        if (unlinkat(ws->repo.upper_fd, name, 0) == 0)
                quota_refund_files(ws, 1);
        (void)aliases_set(ws, n->ino, 0);
}

bool links_top_any(struct fs_workspace *ws)
{
        json_t *a = top_aliases(ws);

        return a && json_object_size(a) > 0;
}
