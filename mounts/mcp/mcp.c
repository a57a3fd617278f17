/* SPDX-License-Identifier: MIT */
/*
 * mcp.c: the MCP server's protocol: JSON-RPC 2.0 over stdio, one message
 * per line (docs/mcp.md), and its loop (mcp-private.h says which thread
 * does what).
 *
 * Everything on stdin is the client's and may be hostile (the client hands
 * the model's arguments through): a line longer than request_max is
 * dropped with an error, malformed JSON and malformed requests get
 * JSON-RPC's error codes, and nothing a message says can crash the server
 * or make it write anything but protocol messages to stdout. Logs go to
 * stderr.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "mcp-private.h"
#include "lib/util.h"

/* Newest first: what we answer an initialize that asks for another. */
static const char *const versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

#define POLL_FDS_MAX (2 + OPS_RUN_FDS * MCP_RUNS_MAX)

int64_t mcp_now_ms(void)
{
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

char *mcp_vformat(const char *fmt, va_list ap)
{
        char *m;

        return vasprintf(&m, fmt, ap) < 0 ? NULL : m;
}

void mcp_logf(const struct mcp_server *s, const char *fmt, ...)
{
        _cleanup_free_ char *m = NULL;
        va_list ap;

        va_start(ap, fmt);
        m = mcp_vformat(fmt, ap);
        va_end(ap);
        if (m && s->o->log)
                s->o->log(m);
}

bool mcp_send(struct mcp_server *s, json_t *msg)
{
        /* Compact, on one line: JSON-RPC over stdio is one message per line
         * (jansson escapes the newlines inside strings). */
        char *text = msg ? json_dumps(msg, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
        size_t n = text ? strlen(text) : 0;
        bool ok;

        json_decref(msg);
        if (!text)
                return !s->out_broken;
        text[n] = '\n'; /* over the NUL: the line goes out in one write where it fits */
        pthread_mutex_lock(&s->out_lock);
        for (size_t off = 0; !s->out_broken && off < n + 1;) {
                ssize_t w = write(s->out_fd, text + off, n + 1 - off);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        s->out_broken = true;
                else
                        off += (size_t)w;
        }
        ok = !s->out_broken;
        pthread_mutex_unlock(&s->out_lock);
        free(text);
        return ok;
}

void mcp_reply(struct mcp_server *s, json_t *id, json_t *result)
{
        mcp_send(s, json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result",
                              result ? result : json_object()));
}

static void mcp_reply_error(struct mcp_server *s, json_t *id, int code, const char *fmt, ...)
{
        _cleanup_free_ char *m = NULL;
        va_list ap;

        va_start(ap, fmt);
        m = mcp_vformat(fmt, ap);
        va_end(ap);
        mcp_send(s, json_pack("{s:s, s:O, s:{s:i, s:o}}", "jsonrpc", "2.0", "id",
                              id ? id : json_null(), "error", "code", code, "message",
                              ops_json_text(m ? m : "error", m ? strlen(m) : 5)));
}

/* --- worker calls ---------------------------------------------------------------- */

struct worker {
        struct mcp_server *s;
        struct mcp_call *call;
        char *name;
        size_t ws;
        json_t *args;
};

static void call_remove(struct mcp_server *s, struct mcp_call *call)
{
        for (struct mcp_call **p = &s->calls; *p; p = &(*p)->next)
                if (*p == call) {
                        *p = call->next;
                        break;
                }
}

static void *worker_main(void *arg)
{
        struct worker *w = arg;
        struct mcp_server *s = w->s;
        json_t *result = mcp_tool_call(s, w->name, w->ws, w->args);
        bool cancelled;

        pthread_mutex_lock(&s->lock);
        cancelled = w->call->cancelled;
        call_remove(s, w->call);
        pthread_mutex_unlock(&s->lock);
        /* A cancelled request gets no answer (the specification's "SHOULD NOT"). */
        if (!cancelled)
                mcp_reply(s, w->call->id, result);
        else
                json_decref(result);
        json_decref(w->call->id);
        free(w->call);
        json_decref(w->args);
        free(w->name);
        free(w);
        pthread_mutex_lock(&s->lock);
        s->n_workers--;
        pthread_cond_broadcast(&s->idle);
        pthread_mutex_unlock(&s->lock);
        return NULL;
}

static bool id_in_flight(struct mcp_server *s, json_t *id)
{
        bool found = false;

        pthread_mutex_lock(&s->lock);
        for (struct mcp_call *c = s->calls; c && !found; c = c->next)
                found = json_equal(c->id, id);
        pthread_mutex_unlock(&s->lock);
        for (struct mcp_run *r = s->runs; r && !found; r = r->next)
                found = r->reply_id && json_equal(r->reply_id, id);
        return found;
}

static void worker_start(struct mcp_server *s, json_t *id, const char *name, size_t ws,
                         json_t *args)
{
        struct worker *w = calloc(1, sizeof(*w));
        struct mcp_call *call = calloc(1, sizeof(*call));
        pthread_attr_t attr;
        pthread_t t;
        int r = -ENOMEM;

        if (w && call && (w->name = strdup(name))) {
                *w = (struct worker){
                        .s = s, .call = call, .name = w->name, .ws = ws, .args = json_incref(args)};
                call->id = json_incref(id);
                pthread_mutex_lock(&s->lock);
                if (s->n_workers >= s->o->requests_max) {
                        r = -EBUSY;
                } else {
                        call->next = s->calls;
                        s->calls = call;
                        s->n_workers++;
                        r = 0;
                }
                pthread_mutex_unlock(&s->lock);
        }
        if (r == 0) {
                pthread_attr_init(&attr);
                pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
                r = -pthread_create(&t, &attr, worker_main, w);
                pthread_attr_destroy(&attr);
                if (r == 0)
                        return;
                pthread_mutex_lock(&s->lock);
                call_remove(s, call);
                s->n_workers--;
                pthread_mutex_unlock(&s->lock);
        }
        if (r == -EBUSY)
                mcp_reply(s, id,
                          mcp_result_error("the server is busy: %u tool calls are in flight; "
                                           "try again when one has answered",
                                           s->o->requests_max));
        else
                mcp_reply_error(s, id, MCP_INTERNAL_ERROR, "cannot start the call: %s",
                                strerror(-r));
        if (call)
                json_decref(call->id);
        if (w) {
                json_decref(w->args);
                free(w->name);
        }
        free(call);
        free(w);
}

/* --- the protocol's requests -------------------------------------------------------- */

static void on_initialize(struct mcp_server *s, json_t *id, json_t *params)
{
        json_t *asked = json_object_get(params, "protocolVersion");
        const char *version = versions[0];
        _cleanup_free_ char *names = NULL;
        size_t len = 0;
        FILE *f;

        if (s->initialized) {
                mcp_reply_error(s, id, MCP_INVALID_REQUEST, "already initialized");
                return;
        }
        if (!json_is_object(params) || !json_is_string(asked)) {
                mcp_reply_error(s, id, MCP_INVALID_PARAMS,
                                "initialize: params.protocolVersion must be a string");
                return;
        }
        /* Its version if we speak it; else our newest, and the client decides. */
        for (size_t i = 0; i < ELEMENTSOF(versions); i++)
                if (streq(json_string_value(asked), versions[i]))
                        version = versions[i];
        snprintf(s->version, sizeof(s->version), "%s", version);
        s->initialized = true;
        f = open_memstream(&names, &len);
        for (size_t i = 0; f && i < s->n_ws; i++)
                fprintf(f, "%s'%s'", i ? ", " : "", s->ws[i].c->workspace.name);
        if (f)
                fclose(f);
        mcp_logf(s, "cloister mcp: a client initialized (protocol %s)", version);
        mcp_reply(s, id,
                  json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s+}", "protocolVersion",
                            version, "capabilities", "tools", "listChanged", 0, "serverInfo",
                            "name", "cloister", "title", "cloister sandbox", "version",
                            s->o->version ? s->o->version : "0", "instructions",
                            "Each tool works in a cloister workspace: a copy-on-write checkout "
                            "of a git repository at /workspace in a sandbox, with an empty home "
                            "and read-only mirrors. Commands run there (run_command), with the "
                            "workspace config's limits and network; nothing reaches the real "
                            "repository until a person reviews the patch (diff) and takes it "
                            "(export). Workspaces served: ",
                            names ? names : ""));
}

