/* SPDX-License-Identifier: MIT */
/*
 * copyup.c: bringing a lower entry into the upper tree.
 *
 * Data is copied only when data is written: a metadata change (chmod,
 * chown, utimens, xattr, rename of a file) makes a "metacopy", an empty
 * upper file whose sidecar record says the data is still the lower's; an
 * O_TRUNC open or truncate(0) makes an empty upper file; only a write
 * copies the data (from the inflated blob: a reflink where the filesystem
 * can, else copy_file_range, keeping holes).
 *
 * Every step is crash-safe: the sidecar record is written before the upper
 * entry appears, files are built under a temporary name and renamed into
 * place, and a metacopy's flag is cleared only once its data is complete.
 * Caller holds ws->ns_lock exclusively.
 */
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core.h"
#include "lib/util.h"

static int copyup_orphan(struct fs_workspace *ws, struct node *n, enum copyup_how how);

/* Directory times are restored after we change a directory for our own bookkeeping. */
struct saved_times {
        struct timespec t[2];
        bool ok;
};

static void times_save(int dfd, struct saved_times *s)
{
        struct stat st;
        s->ok = fstat(dfd, &st) == 0;
        if (s->ok) {
                s->t[0] = st.st_atim;
                s->t[1] = st.st_mtim;
        }
}

static void times_restore(int dfd, const struct saved_times *s)
{
        if (s->ok)
                (void)futimens(dfd, s->t);
}

static json_t *rec_new(uint64_t ino)
{
        return json_pack("{s:I}", "ino", (json_int_t)ino);
}

/* Make dir's upper directory in its parent's (copied up already). */
static int dir_make(struct fs_workspace *ws, struct node *dir)
{
        struct node *parent = dir->parent;
        struct saved_times saved;
        char en[256];
        json_t *rec;
        mode_t mode;
        uint64_t charged = 0;
        int r;

        r = upper_name_escape(dir->name, en);
        if (r < 0)
                return r;
        r = quota_charge_files(ws, 1);
        if (r < 0)
                return r;
        times_save(parent->ufd, &saved);
        rec = rec_new(dir->ino);
        r = rec ? upper_meta_set_rec(parent, dir->name, rec) : -ENOMEM;
        json_decref(rec);
        if (r < 0)
                goto fail;
        mode = dir->lower.mode & 0777;
        if (mkdirat(parent->ufd, en, mode) < 0 && errno != EEXIST) {
                r = negative_errno();
                goto fail;
        }
        dir->ufd = openat(parent->ufd, en, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir->ufd < 0) {
                r = negative_errno();
                goto fail;
        }
        if (dir->lower.fz) {
                /* A frozen dir: all of its metadata, as it was (frozen.c). */
                r = frozen_copy_meta(ws, dir, dir->ufd, &charged);
                if (r < 0) {
                        dir->ufd = safe_close(dir->ufd);
                        (void)unlinkat(parent->ufd, en, AT_REMOVEDIR);
                        goto fail;
                }
        } else {
                (void)fchmod(dir->ufd, mode);
                (void)futimens(dir->ufd, (struct timespec[]){dir->lower.mtime, dir->lower.mtime});
        }
        times_restore(parent->ufd, &saved);
        dir->upper = true;
        return 0;
fail:
        quota_refund_bytes(ws, charged);
        quota_refund_files(ws, 1);
        times_restore(parent->ufd, &saved);
        return r;
}

int copyup_dir(struct fs_workspace *ws, struct node *dir)
{
        struct node *parent = dir->parent;
        int r;

        if (dir->upper)
                return 0;
        if (dir->unlinked)
                return copyup_orphan(ws, dir, COPYUP_DATA);
        if (!parent || parent->kind != NODE_COW)
                return -EIO;
        r = copyup_dir(ws, parent);
        if (r < 0)
                return r;
        /* The name's room in the parent, and the new directory's own block. */
        r = quota_dir_begin(ws, parent, QUOTA_DIR_BLOCK);
        if (r < 0)
                return r;
        r = quota_dir_begin(ws, dir, QUOTA_DIR_BLOCK);
        if (r == 0) {
                r = dir_make(ws, dir);
                quota_dir_end(ws, dir);
        }
        quota_dir_end(ws, parent);
        return r;
}

