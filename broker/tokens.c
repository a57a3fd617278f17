/* SPDX-License-Identifier: MIT */
/*
 * tokens.c: the broker's table of live tokens (for revocation and use
 * counts), its rebuild from the audit log, and the token-bucket limiter.
 *
 * Only the jti, scope, expiry and counters are kept, never the token itself:
 * introspection re-verifies the token it is given and then looks it up here.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "server-private.h"
#include "lib/util.h"

static size_t hash(const char *s)
{
        size_t h = 1469598103934665603ULL;

        for (; *s; s++)
                h = (h ^ (unsigned char)*s) * 1099511628211ULL;
        return h % TOKEN_BUCKETS;
}

struct token_rec *broker_tokens_find(struct ws *ws, const char *jti)
{
        for (struct token_rec *t = ws->tokens[hash(jti)]; t; t = t->next)
                if (streq(t->jti, jti))
                        return t;
        return NULL;
}

/*
 * Forget tokens that expired over a minute ago: no introspection can find
 * them active any more, so revocation and use counts no longer matter.
 * Run every TOKEN_SWEEP_EVERY additions, which keeps the table (and each
 * lookup) proportional to the live tokens, not to all ever issued.
 */
static void tokens_sweep(struct ws *ws, int64_t now)
{
        ws->adds_since_sweep = 0;
        for (size_t i = 0; i < TOKEN_BUCKETS; i++) {
                struct token_rec **p = &ws->tokens[i];
                while (*p) {
                        struct token_rec *t = *p;
                        if (t->exp + 60 < now) {
                                *p = t->next;
                                free(t);
                                ws->n_tokens--;
                        } else {
                                p = &t->next;
                        }
                }
        }
}

int broker_tokens_add(struct ws *ws, const char *jti, const char *scope, int64_t exp,
                      uint64_t max_uses)
{
        struct token_rec *t;
        size_t h;

        if (strlen(jti) >= JTI_MAX || strlen(scope) > BROKER_NAME_MAX)
                return -EINVAL;
        /* jti are 128 random bits: no duplicate check on the hot path (replay checks). */
        if (++ws->adds_since_sweep >= TOKEN_SWEEP_EVERY)
                tokens_sweep(ws, (int64_t)time(NULL));
        t = calloc(1, sizeof(*t));
        if (!t)
                return -ENOMEM;
        strcpy(t->jti, jti);
        strcpy(t->scope, scope);
        t->exp = exp;
        t->max_uses = max_uses;
        h = hash(jti);
        t->next = ws->tokens[h];
        ws->tokens[h] = t;
        ws->n_tokens++;
        return 0;
}

size_t broker_tokens_revoke_all(struct ws *ws, int64_t now)
{
        size_t n = 0;

        for (size_t i = 0; i < TOKEN_BUCKETS; i++)
                for (struct token_rec *t = ws->tokens[i]; t; t = t->next)
                        if (!t->revoked && t->exp > now) {
                                t->revoked = true;
                                n++;
                        }
        return n;
}

void broker_tokens_free(struct ws *ws)
{
        for (size_t i = 0; i < TOKEN_BUCKETS; i++) {
                while (ws->tokens[i]) {
                        struct token_rec *t = ws->tokens[i];
                        ws->tokens[i] = t->next;
                        free(t);
                }
        }
        ws->n_tokens = 0;
}

static const char *str(json_t *o, const char *k)
{
        json_t *v = json_object_get(o, k);
        return json_is_string(v) ? json_string_value(v) : NULL;
}

int broker_tokens_replay(void *userdata, json_t *e)
{
        struct ws *ws = userdata;
        const char *event = str(e, "event"), *jti = str(e, "jti");
        json_t *claims = json_object_get(e, "claims");
        struct token_rec *t = jti ? broker_tokens_find(ws, jti) : NULL;
        int64_t exp = 0;

        if (!event)
                return 0;
        if (streq(event, "issue") && jti && claims) {
                json_t *max = json_object_get(e, "max_uses");
                const char *scope = str(claims, "scope");
                json_t *x = json_object_get(e, "exp");

                exp = json_is_integer(x) ? json_integer_value(x) : 0;
                /* Long expired tokens need no online state: keep the table small. */
                if (scope && !t && exp + 60 >= (int64_t)time(NULL))
                        (void)broker_tokens_add(
                                ws, jti, scope, exp,
                                json_is_integer(max) ? (uint64_t)json_integer_value(max) : 0);
        } else if ((streq(event, "release") ||
                    (streq(event, "introspect") && json_is_true(json_object_get(e, "used")))) &&
                   t) {
                t->uses++;
        } else if (streq(event, "revoke")) {
                if (t)
                        t->revoked = true;
                else if (json_is_true(json_object_get(e, "all")))
                        broker_tokens_revoke_all(ws,
                                                 json_integer_value(json_object_get(e, "time")));
        }
        return 0;
}

bool broker_bucket_take(struct bucket *b, double per_second, double burst, int64_t now_ms)
{
        if (b->last_ms == 0) {
                b->level = burst;
                b->last_ms = now_ms;
        }
        if (now_ms > b->last_ms) {
                b->level =
                        MIN(burst, b->level + (double)(now_ms - b->last_ms) * per_second / 1000.0);
                b->last_ms = now_ms;
        }
        if (b->level < 1.0)
                return false;
        b->level -= 1.0;
        return true;
}
