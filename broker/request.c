/* SPDX-License-Identifier: MIT */
/*
 * request.c: one JSON-lines request in, one response object out.
 *
 * Trust boundary: everything in a request from the agent socket is hostile.
 * The workspace is the socket's, never a field; every field is type- and
 * size-checked; unknown ops and unknown fields are refused. Nothing here
 * fails without a response, and no request can stop the broker.
 * Tokens and secrets only pass through jansson (which wipes on free, see
 * broker_json_wipe_on_free) and sodium_malloc'd buffers; audit entries get
 * the jti and claims only.
 */
#include <errno.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "jsonw.h"
#include "paseto.h"
#include "secrets.h"
#include "server-private.h"
#include "lib/quote.h"
#include "lib/util.h"
#include "verify.h"

#define ID_MAX 128

json_t *broker_response_error(const char *code, const char *fmt, ...)
{
        char msg[512];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        /* A field name cut by "%.64s" in the middle of a character would
         * make json_pack fail, and the answer "out of memory". */
        quote_utf8_fix(msg);
        return json_pack("{s:b, s:s, s:s}", "ok", 0, "error", code, "message", msg);
}

static int64_t now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int audit_event(struct ws *ws, json_t *entry, const struct peer *peer, int64_t now,
                       bool noise)
{
        int r;

        if (!entry)
                return -ENOMEM;
        if (peer)
                json_object_set_new(entry, "peer",
                                    json_pack("{s:I, s:I, s:s}", "uid", (json_int_t)peer->uid,
                                              "pid", (json_int_t)peer->pid, "via",
                                              peer->admin ? "admin" : "agent"));
        json_object_set_new(entry, "workspace", json_string(ws->name));
        r = noise ? broker_audit_append_noise(ws->audit, entry, now)
                  : broker_audit_append(ws->audit, entry, now);
        json_decref(entry);
        return r < 0 ? r : 0;
}

int broker_audit_event(struct ws *ws, json_t *entry, const struct peer *peer, int64_t now)
{
        return audit_event(ws, entry, peer, now, false);
}

int broker_audit_event_noise(struct ws *ws, json_t *entry, const struct peer *peer, int64_t now)
{
        /* The admin socket is the host's: what it asks is never throttled. */
        return audit_event(ws, entry, peer, now, !peer || !peer->admin);
}

/*
 * Refuse and audit the refusal; the refusal stands even if the audit fails.
 * The agent can ask for refusals at will: they are noise-bounded (audit.h).
 */
static json_t *refuse(struct ws *ws, const struct peer *peer, int64_t now, const char *what,
                      const char *code, const char *msg)
{
        (void)broker_audit_event_noise(ws,
                                       json_pack("{s:s, s:s, s:s, s:s}", "event", "refuse",
                                                 "request", what, "error", code, "reason", msg),
                                       peer, now);
        return broker_response_error(code, "%s", msg);
}

/* Only these fields may appear; each op lists its own. */
static const char *unknown_field(json_t *req, const char *const *allowed)
{
        const char *k;
        json_t *v;

        json_object_foreach (req, k, v) {
                bool ok = streq(k, "op") || streq(k, "id");
                for (size_t i = 0; allowed[i] && !ok; i++)
                        ok = streq(k, allowed[i]);
                if (!ok)
                        return k;
        }
        return NULL;
}

static int field_string(json_t *req, const char *name, size_t max, const char **ret)
{
        json_t *v = json_object_get(req, name);

        *ret = NULL;
        if (!v)
                return 0;
        if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > max ||
            strlen(json_string_value(v)) != json_string_length(v))
                return -EINVAL;
        *ret = json_string_value(v);
        return 1;
}

