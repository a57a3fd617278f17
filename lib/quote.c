/* SPDX-License-Identifier: MIT */
/*
 * quote.c: quoting agent-chosen text for a host terminal (see quote.h).
 *
 * UTF-8 is decoded strictly (no overlong forms, no surrogates, nothing past
 * U+10FFFF): a byte that does not start a valid sequence is unsafe on its
 * own, so a terminal never sees a sequence the decoder here read otherwise.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quote.h"

/*
 * The length of the valid UTF-8 sequence at p and its code point, or 0 if
 * p does not start one.
 */
static size_t utf8_decode(const unsigned char *p, uint32_t *ret)
{
        uint32_t c;
        size_t n;

        if (p[0] < 0x80) {
                *ret = p[0];
                return 1;
        }
        if (p[0] >= 0xc2 && p[0] <= 0xdf) {
                n = 2;
                c = p[0] & 0x1f;
        } else if (p[0] >= 0xe0 && p[0] <= 0xef) {
                n = 3;
                c = p[0] & 0x0f;
        } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
                n = 4;
                c = p[0] & 0x07;
        } else {
                return 0;
        }
        for (size_t i = 1; i < n; i++) {
                if ((p[i] & 0xc0) != 0x80) /* also stops at the NUL */
                        return 0;
                c = (c << 6) | (p[i] & 0x3f);
        }
        if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
            (c >= 0xd800 && c <= 0xdfff))
                return 0;
        *ret = c;
        return n;
}

/* Characters that are valid and printable-looking but drive the display. */
static bool codepoint_is_control(uint32_t c)
{
        return (c >= 0x80 && c <= 0x9f) ||     /* C1 controls: U+009B is CSI */
               c == 0x061c ||                  /* ARABIC LETTER MARK */
               c == 0x200e || c == 0x200f ||   /* LRM, RLM */
               (c >= 0x2028 && c <= 0x202e) || /* separators, LRE..RLO */
               (c >= 0x2066 && c <= 0x2069) || /* LRI..PDI */
               c == 0xfeff;                    /* zero-width no-break space */
}

/*
 * The unit at p: its length, and whether it must be escaped (*unsafe) or
 * makes a plain string ambiguous (*special: '"' and '\\' under git's rule).
 */
static size_t unit(const unsigned char *p, unsigned flags, bool *unsafe, bool *special)
{
        uint32_t c;
        size_t n;

        *unsafe = *special = false;
        if (p[0] < 0x20 || p[0] == 0x7f) {
                *unsafe = true;
                return 1;
        }
        if (p[0] == '"' || p[0] == '\\') {
                *special = !(flags & QUOTE_UTF8);
                return 1;
        }
        if (p[0] < 0x80)
                return 1;
        if (!(flags & QUOTE_UTF8)) {
                *unsafe = true;
                return 1;
        }
        n = utf8_decode(p, &c);
        if (n == 0) {
                *unsafe = true;
                return 1;
        }
        *unsafe = codepoint_is_control(c);
        return n;
}

bool quote_is_plain(const char *s, unsigned flags)
{
        const unsigned char *p = (const unsigned char *)s;

        while (*p) {
                bool unsafe, special;
                size_t n = unit(p, flags, &unsafe, &special);

                if (unsafe || (special && !(flags & QUOTE_BARE)))
                        return false;
                p += n;
        }
        return true;
}

/* The escape for one byte of an unsafe unit, into buf (at most 5 bytes). */
static size_t escape_byte(unsigned char b, char *buf)
{
        static const char named[] = {['\a'] = 'a', ['\b'] = 'b', ['\t'] = 't', ['\n'] = 'n',
                                     ['\v'] = 'v', ['\f'] = 'f', ['\r'] = 'r'};

        buf[0] = '\\';
        if (b < sizeof(named) && named[b]) {
                buf[1] = named[b];
                return 2;
        }
        buf[1] = (char)('0' + (b >> 6));
        buf[2] = (char)('0' + ((b >> 3) & 7));
        buf[3] = (char)('0' + (b & 7));
        return 4;
}

/* Write the quoted form into out, which has room for 4 * strlen(s) + 3 bytes. */
static size_t quote_into(const char *s, unsigned flags, char *out)
{
        const unsigned char *p = (const unsigned char *)s;
        bool bare = flags & QUOTE_BARE;
        size_t o = 0;

        if (!bare)
                out[o++] = '"';
        while (*p) {
                bool unsafe, special;
                size_t n = unit(p, flags, &unsafe, &special);

                if (unsafe) {
                        for (size_t i = 0; i < n; i++)
                                o += escape_byte(p[i], out + o);
                } else if (!bare && (p[0] == '"' || p[0] == '\\')) {
                        out[o++] = '\\';
                        out[o++] = (char)p[0];
                } else {
                        memcpy(out + o, p, n);
                        o += n;
                }
                p += n;
        }
        if (!bare)
                out[o++] = '"';
        out[o] = '\0';
        return o;
}

void quote_utf8_fix(char *s)
{
        unsigned char *p = (unsigned char *)s;
        uint32_t c;

        while (*p) {
                size_t n = utf8_decode(p, &c);
                if (n == 0) {
                        *p++ = '?';
                        continue;
                }
                p += n;
        }
}

bool quote_utf8_valid(const char *s, size_t len)
{
        const unsigned char *p = (const unsigned char *)s, *end = p + len;
        uint32_t c;

        while (p < end) {
                size_t n = utf8_decode(p, &c);
                if (n == 0 || n > (size_t)(end - p))
                        return false;
                p += n;
        }
        return true;
}

char *quote_dup(const char *s, unsigned flags)
{
        size_t l = strlen(s);
        char *out;

        if (quote_is_plain(s, flags))
                return strdup(s);
        if (l > (SIZE_MAX - 3) / 4)
                return NULL;
        out = malloc(4 * l + 3);
        if (out)
                quote_into(s, flags, out);
        return out;
}

int quote_fputs(FILE *out, const char *s, unsigned flags)
{
        char *q;
        int r;

        if (quote_is_plain(s, flags))
                return fputs(s, out) < 0 ? EOF : 0;
        q = quote_dup(s, flags);
        if (!q)
                return EOF;
        r = fputs(q, out) < 0 ? EOF : 0;
        free(q);
        return r;
}
