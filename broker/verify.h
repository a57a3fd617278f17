/* SPDX-License-Identifier: MIT */
/*
 * verify.h: offline verification of broker tokens, for services.
 *
 * A service that receives a token from an agent links libcloister_broker (or
 * copies this one header and verify.c + paseto.c + keys.c) and calls
 * broker_token_verify() with the broker's public keys (<dir>/public.paserk).
 * Nothing here talks to the broker: revocation and use counts need the
 * online `introspect` request (docs/broker-protocol.md).
 *
 * Tokens are PASETO v4.public with an implicit assertion that binds them to
 * one workspace: {"workspace":"NAME"}. A token minted for workspace A never
 * verifies as one for workspace B, whatever its claims say.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "keys.h"

#define BROKER_SKEW_DEFAULT 30 /* seconds of clock skew tolerated on exp/nbf/iat */

/* Distinct results, also the exit codes of `cloister token verify`. */
enum broker_verify_result {
        BROKER_VERIFY_OK = 0,
        BROKER_VERIFY_MALFORMED = 3,     /* not a v4.public token, bad encoding */
        BROKER_VERIFY_UNKNOWN_KEY = 4,   /* footer kid names no key we have */
        BROKER_VERIFY_BAD_SIGNATURE = 5, /* forged, altered, or other workspace */
        BROKER_VERIFY_BAD_CLAIMS = 6,    /* a claim is missing or ill-formed */
        BROKER_VERIFY_EXPIRED = 7,
        BROKER_VERIFY_NOT_YET_VALID = 8, /* nbf (or iat) in the future */
        BROKER_VERIFY_WRONG_AUDIENCE = 9,
        BROKER_VERIFY_WRONG_SCOPE = 10,
};

struct broker_verify_opts {
        const char *workspace; /* required: the implicit assertion */
        const char *audience;  /* NULL: any */
        const char *scope;     /* NULL: any */
        int64_t now;           /* Unix time to check against; tests inject it */
        int64_t skew;          /* seconds; BROKER_SKEW_DEFAULT is the usual choice */
};

struct broker_claims {
        char *iss, *sub, *aud, *scope, *jti, *kid;
        int64_t iat, nbf, exp;
};

void broker_claims_done(struct broker_claims *c);

/*
 * Verify token. Returns a broker_verify_result (>= 0) or a negative errno on
 * internal failure (out of memory). reason gets a one-line explanation
 * (never the token). On BROKER_VERIFY_OK, claims (if not NULL) is filled;
 * free it with broker_claims_done().
 */
__attribute__((warn_unused_result)) int broker_token_verify(const broker_keyring *kr,
                                                            const char *token,
                                                            const struct broker_verify_opts *opts,
                                                            struct broker_claims *claims,
                                                            char *reason, size_t reason_size);

/* The implicit assertion for a workspace, {"workspace":"NAME"}; malloc'd. */
int broker_token_implicit(const char *workspace, char **ret);

/* RFC 3339 / ISO 8601 times as PASETO wants them: "2026-01-02T03:04:05Z". */
int broker_time_format(int64_t t, char *buf, size_t size);
int broker_time_parse(const char *s, int64_t *ret);
