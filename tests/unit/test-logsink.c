/* SPDX-License-Identifier: MIT */
/*
 * test-logsink.c: lib/logsink, the copies of [logs] stdout = json in
 * signed chains: a head starts each chain, one follows every
 * LOGSINK_HEAD_LINES lines, a final one ends it; each verifies with the
 * public key over the head's bytes without its signature, and its hash is
 * the chain recomputed from the copies as verify-chain does it.
 */
#include <check.h>
#include <fcntl.h>
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/logsink.h"
#include "lib/util.h"

/* Standard output on a fresh file while fn writes; the file's text after. */
static char *captured(void (*fn)(void *), void *arg)
{
        char tmpl[] = "/tmp/cloister-logsink.XXXXXX";
        int fd = mkstemp(tmpl), saved = dup(STDOUT_FILENO);
        char *text = NULL;
        size_t cap = 0;
        FILE *f;

        ck_assert_int_ge(fd, 0);
        ck_assert_int_ge(saved, 0);
        fflush(stdout);
        ck_assert_int_eq(dup2(fd, STDOUT_FILENO), STDOUT_FILENO);
        fn(arg);
        ck_assert_int_eq(dup2(saved, STDOUT_FILENO), STDOUT_FILENO);
        close(saved);
        f = fdopen(fd, "r");
        ck_assert_ptr_nonnull(f);
        rewind(f);
        ck_assert_int_ge(getdelim(&text, &cap, '\0', f), 0);
        fclose(f);
        unlink(tmpl);
        return text;
}

struct key {
        unsigned char pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
};

static struct key key_a, key_b;

static void write_lines(void *arg)
{
        size_t n = *(size_t *)arg;

        ck_assert_int_eq(logsink_open_stdout("wa"), 0);
        ck_assert_int_eq(logsink_set_key("wa", key_a.sk, "k4.pid.a"), 0);
        ck_assert_int_eq(logsink_set_key("wb", key_b.sk, "k4.pid.b"), 0);
        for (size_t i = 0; i < n; i++) {
                char line[64];
                int len = snprintf(line, sizeof(line), "{\"op\":\"write\",\"i\":%zu}\n", i);
                logsink_line("journal", NULL, line, (size_t)len);
                if (i % 100 == 0)
                        logsink_line("audit", "wb", line, (size_t)len);
                logsink_line("net", "nokey", line, (size_t)len);
        }
        logsink_close();
}

struct chain {
        unsigned char h[32];
        json_int_t n;
        bool started, final;
        unsigned heads;
        json_int_t head_lines[8];
};

