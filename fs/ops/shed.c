/* SPDX-License-Identifier: MIT */
/*
 * shed.c: letting go of cached nodes before the daemon runs out of
 * descriptors.
 *
 * As in libfuse's passthrough_ll, a node of a file or directory that has
 * a host inode (the writable layers, frozen layers, mirrors) holds a
 * descriptor of it for as long as the kernel remembers the node, and the
 * kernel forgets only under memory pressure. So an agent that creates
 * more files than the daemon's RLIMIT_NOFILE (20,000 on some hosts, and
 * not raisable without CAP_SYS_RESOURCE) would get EMFILE on the next
 * create or lookup, far below `[limits] files`.
 *
 * When the table has grown past half the limit, a thread counts the
 * descriptors actually open; past SHED_HIGH of the limit it asks the
 * kernel to drop the entries of enough nodes that hold one
 * (fuse_lowlevel_notify_inval_entry) to come down to SHED_LOW. The kernel
 * drops the unused ones, and their FORGETs free the nodes and close their
 * descriptors, exactly as under memory pressure; an entry in use (open,
 * a cwd) just stays. Nothing of the node is lost: the next lookup makes
 * it again, with the same st_ino. The thread holds no lock of ours while
 * it notifies, since the kernel may first wait for a request on that
 * directory to be answered.
 *
 * A listing can bring a thousand nodes at once (readdirplus makes a node
 * of each entry), faster than a round: while the last count plus the
 * nodes made since may reach SHED_HIGH of the limit, readdirplus gives
 * plain entries, which the kernel looks up only when they are used
 * (ops-entry.c). A drop waits for the lookups running in its directory
 * (the kernel takes the directory's lock), so a serial stream of lookups
 * in one folder gains on a round whenever the round's thread is not
 * running, and on a loaded machine it reached the limit. So while short,
 * each lookup or create that makes a node owes SHED_REPAY drops, and the
 * worker that holds repay_lock pays all that is owed before its next
 * request (shed_repay), after handing the reading on (fs_loop_hand_on):
 * the stream pays for the nodes it makes. The debt is shared because the
 * payer's drops wait for the stream's next lookups, answered by the
 * other workers: each paying only its own, they found the lock taken and
 * paid nothing, and the stream won again under load. One out
 * of descriptors still fails with EMFILE and wakes a round; a burst of
 * parallel lookups can outrun both when the limit is small: at 1,024,
 * git status's threads can; at the 20,000 of the hosts this was measured
 * on, the half kept free is 10,000 descriptors.
 *
 * A file with several names has a kernel entry per name it was handed out
 * by, and any one keeps the node; a drop names one. So such a file keeps
 * at most one cached entry, its node's name: one handed out by another
 * name is dropped right after the reply (shed_stale_drop; it lives on
 * while in use), readdirplus gives such files plain entries, and a link or
 * rename that moves the node's name drops the old name's entry. Before,
 * 400 linked pairs held 511 descriptors of 512 (tests/fs/nofile-links.sh).
 *
 * What the shed cannot drop, the agent can still pin: open files, a
 * working directory in each of thousands of directories, directories
 * (never dropped, above). On a part's own connection (parts.c) the daemon
 * sees no open, so an open file's node looks unused (refs 0): the shed may
 * ask for its entry, the kernel keeps the inode as for any entry in use,
 * and the cursor moves on; such a node holds its one pinned descriptor, as
 * every cached node does, and no handle's. The host's review reads the workspace through
 * this same daemon (cloister diff, export, MCP), so an agent that pinned
 * every descriptor would stop its own review. So the agent's requests that
 * may leave the daemon holding one more descriptor (admit.c: lookups,
 * opens, every change) are refused with EMFILE once the count reaches
 * shed.cap, SHED_RESERVE_PCT below the limit; a caller in the daemon's own
 * pid namespace, the host (cloister run puts the agent in a pid namespace
 * of its own), is never refused here and has the rest
 * (tests/fs/nofile-review.sh). The count is the last one made plus what
 * was admitted since, so a request below the cap costs no system call.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core.h"
#include "ops.h"
#include "lib/util.h"

#define SHED_HIGH_PCT    50 /* shed when this much of RLIMIT_NOFILE is open */
#define SHED_LOW_PCT     30 /* ... down to this much */
#define SHED_EVERY       32 /* look again after limit / SHED_EVERY new nodes */
#define SHED_BATCH       4096
#define SHED_REPAY       2  /* entries a worker drops after making a node while short */
#define SHED_REPAY_BATCH 16 /* ... taken from the debt at a time */
#define SHED_RESERVE_PCT 25 /* of the limit, kept for the host's callers (shed_admit) */
#define SHED_RESERVE_MIN 32
#define SHED_RECOUNT_NS  1000000 /* a refused caller counts again at most this often */

