/* SPDX-License-Identifier: MIT */
/*
 * test-quote.c: lib/quote, the quoting of agent-chosen text for a terminal.
 * Every hostile input must come out on one line, with no byte a terminal
 * acts on, and (quoted) must decode back to exactly the input.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "lib/quote.h"
#include "lib/util.h"

static void quoted_is(const char *in, unsigned flags, const char *want)
{
        _cleanup_free_ char *q = quote_dup(in, flags);

        ck_assert_ptr_nonnull(q);
        ck_assert_str_eq(q, want);
}

/* A terminal acts on C0, DEL, and in UTF-8 on U+0080-U+009F and the bidi controls. */
static void assert_terminal_safe(const char *q)
{
        for (const unsigned char *p = (const unsigned char *)q; *p; p++) {
                ck_assert_msg(*p >= 0x20 && *p != 0x7f, "control byte 0x%02x in %s", *p, q);
                ck_assert_msg(!(p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f), "C1 in %s", q);
                ck_assert_msg(!(p[0] == 0xe2 && p[1] == 0x80 && p[2] >= 0xa8 && p[2] <= 0xae),
                              "bidi control in %s", q);
                ck_assert_msg(!(p[0] == 0xe2 && p[1] == 0x81 && p[2] >= 0xa6 && p[2] <= 0xa9),
                              "bidi isolate in %s", q);
        }
}

/* C-unquote a quoted form (the test's own decoder), to check that it round-trips. */
static char *unquote(const char *q)
{
        size_t l = strlen(q), o = 0;
        char *out = malloc(l + 1);

        ck_assert_ptr_nonnull(out);
        if (q[0] != '"') {
                strcpy(out, q);
                return out;
        }
        ck_assert_int_eq(q[l - 1], '"');
        for (size_t i = 1; i < l - 1; i++) {
                if (q[i] != '\\') {
                        out[o++] = q[i];
                        continue;
                }
                i++;
                switch (q[i]) {
                case 'a':
                        out[o++] = '\a';
                        break;
                case 'b':
                        out[o++] = '\b';
                        break;
                case 't':
                        out[o++] = '\t';
                        break;
                case 'n':
                        out[o++] = '\n';
                        break;
                case 'v':
                        out[o++] = '\v';
                        break;
                case 'f':
                        out[o++] = '\f';
                        break;
                case 'r':
                        out[o++] = '\r';
                        break;
                case '"':
                case '\\':
                        out[o++] = q[i];
                        break;
                default:
                        ck_assert(q[i] >= '0' && q[i] <= '3');
                        out[o++] = (char)(((q[i] - '0') << 6) | ((q[i + 1] - '0') << 3) |
                                          (q[i + 2] - '0'));
                        i += 2;
                }
        }
        out[o] = '\0';
        return out;
}

static const char *const hostile[] = {
        "evil\033]0;TITLE\007.txt",        /* OSC: set the window title */
        "a\rb",                            /* CR: overwrite the line */
        "line1\nline2",                    /* LF: forge a line */
        "bin\x01\x02\x7f\xff\xfe\x80",     /* binary bytes, DEL, invalid UTF-8 */
        "invoice\xe2\x80\xaetxt.exe",      /* U+202E RIGHT-TO-LEFT OVERRIDE */
        "iso\xe2\x81\xa6late\xe2\x81\xa9", /* U+2066 .. U+2069 */
        "csi\xc2\x9b"
        "31m",                    /* U+009B, a one-character CSI */
        "\xed\xa0\x80surrogate",  /* an encoded surrogate: invalid */
        "\xc0\xafoverlong",       /* an overlong '/': invalid */
        "\xf4\x90\x80\x80toobig", /* past U+10FFFF: invalid */
        "ls\xe2\x80\xa8sep",      /* U+2028 LINE SEPARATOR */
};

START_TEST(plain_names_print_as_they_are)
{
        quoted_is("src/main.c", 0, "src/main.c");
        quoted_is("a b-c_d.e+f@g", 0, "a b-c_d.e+f@g");
        quoted_is("Fix the parser", QUOTE_UTF8, "Fix the parser");
        ck_assert(quote_is_plain("README.md", 0));
}
END_TEST

START_TEST(paths_are_quoted_as_git_quotes_them)
{
        quoted_is("evil\033]0;TITLE\007.txt", 0, "\"evil\\033]0;TITLE\\a.txt\"");
        quoted_is("a\rb", 0, "\"a\\rb\"");
        quoted_is("line1\nline2", 0, "\"line1\\nline2\"");
        quoted_is("tab\there", 0, "\"tab\\there\"");
        quoted_is("q\"uote", 0, "\"q\\\"uote\"");
        quoted_is("back\\slash", 0, "\"back\\\\slash\"");
        /* core.quotePath: every byte from 0x80 in octal, as `git diff --stat` prints it */
        quoted_is("caf\xc3\xa9", 0, "\"caf\\303\\251\"");
        quoted_is("invoice\xe2\x80\xaetxt.exe", 0, "\"invoice\\342\\200\\256txt.exe\"");
        quoted_is("bin\x01\x7f\xff", 0, "\"bin\\001\\177\\377\"");
}
END_TEST

