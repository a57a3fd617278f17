/* SPDX-License-Identifier: MIT */
/*
 * ops-handle.c: the lifetime of an open file's handle (tracked for a
 * checkpoint, reference-counted against a read still replying) and what
 * the data handlers share: the copy of a metacopy's data before the first
 * write, a truncation charged to the quota, and dropping set-uid/set-gid
 * when the kernel asks (FUSE_HANDLE_KILLPRIV_V2).
 */
#include <fcntl.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ops.h"
#include "lib/util.h"

/* An open file's handle joins ws->handles, which a checkpoint moves. */
void ops_handle_track(struct fs_workspace *ws, struct handle *h)
{
        pthread_mutex_lock(&ws->handles_lock);
        if (!h->tracked) {
                h->hprev = NULL;
                h->hnext = ws->handles;
                if (ws->handles)
                        ws->handles->hprev = h;
                ws->handles = h;
                h->tracked = true;
        }
        pthread_mutex_unlock(&ws->handles_lock);
}

static void handle_untrack(struct fs_workspace *ws, struct handle *h)
{
        if (!h->tracked)
                return;
        pthread_mutex_lock(&ws->handles_lock);
        if (h->hprev)
                h->hprev->hnext = h->hnext;
        else
                ws->handles = h->hnext;
        if (h->hnext)
                h->hnext->hprev = h->hprev;
        h->tracked = false;
        pthread_mutex_unlock(&ws->handles_lock);
}

void ops_handle_free(struct fs_workspace *ws, struct handle *h)
{
        if (!h)
                return;
        handle_untrack(ws, h);
        if (h->node && h->fd >= 0) {
                /* unlinked: itable_lock is enough to read it (core.h), and no
                 * handler lock is held here (a RELEASE beside a link, TSan). */
                bool unlinked;
                pthread_mutex_lock(&ws->itable_lock);
                unlinked = h->node->unlinked;
                pthread_mutex_unlock(&ws->itable_lock);
                if (unlinked) { /* maybe the file's last fd: reap.c */
                        reap_close(ws, h->fd);
                        h->fd = -1;
                }
        }
        safe_close(h->fd);
        safe_close(h->lower_fd);
        safe_close(h->stale_fd);
        free(h->buf);
        lower_entry_clear(&h->lower_entry);
        if (h->node) {
                unsigned refs;
                bool unlinked;
                pthread_mutex_lock(&ws->itable_lock);
                refs = h->node->refs;
                unlinked = h->node->unlinked;
                pthread_mutex_unlock(&ws->itable_lock);
                /* The last close of a removed file gives its space back, as on a disk. */
                if (refs == 1 && unlinked && !fs_node_opens_unseen(ws, h->node))
                        quota_reclaim(ws, h->node);
                node_unref(ws, h->node);
        }
        free(h);
}

/* Before the first write through a handle: copy the data of a metacopy up. */
int ops_fill_before_write(struct fs_workspace *ws, struct node *n)
{
        int r = 0;
        if (!n->metacopy)
                return 0;
        pthread_rwlock_wrlock(&ws->ns_lock);
        if (n->metacopy)
                r = copyup(ws, n, COPYUP_DATA);
        pthread_rwlock_unlock(&ws->ns_lock);
        return r;
}

/*
 * A read may still be inside fuse_reply_buf() (on its buffer) when the
 * kernel, having received the reply, already sends RELEASE: the last
 * reference frees the handle.
 */
void ops_handle_put(struct fs_workspace *ws, struct handle *h)
{
        /* (never NULL; said so that GCC's -Wstringop-overflow, which sees
         * ops_handle_free()'s check through the inlining, does not warn) */
        if (!h)
                return;
        if (atomic_fetch_sub(&h->refs, 1) == 1)
                ops_handle_free(ws, h);
}

int ops_truncate_upper_fd(struct fs_workspace *ws, struct node *n, int fd, uint64_t size)
{
        uint64_t before, grant = 0;
        struct stat st;
        int r = 0;

        pthread_mutex_lock(&n->lock);
        if (fstat(fd, &st) < 0) {
                r = negative_errno();
                goto out;
        }
        /* Up: the new size, no block (the store allocates none for it). */
        before = quota_cost(&st);
        if (size > before) {
                r = quota_charge_bytes(ws, size - before);
                if (r < 0)
                        goto out;
                grant = size - before;
        }
        if (ftruncate(fd, (off_t)size) < 0) {
                r = negative_errno();
                quota_refund_bytes(ws, grant);
                goto out;
        }
        quota_settle_fd(ws, fd, grant, before);
out:
        pthread_mutex_unlock(&n->lock);
        return r;
}

