/* SPDX-License-Identifier: MIT */
/*
 * tunnel.c: CONNECT tunnels. After the 200, the first bytes from the client
 * must be a TLS ClientHello whose server name (SNI) is the CONNECT host;
 * only then does anything reach the upstream. The hello is read, never
 * answered: it goes into a server-side OpenSSL object over memory BIOs whose
 * servername callback records the name and aborts the handshake, so
 * OpenSSL's own ClientHello parser does the reading. The tunnel is not
 * terminated: the upstream gets the client's bytes unchanged.
 *
 * A tunnel to an IP address listed exactly carries no SNI (clients send
 * none for addresses); one that sends a name anyway is refused too.
 */
#include <openssl/err.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "lib/util.h"
#include "proxy-private.h"

static int sni_cb(SSL *ssl, int *alert, void *arg)
{
        struct client *c = SSL_get_app_data(ssl);
        const char *name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);

        if (c) {
                c->sni_seen = true;
                snprintf(c->sni, sizeof(c->sni), "%s", name ? name : "");
        }
        return SSL_TLSEXT_ERR_ALERT_FATAL; /* read, never answer */
}

static void tunnel_close(struct client *c, const char *why)
{
        snprintf(c->rec.reason, sizeof(c->rec.reason), "%.199s", why);
        proxy_client_close_soon(c);
}

void proxy_tunnel_start(struct client *c)
{
        struct timeval tv = {HEAD_TIMEOUT_S, 0};
        BIO *r, *w;

        c->state = CLIENT_TUNNEL;
        c->deadline_ms = proxy_now_ms() + HEAD_TIMEOUT_S * 1000;
        SSL_CTX_set_tlsext_servername_callback(c->px->peek, sni_cb);
        c->peek = SSL_new(c->px->peek);
        c->hello = evbuffer_new();
        r = BIO_new(BIO_s_mem());
        w = BIO_new(BIO_s_mem());
        if (!c->peek || !c->hello || !r || !w) {
                BIO_free(r);
                BIO_free(w);
                proxy_client_refuse(c, 502, "out of memory");
                return;
        }
        SSL_set_bio(c->peek, r, w);
        SSL_set_app_data(c->peek, c);
        SSL_set_accept_state(c->peek);
        c->rec.decision = "allow";
        c->rec.status = 200;
        evbuffer_add_printf(bufferevent_get_output(c->bev),
                            "HTTP/1.1 200 Connection established\r\n\r\n");
        bufferevent_set_timeouts(c->bev, &tv, &tv);
        bufferevent_enable(c->bev, EV_READ);
        proxy_tunnel_client_read(c);
}

/* 1: the SNI is checked and good, 0: more bytes needed, < 0: refused (c is closing). */
static int peek_hello(struct client *c)
{
        struct evbuffer *in = bufferevent_get_input(c->bev);
        size_t n = evbuffer_get_length(in);
        unsigned char buf[4096];
        int r;

        while (n > 0) {
                size_t k = MIN(n, sizeof(buf));
                evbuffer_remove(in, buf, k);
                BIO_write(SSL_get_rbio(c->peek), buf, (int)k);
                evbuffer_add(c->hello, buf, k);
                n -= k;
        }
        if (evbuffer_get_length(c->hello) == 0)
                return 0;
        r = SSL_do_handshake(c->peek);
        ERR_clear_error();
        if (!c->sni_seen) {
                if (proxy_now_ms() > c->deadline_ms) {
                        c->rec.decision = "refuse";
                        tunnel_close(c, "the ClientHello took longer than 30 s");
                        return -1;
                }
                proxy_deadline_arm(c);
                if (r <= 0 && SSL_get_error(c->peek, r) == SSL_ERROR_WANT_READ &&
                    evbuffer_get_length(c->hello) < 2 * HELLO_MAX)
                        return 0;
                c->rec.decision = "refuse";
                tunnel_close(c, "the tunnel did not start with a TLS ClientHello");
                return -1;
        }
        if (c->literal ? c->sni[0] != '\0' : strcasecmp(c->sni, c->host) != 0) {
                char why[300];
                snprintf(why, sizeof(why),
                         "TLS server name '%.80s' is not the CONNECT host '%.100s'",
                         c->sni[0] ? c->sni : "(none)", c->host);
                for (char *s = why; *s; s++)
                        if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
                                *s = '?';
                c->rec.decision = "refuse";
                tunnel_close(c, why);
                return -1;
        }
        SSL_free(c->peek);
        c->peek = NULL;
        c->sni_checked = true;
        struct timeval tv = {TUNNEL_IDLE_S, 0};
        bufferevent_set_timeouts(c->bev, &tv, &tv);
        n = evbuffer_get_length(c->hello);
        if (!proxy_budget_charge(c, n)) {
                c->rec.decision = "refuse";
                tunnel_close(c, "this run has sent all it may ([network] bytes_out)");
                return -1;
        }
        evbuffer_add_buffer(bufferevent_get_output(c->up->bev), c->hello);
        evbuffer_free(c->hello);
        c->hello = NULL;
        return 1;
}

void proxy_tunnel_client_read(struct client *c)
{
        struct evbuffer *in = bufferevent_get_input(c->bev);
        size_t n;

        if (!c->up) {
                proxy_client_close_soon(c);
                return;
        }
        if (!c->sni_checked) {
                if (peek_hello(c) <= 0) {
                        if (c->state == CLIENT_TUNNEL && c->client_eof)
                                tunnel_close(c, "the client closed before its ClientHello");
                        return;
                }
        }
        n = evbuffer_get_length(in);
        if (n) {
                if (!proxy_budget_charge(c, n)) {
                        tunnel_close(c, "this run has sent all it may ([network] bytes_out)");
                        return;
                }
                evbuffer_remove_buffer(in, bufferevent_get_output(c->up->bev), n);
        }
        struct evbuffer *up_out = bufferevent_get_output(c->up->bev);
        if (evbuffer_get_length(up_out) > RELAY_OUT_HIGH)
                bufferevent_disable(c->bev, EV_READ);
        /* The client is done sending: pass the EOF on once its bytes are out. */
        if (c->client_eof && evbuffer_get_length(up_out) == 0)
                shutdown(bufferevent_getfd(c->up->bev), SHUT_WR);
}

void proxy_tunnel_upstream_read(struct client *c)
{
        struct evbuffer *in = bufferevent_get_input(c->up->bev);
        size_t n = evbuffer_get_length(in);

        if (!c->sni_checked) {
                evbuffer_drain(in, n); /* the server spoke before the client: nothing passes */
                return;
        }
        c->rec.bytes_in += n;
        evbuffer_remove_buffer(in, bufferevent_get_output(c->bev), n);
        if (evbuffer_get_length(bufferevent_get_output(c->bev)) > RELAY_OUT_HIGH)
                bufferevent_disable(c->up->bev, EV_READ);
}
