/* SPDX-License-Identifier: MIT */
/*
 * test-review-left-out.c: nothing the agent puts in the view stops the
 * review (issue 43, 5). A path the review cannot take (past a size bound,
 * too deep, named too long, git cannot hold it, swarms of them) is left
 * out: the build succeeds, the tree holds the base's version of that path
 * and everything else, and review_left_out() names each with why. The
 * view is a plain directory (a clone); the real git binary applies the
 * patch. tests/review/left-out.sh does the same through a real mount.
 */
#include <fcntl.h>

#pragma GCC diagnostic ignored "-Wformat-truncation"

#include "review-fixture.h"
#include "review.h"
#include "lib/util.h"

static char src[192], view[192], changes[192];

static void setup(void)
{
        fx_setup();
        snprintf(src, sizeof(src), "%s/src", fx_dir);
        snprintf(view, sizeof(view), "%s/view", fx_dir);
        snprintf(changes, sizeof(changes), "%s/changes", fx_dir);
}

static review *open_review(bool with_changes, uint64_t max_total)
{
        struct review_options o = {
                .source = src,
                .rev = "HEAD",
                .view = view,
                .changes = with_changes ? changes : NULL,
                .repo_prefix = "/workspace",
                .in_memory = true,
                .include_ignored = true,
                .max_total_size = max_total,
        };
        review *r = NULL;
        char *err = NULL;
        int k = review_open(&o, &r, &err);
        ck_assert_msg(k == 0, "review_open: %s", err ? err : "?");
        return r;
}

static void build(review *r)
{
        int k = review_build(r);
        ck_assert_msg(k == 0, "review_build: %s", review_error(r));
}

/* The one left-out entry for path, or NULL. */
static const struct review_left_out *left_out_at(review *r, const char *path)
{
        size_t n;
        const struct review_left_out *l = review_left_out(r, &n, NULL);

        for (size_t i = 0; i < n; i++)
                if (streq(l[i].path, path))
                        return &l[i];
        return NULL;
}

/* Write r's patch to fx_dir/patch and apply it to a fresh clone at fx_dir/fresh. */
static void patch_applies(review *r)
{
        char p[256];
        FILE *f;

        snprintf(p, sizeof(p), "%s/patch", fx_dir);
        f = fopen(p, "w");
        ck_assert_ptr_nonnull(f);
        ck_assert_msg(review_print(r, REVIEW_PATCH, f) == 0, "%s", review_error(r));
        fclose(f);
        ck_assert_int_eq(fx_sh("rm -rf fresh && git clone -q src fresh && cd fresh && "
                               "git apply --whitespace=nowarn ../patch"),
                         0);
}

START_TEST(files_past_the_total_bound_are_left_out_and_the_rest_taken)
{
        const struct review_left_out *l;
        review *r;

        /* 1 MiB each, a bound of 2.5 MiB: a and b fit, c would not, d (small) still does. */
        ck_assert_int_eq(fx_sh("cd view && for f in a b c; do head -c 1048576 /dev/urandom > "
                               "$f.bin; done && printf 'small\\n' > d.txt"),
                         0);
        fx_touch("a.bin", false), fx_touch("b.bin", false), fx_touch("c.bin", false);
        fx_touch("d.txt", false);
        fx_changes_write();
        r = open_review(true, 2621440);
        build(r);
        ck_assert_ptr_nonnull(l = left_out_at(r, "c.bin"));
        ck_assert_int_eq(l->reason, REVIEW_LEFT_OUT_TOTAL);
        ck_assert_uint_eq(l->size, 1048576);
        ck_assert_uint_eq(l->limit, 2621440);
        ck_assert_str_eq(review_left_out_reason(l), "total_too_large");
        patch_applies(r);
        ck_assert_int_eq(fx_sh("cmp view/a.bin fresh/a.bin && cmp view/b.bin fresh/b.bin && "
                               "cmp view/d.txt fresh/d.txt && test ! -e fresh/c.bin"),
                         0);
        review_free(r);
}
END_TEST

