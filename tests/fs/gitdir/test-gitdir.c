/* SPDX-License-Identifier: MIT */
/*
 * test-gitdir.c: unit tests (Check) for the fs/gitdir API's contract:
 * parameter checks, refusals that leave the destination untouched, the
 * relative alternates path, and what a successful prepare writes. The
 * source repositories are real, made with libgit2 in a temp directory.
 */
#include <check.h>
#include <fcntl.h>
#include <git2.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gitdir.h"
#include "lib/util.h"

static char tmp[] = "/tmp/test-gitdir.XXXXXX";
static char source[512];
static int64_t commit_time = 1234567890;

/* A repo with one commit of two files, made with libgit2 (no git binary). */
static void make_source(void)
{
        git_repository *repo;
        git_treebuilder *tb;
        git_oid blob1, blob2, tree_id, commit_id;
        git_tree *tree;
        git_signature *sig;

        git_repository_init_options o = GIT_REPOSITORY_INIT_OPTIONS_INIT;

        o.flags = GIT_REPOSITORY_INIT_MKPATH;
        o.initial_head = "main";
        snprintf(source, sizeof(source), "%s/src", tmp);
        ck_assert_int_eq(git_repository_init_ext(&repo, source, &o), 0);
        ck_assert_int_eq(git_blob_create_from_buffer(&blob1, repo, "hello\n", 6), 0);
        ck_assert_int_eq(git_blob_create_from_buffer(&blob2, repo, "#!/bin/sh\n", 10), 0);
        ck_assert_int_eq(git_treebuilder_new(&tb, repo, NULL), 0);
        ck_assert_int_eq(git_treebuilder_insert(NULL, tb, "hello.txt", &blob1, GIT_FILEMODE_BLOB),
                         0);
        ck_assert_int_eq(
                git_treebuilder_insert(NULL, tb, "run", &blob2, GIT_FILEMODE_BLOB_EXECUTABLE), 0);
        ck_assert_int_eq(git_treebuilder_write(&tree_id, tb), 0);
        git_treebuilder_free(tb);
        ck_assert_int_eq(git_tree_lookup(&tree, repo, &tree_id), 0);
        ck_assert_int_eq(git_signature_new(&sig, "T", "t@example.invalid", commit_time, 0), 0);
        ck_assert_int_eq(
                git_commit_create_v(&commit_id, repo, "HEAD", sig, sig, NULL, "one", tree, 0), 0);
        git_signature_free(sig);
        git_tree_free(tree);
        git_repository_free(repo);
}

static void setup(void)
{
        git_libgit2_init();
        ck_assert_ptr_nonnull(mkdtemp(tmp));
        make_source();
}

static void teardown(void)
{
        char cmd[600];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
        ck_assert_int_eq(system(cmd), 0);
        strcpy(tmp, "/tmp/test-gitdir.XXXXXX");
        git_libgit2_shutdown();
}

static int make_dest(const char *name)
{
        char p[600];
        snprintf(p, sizeof(p), "%s/%s", tmp, name);
        ck_assert_int_eq(mkdir(p, 0755), 0);
        return open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

static struct gitdir_params params(void)
{
        return (struct gitdir_params){
                .source = source,
                .rev = "HEAD",
                .alternates = "../../../.cloister/objects",
                .lower_mtime = commit_time,
                .uid = getuid(),
                .gid = getgid(),
        };
}

START_TEST(alternates_path_counts_repo_path_components)
{
        static const struct {
                const char *in, *out;
        } cases[] = {
                {"/workspace", "../../../.cloister/objects"},
                {"/a/b", "../../../../.cloister/objects"},
                {"/a/b/c", "../../../../../.cloister/objects"},
                {"/", "../../.cloister/objects"},
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *s = NULL;
                ck_assert_int_eq(gitdir_alternates_path(cases[i].in, &s), 0);
                ck_assert_str_eq(s, cases[i].out);
        }
}
END_TEST

START_TEST(alternates_path_rejects_unclean_paths)
{
        static const char *const bad[] = {"", "rel", "/a/", "/a//b", "/./a", "/a/..", "//"};
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                char *s = (char *)0x1;
                ck_assert_int_eq(gitdir_alternates_path(bad[i], &s), -EINVAL);
                ck_assert_ptr_eq(s, (char *)0x1); /* untouched on failure */
        }
        ck_assert_int_eq(gitdir_alternates_path(NULL, &(char *){NULL}), -EINVAL);
}
END_TEST

START_TEST(commit_time_is_the_committer_time)
{
        int64_t t = 0;
        ck_assert_int_eq(gitdir_base_commit_time(source, "HEAD", &t), 0);
        ck_assert_int_eq(t, commit_time);
        ck_assert_int_eq(gitdir_base_commit_time(source, "nope", &t), -ENOENT);
}
END_TEST