/* The claims object, keys sorted (the payload, and the audit entry's "claims"). */
static void claims_sorted(struct broker_jw *w, const struct broker_claims *c, const char *iat,
                          const char *exp)
{
        broker_jw_lit(w, "{\"aud\":");
        broker_jw_str(w, c->aud);
        broker_jw_lit(w, ",\"exp\":\"");
        broker_jw_lit(w, exp);
        broker_jw_lit(w, "\",\"iat\":\"");
        broker_jw_lit(w, iat);
        broker_jw_lit(w, "\",\"iss\":");
        broker_jw_str(w, c->iss);
        broker_jw_lit(w, ",\"jti\":\"");
        broker_jw_lit(w, c->jti);
        broker_jw_lit(w, "\",\"nbf\":\"");
        broker_jw_lit(w, iat); /* nbf = iat */
        broker_jw_lit(w, "\",\"scope\":");
        broker_jw_str(w, c->scope);
        broker_jw_lit(w, ",\"sub\":");
        broker_jw_str(w, c->sub);
        broker_jw_lit(w, "}");
}

/*
 * 16 random bytes for a jti. getrandom(2) once per JTI_POOL bytes, not per
 * token; the pool is sodium_malloc'd and every jti's bytes are wiped as they
 * are taken (a jti is public once issued, but not before).
 */
#define JTI_POOL 4096

static int jti_random(struct ws *ws, unsigned char out[16])
{
        if (!ws->jti_pool) {
                ws->jti_pool = sodium_malloc(JTI_POOL);
                if (!ws->jti_pool)
                        return -ENOMEM;
                ws->jti_pool_left = 0;
        }
        if (ws->jti_pool_left < 16) {
                randombytes_buf(ws->jti_pool, JTI_POOL);
                ws->jti_pool_left = JTI_POOL;
        }
        ws->jti_pool_left -= 16;
        memcpy(out, ws->jti_pool + ws->jti_pool_left, 16);
        sodium_memzero(ws->jti_pool + ws->jti_pool_left, 16);
        return 0;
}

/*
 * The issue op's hot path writes its three texts directly (jsonw.h): the
 * payload, the audit line and the response, the last one straight into the
 * connection's sodium_malloc'd buffer (raw), token and all. Each is what
 * json_dumps() wrote for the jansson objects this replaced, byte for byte.
 */
static json_t *do_issue(struct ws *ws, const struct peer *peer, json_t *req, int64_t now,
                        struct broker_jw *raw)
{
        static const char *const allowed[] = {"scope", "host", "ttl", NULL};
        const struct broker_policy *p = ws->policy;
        const struct broker_scope *sc;
        const struct broker_key *key = broker_keyring_current(ws->keys);
        const char *scope = NULL, *host = NULL, *bad;
        char jti[JTI_MAX], what[BROKER_NAME_MAX + 300], iat[32], exp[32],
                footer[BROKER_KID_MAX + 16], implicit[BROKER_NAME_MAX + 32], pay_buf[1024],
                head_buf[1536], tail_buf[256];
        unsigned char rnd[16];
        struct broker_claims c = {0};
        struct broker_jw pay, head, tail;
        json_t *ttl_j;
        int64_t ttl, requested = 0;
        bool clamped = false;
        size_t tlen;
        char *t;
        int r;

        if ((bad = unknown_field(req, allowed)))
                return broker_response_error("malformed", "issue: unknown field '%.64s'", bad);
        if (field_string(req, "scope", BROKER_NAME_MAX, &scope) < 0)
                return broker_response_error("malformed",
                                             "issue: 'scope' must be a name of "
                                             "at most %d characters",
                                             BROKER_NAME_MAX);
        if (field_string(req, "host", 253, &host) < 0)
                return broker_response_error("malformed",
                                             "issue: 'host' must be a string of at most 253 "
                                             "characters");
        if (!scope == !host)
                return broker_response_error("malformed", "issue: give exactly one of 'scope' "
                                                          "and 'host'");
        ttl_j = json_object_get(req, "ttl");
        if (ttl_j && (!json_is_integer(ttl_j) || json_integer_value(ttl_j) <= 0))
                return broker_response_error("malformed",
                                             "issue: 'ttl' must be a positive whole number of "
                                             "seconds");
        /* Room for a whole host (253 bytes): a cut in the middle of a
         * character would make the refusal's audit entry fail to build, and
         * the refusal go unaudited. */
        snprintf(what, sizeof(what), "issue %s '%s'", scope ? "scope" : "host",
                 scope ? scope : host);
        quote_utf8_fix(what);
        sc = scope ? broker_policy_scope(p, scope)
                   : broker_policy_scope_for_host(p, host, ws->name);
        if (!sc || !broker_scope_allows(sc, ws->name))
                return refuse(ws, peer, now, what, "denied",
                              scope ? "scope not granted to this workspace"
                                    : "no scope for this host is granted to this workspace");
        if (!peer->admin && !broker_bucket_take(&ws->issues, (double)p->issue_rate / 60.0,
                                                (double)p->issue_rate, now_ms()))
                return refuse(ws, peer, now, what, "rate_limited",
                              "too many tokens issued in the last minute (issue_rate)");
        if (ws->issued >= p->issue_total)
                return refuse(ws, peer, now, what, "quota_exceeded",
                              "this workspace has had all the tokens it may have (issue_total)");
        if (!key || !key->sk)
                return broker_response_error("internal", "no signing key");

