/* SPDX-License-Identifier: MIT */
/*
 * test-paseto-vectors.c: the 17 official PASETO v4 test vectors
 * (tests/broker/vectors/paseto-v4.json, in the tree: its README names the
 * source and the licence), with the spec's keys.
 *
 * Encryption vectors must produce the token byte for byte from the given
 * nonce and decrypt back; signature vectors must sign to the same token
 * (Ed25519 is deterministic) and verify; expected failures must fail with
 * the key the vector gives. The vectors missing is a failure, never a
 * skip: every clone has them.
 */
#include <check.h>
#include <stdbool.h>
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "paseto.h"

static json_t *vectors;

static void hex(const char *h, unsigned char *out, size_t n)
{
        size_t len = 0;

        ck_assert_msg(h && sodium_hex2bin(out, n, h, strlen(h), NULL, &len, NULL) == 0 && len == n,
                      "bad hex");
}

static const char *str(json_t *t, const char *k)
{
        json_t *v = json_object_get(t, k);
        return json_is_string(v) ? json_string_value(v) : NULL;
}

START_TEST(official_v4_vector_passes)
{
        json_t *t = json_array_get(json_object_get(vectors, "tests"), (size_t)_i);
        const char *name = str(t, "name"), *token = str(t, "token"), *footer = str(t, "footer");
        const char *ia = str(t, "implicit-assertion"), *payload = str(t, "payload");
        bool expect_fail = json_is_true(json_object_get(t, "expect-fail"));
        size_t ia_len = ia ? strlen(ia) : 0;
        int r;

        ck_assert_ptr_nonnull(name);
        ck_assert_ptr_nonnull(token);
        if (str(t, "public-key")) {
                unsigned char pk[32], sk[64];
                char *msg = NULL, *again = NULL;

                hex(str(t, "public-key"), pk, sizeof(pk));
                r = broker_paseto_verify(pk, token, footer ? footer : "", ia, ia_len, &msg, NULL);
                if (expect_fail) {
                        ck_assert_msg(r < 0, "%s: must fail, but verified", name);
                        return;
                }
                ck_assert_msg(r == 0, "%s: verify failed: %s", name, strerror(-r));
                ck_assert_str_eq(msg, payload);
                hex(str(t, "secret-key"), sk, sizeof(sk));
                r = broker_paseto_sign(sk, payload, strlen(payload), footer, ia, ia_len, &again);
                ck_assert_int_eq(r, 0);
                ck_assert_str_eq(again, token);
                free(msg);
                free(again);
        } else {
                unsigned char key[32], nonce[32], *msg = NULL;
                char *again = NULL;
                size_t len = 0;

                hex(str(t, "key"), key, sizeof(key));
                r = broker_paseto_decrypt(key, token, footer ? footer : "", ia, ia_len, &msg, &len);
                if (expect_fail) {
                        ck_assert_msg(r < 0, "%s: must fail, but decrypted", name);
                        return;
                }
                ck_assert_msg(r == 0, "%s: decrypt failed: %s", name, strerror(-r));
                ck_assert_uint_eq(len, strlen(payload));
                ck_assert_mem_eq(msg, payload, len);
                hex(str(t, "nonce"), nonce, sizeof(nonce));
                r = broker_paseto_encrypt(key, nonce, payload, strlen(payload), footer, ia, ia_len,
                                          &again);
                ck_assert_int_eq(r, 0);
                ck_assert_str_eq(again, token);
                sodium_free(msg);
                free(again);
        }
}
END_TEST

START_TEST(all_seventeen_vectors_are_present_with_five_failures)
{
        json_t *tests = json_object_get(vectors, "tests"), *t;
        size_t i, fails = 0;

        ck_assert_uint_eq(json_array_size(tests), 17);
        json_array_foreach (tests, i, t)
                fails += json_is_true(json_object_get(t, "expect-fail"));
        ck_assert_uint_eq(fails, 5);
}
END_TEST

int main(void)
{
        const char *src = getenv("CLOISTER_SRC");
        char path[4096];
        json_error_t err;
        SRunner *sr;
        Suite *s;
        TCase *tc;
        int failed;

        if (sodium_init() < 0)
                return 1;
        snprintf(path, sizeof(path), "%s/tests/broker/vectors/paseto-v4.json", src ? src : ".");
        vectors = json_load_file(path, 0, &err);
        if (!vectors) {
                printf("no PASETO vectors at %s (%s)\n", path, err.text);
                return 1;
        }
        s = suite_create("paseto-vectors");
        tc = tcase_create("v4");
        tcase_add_test(tc, all_seventeen_vectors_are_present_with_five_failures);
        tcase_add_loop_test(tc, official_v4_vector_passes, 0,
                            (int)json_array_size(json_object_get(vectors, "tests")));
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        json_decref(vectors);
        return failed ? 1 : 0;
}
