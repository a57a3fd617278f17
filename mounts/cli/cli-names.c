/* SPDX-License-Identifier: MIT */
/*
 * cli-names.c: quote agent-chosen names for the terminal (see cli-names.h).
 *
 * A character is kept when it is valid UTF-8 and visible: not a C0 or C1
 * control (C1 includes CSI, U+009B, which some terminals obey like ESC [),
 * not DEL, and not a bidirectional override or line separator, which can
 * make a listed name read differently from what it is. Every byte of
 * anything else is written as a three-digit octal escape, as git does, so
 * the exact bytes can still be recovered.
 */
#include <stdint.h>

#include "cli-names.h"

/* Length of the valid UTF-8 sequence at s and its code point; 0 if invalid. */
static size_t utf8_decode(const unsigned char *s, uint32_t *ret)
{
        size_t n;
        uint32_t c;

        if (s[0] < 0x80) {
                *ret = s[0];
                return 1;
        }
        if ((s[0] & 0xe0) == 0xc0) {
                n = 2;
                c = s[0] & 0x1f;
        } else if ((s[0] & 0xf0) == 0xe0) {
                n = 3;
                c = s[0] & 0x0f;
        } else if ((s[0] & 0xf8) == 0xf0) {
                n = 4;
                c = s[0] & 0x07;
        } else {
                return 0;
        }
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80) /* also stops at the NUL */
                        return 0;
                c = (c << 6) | (s[i] & 0x3f);
        }
        /* Overlong forms, surrogates and what lies beyond Unicode are not UTF-8. */
        if ((n == 2 && c < 0x80) || (n == 3 && c < 0x800) || (n == 4 && c < 0x10000) ||
            (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
                return 0;
        *ret = c;
        return n;
}

static bool visible(uint32_t c)
{
        if (c < 0x20 || (c >= 0x7f && c < 0xa0))
                return false;
        if (c == 0x200e || c == 0x200f || (c >= 0x2028 && c <= 0x202e) ||
            (c >= 0x2066 && c <= 0x2069))
                return false;
        return c != '"' && c != '\\';
}

bool cli_name_is_plain(const char *s)
{
        const unsigned char *p = (const unsigned char *)s;
        uint32_t c;

        while (*p) {
                size_t n = utf8_decode(p, &c);
                if (n == 0 || !visible(c))
                        return false;
                p += n;
        }
        return true;
}

void cli_name_print(FILE *f, const char *s)
{
        const unsigned char *p = (const unsigned char *)s;
        uint32_t c;

        if (cli_name_is_plain(s)) {
                fputs(s, f);
                return;
        }
        fputc('"', f);
        while (*p) {
                size_t n = utf8_decode(p, &c);

                if (n > 0 && visible(c)) {
                        fwrite(p, 1, n, f);
                        p += n;
                        continue;
                }
                if (n == 0)
                        n = 1; /* an invalid byte: escape it alone */
                for (size_t i = 0; i < n; i++, p++) {
                        switch (*p) {
                        case '"':
                                fputs("\\\"", f);
                                break;
                        case '\\':
                                fputs("\\\\", f);
                                break;
                        case '\n':
                                fputs("\\n", f);
                                break;
                        case '\t':
                                fputs("\\t", f);
                                break;
                        default:
                                fprintf(f, "\\%03o", *p);
                        }
                }
        }
        fputc('"', f);
}

void cli_progress_tty(const char *stage, size_t done, size_t total, void *userdata)
{
        (void)userdata;
        if (total)
                fprintf(stderr, "\rcloister: %s %zu/%zu paths", stage, done, total);
        else
                fprintf(stderr, "\rcloister: %s %zu paths", stage, done);
}