        ttl = sc->ttl;
        if (ttl_j) {
                requested = json_integer_value(ttl_j);
                ttl = requested;
                if (ttl > sc->max_ttl) {
                        ttl = sc->max_ttl;
                        clamped = true;
                }
        }
        if (jti_random(ws, rnd) < 0)
                return broker_response_error("internal", "out of memory");
        sodium_bin2hex(jti, sizeof(jti), rnd, sizeof(rnd));
        c = (struct broker_claims){.iss = p->issuer,
                                   .sub = (char *)ws->name,
                                   .aud = sc->audience,
                                   .scope = sc->name,
                                   .jti = jti,
                                   .iat = now,
                                   .nbf = now,
                                   .exp = now + ttl};
        if (broker_time_format(c.iat, iat, sizeof(iat)) < 0 ||
            broker_time_format(c.exp, exp, sizeof(exp)) < 0)
                return broker_response_error("internal", "cannot format the token's times");
        /* kid (k4.pid. and base64url) and workspace (a name) need no escaping. */
        snprintf(footer, sizeof(footer), "{\"kid\":\"%s\"}", key->kid);
        snprintf(implicit, sizeof(implicit), "{\"workspace\":\"%s\"}", ws->name);

        broker_jw_init(&pay, pay_buf, sizeof(pay_buf), BROKER_PASETO_MAX_TOKEN, false);
        broker_jw_init(&head, head_buf, sizeof(head_buf), BROKER_AUDIT_LINE_MAX, false);
        broker_jw_init(&tail, tail_buf, sizeof(tail_buf), BROKER_AUDIT_LINE_MAX, false);
        head.ascii = tail.ascii = true;
        claims_sorted(&pay, &c, iat, exp);

        /* The response, up to the token, then the token signed in place. */
        broker_jw_lit(raw, "{\"ok\":true,\"token\":\"");
        tlen = broker_paseto_public_len(pay.len, strlen(footer));
        t = pay.error ? NULL : broker_jw_extend(raw, tlen);
        r = t ? broker_paseto_sign_to(key->sk, pay.buf, pay.len, footer, implicit, strlen(implicit),
                                      t, tlen)
              : -ENOMEM;
        if (r < 0) {
                r = pay.error ? pay.error : raw->error ? raw->error : r;
                goto fail;
        }
        raw->len -= tlen - strlen(t); /* the NUL and base64's slack */
        broker_jw_lit(raw, "\",\"jti\":\"");
        broker_jw_lit(raw, jti);
        broker_jw_lit(raw, "\",\"scope\":");
        broker_jw_str(raw, sc->name);
        broker_jw_lit(raw, ",\"aud\":");
        broker_jw_str(raw, sc->audience);
        broker_jw_lit(raw, ",\"sub\":");
        broker_jw_str(raw, ws->name);
        broker_jw_lit(raw, ",\"exp\":");
        broker_jw_int(raw, c.exp);
        broker_jw_lit(raw, ",\"expires_at\":\"");
        broker_jw_lit(raw, exp);
        broker_jw_lit(raw, "\",\"ttl\":");
        broker_jw_int(raw, ttl);
        broker_jw_lit(raw, ",\"username\":");
        broker_jw_str(raw, sc->username);
        /* The claims in the order claims_json() used to insert them. */
        broker_jw_lit(raw, ",\"claims\":{\"iss\":");
        broker_jw_str(raw, c.iss);
        broker_jw_lit(raw, ",\"sub\":");
        broker_jw_str(raw, c.sub);
        broker_jw_lit(raw, ",\"aud\":");
        broker_jw_str(raw, c.aud);
        broker_jw_lit(raw, ",\"scope\":");
        broker_jw_str(raw, c.scope);
        broker_jw_lit(raw, ",\"iat\":\"");
        broker_jw_lit(raw, iat);
        broker_jw_lit(raw, "\",\"nbf\":\"");
        broker_jw_lit(raw, iat);
        broker_jw_lit(raw, "\",\"exp\":\"");
        broker_jw_lit(raw, exp);
        broker_jw_lit(raw, "\",\"jti\":\"");
        broker_jw_lit(raw, jti);
        broker_jw_lit(raw, "\"}");
        if (clamped) {
                char note[64 + BROKER_NAME_MAX + 64];
                snprintf(note, sizeof(note),
                         "ttl clamped from %lld to %lld s (max_ttl of scope '%s')",
                         (long long)requested, (long long)ttl, sc->name);
                broker_jw_lit(raw, ",\"clamped\":true,\"requested_ttl\":");
                broker_jw_int(raw, requested);
                broker_jw_lit(raw, ",\"note\":");
                broker_jw_str(raw, note);
        }
        broker_jw_lit(raw, "}");

