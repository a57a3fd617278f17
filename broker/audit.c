/* SPDX-License-Identifier: MIT */
/*
 * audit.c: append to and verify the hash-chained audit log.
 *
 * Why hash the exact bytes and not re-serialized JSON: a verifier in any
 * language can check a line with one BLAKE2b call and string slicing, and
 * no JSON library's formatting choices can break old logs.
 */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "lib/logsink.h"
#include "lib/util.h"

#define HASH_LEN  32
#define HEX_LEN   (HASH_LEN * 2)
#define HASH_KEY  ",\"hash\":\""
#define HEAD_SIZE 96

struct broker_audit {
        int fd;
        int head_fd;
        uint64_t seq;
        char prev[HEX_LEN + 1];
        off_t size;
        bool head_dirty;     /* appended since audit.head was last written */
        uint64_t max_bytes;  /* 0: no bound */
        bool full;           /* the audit_full line is written: appends fail */
        uint64_t suppressed; /* noise lines counted, not written, since the last one */
        double noise_tokens; /* token bucket of noise lines */
        int64_t noise_at;    /* when it was last filled */
        char *text;          /* broker_audit_append_text's line, reused */
        size_t text_cap;
        char stream[16]; /* the file's name without .jsonl: "audit", "net" (logsink.h) */
        char *name;      /* the workspace, for logsink.h; NULL: the sink's own */
};

