/* SPDX-License-Identifier: MIT */
/*
 * logsink.c: the copy of log lines on standard output, in signed chains
 * (logsink.h).
 *
 * Why the original line is spliced in as it is, not re-encoded: it is
 * already one JSON object, so the result is JSON with no escaping, and the
 * audit chain's hash covers exactly those bytes, which a collector can cut
 * back out (logsink.h).
 *
 * Why a chain of the copies and signed heads, when the audit lines carry a
 * hash chain of their own: that one is unkeyed and starts at zeros, so
 * anyone who can put lines on the stream can make one (issue 43), and the
 * journal has none. A head is signed with a key the agent cannot read, and
 * the chain starts at random bytes that only a head says. The same key
 * signs PASETO tokens; a signed head can't pass for a token or a token's
 * signature for a head's: a token's signed message is its PAE encoding,
 * whose first byte is the count of its pieces (4), and a head's is '{'.
 * Nothing in a head is the agent's to choose.
 *
 * Why non-blocking: the journal writes under the FUSE daemon's lock and the
 * audit log on the broker's request path; a stalled pipe to a collector
 * must never stall the agent's file system or its tokens. A write of at
 * most PIPE_BUF bytes to a pipe is whole or not at all; a longer line that
 * goes out in part is finished for up to SINK_FINISH_MS, else ended with a
 * newline and counted as dropped (the collector sees one line that does
 * not parse). A copy that did not go out whole is not in its chain.
 *
 * The heads of chains that had lines since their last head are written by
 * a thread of the sink's own, every LOGSINK_HEAD_MS, so that the last lines
 * before a quiet spell are covered too. It is started by the first line in
 * a process (after the daemons' fork), with every signal blocked.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "logsink.h"
#include "util.h"

#define SINK_FINISH_MS 200
#define SINK_CLOSE_MS  1000 /* the final heads wait this long for a slow reader */
#define SINK_NAME_MAX  64
#define SINK_KID_MAX   64
#define SINK_KEYS_MAX  64
#define HASH_LEN       32
#define CHAIN_ID_LEN   16 /* hex digits of h0 that name a chain */
#define PREV_LEN       16 /* hex digits of the previous hash in a copy */

struct sink_key {
        char workspace[SINK_NAME_MAX + 1];
        char kid[SINK_KID_MAX + 1];
        unsigned char *sk; /* sodium_malloc'd, crypto_sign_SECRETKEYBYTES */
};

struct sink_chain {
        char workspace[SINK_NAME_MAX + 1];
        char stream[SINK_NAME_MAX + 1];
        char id[CHAIN_ID_LEN + 1];
        unsigned char h[HASH_LEN]; /* h_n */
        uint64_t n;                /* lines in the chain */
        uint64_t dropped;          /* lines of this chain that did not go out */
        uint64_t head_n;           /* lines the last head written covers */
        bool head_written;         /* any head, the start's included */
        pid_t pid;                 /* the process whose chain it is (a fork's child is not) */
};

/* All protected by sink_lock. */
static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sink_wake = PTHREAD_COND_INITIALIZER;
static int sink_fd = -1;
static char sink_workspace[SINK_NAME_MAX + 1];
static uint64_t sink_dropped;
static struct sink_key sink_keys[SINK_KEYS_MAX];
static size_t sink_n_keys;
static struct sink_chain *sink_chains[LOGSINK_CHAINS_MAX];
static size_t sink_n_chains;
static pid_t timer_pid; /* the process whose timer thread runs; 0: none */
static pthread_t timer_thread;
static bool timer_stop;

static bool name_is_plain(const char *s)
{
        size_t n = strlen(s);

        if (n == 0 || n > SINK_NAME_MAX)
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                      (*s >= '0' && *s <= '9') || *s == '.' || *s == '_' || *s == '-'))
                        return false;
        return true;
}

/* Regular files written without O_APPEND overwrite what others appended. */
static void append_if_file(int fd)
{
        struct stat st;
        int fl;

        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (fl = fcntl(fd, F_GETFL)) >= 0 &&
            !(fl & O_APPEND))
                (void)fcntl(fd, F_SETFL, fl | O_APPEND);
}

