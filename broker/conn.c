/* SPDX-License-Identifier: MIT */
/*
 * conn.c: one client connection of the broker's poll loop (server.c):
 * reading request lines, answering each, and the deadlines that keep a
 * connection from holding a slot it does not use.
 *
 * A connection that sends faster than it reads stops being read
 * (backpressure), one that sends an oversized line gets an error and its
 * excess is discarded, and none of it can stop the loop. The agent's
 * sockets are bounded ([limits] connections), so every connection must
 * keep earning its slot:
 *   - idle: with no request under way, it is closed after
 *     [limits] idle_timeout (and is the first evicted when the workspace is
 *     at its bound and a new client comes: server.c);
 *   - a request that has begun must arrive whole, and a response must be
 *     read, within [limits] request_timeout (a client that sends a byte a
 *     second, or never reads, loses its connection);
 *   - one request per connection per turn of the loop: a connection whose
 *     buffer holds many requests is served one at a time, in turn with the
 *     others, so a pipelining client cannot starve the rest (broker_conn_more).
 * Only the loop thread touches a connection.
 */
#include <errno.h>
#include <poll.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "jsonw.h"
#include "server-private.h"
#include "lib/util.h"

#define OUT_INLINE (8 * 1024) /* responses up to this size need no allocation */
/* Orders connections by their last activity, for eviction: ties of the
 * millisecond clock are common, a counter has none. Loop thread only. */
static uint64_t activity;
#define RESPONSE_MAX (1024 * 1024) /* a text response (issue's) is never longer */

int broker_conn_new(struct ws *ws, int fd, const struct peer *peer, int64_t now_ms,
                    struct conn **ret)
{
        struct conn *c = calloc(1, sizeof(*c));

        if (!c || !(c->in = sodium_malloc(BROKER_REQUEST_MAX + 1 + OUT_INLINE))) {
                free(c);
                return -ENOMEM;
        }
        c->out_inline = c->in + BROKER_REQUEST_MAX + 1;
        c->fd = fd;
        c->ws = ws;
        c->peer = *peer;
        c->active_ms = now_ms;
        c->active_seq = ++activity;
        c->since_ms = -1;
        if (!peer->admin)
                ws->n_agent_conns++;
        *ret = c;
        return 0;
}

void broker_conn_free(struct conn *c)
{
        if (!c)
                return;
        safe_close(c->fd);
        if (c->out && c->out != c->out_inline)
                sodium_free(c->out);
        sodium_free(c->in); /* wipes the inline response buffer too */
        if (c->ws && !c->peer.admin)
                c->ws->n_agent_conns--;
        free(c);
}

/* A response: the object resp, or (resp NULL) the text the handler wrote into raw. */
static void conn_respond(struct conn *c, json_t *resp, struct broker_jw *raw)
{
        static const char oom[] = "{\"ok\":false,\"error\":\"internal\",\"message\":"
                                  "\"out of memory\"}";
        char *s = NULL;
        size_t n;

        if (!resp && raw && raw->len > 0) {
                broker_jw_raw(raw, "\n", 1);
                if (!raw->error) {
                        c->out = raw->buf; /* out_inline, or a sodium_malloc'd block */
                        c->out_len = raw->len;
                        c->out_off = 0;
                        return;
                }
                sodium_memzero(raw->buf, raw->len);
                broker_jw_done(raw);
        }
        s = resp ? json_dumps(resp, JSON_COMPACT) : NULL;
        json_decref(resp);
        if (!s) {
                s = strdup(oom);
                if (!s)
                        return;
        }
        n = strlen(s);
        c->out = n + 1 <= OUT_INLINE ? c->out_inline : sodium_malloc(n + 1);
        if (c->out) {
                memcpy(c->out, s, n);
                c->out[n] = '\n';
                c->out_len = n + 1;
                c->out_off = 0;
        }
        broker_wipe_free(s);
}

/* Write what is pending; false when the connection is dead. */
static bool conn_flush(struct conn *c, int64_t now_ms)
{
        while (c->out && c->out_off < c->out_len) {
                ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
                                 MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return true;
                if (n <= 0)
                        return false;
                c->out_off += (size_t)n;
        }
        if (c->out != c->out_inline)
                sodium_free(c->out);
        else
                sodium_memzero(c->out, c->out_len);
        c->out = NULL;
        /* Answered in full: what is left in the buffer is the next request. */
        c->active_ms = now_ms;
        c->active_seq = ++activity;
        c->since_ms = c->in_len > 0 ? now_ms : -1;
        return true;
}