static int reason_set(char **ret, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int reason_set(char **ret, const char *fmt, ...)
{
        va_list ap;

        if (!ret)
                return -EBADMSG;
        va_start(ap, fmt);
        if (vasprintf(ret, fmt, ap) < 0)
                *ret = NULL;
        va_end(ap);
        return -EBADMSG;
}

static void hash_hex(const char *data, size_t len, char out[HEX_LEN + 1])
{
        unsigned char h[HASH_LEN];

        crypto_generichash(h, sizeof(h), (const unsigned char *)data, len, NULL, 0);
        sodium_bin2hex(out, HEX_LEN + 1, h, sizeof(h));
}

struct scan {
        uint64_t seq;
        char prev[HEX_LEN + 1];
        unsigned lines;
        broker_audit_replay_fn replay;
        void *userdata;
};

/*
 * One line (without its newline, at most BROKER_AUDIT_LINE_MAX bytes): its
 * hash checked against its bytes and its body parsed, with "seq" and
 * "prev". *ret is the entry; the chain is the caller's to check.
 */
static int line_parse(char *line, size_t len, unsigned n, json_t **ret, char **reason)
{
        char want[HEX_LEN + 1], *body;
        size_t suffix = strlen(HASH_KEY) + HEX_LEN + 2, body_len;
        json_t *o;

        if (len < suffix + 2 || memcmp(line + len - suffix, HASH_KEY, strlen(HASH_KEY)) != 0 ||
            memcmp(line + len - 2, "\"}", 2) != 0)
                return reason_set(reason, "line %u: no hash at its end (edited or truncated)", n);
        body_len = len - suffix + 1;
        body = line; /* hash covers body[0..body_len-1) + "}" */
        {
                char saved = body[body_len - 1];
                body[body_len - 1] = '}';
                hash_hex(body, body_len, want);
                o = json_loadb(body, body_len, JSON_REJECT_DUPLICATES, NULL);
                body[body_len - 1] = saved;
        }
        if (sodium_memcmp(want, line + len - HEX_LEN - 2, HEX_LEN) != 0) {
                json_decref(o);
                return reason_set(reason, "line %u: edited (its hash does not match its content)",
                                  n);
        }
        if (!json_is_object(o) || !json_is_integer(json_object_get(o, "seq")) ||
            !json_is_string(json_object_get(o, "prev"))) {
                json_decref(o);
                return reason_set(reason, "line %u: not an audit entry (edited)", n);
        }
        *ret = o;
        return 0;
}

/* Check one line (without its newline) against the chain so far. */
static int scan_line(struct scan *s, char *line, size_t len, unsigned n, char **reason)
{
        json_t *o = NULL, *seq, *prev;
        int r;

        r = line_parse(line, len, n, &o, reason);
        if (r < 0)
                return r;
        seq = json_object_get(o, "seq");
        prev = json_object_get(o, "prev");
        if ((uint64_t)json_integer_value(seq) > s->seq + 1)
                r = reason_set(reason,
                               "line %u: seq %lld where %llu was expected: %lld line(s) deleted "
                               "before it",
                               n, (long long)json_integer_value(seq),
                               (unsigned long long)s->seq + 1,
                               (long long)(json_integer_value(seq) - (json_int_t)s->seq - 1));
        else if ((uint64_t)json_integer_value(seq) != s->seq + 1)
                r = reason_set(reason,
                               "line %u: seq %lld where %llu was expected: lines reordered or "
                               "duplicated",
                               n, (long long)json_integer_value(seq),
                               (unsigned long long)s->seq + 1);
        else if (!streq(json_string_value(prev), s->prev))
                r = reason_set(reason,
                               "line %u: does not chain to the line before it (that line was "
                               "edited, or lines were reordered)",
                               n);
        if (r == 0 && s->replay)
                r = s->replay(s->userdata, o);
        json_decref(o);
        if (r < 0)
                return r;
        s->seq++;
        memcpy(s->prev, line + len - HEX_LEN - 2, HEX_LEN);
        s->prev[HEX_LEN] = '\0';
        s->lines = n;
        return 0;
}

static int scan_file(FILE *f, struct scan *s, unsigned *ret_line, char **reason)
{
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;
        unsigned n = 0;
        ssize_t len;

        memset(s->prev, '0', HEX_LEN);
        s->prev[HEX_LEN] = '\0';
        while ((len = getline(&line, &cap, f)) >= 0) {
                int r;

                n++;
                if (len == 0 || line[len - 1] != '\n') {
                        *ret_line = n;
                        return reason_set(reason, "line %u: incomplete last line (truncated)", n);
                }
                line[--len] = '\0';
                if ((size_t)len > BROKER_AUDIT_LINE_MAX || memchr(line, '\0', (size_t)len)) {
                        *ret_line = n;
                        return reason_set(reason, "line %u: not an audit entry (edited)", n);
                }
                r = scan_line(s, line, (size_t)len, n, reason);
                if (r < 0) {
                        *ret_line = n;
                        return r;
                }
        }
        if (ferror(f))
                return -EIO;
        return 0;
}

/* "SEQ HASH\n": the end of the chain as last written. */
static int head_check(int head_fd, const struct scan *s, unsigned *ret_line, char **reason)
{
        char buf[HEAD_SIZE + 1], hash[HEX_LEN + 1];
        unsigned long long seq;
        ssize_t n;

        n = pread(head_fd, buf, HEAD_SIZE, 0);
        if (n < 0)
                return negative_errno();
        /* A head is written when its log is made, before any line: an empty
         * one beside lines means the head was emptied, and the end with it. */
        if (n == 0 && s->lines == 0)
                return 0;
        if (n == 0) {
                *ret_line = s->lines + 1;
                return reason_set(reason,
                                  "the head file is empty but the log has %u line(s): its end "
                                  "can't be checked (lines may have been deleted at the end)",
                                  s->lines);
        }
        buf[n] = '\0';
        if (sscanf(buf, "%llu %64s", &seq, hash) != 2)
                return reason_set(reason, "the head file is malformed (edited)");
        if (seq > s->seq) {
                *ret_line = s->lines + 1;
                return reason_set(reason,
                                  "line %u: %llu line(s) deleted at the end (the log stops at "
                                  "seq %llu, the head says %llu)",
                                  s->lines + 1, seq - s->seq, (unsigned long long)s->seq, seq);
        }
        if (seq == s->seq && !streq(hash, s->prev)) {
                *ret_line = s->lines;
                return reason_set(reason, "line %u: the last line was replaced (head mismatch)",
                                  s->lines);
        }
        return 0;
}

int broker_audit_verify(const char *path, unsigned *ret_lines, unsigned *ret_line,
                        char **ret_reason)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        _cleanup_free_ char *head = NULL;
        _cleanup_close_ int head_fd = -1;
        struct scan s = {0};
        unsigned line = 0;
        const char *slash;
        int r;

        *ret_reason = NULL;
        if (!f)
                return negative_errno();
        r = scan_file(f, &s, &line, ret_reason);
        if (r < 0) {
                *ret_line = line;
                return r;
        }
        /* NAME.jsonl is chained to NAME.head beside it (audit.head, net.head). */
        slash = strrchr(path, '/');
        size_t pl = strlen(path);
        if (pl > 6 && streq(path + pl - 6, ".jsonl") && (!slash || path + pl - 6 > slash + 1)) {
                if (asprintf(&head, "%.*s.head", (int)(pl - 6), path) < 0)
                        return -ENOMEM;
        } else if (asprintf(&head, "%.*s%s", slash ? (int)(slash - path + 1) : 0, path,
                            BROKER_AUDIT_HEAD) < 0) {
                return -ENOMEM;
        }
        head_fd = open(head, O_RDONLY | O_CLOEXEC);
        if (head_fd < 0 && errno != ENOENT)
                return negative_errno();
        if (head_fd < 0 && s.lines > 0) {
                /* The head is made with the log: without it, deleting lines
                 * at the end would go unseen. */
                *ret_line = s.lines + 1;
                return reason_set(ret_reason,
                                  "the head file %s is missing but the log has %u line(s): its "
                                  "end can't be checked (lines may have been deleted at the end)",
                                  head, s.lines);
        }
        if (head_fd >= 0) {
                r = head_check(head_fd, &s, &line, ret_reason);
                if (r < 0) {
                        *ret_line = line;
                        return r;
                }
        }
        *ret_lines = s.lines;
        return 0;
}

