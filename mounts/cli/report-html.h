/* SPDX-License-Identifier: MIT */
/*
 * report-html.h: `cloister report`'s page, rendered from ops_report()'s
 * data (report-html.c).
 */
#pragma once

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The page's size bound: past it sections are cut, with a note that says so. */
#define REPORT_HTML_MAX_DEFAULT (20u * 1024 * 1024)
/* A file index of more files than this is folded (closed) when the page opens. */
#define REPORT_INDEX_OPEN_MAX 500
/* Characters shown of one line of a hunk, of one value; the rest is counted. */
#define REPORT_LINE_MAX 2000

/*
 * The one escaping function: n bytes of untrusted text as HTML text (also
 * safe in a double-quoted attribute value): & < > " ' as entities; invalid
 * UTF-8 as U+FFFD; NUL, other C0 and C1 controls (an ANSI escape's ESC
 * among them), DEL, and the bidirectional controls (U+202A-U+202E,
 * U+2066-U+2069, U+200E, U+200F, U+061C) shown as visible "\x1b" or
 * "<U+202E>" text; tab and newline kept. At most max_chars characters are
 * written (0: no bound), then "… (N bytes more)". Returns the bytes written.
 */
size_t report_html_escape(FILE *out, const char *s, size_t n, size_t max_chars);

/* bytes as "16 MiB" (exact) or "1.5 GiB" (one decimal), in buf; returns buf. */
#define REPORT_SIZE_LEN 32
const char *report_html_size(uint64_t bytes, char buf[REPORT_SIZE_LEN]);

/* Render report (ops_report()) to out, at most max_bytes (0: the default). 0 or a negative errno.
 */
int report_html_write(FILE *out, json_t *report, size_t max_bytes);
