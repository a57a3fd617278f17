/* SPDX-License-Identifier: MIT */
/*
 * forward.c: relay one allowed HTTP request upstream and its response back.
 *
 * The request head is rebuilt, not copied: the request line in origin form
 * (for injected requests the normalized path that the rule matched), the
 * client's headers without hop-by-hop ones, without Proxy-Authorization,
 * and for injected requests without any client Authorization (or the
 * rule's header) and without the fields that override a method or path
 * (overrides_route()), the client's Accept-Encoding and Range (also
 * If-Range, and Request-Range, which Apache reads as Range), then
 * Accept-Encoding: identity (the mask cannot read gzip) and the real
 * credential, then the framing as llhttp read it (and Connection: close
 * after a body on a method other than POST, PUT, PATCH). The body goes out as
 * llhttp decoded it, framed anew by us (the same length, or fresh chunks
 * without extensions or trailers), so the upstream cannot read the
 * message's end elsewhere than we did (RFC 9112 6, request smuggling).
 *
 * The response head is relayed as received after a strict parse (a 101 is
 * refused: nothing is upgraded; for an injected exchange so are a 206 and
 * a coded body, which the mask could not read whole), or for an injected
 * exchange rebuilt from it without Set-Cookie (resp_head_write()); its
 * body is decoded the same way and chunked anew, and for an injected
 * exchange the head and the decoded body pass through the secret mask
 * (inject.c) on their way to the sandbox. An upstream connection is used
 * for another request only when both messages ended exactly where llhttp
 * said (upstream_reusable()).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "lib/util.h"
#include "proxy-private.h"

/*
 * Field names compared as CGI and WSGI servers see them: they turn '-' and
 * '_' alike into '_' (X_HTTP_Method_Override reads as X-HTTP-Method-Override
 * there), so every name the proxy drops is matched in both spellings.
 * prefix: b need only begin a.
 */
static bool name_eq(const char *a, const char *b, bool prefix)
{
        for (; *b; a++, b++) {
                char x = *a == '_' ? '-' : *a, y = *b == '_' ? '-' : *b;
                if (!*a || tolower((unsigned char)x) != tolower((unsigned char)y))
                        return false;
        }
        return prefix || !*a;
}

/*
 * Never copied from the client: hop-by-hop fields (RFC 9110 7.6.1), and
 * the framing, which head_write() states anew from what llhttp parsed.
 * conn.c has already refused a Connection header naming anything else.
 */
static bool hop_by_hop(const char *name)
{
        static const char *const hop[] = {
                "connection",         "keep-alive", "proxy-connection", "proxy-authorization",
                "proxy-authenticate", "te",         "trailer",          "upgrade",
                "http2-settings",     "expect",     "content-length",   "transfer-encoding"};

        for (size_t i = 0; i < ELEMENTSOF(hop); i++)
                if (name_eq(name, hop[i], false))
                        return true;
        return false;
}

/*
 * Fields that ask a server, or a framework or gateway in front of it, to
 * act on another method or path than the request line's: an upstream that
 * honours them would run what no rule allowed (a POST-only rule becoming a
 * DELETE). Requests to injected hosts never carry them.
 */
static bool overrides_route(const char *name)
{
        static const char *const prefix[] = {
                "x-http-method", "x-method-override", "x-original-", "x-rewrite-",
                "x-forwarded-",  "x-envoy-original-", "x-override-"};
        static const char *const exact[] = {"forwarded", "x-real-ip", "x-host",
                                            "x-middleware-subrequest", "x-proxy-url"};

        for (size_t i = 0; i < ELEMENTSOF(prefix); i++)
                if (name_eq(name, prefix[i], true))
                        return true;
        for (size_t i = 0; i < ELEMENTSOF(exact); i++)
                if (name_eq(name, exact[i], false))
                        return true;
        return false;
}

/*
 * The decoded request body goes out framed by us: as it came for
 * Content-Length, in fresh chunks (no extensions, no trailers) for chunked.
 * A push's bytes are held and its commands read first.
 */
static int req_body_cb(void *userdata, const char *data, size_t len)
{
        struct client *c = userdata;
        struct evbuffer *sink;

        if (len == 0 || (!c->held && !(c->up && c->up->bev)))
                return 0;
        sink = c->held ? c->held : bufferevent_get_output(c->up->bev);
        if (c->push)
                (void)proxy_push_scan_feed(c->push, data, len); /* the verdict is read after */
        if (c->req.chunked)
                evbuffer_add_printf(sink, "%zx\r\n", len);
        evbuffer_add(sink, data, len);
        if (c->req.chunked)
                evbuffer_add(sink, "\r\n", 2);
        return 0;
}