/* Check every line of text as verify-chain does; the chains of wa's journal and wb's audit. */
static void check_stream(const char *text, struct chain *ja, struct chain *ab, unsigned *nokey)
{
        const char *p = text;

        while (*p) {
                const char *nl = strchr(p, '\n');
                size_t len = (size_t)(nl - p);
                json_t *o = json_loadb(p, len, 0, NULL);
                const char *kind = json_string_value(json_object_get(o, "cloister"));
                const char *ws = json_string_value(json_object_get(o, "workspace"));

                ck_assert_ptr_nonnull(nl);
                ck_assert_ptr_nonnull(kind);
                if (streq(kind, "head")) {
                        const char *stream = json_string_value(json_object_get(o, "stream"));
                        struct chain *c = streq(ws, "wa") && streq(stream, "journal") ? ja
                                          : streq(ws, "wb") && streq(stream, "audit") ? ab
                                                                                      : NULL;
                        const struct key *k = c == ja ? &key_a : &key_b;
                        const char *sig = strstr(p, ",\"sig\":\"");
                        unsigned char s[crypto_sign_BYTES], h[32];
                        _cleanup_free_ char *body = NULL;
                        json_int_t lines = json_integer_value(json_object_get(o, "lines"));

                        ck_assert_ptr_nonnull(c); /* no head for a workspace without a key */
                        ck_assert_ptr_nonnull(sig);
                        ck_assert_int_eq(
                                sodium_hex2bin(s, sizeof(s), sig + 8, 128, NULL, NULL, NULL), 0);
                        ck_assert_int_eq(asprintf(&body, "%.*s}", (int)(sig - p), p) > 0, 1);
                        ck_assert_int_eq(crypto_sign_verify_detached(s, (unsigned char *)body,
                                                                     strlen(body), k->pk),
                                         0);
                        ck_assert_int_eq(
                                sodium_hex2bin(h, sizeof(h),
                                               json_string_value(json_object_get(o, "hash")), 64,
                                               NULL, NULL, NULL),
                                0);
                        if (!c->started) {
                                ck_assert_int_eq(lines, 0); /* the start gives h0 */
                                memcpy(c->h, h, sizeof(h));
                                c->started = true;
                        }
                        ck_assert_int_eq(lines, c->n);
                        ck_assert_mem_eq(h, c->h, sizeof(h));
                        ck_assert(!c->final);
                        c->final = json_is_true(json_object_get(o, "final"));
                        if (c->heads < 8)
                                c->head_lines[c->heads] = lines;
                        c->heads++;
                } else {
                        struct chain *c = streq(ws, "wa") ? ja : streq(ws, "wb") ? ab : NULL;
                        char hex[65];
                        crypto_generichash_state st;

                        if (!c) {
                                ++*nokey;
                        } else {
                                ck_assert(c->started);
                                ck_assert_int_eq(json_integer_value(json_object_get(o, "n")),
                                                 c->n + 1);
                                sodium_bin2hex(hex, sizeof(hex), c->h, sizeof(c->h));
                                ck_assert_mem_eq(json_string_value(json_object_get(o, "prev")), hex,
                                                 16);
                                crypto_generichash_init(&st, NULL, 0, 32);
                                crypto_generichash_update(&st, c->h, sizeof(c->h));
                                crypto_generichash_update(&st, (const unsigned char *)p, len);
                                crypto_generichash_final(&st, c->h, sizeof(c->h));
                                c->n++;
                        }
                }
                json_decref(o);
                p = nl + 1;
        }
}

START_TEST(chains_are_signed_at_start_every_thousand_lines_and_at_the_end)
{
        size_t n = 2500;
        _cleanup_free_ char *text = NULL;
        struct chain ja = {0}, ab = {0};
        unsigned nokey = 0;
        bool at_1000 = false, at_2000 = false;

        ck_assert_int_ge(sodium_init(), 0);
        crypto_sign_keypair(key_a.pk, key_a.sk);
        crypto_sign_keypair(key_b.pk, key_b.sk);
        text = captured(write_lines, &n);
        check_stream(text, &ja, &ab, &nokey);
        ck_assert_int_eq(ja.n, 2500);
        ck_assert(ja.final);
        for (unsigned i = 0; i < ja.heads && i < 8; i++) {
                at_1000 |= ja.head_lines[i] == 1000;
                at_2000 |= ja.head_lines[i] == 2000;
        }
        ck_assert(at_1000 && at_2000);
        ck_assert_int_eq(ab.n, 25);
        ck_assert(ab.final);
        ck_assert_uint_eq(nokey, 2500); /* copied, but no head vouches for them */
}
END_TEST

START_TEST(chains_start_at_random_bytes)
{
        size_t n = 1;
        _cleanup_free_ char *one = NULL, *two = NULL;
        struct chain a = {0}, b = {0}, x = {0}, y = {0};
        unsigned nokey = 0;

        ck_assert_int_ge(sodium_init(), 0);
        crypto_sign_keypair(key_a.pk, key_a.sk);
        crypto_sign_keypair(key_b.pk, key_b.sk);
        one = captured(write_lines, &n);
        two = captured(write_lines, &n);
        check_stream(one, &a, &x, &nokey);
        check_stream(two, &b, &y, &nokey);
        /* The same line, another start: no one can make a chain's copies ahead. */
        ck_assert_mem_ne(a.h, b.h, sizeof(a.h));
}
END_TEST

int main(void)
{
        Suite *s = suite_create("logsink");
        TCase *tc = tcase_create("chains");
        SRunner *sr;
        int failed;

        tcase_add_test(tc, chains_are_signed_at_start_every_thousand_lines_and_at_the_end);
        tcase_add_test(tc, chains_start_at_random_bytes);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? 1 : 0;
}