/* Write n's lower data to out: small blobs straight from memory, else from the cache file. */
static int copy_lower(struct node *n, int out, uint64_t size)
{
        _cleanup_free_ char *buf = NULL;
        _cleanup_close_ int in = -1;
        size_t len = 0;
        int r = lower_read_small(n->layer->lower, &n->lower, FS_SMALL_BLOB, &buf, &len);

        if (r == 0) {
                for (size_t done = 0; done < len;) {
                        ssize_t k = write(out, buf + done, len - done);
                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k <= 0)
                                return k < 0 ? negative_errno() : -EIO;
                        done += (size_t)k;
                }
                return 0;
        }
        if (r != -EFBIG && r != -EOPNOTSUPP)
                return r;
        r = lower_open_data(n->layer->lower, &n->lower, &in);
        if (r < 0)
                return r;
        return copyup_fd_data(in, out, size);
}

/*
 * Copy n's lower data (size bytes) into the upper file out, whose cost is
 * before: charged as the host stores it (quota.c), a block more than the
 * size at most reserved first. *ret_charged: what it was charged.
 */
static int copy_charged(struct fs_workspace *ws, struct node *n, int out, uint64_t size,
                        uint64_t before, uint64_t *ret_charged)
{
        uint64_t reserve = (size + 4095) / 4096 * 4096;
        struct stat st;
        int r = quota_charge_bytes(ws, reserve);

        if (r < 0)
                return r;
        r = copy_lower(n, out, size);
        if (r < 0) {
                quota_refund_bytes(ws, reserve);
                return r;
        }
        *ret_charged = reserve;
        if (fstat(out, &st) == 0) {
                quota_settle(ws, reserve, before, quota_cost(&st));
                *ret_charged = quota_cost(&st) > before ? quota_cost(&st) - before : 0;
        }
        return 0;
}

/* Fill a metacopy's upper file with the lower data, keeping its inode and metadata. */
static int fill_metacopy(struct fs_workspace *ws, struct node *n, enum copyup_how how)
{
        _cleanup_close_ int out = -1;
        struct stat st;
        json_t *rec;
        uint64_t size = 0, charged = 0;
        int r;

        r = upper_open(n, O_WRONLY, &out);
        if (r < 0)
                return r;
        if (fstat(out, &st) < 0)
                return negative_errno();
        if (how == COPYUP_DATA) {
                r = lower_size(n->layer->lower, &n->lower);
                if (r < 0)
                        return r;
                size = n->lower.size;
                if (ftruncate(out, 0) < 0)
                        return negative_errno();
                r = copy_charged(ws, n, out, size, quota_cost(&st), &charged);
                if (r < 0)
                        return r;
        }
        (void)futimens(out, (struct timespec[]){st.st_atim, st.st_mtim});
        if (!n->unlinked) {
                /* (an unlinked file's name is gone, or is someone else's now)
                 * Our bookkeeping, not a change of the dir: its times stay. */
                struct saved_times saved;
                times_save(n->parent->ufd, &saved);
                rec = rec_new(n->ino);
                r = rec ? upper_meta_set_rec(n->parent, n->name, rec) : -ENOMEM;
                json_decref(rec);
                times_restore(n->parent->ufd, &saved);
                if (r < 0)
                        return r;
        }
        n->metacopy = false;
        n->has_lower = false;
        lower_entry_clear(&n->lower);
        return 0;
}