/*
 * A push: its last path segment is git-receive-pack, read as loosely as any
 * server might route it (any case, trailing slashes, a ";param" as Java
 * servlet containers strip it). A body is what carries the ref commands.
 */
static bool is_receive_pack(struct client *c)
{
        static const char svc[] = "git-receive-pack";
        const char *p = c->path_enc ? c->path_enc : "", *end = p + strlen(p), *seg;

        while (end > p && end[-1] == '/')
                end--;
        for (seg = end; seg > p && seg[-1] != '/'; seg--)
                ;
        size_t n = strcspn(seg, ";/");
        return c->req.has_body && n == strlen(svc) && strncasecmp(seg, svc, n) == 0;
}

enum proxy_body_rule proxy_forward_body_rule(const struct proxy_http_head *req)
{
        const char *m = req->method;

        if (!req->has_body || streq(m, "POST") || streq(m, "PUT") || streq(m, "PATCH"))
                return PROXY_BODY_OK;
        if (streq(m, "GET") || streq(m, "HEAD") || streq(m, "TRACE"))
                return PROXY_BODY_REFUSED;
        return PROXY_BODY_CLOSE;
}

/* The request head as it goes upstream. */
static int head_write(struct client *c, struct evbuffer *out)
{
        const struct proxy_inject_rule *r = c->rule;

        evbuffer_add_printf(out, "%s %s%s%s HTTP/1.1\r\n", c->req.method, c->path_enc,
                            c->query ? "?" : "", c->query ? c->query : "");
        for (size_t i = 0; i < c->req.n_headers; i++) {
                const struct proxy_header *h = &c->req.headers[i];

                if (hop_by_hop(h->name))
                        continue;
                if (r && overrides_route(h->name))
                        continue;
                if (r && (name_eq(h->name, "authorization", false) ||
                          (r->header && name_eq(h->name, r->header, false))))
                        continue; /* the client's credential never goes upstream */
                if (r && name_eq(h->name, "host", false))
                        continue; /* rewritten below for the TLS port */
                if (r && name_eq(h->name, "accept-encoding", false))
                        continue; /* identity, below */
                if (r && (name_eq(h->name, "range", false) || name_eq(h->name, "if-range", false) ||
                          name_eq(h->name, "request-range", false)))
                        continue; /* whole bodies only: a slice could cut the secret for the mask */
                evbuffer_add_printf(out, "%s: %s\r\n", h->name, h->value);
        }
        if (r) {
                if (r->port == 443)
                        evbuffer_add_printf(out, "Host: %s\r\n", c->host);
                else
                        evbuffer_add_printf(out, "Host: %s:%u\r\n", c->host, (unsigned)r->port);
                /* The mask reads the body as sent: no gzip or br for it to miss. */
                evbuffer_add_printf(out, "Accept-Encoding: identity\r\n");
                int k = proxy_inject_credential(c, out);
                if (k < 0)
                        return k;
        } else if (!proxy_http_header(&c->req, "host", NULL)) {
                evbuffer_add_printf(out, "Host: %s:%u\r\n", c->host, (unsigned)c->port);
        }
        /* The framing llhttp read, and the body relayed below is framed by it. */
        if (c->req.chunked)
                evbuffer_add_printf(out, "Transfer-Encoding: chunked\r\n");
        else if (c->req.has_length)
                evbuffer_add_printf(out, "Content-Length: %" PRIu64 "\r\n", c->req.content_length);
        /* A server that ignores a DELETE's body would read it as the next
         * request; after this it may read none on the connection. */
        if (proxy_forward_body_rule(&c->req) == PROXY_BODY_CLOSE)
                evbuffer_add_printf(out, "Connection: close\r\n");
        evbuffer_add(out, "\r\n", 2);
        return 0;
}

