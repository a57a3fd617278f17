/* SPDX-License-Identifier: MIT */
/*
 * inject.c: the agent's cloister token in, the real credential out.
 *
 * The token may come as a Bearer token, as the password of Basic auth (what
 * git-credential-cloister hands git), in Proxy-Authorization, or in the
 * rule's own header (scheme = header). It is checked twice: offline with
 * broker/verify.h against the broker's public keys (signature, expiry,
 * workspace, scope), which costs the broker nothing and gives a precise
 * reason, then online with `introspect` on the broker's admin socket
 * (issued by this broker, not revoked, uses left; it counts one use and is
 * in the broker's audit log). Only then is the rule's sealed secret loaded
 * (broker/secrets.h, sodium_malloc'd) and put in the upstream request in
 * place of every client credential. It is wiped when the exchange ends.
 *
 * Defence in depth: an upstream that reflects the credential back (an
 * error page quoting the key, an echo endpoint) would hand the secret to
 * the sandbox, so every response byte of an injected exchange passes a
 * mask that overwrites the secret (and its Basic encoding) with '*'. The
 * mask sees the head, then the body as llhttp decoded it (chunk framing
 * removed; forward.c chunks the masked bytes anew), so a chunk boundary
 * inside the secret hides nothing. Content codings it cannot read:
 * forward.c asks for identity and refuses an encoded body. What the server
 * re-encodes itself it does not see; docs/network.md says so.
 */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "broker/paseto.h"
#include "broker/secrets.h"
#include "broker/verify.h"
#include "lib/util.h"
#include "proxy-private.h"

#define TOKEN_MAX BROKER_PASETO_MAX_TOKEN

int proxy_keys_reload(struct proxy *px)
{
        _cleanup_free_ char *path = NULL, *err = NULL;
        broker_keyring *kr = NULL;
        int r;

        if (asprintf(&path, "%s/%s", px->broker_dir, BROKER_PUBLIC_FILE) < 0)
                return -ENOMEM;
        px->keys_loaded_ms = proxy_now_ms();
        r = broker_keyring_load_public(path, &kr, &err);
        if (r < 0)
                return r;
        broker_keyring_free(px->keys);
        px->keys = kr;
        return 0;
}

static void needle_free(struct client *c, int i)
{
        if (c->needles[i]) {
                sodium_free(c->needles[i]);
                c->needles[i] = NULL;
                c->needle_lens[i] = 0;
        }
}

void proxy_secret_wipe(struct client *c)
{
        if (c->secret) {
                sodium_free(c->secret);
                c->secret = NULL;
                c->secret_len = 0;
        }
        needle_free(c, 0);
        needle_free(c, 1);
        if (c->mask_carry) {
                evbuffer_free(c->mask_carry); /* wiped by the allocator */
                c->mask_carry = NULL;
        }
}

/* A cloister token in one credential header value, copied into buf. */
static bool token_from(const char *value, char *buf, size_t size)
{
        const char *v = value;

        if (!v)
                return false;
        if (strncasecmp(v, "Bearer ", 7) == 0) {
                v += 7;
                while (*v == ' ')
                        v++;
        } else if (strncasecmp(v, "Basic ", 6) == 0) {
                unsigned char *raw = sodium_malloc(size + 1);
                size_t len = 0;
                bool ok = false;

                v += 6;
                while (*v == ' ')
                        v++;
                if (!raw)
                        return false;
                if (sodium_base642bin(raw, size, v, strlen(v), NULL, &len, NULL,
                                      sodium_base64_VARIANT_ORIGINAL) == 0) {
                        unsigned char *colon = memchr(raw, ':', len);
                        if (colon) {
                                size_t pl = len - (size_t)(colon + 1 - raw);
                                if (pl < size) {
                                        memcpy(buf, colon + 1, pl);
                                        buf[pl] = '\0';
                                        ok = startswith(buf, BROKER_PASETO_PUBLIC_HEADER) &&
                                             strlen(buf) == pl;
                                }
                        }
                }
                sodium_free(raw);
                return ok;
        }
        if (strlen(v) >= size || !startswith(v, BROKER_PASETO_PUBLIC_HEADER))
                return false;
        strcpy(buf, v);
        return true;
}

static bool token_find(struct client *c, char *buf, size_t size)
{
        const struct proxy_inject_rule *r = c->rule;

        for (size_t i = 0; i < c->req.n_headers; i++) {
                const struct proxy_header *h = &c->req.headers[i];
                if ((strcasecmp(h->name, "authorization") == 0 ||
                     strcasecmp(h->name, "proxy-authorization") == 0 ||
                     (r->header && strcasecmp(h->name, r->header) == 0)) &&
                    token_from(h->value, buf, size))
                        return true;
        }
        return false;
}

