/* SPDX-License-Identifier: MIT */
/*
 * journal-read.c: the reading side of the journal, for `cloister log`.
 *
 * The journal is append-only JSON lines. A reader must survive what a crash
 * or a full disk leaves behind: a last line cut short (no newline), or a
 * damaged line in the middle followed by good ones. Such lines are counted
 * and skipped, never fatal; the caller reports them.
 */
#include <fcntl.h>
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "journal.h"
#include "lib/util.h"

/* A line read ahead of its turn (journal.h, "Order"). */
struct held_line {
        int64_t seq;
        unsigned lineno;
        char *line;
        size_t len;
};

struct journal_reader {
        FILE *f;
        char *line; /* getline's buffer */
        size_t cap;
        char *out; /* the line of the record returned last */
        json_t *cur;
        /* Lines of this session read ahead, a heap by (seq, lineno). */
        struct held_line *heap;
        size_t n_heap, cap_heap;
        uint64_t heap_bytes;
        struct held_line barrier; /* a line without seq, or a journal_open: waits for the heap */
        bool have_barrier, eof;
        unsigned lineno;
        unsigned corrupt;
        unsigned first_corrupt;
        bool truncated;
        char *exact[3]; /* decoded path_hex, path2_hex, name_hex of the current record */
        /* Sessions: journal_open .. journal_close marks. */
        bool session_open; /* a journal_open was read and no journal_close since */
        int64_t session_pid;
        unsigned long long session_start;
        unsigned unclean; /* sessions that ended without their close mark */
        unsigned cuts;    /* journal_truncated marks */
        unsigned coarse;  /* journal_coarse marks */
        bool at_end;
};

int journal_time_parse(const char *s, double *ret)
{
        struct tm tm = {0};
        const char *p;
        double frac = 0;
        time_t t;

        if (!s)
                return -EINVAL;
        p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
        if (!p)
                return -EINVAL;
        if (*p == '.') {
                double scale = 0.1;
                p++;
                if (*p < '0' || *p > '9')
                        return -EINVAL;
                for (; *p >= '0' && *p <= '9'; p++, scale /= 10)
                        frac += (*p - '0') * scale;
        }
        if (!streq(p, "Z"))
                return -EINVAL;
        t = timegm(&tm);
        if (t == (time_t)-1)
                return -EINVAL;
        *ret = (double)t + frac;
        return 0;
}

static int64_t int_field(json_t *o, const char *key, int64_t dflt);

int journal_proc_starttime(pid_t pid, unsigned long long *ret)
{
        char path[64], stat[1024] = "", *p, state;
        _cleanup_fclose_ FILE *f = NULL;
        unsigned long long t;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        f = fopen(path, "re");
        if (!f || !fgets(stat, sizeof(stat), f))
                return -ESRCH;
        /* The command name may hold anything but is in parentheses: skip past the last ')'. */
        p = strrchr(stat, ')');
        if (!p || sscanf(p + 2,
                         "%c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
                         "%*d %*d %*d %llu",
                         &state, &t) != 2)
                return -EIO;
        if (state == 'Z' || state == 'X')
                return -ESRCH; /* killed, not yet reaped: gone all the same */
        *ret = t;
        return 0;
}

/* Is the daemon that wrote the last journal_open still running (not a reused pid)? */
static bool session_live(const journal_reader *r)
{
        unsigned long long t;

        if (r->session_pid <= 0)
                return false;
        return journal_proc_starttime((pid_t)r->session_pid, &t) == 0 && t == r->session_start;
}

/* Keep track of sessions; returns whether a journal_open follows an unclean stop. */
static bool session_note(journal_reader *r, json_t *o, const char *op)
{
        bool unclean = false;

        if (streq(op, JOURNAL_MARK_PREFIX "open")) {
                unclean = r->session_open;
                if (unclean)
                        r->unclean++;
                r->session_open = true;
                r->session_pid = int_field(o, "pid", 0);
                r->session_start = (unsigned long long)int_field(o, "start", 0);
        } else if (streq(op, JOURNAL_MARK_PREFIX "close")) {
                r->session_open = false;
        } else if (streq(op, JOURNAL_MARK_PREFIX "truncated")) {
                r->cuts++;
        } else if (streq(op, JOURNAL_MARK_PREFIX "coarse")) {
                r->coarse++;
        }
        return unclean;
}