int logsink_open_stdout(const char *workspace)
{
        int fd;

        if (!name_is_plain(workspace))
                return -EINVAL;
        if (sodium_init() < 0)
                return -EIO;
        append_if_file(STDOUT_FILENO);
        append_if_file(STDERR_FILENO);
        /* A description of our own (a pipe or a file opened anew), so
         * O_NONBLOCK changes nobody else's; a socket can't be reopened so:
         * then a duplicate, left blocking. */
        fd = open("/proc/self/fd/1", O_WRONLY | O_APPEND | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return negative_errno();
        pthread_mutex_lock(&sink_lock);
        if (sink_fd >= 0)
                close(sink_fd);
        snprintf(sink_workspace, sizeof(sink_workspace), "%s", workspace);
        sink_fd = fd;
        pthread_mutex_unlock(&sink_lock);
        return 0;
}

int logsink_set_key(const char *workspace, const unsigned char sk[64], const char *kid)
{
        struct sink_key *k = NULL;
        int r = 0;

        if (!name_is_plain(workspace) || strlen(kid) > SINK_KID_MAX || strchr(kid, '"') ||
            strchr(kid, '\\'))
                return -EINVAL;
        pthread_mutex_lock(&sink_lock);
        for (size_t i = 0; i < sink_n_keys && !k; i++)
                if (streq(sink_keys[i].workspace, workspace))
                        k = &sink_keys[i];
        if (!k && sink_n_keys == SINK_KEYS_MAX) {
                r = -E2BIG;
                goto out;
        }
        if (!k) {
                k = &sink_keys[sink_n_keys];
                k->sk = sodium_malloc(crypto_sign_SECRETKEYBYTES);
                if (!k->sk) {
                        r = -ENOMEM;
                        goto out;
                }
                sink_n_keys++;
        }
        snprintf(k->workspace, sizeof(k->workspace), "%s", workspace);
        snprintf(k->kid, sizeof(k->kid), "%s", kid);
        memcpy(k->sk, sk, crypto_sign_SECRETKEYBYTES);
out:
        pthread_mutex_unlock(&sink_lock);
        return r;
}

static int64_t realtime_ms(void)
{
        struct timespec t;

        clock_gettime(CLOCK_REALTIME, &t);
        return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/*
 * All of buf, or false; a part written is finished while the pipe drains.
 * patient: wait up to SINK_CLOSE_MS for room even before the first byte.
 */
static bool write_all(int fd, const char *buf, size_t len, bool patient, bool *ret_partial)
{
        size_t off = 0;

        *ret_partial = false;
        while (off < len) {
                ssize_t n = write(fd, buf + off, len - off);

                if (n > 0) {
                        off += (size_t)n;
                        *ret_partial = off < len;
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN && (off > 0 || patient)) {
                        struct pollfd p = {.fd = fd, .events = POLLOUT};
                        if (poll(&p, 1, patient ? SINK_CLOSE_MS : SINK_FINISH_MS) > 0)
                                continue;
                }
                return false;
        }
        return true;
}

/* A line that went out in part: end it, so the next starts on a line of its own. */
static bool emit(const char *buf, size_t len, bool patient)
{
        bool partial;

        if (write_all(sink_fd, buf, len, patient, &partial))
                return true;
        if (partial)
                (void)!write(sink_fd, "\n", 1);
        return false;
}

static const struct sink_key *key_find(const char *workspace)
{
        for (size_t i = 0; i < sink_n_keys; i++)
                if (streq(sink_keys[i].workspace, workspace))
                        return &sink_keys[i];
        return NULL;
}

/* Write ch's head, signed; true if it went out. Under sink_lock. */
static bool head_write(struct sink_chain *ch, bool final)
{
        const struct sink_key *k = key_find(ch->workspace);
        unsigned char sig[crypto_sign_BYTES];
        char hash[HASH_LEN * 2 + 1], sig_hex[crypto_sign_BYTES * 2 + 1], line[1024];
        int len;

        if (!k)
                return false; /* unsigned, a head proves nothing: verify-chain refuses the chain */
        sodium_bin2hex(hash, sizeof(hash), ch->h, sizeof(ch->h));
        len = snprintf(line, sizeof(line),
                       "{\"cloister\":\"head\",\"workspace\":\"%s\",\"stream\":\"%s\",\"chain\":"
                       "\"%s\",\"lines\":%" PRIu64 ",\"hash\":\"%s\",\"dropped\":%" PRIu64
                       ",\"time\":%" PRId64 ",\"final\":%s,\"kid\":\"%s\"}",
                       ch->workspace, ch->stream, ch->id, ch->n, hash, ch->dropped, realtime_ms(),
                       final ? "true" : "false", k->kid);
        if (len < 0 || (size_t)len + sizeof(sig_hex) + 16 > sizeof(line))
                return false;
        crypto_sign_detached(sig, NULL, (const unsigned char *)line, (size_t)len, k->sk);
        sodium_bin2hex(sig_hex, sizeof(sig_hex), sig, sizeof(sig));
        len += snprintf(line + len - 1, sizeof(line) - (size_t)len + 1, ",\"sig\":\"%s\"}\n",
                        sig_hex) -
               1;
        if (!emit(line, (size_t)len, final))
                return false;
        ch->head_n = ch->n;
        ch->head_written = true;
        return true;
}

static struct sink_chain *chain_get(const char *workspace, const char *stream)
{
        struct sink_chain *ch;
        char h0[HASH_LEN * 2 + 1];

        for (size_t i = 0; i < sink_n_chains; i++) {
                ch = sink_chains[i];
                if (streq(ch->workspace, workspace) && streq(ch->stream, stream) &&
                    ch->pid == getpid())
                        return ch;
        }
        if (sink_n_chains == LOGSINK_CHAINS_MAX)
                return NULL;
        ch = calloc(1, sizeof(*ch));
        if (!ch)
                return NULL;
        snprintf(ch->workspace, sizeof(ch->workspace), "%s", workspace);
        snprintf(ch->stream, sizeof(ch->stream), "%s", stream);
        randombytes_buf(ch->h, sizeof(ch->h));
        sodium_bin2hex(h0, sizeof(h0), ch->h, sizeof(ch->h));
        memcpy(ch->id, h0, CHAIN_ID_LEN);
        ch->pid = getpid();
        sink_chains[sink_n_chains++] = ch;
        (void)head_write(ch, false); /* the start; if it can't go out now, the timer's will */
        return ch;
}

static void *timer_main(void *arg)
{
        (void)arg;
        pthread_mutex_lock(&sink_lock);
        while (!timer_stop) {
                struct timespec until;

                clock_gettime(CLOCK_REALTIME, &until);
                until.tv_sec += LOGSINK_HEAD_MS / 1000;
                until.tv_nsec += (LOGSINK_HEAD_MS % 1000) * 1000000L;
                if (until.tv_nsec >= 1000000000L) {
                        until.tv_sec++;
                        until.tv_nsec -= 1000000000L;
                }
                (void)pthread_cond_timedwait(&sink_wake, &sink_lock, &until);
                if (timer_stop || sink_fd < 0)
                        continue;
                for (size_t i = 0; i < sink_n_chains; i++) {
                        struct sink_chain *ch = sink_chains[i];
                        if (ch->pid == getpid() && (ch->n != ch->head_n || !ch->head_written))
                                (void)head_write(ch, false);
                }
        }
        pthread_mutex_unlock(&sink_lock);
        return NULL;
}

/* Under sink_lock. Every signal blocked in it: the daemons take theirs by signalfd. */
static void timer_start(void)
{
        sigset_t all, old;

        if (timer_pid == getpid())
                return;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        timer_stop = false;
        if (pthread_create(&timer_thread, NULL, timer_main, NULL) == 0)
                timer_pid = getpid();
        pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void logsink_line(const char *stream, const char *workspace, const char *line, size_t len)
{
        char head[320], dropped[160], prev[HASH_LEN * 2 + 1];
        _cleanup_free_ char *buf = NULL;
        struct sink_chain *ch;
        crypto_generichash_state st;
        size_t hlen, total;

        while (len > 0 && line[len - 1] == '\n')
                len--;
        if (len == 0 || !name_is_plain(stream) || (workspace && !name_is_plain(workspace)))
                return;
        pthread_mutex_lock(&sink_lock);
        if (sink_fd < 0)
                goto out;
        timer_start();
        ch = chain_get(workspace ? workspace : sink_workspace, stream);
        if (!ch) {
                sink_dropped++;
                goto out;
        }
        sodium_bin2hex(prev, sizeof(prev), ch->h, sizeof(ch->h));
        hlen = (size_t)snprintf(
                head, sizeof(head),
                "{\"cloister\":\"%s\",\"workspace\":\"%s\",\"chain\":\"%s\",\"n\":%" PRIu64
                ",\"prev\":\"%.*s\",\"line\":",
                stream, ch->workspace, ch->id, ch->n + 1, PREV_LEN, prev);
        if (sink_dropped) {
                int d = snprintf(dropped, sizeof(dropped),
                                 "{\"cloister\":\"dropped\",\"workspace\":\"%s\",\"lines\":%" PRIu64
                                 "}\n",
                                 sink_workspace, sink_dropped);
                if (emit(dropped, (size_t)d, false))
                        sink_dropped = 0;
        }
        total = hlen + len + 2;
        buf = malloc(total);
        if (!buf) {
                sink_dropped++;
                ch->dropped++;
                goto out;
        }
        memcpy(buf, head, hlen);
        memcpy(buf + hlen, line, len);
        memcpy(buf + hlen + len, "}\n", 2);
        if (!emit(buf, total, false)) {
                sink_dropped++;
                ch->dropped++;
                goto out;
        }
        /* In the chain only once it went out whole. */
        crypto_generichash_init(&st, NULL, 0, HASH_LEN);
        crypto_generichash_update(&st, ch->h, sizeof(ch->h));
        crypto_generichash_update(&st, (const unsigned char *)buf, total - 1);
        crypto_generichash_final(&st, ch->h, sizeof(ch->h));
        ch->n++;
        if (ch->n - ch->head_n >= LOGSINK_HEAD_LINES)
                (void)head_write(ch, false);
out:
        pthread_mutex_unlock(&sink_lock);
}

void logsink_close(void)
{
        bool join;

        pthread_mutex_lock(&sink_lock);
        join = timer_pid == getpid();
        timer_stop = true;
        pthread_cond_broadcast(&sink_wake);
        pthread_mutex_unlock(&sink_lock);
        if (join)
                pthread_join(timer_thread, NULL);
        pthread_mutex_lock(&sink_lock);
        timer_pid = 0;
        for (size_t i = 0; i < sink_n_chains; i++) {
                if (sink_fd >= 0 && sink_chains[i]->pid == getpid())
                        (void)head_write(sink_chains[i], true);
                free(sink_chains[i]);
        }
        sink_n_chains = 0;
        for (size_t i = 0; i < sink_n_keys; i++)
                sodium_free(sink_keys[i].sk);
        sink_n_keys = 0;
        sink_fd = safe_close(sink_fd);
        pthread_mutex_unlock(&sink_lock);
}
