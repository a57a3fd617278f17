/* SPDX-License-Identifier: MIT */
/*
 * test-lint.c: the findings of `cloister check` (mounts/lint.c) and the
 * credential host its `hosts` cross-check takes from a git remote URL
 * (mounts/blueprint.c). Every case asserts the exact fields or text.
 */
#include <check.h>
#include <stdlib.h>

#include "blueprint.h"
#include "lint.h"
#include "lib/util.h"

/* Split err, assert the parts, and that it formats back to err byte for byte. */
static void split_is(const char *file, const char *err, unsigned line, const char *section,
                     const char *key, const char *message)
{
        struct lint l = {0};
        _cleanup_free_ char *back = NULL;

        ck_assert_int_eq(lint_add_error(&l, LINT_ERROR, file, err), 0);
        ck_assert_uint_eq(l.n, 1);
        ck_assert_str_eq(l.findings[0].file, file);
        ck_assert_uint_eq(l.findings[0].line, line);
        ck_assert_pstr_eq(l.findings[0].section, section);
        ck_assert_pstr_eq(l.findings[0].key, key);
        ck_assert_str_eq(l.findings[0].message, message);
        back = lint_finding_format(&l.findings[0]);
        ck_assert_str_eq(back, err);
        lint_done(&l);
}

START_TEST(parser_errors_split_into_line_section_key_and_reason)
{
        split_is("/p.ini", "/p.ini:4: key 'colour' in [scope \"git\"]: unknown key", 4,
                 "scope \"git\"", "colour", "unknown key");
        split_is("/ws.ini", "/ws.ini: key 'name' in [workspace]: required", 0, "workspace", "name",
                 "required");
        split_is("/p.ini", "/p.ini:1: [scope \"git\"]: missing key 'audience'", 1, "scope \"git\"",
                 NULL, "missing key 'audience'");
        split_is("/p.ini", "/p.ini:1: malformed line: expected 'key = value' or '[section]'", 1,
                 NULL, NULL, "malformed line: expected 'key = value' or '[section]'");
        split_is("/p.ini", "/p.ini: cannot open: No such file or directory", 0, NULL, NULL,
                 "cannot open: No such file or directory");
        /* a file name that looks like a line number is still the file's */
        split_is("a:12", "a:12: no [scope \"NAME\"] section", 0, NULL, NULL,
                 "no [scope \"NAME\"] section");
}
END_TEST

START_TEST(ambiguous_errors_stay_whole)
{
        /* A key holding "' in [" could be split two ways: neither is guessed. */
        split_is("/ws.ini", "/ws.ini:3: key 'a' in [b' in [repo]: unknown key", 3, NULL, NULL,
                 "key 'a' in [b' in [repo]: unknown key");
        /* A key holding "]: " splits at the section, which never holds ']'. */
        split_is("/ws.ini", "/ws.ini:3: key 'a]: b' in [repo]: unknown key", 3, "repo", "a]: b",
                 "unknown key");
        /* "section [x]: ..." is not the "[x]: ..." form, and keeps its words. */
        split_is("/ws.ini", "/ws.ini:2: section [mirror x]: expected [mirror \"NAME\"]", 2, NULL,
                 NULL, "section [mirror x]: expected [mirror \"NAME\"]");
}
END_TEST

START_TEST(an_error_about_another_file_is_kept_whole)
{
        struct lint l = {0};
        _cleanup_free_ char *s = NULL;

        ck_assert_int_eq(lint_add_error(&l, LINT_ERROR, "/ws.ini", "/other.ini:3: boom"), 0);
        ck_assert_uint_eq(l.findings[0].line, 0);
        ck_assert_str_eq(l.findings[0].message, "/other.ini:3: boom");
        s = lint_finding_format(&l.findings[0]);
        ck_assert_str_eq(s, "/ws.ini: /other.ini:3: boom");
        /* A line number as "%u" never prints it: 007 is not a line. */
        ck_assert_int_eq(lint_add_error(&l, LINT_ERROR, "/ws.ini", "/ws.ini:007: x"), 0);
        ck_assert_uint_eq(l.findings[1].line, 0);
        ck_assert_str_eq(l.findings[1].message, "/ws.ini:007: x");
        lint_done(&l);
}
END_TEST

