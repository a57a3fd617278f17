/* SPDX-License-Identifier: MIT */
/*
 * test-cgroup.c: lib/cgroup, the one reader of /proc/PID/cgroup's lines
 * that the sandbox's cgroups and the journal's run_cgroup share.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/cgroup.h"
#include "lib/util.h"

/* The path of controller's line (NULL: v2) in text, or "-ERRNO". */
static const char *path_of(const char *text, const char *controller)
{
        static char buf[CGROUP_LINE_MAX + 16];
        const char *path;
        size_t n;
        int r = cgroup_text_path(text, strlen(text), controller, &path, &n);

        if (r < 0)
                snprintf(buf, sizeof(buf), "-%s", strerrorname_np(-r));
        else
                snprintf(buf, sizeof(buf), "%.*s", (int)n, path);
        return buf;
}

START_TEST(v2_only_is_the_zero_line_with_no_controllers)
{
        ck_assert_str_eq(path_of("0::/user.slice/a.scope\n", NULL), "/user.slice/a.scope");
        ck_assert_str_eq(path_of("0::/user.slice/a.scope\n", "pids"), "-ENOENT");
        /* Not v2: another id, a controller, an id that only reads as zero. */
        ck_assert_str_eq(path_of("1::/x\n", NULL), "-ENOENT");
        ck_assert_str_eq(path_of("0:pids:/x\n", NULL), "-ENOENT");
        ck_assert_str_eq(path_of("00::/x\n", NULL), "-ENOENT");
        ck_assert_str_eq(path_of(":/x\n", NULL), "-ENOENT");
        /* The path is all after the second colon, colons too. */
        ck_assert_str_eq(path_of("0::/a:b:c\n", NULL), "/a:b:c");
}
END_TEST

START_TEST(v1_and_v2_mixed_each_hierarchy_its_own_line)
{
        const char *hybrid = "12:pids:/p\n"
                             "11:cpu,cpuacct:/c\n"
                             "4:memory:/m\n"
                             "1:name=systemd:/s\n"
                             "0::/u\n";

        ck_assert_str_eq(path_of(hybrid, NULL), "/u");
        ck_assert_str_eq(path_of(hybrid, "pids"), "/p");
        ck_assert_str_eq(path_of(hybrid, "cpu"), "/c");
        ck_assert_str_eq(path_of(hybrid, "cpuacct"), "/c");
        ck_assert_str_eq(path_of(hybrid, "memory"), "/m");
        ck_assert_str_eq(path_of(hybrid, "name=systemd"), "/s");
        ck_assert_str_eq(path_of(hybrid, "blkio"), "-ENOENT");
        /* The first line that matches wins. */
        ck_assert_str_eq(path_of("3:pids:/first\n2:pids:/second\n", "pids"), "/first");
}
END_TEST

START_TEST(a_controller_anywhere_in_the_comma_list)
{
        const char *t = "4:blkio,pids,memory:/m\n";

        ck_assert_str_eq(path_of(t, "blkio"), "/m");
        ck_assert_str_eq(path_of(t, "pids"), "/m");
        ck_assert_str_eq(path_of(t, "memory"), "/m");
        ck_assert_str_eq(path_of(t, "blkio,pids"), "-ENOENT");
        ck_assert(cgroup_list_has("rw,nosuid,pids", strlen("rw,nosuid,pids"), "pids"));
        ck_assert(cgroup_list_has(",pids,", 6, "pids"));
        /* The length bounds the list: "pids" past it is not read. */
        ck_assert(!cgroup_list_has("cpu,pids", 3, "pids"));
}
END_TEST

