/* SPDX-License-Identifier: MIT */
/*
 * namehash.h: a file name for a key made of strings, for the indexes that
 * find a path's entry without reading the others (mounts/claims.c, the
 * remembered configs of mounts/known.c).
 */
#pragma once

#define NAMEHASH_LEN 33 /* 32 hex digits and the NUL */

/*
 * The name of (a, b, c), any of which may be "": two 64-bit FNV-1a lanes of
 * different bases. Not a cryptographic hash, so that binaries that link no
 * crypto library (`cloister run`'s) can use it: a collision must only ever
 * propose an entry more, which the caller then compares exactly. The keys
 * are the user's own paths, chosen by no agent.
 */
void namehash(const char *a, const char *b, const char *c, char out[static NAMEHASH_LEN]);
