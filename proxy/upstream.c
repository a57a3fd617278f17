/* SPDX-License-Identifier: MIT */
/*
 * upstream.c: from a decided request to a connected upstream socket.
 *
 * The order is the point: resolve (evdns, or the config's test-only
 * override, or the IP literal itself), check EVERY address against the
 * fixed deny set (one denied address refuses the whole name: a name that
 * mixes a public and a private address is how rebinding attacks start),
 * then connect to exactly those checked sockaddrs, never the name. For
 * injected requests the connection is TLS, verified against the system CA
 * store (plus the test-only [network] test_ca) with the host name checked
 * by OpenSSL (SSL_set1_host); a verification failure is final, never
 * retried on another address or without TLS.
 */
#include <errno.h>
#include <event2/bufferevent_ssl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>

#include "lib/util.h"
#include "proxy-private.h"

/* Outlives a cancelled lookup: evdns calls back even then. */
struct dns_ctx {
        struct upstream *u;
};

static void up_read_cb(struct bufferevent *bev, void *arg);
static void up_write_cb(struct bufferevent *bev, void *arg);
static void up_event_cb(struct bufferevent *bev, short what, void *arg);
static void connect_next(struct upstream *u);

const struct proxy_resolve *proxy_resolve_find(const struct proxy *px, const char *host)
{
        for (size_t i = 0; i < px->n_resolve; i++)
                if (streq(px->resolve[i].host, host))
                        return &px->resolve[i];
        return NULL;
}

void proxy_upstream_free(struct upstream *u)
{
        if (!u)
                return;
        if (u->dns_ctx) {
                u->dns_ctx->u = NULL;
                evdns_getaddrinfo_cancel(u->dns_req);
        }
        if (u->bev)
                bufferevent_free(u->bev);
        if (u->c && u->c->up == u)
                u->c->up = NULL;
        free(u);
}

