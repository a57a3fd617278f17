/* SPDX-License-Identifier: MIT */
/*
 * report-html.c: `cloister report`'s page (report-html.h): one
 * self-contained HTML file that a reviewer opens from disk.
 *
 * Trust: nearly every string on the page is the agent's (paths, file
 * contents, command lines, hosts, paths of requests). All of it goes
 * through report_html_escape(), the one escaping function, and only into
 * element text or a double-quoted attribute (an SVG <title>); never into a
 * URL, a style, a script or an attribute name. The page has no script at
 * all and no link, loads nothing, and says so to the browser too: a
 * Content-Security-Policy of default-src 'none' (inline styles and data:
 * images only). Sections fold with <details>.
 *
 * Bounded: every value at REPORT_LINE_MAX characters, every list at the
 * data's bounds (ops_report()), and the whole page at max_bytes: past it,
 * the rest of a section is left out with a visible note.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h> /* INFINITY, a constant: no libm */
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "report-html.h"
#include "lib/util.h"

struct page {
        FILE *f;
        size_t max, room; /* room: what the sections may still write */
        bool cut;         /* a section was cut for the page's bound */
};

static void put(struct page *p, const char *s)
{
        fputs(s, p->f);
}

_printf_(2, 3) static void putf(struct page *p, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vfprintf(p->f, fmt, ap);
        va_end(ap);
}

