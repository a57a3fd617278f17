/* SPDX-License-Identifier: MIT */
/*
 * bench-verify.c: offline token verification rate, for tests/bench/run.
 *
 * A service checks a broker token with broker_token_verify() (broker/verify.h)
 * and the broker's public keys, without a round trip to the broker. This
 * calls it in a loop on one token for a fixed time, so the bench can set the
 * library's rate beside libsodium's raw crypto_sign_verify_detached: the
 * difference is the cost of decoding, PAE and claim checks.
 *
 * usage: bench-verify PUBLIC_PASERK_FILE WORKSPACE SECONDS < TOKEN
 * prints: verify_per_s=N
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "verify.h"

static double now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
        struct broker_verify_opts opts = {.skew = BROKER_SKEW_DEFAULT};
        broker_keyring *kr = NULL;
        char token[8192], reason[256], *error = NULL;
        double seconds, start, elapsed;
        unsigned long n = 0;
        int r;

        if (argc != 4 || (seconds = strtod(argv[3], NULL)) <= 0 || seconds > 600) {
                fprintf(stderr,
                        "usage: bench-verify PUBLIC_PASERK_FILE WORKSPACE SECONDS < TOKEN\n");
                return 2;
        }
        if (!fgets(token, sizeof(token), stdin)) {
                fprintf(stderr, "bench-verify: no token on stdin\n");
                return 2;
        }
        token[strcspn(token, "\r\n")] = '\0';
        r = broker_keyring_load_public(argv[1], &kr, &error);
        if (r < 0) {
                fprintf(stderr, "bench-verify: %s\n",
                        error ? error : "cannot load the public keys");
                free(error);
                return 1;
        }
        opts.workspace = argv[2];
        opts.now = (int64_t)time(NULL);

        start = now_s();
        do {
                for (int i = 0; i < 16; i++) {
                        r = broker_token_verify(kr, token, &opts, NULL, reason, sizeof(reason));
                        if (r != BROKER_VERIFY_OK) {
                                fprintf(stderr, "bench-verify: the token does not verify: %s\n",
                                        reason);
                                broker_keyring_free(kr);
                                return 1;
                        }
                }
                n += 16;
                elapsed = now_s() - start;
        } while (elapsed < seconds);
        printf("verify_per_s=%.0f\n", (double)n / elapsed);
        broker_keyring_free(kr);
        return 0;
}