        /* The audit entry: the members before "prev", then those after "time". */
        broker_jw_lit(&head, "{\"claims\":");
        claims_sorted(&head, &c, iat, exp);
        broker_jw_lit(&head, clamped ? ",\"clamped\":true" : ",\"clamped\":false");
        broker_jw_lit(&head, ",\"event\":\"issue\",\"exp\":");
        broker_jw_int(&head, c.exp);
        broker_jw_lit(&head, ",\"jti\":\"");
        broker_jw_lit(&head, jti);
        broker_jw_lit(&head, "\",\"kid\":");
        broker_jw_str(&head, key->kid);
        broker_jw_lit(&head, ",\"max_uses\":");
        broker_jw_int(&head, (int64_t)sc->max_uses);
        broker_jw_lit(&head, ",\"peer\":{\"pid\":");
        broker_jw_int(&head, (int64_t)peer->pid);
        broker_jw_lit(&head, ",\"uid\":");
        broker_jw_int(&head, (int64_t)peer->uid);
        broker_jw_lit(&head, peer->admin ? ",\"via\":\"admin\"}," : ",\"via\":\"agent\"},");
        broker_jw_lit(&tail, "\"ttl\":");
        broker_jw_int(&tail, ttl);
        broker_jw_lit(&tail, ",\"workspace\":");
        broker_jw_str(&tail, ws->name);
        broker_jw_lit(&tail, "}");
        r = raw->error ? raw->error : head.error ? head.error : tail.error;
        if (r < 0)
                goto fail;

        /* Fail closed: a token that is not in the audit log is never handed out. */
        r = broker_audit_append_text(ws->audit, head.buf, head.len, tail.buf, tail.len, now);
        broker_jw_done(&pay);
        broker_jw_done(&head);
        broker_jw_done(&tail);
        if (r < 0) {
                sodium_memzero(raw->buf, raw->len);
                raw->len = 0;
                return broker_response_error("audit_unavailable",
                                             "the audit log cannot be written (%s); refusing "
                                             "to issue",
                                             strerror(-r));
        }
        ws->issued++;
        (void)broker_tokens_add(ws, jti, sc->name, c.exp, sc->max_uses);
        return NULL;
fail:
        broker_jw_done(&pay);
        broker_jw_done(&head);
        broker_jw_done(&tail);
        sodium_memzero(raw->buf, raw->len);
        raw->len = 0;
        raw->error = 0;
        if (r == -EILSEQ)
                return broker_response_error("internal", "the policy has a value that is not "
                                                         "UTF-8");
        if (r == -ENOMEM)
                return broker_response_error("internal", "out of memory");
        return broker_response_error("internal", "cannot sign: %s", strerror(-r));
}

/*
 * Verify a token for this workspace and look it up: the state behind
 * introspect and redeem. Returns the record (or NULL) and the reason it is
 * not active, NULL if it is.
 */