START_TEST(directory_nested_past_the_bound_is_left_out_where_the_bound_is_met)
{
        size_t n, more;
        review *r;

        ck_assert_int_eq(fx_sh("cd view && mkdir deep && cd deep && for i in $(seq 1 300); do "
                               "mkdir d && cd d || exit 1; done && echo x > leaf"),
                         0);
        fx_write_str("new.txt", "new\n");
        fx_touch("deep", true), fx_touch("new.txt", false);
        fx_changes_write();
        for (int list = 0; list < 2; list++) {
                r = open_review(list, 0);
                build(r);
                const struct review_left_out *l = review_left_out(r, &n, &more);
                ck_assert_uint_eq(n, 1);
                ck_assert_int_eq(l[0].reason, REVIEW_LEFT_OUT_TOO_DEEP);
                ck_assert_ptr_nonnull(startswith(l[0].path, "deep/d/d/"));
                patch_applies(r);
                /* Only the left-out part was in it: git holds no empty directory. */
                ck_assert_int_eq(fx_sh("test -f fresh/new.txt && test ! -e fresh/deep"), 0);
                review_free(r);
        }
}
END_TEST

START_TEST(path_longer_than_path_max_is_left_out)
{
        _cleanup_free_ char *name = malloc(251);
        char cmd[2048];
        size_t n;
        review *r;

        memset(name, 'n', 250);
        name[250] = 0;
        /* 20 components of 250 bytes: past PATH_MAX, made one directory at a time. */
        snprintf(cmd, sizeof(cmd),
                 "cd view && python3 -c 'import os\n"
                 "os.mkdir(\"long\"); os.chdir(\"long\")\n"
                 "for i in range(20): os.mkdir(\"%s\"); os.chdir(\"%s\")\n"
                 "open(\"leaf\", \"w\").write(\"x\")'",
                 name, name);
        ck_assert_int_eq(fx_sh("%s", cmd), 0);
        fx_write_str("new.txt", "new\n");
        r = open_review(false, 0);
        build(r);
        const struct review_left_out *l = review_left_out(r, &n, NULL);
        ck_assert_uint_eq(n, 1);
        ck_assert_int_eq(l[0].reason, REVIEW_LEFT_OUT_TOO_LONG);
        ck_assert_uint_ge(strlen(l[0].path), 4096);
        patch_applies(r);
        ck_assert_int_eq(fx_sh("test -f fresh/new.txt"), 0);
        review_free(r);
        /* Discard removes it too, though the path cannot be opened as one. */
        r = open_review(false, 0);
        ck_assert_msg(review_discard(r) == 0, "%s", review_error(r));
        review_free(r);
        ck_assert_int_eq(fx_sh("test ! -e view/long && test ! -e view/new.txt"), 0);
}
END_TEST

/*
 * A tracked file and a tracked directory made huge or special, walked or
 * listed: the tree keeps the base's file and the base's whole directory,
 * though the changes list names what was inside it.
 */
START_TEST(left_out_paths_keep_the_base_version_walked_or_listed)
{
        ck_assert_int_eq(fx_sh("cd view && truncate -s 600M a.txt && rm -r dir && "
                               "truncate -s 600M dir && rm -r old && mkfifo old && "
                               "ln a.txt a-link && printf 'changed\\n' > nonl.txt"),
                         0);
        fx_touch("a.txt", false), fx_touch("a-link", false), fx_touch("dir", true);
        fx_touch("dir/x", false), fx_touch("dir/sub/y", false), fx_touch("old", true);
        fx_touch("old/i", false), fx_touch("nonl.txt", false);
        fx_changes_write();
        for (int list = 0; list < 2; list++) {
                char hex[GIT_OID_HEXSZ + 1];
                _cleanup_free_ char *want = NULL;
                review *r = open_review(list, 0);
                size_t n;

                build(r);
                (void)review_left_out(r, &n, NULL);
                ck_assert_uint_eq(n, 4);
                ck_assert_int_eq(left_out_at(r, "a.txt")->reason, REVIEW_LEFT_OUT_TOO_LARGE);
                ck_assert_int_eq(left_out_at(r, "a-link")->reason, REVIEW_LEFT_OUT_TOO_LARGE);
                ck_assert_int_eq(left_out_at(r, "dir")->reason, REVIEW_LEFT_OUT_TOO_LARGE);
                ck_assert_int_eq(left_out_at(r, "old")->reason, REVIEW_LEFT_OUT_SPECIAL);
                ck_assert_int_eq(left_out_at(r, "old")->kind, 'p');
                /* The tree is the base's with only nonl.txt changed. */
                want = fx_sh_out("rm -rf want && git clone -q src want && cd want && "
                                 "printf 'changed\\n' > nonl.txt && git add -A && "
                                 "git write-tree");
                want[strcspn(want, "\n")] = 0;
                git_oid_tostr(hex, sizeof(hex), review_tree(r));
                ck_assert_str_eq(hex, want);
                review_free(r);
        }
}
END_TEST