static void on_tools_call(struct mcp_server *s, json_t *id, json_t *params)
{
        json_t *name = json_object_get(params, "name");
        json_t *args = json_object_get(params, "arguments");
        json_t *meta = json_object_get(params, "_meta");
        json_t *err, *res;
        size_t ws = 0;

        if (!json_is_object(params) || !json_is_string(name)) {
                mcp_reply_error(s, id, MCP_INVALID_PARAMS,
                                "tools/call: params.name must be a string");
                return;
        }
        if (args && !json_is_object(args) && !json_is_null(args)) {
                mcp_reply_error(s, id, MCP_INVALID_PARAMS,
                                "tools/call: params.arguments must be an object");
                return;
        }
        if (!mcp_tool_known(json_string_value(name)) ||
            strlen(json_string_value(name)) != json_string_length(name)) {
                mcp_reply_error(s, id, MCP_INVALID_PARAMS, "Unknown tool: %.100s",
                                json_string_value(name));
                return;
        }
        if (!args || json_is_null(args))
                args = json_object();
        else
                json_incref(args);
        /* The model's arguments: a mistake in them is the model's to fix, so
         * it is a tool error it can read, not a protocol error. */
        err = mcp_tool_check(s, json_string_value(name), args, &ws);
        if (err) {
                mcp_reply(s, id, err);
        } else if (mcp_tool_in_loop(json_string_value(name))) {
                res = mcp_runs_call(s, json_string_value(name), ws, args, id,
                                    json_object_get(meta, "progressToken"));
                if (res)
                        mcp_reply(s, id, res);
        } else {
                worker_start(s, id, json_string_value(name), ws, args);
        }
        json_decref(args);
}

