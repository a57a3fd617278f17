/* SPDX-License-Identifier: MIT */
/*
 * test-report-html.c: report_html_escape(), the one function that puts the
 * agent's text on `cloister report`'s page, against hostile bytes (Check).
 * The whole-page tests are tests/sandbox/report.sh and report-browser.sh.
 */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report-html.h"

/* What report_html_escape() writes for n bytes of s (malloc'd), bounded at max chars. */
static char *esc(const char *s, size_t n, size_t max)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        size_t w;

        ck_assert_ptr_nonnull(f);
        w = report_html_escape(f, s, n, max);
        ck_assert_int_eq(fclose(f), 0);
        ck_assert_uint_eq(w, len);
        return buf;
}

#define FFFD     "\xef\xbf\xbd"
#define FFFD2    FFFD FFFD
#define ESC(lit) esc(lit, sizeof(lit) - 1, 0)

START_TEST(markup_becomes_entities)
{
        char *o = ESC("<script>alert(1)</script>\"><img src=x onerror=alert(1)>'&");

        ck_assert_str_eq(o, "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img src=x "
                            "onerror=alert(1)&gt;&#39;&amp;");
        free(o);
}
END_TEST

START_TEST(controls_and_bidi_overrides_are_shown_not_obeyed)
{
        char *o = ESC("\x1b[31mred\x7f\xc2\x9b|\xe2\x80\xae"
                      "exe.txt|\xe2\x81\xa6|\xe2\x80\x8f|a\tb\nc");

        ck_assert_str_eq(o, "\\x1b[31mred\\x7f\\x9b|&lt;U+202E&gt;exe.txt|&lt;U+2066&gt;|"
                            "&lt;U+200F&gt;|a\tb\nc");
        free(o);
}
END_TEST

START_TEST(nul_and_invalid_utf8_are_visible_and_the_output_is_valid_utf8)
{
        char *o = ESC("a\0b\xff\xfe\xc0\xaf\xed\xa0\x80\xf4\x90\x80\x80z\xe2\x82");

        /* ff fe; c0 af (overlong); ed a0 80 (a surrogate); f4 90 80 80 (past
         * U+10FFFF); then e2 82, cut short: U+FFFD for each byte. */
        ck_assert_str_eq(o, "a\\x00b" FFFD2 FFFD2 FFFD2 FFFD FFFD2 FFFD2 "z" FFFD2);
        ck_assert_ptr_null(memchr(o, '\0', strlen(o)));
        free(o);
}
END_TEST

START_TEST(a_megabyte_line_is_cut_saying_how_much)
{
        size_t n = 1024 * 1024;
        char *line = malloc(n), *o;

        ck_assert_ptr_nonnull(line);
        memset(line, '<', n);
        o = esc(line, n, REPORT_LINE_MAX);
        ck_assert_uint_lt(strlen(o), REPORT_LINE_MAX * 4 + 64);
        ck_assert_ptr_nonnull(strstr(o, "(1046576 bytes more)"));
        ck_assert_ptr_null(strchr(o, '<'));
        free(line);
        free(o);
}
END_TEST

START_TEST(plain_utf8_passes_unchanged)
{
        char *o = ESC("caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80 javascript:alert(1)");

        ck_assert_str_eq(
                o, "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac \xf0\x9f\x98\x80 javascript:alert(1)");
        free(o);
}
END_TEST

START_TEST(sizes_read_in_binary_units)
{
        char b[REPORT_SIZE_LEN];

        ck_assert_str_eq(report_html_size(16ull << 20, b), "16 MiB");
        ck_assert_str_eq(report_html_size(2ull << 30, b), "2 GiB");
        ck_assert_str_eq(report_html_size(3ull << 29, b), "1.5 GiB");
        ck_assert_str_eq(report_html_size(512, b), "512 B");
        ck_assert_str_eq(report_html_size(0, b), "0 B");
        ck_assert_str_eq(report_html_size(1024, b), "1 KiB");
        ck_assert_str_eq(report_html_size(1536, b), "1.5 KiB");
        ck_assert_str_eq(report_html_size(64ull << 30, b), "64 GiB");
        ck_assert_str_eq(report_html_size(UINT64_MAX, b), "16.0 EiB");
}
END_TEST

/* The page of a report with only its status: the summary's limit rows. */
START_TEST(limits_show_in_units_on_the_page)
{
        json_t *r =
                json_pack("{s:s, s:{s:{s:I, s:I, s:I, s:I, s:I}, s:I}}", "workspace", "w", "status",
                          "limits", "runlog", (json_int_t)16 << 20, "memory", (json_int_t)2 << 30,
                          "journal", (json_int_t)3 << 29, "processes", (json_int_t)256, "timeout",
                          (json_int_t)1800, "bytes_used", (json_int_t)1234567);
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        ck_assert_ptr_nonnull(r);
        ck_assert_int_eq(report_html_write(f, r, 0), 0);
        ck_assert_int_eq(fclose(f), 0);
        ck_assert_ptr_nonnull(strstr(buf, "<tr><th>Limit runlog</th><td>16 MiB</td></tr>"));
        ck_assert_ptr_nonnull(strstr(buf, "<tr><th>Limit memory</th><td>2 GiB</td></tr>"));
        ck_assert_ptr_nonnull(strstr(buf, "<tr><th>Limit journal</th><td>1.5 GiB</td></tr>"));
        ck_assert_ptr_nonnull(strstr(buf, "<tr><th>Limit processes</th><td>256</td></tr>"));
        ck_assert_ptr_nonnull(strstr(buf, "<tr><th>Limit timeout</th><td>1800 s</td></tr>"));
        ck_assert_ptr_nonnull(strstr(buf, "<tr><th>bytes_used</th><td>1.2 MiB</td></tr>"));
        ck_assert_ptr_null(strstr(buf, "16777216"));
        free(buf);
        json_decref(r);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("report_html");
        TCase *tc = tcase_create("escape");
        SRunner *sr;
        int failed;

        tcase_add_test(tc, markup_becomes_entities);
        tcase_add_test(tc, controls_and_bidi_overrides_are_shown_not_obeyed);
        tcase_add_test(tc, nul_and_invalid_utf8_are_visible_and_the_output_is_valid_utf8);
        tcase_add_test(tc, a_megabyte_line_is_cut_saying_how_much);
        tcase_add_test(tc, plain_utf8_passes_unchanged);
        tcase_add_test(tc, sizes_read_in_binary_units);
        tcase_add_test(tc, limits_show_in_units_on_the_page);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? 1 : 0;
}
