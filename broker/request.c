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

#include "paseto.h"
#include "secrets.h"
#include "server-private.h"
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

static json_t *claims_json(const struct broker_claims *c)
{
        char iat[32], nbf[32], exp[32];

        broker_time_format(c->iat, iat, sizeof(iat));
        broker_time_format(c->nbf, nbf, sizeof(nbf));
        broker_time_format(c->exp, exp, sizeof(exp));
        return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "iss", c->iss, "sub", c->sub,
                         "aud", c->aud, "scope", c->scope, "iat", iat, "nbf", nbf, "exp", exp,
                         "jti", c->jti);
}

static json_t *do_issue(struct ws *ws, const struct peer *peer, json_t *req, int64_t now)
{
        static const char *const allowed[] = {"scope", "host", "ttl", NULL};
        const struct broker_policy *p = ws->policy;
        const struct broker_scope *sc;
        const struct broker_key *key = broker_keyring_current(ws->keys);
        const char *scope = NULL, *host = NULL, *bad;
        _cleanup_free_ char *implicit = NULL, *payload = NULL, *footer = NULL;
        char *token = NULL, jti[JTI_MAX], what[160];
        unsigned char rnd[16];
        struct broker_claims c = {0};
        json_t *ttl_j, *claims = NULL, *resp = NULL;
        int64_t ttl, requested = 0;
        bool clamped = false;
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
        snprintf(what, sizeof(what), "issue %s '%s'", scope ? "scope" : "host",
                 scope ? scope : host);
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
        randombytes_buf(rnd, sizeof(rnd));
        sodium_bin2hex(jti, sizeof(jti), rnd, sizeof(rnd));
        c = (struct broker_claims){.iss = p->issuer,
                                   .sub = (char *)ws->name,
                                   .aud = sc->audience,
                                   .scope = sc->name,
                                   .jti = jti,
                                   .iat = now,
                                   .nbf = now,
                                   .exp = now + ttl};
        claims = claims_json(&c);
        payload = claims ? json_dumps(claims, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        r = broker_token_implicit(ws->name, &implicit);
        if (!payload || r < 0 || asprintf(&footer, "{\"kid\":\"%s\"}", key->kid) < 0) {
                json_decref(claims);
                return broker_response_error("internal", "out of memory");
        }
        r = broker_paseto_sign(key->sk, payload, strlen(payload), footer, implicit,
                               strlen(implicit), &token);
        if (r < 0) {
                json_decref(claims);
                return broker_response_error("internal", "cannot sign: %s", strerror(-r));
        }
        /* Fail closed: a token that is not in the audit log is never handed out. */
        r = broker_audit_event(ws,
                               json_pack("{s:s, s:s, s:O, s:I, s:I, s:I, s:b, s:s}", "event",
                                         "issue", "jti", jti, "claims", claims, "exp",
                                         (json_int_t)c.exp, "ttl", (json_int_t)ttl, "max_uses",
                                         (json_int_t)sc->max_uses, "clamped", clamped, "kid",
                                         key->kid),
                               peer, now);
        if (r < 0) {
                sodium_memzero(token, strlen(token));
                free(token);
                json_decref(claims);
                return broker_response_error("audit_unavailable",
                                             "the audit log cannot be written (%s); refusing "
                                             "to issue",
                                             strerror(-r));
        }
        ws->issued++;
        (void)broker_tokens_add(ws, jti, sc->name, c.exp, sc->max_uses);
        resp = json_pack("{s:b, s:s, s:s, s:s, s:s, s:s, s:I, s:s, s:I, s:s, s:O}", "ok", 1,
                         "token", token, "jti", jti, "scope", sc->name, "aud", sc->audience, "sub",
                         ws->name, "exp", (json_int_t)c.exp, "expires_at",
                         json_string_value(json_object_get(claims, "exp")), "ttl", (json_int_t)ttl,
                         "username", sc->username, "claims", claims);
        if (resp && clamped) {
                json_object_set_new(resp, "clamped", json_true());
                json_object_set_new(resp, "requested_ttl", json_integer(requested));
                json_object_set_new(resp, "note",
                                    json_sprintf("ttl clamped from %lld to %lld s (max_ttl of "
                                                 "scope '%s')",
                                                 (long long)requested, (long long)ttl, sc->name));
        }
        sodium_memzero(token, strlen(token));
        free(token);
        json_decref(claims);
        return resp;
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
                              int64_t now)
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
                resp = do_issue(ws, peer, req, now);
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
        if (!resp)
                resp = broker_response_error("internal", "out of memory");
        if (resp && id)
                json_object_set(resp, "id", id);
        json_decref(req);
        return resp;
}
