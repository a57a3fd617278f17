/* SPDX-License-Identifier: MIT */
/*
 * jsonw.c: the JSON text writer of jsonw.h.
 *
 * Escaping follows jansson's dump_string(): '"' and '\\' and the control
 * characters below 0x20 (\b \f \n \r \t by name, the rest as \u00XX), '/'
 * as is. A string with any byte of 0x80 or more is handed to jansson itself,
 * which checks that it is UTF-8 (and writes \uXXXX escapes for
 * JSON_ENSURE_ASCII): text from a policy file is not trusted to be UTF-8,
 * and the output must be exactly what jansson would have written.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonw.h"

void broker_jw_init(struct broker_jw *w, char *buf, size_t cap, size_t max, bool secret)
{
        *w = (struct broker_jw){
                .buf = buf, .cap = cap, .initial = buf, .secret = secret, .max = max};
}

void broker_jw_done(struct broker_jw *w)
{
        if (w->buf != w->initial) {
                if (w->secret)
                        sodium_free(w->buf);
                else
                        free(w->buf);
        }
        w->buf = w->initial;
        w->len = 0;
}

char *broker_jw_extend(struct broker_jw *w, size_t n)
{
        char *nb;
        size_t ncap;

        if (w->error)
                return NULL;
        if (n > w->max || w->len > w->max - n) {
                w->error = -E2BIG;
                return NULL;
        }
        if (w->len + n > w->cap) {
                ncap = w->cap ? w->cap : 256;
                while (ncap < w->len + n)
                        ncap *= 2;
                nb = w->secret ? sodium_malloc(ncap) : malloc(ncap);
                if (!nb) {
                        w->error = -ENOMEM;
                        return NULL;
                }
                if (w->len)
                        memcpy(nb, w->buf, w->len);
                if (w->secret)
                        sodium_memzero(w->buf, w->len);
                if (w->buf != w->initial)
                        w->secret ? sodium_free(w->buf) : free(w->buf);
                w->buf = nb;
                w->cap = ncap;
        }
        w->len += n;
        return w->buf + w->len - n;
}

void broker_jw_raw(struct broker_jw *w, const char *s, size_t n)
{
        char *p = broker_jw_extend(w, n);

        if (p && n)
                memcpy(p, s, n);
}

void broker_jw_lit(struct broker_jw *w, const char *s)
{
        broker_jw_raw(w, s, strlen(s));
}

/* Not plain ASCII: let jansson check and escape it. */
static void str_jansson(struct broker_jw *w, const char *s)
{
        json_t *j = json_string(s);
        char *t = j ? json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT |
                                            (w->ascii ? JSON_ENSURE_ASCII : 0))
                    : NULL;

        if (!j && !w->error)
                w->error = -EILSEQ;
        else if (!t && !w->error)
                w->error = -ENOMEM;
        if (t)
                broker_jw_lit(w, t);
        free(t);
        json_decref(j);
}

void broker_jw_str(struct broker_jw *w, const char *s)
{
        static const char hex[] = "0123456789ABCDEF";
        const unsigned char *p = (const unsigned char *)s, *run;

        for (const unsigned char *q = p; *q; q++)
                if (*q >= 0x80) {
                        str_jansson(w, s);
                        return;
                }
        broker_jw_raw(w, "\"", 1);
        for (run = p; *p; p++) {
                char esc[6] = {'\\', 0};
                size_t n = 2;

                if (*p >= 0x20 && *p != '"' && *p != '\\')
                        continue;
                broker_jw_raw(w, (const char *)run, (size_t)(p - run));
                run = p + 1;
                switch (*p) {
                case '"':
                case '\\':
                        esc[1] = (char)*p;
                        break;
                case '\b':
                        esc[1] = 'b';
                        break;
                case '\f':
                        esc[1] = 'f';
                        break;
                case '\n':
                        esc[1] = 'n';
                        break;
                case '\r':
                        esc[1] = 'r';
                        break;
                case '\t':
                        esc[1] = 't';
                        break;
                default:
                        memcpy(esc + 1, "u00", 3);
                        esc[4] = hex[*p >> 4];
                        esc[5] = hex[*p & 15];
                        n = 6;
                }
                broker_jw_raw(w, esc, n);
        }
        broker_jw_raw(w, (const char *)run, (size_t)(p - run));
        broker_jw_raw(w, "\"", 1);
}

void broker_jw_int(struct broker_jw *w, int64_t v)
{
        char b[24], *e = b + sizeof(b), *p = e;
        uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

        do {
                *--p = (char)('0' + u % 10);
                u /= 10;
        } while (u);
        if (v < 0)
                *--p = '-';
        broker_jw_raw(w, p, (size_t)(e - p));
}
