/* SPDX-License-Identifier: MIT */
/*
 * test-review-rules.c: the review's tree is what `git add -A` in the
 * workspace would commit: ignore rules (the agent's .gitignore files and
 * .git/info/exclude, never a core.excludesFile or a host file), attributes
 * (eol, ident: stored as git stores them), and what it costs: an ignored
 * directory is not walked, hard links are read once, a metacopy is not read.
 * The view is a plain clone (its .git is the agent's); the real git binary
 * in it is the reference: `git add -A && git write-tree` there must give the
 * tree the review builds.
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

static review *open_review(bool with_changes, bool include_ignored)
{
        struct review_options o = {
                .source = src,
                .rev = "HEAD",
                .view = view,
                .changes = with_changes ? changes : NULL,
                .repo_prefix = "/workspace",
                .in_memory = true,
                .include_ignored = include_ignored,
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

/* The tree git makes of the view with `git add -A` (in a copy: the view stays as it is). */
static char *git_add_all_tree(void)
{
        char *t = fx_sh_out("rm -rf addall && cp -a view addall && cd addall && git add -A && "
                            "git write-tree");
        t[strcspn(t, "\n")] = 0;
        return t;
}

static void assert_tree_is_git_add_all(review *r)
{
        char hex[GIT_OID_HEXSZ + 1];
        _cleanup_free_ char *want = git_add_all_tree();

        build(r);
        git_oid_tostr(hex, sizeof(hex), review_tree(r));
        ck_assert_str_eq(hex, want);
}

/* The change the review sees at path (new side), or NULL. *ret_diff must be freed. */
static const git_diff_delta *delta_at(review *r, const char *path, git_diff **ret_diff)
{
        ck_assert_int_eq(review_diff(r, ret_diff), 0);
        for (size_t i = 0; i < git_diff_num_deltas(*ret_diff); i++) {
                const git_diff_delta *d = git_diff_get_delta(*ret_diff, i);
                if (streq(d->new_file.path, path))
                        return d;
        }
        return NULL;
}

/* Commit in src and bring the view (the agent's clone) to it. */
static void base_commit(const char *shell)
{
        ck_assert_int_eq(fx_sh("cd src && %s && git add -A && git add -f . && git commit -qm more "
                               "&& cd ../view && git pull -q --ff-only",
                               shell),
                         0);
}

static void ignore_fixture(void)
{
        base_commit("printf 'tracked\\n' > tracked.o && mkdir -p gen && "
                    "printf '*.gen\\n' > gen/.gitignore && printf '*.o\\n' > .gitignore");
        /* The agent's rules: a changed root .gitignore, its own exclude. */
        fx_write_str(".gitignore", "*.o\n/build/\n*.log\n"), fx_touch(".gitignore", false);
        fx_write_str(".git/info/exclude", "secret.c\n");
        fx_write_str("a.o", "object\n"), fx_touch("a.o", false);
        fx_write_str("build/deep/x.o", "x\n"), fx_touch("build", true);
        fx_touch("build/deep", true), fx_touch("build/deep/x.o", false);
        fx_write_str("run.log", "log\n"), fx_touch("run.log", false);
        fx_write_str("gen/out.gen", "g\n"), fx_touch("gen/out.gen", false);
        fx_write_str("secret.c", "excluded by info/exclude\n"), fx_touch("secret.c", false);
        fx_write_str("c.c", "new source\n"), fx_touch("c.c", false);
        fx_write_str("tracked.o", "tracked\nchanged\n"), fx_touch("tracked.o", false);
        fx_write_str("dir/x", "x changed\n"), fx_touch("dir/x", false);
}

