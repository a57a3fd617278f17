/* SPDX-License-Identifier: MIT */
/*
 * conn.c: one client connection from the sandbox: read a request head,
 * decide what it may do, and answer refusals.
 *
 * Trust boundary: every byte here comes from the agent. The head is parsed
 * whole and strictly (http.h) before anything is decided; the decision uses
 * only the normalized host, port, method and path; nothing reaches an
 * upstream until the decision is made. Each refusal is an HTTP answer with
 * an x-cloister-error header, and is audited.
 *
 * All callbacks are deferred (BEV_OPT_DEFER_CALLBACKS), so they run from
 * the loop itself: a function that frees the client returns at once.
 */
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "lib/util.h"
#include "proxy-private.h"

static void client_read_cb(struct bufferevent *bev, void *arg);
static void client_write_cb(struct bufferevent *bev, void *arg);
static void client_event_cb(struct bufferevent *bev, short what, void *arg);

const char *proxy_status_text(int status)
{
        switch (status) {
        case 200:
                return "Connection established";
        case 400:
                return "Bad Request";
        case 401:
                return "Unauthorized";
        case 403:
                return "Forbidden";
        case 407:
                return "Proxy Authentication Required";
        case 408:
                return "Request Timeout";
        case 429:
                return "Too Many Requests";
        case 502:
                return "Bad Gateway";
        case 503:
                return "Service Unavailable";
        case 504:
                return "Gateway Timeout";
        default:
                return "Error";
        }
}

/* Header values and log text hold only printable ASCII. */
static void sanitize(char *s)
{
        for (; *s; s++)
                if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
                        *s = '?';
}

static void set_timeout(struct client *c, int seconds)
{
        struct timeval tv = {seconds, 0};

        bufferevent_set_timeouts(c->bev, &tv, &tv);
}

/*
 * The timeouts cut to what is left of c's deadline. libevent's are idle
 * timeouts, reset by every byte read: without this a client that sends a
 * byte just before each one holds a head (120 s idle on a kept-alive
 * connection) far past its deadline.
 */
void proxy_deadline_arm(struct client *c)
{
        int64_t left;
        struct timeval tv;

        if (!c->deadline_ms)
                return;
        left = MAX(c->deadline_ms - proxy_now_ms(), (int64_t)1);
        tv.tv_sec = (time_t)(left / 1000);
        tv.tv_usec = (suseconds_t)(left % 1000) * 1000;
        bufferevent_set_timeouts(c->bev, &tv, &tv);
}

void proxy_client_free(struct client *c)
{
        if (!c)
                return;
        if (c->rec.decision && !c->rec.written)
                proxy_record_write(c);
        if (c->broker_ticket)
                proxy_broker_cancel(c->px, c->broker_ticket);
        proxy_upstream_free(c->up);
        proxy_secret_wipe(c);
        proxy_http_head_done(&c->req);
        proxy_http_head_done(&c->resp_head);
        proxy_push_scan_free(c->push);
        if (c->held)
                evbuffer_free(c->held);
        if (c->hello)
                evbuffer_free(c->hello);
        if (c->relay)
                evbuffer_free(c->relay);
        if (c->peek)
                SSL_free(c->peek);
        free(c->path_enc);
        free(c->query);
        free(c->rec.path);
        if (c->bev)
                bufferevent_free(c->bev);
        if (c->prev)
                c->prev->next = c->next;
        else
                c->ls->clients = c->next;
        if (c->next)
                c->next->prev = c->prev;
        c->ls->n_clients--;
        c->px->n_clients--;
        free(c);
}

