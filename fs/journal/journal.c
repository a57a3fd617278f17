/* SPDX-License-Identifier: MIT */
/*
 * journal.c: the writing side of the journal (journal.h): the file, its
 * bound, the marks, the flusher thread, and journal_append(), which hands
 * each operation to compaction (journal-pending.c) or, past the soft bound,
 * to coarse entries (journal-coarse.c). What the parts share and the lock
 * are in journal-internal.h.
 *
 * Each entry is one JSON object on one line, appended with a single write(2)
 * on an O_APPEND descriptor, so entries from concurrent FUSE worker threads
 * never interleave and a crash leaves at most one cut-short last line. If a
 * write comes back short (full disk), the next entry starts with a newline
 * so that only the damaged line is lost.
 *
 * Pending entries are written at most one window after their first
 * operation, by the flusher thread or by the next append, whichever comes
 * first: the guarantee must hold under a steady stream of operations and on
 * a loaded machine where the flusher is late.
 *
 * The bound (max_bytes) is checked before every operation and every line:
 * journal_admit() cuts the journal (one mark) once less than a reserve and
 * a headroom is left beyond what is written and what pending entries may
 * still take, and turns every later mutating operation away before it
 * happens; the headroom takes the entries of operations admitted just
 * before the cut (requests in flight on other threads). A line that still
 * does not fit is not written (counted as dropped).
 *
 * Trust: paths and the command name come from the agent. They are only ever
 * data in JSON strings (jansson escapes them); a name that is not UTF-8 is
 * stored lossily plus in hex, never dropped.
 */
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "journal-internal.h"
#include "lib/logsink.h"
#include "lib/util.h"

static const char *const op_names[] = {
        [JOURNAL_CREATE] = "create",     [JOURNAL_WRITE] = "write",
        [JOURNAL_TRUNCATE] = "truncate", [JOURNAL_UNLINK] = "unlink",
        [JOURNAL_MKDIR] = "mkdir",       [JOURNAL_RMDIR] = "rmdir",
        [JOURNAL_RENAME] = "rename",     [JOURNAL_LINK] = "link",
        [JOURNAL_SYMLINK] = "symlink",   [JOURNAL_CHMOD] = "chmod",
        [JOURNAL_CHOWN] = "chown",       [JOURNAL_UTIMENS] = "utimens",
        [JOURNAL_SETXATTR] = "setxattr", [JOURNAL_REMOVEXATTR] = "removexattr",
        [JOURNAL_MKNOD] = "mknod",
};

const char *journal_op_to_string(enum journal_op op)
{
        if ((unsigned)op >= ELEMENTSOF(op_names))
                return NULL;
        return op_names[op];
}

/* The caller's command name, from /proc/PID/comm; false if the process is gone. */
bool journal_comm_read(pid_t pid, char *buf, size_t size)
{
        char p[64];
        _cleanup_close_ int fd = -1;
        ssize_t n;

        if (pid <= 0)
                return false;
        snprintf(p, sizeof(p), "/proc/%d/comm", (int)pid);
        fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return false;
        n = read(fd, buf, size - 1);
        if (n <= 0)
                return false;
        buf[n] = 0;
        if (n > 0 && buf[n - 1] == '\n')
                buf[--n] = 0;
        /* The process names itself (prctl PR_SET_NAME): keep it printable ASCII. */
        for (ssize_t i = 0; i < n; i++)
                if ((unsigned char)buf[i] < 0x20 || (unsigned char)buf[i] >= 0x7f)
                        buf[i] = '?';
        return true;
}