static void on_cancelled(struct mcp_server *s, json_t *params)
{
        json_t *id = json_object_get(params, "requestId");

        if (!id)
                return;
        if (mcp_runs_cancel(s, id))
                return;
        pthread_mutex_lock(&s->lock);
        for (struct mcp_call *c = s->calls; c; c = c->next)
                if (json_equal(c->id, id))
                        c->cancelled = true;
        pthread_mutex_unlock(&s->lock);
}

static bool id_valid(json_t *id)
{
        /* JSON-RPC: a string or a number (echoed as it came); MCP: never null. */
        return json_is_string(id) || json_is_number(id);
}

static void on_message(struct mcp_server *s, json_t *m)
{
        json_t *id = json_object_get(m, "id"), *params = json_object_get(m, "params");
        const char *method = json_string_value(json_object_get(m, "method"));
        bool request = id != NULL;

        if (json_is_array(m)) {
                /* Batches were in 2025-03-26 only, and no client sends them. */
                mcp_reply_error(s, NULL, MCP_INVALID_REQUEST,
                                "batches are not supported: send one message per line");
                return;
        }
        if (!json_is_object(m) || !json_is_string(json_object_get(m, "jsonrpc")) ||
            !streq(json_string_value(json_object_get(m, "jsonrpc")), "2.0")) {
                mcp_reply_error(s, id_valid(id) ? id : NULL, MCP_INVALID_REQUEST,
                                "not a JSON-RPC 2.0 message (\"jsonrpc\": \"2.0\" is missing)");
                return;
        }
        if (method && strlen(method) != json_string_length(json_object_get(m, "method"))) {
                mcp_reply_error(s, id_valid(id) ? id : NULL, MCP_INVALID_REQUEST,
                                "\"method\" holds a NUL character");
                return;
        }
        if (!method) {
                /* A response to a request of ours: we send none, so it is ignored. */
                if (json_object_get(m, "result") || json_object_get(m, "error"))
                        return;
                mcp_reply_error(s, id_valid(id) ? id : NULL, MCP_INVALID_REQUEST,
                                "\"method\" must be a string");
                return;
        }
        if (request && !id_valid(id)) {
                mcp_reply_error(s, NULL, MCP_INVALID_REQUEST,
                                "\"id\" must be a string or a number");
                return;
        }
        if (params && !json_is_object(params) && !json_is_array(params)) {
                if (request)
                        mcp_reply_error(s, id, MCP_INVALID_REQUEST, "\"params\" must be an object");
                return;
        }
        if (!request) {
                if (streq(method, "notifications/cancelled"))
                        on_cancelled(s, params);
                /* notifications/initialized and any other: nothing to do. */
                return;
        }
        if (id_in_flight(s, id)) {
                mcp_reply_error(s, id, MCP_INVALID_REQUEST,
                                "request id already in use by a request in flight");
                return;
        }
        if (streq(method, "initialize"))
                on_initialize(s, id, params);
        else if (streq(method, "ping"))
                mcp_reply(s, id, json_object());
        else if (!s->initialized)
                mcp_reply_error(s, id, MCP_INVALID_REQUEST,
                                "not initialized: the first request must be initialize");
        else if (streq(method, "tools/list"))
                mcp_reply(s, id, mcp_tools_list(s));
        else if (streq(method, "tools/call"))
                on_tools_call(s, id, params);
        else
                mcp_reply_error(s, id, MCP_METHOD_NOT_FOUND, "Method not found: %.100s", method);
}