void proxy_client_close_soon(struct client *c)
{
        c->state = CLIENT_CLOSING;
        bufferevent_disable(c->bev, EV_READ);
        proxy_upstream_free(c->up);
        c->up = NULL;
        set_timeout(c, HEAD_TIMEOUT_S);
        /* The write callback frees it once the answer is out. */
        bufferevent_trigger(c->bev, EV_WRITE,
                            BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
}

void proxy_client_accept(struct listener *ls, int fd)
{
        struct proxy *px = ls->px;
        struct client *c;

        if (px->n_clients >= PROXY_CONNS_MAX || ls->n_clients >= px->max_connections) {
                static const char busy[] =
                        "HTTP/1.1 503 Service Unavailable\r\n"
                        "x-cloister-error: too many connections ([network] connections)\r\n"
                        "Content-Length: 0\r\nConnection: close\r\n\r\n";
                (void)send(fd, busy, sizeof(busy) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
                close(fd);
                proxy_record_limit(ls, "too many connections ([network] connections)");
                return;
        }
        c = calloc(1, sizeof(*c));
        if (!c) {
                close(fd);
                return;
        }
        c->px = px;
        c->ls = ls;
        c->id = ++px->next_id;
        c->bev = bufferevent_socket_new(px->base, fd,
                                        BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
        if (!c->bev) {
                close(fd);
                free(c);
                return;
        }
        /* Heads and bodies are relayed as they come: no Nagle delay on top. */
        (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){1}, sizeof(int));
        c->next = ls->clients;
        if (ls->clients)
                ls->clients->prev = c;
        ls->clients = c;
        ls->n_clients++;
        px->n_clients++;
        bufferevent_setcb(c->bev, client_read_cb, client_write_cb, client_event_cb, c);
        bufferevent_setwatermark(c->bev, EV_READ, 0, CLIENT_IN_HIGH);
        set_timeout(c, HEAD_TIMEOUT_S);
        bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

void proxy_client_refuse(struct client *c, int status, const char *fmt, ...)
{
        char why[200], body[300];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(why, sizeof(why), fmt, ap);
        va_end(ap);
        sanitize(why);
        if (!c->rec.kind)
                proxy_record_start(c, "http");
        c->rec.decision = "refuse";
        c->rec.status = status;
        snprintf(c->rec.reason, sizeof(c->rec.reason), "%s", why);
        proxy_record_write(c);
        proxy_secret_wipe(c);
        proxy_upstream_free(c->up);
        c->up = NULL;
        c->reqp.on_body = NULL; /* what is left of the body is drained, not relayed */
        /* After a CONNECT's 200 or once a response began, only closing is left. */
        if ((c->state == CLIENT_TUNNEL) || c->have_resp) {
                bufferevent_free(c->bev);
                c->bev = NULL;
                proxy_client_free(c);
                return;
        }
        int n = snprintf(body, sizeof(body), "cloister: %s\n", why);
        evbuffer_add_printf(bufferevent_get_output(c->bev),
                            "HTTP/1.1 %d %s\r\n"
                            "x-cloister-error: %s\r\n"
                            "%s"
                            "Content-Type: text/plain; charset=utf-8\r\n"
                            "Content-Length: %d\r\n"
                            "Connection: close\r\n\r\n%s",
                            status, proxy_status_text(status), why,
                            status == 401 ? "WWW-Authenticate: Basic realm=\"cloister\"\r\n" : "",
                            n, body);
        /* Read the rest of the request, so the client sees the answer and not a reset. */
        if (c->have_req && !c->req_done && c->req.has_body && !c->client_eof) {
                c->state = CLIENT_DRAIN;
                c->deadline_ms = proxy_now_ms() + HEAD_TIMEOUT_S * 1000;
                set_timeout(c, HEAD_TIMEOUT_S);
                bufferevent_enable(c->bev, EV_READ);
                bufferevent_trigger(c->bev, EV_READ,
                                    BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
                return;
        }
        proxy_client_close_soon(c);
}

static void drain(struct client *c)
{
        struct evbuffer *in = bufferevent_get_input(c->bev);

        if (c->deadline_ms && proxy_now_ms() > c->deadline_ms) {
                proxy_client_close_soon(c); /* the answer is out; the rest may trickle forever */
                return;
        }
        proxy_deadline_arm(c);
        while (evbuffer_get_length(in) > 0) {
                struct evbuffer_iovec v;
                size_t used = 0;
                bool done = false;
                const char *why = NULL;

                if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
                        break;
                if (proxy_http_body(&c->reqp, v.iov_base, v.iov_len, &used, &done, &why) < 0) {
                        done = true;
                        used = v.iov_len;
                }
                evbuffer_drain(in, used);
                c->drained += used;
                if (done || c->drained > DRAIN_MAX) {
                        c->req_done = done;
                        proxy_client_close_soon(c);
                        return;
                }
        }
}

/* "http://authority/path?query" -> host, port, path, query. */
static int url_split(struct client *c, const char **ret_path, size_t *ret_path_len,
                     const char **ret_query, const char **ret_why)
{
        const char *t = c->req.target ? c->req.target : "", *a, *end, *host;
        size_t hl, tl = strlen(t);
        uint16_t port;
        bool exact;

        if (tl < 7 || strncasecmp(t, "http://", 7) != 0) {
                *ret_why = t[0] == '/' ? "the proxy takes requests in absolute form "
                                         "(http://host/path): is HTTP_PROXY set?"
                           : strncasecmp(t, "https://", 8) == 0
                                   ? "https:// goes through CONNECT, not as a plain request"
                                   : "only http:// URLs (and CONNECT)";
                return -EINVAL;
        }
        a = t + 7;
        for (end = a; end < t + tl && *end != '/' && *end != '?' && *end != '#'; end++)
                ;
        if (strchr(t, '#')) {
                *ret_why = "a fragment ('#') in the request target";
                return -EINVAL;
        }
        if (proxy_authority_split(a, (size_t)(end - a), &host, &hl, &port, ret_why) < 0)
                return -EINVAL;
        if (proxy_host_normalize(host, hl, c->host, sizeof(c->host), &c->literal, &exact, ret_why) <
            0)
                return -EINVAL;
        if (c->literal && !exact) {
                *ret_why = "an IP address in a non-canonical form (such as 127.1 or 0x7f.1) "
                           "is never reached";
                return -EINVAL;
        }
        c->port = port ? port : 80;
        if (*end == '/') {
                *ret_path = end;
                *ret_path_len = strcspn(end, "?");
        } else {
                *ret_path = "/";
                *ret_path_len = 1;
        }
        *ret_query = strchr(end, '?') ? strchr(end, '?') + 1 : NULL;
        return 0;
}

/* The Host header must name the URL's authority. */
static bool host_header_matches(struct client *c)
{
        const char *h = proxy_http_header(&c->req, "host", NULL), *hh, *why;
        char buf[PROXY_HOST_MAX + 3];
        size_t hl;
        uint16_t port;
        bool lit, exact;

        if (!h)
                return c->req.minor == 0; /* HTTP/1.1 requires it */
        if (proxy_authority_split(h, strlen(h), &hh, &hl, &port, &why) < 0 ||
            proxy_host_normalize(hh, hl, buf, sizeof(buf), &lit, &exact, &why) < 0)
                return false;
        return streq(buf, c->host) && (port ? port : 80) == c->port;
}

static bool denied(struct client *c, bool connect)
{
        for (size_t i = 0; i < c->px->n_deny; i++)
                if (proxy_host_pattern_denies(&c->px->deny[i], c->host, c->literal, c->port))
                        return true;
        return false;
}

static bool allowed(struct client *c, bool connect)
{
        for (size_t i = 0; i < c->px->n_allow; i++)
                if (proxy_host_pattern_match(&c->px->allow[i], c->host, c->literal, c->port,
                                             connect))
                        return true;
        return false;
}

static void handle_connect(struct client *c)
{
        const char *t = c->req.target ? c->req.target : "", *host, *why = NULL;
        size_t hl;
        uint16_t port;
        bool exact;

        snprintf(c->rec.host, sizeof(c->rec.host), "%.*s", (int)strcspn(t, ":"), t);
        if (proxy_authority_split(t, strlen(t), &host, &hl, &port, &why) < 0 || port == 0 ||
            proxy_host_normalize(host, hl, c->host, sizeof(c->host), &c->literal, &exact, &why) <
                    0) {
                proxy_client_refuse(c, 400, "CONNECT target '%.100s': %s", t,
                                    why ? why : "expected host:port");
                return;
        }
        c->port = port;
        snprintf(c->rec.host, sizeof(c->rec.host), "%s", c->host);
        c->rec.port = port;
        if (c->literal && !exact) {
                proxy_client_refuse(c, 403,
                                    "an IP address in a non-canonical form ('%.60s') is never "
                                    "reached",
                                    t);
                return;
        }
        if (denied(c, true)) {
                proxy_client_refuse(c, 403, "%s:%u is denied by a [network] deny entry", c->host,
                                    (unsigned)port);
                return;
        }
        if (!allowed(c, true)) {
                proxy_client_refuse(c, 403, "%s:%u is not on the [network] allow list%s", c->host,
                                    (unsigned)port,
                                    c->literal ? " (IP addresses must be listed exactly)" : "");
                return;
        }
        /* A tunnel is a connection of its own: an upstream that an earlier
         * request on this connection kept alive would take the CONNECT as a
         * plain request, past the ClientHello check. */
        proxy_upstream_free(c->up);
        c->up = NULL;
        c->state = CLIENT_WAIT;
        c->connect_tls = false;
        proxy_upstream_open(c, false);
}

static bool host_has_rules(struct client *c)
{
        for (size_t i = 0; i < c->px->n_rules; i++)
                if (streq(c->px->rules[i].host, c->host))
                        return true;
        return false;
}

/*
 * A GET, HEAD or TRACE with a body, to any host: a server may not read it,
 * and then it is the next request, one no rule judged and the net log
 * never saw (request smuggling). Other methods' bodies go up with
 * Connection: close (forward.c).
 */
static bool body_refused(struct client *c)
{
        if (proxy_forward_body_rule(&c->req) != PROXY_BODY_REFUSED)
                return false;
        proxy_client_refuse(c, 400, "a %s request with a body (send it as a POST)", c->req.method);
        return true;
}

static void handle_http(struct client *c)
{
        const char *path, *query, *why = NULL;
        size_t pl;
        _cleanup_free_ char *dec = NULL;

        snprintf(c->rec.method, sizeof(c->rec.method), "%s", c->req.method);
        if (url_split(c, &path, &pl, &query, &why) < 0) {
                proxy_client_refuse(c, strncasecmp(c->req.target, "http://", 7) == 0 ? 403 : 400,
                                    "%s", why);
                return;
        }
        snprintf(c->rec.host, sizeof(c->rec.host), "%s", c->host);
        c->rec.port = c->port;
        if (!host_header_matches(c)) {
                proxy_client_refuse(c, 400, "the Host header does not name the URL's host");
                return;
        }
        if (c->req.upgrade) {
                proxy_client_refuse(c, 403,
                                    "protocol upgrades (Upgrade: h2c, websocket) are not "
                                    "relayed");
                return;
        }
        if (denied(c, false)) {
                proxy_client_refuse(c, 403, "%s:%u is denied by a [network] deny entry", c->host,
                                    (unsigned)c->port);
                return;
        }
        if (host_has_rules(c)) {
                if (c->port != 80) {
                        proxy_client_refuse(c, 403,
                                            "%s has [inject] rules: reach it as http://%s/ (port "
                                            "80), not port %u",
                                            c->host, c->host, (unsigned)c->port);
                        return;
                }
                if (proxy_path_normalize(path, pl, &dec, &c->path_enc, &why) < 0) {
                        proxy_client_refuse(c, 403, "path refused: %s", why);
                        return;
                }
                c->rec.path = strdup(dec);
                if (query && !(c->query = strdup(query))) {
                        proxy_client_refuse(c, 502, "out of memory");
                        return;
                }
                for (size_t i = 0; i < c->px->n_rules && !c->rule; i++)
                        if (proxy_inject_rule_match(&c->px->rules[i], c->host, c->req.method, dec))
                                c->rule = &c->px->rules[i];
                if (!c->rule) {
                        proxy_client_refuse(c, 403, "no [inject] rule for %s covers %s %s", c->host,
                                            c->req.method, dec);
                        return;
                }
                c->rec.rule = c->rule->name;
                if (body_refused(c))
                        return;
                c->state = CLIENT_WAIT;
                proxy_inject_begin(c);
                return;
        }
        if (!allowed(c, false)) {
                proxy_client_refuse(c, 403, "%s:%u is not on the [network] allow list%s", c->host,
                                    (unsigned)c->port,
                                    c->literal ? " (IP addresses must be listed exactly)" : "");
                return;
        }
        if (body_refused(c))
                return;
        /* Not injected: the path goes as the client wrote it. */
        c->path_enc = strndup(path, pl);
        if (!c->path_enc || (query && !(c->query = strdup(query)))) {
                proxy_client_refuse(c, 502, "out of memory");
                return;
        }
        c->state = CLIENT_WAIT;
        proxy_upstream_open(c, false);
}

static void try_head(struct client *c)
{
        struct evbuffer *in = bufferevent_get_input(c->bev);
        size_t len = evbuffer_get_length(in), n, hl = 0;
        const char *why = NULL;
        char *data;
        int r;

        if (len == 0)
                return;
        if (!c->deadline_ms)
                c->deadline_ms = proxy_now_ms() + HEAD_TIMEOUT_S * 1000;
        else if (proxy_now_ms() > c->deadline_ms) {
                proxy_client_refuse(c, 408, "the request head took longer than %d s",
                                    HEAD_TIMEOUT_S);
                return;
        }
        proxy_deadline_arm(c);
        n = MIN(len, (size_t)PROXY_HEAD_MAX + 1);
        data = (char *)evbuffer_pullup(in, (ssize_t)n);
        if (!data) {
                proxy_client_refuse(c, 502, "out of memory");
                return;
        }
        r = proxy_http_head_scan(data, n, &hl, &why);
        if (r == 0)
                return;
        if (r < 0 || proxy_http_parse_head(&c->reqp, true, false, data, hl, &c->req, &why) < 0) {
                proxy_record_start(c, "http");
                proxy_client_refuse(c, 400, "malformed request: %s", why);
                return;
        }
        evbuffer_drain(in, hl);
        c->deadline_ms = 0;
        c->have_req = true;
        c->req_done = !c->req.has_body;
        if (!c->req.keep_alive)
                c->closing_after = true;
        set_timeout(c, IDLE_TIMEOUT_S);

        bool connect = streq(c->req.method, "CONNECT");
        proxy_record_start(c, connect ? "connect" : "http");
        /* A proxy drops what Connection names (RFC 9110 7.6.1): naming
         * Content-Length, Transfer-Encoding or Host would have the body or the
         * route read one way here and another way upstream. Only the options
         * clients really send may be named. */
        char option[64];
        if (proxy_http_connection_unknown(&c->req, option, sizeof(option))) {
                proxy_client_refuse(c, 400,
                                    "the Connection header names '%s'; only close, keep-alive, "
                                    "te, upgrade and http2-settings are accepted",
                                    option);
                return;
        }
        if (c->px->audit_broken) {
                proxy_client_refuse(c, 502,
                                    "the audit log cannot be written; refusing all "
                                    "traffic");
                return;
        }
        if (!proxy_bucket_take(&c->ls->rate, (double)c->px->rate, 2.0 * (double)c->px->rate,
                               proxy_now_ms())) {
                c->rec.decision = "refuse";
                c->rec.written = true; /* coalesced below, not one line each */
                proxy_record_limit(c->ls, "too many requests ([network] rate)");
                proxy_client_refuse(c, 429, "too many requests ([network] rate)");
                return;
        }
        if (c->ls->budget_spent) {
                proxy_client_refuse(c, 403, "this run has sent all it may ([network] bytes_out)");
                return;
        }
        if (connect)
                handle_connect(c);
        else
                handle_http(c);
}

void proxy_client_next(struct client *c)
{
        proxy_record_write(c);
        proxy_secret_wipe(c);
        proxy_http_head_done(&c->req);
        proxy_http_head_done(&c->resp_head);
        proxy_push_scan_free(c->push);
        c->push = NULL;
        if (c->held) {
                evbuffer_free(c->held);
                c->held = NULL;
        }
        c->reqp.on_body = NULL;
        free(c->rec.path);
        free(c->path_enc);
        free(c->query);
        c->path_enc = c->query = NULL;
        c->have_req = c->have_resp = false;
        c->rule = NULL;
        c->rec = (struct record){0};
        if (c->up && !c->up->reusable) {
                proxy_upstream_free(c->up);
                c->up = NULL;
        }
        if (c->closing_after || c->client_eof) {
                proxy_client_close_soon(c);
                return;
        }
        c->state = CLIENT_HEAD;
        c->deadline_ms = 0; /* the next head's starts with its first byte */
        set_timeout(c, IDLE_TIMEOUT_S);
        bufferevent_enable(c->bev, EV_READ);
        try_head(c);
}

static void client_read_cb(struct bufferevent *bev, void *arg)
{
        struct client *c = arg;

        switch (c->state) {
        case CLIENT_HEAD:
                try_head(c);
                break;
        case CLIENT_FORWARD:
                proxy_forward_client_read(c);
                break;
        case CLIENT_TUNNEL:
                proxy_tunnel_client_read(c);
                break;
        case CLIENT_DRAIN:
                drain(c);
                break;
        case CLIENT_WAIT:
                break; /* held until the decision; the read watermark bounds it */
        case CLIENT_CLOSING:
                evbuffer_drain(bufferevent_get_input(bev),
                               evbuffer_get_length(bufferevent_get_input(bev)));
                break;
        }
}

static void client_write_cb(struct bufferevent *bev, void *arg)
{
        struct client *c = arg;

        if (c->state == CLIENT_CLOSING && evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
                proxy_client_free(c);
                return;
        }
        /* The client took what we relayed: read the upstream again. */
        if (c->up && c->up->bev &&
            evbuffer_get_length(bufferevent_get_output(bev)) < RELAY_OUT_HIGH / 2)
                bufferevent_enable(c->up->bev, EV_READ);
}

static void client_event_cb(struct bufferevent *bev, short what, void *arg)
{
        struct client *c = arg;

        if (what & BEV_EVENT_TIMEOUT) {
                if (c->rec.decision && !c->rec.written)
                        snprintf(c->rec.reason, sizeof(c->rec.reason), "timed out");
                proxy_client_free(c);
                return;
        }
        if (what & BEV_EVENT_ERROR) {
                proxy_client_free(c);
                return;
        }
        if (what & BEV_EVENT_EOF) {
                c->client_eof = true;
                switch (c->state) {
                case CLIENT_HEAD:
                case CLIENT_DRAIN:
                case CLIENT_CLOSING:
                        proxy_client_free(c);
                        return;
                case CLIENT_TUNNEL:
                        proxy_tunnel_client_read(c); /* flushes, then closes */
                        return;
                case CLIENT_FORWARD:
                case CLIENT_WAIT:
                        if (!c->req_done) {
                                snprintf(c->rec.reason, sizeof(c->rec.reason),
                                         "the client closed before its request ended");
                                proxy_client_free(c);
                        }
                        return; /* the response still goes out; then we close */
                }
        }
}
