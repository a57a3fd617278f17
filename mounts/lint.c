/* SPDX-License-Identifier: MIT */
/*
 * lint.c: the list of findings `cloister check` collects, and their text
 * and JSON forms (lint.h).
 *
 * The fields come from files a user (or an agent's patch) wrote, so each is
 * made printable once, here: a control character in a key name must not
 * turn one finding into two lines, or move the terminal's cursor.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lint.h"
#include "lib/inifile.h"

static char *escape(const char *s, bool high)
{
        return s ? inifile_escape(s, high) : NULL;
}

static bool finding_eq(const struct lint_finding *a, const struct lint_finding *b)
{
        return a->severity == b->severity && a->line == b->line && streq(a->file, b->file) &&
               streq_ptr(a->section, b->section) && streq_ptr(a->key, b->key) &&
               streq(a->message, b->message);
}

static void finding_clear(struct lint_finding *f)
{
        free(f->file);
        free(f->section);
        free(f->key);
        free(f->message);
}

/* Add a finding whose fields are taken raw (escaped here). */
static int add_raw(struct lint *l, enum lint_severity sev, const char *file, unsigned line,
                   const char *section, const char *key, const char *message)
{
        struct lint_finding f = {.severity = sev, .line = line};
        struct lint_finding *v;

        f.file = escape(file, false);
        f.section = escape(section, false);
        f.key = escape(key, false);
        f.message = escape(message, false);
        if (!f.file || !f.message || (section && !f.section) || (key && !f.key)) {
                finding_clear(&f);
                return -ENOMEM;
        }
        for (size_t i = 0; i < l->n; i++)
                if (finding_eq(&l->findings[i], &f)) {
                        finding_clear(&f);
                        return 0;
                }
        v = realloc(l->findings, (l->n + 1) * sizeof(*v));
        if (!v) {
                finding_clear(&f);
                return -ENOMEM;
        }
        l->findings = v;
        v[l->n++] = f;
        return 0;
}

int lint_add(struct lint *l, enum lint_severity sev, const char *file, unsigned line,
             const char *section, const char *key, const char *fmt, ...)
{
        _cleanup_free_ char *msg = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&msg, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        return add_raw(l, sev, file, line, section, key, msg);
}

/* "123: " → 123 and the text after it; the digits exactly as "%u" prints them. */
static const char *line_parse(const char *s, unsigned *ret)
{
        unsigned long v = 0;
        const char *c = s;

        if (*c < '1' || *c > '9')
                return NULL;
        for (; *c >= '0' && *c <= '9'; c++) {
                v = v * 10 + (unsigned long)(*c - '0');
                if (v > 0xffffffffUL)
                        return NULL;
        }
        if (c[0] != ':' || c[1] != ' ')
                return NULL;
        *ret = (unsigned)v;
        return c + 2;
}

int lint_add_error(struct lint *l, enum lint_severity sev, const char *file, const char *error)
{
        _cleanup_free_ char *section = NULL, *key = NULL;
        const char *rest, *msg, *p, *q;
        unsigned line = 0;

        rest = startswith(error, file);
        if (!rest || rest[0] != ':')
                return add_raw(l, sev, file, 0, NULL, NULL, error);
        rest++;
        if (rest[0] == ' ')
                rest++;
        else if (!(rest = line_parse(rest, &line)))
                return add_raw(l, sev, file, 0, NULL, NULL, error);
        msg = rest;

        /*
         * "key 'K' in [S]: M" or "[S]: M". A section name never holds ']'
         * (inih ends it at the first), so "]: " ends S; a key name may hold
         * anything but '=' and ':', so if S would then hold "' in [" the key
         * did, and the text is left whole rather than split at a guess.
         */
        if ((p = startswith(rest, "key '")) && (q = strstr(p, "' in ["))) {
                const char *s = q + 6, *e = strstr(s, "]: ");
                if (e && !memmem(s, (size_t)(e - s), "' in [", 6)) {
                        key = strndup(p, (size_t)(q - p));
                        section = strndup(s, (size_t)(e - s));
                        if (!key || !section)
                                return -ENOMEM;
                        msg = e + 3;
                }
        } else if (rest[0] == '[' && (q = strstr(rest, "]: "))) {
                section = strndup(rest + 1, (size_t)(q - rest - 1));
                if (!section)
                        return -ENOMEM;
                msg = q + 3;
        }
        return add_raw(l, sev, file, line, section, key, msg);
}

char *lint_finding_format(const struct lint_finding *f)
{
        char where[16] = "";
        char *s = NULL;
        int r;

        if (f->line)
                snprintf(where, sizeof(where), ":%u", f->line);
        if (f->key && f->section)
                r = asprintf(&s, "%s%s: key '%s' in [%s]: %s", f->file, where, f->key, f->section,
                             f->message);
        else if (f->key)
                r = asprintf(&s, "%s%s: key '%s': %s", f->file, where, f->key, f->message);
        else if (f->section)
                r = asprintf(&s, "%s%s: [%s]: %s", f->file, where, f->section, f->message);
        else
                r = asprintf(&s, "%s%s: %s", f->file, where, f->message);
        return r < 0 ? NULL : s;
}

const char *lint_severity_name(enum lint_severity sev, bool strict)
{
        return sev == LINT_ERROR || strict ? "error" : "warning";
}

/* A JSON string; bytes that are not UTF-8 (jansson refuses them) as \xNN. */
static json_t *string_or_null(const char *s)
{
        json_t *j;

        if (!s)
                return json_null();
        j = json_string(s);
        if (!j) {
                _cleanup_free_ char *e = escape(s, true);
                j = e ? json_string(e) : NULL;
        }
        return j;
}

json_t *lint_finding_json(const struct lint_finding *f, bool strict)
{
        json_t *o = json_object();

        if (!o)
                return NULL;
        if (json_object_set_new(o, "file", string_or_null(f->file)) < 0 ||
            json_object_set_new(o, "line", f->line ? json_integer(f->line) : json_null()) < 0 ||
            json_object_set_new(o, "section", string_or_null(f->section)) < 0 ||
            json_object_set_new(o, "key", string_or_null(f->key)) < 0 ||
            json_object_set_new(o, "severity",
                                json_string(lint_severity_name(f->severity, strict))) < 0 ||
            json_object_set_new(o, "message", string_or_null(f->message)) < 0) {
                json_decref(o);
                return NULL;
        }
        return o;
}

size_t lint_count(const struct lint *l, enum lint_severity sev)
{
        size_t n = 0;

        for (size_t i = 0; i < l->n; i++)
                n += l->findings[i].severity == sev;
        return n;
}

void lint_done(struct lint *l)
{
        for (size_t i = 0; i < l->n; i++)
                finding_clear(&l->findings[i]);
        free(l->findings);
        *l = (struct lint){0};
}