START_TEST(a_controller_that_is_a_prefix_of_another_is_not_it)
{
        const char *t = "3:cpuacct:/acct\n2:cpu,cpuset:/cpu\n1:pids_x:/px\n";

        ck_assert_str_eq(path_of(t, "cpu"), "/cpu");
        ck_assert_str_eq(path_of(t, "cpuacct"), "/acct");
        ck_assert_str_eq(path_of(t, "cpus"), "-ENOENT");
        ck_assert_str_eq(path_of(t, "pids"), "-ENOENT");
        ck_assert_str_eq(path_of("5:pids:/p\n", "pid"), "-ENOENT");
        ck_assert_str_eq(path_of("5:pids:/p\n", "pidss"), "-ENOENT");
        /* "" names no controller, not even in an empty list's slot. */
        ck_assert_str_eq(path_of("5:,:/p\n", ""), "-ENOENT");
        ck_assert(!cgroup_list_has("", 0, ""));
}
END_TEST

START_TEST(an_empty_path_is_a_path)
{
        ck_assert_str_eq(path_of("0::\n", NULL), "");
        ck_assert_str_eq(path_of("7:pids:\n", "pids"), "");
        ck_assert_str_eq(path_of("0::/\n", NULL), "/");
}
END_TEST

START_TEST(a_line_without_two_colons_is_passed_over)
{
        ck_assert_str_eq(path_of("garbage\n5:pids\n\n0:/x\n0::/ok\n", NULL), "/ok");
        ck_assert_str_eq(path_of("garbage\n", NULL), "-ENOENT");
        ck_assert_str_eq(path_of("", NULL), "-ENOENT");
        ck_assert_str_eq(path_of("\n\n", NULL), "-ENOENT");
}
END_TEST

START_TEST(a_line_over_the_bound_ends_the_search)
{
        const char *before = "5:pids:/before\n";
        size_t n = CGROUP_LINE_MAX, b = strlen(before);
        char *t = malloc(b + n + 64);

        ck_assert_ptr_nonnull(t);
        /* CGROUP_LINE_MAX - 1 bytes before the newline: read. */
        strcpy(t, before);
        memcpy(t + b, "0::/", 4);
        memset(t + b + 4, 'a', n - 1 - 4);
        strcpy(t + b + n - 1, "\n");
        ck_assert_uint_eq(strlen(path_of(t, NULL)), n - 1 - 3);
        /* One more: refused, and so is every line after it, even one that matches. */
        memset(t + b + 4, 'a', n - 4);
        strcpy(t + b + n, "\n0::/after\n3:memory:/m\n");
        ck_assert_str_eq(path_of(t, NULL), "-EMSGSIZE");
        ck_assert_str_eq(path_of(t, "memory"), "-EMSGSIZE");
        /* A line before it is still found. */
        ck_assert_str_eq(path_of(t, "pids"), "/before");
        free(t);
}
END_TEST

START_TEST(a_last_line_without_its_newline_is_cut_and_refused)
{
        ck_assert_str_eq(path_of("0::/x", NULL), "-EBADMSG");
        ck_assert_str_eq(path_of("5:pids:/p\n0::/x", NULL), "-EBADMSG");
        /* What came before the cut line is read. */
        ck_assert_str_eq(path_of("5:pids:/p\n0::/x", "pids"), "/p");
        /* Even a line without colons, if cut. */
        ck_assert_str_eq(path_of("garbage", NULL), "-EBADMSG");
}
END_TEST

START_TEST(next_splits_each_line_and_moves_past_it)
{
        const char *t = "12:cpu,cpuacct:/a/b\nnoise\n0::/c\n", *pos = t;
        struct cgroup_line l;

        ck_assert_int_eq(cgroup_line_next(&pos, t + strlen(t), &l), 1);
        ck_assert_uint_eq(l.id_len, 2);
        ck_assert_int_eq(memcmp(l.id, "12", 2), 0);
        ck_assert_uint_eq(l.controllers_len, strlen("cpu,cpuacct"));
        ck_assert_int_eq(memcmp(l.controllers, "cpu,cpuacct", l.controllers_len), 0);
        ck_assert_uint_eq(l.path_len, 4);
        ck_assert_int_eq(memcmp(l.path, "/a/b", 4), 0);
        ck_assert(cgroup_line_is(&l, "cpuacct") && !cgroup_line_is(&l, NULL));
        ck_assert_int_eq(cgroup_line_next(&pos, t + strlen(t), &l), 1);
        ck_assert(cgroup_line_is(&l, NULL));
        ck_assert_uint_eq(l.path_len, 2);
        ck_assert_int_eq(cgroup_line_next(&pos, t + strlen(t), &l), 0);
        ck_assert_ptr_eq(pos, t + strlen(t));
}
END_TEST

