/* SPDX-License-Identifier: MIT */
/*
 * quote.h: the one way cloister prints text that an agent chose (file
 * names, symlink targets, commit subjects, authors and messages, journal
 * fields, broker scopes) to a host terminal or into a review.
 *
 * A string that holds only safe characters is printed as it is. Otherwise
 * it is double-quoted with C escapes, the way git quotes paths
 * (core.quotePath): \" \\ \a \b \t \n \v \f \r, and three octal digits for
 * every other unsafe byte. So one string stays one line; no escape
 * sequence reaches the terminal (C0 controls, DEL, C1 controls such as
 * U+009B CSI); no bidirectional control reorders what follows it (the
 * "Trojan Source" characters U+202A-U+202E, U+2066-U+2069, U+200E, U+200F,
 * U+061C, and U+2028, U+2029, U+FEFF); and the original bytes can be read
 * back from the quoted form.
 *
 * Unsafe, by mode:
 *   default       git's rule for paths: bytes below 0x20, DEL, every byte
 *                 from 0x80, and '"' and '\\' themselves (which would make
 *                 a plain string look quoted);
 *   QUOTE_UTF8    text for people (subjects, names): valid UTF-8 that is
 *                 printable passes, '"' and '\\' too; controls, invalid
 *                 UTF-8 and the characters above are escaped;
 *   QUOTE_BARE    (with either) no surrounding quotes, '"' and '\\' left
 *                 alone: for a string inside a longer message, where the
 *                 escapes only have to keep the terminal safe.
 */
#pragma once

#include <stdbool.h>
#include <stdio.h>

enum {
        QUOTE_UTF8 = 1 << 0,
        QUOTE_BARE = 1 << 1,
};

/* True if s prints as it is under these flags. */
bool quote_is_plain(const char *s, unsigned flags);

/* Print s, quoted if it needs it. Returns 0, or EOF if writing failed. */
int quote_fputs(FILE *out, const char *s, unsigned flags);

/* s quoted if it needs it, malloc'd; NULL if out of memory. */
char *quote_dup(const char *s, unsigned flags);

/*
 * Make s valid UTF-8 in place: every byte that is not part of a valid
 * sequence becomes '?'. For a message that snprintf's "%.Ns", or the end of
 * its buffer, may have cut in the middle of an agent's character: jansson
 * refuses such a string, and a JSON object that holds it is never made.
 */
void quote_utf8_fix(char *s);

/*
 * Is s[0..len) UTF-8, strictly: no overlong form, no surrogate, nothing past
 * U+10FFFF, no 5- or 6-byte form (which glibc's iconv still takes)? A
 * sequence is read up to its end or a NUL, so s[len] must be readable (a
 * NUL-terminated string).
 */
bool quote_utf8_valid(const char *s, size_t len);