/*
 * The kernel caches the mode it last saw, and neither an OPEN's nor a
 * WRITE's reply carries one: have it ask again. Attributes only (offset
 * -1), which takes no inode lock in the kernel, so it is safe while the
 * request that dropped the bits is still being served.
 */
void ops_kill_notify(struct fs_workspace *ws, struct node *n)
{
        fuse_ino_t ino;
        struct fuse_session *se = fs_node_session(ws, n, &ino);

        if (se)
                (void)fuse_lowlevel_notify_inval_inode(se, ino, -1, 0);
}

/*
 * FUSE_HANDLE_KILLPRIV_V2: the kernel asked (a truncate or chown by a
 * writer without CAP_FSETID, an O_TRUNC open) that set-uid and set-gid be
 * dropped, which it no longer does itself. ns_lock held exclusively.
 */
int ops_kill_suidgid(struct fs_workspace *ws, fuse_req_t req, struct node *n)
{
        mode_t m;
        int r;

        if (S_ISDIR(n->type) || S_ISLNK(n->type) || !n->upper)
                return 0;
        r = upper_node_pin(n);
        if (r < 0)
                return r;
        if (n->hfd < 0)
                return -EIO;
        r = attr_kill_suidgid(ws, n, n->hfd, &m);
        if (r <= 0)
                return r;
        ops_kill_notify(ws, n);
        return ops_journal(ws, req, JOURNAL_CHMOD, n, NULL,
                           &(struct journal_entry){.mode = m, .uid = -1, .gid = -1});
}

/*
 * Whether the caller (a thread blocked in its open(2) while we serve it, so
 * its credentials and its pid are stable) has CAP_FSETID as the kernel's
 * capable() means it: effective, in the initial user namespace. Read from
 * /proc: CapEff, and its user namespace the same as ours while ours is the
 * initial one (the whole id range mapped to itself). Anything not known
 * (a caller outside our pid namespace, pid 0) is taken as lacking it.
 */
static bool caller_has_fsetid(pid_t pid)
{
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *p = NULL, *line = NULL;
        unsigned long long caps = 0;
        unsigned long long first, lower, count;
        struct stat self, them;
        size_t cap = 0;
        bool found = false;

        if (pid <= 0 || asprintf(&p, "/proc/%d/ns/user", (int)pid) < 0)
                return false;
        if (stat(p, &them) < 0 || stat("/proc/self/ns/user", &self) < 0 ||
            them.st_ino != self.st_ino || them.st_dev != self.st_dev)
                return false;
        f = fopen("/proc/self/uid_map", "re");
        if (!f || fscanf(f, "%llu %llu %llu", &first, &lower, &count) != 3 || first != 0 ||
            lower != 0 || count != 4294967295ULL)
                return false;
        fclose(f);
        f = NULL;
        free(p);
        p = NULL;
        if (asprintf(&p, "/proc/%d/status", (int)pid) < 0)
                return false;
        f = fopen(p, "re");
        if (!f)
                return false;
        while (getline(&line, &cap, f) > 0)
                if (sscanf(line, "CapEff: %llx", &caps) == 1) {
                        found = true;
                        break;
                }
        return found && (caps & (1ULL << CAP_FSETID));
}

bool ops_open_kills_suidgid(struct fs_workspace *ws, fuse_req_t req, int fd)
{
        struct stat st;

        if (ws->killpriv_v2)
                return fs_loop_kill_suidgid();
        /* Without KILLPRIV_V2 (declined over io_uring: fs/daemon/uring.c; and
         * so still when libfuse's rings then failed to start, INIT answered),
         * the kernel clears the bits itself on a write or a truncate, but
         * leaves an O_TRUNC open's to us: the rule it would have flagged.
         * A set-id bit is marked by S_ISVTX on the upper file (attr.c), so a
         * file without one costs no read of the caller's /proc. */
        if (fstat(fd, &st) < 0 || !(st.st_mode & S_ISVTX))
                return false;
        return !caller_has_fsetid(fuse_req_ctx(req)->pid);
}