int journal_reader_open(int state_dirfd, const char *name, journal_reader **ret)
{
        _cleanup_close_ int fd = -1;
        journal_reader *r;
        struct stat st;

        fd = openat(state_dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->f = fdopen(fd, "re");
        if (!r->f) {
                free(r);
                return negative_errno();
        }
        TAKE_FD(fd);
        *ret = r;
        return 0;
}

void journal_reader_free(journal_reader *r)
{
        if (!r)
                return;
        json_decref(r->cur);
        free(r->line);
        free(r->out);
        for (size_t i = 0; i < r->n_heap; i++)
                free(r->heap[i].line);
        free(r->heap);
        free(r->barrier.line);
        for (size_t i = 0; i < ELEMENTSOF(r->exact); i++)
                free(r->exact[i]);
        fclose(r->f);
        free(r);
}

static const char *str_field(json_t *o, const char *key)
{
        json_t *v = json_object_get(o, key);
        return json_is_string(v) ? json_string_value(v) : NULL;
}

static int64_t int_field(json_t *o, const char *key, int64_t dflt)
{
        json_t *v = json_object_get(o, key);
        return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

/*
 * A name as the agent gave it: the writer keeps a name that is not UTF-8 as
 * a lossy KEY plus its bytes in KEY_hex, and those bytes are what a reader
 * must act on (lstat it, match it, quote it), never the lossy stand-in.
 */
static const char *exact_name(journal_reader *r, json_t *o, const char *key, unsigned slot)
{
        const char *hex;
        char hkey[32];
        size_t len = 0, hl;
        char *nb;

        snprintf(hkey, sizeof(hkey), "%s_hex", key);
        hex = str_field(o, hkey);
        if (!hex)
                return str_field(o, key);
        hl = strlen(hex);
        nb = realloc(r->exact[slot], hl / 2 + 1);
        if (!nb)
                return str_field(o, key);
        r->exact[slot] = nb;
        if (hl % 2 != 0 ||
            sodium_hex2bin((unsigned char *)nb, hl / 2, hex, hl, NULL, &len, NULL) != 0 ||
            len != hl / 2 || memchr(nb, 0, len))
                return str_field(o, key); /* not what the writer makes: the lossy form */
        nb[len] = 0;
        return nb;
}

static void corrupt_note(journal_reader *r)
{
        if (r->corrupt++ == 0)
                r->first_corrupt = r->lineno;
}

static bool held_before(const struct held_line *a, const struct held_line *b)
{
        return a->seq < b->seq || (a->seq == b->seq && a->lineno < b->lineno);
}

static int heap_push(journal_reader *r, struct held_line h)
{
        size_t i;

        if (r->n_heap == r->cap_heap) {
                size_t cap = r->cap_heap ? 2 * r->cap_heap : 256;
                struct held_line *n = reallocarray(r->heap, cap, sizeof(*n));
                if (!n)
                        return -ENOMEM;
                r->heap = n;
                r->cap_heap = cap;
        }
        for (i = r->n_heap++; i > 0 && held_before(&h, &r->heap[(i - 1) / 2]); i = (i - 1) / 2)
                r->heap[i] = r->heap[(i - 1) / 2];
        r->heap[i] = h;
        r->heap_bytes += h.len;
        return 0;
}

static struct held_line heap_pop(journal_reader *r)
{
        struct held_line top = r->heap[0], last = r->heap[--r->n_heap];
        size_t i = 0;

        for (;;) {
                size_t c = 2 * i + 1;
                if (c >= r->n_heap)
                        break;
                if (c + 1 < r->n_heap && held_before(&r->heap[c + 1], &r->heap[c]))
                        c++;
                if (!held_before(&r->heap[c], &last))
                        break;
                r->heap[i] = r->heap[c];
                i = c;
        }
        if (r->n_heap > 0)
                r->heap[i] = last;
        r->heap_bytes -= top.len;
        return top;
}

/*
 * The next raw line that parses, as a held line, or 0 at the end. Damage is
 * counted here, in the order of the file.
 */
static int line_read(journal_reader *r, struct held_line *ret, bool *barrier)
{
        for (;;) {
                ssize_t n;
                json_t *o;
                double t;

                errno = 0;
                n = getline(&r->line, &r->cap, r->f);
                if (n < 0) {
                        if (ferror(r->f))
                                return negative_errno();
                        return 0;
                }
                r->lineno++;
                if (r->line[n - 1] != '\n') {
                        /* Only the last line can lack its newline: a cut-short append. */
                        r->truncated = true;
                        corrupt_note(r);
                        return 0;
                }
                r->line[--n] = 0;
                if (n == 0)
                        continue; /* the separator written after a short write */
                if ((size_t)n > JOURNAL_LINE_MAX || strlen(r->line) != (size_t)n) {
                        corrupt_note(r);
                        continue;
                }
                o = json_loadb(r->line, n, JSON_REJECT_DUPLICATES, NULL);
                if (!json_is_object(o) || !str_field(o, "op") ||
                    journal_time_parse(str_field(o, "time"), &t) < 0) {
                        json_decref(o);
                        corrupt_note(r);
                        continue;
                }
                *ret = (struct held_line){.seq = int_field(o, "seq", -1), .lineno = r->lineno};
                /* A new session numbers from 0 again: what came before goes first. */
                *barrier = ret->seq < 0 || streq(str_field(o, "op"), JOURNAL_MARK_PREFIX "open");
                json_decref(o);
                ret->line = strndup(r->line, (size_t)n);
                if (!ret->line)
                        return -ENOMEM;
                ret->len = (size_t)n;
                return 1;
        }
}

/*
 * The next line in order: lines of a session are read ahead into a heap and
 * come out by "seq" once the heap holds more than the writer can have
 * written ahead of an older line (journal.h, "Order"), or at a barrier (a
 * new session, a line without seq) or the end.
 */
static int line_next_in_order(journal_reader *r, struct held_line *ret)
{
        for (;;) {
                struct held_line h;
                bool barrier = false;
                int k;

                if (r->n_heap > 0 &&
                    (r->eof || r->have_barrier ||
                     r->n_heap > JOURNAL_ORDER_LINES + JOURNAL_ORDER_SLACK_LINES ||
                     r->heap_bytes > (uint64_t)JOURNAL_ORDER_BYTES + JOURNAL_ORDER_SLACK_BYTES)) {
                        *ret = heap_pop(r);
                        return 1;
                }
                if (r->have_barrier) {
                        *ret = r->barrier;
                        r->barrier = (struct held_line){0};
                        r->have_barrier = false;
                        return 1;
                }
                if (r->eof)
                        return 0;
                k = line_read(r, &h, &barrier);
                if (k < 0)
                        return k;
                if (k == 0) {
                        r->eof = true;
                        continue;
                }
                if (barrier) {
                        r->barrier = h;
                        r->have_barrier = true;
                        continue;
                }
                k = heap_push(r, h);
                if (k < 0) {
                        free(h.line);
                        return k;
                }
        }
}

int journal_reader_next(journal_reader *r, struct journal_record *ret)
{
        struct held_line h;
        json_t *o;
        double t;
        int k;

        json_decref(r->cur);
        r->cur = NULL;
        free(r->out);
        r->out = NULL;
        k = line_next_in_order(r, &h);
        if (k <= 0) {
                if (k == 0)
                        r->at_end = true;
                return k;
        }
        r->out = h.line;
        o = json_loadb(r->out, h.len, JSON_REJECT_DUPLICATES, NULL);
        if (!o || journal_time_parse(str_field(o, "time"), &t) < 0) {
                json_decref(o);
                return -ENOMEM; /* it parsed when read */
        }
        r->cur = o;
        const char *op = str_field(o, "op");
        bool mark = startswith(op, JOURNAL_MARK_PREFIX) != NULL;
        bool unclean = mark && session_note(r, o, op);
        *ret = (struct journal_record){
                .line = r->out,
                .time = t,
                .time_str = str_field(o, "time"),
                .op = op,
                .path = exact_name(r, o, "path", 0) ?: "",
                .path2 = exact_name(r, o, "path2", 1),
                .name = exact_name(r, o, "name", 2),
                .comm = str_field(o, "comm"),
                .run_cgroup = str_field(o, "run_cgroup"),
                .pid = int_field(o, "pid", 0),
                .uid = int_field(o, "uid", -1),
                .sandbox_uid = int_field(o, "sandbox_uid", -1),
                .result = int_field(o, "result", 0),
                .count = int_field(o, "count", 1),
                .coarse = !mark && json_is_string(json_object_get(o, "coarse")),
                .mark = mark,
                .after_unclean_stop = unclean,
                .json = o,
        };
        return 1;
}

unsigned journal_reader_corrupt(const journal_reader *r)
{
        return r->corrupt;
}

bool journal_reader_truncated(const journal_reader *r)
{
        return r->truncated;
}

unsigned journal_reader_first_corrupt_line(const journal_reader *r)
{
        return r->first_corrupt;
}

unsigned journal_reader_unclean_stops(const journal_reader *r)
{
        /* The last session counts once the reader is at the end and its daemon is gone. */
        return r->unclean + (r->at_end && r->session_open && !session_live(r) ? 1 : 0);
}

bool journal_reader_live(const journal_reader *r)
{
        return r->at_end && r->session_open && session_live(r);
}

unsigned journal_reader_cuts(const journal_reader *r)
{
        return r->cuts;
}

unsigned journal_reader_coarse(const journal_reader *r)
{
        return r->coarse;
}
