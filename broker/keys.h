/* SPDX-License-Identifier: MIT */
/*
 * keys.h: the broker's Ed25519 signing keys and their public PASERK file.
 *
 * The key file (<dir>/signing.keys, mode 0600) holds one key per line:
 *     k4.secret.<base64url(64 bytes)> CREATED RETIRED
 * CREATED and RETIRED are Unix times; RETIRED is 0 for the one current key.
 * A retired key signs nothing but its public half keeps verifying for
 * BROKER_KEY_GRACE seconds after retirement plus the longest token lifetime,
 * so tokens it signed stay valid until they expire.
 *
 * The public file (<dir>/public.paserk) lists the public keys that verify:
 *     k4.public.<base64url(32 bytes)>
 * A key's id is its PASERK id, k4.pid.<base64url(BLAKE2b-264(...))>, and is
 * the `kid` in every token's footer.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BROKER_KID_MAX     64
#define BROKER_KEYS_MAX    32
#define BROKER_KEY_FILE    "signing.keys"
#define BROKER_PUBLIC_FILE "public.paserk"

struct broker_key {
        char kid[BROKER_KID_MAX]; /* k4.pid.… */
        unsigned char pk[32];
        unsigned char *sk; /* sodium_malloc'd 64 bytes, NULL for public-only */
        int64_t created;
        int64_t retired; /* 0: the current signing key */
};

typedef struct broker_keyring broker_keyring;

/*
 * Load <dirfd>/signing.keys, creating it with one fresh key if it does not
 * exist and create is true. Refuses a key file readable or writable by group
 * or others, or owned by another user. ret_error is a malloc'd one-liner.
 */
int broker_keyring_load(int dirfd, const char *dir, bool create, broker_keyring **ret,
                        char **ret_error);
/* Load a public file (k4.public.… lines, '#' comments). */
int broker_keyring_load_public(const char *path, broker_keyring **ret, char **ret_error);
/* Parse public keys from memory (the pubkey response). */
int broker_keyring_parse_public(const char *text, broker_keyring **ret, char **ret_error);
void broker_keyring_free(broker_keyring *kr);

/*
 * Retire the current key and add a new one; drop keys retired more than
 * keep seconds ago. Rewrites the key file and the public file atomically.
 */
int broker_keyring_rotate(int dirfd, const char *dir, int64_t now, int64_t keep, char **ret_error);
/* Write the public file of kr into dirfd (atomically), leaving out keys retired
 * more than keep seconds before now. */
int broker_keyring_publish(const broker_keyring *kr, int dirfd, int64_t now, int64_t keep);
/* Public keys as text, one PASERK per line; malloc'd. */
int broker_keyring_public_text(const broker_keyring *kr, char **ret);

const struct broker_key *broker_keyring_current(const broker_keyring *kr);
const struct broker_key *broker_keyring_find(const broker_keyring *kr, const char *kid);
size_t broker_keyring_count(const broker_keyring *kr);
/* The i-th key (i < broker_keyring_count()), in the file's order: oldest first. */
const struct broker_key *broker_keyring_at(const broker_keyring *kr, size_t i);

/* "k4.public.…" and its id. */
int broker_key_paserk_public(const unsigned char pk[32], char **ret);
int broker_key_pid(const unsigned char pk[32], char ret[BROKER_KID_MAX]);
