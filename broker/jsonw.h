/* SPDX-License-Identifier: MIT */
/*
 * jsonw.h: write JSON text straight into a buffer, byte for byte as
 * jansson's json_dumps() would (JSON_COMPACT, optionally JSON_ENSURE_ASCII).
 *
 * Why: issuing a token used to build three jansson trees (claims, audit
 * entry, response) and dump each of them, which cost more instructions than
 * the Ed25519 signature. The hot path writes the same text directly; the
 * rest of the broker keeps using jansson. The caller writes keys in the
 * order jansson would (sorted where it asks for JSON_SORT_KEYS).
 *
 * A writer starts on a buffer the caller owns and grows into memory of its
 * own when that is full: sodium_malloc'd if it is a secret writer (the text
 * holds a token), malloc'd otherwise. Errors are sticky: check w->error once
 * at the end.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct broker_jw {
        char *buf;
        size_t len, cap;
        char *initial; /* the caller's buffer: never freed here */
        bool secret;   /* grow into sodium_malloc'd memory and wipe what is left */
        bool ascii;    /* JSON_ENSURE_ASCII */
        int error;     /* 0, -ENOMEM, -E2BIG (past max), -EILSEQ (a string not UTF-8) */
        size_t max;    /* the largest text allowed */
};

void broker_jw_init(struct broker_jw *w, char *buf, size_t cap, size_t max, bool secret);
/* Free what the writer allocated (wiping it if secret). The caller's buffer stays. */
void broker_jw_done(struct broker_jw *w);
/* n more bytes at the end, or NULL (w->error set); the caller fills them in. */
char *broker_jw_extend(struct broker_jw *w, size_t n);
void broker_jw_raw(struct broker_jw *w, const char *s, size_t n);
void broker_jw_lit(struct broker_jw *w, const char *s);
/* A JSON string, quoted and escaped. */
void broker_jw_str(struct broker_jw *w, const char *s);
void broker_jw_int(struct broker_jw *w, int64_t v);
