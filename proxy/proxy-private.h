/* SPDX-License-Identifier: MIT */
/*
 * proxy-private.h: the proxy's state, shared by its files:
 *   server.c     the event loop, listeners, control socket, limits, lifecycle
 *   conn.c       one client connection: read a request, decide, answer
 *   forward.c    relay an allowed HTTP request and its response
 *   tunnel.c     CONNECT: the SNI peek and the byte relay
 *   upstream.c   resolve, check the deny set, connect, TLS
 *   inject.c     tokens in, real secrets out, and masking them in responses
 *   broker-link.c  the broker's admin socket (introspect), asynchronously
 *   pktline.c    the ref updates at the start of a git push
 *   netlog.c     the audit lines
 *
 * One thread runs everything (libevent's loop), so there are no locks.
 */
#pragma once

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <jansson.h>
#include <openssl/ssl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "broker/audit.h"
#include "broker/keys.h"
#include "http.h"
#include "proxy.h"

#define CLIENT_IN_HIGH    (256 * 1024) /* read no more from a peer while this much waits */
#define RELAY_OUT_HIGH    (512 * 1024) /* stop reading a side while the other's output holds this */
#define HEAD_TIMEOUT_S    30
#define IDLE_TIMEOUT_S    120
#define CONNECT_TIMEOUT_S 15
#define TUNNEL_IDLE_S     600
#define HELLO_MAX                                                                                  \
        (16 * 1024 + 5) /* one TLS record of ClientHello; OpenSSL reads more if it spans two */
#define PUSH_COMMANDS_MAX (1024 * 1024) /* ref commands of one push we hold before forwarding */
#define DRAIN_MAX         (16 * 1024 * 1024)
#define REFUSALS_AUDIT_MS 1000 /* limit refusals are audited at most once per interval, counted */

struct bucket {
        double level;
        int64_t last_ms;
};

struct listener;
struct client;
struct dns_ctx;

struct proxy {
        struct event_base *base;
        struct evdns_base *dns;
        SSL_CTX *tls;  /* upstream: verified, hostname checked */
        SSL_CTX *peek; /* server side, only to read ClientHellos */
        /* the options, deep-copied */
        char *origin, *workspace, *broker_dir, *control_path, *test_ca;
        struct proxy_host_pattern *allow, *deny;
        size_t n_allow, n_deny;
        struct proxy_resolve *resolve;
        size_t n_resolve;
        struct proxy_inject_rule *rules;
        size_t n_rules;
        uint64_t max_connections, rate, bytes_out;
        uint64_t log_max; /* net.jsonl's bound ([limits] netlog) */

        int broker_dirfd;
        int audit_lock_fd;
        broker_audit *audit;
        bool audit_broken;
        broker_keyring *keys;
        int64_t keys_loaded_ms;
        struct broker_link *link;

        struct evconnlistener *control;
        struct listener *listeners;
        size_t n_clients;
        uint64_t next_id;
        struct event *sigterm, *sigint;
        struct event *head_sync; /* writes the audit head after a burst */
        struct event *lifetime;  /* looks whether runs are left (lib/lifetime.h) */
        int lifetime_fd;         /* -1: serve until a signal */
        int stop_error;
        void (*log)(const char *line);
};

struct listener {
        struct proxy *px;
        struct evconnlistener *l;
        struct bufferevent *ctl; /* the run's control connection; NULL for --listen */
        pid_t run_pid, sandbox_pid;
        size_t n_clients;
        struct bucket rate;
        uint64_t bytes_out;
        bool budget_spent;
        int64_t refused_since_ms;
        uint64_t refused_count;
        const char *refused_why;
        struct client *clients;
        struct listener *next;
};

enum client_state {
        CLIENT_HEAD,    /* reading a request head */
        CLIENT_WAIT,    /* token check or upstream connect under way */
        CLIENT_FORWARD, /* request body up, response down */
        CLIENT_TUNNEL,  /* CONNECT: peeking, then relaying */
        CLIENT_DRAIN,   /* refused: discarding the request body, then closing */
        CLIENT_CLOSING, /* flushing the last bytes, then closing */
};

/* What one audit line says about one request or tunnel. */
struct record {
        const char *kind; /* "http" or "connect" */
        char method[16];
        char host[PROXY_HOST_MAX + 3];
        uint16_t port;
        char *path; /* injected requests only */
        const char *rule;
        char jti[48];
        const char *decision; /* "allow" or "refuse"; NULL until decided */
        char reason[200];
        int status;
        char addr[48];
        uint64_t bytes_out, bytes_in;
        int64_t start_ms;
        bool written;
};

struct upstream {
        struct bufferevent *bev;
        char host[PROXY_HOST_MAX + 3];
        uint16_t port;
        bool tls;
        bool connected;
        bool reusable; /* the last response left it open for another request */
        struct evdns_getaddrinfo_request *dns_req;
        struct dns_ctx *dns_ctx; /* outlives a cancelled lookup */
        struct sockaddr_storage addrs[8];
        socklen_t addr_lens[8];
        size_t n_addrs, next_addr;
        struct client *c;
};

struct client {
        struct proxy *px;
        struct listener *ls;
        struct bufferevent *bev;
        uint64_t id;
        enum client_state state;
        bool closing_after; /* close after the current exchange */
        bool client_eof;
        /* When the head being read, the drain of a refused body or a tunnel's
         * ClientHello must be done, however slowly its bytes come (the
         * bufferevent timeouts only bound the silence between them); 0: none. */
        int64_t deadline_ms;

        struct proxy_http reqp;
        struct proxy_http_head req;
        bool have_req;
        bool req_done; /* the request body is complete */
        char host[PROXY_HOST_MAX + 3];
        bool literal;
        uint16_t port;
        char *path_enc, *query; /* injected requests */
        const struct proxy_inject_rule *rule;
        uint64_t broker_ticket;
        struct upstream *up;
        bool connect_tls;