/* The length of the valid UTF-8 sequence at u (n bytes left) and its code point, or 0. */
static size_t utf8_decode(const unsigned char *u, size_t n, uint32_t *ret)
{
        size_t len;
        uint32_t cp;

        if (u[0] < 0x80) {
                *ret = u[0];
                return 1;
        }
        len = (u[0] >> 5) == 6 ? 2 : (u[0] >> 4) == 14 ? 3 : (u[0] >> 3) == 30 ? 4 : 0;
        if (!len || len > n)
                return 0;
        cp = u[0] & (0x7f >> len);
        for (size_t i = 1; i < len; i++) {
                if ((u[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (u[i] & 0x3f);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
                return 0;
        *ret = cp;
        return len;
}

static bool is_bidi_control(uint32_t cp)
{
        return (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200e ||
               cp == 0x200f || cp == 0x061c;
}

size_t report_html_escape(FILE *out, const char *s, size_t n, size_t max_chars)
{
        const unsigned char *u = (const unsigned char *)s;
        size_t i = 0, chars = 0, w = 0;
        int k;

        while (i < n) {
                uint32_t cp = 0;
                size_t len = utf8_decode(u + i, n - i, &cp);

                if (max_chars && chars >= max_chars) {
                        k = fprintf(out, "\xe2\x80\xa6 (%zu bytes more)", n - i);
                        return w + (k > 0 ? (size_t)k : 0);
                }
                chars++;
                if (!len) {
                        fputs("\xef\xbf\xbd", out); /* U+FFFD for an invalid byte */
                        w += 3;
                        i++;
                        continue;
                }
                switch (cp) {
                case '&':
                        fputs("&amp;", out), w += 5;
                        break;
                case '<':
                        fputs("&lt;", out), w += 4;
                        break;
                case '>':
                        fputs("&gt;", out), w += 4;
                        break;
                case '"':
                        fputs("&quot;", out), w += 6;
                        break;
                case '\'':
                        fputs("&#39;", out), w += 5;
                        break;
                case '\n':
                case '\t':
                        fputc((int)cp, out), w++;
                        break;
                default:
                        if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) {
                                k = fprintf(out, "\\x%02" PRIx32, cp);
                                w += k > 0 ? (size_t)k : 0;
                        } else if (is_bidi_control(cp)) {
                                k = fprintf(out, "&lt;U+%04" PRIX32 "&gt;", cp);
                                w += k > 0 ? (size_t)k : 0;
                        } else {
                                fwrite(u + i, 1, len, out);
                                w += len;
                        }
                }
                i += len;
        }
        return w;
}

static void text(struct page *p, const char *s)
{
        if (s)
                report_html_escape(p->f, s, strlen(s), REPORT_LINE_MAX);
}

static void text_json(struct page *p, json_t *v)
{
        if (json_is_string(v))
                report_html_escape(p->f, json_string_value(v), json_string_length(v),
                                   REPORT_LINE_MAX);
        else if (json_is_null(v) || !v)
                put(p, "\xe2\x80\x94");
        else {
                _cleanup_free_ char *d = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
                text(p, d);
        }
}

static const char *str(json_t *o, const char *k)
{
        return json_string_value(json_object_get(o, k));
}

static int64_t num(json_t *o, const char *k)
{
        return (int64_t)json_number_value(json_object_get(o, k));
}

static void when(struct page *p, double unix_s)
{
        char buf[32];
        struct tm tm;
        time_t t = (time_t)unix_s;

        if (unix_s <= 0) {
                put(p, "\xe2\x80\x94");
                return;
        }
        gmtime_r(&t, &tm);
        strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%SZ", &tm);
        put(p, buf);
}

/* Is there room for more of a section? If not, say so once, here. */
static bool room(struct page *p)
{
        long at = ftell(p->f);

        if (at >= 0 && (size_t)at < p->room)
                return true;
        if (!p->cut)
                put(p, "<p class=\"cut\">The rest of this section is left out: the report "
                       "reached its size bound.</p>");
        p->cut = true;
        return false;
}

static void verdict(struct page *p, bool good, const char *what, const char *detail)
{
        putf(p, "<li class=\"%s\">%s ", good ? "good" : "bad",
             good ? "\xe2\x9c\x93" : "\xe2\x9c\x97");
        text(p, what);
        if (detail) {
                put(p, ": ");
                text(p, detail);
        }
        put(p, "</li>\n");
}

/*
 * A size as a person reads it, in binary units: "16 MiB" when exact, else
 * "1.5 GiB" (one decimal), "512 B" below a KiB. --json keeps the bytes.
 */
const char *report_html_size(uint64_t bytes, char buf[REPORT_SIZE_LEN])
{
        static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
        size_t u = 0;

        while (u + 1 < ELEMENTSOF(unit) && bytes >= (1ull << (10 * (u + 1))))
                u++;
        if (u == 0 || bytes % (1ull << (10 * u)) == 0)
                snprintf(buf, REPORT_SIZE_LEN, "%" PRIu64 " %s", bytes >> (10 * u), unit[u]);
        else
                snprintf(buf, REPORT_SIZE_LEN, "%.1f %s",
                         (double)bytes / (double)(1ull << (10 * u)), unit[u]);
        return buf;
}

/* One of status's limits or counts: sizes in units, the timeout in seconds, counts as they are. */
static void limit_value(struct page *p, const char *key, json_t *v)
{
        static const char *const sizes[] = {"bytes",  "memory", "journal",    "audit",     "netlog",
                                            "runlog", "tmp",    "bytes_used", "tree_cache"};
        char buf[REPORT_SIZE_LEN];

        if (!json_is_integer(v) || json_integer_value(v) < 0) {
                text_json(p, v);
                return;
        }
        for (size_t i = 0; i < ELEMENTSOF(sizes); i++)
                if (streq(key, sizes[i])) {
                        put(p, report_html_size((uint64_t)json_integer_value(v), buf));
                        return;
                }
        if (streq(key, "timeout"))
                putf(p, "%" PRId64 " s", (int64_t)json_integer_value(v));
        else
                text_json(p, v);
}

static void chain_verdict(struct page *p, json_t *v, const char *name)
{
        char what[128];

        if (!json_is_true(json_object_get(v, "present"))) {
                snprintf(what, sizeof(what), "%s: none (nothing to check)", name);
                verdict(p, true, what, NULL);
                return;
        }
        snprintf(what, sizeof(what), "%s chain %s (%" PRId64 " lines)", name,
                 json_is_true(json_object_get(v, "verified")) ? "verified" : "DOES NOT VERIFY",
                 num(v, "lines"));
        verdict(p, json_is_true(json_object_get(v, "verified")), what, str(v, "error"));
}

static void summary(struct page *p, json_t *r)
{
        json_t *v = json_object_get(r, "verdicts"), *st = json_object_get(r, "status");
        json_t *runs = json_object_get(json_object_get(r, "runs"), "runs");
        json_t *stat = json_object_get(json_object_get(r, "changes"), "stat");
        json_t *j = json_object_get(r, "journal");
        char buf[256];
        const char *k;
        json_t *x;

        put(p, "<section><h2>Summary</h2>\n<table class=\"kv\">");
        put(p, "<tr><th>Workspace</th><td>");
        text(p, str(r, "workspace"));
        put(p, "</td></tr><tr><th>Repository</th><td>");
        text(p, str(r, "repo"));
        put(p, " at ");
        text(p, str(r, "rev"));
        put(p, "</td></tr><tr><th>Report made</th><td>");
        when(p, (double)num(r, "generated_unix"));
        if (json_object_get(r, "since") && !json_is_null(json_object_get(r, "since"))) {
                put(p, "</td></tr><tr><th>Since checkpoint</th><td>");
                text(p, str(json_object_get(r, "since"), "checkpoint"));
                put(p, " (");
                when(p, json_number_value(json_object_get(json_object_get(r, "since"), "time")));
                put(p, "; the commands, changes, writes and log lines are those since)");
        }
        put(p, "</td></tr><tr><th>Image</th><td>");
        text(p, json_is_string(json_object_get(st, "image")) ? str(st, "image")
                                                             : "none: the host's /usr");
        put(p, "</td></tr><tr><th>Network</th><td>");
        text_json(p, json_object_get(st, "network"));
        put(p, "</td></tr>");
        json_object_foreach (json_object_get(st, "limits"), k, x) {
                put(p, "<tr><th>Limit ");
                text(p, k);
                put(p, "</th><td>");
                limit_value(p, k, x);
                put(p, "</td></tr>");
        }
        /* What is used of bytes and files (known while mounted: the daemon counts). */
        static const char *const used[] = {"bytes_used", "files_used", "runs_live"};
        for (size_t u = 0; u < ELEMENTSOF(used); u++) {
                if (!json_object_get(st, used[u]))
                        continue;
                put(p, "<tr><th>");
                text(p, used[u]);
                put(p, "</th><td>");
                limit_value(p, used[u], json_object_get(st, used[u]));
                put(p, "</td></tr>");
        }
        put(p,
            "</table>\n<h3>Verdicts, checked as this report was made</h3><ul class=\"verdicts\">");
        chain_verdict(p, json_object_get(v, "audit_chain"), "audit log");
        chain_verdict(p, json_object_get(v, "net_chain"), "network log");
        chain_verdict(p, json_object_get(v, "runs_chain"), "run record");
        verdict(p, json_is_true(json_object_get(j, "complete")),
                json_is_true(json_object_get(j, "complete")) ? "journal complete"
                                                             : "journal NOT complete",
                str(j, "detail"));
        snprintf(buf, sizeof(buf), "%" PRId64 " request(s) refused", num(v, "requests_refused"));
        verdict(p, num(v, "requests_refused") == 0, buf, NULL);
        snprintf(buf, sizeof(buf),
                 "%zu command(s) run, %" PRId64 " file(s) changed (+%" PRId64 " -%" PRId64
                 "), %" PRId64 " journal entries",
                 json_array_size(runs), num(stat, "changed"), num(stat, "insertions"),
                 num(stat, "deletions"), num(j, "entries"));
        verdict(p, true, buf, NULL);
        put(p, "</ul></section>\n");
}

/* The index of the first write at or after t (writes are in time order). */
static size_t first_at(json_t *writes, double t)
{
        size_t lo = 0, hi = json_array_size(writes);

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (json_number_value(json_object_get(json_array_get(writes, mid), "time")) < t)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo;
}

static void commands(struct page *p, json_t *r)
{
        json_t *runs = json_object_get(json_object_get(r, "runs"), "runs"), *run, *w;
        json_t *writes = json_object_get(json_object_get(r, "journal"), "writes");
        size_t i, j;

        putf(p, "<section><details open><summary><h2>Commands (%zu)</h2></summary>\n",
             json_array_size(runs));
        put(p, "<table><tr><th>#</th><th>Started</th><th>From</th><th>Exit</th><th>Time</th>"
               "<th>Command</th><th>Files written</th></tr>\n");
        json_array_foreach (runs, i, run) {
                double s = (double)num(run, "start_ms") / 1000.0,
                       e = (double)num(run, "end_ms") / 1000.0;
                bool ended = json_is_true(json_object_get(run, "ended"));
                size_t n = 0;

                if (!room(p))
                        break;
                putf(p, "<tr id=\"run%zu\"><td>%zu</td><td>", i + 1, i + 1);
                when(p, s);
                put(p, "</td><td>");
                text(p, str(run, "source"));
                if (!ended)
                        put(p, "</td><td class=\"bad\">no end");
                else if (json_is_integer(json_object_get(run, "signal")))
                        putf(p, "</td><td class=\"bad\">signal %" PRId64, num(run, "signal"));
                else
                        putf(p, "</td><td class=\"%s\">%" PRId64,
                             num(run, "exit_code") ? "bad" : "good", num(run, "exit_code"));
                if (json_is_true(json_object_get(run, "timed_out")))
                        put(p, " (timed out)");
                put(p, "</td><td>");
                if (ended)
                        putf(p, "%.1fs", e - s);
                put(p, "</td><td><code>");
                json_array_foreach (json_object_get(run, "argv"), j, w) {
                        if (j)
                                put(p, " ");
                        put(p, "<span class=\"w\">");
                        text_json(p, w);
                        put(p, "</span>");
                }
                put(p, "</code><div class=\"meta\">in ");
                text_json(p, json_object_get(run, "cwd"));
                putf(p, "; pid %" PRId64 ", runner %" PRId64, num(run, "pid"),
                     num(run, "runner_pid"));
                if (str(run, "error")) {
                        put(p, "; nothing ran: ");
                        text(p, str(run, "error"));
                }
                if (str(run, "cgroup")) {
                        put(p, "; cgroup ");
                        text(p, str(run, "cgroup"));
                }
                put(p, "</div></td><td>");
                /*
                 * The files it wrote: the journal's entries in its span (in
                 * time order: the first found by bisection) that the report
                 * joined to it ("run", by cgroup or by time: ops-trace.c).
                 */
                size_t exact = 0;
                for (j = first_at(writes, s); j < json_array_size(writes); j++) {
                        w = json_array_get(writes, j);
                        double t = json_number_value(json_object_get(w, "time"));
                        if (ended && t > e + 0.001)
                                break;
                        if (json_is_integer(json_object_get(w, "run")) &&
                            num(w, "run") != (int64_t)i + 1)
                                continue;
                        exact += streq_ptr(str(w, "join"), "cgroup");
                        if (n++ < 20) {
                                put(p, "<div>");
                                text(p, str(w, "op"));
                                put(p, " ");
                                text(p, str(w, "path"));
                                put(p, "</div>");
                        }
                }
                if (n > 20)
                        putf(p, "<div>\xe2\x80\xa6 %zu more</div>", n - 20);
                if (n)
                        putf(p, "<div class=\"meta\">%s</div>",
                             exact == n ? "joined by its cgroup"
                             : exact    ? "joined by its cgroup, some by time"
                                        : "joined by time: what was written while it ran");
                put(p, "</td></tr>\n");
        }
        put(p, "</table></details></section>\n");
}

/* A list of run numbers, as the Commands table numbers them: "#2 #5"; a dash for none. */
static void run_list(struct page *p, json_t *runs)
{
        json_t *n;
        size_t i;

        if (!json_array_size(runs)) {
                put(p, "\xe2\x80\x94");
                return;
        }
        json_array_foreach (runs, i, n)
                putf(p, "%s#%" PRId64, i ? " " : "", (int64_t)json_integer_value(n));
}

/* How an attribution's commands were joined to the writes ("join", ops-trace.c). */
static void join_note(struct page *p, json_t *o)
{
        const char *join = str(o, "join");

        if (streq_ptr(join, "cgroup"))
                put(p, " (by its cgroup)");
        else if (streq_ptr(join, "time"))
                put(p, " (by time: the command running then)");
        else if (streq_ptr(join, "mixed"))
                put(p, " (by cgroup, and some by time)");
}

/* The line after a hunk's "@@": the commands that wrote it, and how that is known. */
static void hunk_writers(struct page *p, json_t *h)
{
        const char *how = str(h, "traced");

        put(p, "<span class=\"who\">");
        if (streq_ptr(how, "bytes")) {
                put(p, "written by ");
                run_list(p, json_object_get(h, "runs"));
                join_note(p, h);
        } else if (streq_ptr(how, "file")) {
                put(p, "bytes not traced; the file was written by ");
                run_list(p, json_object_get(h, "runs"));
                join_note(p, h);
        } else {
                put(p, "no command of the run record wrote it");
        }
        put(p, "</span>\n");
}

/* A unified patch, file by file, each in its own <details>. */
static void changes(struct page *p, json_t *r)
{
        json_t *ch = json_object_get(r, "changes"), *stat = json_object_get(ch, "stat");
        json_t *patch = json_object_get(json_object_get(ch, "patch"), "patch"), *f, *l;
        const char *s = json_string_value(patch), *end;
        size_t i;

        putf(p,
             "<section><details open><summary><h2>Changes (%" PRId64 " files, +%" PRId64
             " -%" PRId64 ")</h2></summary>\n",
             num(stat, "changed"), num(stat, "insertions"), num(stat, "deletions"));
        /* A long index is folded: the page opens at once, and the reader unfolds it. */
        putf(p,
             "<details%s class=\"index\"><summary>File index (%zu files)</summary>\n"
             "<table><tr><th>File</th><th>Status</th><th>+</th><th>-</th><th>Written by "
             "command</th></tr>\n",
             json_array_size(json_object_get(stat, "files")) <= REPORT_INDEX_OPEN_MAX ? " open"
                                                                                      : "",
             json_array_size(json_object_get(stat, "files")));
        json_array_foreach (json_object_get(stat, "files"), i, f) {
                if (!room(p))
                        break;
                put(p, "<tr><td><code>");
                text(p, str(f, "path"));
                put(p, "</code></td><td>");
                text(p, str(f, "status"));
                if (json_is_true(json_object_get(f, "binary")))
                        put(p, " (binary)");
                putf(p,
                     "</td><td class=\"add\">%" PRId64 "</td><td class=\"del\">%" PRId64
                     "</td><td>",
                     num(f, "added"), num(f, "removed"));
                run_list(p, json_object_get(f, "runs"));
                put(p, "</td></tr>\n");
        }
        put(p, "</table></details>\n");
        json_t *lo = json_object_get(stat, "left_out");
        if (json_array_size(lo)) {
                put(p, "<h3>Left out of the patch</h3><ul>");
                json_array_foreach (lo, i, l) {
                        put(p, "<li><code>");
                        text(p, str(l, "path"));
                        put(p, "</code>: ");
                        text(p, str(l, "detail") ?: str(l, "reason"));
                        put(p, "</li>");
                }
                if (num(stat, "left_out_more"))
                        putf(p, "<li>and %" PRId64 " more</li>", num(stat, "left_out_more"));
                put(p, "</ul>\n");
        }
        if (num(stat, "ignored"))
                putf(p, "<p>%" PRId64 " path(s) left out by the ignore rules.</p>\n",
                     num(stat, "ignored"));
        /*
         * The hunks: the patch cut at each "diff --git", the k-th section
         * the stat's k-th file (one diff gave both), its "@@" lines its
         * hunks, each followed by the commands that wrote it; a section
         * whose "@@" lines are not its file's hunks gets none.
         */
        json_t *files = json_object_get(stat, "files");
        for (size_t k = 0; s && *s; s = end, k++) {
                end = strstr(s + 1, "\ndiff --git ");
                end = end ? end + 1 : s + strlen(s);
                if (!room(p))
                        break;
                size_t hl = strcspn(s, "\n");
                put(p, "<details class=\"file\"><summary><code>");
                report_html_escape(p->f, s, hl, REPORT_LINE_MAX);
                put(p, "</code></summary><pre>");
                json_t *hunks = json_object_get(json_array_get(files, k), "hunks");
                size_t hunk = 0;
                for (const char *q = s; q < end;) {
                        const char *nl = memchr(q, '\n', (size_t)(end - q));
                        size_t ll = nl ? (size_t)(nl - q) : (size_t)(end - q);
                        const char *cls = *q == '+'   ? "add"
                                          : *q == '-' ? "del"
                                          : *q == '@' ? "hunk"
                                                      : NULL;
                        if (cls)
                                putf(p, "<span class=\"%s\">", cls);
                        report_html_escape(p->f, q, ll, REPORT_LINE_MAX);
                        put(p, cls ? "</span>\n" : "\n");
                        if (*q == '@' && ll > 2 && q[1] == '@') {
                                json_t *h = json_array_get(hunks, hunk++);
                                unsigned a, b = 1, c;
                                /* "@@ -a[,b] +c[,d] @@": the same hunk when a and c are its starts.
                                 */
                                if (h &&
                                    (sscanf(q, "@@ -%u,%u +%u", &a, &b, &c) == 3 ||
                                     sscanf(q, "@@ -%u +%u", &a, &c) == 2) &&
                                    (int64_t)a == num(h, "old_start") &&
                                    (int64_t)c == num(h, "new_start"))
                                        hunk_writers(p, h);
                        }
                        q += ll + 1;
                        if (!room(p))
                                break;
                }
                put(p, "</pre></details>\n");
        }
        put(p, "</details></section>\n");
}

/* x of time t on a line of width w from t0 to t1. */
static double xpos(double t, double t0, double t1, double w)
{
        if (t1 <= t0)
                return 0;
        double x = (t - t0) / (t1 - t0) * w;
        return x < 0 ? 0 : x > w ? w : x;
}

static void timeline(struct page *p, json_t *r)
{
        json_t *runs = json_object_get(json_object_get(r, "runs"), "runs"), *run, *w;
        json_t *writes = json_object_get(json_object_get(r, "journal"), "writes");
        json_t *net = json_object_get(json_object_get(r, "net"), "lines");
        json_t *tok = json_object_get(json_object_get(r, "tokens"), "lines");
        json_t *cps = json_object_get(json_object_get(r, "checkpoints"), "checkpoints");
        double t0 = INFINITY, t1 = -INFINITY, W = 1000;
        size_t i, lanes = MIN(json_array_size(runs), (size_t)12);

#define SPAN(t)                                                                                    \
        do {                                                                                       \
                double t_ = (t);                                                                   \
                if (t_ > 0 && t_ < t0)                                                             \
                        t0 = t_;                                                                   \
                if (t_ > t1)                                                                       \
                        t1 = t_;                                                                   \
        } while (0)
        json_array_foreach (runs, i, run) {
                SPAN(num(run, "start_ms") / 1000.0);
                SPAN(num(run, "end_ms") / 1000.0);
        }
        json_array_foreach (writes, i, w)
                SPAN(json_number_value(json_object_get(w, "time")));
        json_array_foreach (net, i, w)
                SPAN(json_number_value(json_object_get(w, "time")));
        json_array_foreach (tok, i, w)
                SPAN(json_number_value(json_object_get(w, "time")));
        json_array_foreach (cps, i, w)
                SPAN(json_number_value(json_object_get(w, "created_unix")));
#undef SPAN
        put(p, "<section><details open><summary><h2>Timeline</h2></summary>\n");
        if (!(t1 >= t0)) {
                put(p, "<p>Nothing happened yet.</p></details></section>\n");
                return;
        }
        double h = 40 + (double)(lanes ? lanes : 1) * 14 + 60;
        putf(p,
             "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %.0f %.0f\" width=\"100%%\" "
             "role=\"img\"><rect width=\"100%%\" height=\"100%%\" fill=\"#fafafa\"/>\n",
             W + 20, h);
        put(p, "<text x=\"2\" y=\"12\" font-size=\"10\">");
        when(p, t0);
        putf(p, "</text><text x=\"%.0f\" y=\"12\" font-size=\"10\" text-anchor=\"end\">", W + 18);
        when(p, t1);
        put(p, "</text>\n");
        json_array_foreach (runs, i, run) {
                double s = xpos(num(run, "start_ms") / 1000.0, t0, t1, W);
                double e = json_is_true(json_object_get(run, "ended"))
                                   ? xpos(num(run, "end_ms") / 1000.0, t0, t1, W)
                                   : W;
                bool bad = !json_is_true(json_object_get(run, "ended")) || num(run, "exit_code");
                putf(p,
                     "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"10\" fill=\"%s\"><title>",
                     10 + s, 20 + (double)(i % (lanes ? lanes : 1)) * 14, MAX(e - s, 1.5),
                     bad ? "#d9534f" : "#5b8def");
                putf(p, "#%zu exit %" PRId64 ": ", i + 1, num(run, "exit_code"));
                text_json(p, json_array_get(json_object_get(run, "argv"),
                                            json_array_size(json_object_get(run, "argv")) - 1));
                put(p, "</title></rect>\n");
                if (!room(p))
                        break;
        }
        double y = 24 + (double)(lanes ? lanes : 1) * 14;
        putf(p, "<text x=\"2\" y=\"%.0f\" font-size=\"9\">writes</text>", y + 8);
        /*
         * The writes' ticks: one path of at most one tick per pixel, however
         * many writes (thousands in a build), so the picture stays light.
         */
        if (json_array_size(writes)) {
                double last = -1;
                put(p, "<path stroke=\"#666\" d=\"");
                json_array_foreach (writes, i, w) {
                        /* Whole pixels (x >= 10: a cast is floor, and needs no libm). */
                        double x =
                                (double)(long)(10 +
                                               xpos(json_number_value(json_object_get(w, "time")),
                                                    t0, t1, W));
                        if (x == last)
                                continue;
                        last = x;
                        putf(p, "M%.0f %.0fv8", x, y + 10);
                }
                putf(p, "\"><title>%zu journal entries", json_array_size(writes));
                put(p, "</title></path>\n");
        }
        y += 22;
        json_array_foreach (net, i, w) {
                bool ok = streq_ptr(str(w, "decision"), "allow");
                putf(p, "<circle cx=\"%.1f\" cy=\"%.0f\" r=\"3\" fill=\"%s\"><title>",
                     10 + xpos(json_number_value(json_object_get(w, "time")), t0, t1, W), y + 4,
                     ok ? "#3c9a5f" : "#d9534f");
                text(p, str(w, "decision"));
                put(p, " ");
                text(p, str(w, "host"));
                put(p, "</title></circle>\n");
                if (!room(p))
                        break;
        }
        json_array_foreach (tok, i, w) {
                putf(p,
                     "<rect x=\"%.1f\" y=\"%.0f\" width=\"5\" height=\"5\" "
                     "fill=\"#b07cc6\"><title>",
                     10 + xpos(json_number_value(json_object_get(w, "time")), t0, t1, W), y + 12);
                text(p, str(w, "event"));
                put(p, "</title></rect>\n");
                if (!room(p))
                        break;
        }
        json_array_foreach (cps, i, w) {
                double x =
                        10 + xpos(json_number_value(json_object_get(w, "created_unix")), t0, t1, W);
                putf(p,
                     "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"16\" y2=\"%.0f\" stroke=\"#e0a800\" "
                     "stroke-dasharray=\"3 2\"><title>checkpoint ",
                     x, x, y + 20);
                text(p, str(w, "name"));
                put(p, "</title></line>\n");
        }
        put(p, "</svg>\n<p class=\"meta\">Bars: commands (red: failed or no end). Ticks: writes. "
               "Dots: network requests (red: refused). Squares: token events. Dashed: "
               "checkpoints.</p></details></section>\n");
}

/* A log's lines as a table: the listed keys, then the rest as key=value. */
static void log_table(struct page *p, const char *title, json_t *log, const char *const *keys)
{
        json_t *lines = json_object_get(log, "lines"), *l, *v;
        const char *k;
        size_t i;

        putf(p, "<section><details><summary><h2>%s (%zu", title, json_array_size(lines));
        if (num(log, "more"))
                putf(p, ", and %" PRId64 " more not listed", num(log, "more"));
        put(p, ")</h2></summary>\n<table><tr><th>time</th>");
        for (const char *const *kk = keys; *kk; kk++)
                putf(p, "<th>%s</th>", *kk);
        put(p, "<th>more</th></tr>\n");
        json_array_foreach (lines, i, l) {
                if (!room(p))
                        break;
                put(p, "<tr><td>");
                when(p, json_number_value(json_object_get(l, "time")));
                put(p, "</td>");
                for (const char *const *kk = keys; *kk; kk++) {
                        bool refused = streq(*kk, "decision") && !streq_ptr(str(l, *kk), "allow");
                        put(p, refused ? "<td class=\"bad\">" : "<td>");
                        text_json(p, json_object_get(l, *kk));
                        put(p, "</td>");
                }
                put(p, "<td class=\"meta\">");
                json_object_foreach (l, k, v) {
                        bool listed = streq(k, "time") || streq(k, "seq");
                        for (const char *const *kk = keys; *kk && !listed; kk++)
                                listed = streq(k, *kk);
                        if (listed)
                                continue;
                        text(p, k);
                        put(p, "=");
                        text_json(p, v);
                        put(p, " ");
                }
                put(p, "</td></tr>\n");
        }
        put(p, "</table></details></section>\n");
}

static void checkpoints(struct page *p, json_t *r)
{
        json_t *cl = json_object_get(r, "checkpoints"), *cp;
        json_t *parent = json_object_get(cl, "parent");
        size_t i;

        put(p, "<section><details open><summary><h2>Checkpoints and forks</h2></summary>\n<ul "
               "class=\"tree\">");
        if (parent && !json_is_null(parent)) {
                put(p, "<li>forked from ");
                text_json(p, parent);
                put(p, "<ul>");
        }
        json_array_foreach (json_object_get(cl, "checkpoints"), i, cp) {
                put(p, "<li>checkpoint <code>");
                text(p, str(cp, "name"));
                put(p, "</code>, ");
                when(p, json_number_value(json_object_get(cp, "created_unix")));
                put(p, "<ul>");
        }
        put(p, "<li><b>now</b>: ");
        text(p, str(r, "workspace"));
        put(p, "</li>");
        for (i = 0; i < json_array_size(json_object_get(cl, "checkpoints")); i++)
                put(p, "</ul></li>");
        if (parent && !json_is_null(parent))
                put(p, "</ul></li>");
        put(p, "</ul>");
        if (str(cl, "error")) {
                put(p, "<p class=\"bad\">");
                text(p, str(cl, "error"));
                put(p, "</p>");
        }
        put(p, "</details></section>\n");
}

static const char STYLE[] =
        "body{font:14px/1.4 system-ui,sans-serif;margin:1em 2em;color:#222}"
        "h1{font-size:1.5em}h2{display:inline;font-size:1.2em}"
        "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:2px "
        "6px;text-align:left;vertical-align:top}"
        "th{background:#f3f3f3}code,pre{font:12px/1.35 ui-monospace,monospace;white-space:pre-wrap;"
        "word-break:break-all}"
        ".good{color:#1d7a3a}.bad{color:#b52a25;font-weight:bold}.add{color:#1d7a3a}"
        ".del{color:#b52a25}.hunk{color:#6f42c1}.meta{color:#666;font-size:12px}"
        ".w{background:#f0f0f0;border-radius:3px;padding:0 2px}"
        ".cut{background:#fff3cd;padding:.5em}summary{cursor:pointer;margin:.6em 0}"
        "details.file{margin-left:1em}ul.verdicts{list-style:none;padding-left:0}"
        ".who{color:#555;font-style:italic}"
        /* What is off screen is not laid out until scrolled to: a long report opens at once. */
        "section,details.file{content-visibility:auto;contain-intrinsic-size:auto 2em}";

int report_html_write(FILE *out, json_t *report, size_t max_bytes)
{
        struct page p = {.f = out, .max = max_bytes ? max_bytes : REPORT_HTML_MAX_DEFAULT};
        static const char *const net_keys[] = {"decision", "method", "host", "port",
                                               "path",     "status", "rule", NULL};
        static const char *const tok_keys[] = {"event", "jti",      "scope", "aud",
                                               "ttl",   "decision", NULL};

        /* What the sections may fill: the rest is for the closing tags and the notes. */
        p.room = p.max > 64 * 1024 ? p.max - 64 * 1024 : p.max / 2;
        put(&p, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
                "style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action "
                "'none'\">\n<meta name=\"referrer\" content=\"no-referrer\">\n<title>cloister "
                "report: ");
        text(&p, str(report, "workspace"));
        putf(&p, "</title>\n<style>%s</style></head><body>\n<h1>cloister report: ", STYLE);
        text(&p, str(report, "workspace"));
        put(&p, "</h1>\n");
        summary(&p, report);
        timeline(&p, report);
        commands(&p, report);
        changes(&p, report);
        log_table(&p, "Network requests", json_object_get(report, "net"), net_keys);
        log_table(&p, "Credentials: the broker's audit log", json_object_get(report, "tokens"),
                  tok_keys);
        checkpoints(&p, report);
        if (p.cut)
                putf(&p,
                     "<p class=\"cut\">This report was cut at its size bound (%zu bytes): "
                     "<code>cloister report --json</code>, <code>cloister diff</code> and "
                     "<code>cloister log</code> give everything.</p>\n",
                     p.max);
        put(&p, "</body></html>\n");
        return fflush(out) == 0 && !ferror(out) ? 0 : -EIO;
}