START_TEST(findings_escape_control_characters_and_drop_duplicates)
{
        struct lint l = {0};
        _cleanup_free_ char *s = NULL;

        ck_assert_int_eq(lint_add(&l, LINT_WARNING, "/w.ini", 2, "run", "e\nv", "'%s'", "a\033b"),
                         0);
        ck_assert_int_eq(lint_add(&l, LINT_WARNING, "/w.ini", 2, "run", "e\nv", "'%s'", "a\033b"),
                         0);
        ck_assert_int_eq(lint_add(&l, LINT_ERROR, "/w.ini", 2, "run", "e\nv", "'%s'", "a\033b"), 0);
        ck_assert_uint_eq(l.n, 2);
        ck_assert_uint_eq(lint_count(&l, LINT_WARNING), 1);
        ck_assert_uint_eq(lint_count(&l, LINT_ERROR), 1);
        s = lint_finding_format(&l.findings[0]);
        ck_assert_str_eq(s, "/w.ini:2: key 'e\\x0av' in [run]: 'a\\x1bb'");
        lint_done(&l);
        ck_assert_uint_eq(l.n, 0);
}
END_TEST

START_TEST(json_findings_have_every_field_and_stay_valid_utf8)
{
        struct lint l = {0};
        json_t *o;
        char *s;

        ck_assert_int_eq(lint_add(&l, LINT_WARNING, "/w.ini", 0, NULL, NULL, "bad \xff byte"), 0);
        o = lint_finding_json(&l.findings[0], false);
        s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
        ck_assert_str_eq(s, "{\"file\":\"/w.ini\",\"key\":null,\"line\":null,\"message\":\"bad "
                            "\\\\xff byte\",\"section\":null,\"severity\":\"warning\"}");
        free(s);
        json_decref(o);
        o = lint_finding_json(&l.findings[0], true);
        ck_assert_str_eq(json_string_value(json_object_get(o, "severity")), "error");
        json_decref(o);
        lint_done(&l);
}
END_TEST

static void host_is(const char *url, const char *want)
{
        _cleanup_free_ char *host = NULL;

        ck_assert_int_eq(blueprint_url_credential_host(url, &host), 0);
        ck_assert_msg(streq_ptr(host, want), "%s: got '%s', want '%s'", url, host ? host : "(null)",
                      want ? want : "(null)");
}

START_TEST(credential_host_is_what_git_names_to_a_helper)
{
        host_is("https://git.example.com/org/repo.git", "git.example.com");
        host_is("https://Git.Example.com:8443/r", "Git.Example.com:8443");
        host_is("https://bot:hunter2@git.example.com/r", "git.example.com");
        host_is("http://a@b@c/r", "b@c");
        host_is("https://h?x@y/", "h");
        host_is("https://h#x", "h");
        host_is("https://h%2eexample.com/", "h.example.com");
        host_is("https://h%zz/", "h%zz");
        host_is("https://h%0a/", NULL);
        host_is("https://h%00x/", NULL);
        host_is("ftps://[::1]:990/x", "[::1]:990");
        host_is("ftp://files.example.com", "files.example.com");
        host_is("https:///path", "");
        /* git asks no helper for these */
        host_is("git@github.com:org/repo.git", NULL);
        host_is("ssh://git@github.com/org/repo", NULL);
        host_is("git://github.com/org/repo", NULL);
        host_is("file:///srv/repo", NULL);
        host_is("/srv/repo", NULL);
        host_is("HTTPS://github.com/r", NULL);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("lint");
        TCase *tc = tcase_create("lint");
        SRunner *sr;
        int failed;

        tcase_add_test(tc, parser_errors_split_into_line_section_key_and_reason);
        tcase_add_test(tc, ambiguous_errors_stay_whole);
        tcase_add_test(tc, an_error_about_another_file_is_kept_whole);
        tcase_add_test(tc, findings_escape_control_characters_and_drop_duplicates);
        tcase_add_test(tc, json_findings_have_every_field_and_stay_valid_utf8);
        tcase_add_test(tc, credential_host_is_what_git_names_to_a_helper);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? 1 : 0;
}
