/* SPDX-License-Identifier: MIT */
/*
 * test-broker-units.c: Check units for the broker library: strict base64url,
 * PAE, offline verification with an injected clock (exp, nbf, skew), claim
 * checks, the policy parser's errors and defaults, and the audit chain.
 */
#include <check.h>
#include <fcntl.h>
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "keys.h"
#include "paseto.h"
#include "policy.h"
#include "server-private.h"
#include "lib/util.h"
#include "verify.h"

static char tmpdir[] = "/tmp/cloister-broker-unit.XXXXXX";

/* ---- base64url and PAE ---- */

START_TEST(b64_decode_refuses_noncanonical_input)
{
        unsigned char *out = NULL;
        size_t n = 0;

        ck_assert_int_eq(broker_b64_decode("AA", 2, &out, &n), 0);
        ck_assert_uint_eq(n, 1);
        free(out);
        /* Same byte, but nonzero trailing bits: a second spelling, refused. */
        ck_assert_int_eq(broker_b64_decode("AB", 2, &out, &n), -EINVAL);
        ck_assert_int_eq(broker_b64_decode("AAB", 3, &out, &n), -EINVAL);
        ck_assert_int_eq(broker_b64_decode("AA==", 4, &out, &n), -EINVAL);
        ck_assert_int_eq(broker_b64_decode("A", 1, &out, &n), -EINVAL);
        ck_assert_int_eq(broker_b64_decode("AA+/", 4, &out, &n), -EINVAL);
        ck_assert_int_eq(broker_b64_decode("AA A", 4, &out, &n), -EINVAL);
        ck_assert_int_eq(broker_b64_decode("-_-_", 4, &out, &n), 0);
        ck_assert_uint_eq(n, 3);
        free(out);
}
END_TEST

START_TEST(b64_decode_secret_is_as_strict_and_lands_in_guarded_memory)
{
        /* Bytes 0..62, as key material is stored in signing.keys. */
        static const char key[] = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4v"
                                  "MDEyMzQ1Njc4OTo7PD0-";
        unsigned char *out = NULL;
        size_t n = 0;
        uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);

        ck_assert_int_eq(broker_b64_decode_secret("AB", 2, &out, &n), -EINVAL);
        ck_assert_int_eq(broker_b64_decode_secret("AA==", 4, &out, &n), -EINVAL);
        ck_assert_int_eq(broker_b64_decode_secret("AA A", 4, &out, &n), -EINVAL);
        ck_assert_int_eq(broker_b64_decode_secret(key, strlen(key) - 3, &out, &n), -EINVAL);
        ck_assert_ptr_null(out);
        ck_assert_int_eq(broker_b64_decode_secret(key, strlen(key), &out, &n), 0);
        ck_assert_uint_eq(n, 63);
        for (size_t i = 0; i < n; i++)
                ck_assert_uint_eq(out[i], i);
        /*
         * sodium_malloc puts the block against a guard page: the key ends at
         * most the 3 bytes of decoding slack before a page boundary. A plain
         * heap copy of key material would not.
         */
        ck_assert_uint_lt((page - (uintptr_t)(out + n) % page) % page, 4);
        sodium_free(out);
}
END_TEST