static const char *token_state(struct ws *ws, const char *token, int64_t now, char *reason,
                               size_t reason_size, struct broker_claims *c,
                               struct token_rec **ret_rec)
{
        /* No skew: the broker judges its own tokens by the clock that stamped them. */
        struct broker_verify_opts o = {.workspace = ws->name, .now = now, .skew = 0};
        struct token_rec *t;
        int r;

        *ret_rec = NULL;
        r = broker_token_verify(ws->keys, token, &o, c, reason, reason_size);
        if (r != BROKER_VERIFY_OK)
                return r < 0 ? "internal error" : reason;
        t = broker_tokens_find(ws, c->jti);
        *ret_rec = t;
        if (!t)
                return "not issued by this broker run for this workspace";
        if (t->revoked)
                return "revoked";
        if (t->max_uses && t->uses >= t->max_uses)
                return "used up (max_uses)";
        return NULL;
}

static json_t *do_introspect(struct ws *ws, const struct peer *peer, json_t *req, int64_t now)
{
        static const char *const allowed[] = {"token", NULL};
        struct broker_claims c = {0};
        struct token_rec *t = NULL;
        const char *token, *why, *bad;
        char reason[200];
        json_t *resp;
        int r;

        if ((bad = unknown_field(req, allowed)))
                return broker_response_error("malformed", "introspect: unknown field '%.64s'", bad);
        if (field_string(req, "token", BROKER_PASETO_MAX_TOKEN, &token) <= 0)
                return broker_response_error("malformed", "introspect: 'token' must be a token");
        why = token_state(ws, token, now, reason, sizeof(reason), &c, &t);
        /* A resource server (admin socket) asking is one use of the token. */
        bool used = peer->admin && !why;
        /* A use (admin) must be audited; the agent asking about its token is noise. */
        json_t *e = json_pack("{s:s, s:s?, s:b, s:s?, s:b}", "event", "introspect", "jti", c.jti,
                              "active", !why, "reason", why, "used", used);
        r = used ? broker_audit_event(ws, e, peer, now)
                 : broker_audit_event_noise(ws, e, peer, now);
        if (r < 0 && used) {
                broker_claims_done(&c);
                return broker_response_error("audit_unavailable",
                                             "the audit log cannot be written (%s)", strerror(-r));
        }
        if (used)
                t->uses++;
        if (why) {
                resp = json_pack("{s:b, s:b, s:s}", "ok", 1, "active", 0, "reason", why);
        } else {
                resp = json_pack("{s:b, s:b, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I}",
                                 "ok", 1, "active", 1, "jti", c.jti, "sub", c.sub, "aud", c.aud,
                                 "scope", c.scope, "iss", c.iss, "iat", (json_int_t)c.iat, "nbf",
                                 (json_int_t)c.nbf, "exp", (json_int_t)c.exp, "uses",
                                 (json_int_t)t->uses, "max_uses", (json_int_t)t->max_uses);
        }
        broker_claims_done(&c);
        return resp;
}

static json_t *do_revoke(struct ws *ws, const struct peer *peer, json_t *req, int64_t now)
{
        static const char *const allowed[] = {"jti", "workspace", NULL};
        const char *jti = NULL, *wsname = NULL, *bad;
        struct token_rec *t;
        size_t n;
        int r;

        if ((bad = unknown_field(req, allowed)))
                return broker_response_error("malformed", "revoke: unknown field '%.64s'", bad);
        if (field_string(req, "jti", JTI_MAX, &jti) < 0 ||
            field_string(req, "workspace", BROKER_NAME_MAX, &wsname) < 0 || !jti == !wsname)
                return broker_response_error("malformed",
                                             "revoke: give exactly one of 'jti' and 'workspace'");
        if (wsname) {
                if (!streq(wsname, ws->name))
                        return refuse(ws, peer, now, "revoke workspace", "denied",
                                      "this socket serves another workspace");
                n = broker_tokens_revoke_all(ws, now);
                json_t *e = json_pack("{s:s, s:b, s:I}", "event", "revoke", "all", 1, "count",
                                      (json_int_t)n);
                r = n ? broker_audit_event(ws, e, peer, now)
                      : broker_audit_event_noise(ws, e, peer, now);
        } else {
                t = broker_tokens_find(ws, jti);
                if (!t)
                        return broker_response_error("not_found",
                                                     "no token with this jti in this workspace");
                n = t->revoked ? 0 : 1;
                t->revoked = true;
                /* Revoking a revoked token again changes nothing: noise. */
                json_t *e = json_pack("{s:s, s:s}", "event", "revoke", "jti", jti);
                r = n ? broker_audit_event(ws, e, peer, now)
                      : broker_audit_event_noise(ws, e, peer, now);
        }
        /* The revocation stands even if it could not be audited: fail closed. */
        return json_pack("{s:b, s:I, s:b}", "ok", 1, "revoked", (json_int_t)n, "audited", r >= 0);
}