static int make_file(struct fs_workspace *ws, struct node *n, enum copyup_how how, const char *en,
                     uint64_t *ret_charged)
{
        struct node *parent = n->parent;
        char tmp[64];
        _cleanup_close_ int out = -1;
        json_t *rec = NULL;
        mode_t mode = n->lower.mode & 0777;
        uint64_t size = 0;
        int r;

        snprintf(tmp, sizeof(tmp), UPPER_PREFIX "tmp.%llx", (unsigned long long)n->ino);
        (void)unlinkat(parent->ufd, tmp, 0); /* left by a crash */
        if (how == COPYUP_DATA) {
                r = lower_size(n->layer->lower, &n->lower);
                if (r < 0)
                        return r;
                size = n->lower.size;
        }
        out = openat(parent->ufd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (out < 0)
                return negative_errno();
        if (how == COPYUP_DATA) {
                r = copy_charged(ws, n, out, size, 0, ret_charged);
                if (r < 0)
                        goto fail;
        }
        if (n->lower.fz) {
                uint64_t xc = 0;
                r = frozen_copy_meta(ws, n, out, &xc);
                *ret_charged += xc;
                if (r < 0)
                        goto fail;
        } else if (fchmod(out, mode) < 0 ||
                   futimens(out, (struct timespec[]){n->lower.mtime, n->lower.mtime}) < 0) {
                r = negative_errno();
                goto fail;
        }
        rec = rec_new(n->ino);
        r = rec ? 0 : -ENOMEM;
        if (r == 0 && how == COPYUP_META) {
                r = json_object_set_new(rec, "metacopy", json_true()) < 0 ? -ENOMEM : 0;
                if (r == 0)
                        r = upper_json_set_name(rec, "origin", lower_entry_vpath(&n->lower));
        }
        if (r == 0)
                r = upper_meta_set_rec(parent, n->name, rec);
        json_decref(rec);
        if (r < 0)
                goto fail;
        if (renameat(parent->ufd, tmp, parent->ufd, en) < 0) {
                r = negative_errno();
                goto fail;
        }
        return 0;
fail:
        (void)unlinkat(parent->ufd, tmp, 0);
        return r;
}

/*
 * A symlink, FIFO, socket or device placeholder (the last two only from a
 * frozen layer: the git lower has neither). A placeholder is built under a
 * temporary name with its records and renamed into place (ops-ns.c's
 * make_entry says why).
 */
static int make_special(struct fs_workspace *ws, struct node *n, const char *en,
                        uint64_t *ret_charged)
{
        struct node *parent = n->parent;
        mode_t type = n->type & S_IFMT, mode = n->lower.mode & 0777;
        bool dev = S_ISCHR(type) || S_ISBLK(type);
        const char *at = dev ? UPPER_PREFIX "tmp.dev" : en;
        _cleanup_close_ int fd = -1;
        json_t *rec = rec_new(n->ino);
        int r = rec ? upper_rec_add_type(rec, type) : -ENOMEM;

        if (r == 0)
                r = upper_meta_set_rec(parent, n->name, rec);
        json_decref(rec);
        if (r < 0)
                return r;
        if (S_ISLNK(type)) {
                _cleanup_free_ char *target = NULL;
                r = lower_readlink(n->layer->lower, &n->lower, &target);
                if (r == 0) {
                        /* Its length or its block (quota.c): settled once it exists. */
                        uint64_t reserve = (strlen(target) + 4095) / 4096 * 4096;
                        struct stat st;
                        r = quota_charge_bytes(ws, reserve);
                        if (r == 0 && symlinkat(target, parent->ufd, en) < 0) {
                                r = negative_errno();
                                quota_refund_bytes(ws, reserve);
                        } else if (r == 0) {
                                *ret_charged = reserve;
                                if (fstatat(parent->ufd, en, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                                        quota_settle(ws, reserve, 0, quota_cost(&st));
                                        *ret_charged = quota_cost(&st);
                                }
                        }
                }
        } else if (S_ISFIFO(type)) {
                r = mkfifoat(parent->ufd, en, mode) < 0 ? negative_errno() : 0;
        } else if (S_ISSOCK(type) && n->lower.fz) {
                r = mknodat(parent->ufd, en, S_IFSOCK | mode, 0) < 0 ? negative_errno() : 0;
        } else if (dev && n->lower.fz) {
                (void)unlinkat(parent->ufd, at, 0); /* left by a crash */
                fd = openat(parent->ufd, at, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                            0);
                r = fd < 0 ? negative_errno() : 0;
                fd = safe_close(fd);
        } else {
                r = -EIO;
        }
        if (r < 0)
                return r;
        if (!n->lower.fz) {
                (void)utimensat(parent->ufd, en,
                                (struct timespec[]){n->lower.mtime, n->lower.mtime},
                                AT_SYMLINK_NOFOLLOW);
                return 0;
        }
        fd = openat(parent->ufd, at, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        r = fd < 0 ? negative_errno() : frozen_copy_meta(ws, n, fd, ret_charged);
        if (r == 0 && dev && renameat2(parent->ufd, at, parent->ufd, en, RENAME_NOREPLACE) < 0)
                r = negative_errno();
        if (r < 0)
                (void)unlinkat(parent->ufd, at, 0);
        return r;
}

/*
 * An entry removed while open that never was in the upper (say fchmod on a
 * read-only fd of a deleted lower file) gets an upper inode with no name:
 * an O_TMPFILE, or an entry made under a reserved name and removed at once.
 * No sidecar record (there is no name); the node's fds keep the inode.
 */
static int copyup_orphan(struct fs_workspace *ws, struct node *n, enum copyup_how how)
{
        int dfd = n->layer->upper_fd;
        mode_t type = n->type & S_IFMT, mode = n->lower.mode & 0777;
        char tmp[64];
        _cleanup_close_ int fd = -1;
        uint64_t charged = 0;
        int r;

        if (!n->has_lower)
                return -ENOENT;
        snprintf(tmp, sizeof(tmp), UPPER_PREFIX "tmp.orphan.%llx", (unsigned long long)n->ino);
        (void)unlinkat(dfd, tmp, S_ISDIR(type) ? AT_REMOVEDIR : 0); /* left by a crash */
        if (S_ISREG(type)) {
                fd = openat(dfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
                if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR)) {
                        fd = openat(dfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                                    0600);
                        if (fd >= 0 && unlinkat(dfd, tmp, 0) < 0)
                                return negative_errno();
                }
        } else {
                if (S_ISDIR(type))
                        r = mkdirat(dfd, tmp, 0700);
                else if (S_ISFIFO(type))
                        r = mkfifoat(dfd, tmp, 0600);
                else if (S_ISSOCK(type))
                        r = mknodat(dfd, tmp, S_IFSOCK | 0600, 0);
                else if (S_ISCHR(type) || S_ISBLK(type)) {
                        int k = openat(dfd, tmp,
                                       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0);
                        r = k < 0 ? -1 : 0;
                        safe_close(k);
                } else
                        return -ENOENT; /* a symlink can't be open */
                if (r < 0)
                        return negative_errno();
                fd = openat(dfd, tmp,
                            (S_ISDIR(type) ? O_RDONLY | O_DIRECTORY : O_PATH) | O_NOFOLLOW |
                                    O_CLOEXEC);
                r = fd < 0 ? negative_errno() : 0;
                if (unlinkat(dfd, tmp, S_ISDIR(type) ? AT_REMOVEDIR : 0) < 0 && r == 0)
                        r = negative_errno();
                if (r < 0)
                        return r;
        }
        if (fd < 0)
                return negative_errno();
        if (S_ISREG(type) && how == COPYUP_DATA) {
                r = lower_size(n->layer->lower, &n->lower);
                if (r < 0)
                        return r;
                r = copy_charged(ws, n, fd, n->lower.size, 0, &charged);
                if (r < 0)
                        return r;
        }
        if (n->lower.fz) {
                uint64_t xc = 0;
                r = frozen_copy_meta(ws, n, fd, &xc);
                if (r < 0) {
                        quota_refund_bytes(ws, charged + xc);
                        return r;
                }
        } else {
                char p[FS_FD_PATH_MAX];
                fs_fd_path(fd, p);
                if (chmod(p, mode) < 0)
                        return negative_errno();
                (void)utimensat(fd, "", (struct timespec[]){n->lower.mtime, n->lower.mtime},
                                AT_EMPTY_PATH);
        }
        if (S_ISDIR(type)) {
                n->ufd = TAKE_FD(fd);
        } else {
                safe_close(n->hfd);
                n->hfd = TAKE_FD(fd);
        }
        n->upper = true;
        n->metacopy = S_ISREG(type) && how == COPYUP_META;
        if (!n->metacopy) {
                n->has_lower = false;
                lower_entry_clear(&n->lower);
        }
        return 0;
}

/* Data and metadata of a frozen file with several names, into its link index copy. */
static int index_fill(struct fs_workspace *ws, struct node *n, int out, uint64_t *ret_charged)
{
        uint64_t xc = 0;
        int r;

        *ret_charged = 0;
        if (S_ISREG(n->type)) {
                r = lower_size(n->layer->lower, &n->lower);
                if (r < 0)
                        return r;
                r = copy_charged(ws, n, out, n->lower.size, 0, ret_charged);
                if (r < 0)
                        return r;
        }
        r = frozen_copy_meta(ws, n, out, &xc);
        *ret_charged += xc;
        return r;
}

/* How many names a frozen file has (1 for anything else). */
static nlink_t lower_names(struct node *n)
{
        struct stat st;

        if (S_ISDIR(n->type) || !n->has_lower || !n->lower.fz ||
            fstatat(n->lower.fz->fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
                return 1;
        return lower_frozen_nlink(n->lower.fz, n->ino, st.st_nlink);
}

bool copyup_has_names_below(struct node *n)
{
        return !n->upper && lower_names(n) > 1;
}

int copyup(struct fs_workspace *ws, struct node *n, enum copyup_how how)
{
        struct node *parent = n->parent;
        struct saved_times saved;
        char en[256];
        uint64_t charged = 0;
        int r;

        assert_wrlocked(&ws->ns_lock);
        if (n->kind != NODE_COW)
                return -EROFS;
        if (n->upper) {
                if (!n->metacopy || how == COPYUP_META)
                        return 0;
                return fill_metacopy(ws, n, how);
        }
        if (n->unlinked)
                return copyup_orphan(ws, n, how);
        if (S_ISDIR(n->type))
                return copyup_dir(ws, n);
        if (!parent)
                return -ENOENT;
        {
                /* Hard links whose names lie in frozen layers: one copy, in the index. */
                nlink_t names = lower_names(n);
                /* ... or a name the node no longer has (its hard link was removed):
                 * the index does not need one. */
                if (names > 1 || (n->has_lower && n->lower.fz && !cow_name_current(ws, n)))
                        return links_copyup(ws, n, names, index_fill);
        }
        r = copyup_dir(ws, parent);
        if (r < 0)
                return r;
        r = upper_name_escape(n->name, en);
        if (r < 0)
                return r;
        r = quota_charge_files(ws, 1);
        if (r < 0)
                return r;
        r = quota_dir_begin(ws, parent, QUOTA_DIR_BLOCK); /* the name's room in parent */
        if (r < 0) {
                quota_refund_files(ws, 1);
                return r;
        }
        times_save(parent->ufd, &saved);
        if (S_ISREG(n->type)) {
                r = make_file(ws, n, how, en, &charged);
        } else {
                r = make_special(ws, n, en, &charged);
        }
        times_restore(parent->ufd, &saved);
        quota_dir_end(ws, parent);
        if (r < 0) {
                quota_refund_files(ws, 1);
                quota_refund_bytes(ws, charged);
                return r;
        }
        n->upper = true;
        (void)upper_node_pin(n);
        n->metacopy = S_ISREG(n->type) && how == COPYUP_META;
        if (!n->metacopy) {
                n->has_lower = false;
                lower_entry_clear(&n->lower);
        }
        return 0;
}