START_TEST(tree_is_what_git_add_all_commits_with_the_agents_ignore_rules)
{
        review *r;

        ignore_fixture();
        fx_changes_write();
        r = open_review(true, false);
        assert_tree_is_git_add_all(r);
        /* a.o, build/ (once), run.log, gen/out.gen, secret.c; never the tracked tracked.o */
        ck_assert_uint_eq(review_ignored(r), 5);
        ck_assert(!review_ignored_uncertain(r));
        review_free(r);
        /* Walking the whole view instead of the list gives the same tree. */
        r = open_review(false, false);
        assert_tree_is_git_add_all(r);
        ck_assert_uint_eq(review_ignored(r), 5);
        review_free(r);
}
END_TEST

START_TEST(include_ignored_takes_everything)
{
        char hex[GIT_OID_HEXSZ + 1];
        _cleanup_free_ char *want = NULL;
        review *r;

        ignore_fixture();
        fx_changes_write();
        r = open_review(true, true);
        build(r);
        ck_assert_uint_eq(review_ignored(r), 0);
        want = fx_sh_out("rm -rf addall && cp -a view addall && cd addall && git add -A -f && "
                         "git write-tree");
        want[strcspn(want, "\n")] = 0;
        git_oid_tostr(hex, sizeof(hex), review_tree(r));
        ck_assert_str_eq(hex, want);
        review_free(r);
}
END_TEST

/* Nothing outside the view: no core.excludesFile, ~/.config/git/ignore, source exclude. */
START_TEST(host_ignore_files_and_excludes_files_are_never_read)
{
        review *r;

        ignore_fixture();
        ck_assert_int_eq(fx_sh("printf 'c.c\\n' > host-ignore && mkdir -p .config/git && "
                               "cp host-ignore .config/git/ignore && "
                               "git -C view config core.excludesFile \"$PWD/host-ignore\" && "
                               "git -C src config core.excludesFile \"$PWD/host-ignore\" && "
                               "mkdir -p src/.git/info && cp host-ignore src/.git/info/exclude && "
                               "ln -s \"$PWD/host-ignore\" view/dir/.gitignore && "
                               "printf 'y\\n' > view/dir/c.c"),
                         0);
        fx_touch("dir/c.c", false);
        fx_changes_write();
        r = open_review(true, false);
        build(r);
        ck_assert_uint_eq(review_ignored(r), 5); /* c.c and dir/c.c are taken */
        for (int i = 0; i < 2; i++) {
                git_diff *diff = NULL;
                const git_diff_delta *d = delta_at(r, i ? "dir/c.c" : "c.c", &diff);
                ck_assert_ptr_nonnull(d);
                ck_assert_int_eq(d->status, GIT_DELTA_ADDED);
                git_diff_free(diff);
        }
        review_free(r);
}
END_TEST

/* An ignored directory is left out without being walked: it may be too deep to walk. */
START_TEST(ignored_directory_is_not_walked)
{
        review *r;

        fx_write_str(".gitignore", "/build/\n");
        ck_assert_int_eq(fx_sh("cd view && mkdir build && cd build && "
                               "for i in $(seq 1 300); do mkdir d && cd d || exit 1; done && "
                               "echo x > leaf"),
                         0);
        r = open_review(false, false);
        build(r);
        ck_assert_uint_eq(review_ignored(r), 1);
        review_free(r);
        /* Taken, it is too deep: left out where the bound is met, not an error (issue 43). */
        r = open_review(false, true);
        build(r);
        {
                size_t n, more;
                const struct review_left_out *l = review_left_out(r, &n, &more);
                ck_assert_uint_eq(n, 1);
                ck_assert_uint_eq(more, 0);
                ck_assert_int_eq(l[0].reason, REVIEW_LEFT_OUT_TOO_DEEP);
                ck_assert_ptr_nonnull(strstr(l[0].path, "build/d/d/"));
        }
        review_free(r);
}
END_TEST

