/* SPDX-License-Identifier: MIT */
/*
 * ops-text.c: ops_json_text(), the agent's bytes (paths, command lines,
 * output) as JSON text (operations.h). Its own file because the run
 * record (ops-runlog.c), which the `cloister` binary links, needs it
 * without the rest of ops-run.c.
 */
#include <stdlib.h>
#include <string.h>

#include "operations.h"
#include "lib/util.h"

/* The length of the valid UTF-8 sequence at p (n bytes left), or 0. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
        size_t len;
        uint32_t cp;

        if (p[0] < 0x80)
                return 1;
        len = (p[0] >> 5) == 6 ? 2 : (p[0] >> 4) == 14 ? 3 : (p[0] >> 3) == 30 ? 4 : 0;
        if (!len || len > n)
                return 0;
        cp = p[0] & (0x7f >> len);
        for (size_t i = 1; i < len; i++) {
                if ((p[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (p[i] & 0x3f);
        }
        /* No overlong forms, no surrogates, nothing past U+10FFFF. */
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
                return 0;
        return len;
}

/* Text for JSON: jansson takes only valid UTF-8 (and no NUL in the middle
 * of a C string): an invalid byte becomes U+FFFD, a NUL a space. */
json_t *ops_json_text(const char *p, size_t n)
{
        const unsigned char *u = (const unsigned char *)p;
        _cleanup_free_ char *fixed = malloc(3 * n + 1);
        char *o = fixed;

        if (!fixed)
                return NULL;
        for (size_t i = 0; i < n;) {
                size_t len = u[i] ? utf8_seq(u + i, n - i) : 0;
                if (len) {
                        memcpy(o, p + i, len);
                        o += len;
                        i += len;
                } else {
                        if (u[i] == 0) {
                                *o++ = ' ';
                        } else {
                                memcpy(o, "\xef\xbf\xbd", 3);
                                o += 3;
                        }
                        i++;
                }
        }
        return json_stringn(fixed, (size_t)(o - fixed));
}