START_TEST(pae_matches_the_spec_examples)
{
        unsigned char *out = NULL;
        size_t n = 0;

        ck_assert_int_eq(broker_paseto_pae(NULL, 0, &out, &n), 0);
        ck_assert_uint_eq(n, 8);
        ck_assert_mem_eq(out, "\0\0\0\0\0\0\0\0", 8);
        free(out);
        ck_assert_int_eq(broker_paseto_pae((struct iovec[]){{(void *)"", 0}}, 1, &out, &n), 0);
        ck_assert_uint_eq(n, 16);
        ck_assert_mem_eq(out, "\x01\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16);
        free(out);
        ck_assert_int_eq(broker_paseto_pae((struct iovec[]){{(void *)"test", 4}}, 1, &out, &n), 0);
        ck_assert_uint_eq(n, 20);
        ck_assert_mem_eq(out, "\x01\0\0\0\0\0\0\0\x04\0\0\0\0\0\0\0test", 20);
        free(out);
}
END_TEST

START_TEST(footer_with_trailing_dot_is_malformed)
{
        unsigned char pk[32], sk[64];
        char *tok = NULL, *bad = NULL, *msg = NULL;

        crypto_sign_keypair(pk, sk);
        ck_assert_int_eq(broker_paseto_sign(sk, "{}", 2, NULL, NULL, 0, &tok), 0);
        ck_assert_int_eq(broker_paseto_verify(pk, tok, "", NULL, 0, &msg, NULL), 0);
        free(msg);
        ck_assert_int_ge(asprintf(&bad, "%s.", tok), 0);
        ck_assert_int_eq(broker_paseto_verify(pk, bad, NULL, NULL, 0, &msg, NULL), -EINVAL);
        free(bad);
        ck_assert_int_ge(asprintf(&bad, "v3%s", tok + 2), 0);
        ck_assert_int_eq(broker_paseto_verify(pk, bad, NULL, NULL, 0, &msg, NULL),
                         -EPROTONOSUPPORT);
        free(bad);
        free(tok);
}
END_TEST

/* ---- verification with an injected clock ---- */

#define T0 1800000000LL

static broker_keyring *ring;

/* A token like the broker's, with chosen claims; omit = claim to leave out. */
static char *make_token(const char *workspace, int64_t iat, int64_t nbf, int64_t exp,
                        const char *omit, const char *kid_override)
{
        const struct broker_key *k = broker_keyring_current(ring);
        char ti[32], tn[32], te[32], *payload, *footer = NULL, *implicit = NULL, *tok = NULL;
        json_t *c;

        broker_time_format(iat, ti, sizeof(ti));
        broker_time_format(nbf, tn, sizeof(tn));
        broker_time_format(exp, te, sizeof(te));
        c = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "iss", "cloister", "sub",
                      workspace, "aud", "https://a.example", "scope", "git", "iat", ti, "nbf", tn,
                      "exp", te, "jti", "00112233445566778899aabbccddeeff");
        if (omit)
                json_object_del(c, omit);
        payload = json_dumps(c, JSON_COMPACT);
        ck_assert_int_ge(asprintf(&footer, "{\"kid\":\"%s\"}", kid_override ?: k->kid), 0);
        ck_assert_int_eq(broker_token_implicit(workspace, &implicit), 0);
        ck_assert_int_eq(broker_paseto_sign(k->sk, payload, strlen(payload), footer, implicit,
                                            strlen(implicit), &tok),
                         0);
        json_decref(c);
        free(payload);
        free(footer);
        free(implicit);
        return tok;
}

static int verify_at(const char *tok, int64_t now, int64_t skew, const char *aud, const char *scope)
{
        struct broker_verify_opts o = {
                .workspace = "ws", .audience = aud, .scope = scope, .now = now, .skew = skew};
        struct broker_claims c = {0};
        char reason[256];
        int r = broker_token_verify(ring, tok, &o, &c, reason, sizeof(reason));

        ck_assert_str_ne(reason, "");
        broker_claims_done(&c);
        return r;
}

START_TEST(exp_is_enforced_with_skew)
{
        char *t = make_token("ws", T0, T0, T0 + 300, NULL, NULL);

        ck_assert_int_eq(verify_at(t, T0 + 299, 0, NULL, NULL), BROKER_VERIFY_OK);
        ck_assert_int_eq(verify_at(t, T0 + 300, 0, NULL, NULL), BROKER_VERIFY_EXPIRED);
        ck_assert_int_eq(verify_at(t, T0 + 329, 30, NULL, NULL), BROKER_VERIFY_OK);
        ck_assert_int_eq(verify_at(t, T0 + 330, 30, NULL, NULL), BROKER_VERIFY_EXPIRED);
        ck_assert_int_eq(verify_at(t, T0 + 86400, BROKER_SKEW_DEFAULT, NULL, NULL),
                         BROKER_VERIFY_EXPIRED);
        free(t);
}
END_TEST

START_TEST(nbf_is_enforced_with_skew)
{
        char *t = make_token("ws", T0, T0 + 100, T0 + 300, NULL, NULL);

        ck_assert_int_eq(verify_at(t, T0 + 100, 0, NULL, NULL), BROKER_VERIFY_OK);
        ck_assert_int_eq(verify_at(t, T0 + 99, 0, NULL, NULL), BROKER_VERIFY_NOT_YET_VALID);
        ck_assert_int_eq(verify_at(t, T0 + 70, 30, NULL, NULL), BROKER_VERIFY_OK);
        ck_assert_int_eq(verify_at(t, T0 + 69, 30, NULL, NULL), BROKER_VERIFY_NOT_YET_VALID);
        free(t);
}
END_TEST

START_TEST(audience_and_scope_must_match_when_asked)
{
        char *t = make_token("ws", T0, T0, T0 + 300, NULL, NULL);

        ck_assert_int_eq(verify_at(t, T0, 30, "https://a.example", "git"), BROKER_VERIFY_OK);
        ck_assert_int_eq(verify_at(t, T0, 30, "https://b.example", NULL),
                         BROKER_VERIFY_WRONG_AUDIENCE);
        ck_assert_int_eq(verify_at(t, T0, 30, NULL, "deploy"), BROKER_VERIFY_WRONG_SCOPE);
        free(t);
}
END_TEST

