/* SPDX-License-Identifier: MIT */
/*
 * bench-sign.c: the physical limit for the broker rows of tests/bench/run.
 *
 * A broker that issues Ed25519-signed tokens cannot go faster than
 * libsodium's crypto_sign on one core, nor verify faster than
 * crypto_sign_verify_detached. This measures both rates on this machine,
 * in the same run as the broker, over a message the size of a token's
 * pre-authentication encoding, so the broker's numbers have a yardstick.
 *
 * usage: bench-sign [SECONDS] [MESSAGE_BYTES]
 * prints: sign_per_s=N verify_per_s=N
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

static double now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs f for about `seconds`, checking the clock every 64 calls. */
static double rate_of(int (*f)(void *), void *arg, double seconds)
{
        double start = now_s(), elapsed;
        unsigned long n = 0;

        do {
                for (int i = 0; i < 64; i++)
                        if (f(arg) != 0)
                                return -1;
                n += 64;
                elapsed = now_s() - start;
        } while (elapsed < seconds);
        return (double)n / elapsed;
}

struct job {
        unsigned char pk[crypto_sign_PUBLICKEYBYTES];
        unsigned char *sk; /* sodium_malloc'd: it is a real secret key */
        unsigned char sig[crypto_sign_BYTES];
        unsigned char *msg;
        unsigned char *signed_msg;
        size_t msg_len;
};

static int do_sign(void *arg)
{
        struct job *j = arg;
        unsigned long long out_len;

        return crypto_sign(j->signed_msg, &out_len, j->msg, j->msg_len, j->sk);
}

static int do_verify(void *arg)
{
        struct job *j = arg;

        return crypto_sign_verify_detached(j->sig, j->msg, j->msg_len, j->pk);
}

int main(int argc, char **argv)
{
        double seconds = argc > 1 ? strtod(argv[1], NULL) : 2.0;
        long len = argc > 2 ? strtol(argv[2], NULL, 10) : 256;
        struct job j = {.msg_len = (size_t)len};
        double sign_rate, verify_rate;
        int r = 1;

        if (seconds <= 0 || seconds > 600 || len <= 0 || len > 1 << 20) {
                fprintf(stderr,
                        "usage: bench-sign [SECONDS (0-600)] [MESSAGE_BYTES (1-1048576)]\n");
                return 2;
        }
        if (sodium_init() < 0) {
                fprintf(stderr, "bench-sign: sodium_init failed\n");
                return 1;
        }
        j.sk = sodium_malloc(crypto_sign_SECRETKEYBYTES);
        j.msg = malloc(j.msg_len);
        j.signed_msg = malloc(j.msg_len + crypto_sign_BYTES);
        if (!j.sk || !j.msg || !j.signed_msg) {
                fprintf(stderr, "bench-sign: %s\n", strerror(ENOMEM));
                goto out;
        }
        crypto_sign_keypair(j.pk, j.sk);
        randombytes_buf(j.msg, j.msg_len);
        crypto_sign_detached(j.sig, NULL, j.msg, j.msg_len, j.sk);

        sign_rate = rate_of(do_sign, &j, seconds);
        verify_rate = rate_of(do_verify, &j, seconds);
        if (sign_rate < 0 || verify_rate < 0) {
                fprintf(stderr, "bench-sign: a libsodium call failed\n");
                goto out;
        }
        printf("sign_per_s=%.0f verify_per_s=%.0f\n", sign_rate, verify_rate);
        r = 0;
out:
        sodium_free(j.sk); /* wipes the key */
        free(j.msg);
        free(j.signed_msg);
        return r;
}
