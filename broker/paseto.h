/* SPDX-License-Identifier: MIT */
/*
 * paseto.h: PASETO v4 (public and local) and the strict base64url codec it
 * needs, built on libsodium primitives only.
 *
 * v4.public signs with Ed25519 (crypto_sign_detached); v4.local encrypts with
 * XChaCha20 and authenticates with keyed BLAKE2b, exactly as the PASETO spec
 * (docs/broker-protocol.md links it) describes. Every decoder here is strict:
 * one encoding per byte string, anything else is refused before any crypto.
 *
 * Errors: -EINVAL malformed token, -EPROTONOSUPPORT wrong version or purpose,
 * -EBADMSG bad signature, tag or footer, -ENOMEM.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define BROKER_PASETO_PUBLIC_HEADER "v4.public."
#define BROKER_PASETO_LOCAL_HEADER  "v4.local."
#define BROKER_PASETO_MAX_TOKEN     8192 /* tokens we issue are < 1 KiB */

/* Strict URL-safe base64 without padding. ret is malloc'd and NUL-terminated. */
int broker_b64_encode(const void *data, size_t len, char **ret);
/* Refuses padding, bad characters and nonzero trailing bits (non-canonical input). */
int broker_b64_decode(const char *s, size_t len, unsigned char **ret, size_t *ret_len);
/* The same for key material: *ret is sodium_malloc'd (free it with sodium_free). */
int broker_b64_decode_secret(const char *s, size_t len, unsigned char **ret, size_t *ret_len);

/* Pre-Authentication Encoding of n pieces; ret is malloc'd. */
int broker_paseto_pae(const struct iovec *pieces, size_t n, unsigned char **ret, size_t *ret_len);

/* v4.public: sk is libsodium's 64-byte Ed25519 secret key. footer may be NULL. */
int broker_paseto_sign(const unsigned char sk[64], const void *msg, size_t msg_len,
                       const char *footer, const void *implicit, size_t implicit_len,
                       char **ret_token);
/*
 * The same into out (out_size bytes, at least broker_paseto_public_len()),
 * NUL-terminated: the caller chooses where the token lives.
 */
int broker_paseto_sign_to(const unsigned char sk[64], const void *msg, size_t msg_len,
                          const char *footer, const void *implicit, size_t implicit_len, char *out,
                          size_t out_size);
/* The size of a v4.public token with its NUL, for a message and footer of these lengths. */
size_t broker_paseto_public_len(size_t msg_len, size_t footer_len);
/*
 * Verify a v4.public token. expected_footer NULL accepts any footer (the
 * caller then checks it, e.g. via broker_paseto_footer()); "" requires none.
 * ret_msg is malloc'd and NUL-terminated.
 */
__attribute__((warn_unused_result)) int
broker_paseto_verify(const unsigned char pk[32], const char *token, const char *expected_footer,
                     const void *implicit, size_t implicit_len, char **ret_msg, size_t *ret_len);

/* v4.local: nonce NULL draws 32 random bytes (only tests pass one). */
int broker_paseto_encrypt(const unsigned char key[32], const unsigned char *nonce, const void *msg,
                          size_t msg_len, const char *footer, const void *implicit,
                          size_t implicit_len, char **ret_token);
/* ret_msg is sodium_malloc'd (it is a secret): free it with sodium_free(). */
__attribute__((warn_unused_result)) int
broker_paseto_decrypt(const unsigned char key[32], const char *token, const char *expected_footer,
                      const void *implicit, size_t implicit_len, unsigned char **ret_msg,
                      size_t *ret_len);

/* The decoded footer of a token (unauthenticated!), "" if none; malloc'd. */
int broker_paseto_footer(const char *token, char **ret);
