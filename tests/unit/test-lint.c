/* SPDX-License-Identifier: MIT */
/*
 * test-lint.c: the findings of `cloister check` (mounts/lint.c), the
 * credential host its `hosts` cross-check takes from a git remote URL
 * (mounts/blueprint.c), and the cross-checks of the egress proxy's rules
 * (mounts/blueprint-network.c, mounts/config-lint.c) on real config,
 * policy and secret files. Every case asserts the exact fields or text.
 */
#include <check.h>
#include <sodium.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blueprint.h"
#include "config.h"
#include "lint.h"
#include "policy.h"
#include "secrets.h"
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

/* ---- the [inject] rules' cross-checks, on real files ---- */

static char tmp[] = "/tmp/cloister-lint-test-XXXXXX";
static char ws_path[4096], policy_path[4096];

static void net_setup(void)
{
        ck_assert_ptr_nonnull(mkdtemp(tmp));
        snprintf(ws_path, sizeof(ws_path), "%s/ws.ini", tmp);
        snprintf(policy_path, sizeof(policy_path), "%s/policy.ini", tmp);
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
        (void)sb;
        (void)flag;
        (void)ftw;
        return remove(path);
}

static void net_teardown(void)
{
        nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        strcpy(tmp, "/tmp/cloister-lint-test-XXXXXX");
}

static void write_text(const char *path, const char *text)
{
        FILE *f = fopen(path, "we");

        ck_assert_ptr_nonnull(f);
        ck_assert_int_ge(fputs(text, f), 0);
        ck_assert_int_eq(fclose(f), 0);
}

/*
 * A proxy-mode workspace "ck" with one rule, [inject "api"] (header on line
 * 10, host 11, scope 14, secret 15), then extra from line 16: more
 * [network] keys go after the rule in a [network] section of their own.
 */
static struct config *ws_load(const char *extra)
{
        char text[8192];
        struct config *c = NULL;
        _cleanup_free_ char *err = NULL;

        snprintf(text, sizeof(text),
                 "[workspace]\n"             /* 1 */
                 "name = ck\n"               /* 2 */
                 "state = %s/state\n"        /* 3 */
                 "[repo]\n"                  /* 4 */
                 "source = %s/src\n"         /* 5 */
                 "[broker]\n"                /* 6 */
                 "policy = %s\n"             /* 7 */
                 "[network]\nmode = proxy\n" /* 8 */
                 "[inject \"api\"]\n"        /* 10 */
                 "host = api.example.com\n"  /* 11 */
                 "methods = POST\n"
                 "paths = /v1/**\n"
                 "scope = model\n"      /* 14 */
                 "secret = model-key\n" /* 15 */
                 "%s",
                 tmp, tmp, policy_path, extra);
        write_text(ws_path, text);
        ck_assert_msg(config_load(ws_path, &c, &err) == 0, "%s", err ? err : "?");
        return c;
}

static struct broker_policy *policy_load(const char *text)
{
        struct broker_policy *p = NULL;
        _cleanup_free_ char *err = NULL;

        write_text(policy_path, text);
        ck_assert_msg(broker_policy_load(policy_path, &p, &err) == 0, "%s", err ? err : "?");
        return p;
}

#define MODEL_SCOPE "[scope \"model\"]\naudience = https://api.example.com\nworkspaces = ck\n"

