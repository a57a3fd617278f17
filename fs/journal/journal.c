/* SPDX-License-Identifier: MIT */
/*
 * journal.c: the writing side of the journal (journal.h).
 *
 * Each entry is one JSON object on one line, appended with a single write(2)
 * on an O_APPEND descriptor, so entries from concurrent FUSE worker threads
 * never interleave and a crash leaves at most one cut-short last line. If a
 * write comes back short (full disk), the next entry starts with a newline
 * so that only the damaged line is lost.
 *
 * Successful writes are coalesced (see JOURNAL_COALESCE_MS in journal.h) in
 * a small table of pending entries; a flusher thread writes them out once
 * idle. j->lock protects everything in struct journal, including the fd's
 * file position-independent appends (taken so that entries stay ordered).
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

#include "journal.h"
#include "lib/util.h"

struct pending {
        bool used;
        char *path;
        struct journal_caller who;
        char comm[32];
        bool have_comm;
        uint64_t offset, end, count;
        struct timespec first; /* CLOCK_REALTIME of the first write */
        struct timespec last;  /* CLOCK_MONOTONIC of the latest write */
};

struct journal {
        int fd;
        pthread_mutex_t lock;
        pthread_cond_t cond; /* wakes the flusher: new pending entry or stop */
        pthread_t flusher;
        bool flusher_running, stop;
        bool need_newline; /* the file does not end with '\n' (short write, crash) */
        struct pending slots[JOURNAL_COALESCE_SLOTS];
};

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
static bool comm_read(pid_t pid, char *buf, size_t size)
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

/* Store a name; non-UTF-8 names get a lossy "key" and the exact bytes in "key_hex". */
static int json_set_name(json_t *o, const char *key, const char *value)
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

static int json_set_int(json_t *o, const char *key, json_int_t v)
{
        return json_object_set_new(o, key, json_integer(v)) < 0 ? -ENOMEM : 0;
}

/* Append one serialized object as one line, in one write(2). Called with j->lock held. */
static int line_write(journal *j, json_t *o)
{
        _cleanup_free_ char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        _cleanup_free_ char *buf = NULL;
        size_t n, off = 0;
        ssize_t w;

        if (!s)
                return -ENOMEM;
        n = strlen(s);
        if (n > JOURNAL_LINE_MAX)
                return -ENAMETOOLONG; /* the reader would skip it as damage */
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
        j->need_newline = (size_t)w != off;
        if ((size_t)w != off)
                return -ENOSPC;
        return 0;
}

static json_t *entry_header(const struct timespec *when, const char *op)
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

static int entry_caller(json_t *o, const struct journal_caller *who, const char *comm, int result)
{
        int r = 0;

        r = json_set_int(o, "result", result);
        if (r == 0 && result < 0 && strerrorname_np(-result))
                r = json_object_set_new(o, "error", json_string(strerrorname_np(-result))) < 0
                            ? -ENOMEM
                            : 0;
        if (r == 0)
                r = json_set_int(o, "pid", who ? who->pid : 0);
        if (r == 0)
                r = json_set_int(o, "uid", who ? (json_int_t)who->uid : -1);
        if (r == 0)
                r = json_set_int(o, "gid", who ? (json_int_t)who->gid : -1);
        if (r == 0 && who && who->in_sandbox)
                r = json_set_int(o, "sandbox_uid", (json_int_t)who->sandbox_uid);
        if (r == 0)
                r = json_object_set_new(o, "comm", comm ? json_string(comm) : json_null()) < 0
                            ? -ENOMEM
                            : 0;
        return r;
}

static int pending_write(journal *j, struct pending *p)
{
        _cleanup_(json_decrefp) json_t *o = entry_header(&p->first, "write");
        int r;

        if (!o)
                return -ENOMEM;
        r = json_set_name(o, "path", p->path);
        if (r == 0)
                r = json_set_int(o, "offset", (json_int_t)p->offset);
        if (r == 0)
                r = json_set_int(o, "length", (json_int_t)(p->end - p->offset));
        if (r == 0)
                r = json_set_int(o, "count", (json_int_t)p->count);
        if (r == 0)
                r = entry_caller(o, &p->who, p->have_comm ? p->comm : NULL, 0);
        if (r == 0)
                r = line_write(j, o);
        return r;
}

static void pending_clear(struct pending *p)
{
        free(p->path);
        *p = (struct pending){0};
}