START_TEST(prepare_writes_head_config_refs_index_alternates)
{
        _cleanup_close_ int fd = make_dest("git");
        struct gitdir_params p = params();
        _cleanup_free_ char *err = NULL;
        char path[700], buf[256];
        struct stat st;
        git_index *index;
        const git_index_entry *e;
        FILE *f;

        ck_assert_int_eq(gitdir_prepare_msg(&p, fd, &err), 0);
        ck_assert_ptr_null(err);

        ck_assert_int_eq(fstatat(fd, "HEAD", &st, AT_SYMLINK_NOFOLLOW), 0);
        ck_assert_int_eq(fstatat(fd, "config", &st, AT_SYMLINK_NOFOLLOW), 0);
        ck_assert_int_eq(fstatat(fd, "refs/heads/main", &st, AT_SYMLINK_NOFOLLOW), 0);
        ck_assert_int_eq(fstatat(fd, "index", &st, AT_SYMLINK_NOFOLLOW), 0);
        ck_assert_int_gt(st.st_mtime, commit_time);

        snprintf(path, sizeof(path), "%s/git/objects/info/alternates", tmp);
        f = fopen(path, "re");
        ck_assert_ptr_nonnull(f);
        ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
        fclose(f);
        ck_assert_str_eq(buf, "../../../.cloister/objects\n");

        snprintf(path, sizeof(path), "%s/git/index", tmp);
        ck_assert_int_eq(git_index_open(&index, path), 0);
        ck_assert_uint_eq(git_index_entrycount(index), 2);
        e = git_index_get_bypath(index, "run", 0);
        ck_assert_ptr_nonnull(e);
        ck_assert_uint_eq(e->mode, GIT_FILEMODE_BLOB_EXECUTABLE);
        ck_assert_uint_eq(e->file_size, 10);
        ck_assert_int_eq(e->mtime.seconds, commit_time);
        ck_assert_int_eq(e->ctime.seconds, commit_time);
        ck_assert_uint_eq(e->mtime.nanoseconds, 0);
        ck_assert_uint_eq(e->uid, getuid());
        e = git_index_get_bypath(index, "hello.txt", 0);
        ck_assert_ptr_nonnull(e);
        ck_assert_uint_eq(e->file_size, 6);
        git_index_free(index);
}
END_TEST

START_TEST(prepare_refuses_a_non_empty_destination)
{
        _cleanup_close_ int fd = make_dest("git");
        struct gitdir_params p = params();
        _cleanup_free_ char *err = NULL;
        struct stat st;

        /* A planted symlink: refused as "not empty", never followed. */
        ck_assert_int_eq(symlinkat("/etc", fd, "HEAD"), 0);
        ck_assert_int_eq(gitdir_prepare_msg(&p, fd, &err), -ENOTEMPTY);
        ck_assert_ptr_nonnull(err);
        ck_assert_ptr_nonnull(strstr(err, "not empty"));
        ck_assert_int_eq(fstatat(fd, "config", &st, AT_SYMLINK_NOFOLLOW), -1);
}
END_TEST

START_TEST(prepare_refuses_bad_parameters)
{
        _cleanup_close_ int fd = make_dest("git");
        struct gitdir_params p = params();

        ck_assert_int_eq(gitdir_prepare(NULL, fd), -EINVAL);
        ck_assert_int_eq(gitdir_prepare(&p, -1), -EINVAL);
        p.alternates = "/abs/objects";
        ck_assert_int_eq(gitdir_prepare(&p, fd), -EINVAL);
        p.alternates = "two\nlines";
        ck_assert_int_eq(gitdir_prepare(&p, fd), -EINVAL);
        p = params();
        p.source = "relative/path";
        ck_assert_int_eq(gitdir_prepare(&p, fd), -EINVAL);
        p = params();
        p.rev = "";
        ck_assert_int_eq(gitdir_prepare(&p, fd), -EINVAL);
        p = params();
        p.rev = "no-such-branch";
        ck_assert_int_eq(gitdir_prepare(&p, fd), -ENOENT);
        p = params();
        p.source = tmp; /* a plain directory */
        ck_assert_int_eq(gitdir_prepare(&p, fd), -ENOENT);
        /* None of that left anything behind. */
        ck_assert_int_eq(faccessat(fd, "HEAD", F_OK, AT_SYMLINK_NOFOLLOW), -1);
        ck_assert_int_eq(faccessat(fd, "config", F_OK, AT_SYMLINK_NOFOLLOW), -1);
}
END_TEST

START_TEST(unusable_workspace_name_falls_back_to_cloister_workspace)
{
        _cleanup_close_ int fd = make_dest("git");
        struct gitdir_params p = params();
        git_repository *repo;
        char buf[64] = {0}, hex[GIT_OID_HEXSZ + 1];
        _cleanup_close_ int head = -1;
        git_oid id;

        ck_assert_int_eq(git_repository_open(&repo, source), 0);
        ck_assert_int_eq(git_reference_name_to_id(&id, repo, "HEAD"), 0);
        git_repository_free(repo);
        git_oid_tostr(hex, sizeof(hex), &id);

        /* A commit id is not a branch: the workspace gets cloister/<name>,
         * and a name git would refuse gives the fixed fallback. */
        p.rev = hex;
        p.name = "bad..name";
        ck_assert_int_eq(gitdir_prepare(&p, fd), 0);
        head = openat(fd, "HEAD", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        ck_assert_int_ge(head, 0);
        ck_assert_int_gt(read(head, buf, sizeof(buf) - 1), 0);
        ck_assert_str_eq(buf, "ref: refs/heads/cloister/workspace\n");
}
END_TEST

static Suite *gitdir_suite(void)
{
        Suite *s = suite_create("gitdir");
        TCase *tc = tcase_create("api");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, alternates_path_counts_repo_path_components);
        tcase_add_test(tc, alternates_path_rejects_unclean_paths);
        tcase_add_test(tc, commit_time_is_the_committer_time);
        tcase_add_test(tc, prepare_writes_head_config_refs_index_alternates);
        tcase_add_test(tc, prepare_refuses_a_non_empty_destination);
        tcase_add_test(tc, prepare_refuses_bad_parameters);
        tcase_add_test(tc, unusable_workspace_name_falls_back_to_cloister_workspace);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        SRunner *sr = srunner_create(gitdir_suite());
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