void proxy_forward_start(struct client *c)
{
        struct evbuffer *head = evbuffer_new();
        const char *expect = proxy_http_header(&c->req, "expect", NULL);
        size_t n;

        if (!head) {
                proxy_client_refuse(c, 502, "out of memory");
                return;
        }
        if (c->rule && is_receive_pack(c) && (c->rule->push_refs || !c->rule->push_delete)) {
                /* Any Content-Encoding but identity, in any spelling or number. */
                for (size_t i = 0; i < c->req.n_headers; i++) {
                        const char *ce = c->req.headers[i].value;
                        if (!name_eq(c->req.headers[i].name, "content-encoding", false) ||
                            strcasecmp(ce, "identity") == 0)
                                continue;
                        evbuffer_free(head);
                        proxy_client_refuse(c, 403,
                                            "a compressed push (Content-Encoding: %.40s) "
                                            "cannot have its refs checked",
                                            ce);
                        return;
                }
                c->push = proxy_push_scan_new();
                c->held = evbuffer_new();
                if (!c->push || !c->held) {
                        evbuffer_free(head);
                        proxy_client_refuse(c, 502, "out of memory");
                        return;
                }
        }
        c->reqp.on_body = req_body_cb;
        c->reqp.userdata = c;
        if (head_write(c, head) < 0) {
                evbuffer_free(head);
                proxy_client_refuse(c, 502,
                                    "the secret '%s' cannot be sent in a header (it "
                                    "holds a line break or control byte)",
                                    c->rule->secret);
                return;
        }
        n = evbuffer_get_length(head);
        if (c->held) {
                /* A push: not even the head goes up before its refs are checked. */
                evbuffer_add_buffer(c->held, head);
        } else if (!proxy_budget_charge(c, n)) {
                evbuffer_free(head);
                proxy_client_refuse(c, 403, "this run has sent all it may ([network] bytes_out)");
                return;
        } else {
                evbuffer_add_buffer(bufferevent_get_output(c->up->bev), head);
        }
        evbuffer_free(head);
        c->rec.decision = "allow";
        c->state = CLIENT_FORWARD;
        if (expect && strcasecmp(expect, "100-continue") == 0 && c->req.has_body)
                evbuffer_add_printf(bufferevent_get_output(c->bev),
                                    "HTTP/1.1 100 Continue\r\n\r\n");
        bufferevent_enable(c->bev, EV_READ);
        proxy_forward_client_read(c);
}

/* The push's ref commands are complete (or broken): let it through or answer as git would. */
static bool push_decide(struct client *c)
{
        char why[300];
        const char *no = proxy_push_scan_verdict(c->push, c->rule, why, sizeof(why));

        if (no) {
                c->rec.decision = "refuse";
                snprintf(c->rec.reason, sizeof(c->rec.reason), "%s", no);
                proxy_push_refuse(c, no);
                return false;
        }
        size_t n = evbuffer_get_length(c->held);
        if (!proxy_budget_charge(c, n)) {
                proxy_client_refuse(c, 403, "this run has sent all it may ([network] bytes_out)");
                return false;
        }
        evbuffer_add_buffer(bufferevent_get_output(c->up->bev), c->held);
        evbuffer_free(c->held);
        c->held = NULL;
        proxy_push_scan_free(c->push);
        c->push = NULL;
        c->reqp.on_body = NULL;
        return true;
}

void proxy_forward_client_read(struct client *c)
{
        struct evbuffer *in = bufferevent_get_input(c->bev);

        while (!c->req_done && evbuffer_get_length(in) > 0) {
                struct evbuffer *sink = c->held ? c->held : bufferevent_get_output(c->up->bev);
                size_t before = evbuffer_get_length(sink), used = 0;
                struct evbuffer_iovec v;
                bool done = false, held = c->held != NULL;
                const char *why = NULL;

                if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
                        break;
                /* req_body_cb() appends the decoded bytes, framed anew, to sink. */
                if (proxy_http_body(&c->reqp, v.iov_base, v.iov_len, &used, &done, &why) < 0) {
                        proxy_client_refuse(c, 400, "malformed request body: %s", why);
                        return;
                }
                evbuffer_drain(in, used);
                if (done && c->req.chunked)
                        evbuffer_add(sink, "0\r\n\r\n", 5); /* no trailer fields */
                c->req_done = done;
                if (held) {
                        if (proxy_push_scan_state(c->push) != 0 || done) {
                                if (!push_decide(c))
                                        return;
                        } else if (evbuffer_get_length(c->held) > PUSH_COMMANDS_MAX) {
                                proxy_client_refuse(c, 403, "a push's ref commands exceed 1 MiB");
                                return;
                        }
                } else if (!proxy_budget_charge(c, evbuffer_get_length(sink) - before)) {
                        proxy_client_refuse(c, 403,
                                            "this run has sent all it may ([network] bytes_out)");
                        return;
                }
        }
        if (c->up && c->up->bev &&
            evbuffer_get_length(bufferevent_get_output(c->up->bev)) > RELAY_OUT_HIGH)
                bufferevent_disable(c->bev, EV_READ);
        if (c->req_done && !c->have_resp && c->state == CLIENT_FORWARD)
                bufferevent_disable(c->bev, EV_READ); /* the next request waits its turn */
}