        /* response side */
        struct proxy_http resp;
        struct proxy_http_head resp_head;
        bool have_resp;
        bool head_skip_body;
        struct evbuffer *relay; /* decoded, masked response bytes on their way to the client */

        /* the injected secret for this exchange (sodium_malloc'd) and what to mask */
        unsigned char *secret;
        size_t secret_len;
        char *needles[2]; /* sodium_malloc'd: the secret as sent, and its Basic form */
        size_t needle_lens[2];
        struct evbuffer *mask_carry;

        /* git push scoping */
        struct push_scan *push;
        struct evbuffer *held; /* body bytes held until the push's ref commands are checked */

        /* CONNECT */
        SSL *peek;
        struct evbuffer *hello;
        bool sni_checked, sni_seen;
        char sni[PROXY_HOST_MAX + 3];

        uint64_t drained;
        struct record rec;
        struct client *next, *prev;
};

/* server.c */
int64_t proxy_now_ms(void);
bool proxy_bucket_take(struct bucket *b, double per_second, double burst, int64_t now_ms);
/* Count bytes going upstream; false (and the budget marked spent) when over. */
bool proxy_budget_charge(struct client *c, size_t n);
void proxy_client_free(struct client *c);
void proxy_deadline_arm(struct client *c);
void proxy_schedule_head_sync(struct proxy *px);

/* conn.c */
void proxy_client_accept(struct listener *ls, int fd);
/* Answer with a refusal (and x-cloister-error), audit it, then drain and close. */
void proxy_client_refuse(struct client *c, int status, const char *reason_fmt, ...)
        __attribute__((format(printf, 3, 4)));
/* Continue with the next request on the connection, or close. */
void proxy_client_next(struct client *c);
void proxy_client_close_soon(struct client *c);
const char *proxy_status_text(int status);

/* forward.c */
void proxy_forward_start(struct client *c); /* upstream is connected */
void proxy_forward_client_read(struct client *c);
void proxy_forward_upstream_read(struct client *c);
void proxy_forward_upstream_eof(struct client *c);
/*
 * A request body on a method that normally carries none. PROXY_BODY_OK:
 * POST, PUT, PATCH, or no body. PROXY_BODY_REFUSED: GET, HEAD, TRACE (no
 * meaning, RFC 9110 9.3). PROXY_BODY_CLOSE: any other method; forwarded
 * with Connection: close, so a server that does not read it must not read
 * its bytes as another request either (RFC 9112 9.6).
 */
enum proxy_body_rule { PROXY_BODY_OK, PROXY_BODY_REFUSED, PROXY_BODY_CLOSE };
enum proxy_body_rule proxy_forward_body_rule(const struct proxy_http_head *req);

/* tunnel.c */
void proxy_tunnel_start(struct client *c); /* upstream is connected: answer 200, peek */
void proxy_tunnel_client_read(struct client *c);
void proxy_tunnel_upstream_read(struct client *c);

/* upstream.c */
/* Resolve (or take the override or literal), check, connect; then done() or a refusal. */
void proxy_upstream_open(struct client *c, bool tls);
void proxy_upstream_free(struct upstream *u);
const struct proxy_resolve *proxy_resolve_find(const struct proxy *px, const char *host);

/* inject.c */
/* Find the token in the request, check it; continues with proxy_upstream_open() or refuses. */
void proxy_inject_begin(struct client *c);
/* Append the real credential's header line for c->rule; < 0 if the secret can't be a header. */
int proxy_inject_credential(struct client *c, struct evbuffer *out);
/* Copy n bytes from src to dst, masking the injected secret across calls. */
void proxy_mask_move(struct client *c, struct evbuffer *src, size_t n, struct evbuffer *dst,
                     bool final);
/* The same for bytes in memory (a decoded response body). */
void proxy_mask_add(struct client *c, const void *data, size_t len, struct evbuffer *dst,
                    bool final);
void proxy_secret_wipe(struct client *c);
int proxy_keys_reload(struct proxy *px);

/* broker-link.c */
typedef void (*proxy_broker_cb)(void *userdata, json_t *response, const char *error);
/* Send req (borrowed); cb runs later from the loop, exactly once unless cancelled. */
int proxy_broker_call(struct proxy *px, json_t *req, proxy_broker_cb cb, void *userdata,
                      uint64_t *ret_ticket, const char **ret_error);
void proxy_broker_cancel(struct proxy *px, uint64_t ticket);
void proxy_broker_link_free(struct proxy *px);

/* pktline.c */
struct push_scan;
struct push_scan *proxy_push_scan_new(void);
void proxy_push_scan_free(struct push_scan *s);
/* Feed decoded body bytes; returns proxy_push_scan_state(). */
int proxy_push_scan_feed(struct push_scan *s, const char *data, size_t len);
/* 1: the ref commands are complete, 0: more bytes needed, < 0: malformed. */
int proxy_push_scan_state(const struct push_scan *s);
/* Answer a refused push as git's receive-pack would (report-status "ng" lines), then drain. */
void proxy_push_refuse(struct client *c, const char *why);
/* After 1 or < 0: check the commands against a rule; NULL if allowed, else why. */
const char *proxy_push_scan_verdict(struct push_scan *s, const struct proxy_inject_rule *r,
                                    char *buf, size_t size);

/* netlog.c */
void proxy_record_start(struct client *c, const char *kind);
/* Write c->rec as one audit line (once). */
void proxy_record_write(struct client *c);
/* Audit a refusal by a limit, coalesced per listener. */
void proxy_record_limit(struct listener *ls, const char *why);