struct victim {
        struct node *parent; /* a reference held */
        char *name;
};

/*
 * Descriptors open now, from /proc/self/fd opened at start: near the
 * limit there may be none left to open it with. If it cannot be read,
 * the limit, so that the round sheds.
 */
static size_t fds_open(struct fs_workspace *ws)
{
        char buf[8192];
        size_t n = 0;
        long k;

        if (ws->shed.proc_fd < 0 || lseek(ws->shed.proc_fd, 0, SEEK_SET) < 0)
                return ws->shed.limit;
        while ((k = syscall(SYS_getdents64, ws->shed.proc_fd, buf, sizeof(buf))) > 0)
                for (long off = 0; off < k;) {
                        const struct dirent64 *d = (const struct dirent64 *)(buf + off);
                        if (d->d_name[0] != '.')
                                n++;
                        off += d->d_reclen;
                }
        return k < 0 ? ws->shed.limit : n;
}

static bool holds_fd(const struct node *n)
{
        /* refs: a file's are its open handles; the kernel keeps those. */
        return !S_ISDIR(n->type) && n->refs == 0 && n->parent && n->name && !n->unlinked &&
               !n->name_stale && n->nlookup > 0 && (n->hfd >= 0 || n->lower.fz);
}

/*
 * Up to max files holding a descriptor, from where the last round stopped,
 * so that entries the kernel keeps (in use) are not asked for again and
 * again while others wait. Never directories: the kernel unhashes a
 * directory's entry even when it is a process's working directory, whose
 * getcwd(2) would then fail with ENOENT.
 */
static size_t victims_pick(struct fs_workspace *ws, struct victim *v, size_t max)
{
        size_t k = 0, nb;

        pthread_mutex_lock(&ws->itable_lock);
        nb = ws->n_buckets;
        for (size_t i = 0; i < nb && k < max; i++) {
                size_t b = (ws->shed.cursor + i) % nb;
                for (struct node *n = ws->buckets[b]; n && k < max; n = n->hnext) {
                        if (!holds_fd(n))
                                continue;
                        v[k].name = strdup(n->name);
                        if (!v[k].name)
                                goto out;
                        v[k].parent = n->parent;
                        n->parent->refs++;
                        k++;
                }
                if (k >= max)
                        ws->shed.cursor = (b + 1) % nb;
        }
out:
        pthread_mutex_unlock(&ws->itable_lock);
        return k;
}

/* Ask the kernel to drop the entries of k victims; frees them. Holding no lock. */
static void victims_drop(struct fs_workspace *ws, struct victim *v, size_t k)
{
        for (size_t i = 0; i < k; i++) {
                fuse_ino_t ino;
                struct fuse_session *se = fs_node_session(ws, v[i].parent, &ino);

                if (se)
                        (void)fuse_lowlevel_notify_inval_entry(se, ino, v[i].name,
                                                               strlen(v[i].name));
                free(v[i].name);
                node_unref(ws, v[i].parent);
        }
}

/* The link of /proc/PID/ns/pid ("pid:[N]") into buf; no descriptor needed. */
static bool pidns_of(const char *pid, char *buf, size_t size)
{
        char path[64];
        ssize_t k;

        (void)snprintf(path, sizeof(path), "/proc/%s/ns/pid", pid);
        k = readlink(path, buf, size - 1);
        if (k <= 0 || (size_t)k >= size - 1)
                return false;
        buf[k] = '\0';
        return true;
}

/* Does pid run in the daemon's own pid namespace, the host's side? A
 * process the daemon may not inspect, or one it cannot see (pid 0), is
 * taken for the sandbox's. */