START_TEST(names_of_a_hard_linked_file_are_read_once)
{
        review *r;

        ck_assert_int_eq(fx_sh("cd view && mkdir links && head -c 1048576 /dev/urandom > "
                               "links/bin && for i in $(seq 1 20); do ln links/bin links/l$i; "
                               "done"),
                         0);
        fx_touch("links", true);
        for (int i = 0; i < 20; i++) {
                char p[64];
                snprintf(p, sizeof(p), "links/l%d", i + 1);
                fx_touch(p, false);
        }
        fx_touch("links/bin", false);
        fx_changes_write();
        r = open_review(true, false);
        assert_tree_is_git_add_all(r);
        ck_assert_uint_eq(review_files_read(r), 1);
        review_free(r);
}
END_TEST

/* The fs lists a metacopy with its origin: its data is the base's, never read. */
START_TEST(metacopy_is_taken_from_the_base_without_reading_it)
{
        review *r;
        FILE *f;

        /* What the fs shows for `chmod +x a.txt` (data unchanged), and a renamed file. */
        ck_assert_int_eq(fx_sh("chmod +x view/a.txt && mv view/dir/rename-me.txt view/moved"), 0);
        f = fopen(changes, "w");
        ck_assert_ptr_nonnull(f);
        fputs("{\"path\":\"/workspace/a.txt\",\"type\":\"file\",\"opaque\":false,"
              "\"metacopy\":true,\"origin\":\"a.txt\"}\n"
              "{\"path\":\"/workspace/dir/rename-me.txt\",\"type\":\"deleted\",\"opaque\":false}\n"
              "{\"path\":\"/workspace/moved\",\"type\":\"file\",\"opaque\":false,"
              "\"metacopy\":true,\"origin\":\"dir/rename-me.txt\"}\n",
              f);
        fclose(f);
        /* Were they read, these bytes would be in the tree. */
        ck_assert_int_eq(fx_sh("echo poison > view/a.txt && echo poison > view/moved"), 0);
        r = open_review(true, false);
        build(r);
        ck_assert_uint_eq(review_files_read(r), 0);
        {
                git_diff *diff = NULL;
                const git_diff_delta *d = delta_at(r, "a.txt", &diff);
                _cleanup_free_ char *a = fx_sh_out("git -C src rev-parse HEAD:a.txt");
                a[strcspn(a, "\n")] = 0;
                ck_assert_ptr_nonnull(d);
                ck_assert_int_eq(d->status, GIT_DELTA_MODIFIED);
                ck_assert_int_eq(d->new_file.mode, GIT_FILEMODE_BLOB_EXECUTABLE);
                ck_assert_str_eq(git_oid_tostr_s(&d->new_file.id), a);
                git_diff_free(diff);
        }
        {
                git_diff *diff = NULL;
                const git_diff_delta *d = delta_at(r, "moved", &diff);
                _cleanup_free_ char *m = fx_sh_out("git -C src rev-parse HEAD:dir/rename-me.txt");
                m[strcspn(m, "\n")] = 0;
                ck_assert_ptr_nonnull(d);
                ck_assert_int_eq(d->status, GIT_DELTA_RENAMED);
                ck_assert_str_eq(git_oid_tostr_s(&d->new_file.id), m);
                git_diff_free(diff);
        }
        review_free(r);
}
END_TEST

/* eol=crlf and ident files: stored as `git add` stores them, also when new. */
START_TEST(attributes_convert_files_back_as_git_add_does)
{
        review *r;

        /* A blob with CRLF in it first, then the attributes. */
        base_commit("mkdir auto && printf 'crlf\\r\\nin the repo\\r\\n' > auto/stored-crlf");
        base_commit("printf '*.txt eol=crlf\\n*.id ident\\nauto/* text=auto\\n' > .gitattributes "
                    "&& printf 'l1\\nl2\\n' > t.txt && printf '$Id$\\n' > v.id");
        /* The view's checkout has CRLF in t.txt and the expanded $Id$. */
        ck_assert_int_eq(fx_sh("cd view && rm t.txt v.id && git checkout -q -- . && "
                               "grep -q \"$(printf '\\r')\" t.txt && grep -q 'Id: ' v.id"),
                         0);
        fx_write_str("t.txt", "l1\r\nl2\r\nl3\r\n"), fx_touch("t.txt", false);
        fx_write_str("new.txt", "n1\r\nn2\r\n"), fx_touch("new.txt", false);
        fx_write_str("v.id", "$Id: 0123 $\nmore\n"), fx_touch("v.id", false);
        /* text=auto keeps a CR the index already has (git's "safer autocrlf"). */
        fx_write_str("auto/stored-crlf", "crlf\r\nin the repo\r\nmore\r\n");
        fx_touch("auto/stored-crlf", false);
        fx_write_str("auto/new", "a\r\nb\r\n"), fx_touch("auto/new", false);
        fx_changes_write();
        r = open_review(true, false);
        assert_tree_is_git_add_all(r);
        review_free(r);
}
END_TEST