static void on_line(struct mcp_server *s, const char *line, size_t n)
{
        json_error_t e;
        json_t *m;

        while (n && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t'))
                n--;
        if (n == 0)
                return;
        /* Duplicate keys could say one thing to us and another to a logger.
         * A NUL in a string is let through, for the tools to refuse by name
         * (mcp_tool_check): a parse error could not say which request it was. */
        m = json_loadb(line, n, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY, &e);
        if (!m) {
                mcp_reply_error(s, NULL, MCP_PARSE_ERROR, "Parse error: %s (column %d)", e.text,
                                e.column);
                return;
        }
        on_message(s, m);
        json_decref(m);
}

/* --- the loop ------------------------------------------------------------------------ */

struct reader {
        char *buf;
        size_t len, cap;
        bool skipping; /* in a line longer than the bound: dropped up to its end */
};

/* Read what stdin has; false at its end. */
static bool read_input(struct mcp_server *s, struct reader *rd, int fd)
{
        size_t max = s->o->request_max;

        for (;;) {
                ssize_t n;
                if (rd->cap - rd->len < 65536) {
                        size_t cap = rd->cap ? rd->cap * 2 : 131072;
                        char *b;
                        if (cap > max + 131072)
                                cap = max + 131072;
                        if (cap > rd->cap) {
                                b = realloc(rd->buf, cap);
                                if (!b)
                                        return false;
                                rd->buf = b;
                                rd->cap = cap;
                        }
                }
                n = read(fd, rd->buf + rd->len, rd->cap - rd->len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN)
                        return true;
                if (n <= 0)
                        return false;
                rd->len += (size_t)n;
                /* Each whole line, then keep the rest. */
                size_t start = 0;
                for (char *nl; (nl = memchr(rd->buf + start, '\n', rd->len - start));) {
                        size_t end = (size_t)(nl - rd->buf);
                        if (rd->skipping)
                                rd->skipping = false;
                        else if (end - start > max)
                                mcp_reply_error(s, NULL, MCP_INVALID_REQUEST,
                                                "message longer than %zu bytes: dropped", max);
                        else
                                on_line(s, rd->buf + start, end - start);
                        start = end + 1;
                }
                memmove(rd->buf, rd->buf + start, rd->len - start);
                rd->len -= start;
                if (rd->len > max) {
                        if (!rd->skipping)
                                mcp_reply_error(s, NULL, MCP_INVALID_REQUEST,
                                                "message longer than %zu bytes: dropped", max);
                        rd->skipping = true;
                        rd->len = 0;
                }
                if (s->out_broken)
                        return false;
        }
}

static int signals_block(sigset_t *old)
{
        sigset_t mask;

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        if (pthread_sigmask(SIG_BLOCK, &mask, old) != 0)
                return -1;
        return signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
}

int mcp_serve(const struct mcp_options *o, int in_fd, int out_fd)
{
        struct mcp_server s = {.o = o, .out_fd = out_fd, .next_run = 1};
        struct reader rd = {0};
        struct pollfd pfd[POLL_FDS_MAX];
        int fds[POLL_FDS_MAX];
        sigset_t old;
        bool input = true;
        int sfd;

        s.n_ws = o->n;
        s.ws = calloc(o->n ? o->n : 1, sizeof(*s.ws));
        if (!s.ws)
                return -ENOMEM;
        for (size_t i = 0; i < o->n; i++) {
                s.ws[i] = (struct mcp_ws){.c = o->configs[i], .config_path = o->config_paths[i]};
                pthread_mutex_init(&s.ws[i].lock, NULL);
        }
        pthread_mutex_init(&s.out_lock, NULL);
        pthread_mutex_init(&s.lock, NULL);
        pthread_cond_init(&s.idle, NULL);
        /* Threads started from here inherit the mask: the loop alone takes
         * the stop signals, from its signalfd. A client that closes our
         * stdout makes write() fail, not kill us. */
        signal(SIGPIPE, SIG_IGN);
        sfd = signals_block(&old);
        (void)fcntl(in_fd, F_SETFL, fcntl(in_fd, F_GETFL) | O_NONBLOCK);

        while (input && !s.out_broken) {
                size_t n = 0, nr;
                int timeout = mcp_runs_pump(&s);

                pfd[n++] = (struct pollfd){.fd = in_fd, .events = POLLIN};
                pfd[n++] = (struct pollfd){.fd = sfd, .events = POLLIN};
                nr = mcp_runs_fds(&s, fds, POLL_FDS_MAX - n);
                for (size_t i = 0; i < nr; i++)
                        pfd[n++] = (struct pollfd){.fd = fds[i], .events = POLLIN};
                if (poll(pfd, n, timeout) < 0 && errno != EINTR)
                        break;
                if (pfd[1].revents & POLLIN) {
                        struct signalfd_siginfo si;
                        if (read(sfd, &si, sizeof(si)) == sizeof(si)) {
                                mcp_logf(&s, "cloister mcp: signal %u: stopping", si.ssi_signo);
                                break;
                        }
                }
                if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR))
                        input = read_input(&s, &rd, in_fd);
        }
        /* stdin's end is the client's way to stop us (the stdio transport):
         * runs are stopped, calls in flight answered, the mounts we made
         * unmounted. */
        mcp_runs_stop_all(&s);
        pthread_mutex_lock(&s.lock);
        while (s.n_workers > 0)
                pthread_cond_wait(&s.idle, &s.lock);
        pthread_mutex_unlock(&s.lock);
        for (size_t i = 0; i < s.n_ws; i++) {
                sandbox_hold_release(s.ws[i].hold);
                pthread_mutex_destroy(&s.ws[i].lock);
        }
        free(s.ws);
        free(rd.buf);
        safe_close(sfd);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        return 0;
}