/*
 * A response body under a content coding, or a transfer coding besides
 * chunked (llhttp removes only the chunking; "gzip, chunked" stays gzip),
 * which the mask cannot read.
 */
static bool encoded(const struct proxy_http_head *h)
{
        if (!h->has_body)
                return false;
        for (size_t i = 0; i < h->n_headers; i++) {
                const char *n = h->headers[i].name, *v = h->headers[i].value;
                if (name_eq(n, "content-encoding", false) && strcasecmp(v, "identity") != 0 &&
                    v[0] != '\0')
                        return true;
                if (name_eq(n, "transfer-encoding", false) && strcasecmp(v, "chunked") != 0)
                        return true;
        }
        return false;
}

/*
 * An injected exchange's response head, rebuilt from what llhttp parsed,
 * without the cookies the upstream set: a session that the real credential
 * opened is a credential too, and outside the sandbox it would need no
 * cloister token (a Jira JSESSIONID, say). Then through the mask, flushed
 * whole: it ends in CRLF CRLF, which no secret holds.
 */
static int resp_head_write(struct client *c, struct evbuffer *out)
{
        const struct proxy_http_head *h = &c->resp_head;
        struct evbuffer *b = evbuffer_new();

        if (!b)
                return -ENOMEM;
        evbuffer_add_printf(b, "HTTP/%u.%u %d %s\r\n", h->major, h->minor, h->status,
                            h->reason ? h->reason : "");
        for (size_t i = 0; i < h->n_headers; i++) {
                const struct proxy_header *f = &h->headers[i];
                if (name_eq(f->name, "set-cookie", false) || name_eq(f->name, "set-cookie2", false))
                        continue;
                evbuffer_add_printf(b, "%s: %s\r\n", f->name, f->value);
        }
        evbuffer_add(b, "\r\n", 2);
        proxy_mask_move(c, b, evbuffer_get_length(b), out, true);
        evbuffer_free(b);
        return 0;
}

/* A decoded response body passes the mask into c->relay. */
static int resp_body_cb(void *userdata, const char *data, size_t len)
{
        struct client *c = userdata;

        proxy_mask_add(c, data, len, c->relay, false);
        return 0;
}

/* Send what the mask let through to the client, in a chunk of our own if the body is chunked. */
static void relay_flush(struct client *c, bool final)
{
        struct evbuffer *out = bufferevent_get_output(c->bev);
        bool chunked = c->resp_head.chunked && c->resp_head.has_body;
        size_t n;

        if (final)
                proxy_mask_add(c, NULL, 0, c->relay, true);
        n = evbuffer_get_length(c->relay);
        if (n && chunked)
                evbuffer_add_printf(out, "%zx\r\n", n);
        evbuffer_add_buffer(out, c->relay);
        if (n && chunked)
                evbuffer_add(out, "\r\n", 2);
        if (final && chunked)
                evbuffer_add(out, "0\r\n\r\n", 5); /* no trailer fields */
}

/* Whether the upstream connection may carry the next request. */
static bool upstream_reusable(struct client *c)
{
        if (!c->up || !c->up->bev || !c->resp_head.keep_alive || !c->req_done)
                return false;
        /* Bytes after the response's end answer nothing we sent. */
        if (evbuffer_get_length(bufferevent_get_input(c->up->bev)) > 0)
                return false;
        /* A body on a method that normally has none (DELETE, OPTIONS, ...) is
         * one a server may not read: its bytes would start the next request. */
        if (proxy_forward_body_rule(&c->req) != PROXY_BODY_OK)
                return false;
        return true;
}

static void response_done(struct client *c)
{
        relay_flush(c, true);
        if (c->up)
                c->up->reusable = upstream_reusable(c);
        if (!c->req_done || !c->resp_head.keep_alive)
                c->closing_after = true;
        c->have_resp = false;
        proxy_client_next(c);
}

