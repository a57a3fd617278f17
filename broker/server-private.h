/* SPDX-License-Identifier: MIT */
/*
 * server-private.h: state shared by the socket loop (server.c), the
 * request handlers (request.c) and the token table (tokens.c).
 *
 * Everything here is touched only by the broker's single poll loop thread,
 * so there are no locks.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "audit.h"
#include "broker.h"
#include "keys.h"
#include "policy.h"

#define TOKEN_BUCKETS     4096
#define TOKEN_SWEEP_EVERY 4096
#define JTI_MAX           48 /* 32 hex digits + NUL; hex, so a jti never looks like an option */

struct token_rec {
        char jti[JTI_MAX];
        char scope[BROKER_NAME_MAX + 1];
        int64_t exp;
        uint64_t uses, max_uses;
        bool revoked;
        struct token_rec *next;
};

struct bucket {
        double level; /* tokens in the bucket */
        int64_t last_ms;
};

struct ws {
        char *name;
        char *policy_path;
        char *dir;
        int dirfd;
        struct broker_policy *policy;
        broker_keyring *keys;
        broker_audit *audit;
        int agent_fd, admin_fd;
        char *agent_path, *admin_path;
        bool agent_passed; /* agent_fd came from the service manager, which owns the file */
        struct token_rec *tokens[TOKEN_BUCKETS];
        size_t n_tokens;
        size_t adds_since_sweep;
        uint64_t issued; /* this run, for issue_total */
        size_t n_agent_conns;
        uint32_t agent_uid_first, agent_uid_last; /* 0: the broker's own user only */
        struct bucket requests, issues;
        unsigned char *jti_pool; /* sodium_malloc'd random bytes for jtis (request.c) */
        size_t jti_pool_left;
};

struct peer {
        bool admin; /* came through the admin socket */
        bool owner; /* admin socket, and the broker's own uid or root (not just a redeemer) */
        pid_t pid;
        uid_t uid;
        gid_t gid;
};

/* server.c: free what jansson allocated, wiped first (it may hold a token). */
void broker_wipe_free(void *p);

/* conn.c: one client connection of the loop. */
struct conn {
        int fd;
        struct ws *ws;
        struct peer peer;
        /*
         * One sodium_malloc'd block per connection, made at accept: the request
         * buffer (BROKER_REQUEST_MAX + 1) and then OUT_INLINE bytes for
         * responses. Requests and responses carry tokens; allocating guarded
         * memory per response would cost more than signing the token.
         */
        char *in;
        char *out_inline;
        size_t in_len;
        bool discarding; /* dropping the rest of an oversized line */
        bool eof;
        char *out; /* pending response: out_inline or a larger sodium_malloc'd block; or NULL */
        size_t out_len, out_off;
        int64_t active_ms;   /* accepted, or last answered in full (CLOCK_MONOTONIC) */
        uint64_t active_seq; /* the same as an order: the smallest was active longest ago */
        int64_t since_ms;    /* the request under way began; -1: none */
};

int broker_conn_new(struct ws *ws, int fd, const struct peer *peer, int64_t now_ms,
                    struct conn **ret);
void broker_conn_free(struct conn *c);
/* Its poll events: POLLOUT while a response is pending, POLLIN, or 0 while
 * whole requests wait in its buffer (broker_conn_serve_next serves them). */
short broker_conn_events(const struct conn *c);
/* Handle poll's revents; false when the connection is to be closed. */
bool broker_conn_event(struct conn *c, short revents, int64_t now_ms);
/* Whole requests wait in the buffer, and nothing is pending to write. */
bool broker_conn_more(const struct conn *c);
/* Serve the next of them (one a turn); false when the connection is to be closed. */
bool broker_conn_serve_next(struct conn *c, int64_t now_ms);
/* No request under way and nothing to write: the first to evict. */
bool broker_conn_idle(const struct conn *c);
/* When it is closed if nothing happens ([limits] idle_timeout, request_timeout). */
int64_t broker_conn_deadline(const struct conn *c);

/* tokens.c */
struct token_rec *broker_tokens_find(struct ws *ws, const char *jti);
int broker_tokens_add(struct ws *ws, const char *jti, const char *scope, int64_t exp,
                      uint64_t max_uses);
size_t broker_tokens_revoke_all(struct ws *ws, int64_t now);
void broker_tokens_free(struct ws *ws);
/* Rebuild the table from the audit log on start (broker_audit_replay_fn). */
int broker_tokens_replay(void *userdata, json_t *entry);
/* Refill and take one; false when empty. */
bool broker_bucket_take(struct bucket *b, double per_second, double burst, int64_t now_ms);

/*
 * request.c: handle one request line. Returns the response object, or NULL
 * when the handler wrote the response's text into raw itself (issue does:
 * raw starts on the connection's sodium_malloc'd buffer, see jsonw.h).
 */
struct broker_jw;
json_t *broker_request_handle(struct ws *ws, const struct peer *peer, const char *line, size_t len,
                              int64_t now, struct broker_jw *raw);
json_t *broker_response_error(const char *code, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
int broker_audit_event(struct ws *ws, json_t *entry, const struct peer *peer, int64_t now);
/* The same for a line the agent can cause at will and that changes nothing (audit.h). */
int broker_audit_event_noise(struct ws *ws, json_t *entry, const struct peer *peer, int64_t now);