/*
 * Handle at most one complete line, when nothing is pending to write; a
 * partial line (or the discarded rest of an oversized one) is kept for
 * later. Returns false when the connection is dead.
 */
static bool conn_process_one(struct conn *c, int64_t now_ms)
{
        for (;;) {
                char *nl;
                size_t used;

                if (c->out)
                        return true;
                nl = memchr(c->in, '\n', c->in_len);
                if (c->discarding) {
                        if (!nl) {
                                sodium_memzero(c->in, c->in_len);
                                c->in_len = 0;
                                return true;
                        }
                        c->discarding = false;
                        used = (size_t)(nl - c->in) + 1;
                } else if (nl || (c->eof && c->in_len > 0)) {
                        size_t len = nl ? (size_t)(nl - c->in) : c->in_len;
                        used = nl ? len + 1 : len;
                        if (len > 0 && c->in[len - 1] == '\r')
                                len--;
                        if (len > 0) {
                                struct broker_jw raw;
                                json_t *resp;

                                broker_jw_init(&raw, c->out_inline, OUT_INLINE, RESPONSE_MAX, true);
                                resp = broker_request_handle(c->ws, &c->peer, c->in, len,
                                                             time(NULL), &raw);
                                conn_respond(c, resp, &raw);
                        }
                } else if (c->in_len >= BROKER_REQUEST_MAX) {
                        conn_respond(c,
                                     broker_response_error(
                                             "too_large", "request longer than %d bytes; discarded",
                                             BROKER_REQUEST_MAX),
                                     NULL);
                        c->discarding = true;
                        used = c->in_len;
                } else {
                        return true;
                }
                memmove(c->in, c->in + used, c->in_len - used);
                c->in_len -= used;
                sodium_memzero(c->in + c->in_len, used); /* no stale copy of a request */
                if (c->out) /* a request was answered: its turn is over */
                        return conn_flush(c, now_ms);
                /* An empty line or the end of a discarded one: look again. */
        }
}

bool broker_conn_more(const struct conn *c)
{
        return !c->out && !c->discarding &&
               (memchr(c->in, '\n', c->in_len) || (c->eof && c->in_len > 0));
}

bool broker_conn_serve_next(struct conn *c, int64_t now_ms)
{
        return conn_process_one(c, now_ms);
}

bool broker_conn_event(struct conn *c, short revents, int64_t now_ms)
{
        if (revents & POLLOUT) {
                if (!conn_flush(c, now_ms))
                        return false;
                if (!conn_process_one(c, now_ms))
                        return false;
        }
        if ((revents & (POLLIN | POLLHUP | POLLERR)) && !c->out && !c->eof &&
            !broker_conn_more(c)) {
                ssize_t n = recv(c->fd, c->in + c->in_len, BROKER_REQUEST_MAX - c->in_len,
                                 MSG_DONTWAIT);
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                        return true;
                if (n <= 0) {
                        c->eof = true;
                } else {
                        if (c->in_len == 0)
                                c->since_ms = now_ms; /* a request begins */
                        c->in_len += (size_t)n;
                }
                if (!conn_process_one(c, now_ms))
                        return false;
        }
        return !(c->eof && !c->out && c->in_len == 0) && !(c->eof && !c->out && c->discarding);
}

short broker_conn_events(const struct conn *c)
{
        if (c->out)
                return POLLOUT;
        /* A buffer holding whole requests is served before more is read. */
        return broker_conn_more(c) ? 0 : POLLIN;
}

bool broker_conn_idle(const struct conn *c)
{
        return !c->out && c->in_len == 0 && !c->discarding;
}

int64_t broker_conn_deadline(const struct conn *c)
{
        const struct broker_policy *p = c->ws->policy;

        /* The admin socket is the owner's (and redeemers'): not bounded this way. */
        if (c->peer.admin)
                return INT64_MAX;
        if (broker_conn_idle(c))
                return c->active_ms + (int64_t)p->idle_timeout * 1000;
        /* A request under way, or a response the client does not read. */
        return (c->since_ms >= 0 ? c->since_ms : c->active_ms) + (int64_t)p->request_timeout * 1000;
}