START_TEST(negations_in_nested_ignore_files_are_flagged)
{
        review *r;

        fx_write_str(".gitignore", "*.o\n");
        fx_write_str("dir/.gitignore", "!keep.o\n");
        fx_write_str("dir/keep.o", "k\n");
        fx_write_str("dir/other.o", "o\n");
        r = open_review(false, false);
        build(r);
        ck_assert_uint_ge(review_ignored(r), 1);
        ck_assert(review_ignored_uncertain(r));
        review_free(r);
}
END_TEST

/*
 * An agent could stop its own review with a rule file over the bound: it is
 * skipped instead (as if absent; the agent could as well empty it), with a
 * warning naming it, and what it would have ignored is in the review.
 */
START_TEST(oversized_rule_file_is_skipped_with_a_warning)
{
        git_diff *diff = NULL;
        review *r;

        ck_assert_int_eq(fx_sh("head -c 5000000 /dev/zero | tr '\\0' '#' > view/dir/.gitignore && "
                               "printf 'new\\n' >> view/dir/.gitignore"),
                         0);
        fx_write_str("dir/new", "n\n"), fx_touch("dir/new", false);
        fx_touch("dir/.gitignore", false);
        fx_changes_write();
        r = open_review(true, false);
        build(r);
        ck_assert_ptr_nonnull(review_warning(r));
        ck_assert_ptr_nonnull(strstr(review_warning(r), "'dir/.gitignore' is larger than 4 MiB"));
        ck_assert_uint_eq(review_ignored(r), 0);
        ck_assert_ptr_nonnull(delta_at(r, "dir/new", &diff));
        git_diff_free(diff);
        review_free(r);
        /* --include-ignored reads no ignore file: nothing to warn of. */
        r = open_review(true, true);
        build(r);
        ck_assert_ptr_null(review_warning(r));
        review_free(r);
}
END_TEST

/* The patch of the review r, as a string (malloc'd). */
static char *patch_of(review *r)
{
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);

        ck_assert_ptr_nonnull(f);
        ck_assert_msg(review_print(r, REVIEW_PATCH, f) == 0, "review_print: %s", review_error(r));
        fclose(f);
        return buf;
}

/* Does the patch show path as a binary (GIT binary patch) change? */
static bool shown_binary(const char *patch, const char *path)
{
        _cleanup_free_ char *head = NULL;
        const char *at, *next;

        ck_assert_int_ge(asprintf(&head, "diff --git a/%s b/%s\n", path, path), 0);
        at = strstr(patch, head);
        ck_assert_msg(at, "no change of %s in the patch", path);
        next = strstr(at + 1, "diff --git ");
        at = strstr(at, "GIT binary patch");
        return at && (!next || at < next);
}

/*
 * The diff's "diff" attribute (binary or text) is the base revision's or
 * the source's info/attributes: never the agent's (a "-diff" of its own
 * would show its change to the reviewer as a binary patch), never an
 * uncommitted file of the host's work tree.
 */