START_TEST(token_for_another_workspace_fails_the_signature)
{
        char *t = make_token("other", T0, T0, T0 + 300, NULL, NULL);

        ck_assert_int_eq(verify_at(t, T0, 30, NULL, NULL), BROKER_VERIFY_BAD_SIGNATURE);
        free(t);
}
END_TEST

START_TEST(missing_claims_are_bad_claims)
{
        static const char *const claims[] = {"iss", "sub", "aud", "scope",
                                             "iat", "nbf", "exp", "jti"};

        for (size_t i = 0; i < ELEMENTSOF(claims); i++) {
                char *t = make_token("ws", T0, T0, T0 + 300, claims[i], NULL);
                ck_assert_msg(verify_at(t, T0, 30, NULL, NULL) == BROKER_VERIFY_BAD_CLAIMS,
                              "without %s", claims[i]);
                free(t);
        }
}
END_TEST

START_TEST(unknown_kid_is_unknown_key)
{
        char *t = make_token("ws", T0, T0, T0 + 300, NULL, "k4.pid.nope");

        ck_assert_int_eq(verify_at(t, T0, 30, NULL, NULL), BROKER_VERIFY_UNKNOWN_KEY);
        free(t);
}
END_TEST

START_TEST(time_parse_accepts_rfc3339_offsets)
{
        int64_t t;

        ck_assert_int_eq(broker_time_parse("2022-01-01T00:00:00+00:00", &t), 0);
        ck_assert_int_eq(t, 1640995200);
        ck_assert_int_eq(broker_time_parse("2022-01-01T02:00:00+02:00", &t), 0);
        ck_assert_int_eq(t, 1640995200);
        ck_assert_int_eq(broker_time_parse("2021-12-31T23:00:00.999-01:00", &t), 0);
        ck_assert_int_eq(t, 1640995200);
        ck_assert_int_eq(broker_time_parse("2022-01-01T00:00:00", &t), -EINVAL);
        ck_assert_int_eq(broker_time_parse("2022-13-01T00:00:00Z", &t), -EINVAL);
        ck_assert_int_eq(broker_time_parse("1640995200", &t), -EINVAL);
}
END_TEST

/* ---- policy ---- */

static char *policy_error(const char *text)
{
        char path[256], *err = NULL;
        struct broker_policy *p = NULL;
        FILE *f;

        snprintf(path, sizeof(path), "%s/policy.ini", tmpdir);
        f = fopen(path, "w");
        fputs(text, f);
        fclose(f);
        if (broker_policy_load(path, &p, &err) == 0) {
                broker_policy_free(p);
                return NULL;
        }
        /* Strip the directory so expectations read as FILE:LINE. */
        char *slash = strrchr(err, '/');
        char *out = strdup(slash ? slash + 1 : err);
        free(err);
        return out;
}

#define ASSERT_POLICY_ERROR(text, want)                                                            \
        do {                                                                                       \
                char *e = policy_error(text);                                                      \
                ck_assert_msg(e, "policy was accepted");                                           \
                ck_assert_str_eq(e, want);                                                         \
                free(e);                                                                           \
        } while (0)

