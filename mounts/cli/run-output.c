/* SPDX-License-Identifier: MIT */
/*
 * run-output.c: the command's output as JSON lines (run-output.h).
 *
 * A thread of ours reads both pipes, so that the command's two streams
 * interleave as it writes them and neither fills while we wait on the
 * other; it writes to a description of standard output of its own,
 * O_APPEND, blocking: a slow reader slows the command, as a terminal
 * would, and never loses its lines. Every signal is blocked in it: the
 * run takes its stop signals by signalfd.
 *
 * Invalid UTF-8 is found by mbrtowc(3) in C.UTF-8 (libc's decoder), not
 * by a decoder of ours; jansson then checks and escapes the text.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <locale.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>

#include "run-output.h"
#include "lib/util.h"

/* After the run, how long the pipes may stay open (a process that outlived the sandbox). */
#define RUN_OUTPUT_DRAIN_MS 2000

struct stream {
        const char *name; /* "stdout", "stderr" */
        int fd;           /* the read end; -1 at its end */
        char buf[RUN_OUTPUT_LINE_MAX];
        size_t len;
};

struct run_output {
        char *workspace;
        int out; /* ours: standard output, O_APPEND */
        struct stream s[2];
        int stop[2]; /* a byte: the command ended */
        pthread_t thread;
        locale_t utf8;
};

static void write_line(struct run_output *o, const char *json, size_t len)
{
        for (size_t off = 0; off < len;) {
                ssize_t n = write(o->out, json + off, len - off);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return; /* the reader is gone: the lines are lost, the command goes on */
                off += (size_t)n;
        }
}

/* text as valid UTF-8: each byte that is not is U+FFFD. *ret_lossy if any was. */
static char *utf8_clean(struct run_output *o, const char *text, size_t len, size_t *ret_len,
                        bool *ret_lossy)
{
        char *out = malloc(len * 3 + 1), *p = out;
        mbstate_t st = {0};
        locale_t old = o->utf8 ? uselocale(o->utf8) : (locale_t)0;

        *ret_lossy = false;
        if (!out)
                goto done;
        for (size_t i = 0; i < len;) {
                wchar_t wc;
                size_t n = o->utf8 ? mbrtowc(&wc, text + i, len - i, &st) : (size_t)-1;

                if (n == 0)
                        n = 1; /* NUL: one byte, which jansson escapes */
                if (!o->utf8 && (unsigned char)text[i] < 0x80)
                        n = 1; /* no C.UTF-8 here: ASCII alone passes */
                if (n == (size_t)-1 || n == (size_t)-2) {
                        memcpy(p, "\xef\xbf\xbd", 3);
                        p += 3;
                        i++;
                        *ret_lossy = true;
                        memset(&st, 0, sizeof(st));
                        continue;
                }
                memcpy(p, text + i, n);
                p += n;
                i += n;
        }
        *ret_len = (size_t)(p - out);
done:
        if (o->utf8)
                uselocale(old);
        return out;
}

/* One output line of text (valid UTF-8), newline included; NULL if out of memory. */
static char *piece_json(struct run_output *o, const char *stream, const char *text, size_t len,
                        bool partial, bool lossy, size_t *ret_len)
{
        json_t *obj = json_pack("{s:s, s:s, s:s, s:o}", "cloister", "output", "workspace",
                                o->workspace, "stream", stream, "line", json_stringn(text, len));
        char *json, *nl;
        size_t jl;

        if (obj && partial)
                json_object_set_new(obj, "partial", json_true());
        if (obj && lossy)
                json_object_set_new(obj, "lossy", json_true());
        json = obj ? json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
        json_decref(obj);
        if (!json)
                return NULL;
        jl = strlen(json);
        nl = realloc(json, jl + 2);
        if (!nl) {
                free(json);
                return NULL;
        }
        memcpy(nl + jl, "\n", 2);
        *ret_len = jl + 1;
        return nl;
}

/*
 * One line of the command's (partial: not ended by a newline), in as many
 * output lines as it takes for each to be at most PIPE_BUF bytes: a write
 * that size to a pipe is never interleaved with the daemons' copies, which
 * go to the same pipe (a longer one may be, and the agent's text could
 * then begin a line).
 */
static void emit(struct run_output *o, const char *stream, const char *text, size_t len,
                 bool partial)
{
        _cleanup_free_ char *clean = NULL;
        size_t clen = 0, off = 0;
        bool lossy = false;

        clean = utf8_clean(o, text, len, &clen, &lossy);
        if (!clean)
                return;
        {
                json_t *probe = json_stringn(clean, clen);
                if (!probe) {
                        /* jansson's UTF-8 check is stricter than libc's (surrogates): ASCII only.
                         */
                        for (size_t i = 0; i < clen; i++)
                                if ((unsigned char)clean[i] >= 0x80)
                                        clean[i] = '?';
                        lossy = true;
                }
                json_decref(probe);
        }
        do {
                size_t n = MIN(clen - off, (size_t)PIPE_BUF), jl = 0;
                _cleanup_free_ char *json = NULL;

                for (;;) {
                        /* Never inside a UTF-8 sequence: back to its first byte. */
                        while (n > 1 && off + n < clen &&
                               ((unsigned char)clean[off + n] & 0xc0) == 0x80)
                                n--;
                        free(json);
                        json = piece_json(o, stream, clean + off, n, off + n < clen || partial,
                                          lossy, &jl);
                        if (!json || jl <= PIPE_BUF || n <= 1)
                                break;
                        n /= 2;
                }
                if (!json)
                        return;
                write_line(o, json, jl);
                off += n;
        } while (off < clen);
}