static int needle_set(struct client *c, int i, const char *data, size_t len)
{
        c->needles[i] = sodium_malloc(len + 1);
        if (!c->needles[i])
                return -ENOMEM;
        memcpy(c->needles[i], data, len);
        c->needles[i][len] = '\0';
        c->needle_lens[i] = len;
        return 0;
}

/* Load the rule's secret and what the mask must catch; then connect. */
static void secret_ready(struct client *c)
{
        const struct proxy_inject_rule *r = c->rule;
        int k;

        k = broker_secret_load(c->px->broker_dirfd, r->secret, &c->secret, &c->secret_len);
        if (k < 0) {
                c->secret = NULL;
                proxy_client_refuse(c, 502, "the secret '%s' %s", r->secret,
                                    k == -ENOENT ? "is not stored (cloister secret add)"
                                                 : "cannot be unsealed");
                return;
        }
        for (size_t i = 0; i < c->secret_len; i++)
                if (c->secret[i] < 0x20 || c->secret[i] == 0x7f) {
                        proxy_client_refuse(c, 502,
                                            "the secret '%s' holds a line break or control "
                                            "byte; it cannot go in a header",
                                            r->secret);
                        return;
                }
        if (needle_set(c, 0, (const char *)c->secret, c->secret_len) < 0) {
                proxy_client_refuse(c, 502, "out of memory");
                return;
        }
        if (r->scheme == PROXY_SCHEME_BASIC) {
                size_t ul = strlen(r->username), pl = ul + 1 + c->secret_len;
                size_t bl = sodium_base64_ENCODED_LEN(pl, sodium_base64_VARIANT_ORIGINAL);
                unsigned char *pair = sodium_malloc(pl);
                char *b64 = sodium_malloc(bl);

                if (!pair || !b64) {
                        if (pair)
                                sodium_free(pair);
                        if (b64)
                                sodium_free(b64);
                        proxy_client_refuse(c, 502, "out of memory");
                        return;
                }
                memcpy(pair, r->username, ul);
                pair[ul] = ':';
                memcpy(pair + ul + 1, c->secret, c->secret_len);
                sodium_bin2base64(b64, bl, pair, pl, sodium_base64_VARIANT_ORIGINAL);
                sodium_free(pair);
                k = needle_set(c, 1, b64, strlen(b64));
                sodium_free(b64);
                if (k < 0) {
                        proxy_client_refuse(c, 502, "out of memory");
                        return;
                }
        }
        proxy_upstream_open(c, true);
}

static void introspect_cb(void *userdata, json_t *resp, const char *error)
{
        struct client *c = userdata;
        json_t *scope, *sub;

        c->broker_ticket = 0;
        if (!resp) {
                proxy_client_refuse(c, 502, "the broker cannot check the token: %s", error);
                return;
        }
        if (!json_is_true(json_object_get(resp, "ok"))) {
                proxy_client_refuse(c, 502, "the broker cannot check the token: %s",
                                    json_string_value(json_object_get(resp, "message")) ?: "?");
                return;
        }
        if (!json_is_true(json_object_get(resp, "active"))) {
                proxy_client_refuse(c, 403, "token refused: %s",
                                    json_string_value(json_object_get(resp, "reason"))
                                            ?: "inactive");
                return;
        }
        scope = json_object_get(resp, "scope");
        sub = json_object_get(resp, "sub");
        if (!json_is_string(scope) || !streq(json_string_value(scope), c->rule->scope) ||
            !json_is_string(sub) || !streq(json_string_value(sub), c->px->workspace)) {
                proxy_client_refuse(c, 403,
                                    "token refused: not a token of scope '%s' for this "
                                    "workspace",
                                    c->rule->scope);
                return;
        }
        secret_ready(c);
}