START_TEST(policy_errors_name_file_line_key_and_section)
{
        ASSERT_POLICY_ERROR("[scope \"git\"]\naudience = a\nworkspaces = w\ncolour = red\n",
                            "policy.ini:4: key 'colour' in [scope \"git\"]: unknown key "
                            "(expected audience, ttl, max_ttl, max_uses, workspaces, hosts, "
                            "username or secret)");
        ASSERT_POLICY_ERROR("[scope \"git\"]\naudience = a\nttl = soon\n",
                            "policy.ini:3: key 'ttl' in [scope \"git\"]: 'soon' is not a "
                            "duration (e.g. 90, 90s, 15m, 2h)");
        ASSERT_POLICY_ERROR("[scope \"git\"]\nmax_ttl = 2d\n",
                            "policy.ini:2: key 'max_ttl' in [scope \"git\"]: 172800 s is longer "
                            "than the ceiling of 86400 s (1 day)");
        ASSERT_POLICY_ERROR("[scope \"git\"]\nworkspaces = w\n",
                            "policy.ini:1: [scope \"git\"]: missing key 'audience'");
        ASSERT_POLICY_ERROR("# comment\n\n[scope \"late\"]\n\nttl = 5\n",
                            "policy.ini:3: [scope \"late\"]: missing key 'audience'");
        ASSERT_POLICY_ERROR("[scope \"git\"]\naudience = a\nworkspaces = w\nttl = 1h\nmax_ttl = "
                            "10m\n",
                            "policy.ini:1: [scope \"git\"]: ttl (3600 s) is longer than max_ttl "
                            "(600 s)");
        ASSERT_POLICY_ERROR("[scope \"a\"]\naudience = a\nworkspaces = w\n[scope \"a\"]\nttl = 1\n",
                            "policy.ini:4: section [scope \"a\"]: duplicate scope (first on line "
                            "1)");
        ASSERT_POLICY_ERROR("[limits]\nrate = 0\n",
                            "policy.ini:2: key 'rate' in [limits]: must be between 1 and 100000");
        ASSERT_POLICY_ERROR("[scope \"a\"]\naudience = a\nworkspaces = .hidden\n",
                            "policy.ini:3: key 'workspaces' in [scope \"a\"]: '.hidden' is not a "
                            "valid name ([A-Za-z0-9._-], at most 64)");
        ASSERT_POLICY_ERROR("[oops]\nx = 1\n", "policy.ini:1: unknown section [oops] (expected "
                                               "[broker], [limits] or [scope \"NAME\"])");
        ASSERT_POLICY_ERROR("[broker]\n", "policy.ini: no [scope \"NAME\"] section: the policy "
                                          "grants nothing");
        ASSERT_POLICY_ERROR("[scope \"a\"]\nthis is not ini\n",
                            "policy.ini:2: malformed line: expected 'key = value' or '[section]'");
}
END_TEST

START_TEST(policy_defaults_and_lookups)
{
        char path[256], *err = NULL;
        struct broker_policy *p = NULL;
        const struct broker_scope *s;
        FILE *f;

        snprintf(path, sizeof(path), "%s/policy.ini", tmpdir);
        f = fopen(path, "w");
        fputs("[scope \"git\"]\naudience = https://a\nworkspaces = ws, other\nhosts = "
              "Git.Example.com\n[scope \"any\"]\naudience = b\nworkspaces = *\nttl = 20m\n",
              f);
        fclose(f);
        ck_assert_int_eq(broker_policy_load(path, &p, &err), 0);
        s = broker_policy_scope(p, "git");
        ck_assert_ptr_nonnull(s);
        ck_assert_int_eq(s->ttl, 300);
        ck_assert_int_eq(s->max_ttl, 900);
        ck_assert_uint_eq(s->max_uses, 0);
        ck_assert(broker_scope_allows(s, "other"));
        ck_assert(!broker_scope_allows(s, "third"));
        ck_assert_ptr_eq(broker_policy_scope_for_host(p, "git.example.com", "ws"), s);
        ck_assert_ptr_null(broker_policy_scope_for_host(p, "git.example.com", "third"));
        s = broker_policy_scope(p, "any");
        ck_assert(broker_scope_allows(s, "third"));
        ck_assert_int_eq(s->max_ttl, 1200); /* never shorter than ttl */
        ck_assert_int_eq(broker_policy_max_ttl(p), 1200);
        ck_assert(broker_policy_is_redeemer(p, geteuid()));
        broker_policy_free(p);
}
END_TEST

/* ---- audit ---- */

START_TEST(audit_chain_detects_an_edit)
{
        char dir[300], path[320], *reason = NULL, *err = NULL;
        broker_audit *a = NULL;
        unsigned lines = 0, line = 0;
        int dfd;

        snprintf(dir, sizeof(dir), "%s/audit", tmpdir);
        mkdir(dir, 0700);
        dfd = open(dir, O_RDONLY | O_DIRECTORY);
        ck_assert_int_eq(broker_audit_open(dfd, dir, NULL, NULL, &a, &err), 0);
        for (int i = 0; i < 3; i++) {
                json_t *e = json_pack("{s:s, s:i}", "event", "test", "n", i);
                ck_assert_int_eq(broker_audit_append(a, e, T0 + i), 0);
                json_decref(e);
        }
        broker_audit_free(a);
        snprintf(path, sizeof(path), "%s/%s", dir, BROKER_AUDIT_FILE);
        ck_assert_int_eq(broker_audit_verify(path, &lines, &line, &reason), 0);
        ck_assert_uint_eq(lines, 3);
        /* Flip "n":1 to "n":7 on the second line. */
        {
                FILE *f = fopen(path, "r+");
                char buf[8192];
                size_t n = fread(buf, 1, sizeof(buf) - 1, f);
                buf[n] = '\0';
                char *p = strstr(buf, "\"n\":1");
                ck_assert_ptr_nonnull(p);
                p[4] = '7';
                rewind(f);
                fwrite(buf, 1, n, f);
                fclose(f);
        }
        ck_assert_int_eq(broker_audit_verify(path, &lines, &line, &reason), -EBADMSG);
        ck_assert_uint_eq(line, 2);
        ck_assert_str_eq(reason, "line 2: edited (its hash does not match its content)");
        free(reason);
        /* And the broker will not append to it. */
        ck_assert_int_eq(broker_audit_open(dfd, dir, NULL, NULL, &a, &err), -EBADMSG);
        ck_assert_ptr_nonnull(strstr(err, "line 2: edited"));
        free(err);
        close(dfd);
}
END_TEST