/* Whole lines out of s->buf; at_end: the rest too. */
static void flush_lines(struct run_output *o, struct stream *s, bool at_end)
{
        size_t start = 0;

        for (;;) {
                char *nl = memchr(s->buf + start, '\n', s->len - start);
                if (!nl)
                        break;
                emit(o, s->name, s->buf + start, (size_t)(nl - (s->buf + start)), false);
                start = (size_t)(nl - s->buf) + 1;
        }
        memmove(s->buf, s->buf + start, s->len - start);
        s->len -= start;
        if (s->len == sizeof(s->buf) || (at_end && s->len > 0)) {
                size_t cut = s->len;
                /* A full buffer is cut before a UTF-8 sequence it would split. */
                if (!at_end)
                        for (size_t back = 0; back < 4 && back < cut; back++) {
                                unsigned char c = (unsigned char)s->buf[cut - 1 - back];
                                if (c < 0x80)
                                        break;
                                if (c >= 0xc0) {
                                        size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
                                        if (need > back + 1)
                                                cut -= back + 1;
                                        break;
                                }
                        }
                if (cut == 0)
                        cut = s->len;
                emit(o, s->name, s->buf, cut, true);
                memmove(s->buf, s->buf + cut, s->len - cut);
                s->len -= cut;
        }
}

static void *relay_main(void *arg)
{
        struct run_output *o = arg;
        bool stopping = false;

        while (o->s[0].fd >= 0 || o->s[1].fd >= 0) {
                struct pollfd p[3] = {
                        {.fd = o->s[0].fd, .events = POLLIN},
                        {.fd = o->s[1].fd, .events = POLLIN},
                        {.fd = stopping ? -1 : o->stop[0], .events = POLLIN},
                };
                int r = poll(p, 3, stopping ? RUN_OUTPUT_DRAIN_MS : -1);

                if (r < 0 && errno == EINTR)
                        continue;
                if (r <= 0)
                        break; /* ended, and nothing more came for RUN_OUTPUT_DRAIN_MS */
                if (p[2].revents)
                        stopping = true;
                for (int i = 0; i < 2; i++) {
                        struct stream *s = &o->s[i];
                        ssize_t n;

                        if (s->fd < 0 || !p[i].revents)
                                continue;
                        n = read(s->fd, s->buf + s->len, sizeof(s->buf) - s->len);
                        if (n < 0 && (errno == EINTR || errno == EAGAIN))
                                continue;
                        if (n <= 0) {
                                flush_lines(o, s, true);
                                s->fd = safe_close(s->fd);
                                continue;
                        }
                        s->len += (size_t)n;
                        flush_lines(o, s, false);
                }
        }
        for (int i = 0; i < 2; i++)
                flush_lines(o, &o->s[i], true);
        return NULL;
}

static void run_output_free(struct run_output *o)
{
        for (int i = 0; i < 2; i++)
                safe_close(o->s[i].fd);
        safe_close(o->stop[0]);
        safe_close(o->stop[1]);
        safe_close(o->out);
        if (o->utf8)
                freelocale(o->utf8);
        free(o->workspace);
        free(o);
}

int run_output_start(const char *workspace, run_output **ret, int *ret_stdout, int *ret_stderr)
{
        struct run_output *o = calloc(1, sizeof(*o));
        int po[2] = {-1, -1}, pe[2] = {-1, -1}, r;
        sigset_t all, old;

        if (!o)
                return -ENOMEM;
        o->out = o->s[0].fd = o->s[1].fd = o->stop[0] = o->stop[1] = -1;
        o->s[0].name = "stdout";
        o->s[1].name = "stderr";
        o->workspace = strdup(workspace);
        o->utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
        /* Our own description: O_APPEND whatever the caller's is, so no copy is overwritten. */
        o->out = open("/proc/self/fd/1", O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY);
        if (o->out < 0)
                o->out = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
        if (!o->workspace || o->out < 0 || pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0 ||
            pipe2(o->stop, O_CLOEXEC) < 0) {
                r = o->workspace ? negative_errno() : -ENOMEM;
                goto fail;
        }
        o->s[0].fd = po[0];
        o->s[1].fd = pe[0];
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        r = -pthread_create(&o->thread, NULL, relay_main, o);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r < 0) {
                o->s[0].fd = o->s[1].fd = -1;
                goto fail;
        }
        *ret_stdout = po[1];
        *ret_stderr = pe[1];
        *ret = o;
        return 0;
fail:
        safe_close(po[0]);
        safe_close(po[1]);
        safe_close(pe[0]);
        safe_close(pe[1]);
        run_output_free(o);
        return r;
}

void run_output_finish(run_output *o)
{
        if (!o)
                return;
        (void)!write(o->stop[1], "", 1);
        pthread_join(o->thread, NULL);
        run_output_free(o);
}