static void set_port(struct sockaddr_storage *ss, uint16_t port)
{
        if (ss->ss_family == AF_INET)
                ((struct sockaddr_in *)ss)->sin_port = htons(port);
        else
                ((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

static void dns_cb(int result, struct evutil_addrinfo *res, void *arg)
{
        struct dns_ctx *d = arg;
        struct upstream *u = d->u;
        struct client *c;

        free(d);
        if (!u) {
                if (res)
                        evutil_freeaddrinfo(res);
                return; /* cancelled: the upstream is gone */
        }
        u->dns_ctx = NULL;
        u->dns_req = NULL;
        c = u->c;
        if (result != 0) {
                if (res)
                        evutil_freeaddrinfo(res);
                proxy_client_refuse(c, 502, "cannot resolve %s: %s", u->host,
                                    evutil_gai_strerror(result));
                return;
        }
        for (struct evutil_addrinfo *ai = res; ai; ai = ai->ai_next) {
                char a[64];
                const char *why;

                if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
                        continue;
                why = proxy_addr_denied(ai->ai_addr);
                if (why) {
                        proxy_addr_format(ai->ai_addr, a, sizeof(a));
                        evutil_freeaddrinfo(res);
                        proxy_client_refuse(c, 403,
                                            "%s resolves to %s, which is %s: the proxy never "
                                            "connects there",
                                            u->host, a, why);
                        return;
                }
                if (u->n_addrs < ELEMENTSOF(u->addrs) && ai->ai_addrlen <= sizeof(u->addrs[0])) {
                        memcpy(&u->addrs[u->n_addrs], ai->ai_addr, ai->ai_addrlen);
                        u->addr_lens[u->n_addrs++] = (socklen_t)ai->ai_addrlen;
                }
        }
        evutil_freeaddrinfo(res);
        if (u->n_addrs == 0) {
                proxy_client_refuse(c, 502, "%s has no IPv4 or IPv6 address", u->host);
                return;
        }
        connect_next(u);
}

static void connect_next(struct upstream *u)
{
        struct client *c = u->c;
        struct proxy *px = c->px;
        struct timeval tv = {CONNECT_TIMEOUT_S, 0};

        while (u->next_addr < u->n_addrs) {
                struct sockaddr_storage *sa = &u->addrs[u->next_addr];
                socklen_t sl = u->addr_lens[u->next_addr++];
                SSL *ssl = NULL;

                if (u->bev) {
                        bufferevent_free(u->bev);
                        u->bev = NULL;
                }
                set_port(sa, u->port);
                proxy_addr_format((struct sockaddr *)sa, c->rec.addr, sizeof(c->rec.addr));
                if (u->tls) {
                        ssl = SSL_new(px->tls);
                        if (!ssl || SSL_set_tlsext_host_name(ssl, u->host) != 1 ||
                            SSL_set1_host(ssl, u->host) != 1) {
                                SSL_free(ssl);
                                break;
                        }
                        SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
                        u->bev = bufferevent_openssl_socket_new(
                                px->base, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
                                BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
                        if (u->bev)
                                bufferevent_openssl_set_allow_dirty_shutdown(u->bev, 1);
                } else {
                        u->bev = bufferevent_socket_new(
                                px->base, -1, BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
                }
                if (!u->bev) {
                        if (ssl)
                                SSL_free(ssl);
                        break;
                }
                bufferevent_setcb(u->bev, up_read_cb, up_write_cb, up_event_cb, u);
                bufferevent_set_timeouts(u->bev, &tv, &tv);
                bufferevent_setwatermark(u->bev, EV_READ, 0, CLIENT_IN_HIGH);
                if (bufferevent_socket_connect(u->bev, (struct sockaddr *)sa, (int)sl) == 0)
                        return;
        }
        proxy_client_refuse(c, 502, "cannot connect to %s port %u", u->host, (unsigned)u->port);
}

void proxy_upstream_open(struct client *c, bool tls)
{
        struct proxy *px = c->px;
        uint16_t port = c->rule ? c->rule->port : c->port;
        const struct proxy_resolve *ov;
        struct upstream *u;

        if (c->up && c->up->reusable && c->up->connected && c->up->tls == tls &&
            c->up->port == port && streq(c->up->host, c->host)) {
                c->up->reusable = false;
                proxy_forward_start(c);
                return;
        }
        proxy_upstream_free(c->up);
        c->up = u = calloc(1, sizeof(*u));
        if (!u) {
                proxy_client_refuse(c, 502, "out of memory");
                return;
        }
        u->c = c;
        u->tls = tls;
        u->port = port;
        snprintf(u->host, sizeof(u->host), "%s", c->host);
        ov = proxy_resolve_find(px, c->host);
        if (ov) {
                /* Test only (lint-warned): no lookup and, by design, no deny set. */
                memcpy(&u->addrs[0], &ov->addr, ov->addr_len);
                u->addr_lens[0] = ov->addr_len;
                u->n_addrs = 1;
                connect_next(u);
                return;
        }
        if (c->literal) {
                struct sockaddr_storage ss;
                socklen_t sl;
                const char *why;

                if (proxy_literal_parse(c->host, &ss, &sl, NULL, 0) < 0) {
                        proxy_client_refuse(c, 403, "not an address");
                        return;
                }
                why = proxy_addr_denied((struct sockaddr *)&ss);
                if (why) {
                        proxy_client_refuse(c, 403, "%s is %s: the proxy never connects there",
                                            c->host, why);
                        return;
                }
                u->addrs[0] = ss;
                u->addr_lens[0] = sl;
                u->n_addrs = 1;
                connect_next(u);
                return;
        }
        struct evutil_addrinfo hints = {
                .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_protocol = IPPROTO_TCP};
        struct dns_ctx *d = calloc(1, sizeof(*d));
        if (!d) {
                proxy_client_refuse(c, 502, "out of memory");
                return;
        }
        d->u = u;
        u->dns_ctx = d;
        /* May answer at once (then the callback already ran and u may be gone). */
        struct evdns_getaddrinfo_request *rq =
                evdns_getaddrinfo(px->dns, u->host, NULL, &hints, dns_cb, d);
        if (rq)
                u->dns_req = rq;
}

static void up_read_cb(struct bufferevent *bev, void *arg)
{
        struct upstream *u = arg;
        struct client *c = u->c;

        if (c->state == CLIENT_FORWARD)
                proxy_forward_upstream_read(c);
        else if (c->state == CLIENT_TUNNEL)
                proxy_tunnel_upstream_read(c);
        else {
                /* An idle kept-alive upstream spoke out of turn: it is no longer usable. */
                proxy_upstream_free(u);
        }
}

static void up_write_cb(struct bufferevent *bev, void *arg)
{
        struct upstream *u = arg;
        struct client *c = u->c;

        /* The upstream took what we sent: read the client again. */
        if (evbuffer_get_length(bufferevent_get_output(bev)) < RELAY_OUT_HIGH / 2 &&
            (c->state == CLIENT_FORWARD || c->state == CLIENT_TUNNEL))
                bufferevent_enable(c->bev, EV_READ);
        if (c->state == CLIENT_TUNNEL && c->client_eof &&
            evbuffer_get_length(bufferevent_get_output(bev)) == 0)
                proxy_tunnel_client_read(c);
}

static void tls_error(struct upstream *u, char *buf, size_t size)
{
        SSL *ssl = bufferevent_openssl_get_ssl(u->bev);
        unsigned long e = bufferevent_get_openssl_error(u->bev);
        long v = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;

        if (v != X509_V_OK)
                snprintf(buf, size, "certificate not trusted: %s",
                         X509_verify_cert_error_string(v));
        else if (e)
                ERR_error_string_n(e, buf, size);
        else
                snprintf(buf, size, "handshake failed");
        ERR_clear_error();
}

static void up_event_cb(struct bufferevent *bev, short what, void *arg)
{
        struct upstream *u = arg;
        struct client *c = u->c;
        struct timeval tv = {c->state == CLIENT_TUNNEL ? TUNNEL_IDLE_S : IDLE_TIMEOUT_S, 0};

        if (what & BEV_EVENT_CONNECTED) {
                u->connected = true;
                (void)setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &(int){1},
                                 sizeof(int));
                bufferevent_set_timeouts(bev, &tv, &tv);
                bufferevent_enable(bev, EV_READ | EV_WRITE);
                if (c->state != CLIENT_WAIT)
                        return;
                if (streq(c->rec.kind ? c->rec.kind : "", "connect"))
                        proxy_tunnel_start(c);
                else
                        proxy_forward_start(c);
                return;
        }
        if (!u->connected) {
                char why[256];

                if (u->tls && (what & BEV_EVENT_ERROR) && bufferevent_get_openssl_error(bev)) {
                        tls_error(u, why, sizeof(why));
                        proxy_client_refuse(c, 502, "TLS to %s failed: %s", u->host, why);
                        return;
                }
                if (u->tls && (what & BEV_EVENT_ERROR)) {
                        SSL *ssl = bufferevent_openssl_get_ssl(bev);
                        if (ssl && SSL_get_verify_result(ssl) != X509_V_OK) {
                                tls_error(u, why, sizeof(why));
                                proxy_client_refuse(c, 502, "TLS to %s failed: %s", u->host, why);
                                return;
                        }
                }
                if (what & BEV_EVENT_TIMEOUT) {
                        proxy_client_refuse(c, 504, "connecting to %s port %u timed out", u->host,
                                            (unsigned)u->port);
                        return;
                }
                connect_next(u);
                return;
        }
        if (c->state == CLIENT_FORWARD) {
                proxy_forward_upstream_eof(c);
        } else if (c->state == CLIENT_TUNNEL) {
                /* Relay what is left; close once the client has it (frees u). */
                proxy_tunnel_upstream_read(c);
                proxy_client_close_soon(c);
        } else {
                proxy_upstream_free(u);
        }
}