int broker_audit_open(int dirfd, const char *dir, broker_audit_replay_fn replay, void *userdata,
                      broker_audit **ret, char **ret_error)
{
        return broker_audit_open_file(dirfd, dir, BROKER_AUDIT_FILE, BROKER_AUDIT_HEAD, replay,
                                      userdata, ret, ret_error);
}

int broker_audit_open_file(int dirfd, const char *dir, const char *file, const char *head_file,
                           broker_audit_replay_fn replay, void *userdata, broker_audit **ret,
                           char **ret_error)
{
        _cleanup_close_ int fd = -1, head_fd = -1;
        _cleanup_free_ char *reason = NULL;
        struct scan s = {.replay = replay, .userdata = userdata};
        broker_audit *a;
        unsigned line = 0;
        FILE *f;
        int r, dup_fd;

        fd = openat(dirfd, file, O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
                r = negative_errno();
                if (asprintf(ret_error, "%s/%s: cannot open: %s", dir, file, strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        /* The head is made only with an empty log; a log with lines and no
         * head has lost its end's check, and scan below refuses it. */
        head_fd = openat(dirfd, head_file, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
        if (head_fd < 0 && errno == ENOENT && lseek(fd, 0, SEEK_END) == 0)
                head_fd = openat(dirfd, head_file, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        else if (head_fd < 0 && errno == ENOENT) {
                if (asprintf(ret_error,
                             "%s/%s: the log has lines but its head %s is missing: its end "
                             "can't be checked (lines may have been deleted at the end); "
                             "refusing to continue a tampered log (move it aside after review)",
                             dir, file, head_file) < 0)
                        *ret_error = NULL;
                return -EBADMSG;
        }
        if (head_fd < 0) {
                r = negative_errno();
                if (asprintf(ret_error, "%s/%s: cannot open: %s", dir, head_file, strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (dup_fd < 0)
                return negative_errno();
        f = fdopen(dup_fd, "r");
        if (!f) {
                safe_close(dup_fd);
                return -ENOMEM;
        }
        r = scan_file(f, &s, &line, &reason);
        fclose(f);
        if (r == 0)
                r = head_check(head_fd, &s, &line, &reason);
        if (r < 0) {
                if (asprintf(ret_error,
                             "%s/%s: %s; refusing to continue a tampered log (move it aside "
                             "after review)",
                             dir, file, reason ? reason : strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        a->size = lseek(fd, 0, SEEK_END);
        a->fd = TAKE_FD(fd);
        snprintf(a->stream, sizeof(a->stream), "%.*s", (int)strcspn(file, "."), file);
        a->head_fd = TAKE_FD(head_fd);
        a->seq = s.seq;
        memcpy(a->prev, s.prev, sizeof(a->prev));
        /* A new log: its head ("0 000...") before its first line, so that
         * a head found empty or missing later means tampering, not a crash. */
        struct stat hst;
        if (fstat(a->head_fd, &hst) == 0 && hst.st_size == 0) {
                a->head_dirty = true;
                r = broker_audit_sync_head(a);
                if (r == 0 && fdatasync(a->head_fd) < 0)
                        r = negative_errno();
                if (r < 0) {
                        if (asprintf(ret_error, "%s/%s: cannot write: %s", dir, head_file,
                                     strerror(-r)) < 0)
                                *ret_error = NULL;
                        safe_close(a->fd);
                        safe_close(a->head_fd);
                        free(a);
                        return r;
                }
        }
        *ret = a;
        return 0;
}

/* Each line of a log whole-checked by broker_audit_open_tail(): its audit_full line. */
static int full_replay(void *userdata, json_t *entry)
{
        if (streq_ptr(json_string_value(json_object_get(entry, "event")), "audit_full"))
                *(bool *)userdata = true;
        return 0;
}

/*
 * The chain's end from the log's last line and its head alone: 1 if they
 * agree (the line complete, its own hash right, and the head naming it or
 * the line it chains to: a head one append behind, as a writer that died
 * between its line and its head leaves it), 0 if anything else (the caller
 * checks the whole log then, which accepts a head further behind and names
 * what was tampered with), or a negative errno. Reads the head and the last
 * line (4 KiB, or a few times that for a long line; BROKER_AUDIT_LINE_MAX
 * at most), however long the log is.
 */
static int tail_read(int fd, int head_fd, off_t size, uint64_t *ret_seq, char ret_prev[HEX_LEN + 1],
                     bool *ret_full)
{
        _cleanup_free_ char *buf = NULL;
        char head[HEAD_SIZE + 1], head_hash[HEX_LEN + 1];
        unsigned long long head_seq;
        size_t cap, want, start, len;
        const char *hash;
        json_t *o = NULL;
        uint64_t seq;
        ssize_t n;
        char *nl;
        int ok;

        n = pread(head_fd, head, HEAD_SIZE, 0);
        if (n < 0)
                return negative_errno();
        head[n] = '\0';
        if (sscanf(head, "%llu %64s", &head_seq, head_hash) != 2 || strlen(head_hash) != HEX_LEN)
                return 0;
        /* Most lines are short: 4 KiB first, more only for a longer one. */
        cap = (size_t)MIN((uint64_t)size, (uint64_t)BROKER_AUDIT_LINE_MAX + 2);
        for (want = MIN(cap, (size_t)4096);; want = MIN(cap, want * 4)) {
                char *nb = realloc(buf, want);
                if (!nb)
                        return -ENOMEM;
                buf = nb;
                n = pread(fd, buf, want, size - (off_t)want);
                if (n < 0)
                        return negative_errno();
                if ((size_t)n != want || buf[want - 1] != '\n')
                        return 0; /* changed under us, or an incomplete last line */
                nl = memrchr(buf, '\n', want - 1);
                if (nl || want == cap)
                        break;
        }
        if (!nl && want < (size_t)size)
                return 0; /* a last line longer than any the log writes */
        start = nl ? (size_t)(nl - buf) + 1 : 0;
        len = want - 1 - start;
        if (len > BROKER_AUDIT_LINE_MAX || memchr(buf + start, '\0', len) ||
            line_parse(buf + start, len, 0, &o, NULL) < 0)
                return 0;
        seq = (uint64_t)json_integer_value(json_object_get(o, "seq"));
        hash = buf + start + len - HEX_LEN - 2;
        ok = (seq == head_seq && memcmp(hash, head_hash, HEX_LEN) == 0) ||
             (seq == head_seq + 1 &&
              streq(json_string_value(json_object_get(o, "prev")), head_hash));
        if (ok) {
                *ret_seq = seq;
                memcpy(ret_prev, hash, HEX_LEN);
                ret_prev[HEX_LEN] = '\0';
                *ret_full = streq_ptr(json_string_value(json_object_get(o, "event")), "audit_full");
        }
        json_decref(o);
        return ok;
}

int broker_audit_open_tail(int dirfd, const char *dir, const char *file, const char *head_file,
                           broker_audit **ret, char **ret_error)
{
        _cleanup_close_ int fd = -1, head_fd = -1;
        char prev[HEX_LEN + 1];
        bool full = false;
        uint64_t seq = 0;
        broker_audit *a;
        off_t size = -1;
        int r = 0;

        fd = openat(dirfd, file, O_RDWR | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0)
                head_fd = openat(dirfd, head_file, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
        if (head_fd >= 0)
                size = lseek(fd, 0, SEEK_END);
        if (size > 0)
                r = tail_read(fd, head_fd, size, &seq, prev, &full);
        if (r < 0) {
                if (asprintf(ret_error, "%s/%s: cannot read: %s", dir, file, strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        if (r == 0) {
                /* A new log, a head further behind, or tampering: the whole
                 * check, which refuses a tampered log and says why. */
                r = broker_audit_open_file(dirfd, dir, file, head_file, full_replay, &full, &a,
                                           ret_error);
                if (r < 0)
                        return r;
                a->full = full;
                *ret = a;
                return 0;
        }
        a = calloc(1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        a->size = size;
        a->fd = TAKE_FD(fd);
        a->head_fd = TAKE_FD(head_fd);
        snprintf(a->stream, sizeof(a->stream), "%.*s", (int)strcspn(file, "."), file);
        a->seq = seq;
        memcpy(a->prev, prev, sizeof(a->prev));
        a->full = full;
        *ret = a;
        return 0;
}

static int line_append(broker_audit *a, json_t *entry, int64_t now, bool reserve);

/* The bound is reached: say so once, in the reserve; then every append fails. */
static void audit_full(broker_audit *a, int64_t now)
{
        json_t *e;

        if (a->full)
                return;
        a->full = true;
        e = json_pack("{s:s, s:I, s:I}", "event", "audit_full", "max_bytes",
                      (json_int_t)a->max_bytes, "suppressed", (json_int_t)a->suppressed);
        if (e)
                (void)line_append(a, e, now, true);
        json_decref(e);
}

int broker_audit_append(broker_audit *a, json_t *entry, int64_t now)
{
        return line_append(a, entry, now, false);
}

void broker_audit_set_max(broker_audit *a, uint64_t max_bytes)
{
        a->max_bytes = max_bytes;
        a->noise_tokens = BROKER_AUDIT_NOISE_BURST;
}

int broker_audit_append_noise(broker_audit *a, json_t *entry, int64_t now)
{
        if (now > a->noise_at) {
                a->noise_tokens += (double)(now - a->noise_at) * BROKER_AUDIT_NOISE_RATE;
                if (a->noise_tokens > BROKER_AUDIT_NOISE_BURST)
                        a->noise_tokens = BROKER_AUDIT_NOISE_BURST;
                a->noise_at = now;
        }
        if (a->full || a->noise_tokens < 1 ||
            (a->max_bytes && (uint64_t)a->size > a->max_bytes / 2)) {
                a->suppressed++;
                return 1;
        }
        a->noise_tokens -= 1;
        if (a->suppressed &&
            json_object_set_new(entry, "suppressed", json_integer((json_int_t)a->suppressed)) < 0)
                return -ENOMEM;
        int r = line_append(a, entry, now, false);
        if (r == 0)
                a->suppressed = 0;
        return r;
}

/* What a line adds to its entry's text: ,"hash":"HEX"} and the newline, less the '}' it replaces.
 */
#define LINE_EXTRA (sizeof(HASH_KEY) - 1 + HEX_LEN + 2)

/*
 * Hash and write one entry's text: buf holds blen bytes ("{...}") and has
 * room for LINE_EXTRA more. On any failure the log is left as it was.
 */
static int line_write(broker_audit *a, char *buf, size_t blen, int64_t now, bool reserve)
{
        char hash[HEX_LEN + 1];
        size_t len;
        int r = 0;

        if (blen > BROKER_AUDIT_LINE_MAX - 100 || blen < 2)
                return -E2BIG;
        hash_hex(buf, blen, hash);
        len = blen - 1;
        memcpy(buf + len, HASH_KEY, sizeof(HASH_KEY) - 1);
        len += sizeof(HASH_KEY) - 1;
        memcpy(buf + len, hash, HEX_LEN);
        len += HEX_LEN;
        memcpy(buf + len, "\"}\n", 3);
        len += 3;
        if (a->max_bytes && (uint64_t)a->size + (uint64_t)len >
                                    (reserve ? a->max_bytes
                                             : (a->max_bytes > BROKER_AUDIT_RESERVE
                                                        ? a->max_bytes - BROKER_AUDIT_RESERVE
                                                        : 0))) {
                if (reserve)
                        return -EDQUOT;
                /* Not written: the audit_full line takes its place in the chain. */
                audit_full(a, now);
                return -EDQUOT;
        }
        for (size_t off = 0; off < len;) {
                ssize_t n = write(a->fd, buf + off, len - off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        r = n < 0 ? negative_errno() : -EIO;
                        /* Leave no half line: the chain must stay verifiable.
                         * If even that fails, the write's error is the one to
                         * report ((void) does not quiet glibc's
                         * warn_unused_result, which the package build's
                         * _FORTIFY_SOURCE turns on). */
                        if (ftruncate(a->fd, a->size) < 0) {
                        }
                        return r;
                }
                off += (size_t)n;
        }
        logsink_line(a->stream, a->name, buf, len);
        a->size += (off_t)len;
        a->seq++;
        memcpy(a->prev, hash, sizeof(hash));
        a->head_dirty = true;
        return 0;
}

static int line_append(broker_audit *a, json_t *entry, int64_t now, bool reserve)
{
        _cleanup_free_ char *body = NULL;
        size_t blen;
        char *line;

        if (a->full && !reserve)
                return -EDQUOT;

        if (json_object_set_new(entry, "seq", json_integer((json_int_t)(a->seq + 1))) < 0 ||
            json_object_set_new(entry, "time", json_integer(now)) < 0 ||
            json_object_set_new(entry, "prev", json_string(a->prev)) < 0)
                return -ENOMEM;
        body = json_dumps(entry, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
        if (!body)
                return -ENOMEM;
        blen = strlen(body);
        if (blen > BROKER_AUDIT_LINE_MAX)
                return -E2BIG;
        line = realloc(body, blen + LINE_EXTRA);
        if (!line)
                return -ENOMEM;
        body = line;
        return line_write(a, body, blen, now, reserve);
}

int broker_audit_append_text(broker_audit *a, const char *head, size_t head_len, const char *tail,
                             size_t tail_len, int64_t now)
{
        char num[64];
        size_t blen, nl;
        char *p;

        if (a->full)
                return -EDQUOT;
        if (head_len < 1 || head[0] != '{' || (head_len > 1 && head[head_len - 1] != ',') ||
            tail_len < 2 || tail[tail_len - 1] != '}')
                return -EINVAL;
        if (head_len > BROKER_AUDIT_LINE_MAX || tail_len > BROKER_AUDIT_LINE_MAX)
                return -E2BIG;
        nl = (size_t)snprintf(num, sizeof(num), ",\"seq\":%llu,\"time\":%lld,",
                              (unsigned long long)(a->seq + 1), (long long)now);
        blen = head_len + strlen("\"prev\":\"") + HEX_LEN + 1 + nl + tail_len;
        if (blen + LINE_EXTRA > a->text_cap) {
                size_t cap = MAX(blen + LINE_EXTRA, (size_t)4096);
                char *nb = realloc(a->text, cap);
                if (!nb)
                        return -ENOMEM;
                a->text = nb;
                a->text_cap = cap;
        }
        p = a->text;
        memcpy(p, head, head_len);
        p += head_len;
        memcpy(p, "\"prev\":\"", strlen("\"prev\":\""));
        p += strlen("\"prev\":\"");
        memcpy(p, a->prev, HEX_LEN);
        p += HEX_LEN;
        *p++ = '"';
        memcpy(p, num, nl);
        p += nl;
        memcpy(p, tail, tail_len);
        return line_write(a, a->text, blen, now, false);
}

bool broker_audit_head_stale(const broker_audit *a)
{
        return a->head_dirty;
}

int broker_audit_sync_head(broker_audit *a)
{
        char head[HEAD_SIZE];

        if (!a->head_dirty)
                return 0;
        memset(head, ' ', sizeof(head));
        snprintf(head, sizeof(head), "%llu %s", (unsigned long long)a->seq, a->prev);
        head[strlen(head)] = ' ';
        head[sizeof(head) - 1] = '\n';
        if (pwrite(a->head_fd, head, sizeof(head), 0) != (ssize_t)sizeof(head))
                return -EIO; /* the head lags: verify still accepts a head behind the log */
        a->head_dirty = false;
        return 0;
}

void broker_audit_free(broker_audit *a)
{
        if (!a)
                return;
        if (a->suppressed && !a->full) {
                json_t *e = json_pack("{s:s, s:I}", "event", "audit_suppressed", "suppressed",
                                      (json_int_t)a->suppressed);
                if (e)
                        (void)line_append(a, e, time(NULL), true);
                json_decref(e);
        }
        (void)broker_audit_sync_head(a);
        safe_close(a->fd);
        safe_close(a->head_fd);
        free(a->text);
        free(a->name);
        free(a);
}

int broker_audit_set_name(broker_audit *a, const char *workspace)
{
        char *n = strdup(workspace);

        if (!n)
                return -ENOMEM;
        free(a->name);
        a->name = n;
        return 0;
}