void proxy_inject_begin(struct client *c)
{
        struct proxy *px = c->px;
        const struct proxy_inject_rule *r = c->rule;
        struct broker_verify_opts o = {.workspace = px->workspace,
                                       .scope = r->scope,
                                       .now = time(NULL),
                                       .skew = BROKER_SKEW_DEFAULT};
        struct broker_claims claims = {0};
        char reason[200], *token;
        const char *err = NULL;
        json_t *req;
        int v;

        token = sodium_malloc(TOKEN_MAX + 1);
        if (!token) {
                proxy_client_refuse(c, 502, "out of memory");
                return;
        }
        if (!token_find(c, token, TOKEN_MAX + 1)) {
                sodium_free(token);
                proxy_client_refuse(c, 401,
                                    "%s %s needs a cloister token of scope '%s' (as a Bearer "
                                    "token or the Basic password, e.g. from "
                                    "git-credential-cloister)",
                                    c->req.method, c->host, r->scope);
                return;
        }
        if (!px->keys && proxy_now_ms() - px->keys_loaded_ms > 1000)
                (void)proxy_keys_reload(px);
        if (!px->keys) {
                sodium_free(token);
                proxy_client_refuse(c, 502, "no broker keys in %s (has the broker run?)",
                                    px->broker_dir);
                return;
        }
        v = broker_token_verify(px->keys, token, &o, &claims, reason, sizeof(reason));
        if (v == BROKER_VERIFY_UNKNOWN_KEY && proxy_now_ms() - px->keys_loaded_ms > 1000 &&
            proxy_keys_reload(px) == 0) {
                broker_claims_done(&claims);
                v = broker_token_verify(px->keys, token, &o, &claims, reason, sizeof(reason));
        }
        if (v != BROKER_VERIFY_OK) {
                sodium_free(token);
                broker_claims_done(&claims);
                proxy_client_refuse(c, v < 0 ? 502 : 403, "token refused: %s",
                                    v < 0 ? "internal error" : reason);
                return;
        }
        snprintf(c->rec.jti, sizeof(c->rec.jti), "%s", claims.jti);
        broker_claims_done(&claims);
        req = json_pack("{s:s, s:s}", "op", "introspect", "token", token);
        sodium_free(token);
        if (!req) {
                proxy_client_refuse(c, 502, "out of memory");
                return;
        }
        v = proxy_broker_call(px, req, introspect_cb, c, &c->broker_ticket, &err);
        json_decref(req);
        if (v < 0)
                proxy_client_refuse(c, 502,
                                    "the broker is not reachable (%s); nothing goes out "
                                    "without its word",
                                    err ? err : strerror(-v));
}

int proxy_inject_credential(struct client *c, struct evbuffer *out)
{
        const struct proxy_inject_rule *r = c->rule;

        switch (r->scheme) {
        case PROXY_SCHEME_BEARER:
                evbuffer_add(out, "Authorization: Bearer ", 22);
                evbuffer_add(out, c->needles[0], c->needle_lens[0]);
                break;
        case PROXY_SCHEME_BASIC:
                evbuffer_add(out, "Authorization: Basic ", 21);
                evbuffer_add(out, c->needles[1], c->needle_lens[1]);
                break;
        case PROXY_SCHEME_HEADER:
                evbuffer_add_printf(out, "%s: ", r->header);
                evbuffer_add(out, c->needles[0], c->needle_lens[0]);
                break;
        }
        evbuffer_add(out, "\r\n", 2);
        return 0;
}

/* Mask what mask_carry holds; pass all of it on when final, else all but a needle's length - 1. */
static void mask_run(struct client *c, struct evbuffer *dst, bool final)
{
        size_t keep = 0, total = evbuffer_get_length(c->mask_carry);
        unsigned char *buf;

        if (total == 0)
                return;
        for (int i = 0; i < 2; i++)
                if (c->needle_lens[i] > keep)
                        keep = c->needle_lens[i];
        keep = keep ? keep - 1 : 0;
        buf = evbuffer_pullup(c->mask_carry, (ssize_t)total);
        for (int i = 0; i < 2; i++) {
                size_t l = c->needle_lens[i];
                if (!l)
                        continue;
                for (unsigned char *p = buf;
                     (p = memmem(p, total - (size_t)(p - buf), c->needles[i], l)); p += l)
                        memset(p, '*', l);
        }
        if (final || total > keep)
                evbuffer_remove_buffer(c->mask_carry, dst, final ? total : total - keep);
}

void proxy_mask_move(struct client *c, struct evbuffer *src, size_t n, struct evbuffer *dst,
                     bool final)
{
        if (!c->needles[0]) {
                if (n)
                        evbuffer_remove_buffer(src, dst, n);
                return;
        }
        if (!c->mask_carry && !(c->mask_carry = evbuffer_new()))
                return;
        if (n)
                evbuffer_remove_buffer(src, c->mask_carry, n);
        mask_run(c, dst, final);
}

void proxy_mask_add(struct client *c, const void *data, size_t len, struct evbuffer *dst,
                    bool final)
{
        if (!c->needles[0]) {
                if (len)
                        evbuffer_add(dst, data, len);
                return;
        }
        if (!c->mask_carry && !(c->mask_carry = evbuffer_new()))
                return;
        if (len)
                evbuffer_add(c->mask_carry, data, len);
        mask_run(c, dst, final);
}