/* The network cross-checks of c (and p, if not NULL), formatted, one per line. */
static char *network_findings(const struct config *c, const struct broker_policy *p)
{
        struct blueprint bp = {.config = c, .policy = p, .broker_dirfd = -1};
        struct lint l = {0};
        char *all = strdup("");

        bp.broker_dirfd = open(c->broker.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        bp.broker_dir_error = bp.broker_dirfd < 0 ? -errno : 0;
        ck_assert_int_eq(blueprint_network_check(&bp, &l), 0);
        for (size_t i = 0; i < l.n; i++) {
                _cleanup_free_ char *f = lint_finding_format(&l.findings[i]);
                char *n = NULL;

                ck_assert_int_eq(l.findings[i].severity, LINT_WARNING);
                ck_assert_int_ge(asprintf(&n, "%s%s\n", all, f), 0);
                free(all);
                all = n;
        }
        lint_done(&l);
        safe_close(bp.broker_dirfd);
        return all;
}

/* Store the rule's secret, so only the finding under test remains. */
static void store_model_key(const struct config *c)
{
        int fd;

        ck_assert(mkdir(c->workspace.state, 0700) == 0 || errno == EEXIST);
        ck_assert(mkdir(c->broker.dir, 0700) == 0 || errno == EEXIST);
        fd = open(c->broker.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(broker_secret_store(fd, "model-key", (const unsigned char *)"k", 1), 0);
        close(fd);
}

/* tmpl with "{ws}" and "{policy}" replaced by the files' paths. */
static char *expand(const char *tmpl)
{
        char *out = strdup(""), *n;

        for (const char *t = tmpl; *t;) {
                const char *put = NULL;
                size_t skip = 1;

                if (startswith(t, "{ws}"))
                        put = ws_path, skip = 4;
                else if (startswith(t, "{policy}"))
                        put = policy_path, skip = 8;
                ck_assert_int_ge(
                        put ? asprintf(&n, "%s%s", out, put) : asprintf(&n, "%s%c", out, *t), 0);
                free(out);
                out = n;
                t += skip;
        }
        return out;
}

static void findings_are(const char *extra, const char *policy, const char *want_tmpl)
{
        _cleanup_config_ struct config *c = ws_load(extra);
        struct broker_policy *p = policy ? policy_load(policy) : NULL;
        _cleanup_free_ char *got = NULL, *want = NULL;

        store_model_key(c);
        got = network_findings(c, p);
        want = expand(want_tmpl);
        ck_assert_str_eq(got, want);
        broker_policy_free(p);
}

START_TEST(a_clean_inject_rule_has_no_finding)
{
        findings_are("[network]\nallow = registry.npmjs.org, *.example.org\n", MODEL_SCOPE, "");
}
END_TEST

START_TEST(a_deny_entry_for_an_inject_host_kills_its_rule)
{
        findings_are("[network]\ndeny = *.example.com\n", MODEL_SCOPE,
                     "{ws}:11: key 'host' in [inject \"api\"]: 'api.example.com' is denied by "
                     "[network] deny entry '*.example.com' (line 17): the proxy refuses every "
                     "request to it, so the rule never applies\n");
        findings_are("[network]\ndeny = api.example.com:80\n", MODEL_SCOPE,
                     "{ws}:11: key 'host' in [inject \"api\"]: 'api.example.com' is denied by "
                     "[network] deny entry 'api.example.com:80' (line 17): the proxy refuses "
                     "every request to it, so the rule never applies\n");
        /* The proxy reaches an injected host on port 80 only: a deny of 443 does not touch it. */
        findings_are("[network]\ndeny = api.example.com:443, example.com\n", MODEL_SCOPE, "");
}
END_TEST

START_TEST(an_allow_entry_for_an_inject_host_is_reported)
{
        findings_are("[network]\nallow = *.example.com\n", MODEL_SCOPE,
                     "{ws}:17: key 'allow' in [network]: '*.example.com' also covers "
                     "'api.example.com', the host of [inject \"api\"]: it opens CONNECT tunnels "
                     "to it (port 443) that bypass the rule's methods, paths and push_refs; an "
                     "[inject] host needs no allow entry\n");
        findings_are("[network]\nallow = API.example.com:80\n", MODEL_SCOPE,
                     "{ws}:17: key 'allow' in [network]: 'api.example.com:80' does nothing for "
                     "'api.example.com': plain HTTP to a host with [inject] rules (here [inject "
                     "\"api\"]) goes only through its rules\n");
        /* Two rules for one host: one finding. */
        findings_are("[inject \"api2\"]\nhost = api.example.com\nmethods = GET\npaths = /v2/**\n"
                     "scope = model\nsecret = model-key\n[network]\nallow = api.example.com:8443\n",
                     MODEL_SCOPE,
                     "{ws}:23: key 'allow' in [network]: 'api.example.com:8443' also covers "
                     "'api.example.com', the host of [inject \"api\"]: it opens CONNECT tunnels "
                     "to it (port 8443) that bypass the rule's methods, paths and push_refs; an "
                     "[inject] host needs no allow entry\n");
}
END_TEST

START_TEST(an_inject_scope_must_exist_and_name_the_workspace)
{
        findings_are("", "[scope \"git\"]\naudience = a\nworkspaces = ck\n",
                     "{ws}:14: key 'scope' in [inject \"api\"]: scope 'model' is not in the "
                     "broker policy '{policy}': no token carries it, so the proxy refuses every "
                     "request the rule covers\n");
        findings_are(
                "", "[scope \"model\"]\naudience = a\nworkspaces = other, more\n",
                "{ws}:14: key 'scope' in [inject \"api\"]: scope 'model' ({policy}:3) does not "
                "name workspace 'ck': its agent gets no token the rule accepts\n");
        findings_are("", "[scope \"model\"]\naudience = a\nworkspaces = *\n", "");
}
END_TEST

START_TEST(git_asking_by_host_must_get_the_rules_scope)
{
        /* The broker answers git-credential-cloister with the first scope listing the host. */
        findings_are(
                "",
                "[scope \"git\"]\naudience = a\nworkspaces = ck\nhosts = "
                "API.example.com\n" MODEL_SCOPE "hosts = api.example.com\n",
                "{ws}:14: key 'scope' in [inject \"api\"]: git-credential-cloister asks for "
                "host 'api.example.com' and gets a token of scope 'git' ({policy}:4, the first "
                "scope whose hosts list it), which this rule refuses\n");
        /* A scope of another workspace is not what this workspace's git gets. */
        findings_are("",
                     "[scope \"git\"]\naudience = a\nworkspaces = other\nhosts = "
                     "api.example.com\n" MODEL_SCOPE "hosts = api.example.com\n",
                     "");
}
END_TEST

START_TEST(an_inject_secret_must_be_stored)
{
        _cleanup_config_ struct config *c = ws_load("");
        struct broker_policy *p = policy_load(MODEL_SCOPE);
        _cleanup_free_ char *got = NULL, *want = NULL;

        /* No broker dir at all: not stored (and check makes none). */
        got = network_findings(c, p);
        ck_assert_int_ge(asprintf(&want,
                                  "%s:15: key 'secret' in [inject \"api\"]: secret 'model-key' is "
                                  "not stored in '%s/state/broker' (cloister secret add model-key "
                                  "--config %s)\n",
                                  ws_path, tmp, ws_path),
                         0);
        ck_assert_str_eq(got, want);
        ck_assert_int_eq(access(c->broker.dir, F_OK), -1);
        free(got);
        store_model_key(c);
        got = network_findings(c, p);
        ck_assert_str_eq(got, "");
        broker_policy_free(p);
}
END_TEST

START_TEST(inject_checks_run_without_a_policy)
{
        _cleanup_config_ struct config *c = ws_load("[network]\ndeny = api.example.com\n");
        struct blueprint bp = {.config = c, .broker_dirfd = -1, .broker_dir_error = -ENOENT};
        struct lint l = {0};

        /* A policy that did not parse: deny and secret are still checked, scopes are not. */
        ck_assert_int_eq(blueprint_check(&bp, &l), 0);
        ck_assert_uint_eq(l.n, 2);
        ck_assert_str_eq(l.findings[0].key, "host");
        ck_assert_uint_eq(l.findings[0].line, 11);
        ck_assert_str_eq(l.findings[1].key, "secret");
        ck_assert_uint_eq(l.findings[1].line, 15);
        lint_done(&l);
}
END_TEST

/* The config lint's findings about [network] allow. */
static char *allow_findings(const char *allow)
{
        _cleanup_free_ char *extra = NULL;
        _cleanup_config_ struct config *c = NULL;
        struct lint l = {0};
        char *all = strdup("");

        ck_assert_int_ge(asprintf(&extra, "[network]\nbytes_out = 1M\nallow = %s\n", allow), 0);
        c = ws_load(extra);
        ck_assert_int_eq(config_lint(c, NULL, &l), 0);
        for (size_t i = 0; i < l.n; i++) {
                _cleanup_free_ char *f = NULL;
                char *n = NULL;

                if (!streq_ptr(l.findings[i].key, "allow"))
                        continue;
                f = lint_finding_format(&l.findings[i]);
                ck_assert_int_ge(asprintf(&n, "%s%s\n", all, f + strlen(ws_path)), 0);
                free(all);
                all = n;
        }
        lint_done(&l);
        return all;
}

START_TEST(a_wildcard_on_a_public_suffix_is_too_broad)
{
        _cleanup_free_ char *a = NULL, *b = NULL, *d = NULL;

        a = allow_findings("*.github.io, *.CO.UK:8443, *.s3.amazonaws.com");
        ck_assert_str_eq(a, ":18: key 'allow' in [network]: '*.github.io' is too broad: "
                            "'github.io' is a public suffix (a hosting service's, on the Public "
                            "Suffix List), so the entry allows every site anyone registers under "
                            "it; list the hosts\n"
                            ":18: key 'allow' in [network]: '*.co.uk' is too broad: 'co.uk' is a "
                            "public suffix (a registry's, on the Public Suffix List), so the entry "
                            "allows every site anyone registers under it; list the hosts\n"
                            ":18: key 'allow' in [network]: '*.s3.amazonaws.com' is too broad: "
                            "'s3.amazonaws.com' is a public suffix (a hosting service's, on the "
                            "Public Suffix List), so the entry allows every site anyone registers "
                            "under it; list the hosts\n");
        /* A registrable domain's subdomains, a public suffix's own host, an unknown TLD: fine. */
        b = allow_findings("*.example.com, *.githubusercontent.example.org, github.io, "
                           "*.corp.internal");
        ck_assert_str_eq(b, "");
        /* *.com.au: a registry's second level, as *.co.uk */
        d = allow_findings("*.com.au");
        ck_assert_ptr_nonnull(strstr(d, "'*.com.au' is too broad: 'com.au' is a public suffix"));
}
END_TEST

int main(void)
{
        Suite *s = suite_create("lint");
        TCase *tc = tcase_create("lint");
        SRunner *sr;
        int failed;

        if (sodium_init() < 0)
                return 1; /* sealing the rule's secret needs it */
        tcase_add_test(tc, parser_errors_split_into_line_section_key_and_reason);
        tcase_add_test(tc, ambiguous_errors_stay_whole);
        tcase_add_test(tc, an_error_about_another_file_is_kept_whole);
        tcase_add_test(tc, findings_escape_control_characters_and_drop_duplicates);
        tcase_add_test(tc, json_findings_have_every_field_and_stay_valid_utf8);
        tcase_add_test(tc, credential_host_is_what_git_names_to_a_helper);
        suite_add_tcase(s, tc);
        tc = tcase_create("network");
        tcase_add_checked_fixture(tc, net_setup, net_teardown);
        tcase_add_test(tc, a_clean_inject_rule_has_no_finding);
        tcase_add_test(tc, a_deny_entry_for_an_inject_host_kills_its_rule);
        tcase_add_test(tc, an_allow_entry_for_an_inject_host_is_reported);
        tcase_add_test(tc, an_inject_scope_must_exist_and_name_the_workspace);
        tcase_add_test(tc, git_asking_by_host_must_get_the_rules_scope);
        tcase_add_test(tc, an_inject_secret_must_be_stored);
        tcase_add_test(tc, inject_checks_run_without_a_policy);
        tcase_add_test(tc, a_wildcard_on_a_public_suffix_is_too_broad);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? 1 : 0;
}