/* Write out pending entries, oldest first; all of them, or only those idle since `idle_before`. */
static int pending_flush(journal *j, const struct timespec *idle_before)
{
        int ret = 0;

        for (;;) {
                struct pending *oldest = NULL;
                for (size_t i = 0; i < JOURNAL_COALESCE_SLOTS; i++) {
                        struct pending *p = &j->slots[i];
                        if (!p->used)
                                continue;
                        if (idle_before && (p->last.tv_sec > idle_before->tv_sec ||
                                            (p->last.tv_sec == idle_before->tv_sec &&
                                             p->last.tv_nsec > idle_before->tv_nsec)))
                                continue;
                        if (!oldest || p->first.tv_sec < oldest->first.tv_sec ||
                            (p->first.tv_sec == oldest->first.tv_sec &&
                             p->first.tv_nsec < oldest->first.tv_nsec))
                                oldest = p;
                }
                if (!oldest)
                        return ret;
                int r = pending_write(j, oldest);
                if (r < 0 && ret == 0)
                        ret = r;
                pending_clear(oldest);
        }
}

static void timespec_add_ms(struct timespec *t, long ms)
{
        t->tv_sec += ms / 1000;
        t->tv_nsec += (ms % 1000) * 1000000L;
        if (t->tv_nsec >= 1000000000L) {
                t->tv_sec++;
                t->tv_nsec -= 1000000000L;
        }
}

static void *flusher_main(void *arg)
{
        journal *j = arg;

        pthread_mutex_lock(&j->lock);
        while (!j->stop) {
                struct timespec now, deadline = {0}, cutoff;
                bool any = false;

                for (size_t i = 0; i < JOURNAL_COALESCE_SLOTS; i++) {
                        struct pending *p = &j->slots[i];
                        struct timespec d = p->last;
                        if (!p->used)
                                continue;
                        timespec_add_ms(&d, JOURNAL_COALESCE_MS);
                        if (!any || d.tv_sec < deadline.tv_sec ||
                            (d.tv_sec == deadline.tv_sec && d.tv_nsec < deadline.tv_nsec))
                                deadline = d;
                        any = true;
                }
                if (!any) {
                        pthread_cond_wait(&j->cond, &j->lock);
                        continue;
                }
                pthread_cond_timedwait(&j->cond, &j->lock, &deadline);
                clock_gettime(CLOCK_MONOTONIC, &now);
                cutoff = now;
                cutoff.tv_sec -= JOURNAL_COALESCE_MS / 1000;
                cutoff.tv_nsec -= (JOURNAL_COALESCE_MS % 1000) * 1000000L;
                if (cutoff.tv_nsec < 0) {
                        cutoff.tv_sec--;
                        cutoff.tv_nsec += 1000000000L;
                }
                /* A failure here has no caller to report to; the entry is dropped. */
                (void)pending_flush(j, &cutoff);
        }
        pthread_mutex_unlock(&j->lock);
        return NULL;
}

int journal_open(int state_dirfd, const char *name, journal **ret)
{
        _cleanup_close_ int fd = -1;
        pthread_condattr_t ca;
        struct stat st;
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
        pthread_mutex_init(&j->lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&j->cond, &ca);
        pthread_condattr_destroy(&ca);
        j->fd = TAKE_FD(fd);
        *ret = j;
        return 0;
}

void journal_free(journal *j)
{
        if (!j)
                return;
        pthread_mutex_lock(&j->lock);
        j->stop = true;
        pthread_cond_signal(&j->cond);
        pthread_mutex_unlock(&j->lock);
        if (j->flusher_running)
                pthread_join(j->flusher, NULL);
        (void)pending_flush(j, NULL);
        safe_close(j->fd);
        pthread_cond_destroy(&j->cond);
        pthread_mutex_destroy(&j->lock);
        free(j);
}

int journal_flush(journal *j)
{
        int r;

        pthread_mutex_lock(&j->lock);
        r = pending_flush(j, NULL);
        pthread_mutex_unlock(&j->lock);
        return r;
}