START_TEST(text_keeps_printable_utf8_and_escapes_controls)
{
        quoted_is("Fix f\xc3\xbcr Umlaute \xe2\x9c\x93", QUOTE_UTF8,
                  "Fix f\xc3\xbcr Umlaute \xe2\x9c\x93");
        quoted_is("say \"hi\" \\o/", QUOTE_UTF8, "say \"hi\" \\o/");
        quoted_is("Fix \033[2J", QUOTE_UTF8, "\"Fix \\033[2J\"");
        quoted_is("a \"b\" \x1b", QUOTE_UTF8, "\"a \\\"b\\\" \\033\"");
        quoted_is("invoice\xe2\x80\xaetxt.exe", QUOTE_UTF8, "\"invoice\\342\\200\\256txt.exe\"");
        quoted_is("csi\xc2\x9b"
                  "31m",
                  QUOTE_UTF8, "\"csi\\302\\23331m\"");
        quoted_is("\xc0\xaf", QUOTE_UTF8, "\"\\300\\257\"");
        quoted_is("\xed\xa0\x80", QUOTE_UTF8, "\"\\355\\240\\200\"");
        quoted_is("cut\xe2\x80", QUOTE_UTF8, "\"cut\\342\\200\""); /* truncated sequence */
}
END_TEST

START_TEST(bare_escapes_without_quotes)
{
        quoted_is("removing 'a\033b'", QUOTE_UTF8 | QUOTE_BARE, "removing 'a\\033b'");
        quoted_is("it's \"fine\"", QUOTE_UTF8 | QUOTE_BARE, "it's \"fine\"");
        quoted_is("x\ny", QUOTE_BARE, "x\\ny");
        ck_assert(quote_is_plain("a \"b\"", QUOTE_BARE));
}
END_TEST

START_TEST(hostile_text_is_one_safe_line_that_round_trips)
{
        static const unsigned modes[] = {0, QUOTE_UTF8};

        for (size_t m = 0; m < ELEMENTSOF(modes); m++)
                for (size_t i = 0; i < ELEMENTSOF(hostile); i++) {
                        _cleanup_free_ char *q = quote_dup(hostile[i], modes[m]);
                        _cleanup_free_ char *back = NULL;

                        ck_assert_ptr_nonnull(q);
                        ck_assert_msg(!quote_is_plain(hostile[i], modes[m]), "%s", q);
                        assert_terminal_safe(q);
                        ck_assert_ptr_null(strchr(q, '\n'));
                        back = unquote(q);
                        ck_assert_str_eq(back, hostile[i]);
                }
}
END_TEST

START_TEST(every_byte_round_trips)
{
        char in[256 * 2 + 1];
        size_t n = 0;

        /* Every byte value, each after an 'x' so that no valid UTF-8 sequence forms. */
        for (int b = 1; b < 256; b++) {
                in[n++] = 'x';
                in[n++] = (char)b;
        }
        in[n] = '\0';
        for (unsigned m = 0; m <= QUOTE_UTF8; m++) {
                _cleanup_free_ char *q = quote_dup(in, m);
                _cleanup_free_ char *back = unquote(q);

                assert_terminal_safe(q);
                ck_assert_str_eq(back, in);
        }
}
END_TEST

START_TEST(quote_fputs_writes_the_quoted_form)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(quote_fputs(f, "plain", 0), 0);
        ck_assert_int_eq(quote_fputs(f, " ", 0), 0);
        ck_assert_int_eq(quote_fputs(f, "\033x", 0), 0);
        fclose(f);
        ck_assert_str_eq(buf, "plain \"\\033x\"");
        free(buf);
}
END_TEST

START_TEST(utf8_valid_is_strict)
{
        static const char *good[] = {
                "", "plain", "caf\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf"};
        static const char *bad[] = {
                "\xc0\xae",                 /* overlong '.' */
                "\xe0\x80\xae",             /* overlong '.' */
                "\xed\xa0\x80",             /* a surrogate */
                "\xf4\x90\x80\x80",         /* past U+10FFFF */
                "\xf5\x80\x80\x80",         /* lead F5 */
                "\xf8\x88\x80\x80\xae",     /* a 5-byte form */
                "\xfd\xbf\xbf\xbf\xbf\xbf", /* a 6-byte form */
                "\xc3",                     /* cut */
                "ab\x80",                   /* a stray continuation */
        };

        for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++)
                ck_assert_msg(quote_utf8_valid(good[i], strlen(good[i])), "good %zu", i);
        for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
                ck_assert_msg(!quote_utf8_valid(bad[i], strlen(bad[i])), "bad %zu", i);
        /* the length bounds it: a valid prefix of a longer string */
        ck_assert(quote_utf8_valid("ok\xc3\xa9", 2));
        ck_assert(!quote_utf8_valid("\xc3\xa9", 1));
}
END_TEST

START_TEST(utf8_fix_replaces_only_bytes_of_no_valid_character)
{
        /* "é" cut after its first byte, a stray continuation byte, an
         * overlong '/', a surrogate; whole characters stay. */
        char s[] = "ok \xc3\xa9 \xe2\x80\xae x\xc3 \x80 \xc0\xaf \xed\xa0\x80 end\xc3";

        quote_utf8_fix(s);
        ck_assert_str_eq(s, "ok \xc3\xa9 \xe2\x80\xae x? ? ?? ??? end?");
}
END_TEST

int main(void)
{
        Suite *s = suite_create("quote");
        TCase *tc = tcase_create("quote");
        SRunner *sr;
        int failed;

        tcase_add_test(tc, plain_names_print_as_they_are);
        tcase_add_test(tc, paths_are_quoted_as_git_quotes_them);
        tcase_add_test(tc, text_keeps_printable_utf8_and_escapes_controls);
        tcase_add_test(tc, bare_escapes_without_quotes);
        tcase_add_test(tc, hostile_text_is_one_safe_line_that_round_trips);
        tcase_add_test(tc, every_byte_round_trips);
        tcase_add_test(tc, quote_fputs_writes_the_quoted_form);
        tcase_add_test(tc, utf8_fix_replaces_only_bytes_of_no_valid_character);
        tcase_add_test(tc, utf8_valid_is_strict);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? 1 : 0;
}