static json_t *do_pubkey(struct ws *ws, json_t *req)
{
        static const char *const allowed[] = {NULL};
        const struct broker_key *cur = broker_keyring_current(ws->keys);
        _cleanup_free_ char *text = NULL, *implicit = NULL;
        const char *bad;

        if ((bad = unknown_field(req, allowed)))
                return broker_response_error("malformed", "pubkey: unknown field '%.64s'", bad);
        if (broker_keyring_public_text(ws->keys, &text) < 0 ||
            broker_token_implicit(ws->name, &implicit) < 0)
                return broker_response_error("internal", "out of memory");
        json_t *keys = json_array();
        for (char *l = text, *nl; keys && l && *l; l = nl ? nl + 1 : NULL) {
                nl = strchr(l, '\n');
                json_array_append_new(keys, json_stringn(l, nl ? (size_t)(nl - l) : strlen(l)));
        }
        return json_pack("{s:b, s:s, s:o, s:s, s:s}", "ok", 1, "workspace", ws->name, "keys", keys,
                         "kid", cur ? cur->kid : "", "implicit_assertion", implicit);
}

static json_t *do_redeem(struct ws *ws, const struct peer *peer, json_t *req, int64_t now)
{
        static const char *const allowed[] = {"token", NULL};
        struct broker_claims c = {0};
        const struct broker_scope *sc;
        struct token_rec *t = NULL;
        unsigned char *secret = NULL;
        const char *token, *why, *bad;
        char reason[200];
        size_t len = 0;
        json_t *resp;
        int r;

        if ((bad = unknown_field(req, allowed)))
                return broker_response_error("malformed", "redeem: unknown field '%.64s'", bad);
        if (field_string(req, "token", BROKER_PASETO_MAX_TOKEN, &token) <= 0)
                return broker_response_error("malformed", "redeem: 'token' must be a token");
        if (!broker_policy_is_redeemer(ws->policy, peer->uid))
                return refuse(ws, peer, now, "redeem", "denied",
                              "this uid is not a redeemer ([broker] redeemers)");
        why = token_state(ws, token, now, reason, sizeof(reason), &c, &t);
        if (why) {
                json_t *e = refuse(ws, peer, now, "redeem", "inactive", why);
                broker_claims_done(&c);
                return e;
        }
        sc = broker_policy_scope(ws->policy, c.scope);
        if (!sc || !sc->secret) {
                broker_claims_done(&c);
                return refuse(ws, peer, now, "redeem", "denied", "this scope releases no secret");
        }
        r = broker_secret_load(ws->dirfd, sc->secret, &secret, &len);
        if (r < 0) {
                broker_claims_done(&c);
                return refuse(ws, peer, now, "redeem", "unavailable",
                              r == -ENOENT ? "the scope's secret is not stored"
                                           : "the scope's secret cannot be unsealed");
        }
        r = broker_audit_event(ws,
                               json_pack("{s:s, s:s, s:s, s:s}", "event", "release", "jti", c.jti,
                                         "scope", c.scope, "secret", sc->secret),
                               peer, now);
        if (r < 0) {
                sodium_free(secret);
                broker_claims_done(&c);
                return broker_response_error("audit_unavailable",
                                             "the audit log cannot be written (%s)", strerror(-r));
        }
        t->uses++;
        resp = json_pack("{s:b, s:s, s:s, s:s%, s:I}", "ok", 1, "jti", c.jti, "scope", c.scope,
                         "secret", (const char *)secret, len, "exp", (json_int_t)c.exp);
        sodium_free(secret);
        broker_claims_done(&c);
        return resp ? resp : broker_response_error("internal", "secret is not valid UTF-8");
}