/* ---- token table ---- */

START_TEST(token_table_forgets_long_expired_tokens_and_keeps_live_ones)
{
        struct ws *ws = calloc(1, sizeof(*ws));
        int64_t now = time(NULL);
        char jti[JTI_MAX];

        ck_assert_ptr_nonnull(ws);
        for (int i = 0; i < TOKEN_SWEEP_EVERY; i++) {
                snprintf(jti, sizeof(jti), "old%d", i);
                ck_assert_int_eq(broker_tokens_add(ws, jti, "git", now - 3600, 0), 0);
        }
        ck_assert_int_eq(broker_tokens_add(ws, "live", "git", now + 300, 2), 0);
        /* The sweep ran before the last old token went in: it and the live one are left. */
        ck_assert_uint_eq(ws->n_tokens, 2);
        ck_assert_ptr_null(broker_tokens_find(ws, "old7"));
        ck_assert_ptr_nonnull(broker_tokens_find(ws, "live"));
        ck_assert_uint_eq(broker_tokens_find(ws, "live")->max_uses, 2);
        ck_assert_uint_eq(broker_tokens_revoke_all(ws, now), 1);
        ck_assert(broker_tokens_find(ws, "live")->revoked);
        broker_tokens_free(ws);
        free(ws);
}
END_TEST

START_TEST(rate_bucket_allows_a_burst_then_refills_with_time)
{
        struct bucket b = {0};
        int n = 0;

        for (int i = 0; i < 100; i++)
                n += broker_bucket_take(&b, 10.0, 20.0, 1000);
        ck_assert_int_eq(n, 20);
        ck_assert(!broker_bucket_take(&b, 10.0, 20.0, 1000));
        ck_assert(broker_bucket_take(&b, 10.0, 20.0, 1100)); /* 100 ms later: one more */
        ck_assert(!broker_bucket_take(&b, 10.0, 20.0, 1100));
}
END_TEST

int main(void)
{
        char *err = NULL;
        SRunner *sr;
        Suite *s;
        TCase *tc;
        int failed, dfd;

        if (sodium_init() < 0 || !mkdtemp(tmpdir))
                return 1;
        dfd = open(tmpdir, O_RDONLY | O_DIRECTORY);
        if (broker_keyring_load(dfd, tmpdir, true, &ring, &err) < 0) {
                fprintf(stderr, "keyring: %s\n", err);
                return 1;
        }
        s = suite_create("broker");
        tc = tcase_create("units");
        tcase_add_test(tc, b64_decode_refuses_noncanonical_input);
        tcase_add_test(tc, b64_decode_secret_is_as_strict_and_lands_in_guarded_memory);
        tcase_add_test(tc, pae_matches_the_spec_examples);
        tcase_add_test(tc, footer_with_trailing_dot_is_malformed);
        tcase_add_test(tc, exp_is_enforced_with_skew);
        tcase_add_test(tc, nbf_is_enforced_with_skew);
        tcase_add_test(tc, audience_and_scope_must_match_when_asked);
        tcase_add_test(tc, token_for_another_workspace_fails_the_signature);
        tcase_add_test(tc, missing_claims_are_bad_claims);
        tcase_add_test(tc, unknown_kid_is_unknown_key);
        tcase_add_test(tc, time_parse_accepts_rfc3339_offsets);
        tcase_add_test(tc, policy_errors_name_file_line_key_and_section);
        tcase_add_test(tc, policy_defaults_and_lookups);
        tcase_add_test(tc, audit_chain_detects_an_edit);
        tcase_add_test(tc, token_table_forgets_long_expired_tokens_and_keeps_live_ones);
        tcase_add_test(tc, rate_bucket_allows_a_burst_then_refills_with_time);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_set_fork_status(sr, CK_NOFORK);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        broker_keyring_free(ring);
        close(dfd);
        {
                char cmd[512];
                snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
                if (system(cmd) != 0)
                        failed++;
        }
        return failed ? 1 : 0;
}
