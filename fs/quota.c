/* SPDX-License-Identifier: MIT */
/*
 * quota.c: [limits] bytes and files across the writable layers.
 *
 * Bytes are the logical sizes of the upper regular files (a sparse file
 * counts its size; a metacopy counts nothing until its data is copied up);
 * files are the entries in the upper trees, copy-ups included. Usage is
 * counted once at mount by walking the upper trees (they hold only what the
 * agent changed, never the whole repo) and then kept in two atomics:
 * reservations are compare-and-swap against the cap, so concurrent writers
 * never overshoot it. A write that extends a file reserves the extension
 * under that file's lock (ops-data.c), so the count is exact.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs-private.h"
#include "lib/util.h"

static int walk(int dfd, uint64_t *files, uint64_t *bytes, unsigned depth)
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
        while ((de = readdir(d))) {
                struct stat st;
                if (streq(de->d_name, ".") || streq(de->d_name, "..") ||
                    !upper_name_unescape(de->d_name))
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                (*files)++;
                if (S_ISREG(st.st_mode))
                        *bytes += (uint64_t)st.st_size;
                else if (S_ISDIR(st.st_mode)) {
                        _cleanup_close_ int sub =
                                openat(dirfd(d), de->d_name,
                                       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        int r;
                        if (sub < 0)
                                continue;
                        r = walk(sub, files, bytes, depth + 1);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int quota_init(struct fs_workspace *ws)
{
        uint64_t files = 0, bytes = 0;
        int r = walk(ws->repo.upper_fd, &files, &bytes, 0);
        if (r < 0)
                return r;
        if (ws->has_home) {
                r = walk(ws->home.upper_fd, &files, &bytes, 0);
                if (r < 0)
                        return r;
        }
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
 * A file's bytes are counted while its inode exists, as a disk's are: an
 * unlinked file still open keeps them until its last close. Called when
 * nobody has n open (or once nothing references the node); n can be
 * reopened later through /proc/PID/fd, so each call settles the difference
 * from the size given back last time. No writer runs meanwhile (no handle).
 */
void quota_reclaim(struct fs_workspace *ws, struct node *n)
{
        struct stat st;
        uint64_t size;

        if (n->kind != NODE_COW || !n->unlinked || !n->upper || !S_ISREG(n->type) || n->hfd < 0)
                return;
        if (fstatat(n->hfd, "", &st, AT_EMPTY_PATH) < 0 || st.st_nlink > 0)
                return;
        size = (uint64_t)st.st_size;
        if (!n->reclaimed)
                quota_refund_bytes(ws, size);
        else if (size > n->reclaimed_at)
                quota_refund_bytes(ws, size - n->reclaimed_at);
        else
                quota_add(ws, 0, n->reclaimed_at - size);
        n->reclaimed = true;
        n->reclaimed_at = size;
}
