/* SPDX-License-Identifier: MIT */
/*
 * secrets.h: real secrets (API tokens, passwords) sealed at rest.
 *
 * Each secret is a PASETO v4.local token in <dir>/secrets/NAME, encrypted
 * under <dir>/secrets.key (32 random bytes, mode 0600, made on first use)
 * with the implicit assertion {"secret":"NAME"}, so a sealed file renamed to
 * another name no longer opens. The broker dir never enters a sandbox, so
 * neither the key nor the sealed files are visible to an agent.
 */
#pragma once

#include <stddef.h>

#define BROKER_SECRET_MAX      (64 * 1024)
#define BROKER_SECRET_KEY_FILE "secrets.key"
#define BROKER_SECRETS_DIR     "secrets"

/* Seal data under name (replacing it). */
int broker_secret_store(int dirfd, const char *name, const unsigned char *data, size_t len);
/* Unseal; ret is sodium_malloc'd, NUL-terminated, free with sodium_free(). */
int broker_secret_load(int dirfd, const char *name, unsigned char **ret, size_t *ret_len);
/*
 * Is a secret stored under name? 1 yes, 0 no (nor any secrets dir), or a
 * negative errno. Unseals nothing: `cloister check` asks it of each scope.
 */
int broker_secret_is_stored(int dirfd, const char *name);
/* Sorted names; NULL-terminated, free with strv_free(). */
int broker_secret_list(int dirfd, char ***ret);
int broker_secret_remove(int dirfd, const char *name);
