/* SPDX-License-Identifier: MIT */
/*
 * lint.h: findings about a workspace's blueprint (its config, the broker
 * policy it names, and how they fit the host), as `cloister check` reports
 * them: one line of text each, or one JSON object each (--json).
 *
 * A finding names a file, a line (0: the file as a whole), a section and a
 * key where it has them, and a one-line reason. Its text form is the form
 * every cloister parser uses for its errors,
 *
 *     FILE:LINE: key 'x' in [section]: reason
 *
 * so that a parser's error can be taken apart into a finding and printed
 * back byte for byte.
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "lib/util.h"

enum lint_severity {
        LINT_WARNING, /* the lint's: an error only under --strict */
        LINT_ERROR,   /* invalid, missing or unusable: always fails */
};

struct lint_finding {
        enum lint_severity severity;
        char *file;    /* the file the finding is about */
        unsigned line; /* 1-based; 0: the file as a whole */
        char *section; /* e.g. "repo", "scope \"git\""; NULL: none */
        char *key;     /* NULL: the section or the line as a whole */
        char *message; /* the reason: one line, no control characters */
};

struct lint {
        struct lint_finding *findings;
        size_t n;
};

/*
 * Add a finding; an exact duplicate of one already there is dropped (the
 * config lint runs once per home directory). Control characters in any
 * field are written as \xNN, so a finding always prints as one line.
 */
int lint_add(struct lint *l, enum lint_severity sev, const char *file, unsigned line,
             const char *section, const char *key, const char *fmt, ...) _printf_(7, 8);

/*
 * Add a parser's one-line error "FILE[:LINE]: [key 'x' in ][section]: reason"
 * (config_load, broker_policy_load), taken apart into line, section, key and
 * reason. Text that does not read back exactly as that form stays whole in
 * the message, with no section or key: the split never guesses.
 */
int lint_add_error(struct lint *l, enum lint_severity sev, const char *file, const char *error);

/* "FILE[:LINE]: [key 'x' in [section]: | [section]: ]message" */
char *lint_finding_format(const struct lint_finding *f);
/* {"file","line","section","key","severity","message"}; line, section, key null if absent. */
json_t *lint_finding_json(const struct lint_finding *f, bool strict);
/* "error" or "warning"; under strict every finding is an error. */
const char *lint_severity_name(enum lint_severity sev, bool strict);

size_t lint_count(const struct lint *l, enum lint_severity sev);
void lint_done(struct lint *l);
