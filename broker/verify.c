/* SPDX-License-Identifier: MIT */
/*
 * verify.c: offline verification of a broker token: signature (with the key
 * its footer names), then the time claims with skew, then audience and scope.
 *
 * The order matters: nothing inside the token is believed before the
 * signature checks, except the footer's kid, which only selects a key.
 */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "paseto.h"
#include "verify.h"
#include "lib/quote.h"
#include "lib/util.h"

static int result(int code, char *reason, size_t size, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));
static int result(int code, char *reason, size_t size, const char *fmt, ...)
{
        va_list ap;

        if (reason && size) {
                va_start(ap, fmt);
                vsnprintf(reason, size, fmt, ap);
                va_end(ap);
                /* The unverified kid, cut by "%.60s" in the middle of a
                 * character, must not make the reason invalid UTF-8: the
                 * broker's answer and audit entry hold it as a JSON string. */
                quote_utf8_fix(reason);
        }
        return code;
}

void broker_claims_done(struct broker_claims *c)
{
        if (!c)
                return;
        free(c->iss);
        free(c->sub);
        free(c->aud);
        free(c->scope);
        free(c->jti);
        free(c->kid);
        *c = (struct broker_claims){0};
}

int broker_token_implicit(const char *workspace, char **ret)
{
        if (asprintf(ret, "{\"workspace\":\"%s\"}", workspace) < 0)
                return -ENOMEM;
        return 0;
}