/* Swarms of left-out paths: a bounded list, the rest counted; discard resets them all. */
START_TEST(many_left_out_paths_are_listed_up_to_the_bound_and_all_discarded)
{
        size_t n, more;
        review *r;

        ck_assert_int_eq(fx_sh("cd view && mkdir fifos && cd fifos && "
                               "for i in $(seq 1 1100); do mkfifo f$i || exit 1; done"),
                         0);
        fx_touch("fifos", true);
        fx_changes_write();
        r = open_review(true, 0);
        build(r);
        (void)review_left_out(r, &n, &more);
        ck_assert_uint_eq(n, REVIEW_MAX_LEFT_OUT);
        ck_assert_uint_eq(more, 1100 - REVIEW_MAX_LEFT_OUT);
        review_free(r);
        r = open_review(true, 0);
        ck_assert_msg(review_discard(r) == 0, "%s", review_error(r));
        review_free(r);
        ck_assert_int_eq(fx_sh("test ! -e view/fifos"), 0);
}
END_TEST

/* A name that could forge a line or drive a terminal is kept exactly, for the caller to quote. */
START_TEST(hostile_names_are_recorded_as_they_are)
{
        char buf[256];
        review *r;

        ck_assert_int_eq(fx_sh("cd view && mkfifo \"$(printf 'a\\nb\\033[2J')\""), 0);
        r = open_review(false, 0);
        build(r);
        ck_assert_ptr_nonnull(left_out_at(r, "a\nb\033[2J"));
        review_left_out_describe(left_out_at(r, "a\nb\033[2J"), buf, sizeof(buf));
        ck_assert_str_eq(buf, "a FIFO, which git cannot hold");
        review_free(r);
}
END_TEST

/*
 * --since builds a checkpoint's tree and the workspace's: a huge file in
 * both is left out of both (no change between them) and listed once.
 */
START_TEST(left_out_in_both_trees_of_since_is_listed_once)
{
        char old_view[256];
        struct review_options o = {.view = old_view, .repo_prefix = "/workspace"};
        size_t n;
        review *r;

        ck_assert_int_eq(fx_sh("cd view && truncate -s 600M huge && printf 'later\\n' > later.txt "
                               "&& cd .. && cp -a view checkpoint && rm checkpoint/later.txt"),
                         0);
        snprintf(old_view, sizeof(old_view), "%s/checkpoint", fx_dir);
        r = open_review(false, 0);
        ck_assert_msg(review_since(r, &o) == 0, "%s", review_error(r));
        build(r);
        const struct review_left_out *l = review_left_out(r, &n, NULL);
        ck_assert_uint_eq(n, 1);
        ck_assert_str_eq(l[0].path, "huge");
        review_free(r);
}
END_TEST

static Suite *suite(void)
{
        Suite *s = suite_create("review-left-out");
        TCase *tc = tcase_create("left-out");

        tcase_add_checked_fixture(tc, setup, fx_teardown);
        tcase_set_timeout(tc, 300);
        tcase_add_test(tc, files_past_the_total_bound_are_left_out_and_the_rest_taken);
        tcase_add_test(tc, directory_nested_past_the_bound_is_left_out_where_the_bound_is_met);
        tcase_add_test(tc, path_longer_than_path_max_is_left_out);
        tcase_add_test(tc, left_out_paths_keep_the_base_version_walked_or_listed);
        tcase_add_test(tc, many_left_out_paths_are_listed_up_to_the_bound_and_all_discarded);
        tcase_add_test(tc, hostile_names_are_recorded_as_they_are);
        tcase_add_test(tc, left_out_in_both_trees_of_since_is_listed_once);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        SRunner *sr = srunner_create(suite());
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? 1 : 0;
}