/* Merge a successful write into a pending entry or open a new one. Called with j->lock held. */
static int write_coalesce(journal *j, const struct journal_caller *who,
                          const struct journal_entry *e)
{
        struct timespec now;
        struct pending *p = NULL, *free_slot = NULL, *oldest = NULL;
        uint64_t end = e->offset + e->length;
        pid_t pid = who ? who->pid : 0;
        int r = 0;

        if (end < e->offset)
                end = UINT64_MAX;
        clock_gettime(CLOCK_MONOTONIC, &now);
        for (size_t i = 0; i < JOURNAL_COALESCE_SLOTS; i++) {
                struct pending *s = &j->slots[i];
                if (!s->used) {
                        if (!free_slot)
                                free_slot = s;
                        continue;
                }
                if (s->who.pid == pid && streq(s->path, e->path))
                        p = s;
                if (!oldest || s->first.tv_sec < oldest->first.tv_sec ||
                    (s->first.tv_sec == oldest->first.tv_sec &&
                     s->first.tv_nsec < oldest->first.tv_nsec))
                        oldest = s;
        }
        if (p) {
                struct timespec d = p->last;
                timespec_add_ms(&d, JOURNAL_COALESCE_MS);
                bool fresh = now.tv_sec < d.tv_sec ||
                             (now.tv_sec == d.tv_sec && now.tv_nsec <= d.tv_nsec);
                if (fresh && e->offset <= p->end && end >= p->offset) {
                        p->offset = MIN(p->offset, e->offset);
                        p->end = MAX(p->end, end);
                        p->count++;
                        p->last = now;
                        return 0;
                }
                r = pending_write(j, p);
                pending_clear(p);
                free_slot = p;
        } else if (!free_slot) {
                r = pending_write(j, oldest);
                pending_clear(oldest);
                free_slot = oldest;
        }
        p = free_slot;
        p->path = strdup(e->path);
        if (!p->path)
                return -ENOMEM;
        p->used = true;
        if (who)
                p->who = *who;
        p->have_comm = comm_read(pid, p->comm, sizeof(p->comm));
        p->offset = e->offset;
        p->end = end;
        p->count = 1;
        p->last = now;
        clock_gettime(CLOCK_REALTIME, &p->first);
        if (!j->flusher_running) {
                /* Started lazily, so a daemon that forks after journal_open keeps it. */
                if (pthread_create(&j->flusher, NULL, flusher_main, j) == 0)
                        j->flusher_running = true;
        }
        pthread_cond_signal(&j->cond);
        return r;
}

static int entry_build(const struct journal_caller *who, const struct journal_entry *e,
                       json_t **ret)
{
        _cleanup_(json_decrefp) json_t *o = NULL;
        struct timespec now;
        char comm[32];
        const char *op = journal_op_to_string(e->op);
        int r;

        if (!op || !e->path)
                return -EINVAL;
        clock_gettime(CLOCK_REALTIME, &now);
        o = entry_header(&now, op);
        if (!o)
                return -ENOMEM;
        r = json_set_name(o, "path", e->path);
        if (r == 0 && e->path2)
                r = json_set_name(o, "path2", e->path2);
        if (r < 0)
                return r;
        switch (e->op) {
        case JOURNAL_WRITE:
                r = json_set_int(o, "offset", (json_int_t)e->offset);
                if (r == 0)
                        r = json_set_int(o, "length", (json_int_t)e->length);
                if (r == 0)
                        r = json_set_int(o, "count", 1);
                break;
        case JOURNAL_TRUNCATE:
                r = json_set_int(o, "size", (json_int_t)e->offset);
                break;
        case JOURNAL_CREATE:
        case JOURNAL_MKDIR:
        case JOURNAL_CHMOD:
        case JOURNAL_MKNOD:
                r = json_set_int(o, "mode", e->mode);
                break;
        case JOURNAL_CHOWN:
                r = json_set_int(o, "owner_uid", e->uid);
                if (r == 0)
                        r = json_set_int(o, "owner_gid", e->gid);
                break;
        case JOURNAL_SETXATTR:
        case JOURNAL_REMOVEXATTR:
                if (e->name)
                        r = json_set_name(o, "name", e->name);
                break;
        default:
                break;
        }
        if (r == 0)
                r = entry_caller(o, who,
                                 comm_read(who ? who->pid : 0, comm, sizeof(comm)) ? comm : NULL,
                                 e->result);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

int journal_append(journal *j, const struct journal_caller *who, const struct journal_entry *e)
{
        _cleanup_(json_decrefp) json_t *o = NULL;
        int r;

        if (!j || !e || !e->path)
                return -EINVAL;
        if (e->op == JOURNAL_WRITE && e->result == 0) {
                pthread_mutex_lock(&j->lock);
                r = write_coalesce(j, who, e);
                pthread_mutex_unlock(&j->lock);
                return r;
        }
        /* Build outside the lock: reading /proc and serializing need no shared state. */
        r = entry_build(who, e, &o);
        if (r < 0)
                return r;
        /* Pending writes go first to keep order; their failure is not this op's. */
        pthread_mutex_lock(&j->lock);
        (void)pending_flush(j, NULL);
        r = line_write(j, o);
        pthread_mutex_unlock(&j->lock);
        return r;
}