static void time_format(const struct timespec *ts, char buf[40])
{
        struct tm tm;
        size_t n;

        gmtime_r(&ts->tv_sec, &tm);
        n = strftime(buf, 40 - 9, "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(buf + n, 9, ".%06uZ", (unsigned)(ts->tv_nsec / 1000) % 1000000u);
}

bool journal_timespec_before(const struct timespec *a, const struct timespec *b)
{
        return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* CLOCK_MONOTONIC, ms from now. */
struct timespec journal_deadline_in(unsigned ms)
{
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        t.tv_sec += ms / 1000;
        t.tv_nsec += (long)(ms % 1000) * 1000000L;
        if (t.tv_nsec >= 1000000000L) {
                t.tv_sec++;
                t.tv_nsec -= 1000000000L;
        }
        return t;
}

/* Store a name; non-UTF-8 names get a lossy "key" and the exact bytes in "key_hex". */
int journal_json_set_name(json_t *o, const char *key, const char *value)
{
        json_t *s = json_string(value);
        size_t n;

        if (s)
                return json_object_set_new(o, key, s) < 0 ? -ENOMEM : 0;
        n = strlen(value);
        _cleanup_free_ char *lossy = strdup(value);
        _cleanup_free_ char *hex = malloc(2 * n + 1);
        char hkey[32];
        if (!lossy || !hex)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                if ((unsigned char)lossy[i] >= 0x80)
                        lossy[i] = '?';
                snprintf(hex + 2 * i, 3, "%02x", (unsigned char)value[i]);
        }
        snprintf(hkey, sizeof(hkey), "%s_hex", key);
        if (json_object_set_new(o, key, json_string(lossy)) < 0 ||
            json_object_set_new(o, hkey, json_string(hex)) < 0)
                return -ENOMEM;
        return 0;
}

int journal_json_set_int(json_t *o, const char *key, json_int_t v)
{
        return json_object_set_new(o, key, json_integer(v)) < 0 ? -ENOMEM : 0;
}

json_t *journal_entry_header(const struct timespec *when, const char *op)
{
        char ts[40];
        json_t *o = json_object();

        if (!o)
                return NULL;
        time_format(when, ts);
        if (json_object_set_new(o, "time", json_string(ts)) < 0 ||
            json_object_set_new(o, "op", json_string(op)) < 0) {
                json_decref(o);
                return NULL;
        }
        return o;
}

/*
 * The most bytes a name can take in a line: JSON escapes a control byte in
 * six ("\u0001"), a quote or backslash in two; a name that is not UTF-8 is
 * stored again in hex. An upper bound, so that pending entries can be
 * counted against the bound before they are written.
 */
static uint64_t name_estimate(const char *s)
{
        uint64_t n = 0, len = 0;
        bool high = false;

        if (!s)
                return 0;
        for (const unsigned char *c = (const unsigned char *)s; *c; c++, len++) {
                n += *c < 0x20 ? 6 : *c == '"' || *c == '\\' ? 2 : 1;
                high |= *c >= 0x80;
        }
        return n + (high ? 2 * len : 0);
}

/* Fixed fields: time, op, numbers, an error name, a command name escaped, key names. */
#define LINE_FIXED 512

uint64_t journal_line_estimate(const char *path, const char *path2, const char *name)
{
        return LINE_FIXED + name_estimate(path) + name_estimate(path2) + name_estimate(name);
}

uint64_t journal_path_hash(const char *path)
{
        uint64_t h = 1469598103934665603ull; /* FNV-1a */

        for (const unsigned char *c = (const unsigned char *)path; *c; c++)
                h = (h ^ *c) * 1099511628211ull;
        return h;
}

bool journal_path_under(const char *path, const char *dir)
{
        size_t n = strlen(dir);

        if (n == 1 && dir[0] == '/')
                return path[0] == '/' && path[1] != 0;
        return strncmp(path, dir, n) == 0 && path[n] == '/';
}

void journal_pending_bytes_add(journal *j, uint64_t add, uint64_t sub)
{
        __atomic_store_n(&j->pending_bytes, j->pending_bytes + add - sub, __ATOMIC_RELAXED);
}

/* What is kept free at the cut for the entries of operations then in flight. */
static uint64_t headroom(const journal *j)
{
        return MIN((uint64_t)JOURNAL_HEADROOM, j->max_bytes / 4);
}

/* Does the bound leave too little room for what is written, pending and in flight? */
static bool bound_near(const journal *j)
{
        return j->max_bytes &&
               __atomic_load_n(&j->size, __ATOMIC_RELAXED) +
                               __atomic_load_n(&j->pending_bytes, __ATOMIC_RELAXED) +
                               JOURNAL_RESERVE + headroom(j) >
                       j->max_bytes;
}

/*
 * The bound is reached: one mark says so, in the reserve, and from here on
 * journal_admit() refuses.
 */
static void journal_cut(journal *j)
{
        struct timespec now;
        _cleanup_(json_decrefp) json_t *o = NULL;

        if (j->cut)
                return;
        __atomic_store_n(&j->cut, true, __ATOMIC_RELEASE);
        clock_gettime(CLOCK_REALTIME, &now);
        o = journal_entry_header(&now, JOURNAL_MARK_PREFIX "truncated");
        if (o && journal_json_set_int(o, "max_bytes", (json_int_t)j->max_bytes) == 0)
                (void)journal_line_write(j, o, j->seq++, true);
}

/* ---- order: the copies to the sink ---- */

/*
 * The oldest sequence number not yet written: of the entries still held, or
 * the next one. Lines of a higher number wait for the sink until it passes
 * them.
 */
static uint64_t seq_low(const journal *j)
{
        uint64_t low = j->seq;

        if (j->n_pend > 0)
                low = MIN(low, j->pend[0]->seq); /* kept in the order of their numbers */
        for (size_t i = 0; i < j->n_tr; i++)
                low = MIN(low, j->tr[i]->seq);
        if (j->n_co > 0)
                low = MIN(low, j->co[0]->seq);
        return low;
}

static void copy_push(journal *j, uint64_t seq, const char *s, size_t n)
{
        size_t i;

        if (j->n_copies == j->cap_copies) {
                size_t cap = j->cap_copies ? 2 * j->cap_copies : 64;
                struct journal_copy *c = reallocarray(j->copies, cap, sizeof(*c));
                if (!c) {
                        /* No room to wait: out of order rather than lost. */
                        logsink_line("journal", NULL, s, n);
                        return;
                }
                j->copies = c;
                j->cap_copies = cap;
        }
        /* Kept sorted by number; a line nearly always goes at the end. */
        for (i = j->n_copies; i > 0 && j->copies[i - 1].seq > seq; i--)
                ;
        memmove(&j->copies[i + 1], &j->copies[i], (j->n_copies - i) * sizeof(j->copies[0]));
        /* NULL (no memory): counted, not copied; the file has it. */
        j->copies[i] = (struct journal_copy){.seq = seq, .line = strndup(s, n), .len = n};
        j->n_copies++;
        j->copies_bytes += n;
}

/* Copy to the sink, in order, the lines no held entry comes before (all: every line). */
static void copies_release(journal *j, bool all)
{
        uint64_t low = all ? UINT64_MAX : seq_low(j);
        size_t k = 0;

        while (k < j->n_copies && j->copies[k].seq < low) {
                struct journal_copy *c = &j->copies[k++];
                if (c->line)
                        logsink_line("journal", NULL, c->line, c->len);
                free(c->line);
                j->copies_bytes -= c->len;
        }
        memmove(j->copies, j->copies + k, (j->n_copies - k) * sizeof(j->copies[0]));
        j->n_copies -= k;
}

/*
 * End of a locked section: what may go to the sink goes. Past
 * JOURNAL_ORDER_LINES or JOURNAL_ORDER_BYTES waiting, the oldest held entry
 * is written early, so that neither this buffer nor a reader's
 * (journal-read.c) grows without bound.
 */
static void section_end(journal *j)
{
        copies_release(j, false);
        while (j->n_copies > JOURNAL_ORDER_LINES || j->copies_bytes > JOURNAL_ORDER_BYTES) {
                uint64_t low = seq_low(j);
                if (low == j->seq)
                        break;
                if (j->n_co > 0 && j->co[0]->seq == low)
                        (void)journal_coarse_force(j);
                else
                        (void)journal_pending_force(j, low);
                copies_release(j, false);
        }
}

static void journal_unlock(journal *j)
{
        section_end(j);
        /* Removed trees worth a rewrite: the flusher does it, not the caller's request. */
        if (journal_tree_rewrite_due(j, false))
                journal_flusher_wake(j);
        pthread_mutex_unlock(&j->lock);
}

uint64_t journal_seq_now(journal *j, json_t *o)
{
        struct timespec now;
        char ts[40];

        clock_gettime(CLOCK_REALTIME, &now);
        time_format(&now, ts);
        (void)json_object_set_new(o, "time", json_string(ts));
        return j->seq++;
}

/*
 * Append one serialized object as one line, in one write(2). Marks may use
 * the reserve; anything else must leave it free, or the journal is cut.
 */
int journal_line_write(journal *j, json_t *o, uint64_t seq, bool mark)
{
        _cleanup_free_ char *s = NULL;
        _cleanup_free_ char *buf = NULL;
        uint64_t limit = UINT64_MAX;
        size_t n, off = 0;
        ssize_t w;

        if (journal_json_set_int(o, "seq", (json_int_t)seq) < 0)
                return -ENOMEM;
        s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (!s)
                return -ENOMEM;
        n = strlen(s);
        if (n > JOURNAL_LINE_MAX)
                return -ENAMETOOLONG; /* the reader would skip it as damage */
        if (j->max_bytes)
                limit = mark ? j->max_bytes
                             : (j->max_bytes > JOURNAL_RESERVE ? j->max_bytes - JOURNAL_RESERVE
                                                               : 0);
        if (j->size + n + 2 > limit) {
                if (mark)
                        return -EDQUOT; /* not even the reserve is left: no mark */
                j->dropped++;
                journal_cut(j);
                return -EDQUOT;
        }
        buf = malloc(n + 2);
        if (!buf)
                return -ENOMEM;
        if (j->need_newline)
                buf[off++] = '\n';
        memcpy(buf + off, s, n);
        off += n;
        buf[off++] = '\n';
        do
                w = write(j->fd, buf, off);
        while (w < 0 && errno == EINTR);
        if (w < 0)
                return negative_errno();
        __atomic_store_n(&j->size, j->size + (uint64_t)w, __ATOMIC_RELAXED);
        j->need_newline = (size_t)w != off;
        if ((size_t)w != off)
                return -ENOSPC;
        /* [logs] stdout = json, in order (above); nothing without a sink. */
        copy_push(j, seq, s, n);
        journal_tree_note(j, o, seq, n + 1);
        return 0;
}

int journal_entry_caller(json_t *o, const struct journal_caller *who, const char *comm, int result)
{
        int r = 0;

        r = journal_json_set_int(o, "result", result);
        if (r == 0 && result < 0 && strerrorname_np(-result))
                r = json_object_set_new(o, "error", json_string(strerrorname_np(-result))) < 0
                            ? -ENOMEM
                            : 0;
        if (r == 0)
                r = journal_json_set_int(o, "pid", who ? who->pid : 0);
        if (r == 0)
                r = journal_json_set_int(o, "uid", who ? (json_int_t)who->uid : -1);
        if (r == 0)
                r = journal_json_set_int(o, "gid", who ? (json_int_t)who->gid : -1);
        if (r == 0 && who && who->in_sandbox)
                r = journal_json_set_int(o, "sandbox_uid", (json_int_t)who->sandbox_uid);
        if (r == 0)
                r = json_object_set_new(o, "comm", comm ? json_string(comm) : json_null()) < 0
                            ? -ENOMEM
                            : 0;
        if (r == 0 && who && who->run_cgroup[0])
                r = json_object_set_new(o, "run_cgroup", json_string(who->run_cgroup)) < 0 ? -ENOMEM
                                                                                           : 0;
        return r;
}

static int flush_due(journal *j)
{
        struct timespec now;
        int r, k;

        clock_gettime(CLOCK_MONOTONIC, &now);
        r = journal_pending_flush(j, &now);
        k = journal_coarse_flush(j, &now);
        return r < 0 ? r : k;
}

static void *flusher_main(void *arg)
{
        journal *j = arg;

        pthread_mutex_lock(&j->lock);
        while (!j->stop) {
                struct timespec deadline, c;
                bool any = journal_pending_next_due(j, &deadline);

                if (journal_coarse_next_due(j, &c) &&
                    (!any || journal_timespec_before(&c, &deadline))) {
                        deadline = c;
                        any = true;
                }
                if (journal_tree_rewrite_due(j, false)) {
                        /* Failure leaves the journal as it was: the lines stay. */
                        (void)journal_tree_rewrite(j);
                        section_end(j);
                        continue;
                }
                if (!any) {
                        pthread_cond_wait(&j->cond, &j->lock);
                        continue;
                }
                pthread_cond_timedwait(&j->cond, &j->lock, &deadline);
                /* A failure here has no caller to report to; the entry is dropped. */
                (void)flush_due(j);
                section_end(j);
        }
        pthread_mutex_unlock(&j->lock);
        return NULL;
}

/* After a pending entry was added. */
void journal_flusher_wake(journal *j)
{
        if (!j->flusher_running) {
                /* Started lazily, so a process that forks after journal_open keeps it. */
                if (pthread_create(&j->flusher, NULL, flusher_main, j) == 0)
                        j->flusher_running = true;
        }
        pthread_cond_signal(&j->cond);
}

/* Our own start time (/proc/self/stat field 22), to tell this daemon from a reused pid. */
static unsigned long long self_starttime(void)
{
        unsigned long long t = 0;

        return journal_proc_starttime(getpid(), &t) == 0 ? t : 0;
}

static void mark_write(journal *j, const char *what, json_t *fields)
{
        _cleanup_(json_decrefp) json_t *o = NULL;
        struct timespec now;
        const char *k;
        json_t *v;

        clock_gettime(CLOCK_REALTIME, &now);
        o = journal_entry_header(&now, what);
        if (!o)
                return;
        json_object_foreach (fields, k, v)
                json_object_set(o, k, v);
        (void)journal_line_write(j, o, j->seq++, true);
}

/*
 * Past the soft bound: what is pending is written as it is, one mark says
 * where coarse entries begin, and every later operation is counted in one.
 */
static void coarse_enter(journal *j)
{
        _cleanup_(json_decrefp) json_t *fields = NULL;

        if (j->coarse || j->cut)
                return;
        (void)journal_pending_flush(j, NULL);
        j->coarse = true;
        fields = json_pack("{s:I, s:I, s:i}", "max_bytes", (json_int_t)j->max_bytes, "at_bytes",
                           (json_int_t)j->soft_bytes, "window_ms", (int)j->summary_ms);
        mark_write(j, JOURNAL_MARK_PREFIX "coarse", fields);
}

static void soft_check(journal *j)
{
        if (!j->soft_bytes || j->coarse || j->size + j->pending_bytes < j->soft_bytes)
                return;
        /* Removed trees first: what they free may keep the journal fine-grained. */
        if (journal_tree_rewrite_due(j, true) && journal_tree_rewrite(j) == 0 &&
            j->size + j->pending_bytes < j->soft_bytes)
                return;
        coarse_enter(j);
}

/*
 * Was the journal cut at this bound (or a larger one) by the session before?
 * Pending entries count against the bound at their longest, so a cut
 * journal may end a little short of where the cut comes; its last line
 * says it was cut: the journal_close mark ("cut": the bound), or the
 * journal_truncated mark itself if the daemon was killed right after it.
 */
static bool cut_before(int fd, uint64_t size, uint64_t max_bytes)
{
        _cleanup_(json_decrefp) json_t *o = NULL;
        char buf[4096];
        size_t n = MIN(size, sizeof(buf)), start;
        const char *op;
        ssize_t k;

        if (!max_bytes || n < 2)
                return false;
        k = pread(fd, buf, n, (off_t)(size - n));
        if (k != (ssize_t)n || buf[n - 1] != '\n')
                return false;
        for (start = n - 1; start > 0 && buf[start - 1] != '\n'; start--)
                ;
        o = json_loadb(buf + start, n - 1 - start, 0, NULL);
        op = json_string_value(json_object_get(o, "op"));
        if (!op)
                return false;
        if (streq(op, JOURNAL_MARK_PREFIX "close"))
                return json_integer_value(json_object_get(o, "cut")) >= (json_int_t)max_bytes;
        if (streq(op, JOURNAL_MARK_PREFIX "truncated"))
                return json_integer_value(json_object_get(o, "max_bytes")) >= (json_int_t)max_bytes;
        return false;
}

int journal_open(int state_dirfd, const char *name, uint64_t max_bytes, const char *image,
                 journal **ret)
{
        _cleanup_close_ int fd = -1;
        _cleanup_(json_decrefp) json_t *fields = NULL;
        pthread_condattr_t ca;
        struct stat st;
        bool was_cut;
        journal *j;

        fd = openat(state_dirfd, name,
                    O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        if (st.st_size > 0) {
                char c = 0;
                if (pread(fd, &c, 1, st.st_size - 1) == 1 && c != '\n')
                        j->need_newline = true; /* a crash cut the last entry short */
        }
        j->size = (uint64_t)st.st_size;
        j->max_bytes = max_bytes;
        was_cut = cut_before(fd, j->size, max_bytes);
        /* The soft bound: three quarters of the way to where the cut comes. */
        if (max_bytes > JOURNAL_RESERVE + headroom(j))
                j->soft_bytes = (max_bytes - JOURNAL_RESERVE - headroom(j)) / 4 * 3;
        j->window_ms = JOURNAL_COALESCE_MS;
        j->summary_ms = JOURNAL_SUMMARY_MS;
        pthread_mutex_init(&j->lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&j->cond, &ca);
        pthread_condattr_destroy(&ca);
        j->fd = TAKE_FD(fd);
        j->dirfd = fcntl(state_dirfd, F_DUPFD_CLOEXEC, 3);
        j->name = strdup(name);
        j->session_off = j->size;
        if (j->dirfd < 0 || !j->name) {
                int r = j->dirfd < 0 ? negative_errno() : -ENOMEM;
                safe_close(j->dirfd);
                safe_close(j->fd);
                free(j->name);
                free(j);
                return r;
        }
        /* A rewrite the daemon before this one did not finish (journal-tree.c). */
        (void)journal_tree_leftover_remove(j);

        fields = json_pack("{s:i, s:I, s:I}", "pid", (int)getpid(), "start",
                           (json_int_t)self_starttime(), "max_bytes", (json_int_t)max_bytes);
        if (fields && image)
                (void)json_object_set_new(fields, "image", json_string(image));
        pthread_mutex_lock(&j->lock);
        mark_write(j, JOURNAL_MARK_PREFIX "open", fields);
        /* Full already (an earlier run reached the bound, or it was lowered). */
        if (was_cut || bound_near(j))
                journal_cut(j);
        else
                soft_check(j); /* an earlier run went past the soft bound: coarse again */
        journal_unlock(j);
        *ret = j;
        return 0;
}

void journal_free(journal *j)
{
        _cleanup_(json_decrefp) json_t *fields = NULL;

        if (!j)
                return;
        pthread_mutex_lock(&j->lock);
        j->stop = true;
        pthread_cond_signal(&j->cond);
        pthread_mutex_unlock(&j->lock);
        if (j->flusher_running)
                pthread_join(j->flusher, NULL);
        pthread_mutex_lock(&j->lock);
        (void)journal_pending_flush(j, NULL);
        (void)journal_coarse_flush(j, NULL);
        if (journal_tree_rewrite_due(j, true))
                (void)journal_tree_rewrite(j);
        fields = json_pack("{s:b, s:I, s:I}", "clean", 1, "dropped", (json_int_t)j->dropped,
                           "refused", (json_int_t)__atomic_load_n(&j->refused, __ATOMIC_RELAXED));
        /* The next session at this bound starts cut, however close to it the file ends. */
        if (fields && j->cut)
                json_object_set_new(fields, "cut", json_integer((json_int_t)j->max_bytes));
        mark_write(j, JOURNAL_MARK_PREFIX "close", fields);
        copies_release(j, true);
        pthread_mutex_unlock(&j->lock);
        journal_pending_free_all(j);
        journal_coarse_free_all(j);
        journal_tree_free_all(j);
        free(j->copies);
        safe_close(j->fd);
        safe_close(j->dirfd);
        free(j->name);
        free(j->last_sig);
        pthread_cond_destroy(&j->cond);
        pthread_mutex_destroy(&j->lock);
        free(j);
}

int journal_flush(journal *j)
{
        int r;

        pthread_mutex_lock(&j->lock);
        r = journal_pending_flush(j, NULL);
        journal_unlock(j);
        return r;
}

int journal_flush_all(journal *j)
{
        int r, k;

        pthread_mutex_lock(&j->lock);
        r = journal_pending_flush(j, NULL);
        k = journal_coarse_flush(j, NULL);
        if (r == 0)
                r = k;
        if (journal_tree_rewrite_due(j, true)) {
                k = journal_tree_rewrite(j);
                if (r == 0)
                        r = k;
        }
        journal_unlock(j);
        return r;
}

int journal_admit(journal *j)
{
        if (!j)
                return 0;
        if (!__atomic_load_n(&j->cut, __ATOMIC_ACQUIRE)) {
                if (!bound_near(j))
                        return 0;
                /* Cut before the operation: it is refused, not done and left unrecorded. */
                pthread_mutex_lock(&j->lock);
                journal_cut(j);
                journal_unlock(j);
        }
        __atomic_add_fetch(&j->refused, 1, __ATOMIC_RELAXED);
        return -EDQUOT;
}

uint64_t journal_size(journal *j)
{
        uint64_t n;

        pthread_mutex_lock(&j->lock);
        n = j->size;
        pthread_mutex_unlock(&j->lock);
        return n;
}

void journal_windows_set(journal *j, unsigned window_ms, unsigned summary_ms)
{
        pthread_mutex_lock(&j->lock);
        j->window_ms = window_ms;
        j->summary_ms = summary_ms;
        pthread_mutex_unlock(&j->lock);
}

static int entry_build(const struct journal_caller *who, const struct journal_entry *e,
                       const char *comm, json_t **ret)
{
        _cleanup_(json_decrefp) json_t *o = NULL;
        struct timespec now;
        const char *op = journal_op_to_string(e->op);
        int r;

        clock_gettime(CLOCK_REALTIME, &now);
        o = journal_entry_header(&now, op);
        if (!o)
                return -ENOMEM;
        r = journal_json_set_name(o, "path", e->path);
        if (r == 0 && e->path2)
                r = journal_json_set_name(o, "path2", e->path2);
        if (r < 0)
                return r;
        switch (e->op) {
        case JOURNAL_WRITE:
                r = journal_json_set_int(o, "offset", (json_int_t)e->offset);
                if (r == 0)
                        r = journal_json_set_int(o, "length", (json_int_t)e->length);
                if (r == 0)
                        r = journal_json_set_int(o, "count", 1);
                break;
        case JOURNAL_TRUNCATE:
                r = journal_json_set_int(o, "size", (json_int_t)e->offset);
                break;
        case JOURNAL_CREATE:
        case JOURNAL_MKDIR:
        case JOURNAL_CHMOD:
        case JOURNAL_MKNOD:
                r = journal_json_set_int(o, "mode", e->mode);
                break;
        case JOURNAL_CHOWN:
                r = journal_json_set_int(o, "owner_uid", e->uid);
                if (r == 0)
                        r = journal_json_set_int(o, "owner_gid", e->gid);
                break;
        case JOURNAL_SETXATTR:
        case JOURNAL_REMOVEXATTR:
                if (e->name)
                        r = journal_json_set_name(o, "name", e->name);
                break;
        default:
                break;
        }
        if (r == 0)
                r = journal_entry_caller(o, who, comm, e->result);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

/* What makes two operations identical for repeats: the entry without its time and pid. */
static char *entry_signature(json_t *o)
{
        _cleanup_(json_decrefp) json_t *c = json_copy(o);

        if (!c)
                return NULL;
        json_object_del(c, "time");
        json_object_del(c, "pid");
        return json_dumps(c, JSON_COMPACT | JSON_PRESERVE_ORDER);
}

int journal_append(journal *j, const struct journal_caller *who, const struct journal_entry *e)
{
        _cleanup_(json_decrefp) json_t *o = NULL;
        _cleanup_free_ char *sig = NULL;
        struct journal_caller me = {0};
        char comm[32];
        bool have_comm;
        int r;

        if (!j || !e || !e->path || !journal_op_to_string(e->op))
                return -EINVAL;
        /* The caller's, with its run's cgroup as /proc says it (never the caller's word). */
        if (who) {
                me = *who;
                me.run_cgroup[0] = 0;
                who = &me;
        }
        if (e->op == JOURNAL_WRITE && e->result == 0) {
                pthread_mutex_lock(&j->lock);
                /* Due entries first: nothing waits longer than its window, however busy we are. */
                (void)flush_due(j);
                if (j->coarse) {
                        have_comm = journal_comm_read(me.pid, comm, sizeof(comm));
                        (void)journal_cgroup_read(me.pid, me.run_cgroup, sizeof(me.run_cgroup));
                        r = journal_coarse_add(j, who, e, have_comm ? comm : NULL);
                } else {
                        /* Reads comm and cgroup only for a new entry, not for a merged write. */
                        r = journal_pending_write_add(j, who, e);
                }
                soft_check(j);
                journal_unlock(j);
                return r;
        }
        /* Build outside the lock: reading /proc and serializing need no shared state. */
        have_comm = journal_comm_read(me.pid, comm, sizeof(comm));
        (void)journal_cgroup_read(me.pid, me.run_cgroup, sizeof(me.run_cgroup));
        r = entry_build(who, e, have_comm ? comm : NULL, &o);
        if (r < 0)
                return r;
        sig = entry_signature(o);
        if (!sig)
                return -ENOMEM;
        pthread_mutex_lock(&j->lock);
        (void)flush_due(j);
        if (j->coarse) {
                r = journal_coarse_add(j, who, e, have_comm ? comm : NULL);
        } else {
                /* Its time and place in the order are taken here, under the lock: they agree. */
                uint64_t seq = journal_seq_now(j, o);
                r = journal_pending_op(j, who, e, &o, &sig, seq, have_comm ? comm : NULL);
        }
        soft_check(j);
        journal_unlock(j);
        return r;
}

/* A workspace mark (journal.h): fields are JSON text, parsed, never pasted. */
static json_t *mark_fields(const char *fields_json)
{
        json_t *f = json_loads(fields_json ? fields_json : "{}", 0, NULL);

        if (f && !json_is_object(f)) {
                json_decref(f);
                return NULL;
        }
        return f;
}

int journal_mark(journal *j, const char *what, const char *fields_json)
{
        _cleanup_(json_decrefp) json_t *f = mark_fields(fields_json);
        _cleanup_free_ char *op = NULL;
        int r;

        if (!f)
                return -EINVAL;
        if (asprintf(&op, JOURNAL_MARK_PREFIX "%s", what) < 0)
                return -ENOMEM;
        pthread_mutex_lock(&j->lock);
        r = journal_pending_flush(j, NULL);
        if (r == 0) {
                _cleanup_(json_decrefp) json_t *o = NULL;
                struct timespec now;
                const char *k;
                json_t *v;

                clock_gettime(CLOCK_REALTIME, &now);
                o = journal_entry_header(&now, op);
                json_object_foreach (f, k, v)
                        if (o)
                                json_object_set(o, k, v);
                r = o ? journal_line_write(j, o, j->seq++, true) : -ENOMEM;
        }
        journal_unlock(j);
        return r;
}

int journal_mark_append(int dirfd, const char *name, const char *what, const char *fields_json)
{
        _cleanup_(json_decrefp) json_t *f = mark_fields(fields_json), *o = NULL;
        _cleanup_free_ char *op = NULL, *s = NULL;
        _cleanup_close_ int fd = -1;
        struct timespec now;
        const char *k;
        json_t *v;
        size_t n;

        if (!f)
                return -EINVAL;
        if (asprintf(&op, JOURNAL_MARK_PREFIX "%s", what) < 0)
                return -ENOMEM;
        clock_gettime(CLOCK_REALTIME, &now);
        o = journal_entry_header(&now, op);
        if (!o)
                return -ENOMEM;
        json_object_foreach (f, k, v)
                json_object_set(o, k, v);
        s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        if (!s || (n = strlen(s)) > JOURNAL_LINE_MAX)
                return -ENOMEM;
        s[n] = '\n'; /* over the NUL: written as one line, in one write(2) */
        fd = openat(dirfd, name, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY,
                    0600);
        if (fd < 0)
                return negative_errno();
        if (write(fd, s, n + 1) != (ssize_t)(n + 1))
                return negative_errno();
        return fsync(fd) < 0 ? negative_errno() : 0;
}
