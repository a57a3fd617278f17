/* SPDX-License-Identifier: MIT */
/*
 * quota.c: [limits] bytes and files across the writable layers.
 *
 * Bytes bound the host blocks the upper store uses: a regular file or a
 * symlink costs its logical size or its host blocks (st_blocks), whichever
 * is more (quota_cost), so a sparse file counts its size and a file whose
 * blocks outgrow its size (fallocate with KEEP_SIZE, a partly filled last
 * block) counts its blocks; a metacopy counts nothing until its data is
 * copied up. Files are the entries in the upper trees, copy-ups included.
 * Usage is counted once at mount by walking the upper trees (they hold
 * only what the agent changed, never the whole repo) and then kept in two
 * atomics: reservations are compare-and-swap against the cap, so
 * concurrent writers never overshoot it. Whatever changes a file's data
 * (write, truncate, fallocate, a copy-up) first reserves the most that its
 * cost can grow by (quota_write_bound: every block of the range that is
 * not data already), under that file's lock (ops-rw.c, ops-attr.c), and then
 * settles to the cost the host reports after (quota_settle), so the count
 * is exact to the block and never passes the cap on what the range can
 * allocate. What only the host's own bookkeeping adds (an extent-tree
 * block) is counted when it shows, never refused.
 *
 * The agent's user.* extended attributes count in bytes too (names and
 * values; ops-xattr.c charges them as they change), or a workspace whose
 * files are empty could fill the disk through them. A file's attributes
 * go back with its data when it is removed (quota_reclaim; a directory's
 * at rmdir). A file with several hard links in the upper trees is counted
 * once at mount, as a disk counts it.
 *
 * A directory costs its own host blocks and its sidecar's, and the link
 * index its directory's and aliases.json's: an ext4 directory keeps its
 * largest size after its entries go, so a directory filled with long names
 * and emptied would keep host blocks that nothing counted. What adds a
 * name or a sidecar record reserves first and settles after
 * (quota_dir_begin, quota_dir_end), under ns_lock held exclusively, so
 * the directory's blocks change under no one else meanwhile.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "core.h"
#include "lib/util.h"

uint64_t quota_xattrs_of(int fd)
{
        char names[FS_XATTR_FILE_MAX + 1024];
        ssize_t len = flistxattr(fd, names, sizeof(names));
        uint64_t cost = 0;

        for (ssize_t i = 0; i < len;) {
                const char *name = names + i;
                size_t l = strnlen(name, (size_t)(len - i));
                if (startswith(name, "user.")) {
                        ssize_t v = fgetxattr(fd, name, NULL, 0);
                        if (v >= 0)
                                cost += quota_xattr_cost(name, (size_t)v);
                }
                i += (ssize_t)l + 1;
        }
        return cost;
}

/*
 * The files with more than one link: their bytes are added once per inode
 * after the walk (sorted, so that an agent's many links cost n log n).
 */
struct linked {
        struct link_entry {
                dev_t dev;
                ino_t ino;
                uint64_t bytes;
        } * v;
        size_t n, cap;
};

static int linked_add(struct linked *l, const struct stat *st, uint64_t bytes)
{
        if (l->n == l->cap) {
                size_t cap = l->cap ? l->cap * 2 : 64;
                void *v = realloc(l->v, cap * sizeof(*l->v));
                if (!v)
                        return -ENOMEM;
                l->v = v;
                l->cap = cap;
        }
        l->v[l->n++] = (struct link_entry){st->st_dev, st->st_ino, bytes};
        return 0;
}