static json_t *do_reload_keys(struct ws *ws, json_t *req, int64_t now)
{
        broker_keyring *kr = NULL;
        _cleanup_free_ char *err = NULL;
        int r;

        r = broker_keyring_load(ws->dirfd, ws->dir, false, &kr, &err);
        if (r < 0)
                return broker_response_error("internal", "%s", err ? err : strerror(-r));
        broker_keyring_free(ws->keys);
        ws->keys = kr;
        (void)broker_keyring_publish(kr, ws->dirfd, now, broker_policy_max_ttl(ws->policy) + 60);
        return json_pack("{s:b, s:s}", "ok", 1, "kid", broker_keyring_current(kr)->kid);
}

json_t *broker_request_handle(struct ws *ws, const struct peer *peer, const char *line, size_t len,
                              int64_t now, struct broker_jw *raw)
{
        json_error_t err;
        json_t *req, *resp = NULL, *id;
        const char *op;

        if (!peer->admin && !broker_bucket_take(&ws->requests, (double)ws->policy->rate,
                                                2.0 * (double)ws->policy->rate, now_ms()))
                return broker_response_error("rate_limited",
                                             "too many requests from this workspace (rate)");
        req = json_loadb(line, len, JSON_REJECT_DUPLICATES, &err);
        if (!req)
                return broker_response_error("malformed", "not JSON: %s (column %d)", err.text,
                                             err.column);
        if (!json_is_object(req)) {
                json_decref(req);
                return broker_response_error("malformed", "a request is a JSON object");
        }
        id = json_object_get(req, "id");
        if (id &&
            !(json_is_integer(id) || (json_is_string(id) && json_string_length(id) <= ID_MAX))) {
                json_decref(req);
                return broker_response_error("malformed", "'id' must be a number or a short "
                                                          "string");
        }
        if (!json_is_string(json_object_get(req, "op"))) {
                resp = broker_response_error("malformed", "missing 'op'");
                goto out;
        }
        op = json_string_value(json_object_get(req, "op"));
        if (peer->admin && !peer->owner && !streq(op, "redeem") && !streq(op, "introspect") &&
            !streq(op, "pubkey"))
                /* Another uid listed in redeemers: it redeems, it does not administer. */
                resp = refuse(ws, peer, now, op, "denied",
                              "a redeemer may only redeem, introspect and ask for pubkey");
        else if (streq(op, "issue"))
                resp = do_issue(ws, peer, req, now, raw);
        else if (streq(op, "introspect"))
                resp = do_introspect(ws, peer, req, now);
        else if (streq(op, "revoke"))
                resp = do_revoke(ws, peer, req, now);
        else if (streq(op, "pubkey"))
                resp = do_pubkey(ws, req);
        else if ((streq(op, "redeem") || streq(op, "reload-keys")) && !peer->admin)
                resp = refuse(ws, peer, now, op, "denied", "only on the admin socket");
        else if (streq(op, "redeem"))
                resp = do_redeem(ws, peer, req, now);
        else if (streq(op, "reload-keys"))
                resp = do_reload_keys(ws, req, now);
        else
                resp = broker_response_error("unknown_op",
                                             "unknown op (expected issue, introspect, revoke or "
                                             "pubkey)");
out:
        if (!resp && raw->len > 0 && id) {
                /* The text ends in '}': put "id" last, where json_object_set() would. */
                char *t = json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT);
                raw->len--;
                broker_jw_lit(raw, ",\"id\":");
                if (t)
                        broker_jw_lit(raw, t);
                else
                        raw->error = -ENOMEM;
                broker_jw_lit(raw, "}");
                free(t);
                if (raw->error) {
                        sodium_memzero(raw->buf, raw->len);
                        raw->len = 0;
                }
        }
        if (!resp && raw->len == 0)
                resp = broker_response_error("internal", "out of memory");
        if (resp && id)
                json_object_set(resp, "id", id);
        json_decref(req);
        return resp;
}