START_TEST(self_path_reads_our_own_file)
{
        _cleanup_free_ char *v2 = NULL, *none = NULL;
        int r = cgroup_self_path(NULL, &v2);

        /* A host with a v2 hierarchy (unified or hybrid) puts us somewhere in it. */
        ck_assert(r == 0 || r == -ENOENT);
        if (r == 0)
                ck_assert_int_eq(v2[0], '/');
        ck_assert_int_eq(cgroup_self_path("no-such-controller", &none), -ENOENT);
        ck_assert_ptr_null(none);
}
END_TEST

/* A file of text, for cgroup_file_has(); its path in tmpl. */
static void file_with(char *tmpl, const char *text)
{
        int fd = mkstemp(tmpl);

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        close(fd);
}

START_TEST(a_controller_file_lists_whole_names_on_a_whole_line)
{
        char p[] = "/tmp/cloister-cgroup.XXXXXX";
        char *cut = malloc(CGROUP_FILE_MAX + 16);

        file_with(p, "cpuset cpu io memory pids\n");
        ck_assert(cgroup_file_has(p, "cpu"));
        ck_assert(cgroup_file_has(p, "pids"));
        ck_assert(cgroup_file_has(p, "cpuset"));
        ck_assert(!cgroup_file_has(p, "pid"));
        ck_assert(!cgroup_file_has(p, "mem"));
        ck_assert(!cgroup_file_has(p, ""));
        unlink(p);
        /* Nothing delegated: an empty line. */
        strcpy(p, "/tmp/cloister-cgroup.XXXXXX");
        file_with(p, "\n");
        ck_assert(!cgroup_file_has(p, "pids"));
        unlink(p);
        /* A line cut at the bound might end in a prefix ("pids" of "pidsx"): none. */
        ck_assert_ptr_nonnull(cut);
        memset(cut, 'a', CGROUP_FILE_MAX - 6);
        strcpy(cut + CGROUP_FILE_MAX - 6, " pidsx\n");
        strcpy(p, "/tmp/cloister-cgroup.XXXXXX");
        file_with(p, cut);
        ck_assert(!cgroup_file_has(p, "pids"));
        ck_assert(!cgroup_file_has(p, "pidsx"));
        unlink(p);
        free(cut);
        ck_assert(!cgroup_file_has("/nonexistent/cgroup.controllers", "pids"));
}
END_TEST

int main(void)
{
        Suite *s = suite_create("cgroup");
        TCase *tc = tcase_create("cgroup");
        SRunner *sr;
        int failed;

        tcase_add_test(tc, v2_only_is_the_zero_line_with_no_controllers);
        tcase_add_test(tc, v1_and_v2_mixed_each_hierarchy_its_own_line);
        tcase_add_test(tc, a_controller_anywhere_in_the_comma_list);
        tcase_add_test(tc, a_controller_that_is_a_prefix_of_another_is_not_it);
        tcase_add_test(tc, an_empty_path_is_a_path);
        tcase_add_test(tc, a_line_without_two_colons_is_passed_over);
        tcase_add_test(tc, a_line_over_the_bound_ends_the_search);
        tcase_add_test(tc, a_last_line_without_its_newline_is_cut_and_refused);
        tcase_add_test(tc, next_splits_each_line_and_moves_past_it);
        tcase_add_test(tc, self_path_reads_our_own_file);
        tcase_add_test(tc, a_controller_file_lists_whole_names_on_a_whole_line);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