START_TEST(diff_attributes_are_the_bases_and_the_sources_not_the_agents)
{
        _cleanup_free_ char *p = NULL;
        review *r;

        base_commit("printf 'a.txt -diff\n' > .gitattributes");
        ck_assert_int_eq(fx_sh("printf 'mode.txt -diff\n' > src/.git/info/attributes && "
                               "printf 'a.txt -diff\ndir/x -diff\n' > src/.gitattributes"),
                         0);
        fx_write_str("a.txt", "one\nTWO\nthree\n"), fx_touch("a.txt", false);
        fx_write_str("mode.txt", "plain, changed\n"), fx_touch("mode.txt", false);
        fx_write_str("dir/x", "x changed\n"), fx_touch("dir/x", false);
        fx_write_str("nonl.txt", "no newline, changed"), fx_touch("nonl.txt", false);
        fx_write_str(".gitattributes", "a.txt -diff\nnonl.txt -diff\n");
        fx_touch(".gitattributes", false);
        fx_changes_write();
        r = open_review(true, false);
        p = patch_of(r);
        ck_assert_msg(shown_binary(p, "a.txt"), "the base's attribute is not taken");
        ck_assert_msg(shown_binary(p, "mode.txt"), "the source's info/attributes is not taken");
        ck_assert_msg(!shown_binary(p, "dir/x"), "the host work tree's file is taken");
        ck_assert_msg(!shown_binary(p, "nonl.txt"), "the agent's attribute is taken");
        ck_assert_ptr_nonnull(strstr(p, "\n+no newline, changed\n"));
        review_free(r);
}
END_TEST

/* A linked work tree as the source: its git dir is below the common one. */
START_TEST(diff_of_a_linked_work_tree_source)
{
        _cleanup_free_ char *p = NULL;
        struct review_options o = {
                .rev = "HEAD",
                .view = view,
                .changes = changes,
                .repo_prefix = "/workspace",
                .in_memory = true,
        };
        char linked[256];
        review *r = NULL;
        char *err = NULL;

        snprintf(linked, sizeof(linked), "%s/linked", fx_dir);
        ck_assert_int_eq(fx_sh("git -C src worktree add -q ../linked -b side"), 0);
        o.source = linked;
        fx_write_str("a.txt", "one\nTWO\nthree\n"), fx_touch("a.txt", false);
        fx_changes_write();
        ck_assert_msg(review_open(&o, &r, &err) == 0, "review_open: %s", err ? err : "?");
        p = patch_of(r);
        ck_assert_ptr_nonnull(strstr(p, "\n+TWO\n"));
        review_free(r);
        {
                _cleanup_free_ char *path = NULL;
                FILE *f;
                ck_assert_int_ge(asprintf(&path, "%s/patch", fx_dir), 0);
                f = fopen(path, "w");
                ck_assert_ptr_nonnull(f);
                fputs(p, f);
                fclose(f);
        }
        ck_assert_int_eq(fx_apply_and_compare("patch", false), 0);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("review-rules");
        TCase *tc = tcase_create("review-rules");
        SRunner *sr;
        int failed;

        tcase_add_checked_fixture(tc, setup, fx_teardown);
        tcase_set_timeout(tc, 300);
        tcase_add_test(tc, tree_is_what_git_add_all_commits_with_the_agents_ignore_rules);
        tcase_add_test(tc, include_ignored_takes_everything);
        tcase_add_test(tc, host_ignore_files_and_excludes_files_are_never_read);
        tcase_add_test(tc, ignored_directory_is_not_walked);
        tcase_add_test(tc, names_of_a_hard_linked_file_are_read_once);
        tcase_add_test(tc, metacopy_is_taken_from_the_base_without_reading_it);
        tcase_add_test(tc, attributes_convert_files_back_as_git_add_does);
        tcase_add_test(tc, negations_in_nested_ignore_files_are_flagged);
        tcase_add_test(tc, oversized_rule_file_is_skipped_with_a_warning);
        tcase_add_test(tc, diff_attributes_are_the_bases_and_the_sources_not_the_agents);
        tcase_add_test(tc, diff_of_a_linked_work_tree_source);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? 1 : 0;
}