int broker_time_format(int64_t t, char *buf, size_t size)
{
        time_t tt = (time_t)t;
        struct tm tm;

        if (!gmtime_r(&tt, &tm))
                return -EOVERFLOW;
        if (strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
                return -ENOBUFS;
        return 0;
}

static int digits(const char **p, int n, int *ret)
{
        int v = 0;

        for (int i = 0; i < n; i++) {
                if (!isdigit((unsigned char)(*p)[i]))
                        return -EINVAL;
                v = v * 10 + ((*p)[i] - '0');
        }
        *p += n;
        *ret = v;
        return 0;
}

/* YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM); fractions are dropped (floor). */
int broker_time_parse(const char *s, int64_t *ret)
{
        struct tm tm = {0};
        int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
        const char *p = s;
        time_t t;

        if (digits(&p, 4, &y) < 0 || *p++ != '-' || digits(&p, 2, &mo) < 0 || *p++ != '-' ||
            digits(&p, 2, &d) < 0 || (*p != 'T' && *p != 't') || !*p++ || digits(&p, 2, &h) < 0 ||
            *p++ != ':' || digits(&p, 2, &mi) < 0 || *p++ != ':' || digits(&p, 2, &sec) < 0)
                return -EINVAL;
        if (*p == '.') {
                p++;
                if (!isdigit((unsigned char)*p))
                        return -EINVAL;
                while (isdigit((unsigned char)*p))
                        p++;
        }
        if (*p == 'Z' || *p == 'z') {
                p++;
        } else if (*p == '+' || *p == '-') {
                sign = *p++ == '+' ? 1 : -1;
                if (digits(&p, 2, &oh) < 0 || *p++ != ':' || digits(&p, 2, &om) < 0)
                        return -EINVAL;
        } else {
                return -EINVAL;
        }
        if (*p || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 ||
            oh > 23 || om > 59)
                return -EINVAL;
        tm.tm_year = y - 1900;
        tm.tm_mon = mo - 1;
        tm.tm_mday = d;
        tm.tm_hour = h;
        tm.tm_min = mi;
        tm.tm_sec = sec;
        t = timegm(&tm);
        if (t == (time_t)-1)
                return -EINVAL;
        *ret = (int64_t)t - sign * (oh * 3600 + om * 60);
        return 0;
}

static int claim_string(json_t *o, const char *name, bool required, char **ret)
{
        json_t *v = json_object_get(o, name);

        if (!v)
                return required ? -ENOENT : 0;
        if (!json_is_string(v))
                return -EINVAL;
        *ret = strdup(json_string_value(v));
        return *ret ? 0 : -ENOMEM;
}

static int claim_time(json_t *o, const char *name, int64_t *ret)
{
        json_t *v = json_object_get(o, name);

        if (!v)
                return -ENOENT;
        if (!json_is_string(v))
                return -EINVAL;
        return broker_time_parse(json_string_value(v), ret);
}

static int kid_from_footer(const char *token, char **ret)
{
        _cleanup_free_ char *footer = NULL;
        json_t *f, *kid;
        int r;

        r = broker_paseto_footer(token, &footer);
        if (r < 0)
                return r;
        f = json_loads(footer, JSON_REJECT_DUPLICATES, NULL);
        kid = json_object_get(f, "kid");
        if (!json_is_string(kid)) {
                json_decref(f);
                return -ENOKEY;
        }
        *ret = strdup(json_string_value(kid));
        json_decref(f);
        return *ret ? 0 : -ENOMEM;
}

int broker_token_verify(const broker_keyring *kr, const char *token,
                        const struct broker_verify_opts *o, struct broker_claims *ret_claims,
                        char *reason, size_t rs)
{
        _cleanup_free_ char *kid = NULL, *implicit = NULL, *msg = NULL;
        struct broker_claims c = {0};
        const struct broker_key *key;
        json_t *payload = NULL;
        const char *bad = NULL;
        int r;

        if (!startswith(token, BROKER_PASETO_PUBLIC_HEADER))
                return result(BROKER_VERIFY_MALFORMED, reason, rs,
                              "not a v4.public token (wrong version or purpose)");
        r = kid_from_footer(token, &kid);
        if (r == -ENOMEM)
                return r;
        if (r == -ENOKEY)
                return result(BROKER_VERIFY_MALFORMED, reason, rs, "footer has no 'kid'");
        if (r < 0)
                return result(BROKER_VERIFY_MALFORMED, reason, rs, "malformed token (encoding)");
        key = broker_keyring_find(kr, kid);
        if (!key)
                return result(BROKER_VERIFY_UNKNOWN_KEY, reason, rs,
                              "signed by an unknown key (kid %.60s)", kid);
        r = broker_token_implicit(o->workspace, &implicit);
        if (r < 0)
                return r;
        r = broker_paseto_verify(key->pk, token, NULL, implicit, strlen(implicit), &msg, NULL);
        if (r == -ENOMEM)
                return r;
        if (r == -EBADMSG)
                return result(BROKER_VERIFY_BAD_SIGNATURE, reason, rs,
                              "bad signature (altered, forged, or not for workspace '%s')",
                              o->workspace);
        if (r < 0)
                return result(BROKER_VERIFY_MALFORMED, reason, rs, "malformed token (%s)",
                              strerror(-r));

        payload = json_loads(msg, JSON_REJECT_DUPLICATES, NULL);
        if (!json_is_object(payload)) {
                json_decref(payload);
                return result(BROKER_VERIFY_BAD_CLAIMS, reason, rs, "payload is not a JSON object");
        }
#define CLAIM(expr, name)                                                                          \
        do {                                                                                       \
                r = (expr);                                                                        \
                if (r == -ENOMEM)                                                                  \
                        goto out;                                                                  \
                if (r < 0 && !bad)                                                                 \
                        bad = name;                                                                \
        } while (0)
        CLAIM(claim_string(payload, "iss", true, &c.iss), "iss");
        CLAIM(claim_string(payload, "sub", true, &c.sub), "sub");
        CLAIM(claim_string(payload, "aud", true, &c.aud), "aud");
        CLAIM(claim_string(payload, "scope", true, &c.scope), "scope");
        CLAIM(claim_string(payload, "jti", true, &c.jti), "jti");
        CLAIM(claim_time(payload, "iat", &c.iat), "iat");
        CLAIM(claim_time(payload, "nbf", &c.nbf), "nbf");
        CLAIM(claim_time(payload, "exp", &c.exp), "exp");
#undef CLAIM
        c.kid = TAKE_PTR(kid);
        if (bad) {
                r = result(BROKER_VERIFY_BAD_CLAIMS, reason, rs, "claim '%s' missing or malformed",
                           bad);
                goto out;
        }
        if (!streq(c.sub, o->workspace)) {
                /* Cannot happen with a valid signature from our broker; belt and braces. */
                r = result(BROKER_VERIFY_BAD_CLAIMS, reason, rs, "sub is not the workspace");
                goto out;
        }
        if (o->now >= c.exp + o->skew) {
                r = result(BROKER_VERIFY_EXPIRED, reason, rs, "expired %lld s ago",
                           (long long)(o->now - c.exp));
                goto out;
        }
        if (o->now + o->skew < c.nbf || o->now + o->skew < c.iat) {
                r = result(BROKER_VERIFY_NOT_YET_VALID, reason, rs, "not valid for another %lld s",
                           (long long)(MAX(c.nbf, c.iat) - o->now));
                goto out;
        }
        if (o->audience && !streq(o->audience, c.aud)) {
                r = result(BROKER_VERIFY_WRONG_AUDIENCE, reason, rs,
                           "audience is '%.100s', not '%.100s'", c.aud, o->audience);
                goto out;
        }
        if (o->scope && !streq(o->scope, c.scope)) {
                r = result(BROKER_VERIFY_WRONG_SCOPE, reason, rs, "scope is '%.100s', not '%.100s'",
                           c.scope, o->scope);
                goto out;
        }
        r = result(BROKER_VERIFY_OK, reason, rs, "valid until %lld", (long long)c.exp);
        if (ret_claims) {
                *ret_claims = c;
                c = (struct broker_claims){0};
        }
out:
        broker_claims_done(&c);
        json_decref(payload);
        return r;
}