static bool caller_is_host(const struct fs_workspace *ws, pid_t pid)
{
        char id[24], ns[sizeof(ws->shed.pidns)];

        if (pid <= 0 || !ws->shed.pidns[0])
                return false;
        (void)snprintf(id, sizeof(id), "%d", (int)pid);
        return pidns_of(id, ns, sizeof(ns)) && streq(ns, ws->shed.pidns);
}

static uint64_t now_ns(void)
{
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int shed_admit(struct fs_workspace *ws, pid_t pid, bool handle)
{
        size_t handles =
                handle ? atomic_fetch_add_explicit(&ws->shed.handles, 1, memory_order_relaxed) + 1
                       : atomic_load_explicit(&ws->shed.handles, memory_order_relaxed);
        size_t estimate, open;
        uint64_t counted;

        pthread_mutex_lock(&ws->itable_lock);
        /* A round may have counted after this read of handles. */
        estimate = ws->shed.open + (ws->shed.inserts - ws->shed.open_at) +
                   (handles > ws->shed.handles_at ? handles - ws->shed.handles_at : 0);
        counted = ws->shed.counted_ns;
        pthread_mutex_unlock(&ws->itable_lock);
        if (estimate < ws->shed.cap || caller_is_host(ws, pid))
                return 0;
        /* The estimate only grows between counts (closes and FORGETs are
         * not subtracted): count, unless a count just said "full". */
        if (counted == 0 || now_ns() - counted >= SHED_RECOUNT_NS) {
                open = fds_open(ws);
                pthread_mutex_lock(&ws->itable_lock);
                ws->shed.open = open;
                ws->shed.open_at = ws->shed.inserts;
                ws->shed.handles_at = handles;
                ws->shed.counted_ns = open < ws->shed.cap ? 0 : now_ns();
                pthread_mutex_unlock(&ws->itable_lock);
                if (open < ws->shed.cap)
                        return 0;
        }
        shed_wake(ws);
        return -EMFILE;
}

/* One round; true if descriptors were asked back. */
static bool shed_round(struct fs_workspace *ws)
{
        /* Read before counting: an open admitted meanwhile stays in the estimate. */
        size_t handles = atomic_load_explicit(&ws->shed.handles, memory_order_relaxed);
        size_t open = fds_open(ws), high = ws->shed.limit * SHED_HIGH_PCT / 100,
               low = ws->shed.limit * SHED_LOW_PCT / 100, want, k;
        _cleanup_free_ struct victim *v = NULL;

        pthread_mutex_lock(&ws->itable_lock);
        ws->shed.open = open;
        ws->shed.open_at = ws->shed.inserts;
        ws->shed.handles_at = handles;
        pthread_mutex_unlock(&ws->itable_lock);
        if (open < high || !ws->se)
                return false;
        want = MIN(open - low, (size_t)SHED_BATCH);
        v = calloc(want, sizeof(*v));
        if (!v)
                return false;
        k = victims_pick(ws, v, want);
        victims_drop(ws, v, k);
        return k > 0;
}

/* The thread: drop the queued entries (shed.lock held on entry and exit). */
static void stale_drain(struct fs_workspace *ws)
{
        while (ws->shed.n_stale > 0) {
                struct shed_stale s = ws->shed.stale[--ws->shed.n_stale];
                pthread_mutex_unlock(&ws->shed.lock);
                fuse_ino_t ino;
                struct fuse_session *se = fs_node_session(ws, s.parent, &ino);

                if (se)
                        (void)fuse_lowlevel_notify_inval_entry(se, ino, s.name, strlen(s.name));
                node_unref(ws, s.parent);
                free(s.name);
                pthread_mutex_lock(&ws->shed.lock);
        }
}

static void *shed_main(void *arg)
{
        struct fs_workspace *ws = arg;

        pthread_mutex_lock(&ws->shed.lock);
        for (;;) {
                while (!ws->shed.asked && !ws->shed.stop && ws->shed.n_stale == 0)
                        pthread_cond_wait(&ws->shed.wake, &ws->shed.lock);
                if (ws->shed.stop)
                        break;
                stale_drain(ws);
                if (!ws->shed.asked)
                        continue;
                ws->shed.asked = false;
                pthread_mutex_unlock(&ws->shed.lock);
                /* Again while still high: the FORGETs of a round come back
                 * while nodes keep coming. */
                for (int i = 0; i < 8 && shed_round(ws); i++)
                        (void)usleep(1000);
                pthread_mutex_lock(&ws->shed.lock);
                /* Asked again after limit / SHED_EVERY new nodes: at most that
                 * many descriptors more, well within what SHED_HIGH leaves. */
                pthread_mutex_lock(&ws->itable_lock);
                ws->shed.next = ws->shed.inserts + MAX(ws->shed.limit / SHED_EVERY, (size_t)16);
                pthread_mutex_unlock(&ws->itable_lock);
        }
        pthread_mutex_unlock(&ws->shed.lock);
        return NULL;
}

void shed_init(struct fs_workspace *ws)
{
        struct rlimit rl;

        pthread_mutex_init(&ws->shed.lock, NULL);
        pthread_mutex_init(&ws->shed.repay_lock, NULL);
        pthread_cond_init(&ws->shed.wake, NULL);
        ws->shed.kick = shed_kick;
        ws->shed.limit = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                                 ? (size_t)rl.rlim_cur
                                 : 1024;
        ws->shed.next = ws->shed.limit * SHED_HIGH_PCT / 100;
        ws->shed.proc_fd = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ws->shed.cap = ws->shed.limit -
                       MIN(MAX(ws->shed.limit * SHED_RESERVE_PCT / 100, (size_t)SHED_RESERVE_MIN),
                           ws->shed.limit / 2);
        /* Unknown: every caller counts as the sandbox's (fails closed). */
        if (!pidns_of("self", ws->shed.pidns, sizeof(ws->shed.pidns)))
                ws->shed.pidns[0] = '\0';
}

int shed_start(struct fs_workspace *ws)
{
        int r = pthread_create(&ws->shed.thread, NULL, shed_main, ws);

        if (r != 0)
                return -r;
        ws->shed.started = true;
        return 0;
}

void shed_wake(struct fs_workspace *ws)
{
        pthread_mutex_lock(&ws->itable_lock);
        shed_kick(ws);
        pthread_mutex_unlock(&ws->itable_lock);
}

/* itable_lock held. */
static bool shed_short_locked(struct fs_workspace *ws)
{
        assert_held(&ws->itable_lock);
        /* At most a descriptor per node made since the last count: nodes
         * of git's own tree hold none, so the table's size would say
         * "short" for any large checkout. */
        bool r = ws->shed.open + (ws->shed.inserts - ws->shed.open_at) >=
                 ws->shed.limit * SHED_HIGH_PCT / 100;

        if (r)
                shed_kick(ws);
        return r;
}

bool shed_short(struct fs_workspace *ws)
{
        bool r;

        pthread_mutex_lock(&ws->itable_lock);
        r = shed_short_locked(ws);
        pthread_mutex_unlock(&ws->itable_lock);
        return r;
}

/* Take up to max of the debt; none once no longer short (the FORGETs of
 * the drops so far came back, or a round counted fewer). */
static size_t debt_take(struct fs_workspace *ws, size_t max)
{
        size_t k;

        pthread_mutex_lock(&ws->itable_lock);
        if (!shed_short_locked(ws))
                ws->shed.debt = 0;
        k = MIN(ws->shed.debt, max);
        ws->shed.debt -= k;
        pthread_mutex_unlock(&ws->itable_lock);
        return k;
}

void shed_repay(struct fs_workspace *ws)
{
        struct victim v[SHED_REPAY_BATCH];
        bool handed = false;
        size_t want, k;

        if (!ws->se)
                return;
        /*
         * Not on an io_uring ring's thread (fs/daemon/uring.c): it serves
         * its queue in order, and a drop that waits for a lookup queued
         * behind it would never end. The shed's own thread drops instead.
         */
        if (!fs_loop_serving()) {
                pthread_mutex_lock(&ws->itable_lock);
                if (shed_short_locked(ws))
                        shed_kick(ws);
                pthread_mutex_unlock(&ws->itable_lock);
                return;
        }
        pthread_mutex_lock(&ws->itable_lock);
        if (shed_short_locked(ws))
                ws->shed.debt = MIN(ws->shed.debt + SHED_REPAY, (size_t)SHED_BATCH);
        else
                ws->shed.debt = 0;
        want = ws->shed.debt;
        pthread_mutex_unlock(&ws->itable_lock);
        /*
         * One worker at a time pays, and pays what the others owe too: a
         * drop waits for the requests in its directory, so while one is
         * paying, the lookups of a stream are answered by the others, and
         * their debt must not be lost because they found the lock taken.
         */
        while (want > 0 && pthread_mutex_trylock(&ws->shed.repay_lock) == 0) {
                /* A drop waits for the requests in its directory, which this
                 * worker, if it is the one reading, would never read. */
                if (!handed) {
                        fs_loop_hand_on();
                        handed = true;
                }
                while ((want = debt_take(ws, SHED_REPAY_BATCH)) > 0) {
                        k = victims_pick(ws, v, want);
                        victims_drop(ws, v, k);
                        if (k == 0) { /* nothing left that the kernel may drop */
                                pthread_mutex_lock(&ws->itable_lock);
                                ws->shed.debt = 0;
                                pthread_mutex_unlock(&ws->itable_lock);
                                break;
                        }
                }
                pthread_mutex_unlock(&ws->shed.repay_lock);
                /* Owed after this worker's last look and before its unlock,
                 * by a worker whose trylock failed: pay that too. */
                pthread_mutex_lock(&ws->itable_lock);
                want = ws->shed.debt;
                pthread_mutex_unlock(&ws->itable_lock);
        }
}

bool shed_stale_is(const struct node *n, const struct node *parent, const char *name)
{
        return S_ISDIR(n->type) || !n->name || (n->parent == parent && streq(n->name, name));
}

void shed_stale_keep(struct fs_workspace *ws, struct node *n, struct shed_stale *s)
{
        /* Never a directory's entry: a process's cwd there would lose its path. */
        if (S_ISDIR(n->type) || !n->parent || !n->name || n->unlinked || n->name_stale)
                return;
        s->name = strdup(n->name);
        if (!s->name)
                return; /* a round may still drop it; at worst a descriptor stays */
        s->parent = n->parent;
        node_ref(ws, s->parent);
}

#define SHED_STALE_MAX 4096 /* queued drops; past it, the next round's to find */

void shed_stale_drop(struct fs_workspace *ws, struct shed_stale *s)
{
        bool queued = false;

        if (!s->parent)
                return;
        pthread_mutex_lock(&ws->shed.lock);
        if (ws->shed.started && !ws->shed.stop && ws->shed.n_stale < SHED_STALE_MAX) {
                if (!ws->shed.stale)
                        ws->shed.stale = calloc(SHED_STALE_MAX, sizeof(*ws->shed.stale));
                if (ws->shed.stale) {
                        ws->shed.stale[ws->shed.n_stale++] = *s;
                        queued = true;
                        pthread_cond_signal(&ws->shed.wake);
                }
        }
        pthread_mutex_unlock(&ws->shed.lock);
        if (!queued) {
                node_unref(ws, s->parent);
                free(s->name);
        }
        *s = (struct shed_stale){0};
}

void shed_kick(struct fs_workspace *ws)
{
        assert_held(&ws->itable_lock);
        if (!ws->shed.started || pthread_mutex_trylock(&ws->shed.lock) != 0)
                return; /* a round runs or is being set up: it sees the table as it is */
        ws->shed.asked = true;
        ws->shed.next = SIZE_MAX; /* until the round says when again */
        pthread_cond_signal(&ws->shed.wake);
        pthread_mutex_unlock(&ws->shed.lock);
}

void shed_stop(struct fs_workspace *ws)
{
        if (ws->shed.started) {
                pthread_mutex_lock(&ws->shed.lock);
                ws->shed.stop = true;
                pthread_cond_signal(&ws->shed.wake);
                pthread_mutex_unlock(&ws->shed.lock);
                pthread_join(ws->shed.thread, NULL);
                ws->shed.started = false;
        }
        /* Drops not made: the session goes, and the kernel's entries with it. */
        while (ws->shed.n_stale > 0) {
                struct shed_stale *st = &ws->shed.stale[--ws->shed.n_stale];
                node_unref(ws, st->parent);
                free(st->name);
        }
        free(ws->shed.stale);
        ws->shed.stale = NULL;
        ws->shed.proc_fd = safe_close(ws->shed.proc_fd); /* the thread read it */
}