void proxy_forward_upstream_read(struct client *c)
{
        struct evbuffer *in = bufferevent_get_input(c->up->bev);
        struct evbuffer *out = bufferevent_get_output(c->bev);

        if (!c->relay && !(c->relay = evbuffer_new())) {
                proxy_client_refuse(c, 502, "out of memory");
                return;
        }
        while (evbuffer_get_length(in) > 0) {
                if (!c->have_resp) {
                        size_t len = evbuffer_get_length(in),
                               n = MIN(len, (size_t)PROXY_HEAD_MAX + 1);
                        size_t hl = 0;
                        const char *why = NULL;
                        char *data = (char *)evbuffer_pullup(in, (ssize_t)n);
                        int r = proxy_http_head_scan(data, n, &hl, &why);

                        if (r == 0)
                                return;
                        proxy_http_head_done(&c->resp_head);
                        c->resp.on_body = resp_body_cb;
                        c->resp.userdata = c;
                        if (r < 0 || proxy_http_parse_head(&c->resp, false,
                                                           strcasecmp(c->req.method, "HEAD") == 0,
                                                           data, hl, &c->resp_head, &why) < 0) {
                                proxy_client_refuse(c, 502, "malformed response from %s: %s",
                                                    c->host, why);
                                return;
                        }
                        if (c->resp_head.status == 101) {
                                proxy_client_refuse(c, 502,
                                                    "%s switched protocols; nothing is "
                                                    "upgraded through the proxy",
                                                    c->host);
                                return;
                        }
                        if (c->rule && encoded(&c->resp_head)) {
                                proxy_client_refuse(c, 502,
                                                    "%s answered with a Content-Encoding or "
                                                    "Transfer-Encoding though asked for identity; "
                                                    "the secret mask cannot read it",
                                                    c->host);
                                return;
                        }
                        /* The mask finds the secret only whole; a slice of it
                         * (the rest in another 206) would pass. */
                        if (c->rule && c->resp_head.status == 206) {
                                proxy_client_refuse(c, 502,
                                                    "%s answered with part of a body (206) though "
                                                    "not asked for a range; the secret mask "
                                                    "reads whole bodies only",
                                                    c->host);
                                return;
                        }
                        c->rec.bytes_in += hl;
                        if (c->rule) {
                                evbuffer_drain(in, hl);
                                if (resp_head_write(c, out) < 0) {
                                        proxy_client_refuse(c, 502, "out of memory");
                                        return;
                                }
                        } else {
                                proxy_mask_move(c, in, hl, out, true); /* as received */
                        }
                        if (c->resp_head.status < 200)
                                continue; /* 100, 103: another head follows */
                        c->have_resp = true;
                        c->rec.status = c->resp_head.status;
                        if (!c->resp_head.has_body) {
                                response_done(c);
                                return;
                        }
                        continue;
                }
                struct evbuffer_iovec v;
                size_t used = 0;
                bool done = false;
                const char *why = NULL;

                if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
                        break;
                /* resp_body_cb() puts the decoded bytes through the mask. */
                if (proxy_http_body(&c->resp, v.iov_base, v.iov_len, &used, &done, &why) < 0) {
                        proxy_client_refuse(c, 502, "malformed response body from %s: %s", c->host,
                                            why);
                        return;
                }
                c->rec.bytes_in += used;
                evbuffer_drain(in, used);
                if (done) {
                        response_done(c);
                        return;
                }
                relay_flush(c, false);
        }
        if (evbuffer_get_length(out) > RELAY_OUT_HIGH)
                bufferevent_disable(c->up->bev, EV_READ);
}

void proxy_forward_upstream_eof(struct client *c)
{
        /* What is still buffered belongs to the response. */
        proxy_forward_upstream_read(c);
        if (c->state != CLIENT_FORWARD || !c->up)
                return;
        c->up->reusable = false;
        if (c->have_resp && proxy_http_eof_completes(&c->resp)) {
                c->closing_after = true; /* a response read to EOF ends the connection */
                response_done(c);
                return;
        }
        if (!c->have_resp) {
                proxy_client_refuse(c, 502, "%s closed the connection without a response", c->host);
                return;
        }
        snprintf(c->rec.reason, sizeof(c->rec.reason), "%.150s closed the connection mid-response",
                 c->host);
        proxy_client_free(c);
}