static int link_cmp(const void *a, const void *b)
{
        const struct link_entry *x = a, *y = b;

        if (x->dev != y->dev)
                return x->dev < y->dev ? -1 : 1;
        return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static uint64_t linked_bytes(struct linked *l)
{
        uint64_t bytes = 0;

        if (l->n)
                qsort(l->v, l->n, sizeof(*l->v), link_cmp);
        for (size_t i = 0; i < l->n; i++)
                if (i == 0 || link_cmp(&l->v[i - 1], &l->v[i]) != 0)
                        bytes += l->v[i].bytes;
        return bytes;
}

uint64_t quota_cost(const struct stat *st)
{
        uint64_t blocks = (uint64_t)st->st_blocks * 512;

        if (S_ISREG(st->st_mode) || S_ISLNK(st->st_mode))
                return MAX((uint64_t)st->st_size, blocks);
        return 0;
}

/* The unit a store allocates in: at least a page, as ext4, tmpfs, btrfs and xfs do. */
static uint64_t alloc_unit(const struct stat *st)
{
        return MAX((uint64_t)st->st_blksize, (uint64_t)4096);
}

/*
 * The most [off, off + len) of the file fd (st) can newly allocate: every
 * block it touches, less those that hold data already (SEEK_DATA and
 * SEEK_HOLE, which report space that fallocate reserved as a hole on some
 * stores: more reserved, never less). Past the size everything counts; a
 * file of many extents is looked at for its first 16 only.
 */
static uint64_t alloc_bound(int fd, const struct stat *st, uint64_t off, uint64_t len)
{
        uint64_t bs = alloc_unit(st), size = (uint64_t)st->st_size;
        uint64_t a = off / bs * bs, b = (off + len + bs - 1) / bs * bs, need = b - a, pos = a;

        for (int i = 0; i < 16 && pos < b && pos < size; i++) {
                off_t d = lseek(fd, (off_t)pos, SEEK_DATA), h;
                uint64_t ds, de;
                if (d < 0 || (uint64_t)d >= b)
                        break;
                h = lseek(fd, d, SEEK_HOLE);
                if (h < 0)
                        break;
                ds = MAX((uint64_t)d / bs * bs, a);
                de = MIN(((uint64_t)h + bs - 1) / bs * bs, b);
                if (de > ds)
                        need -= de - ds;
                pos = ((uint64_t)h + bs - 1) / bs * bs;
                if (pos <= (uint64_t)d)
                        break;
        }
        return need;
}

uint64_t quota_write_bound(int fd, const struct stat *st, uint64_t off, uint64_t len,
                           bool keep_size)
{
        uint64_t size = (uint64_t)st->st_size, before = quota_cost(st), after;

        if (len == 0)
                return 0;
        if (!keep_size)
                size = MAX(size, off + len);
        after = MAX(size, (uint64_t)st->st_blocks * 512 + alloc_bound(fd, st, off, len));
        return after > before ? after - before : 0;
}

uint64_t quota_write_fit(int fd, const struct stat *st, uint64_t off, uint64_t len, uint64_t grant)
{
        uint64_t lo = 0, hi = len;

        /* The bound only grows with the length: the longest that fits. */
        while (lo < hi) {
                uint64_t mid = lo + (hi - lo + 1) / 2;
                if (quota_write_bound(fd, st, off, mid, false) <= grant)
                        lo = mid;
                else
                        hi = mid - 1;
        }
        return lo;
}

void quota_settle(struct fs_workspace *ws, uint64_t reserved, uint64_t before, uint64_t after)
{
        uint64_t grew = after > before ? after - before : 0;

        if (grew > reserved)
                quota_add(ws, 0, grew - reserved); /* the host's bookkeeping: counted */
        else
                quota_refund_bytes(ws, reserved - grew + (before > after ? before - after : 0));
}

void quota_settle_fd(struct fs_workspace *ws, int fd, uint64_t reserved, uint64_t before)
{
        struct stat st;

        /* Can't tell: keep what was reserved (more, never less). */
        if (fstatat(fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
                return;
        quota_settle(ws, reserved, before, quota_cost(&st));
}

/* An entry's bytes: a file's or symlink's cost and its attributes, a directory's attributes. */
static uint64_t entry_bytes(int dfd, const char *name, const struct stat *st)
{
        _cleanup_close_ int fd = -1;
        uint64_t bytes = quota_cost(st);

        /* Only regular files and directories can hold user.* attributes. */
        if (!S_ISREG(st->st_mode) && !S_ISDIR(st->st_mode))
                return bytes;
        fd = openat(dfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
        return fd < 0 ? bytes : bytes + quota_xattrs_of(fd);
}

/*
 * A layer's link index (links.c): each entry is one file, as links_copyup()
 * charged it; its bytes once, whether or not names of the layer share it.
 */
static int walk_index(int rootfd, uint64_t *files, uint64_t *bytes, struct linked *links)
{
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int fd = openat(rootfd, LINKS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

        if (fd < 0 || !(d = fdopendir(fd))) {
                safe_close(fd);
                return 0;
        }
        *bytes += quota_dir_cost(fd); /* the index's own blocks, and aliases.json's */
        {
                struct stat st;
                if (fstatat(fd, LINKS_ALIASES, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                    S_ISREG(st.st_mode))
                        *bytes += quota_cost(&st);
        }
        while ((de = readdir(d))) {
                struct stat st;
                if (strlen(de->d_name) != 16 || strchr(de->d_name, '.') ||
                    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                (*files)++;
                if (st.st_nlink > 1) {
                        int r = linked_add(links, &st, entry_bytes(dirfd(d), de->d_name, &st));
                        if (r < 0)
                                return r;
                } else {
                        *bytes += entry_bytes(dirfd(d), de->d_name, &st);
                }
        }
        return 0;
}

static int walk(int dfd, uint64_t *files, uint64_t *bytes, unsigned depth, struct linked *links)
{
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int fd;

        if (depth > 4096)
                return -ELOOP;
        fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return negative_errno();
        }
        *bytes += quota_dir_cost(fd); /* its own blocks and its sidecar's */
        if (depth == 0) {
                /* A layer's root comes with the layer, not from the agent: its first block is free.
                 */
                struct stat st;
                if (fstat(fd, &st) == 0)
                        *bytes -= MIN((uint64_t)st.st_blocks * 512, (uint64_t)QUOTA_DIR_BLOCK);
        }
        while ((de = readdir(d))) {
                struct stat st;
                if (depth == 0 && streq(de->d_name, LINKS_DIR)) {
                        int r = walk_index(dirfd(d), files, bytes, links);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (streq(de->d_name, ".") || streq(de->d_name, "..") ||
                    !upper_name_unescape(de->d_name))
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                (*files)++;
                if (!S_ISDIR(st.st_mode) && st.st_nlink > 1) {
                        int r = linked_add(links, &st, entry_bytes(dirfd(d), de->d_name, &st));
                        if (r < 0)
                                return r;
                } else {
                        *bytes += entry_bytes(dirfd(d), de->d_name, &st);
                }
                if (S_ISDIR(st.st_mode)) {
                        _cleanup_close_ int sub =
                                openat(dirfd(d), de->d_name,
                                       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        int r;
                        if (sub < 0)
                                continue;
                        r = walk(sub, files, bytes, depth + 1, links);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int quota_init(struct fs_workspace *ws)
{
        uint64_t files = 0, bytes = 0;
        struct linked links = {0};
        int r = walk(ws->repo.upper_fd, &files, &bytes, 0, &links);
        /* Frozen layers count once, for the state that wrote them (docs/fs-design.md). */
        for (size_t i = 0; r == 0 && i < ws->n_frozen_own; i++)
                r = walk(ws->frozen_own_fds[i], &files, &bytes, 0, &links);
        if (r == 0 && ws->has_home)
                r = walk(ws->home.upper_fd, &files, &bytes, 0, &links);
        bytes += linked_bytes(&links);
        free(links.v);
        if (r < 0)
                return r;
        atomic_store(&ws->used_files, files);
        atomic_store(&ws->used_bytes, bytes);
        return 0;
}

static uint64_t charge_upto(_Atomic uint64_t *used, uint64_t max, uint64_t want)
{
        uint64_t cur = atomic_load(used), grant;
        do {
                grant = cur >= max ? 0 : MIN(want, max - cur);
                if (grant == 0)
                        return 0;
        } while (!atomic_compare_exchange_weak(used, &cur, cur + grant));
        return grant;
}

static void refund(_Atomic uint64_t *used, uint64_t n)
{
        uint64_t cur = atomic_load(used);
        while (!atomic_compare_exchange_weak(used, &cur, cur >= n ? cur - n : 0))
                ;
}

int quota_charge_files(struct fs_workspace *ws, uint64_t n)
{
        uint64_t cur = atomic_load(&ws->used_files);
        do {
                if (cur + n > ws->max_files)
                        return -EDQUOT;
        } while (!atomic_compare_exchange_weak(&ws->used_files, &cur, cur + n));
        return 0;
}

void quota_refund_files(struct fs_workspace *ws, uint64_t n)
{
        refund(&ws->used_files, n);
}

uint64_t quota_charge_bytes_upto(struct fs_workspace *ws, uint64_t want)
{
        return charge_upto(&ws->used_bytes, ws->max_bytes, want);
}

int quota_charge_bytes(struct fs_workspace *ws, uint64_t n)
{
        uint64_t cur = atomic_load(&ws->used_bytes);
        if (n == 0)
                return 0;
        do {
                if (cur + n > ws->max_bytes)
                        return -ENOSPC;
        } while (!atomic_compare_exchange_weak(&ws->used_bytes, &cur, cur + n));
        return 0;
}

void quota_refund_bytes(struct fs_workspace *ws, uint64_t n)
{
        if (n)
                refund(&ws->used_bytes, n);
}

/* What the daemon itself wrote (the deferred .git/index): counted, never refused. */
void quota_add(struct fs_workspace *ws, uint64_t files, uint64_t bytes)
{
        atomic_fetch_add(&ws->used_files, files);
        atomic_fetch_add(&ws->used_bytes, bytes);
}

/*
 * A file's bytes (a symlink's too) are counted while its inode exists, as a disk's are: an
 * unlinked file still open keeps them until its last close. Called when
 * nobody has n open (or once nothing references the node); n can be
 * reopened later through /proc/PID/fd, so each call settles the difference
 * from the size given back last time. No writer runs meanwhile (no handle).
 */
void quota_reclaim(struct fs_workspace *ws, struct node *n)
{
        struct stat st;
        uint64_t size;

        if (n->kind != NODE_COW || !n->unlinked || !n->upper ||
            !(S_ISREG(n->type) || S_ISLNK(n->type)) || n->hfd < 0)
                return;
        if (fstatat(n->hfd, "", &st, AT_EMPTY_PATH) < 0 || st.st_nlink > 0)
                return;
        size = quota_cost(&st);
        if (S_ISREG(n->type)) {
                /* Its attributes go with it (O_PATH can't read them: reopen). */
                _cleanup_close_ int fd = -1;
                if (upper_open(n, O_RDONLY | O_NONBLOCK, &fd) == 0)
                        size += quota_xattrs_of(fd);
        }
        if (!n->reclaimed)
                quota_refund_bytes(ws, size);
        else if (size > n->reclaimed_at)
                quota_refund_bytes(ws, size - n->reclaimed_at);
        else
                quota_add(ws, 0, n->reclaimed_at - size);
        n->reclaimed = true;
        n->reclaimed_at = size;
}

uint64_t quota_dir_cost(int dfd)
{
        struct stat st;
        uint64_t cost = 0;

        if (dfd < 0)
                return 0;
        if (fstat(dfd, &st) == 0)
                cost += (uint64_t)st.st_blocks * 512;
        if (fstatat(dfd, UPPER_META, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
                cost += quota_cost(&st);
        return cost;
}

int quota_dir_begin(struct fs_workspace *ws, struct node *d, uint64_t reserve)
{
        int r;

        assert_wrlocked(&ws->ns_lock);
        if (!d || d->kind != NODE_COW)
                return 0;
        r = quota_charge_bytes(ws, reserve);
        if (r < 0)
                return r;
        if (d->dir_depth++ == 0) {
                d->dir_before = quota_dir_cost(d->upper ? d->ufd : -1);
                d->dir_reserved = 0;
        }
        d->dir_reserved += reserve;
        return 0;
}

void quota_dir_end(struct fs_workspace *ws, struct node *d)
{
        if (!d || d->kind != NODE_COW || d->dir_depth == 0 || --d->dir_depth > 0)
                return;
        quota_settle(ws, d->dir_reserved, d->dir_before, quota_dir_cost(d->upper ? d->ufd : -1));
        d->dir_reserved = 0;
}
