/* SPDX-License-Identifier: MIT */
/*
 * gitdir.c: gitdir_prepare(), which lays out the workspace's `.git`.
 *
 * Order matters: HEAD is written last. git recognizes a repository by HEAD
 * (plus objects/ and refs/), so a directory left half-made by a failure is
 * never mistaken for a working one.
 *
 * The config is synthesized from a fixed text; the source's config is never
 * read into it. That is the sanitization: nothing the host repository holds
 * (credential helpers, url.*.insteadOf with tokens, include.path to host
 * files, core.hooksPath, core.fsmonitor or core.sshCommand commands, remote
 * URLs) can reach the agent or run in the sandbox.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "gitdir-private.h"

static const char config_text[] =
        "# Synthesized by cloister at the first mount (docs/workspace-git.md).\n"
        "# The source repository's config is not copied: no remotes, credentials,\n"
        "# url rewrites, includes or hooks reach the workspace.\n"
        "[core]\n"
        "\trepositoryformatversion = 0\n"
        "\tbare = false\n"
        "\tfilemode = true\n"
        "\tsymlinks = true\n"
        "\tignorecase = false\n"
        "\tlogallrefupdates = true\n"
        "\t# git's own checks (checkStat = default, trustctime = true): the index\n"
        "\t# holds what the filesystem reports for untouched files (mtime =\n"
        "\t# ctime = the base commit's time, their inode numbers, the agent as\n"
        "\t# owner), and a changed file has a real ctime.\n"
        "\t# No hook runs: /dev/null is not a directory, so git finds none.\n"
        "\thooksPath = /dev/null\n"
        "\tfsmonitor = false\n"
        "\t# Off, and not only by default (feature.manyFiles would turn it on):\n"
        "\t# untouched directories share the base commit's mtime, and the cache\n"
        "\t# keys on a directory's stat data.\n"
        "\tuntrackedCache = false\n"
        "\t# Line endings as the filesystem shows the base: only what the\n"
        "\t# .gitattributes say (eol=crlf), whatever a system config says.\n"
        "\tautocrlf = false\n"
        "\teol = lf\n"
        "[credential]\n"
        "\t# Empty: forget any helper configured before this file.\n"
        "\thelper =\n"
        "[user]\n"
        "\tname = Cloister Agent\n"
        "\temail = agent@cloister.invalid\n"
        "[commit]\n"
        "\tgpgSign = false\n"
        "[tag]\n"
        "\tgpgSign = false\n"
        "[gc]\n"
        "\tauto = 0\n"
        "[maintenance]\n"
        "\tauto = false\n";

static int dir_is_empty(int dirfd, char **err)
{
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int fd;

        fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return gitdir_error(err, negative_errno(), "destination is not a directory: %m");
        d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return gitdir_error(err, negative_errno(), "read destination: %m");
        }
        errno = 0;
        while ((de = readdir(d))) {
                if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        return gitdir_error(err, -ENOTEMPTY, "destination is not empty (%s)",
                                            de->d_name);
        }
        if (errno != 0)
                return gitdir_error(err, negative_errno(), "read destination: %m");
        return 0;
}

static bool alternates_ok(const char *a)
{
        /* One line, relative (so it resolves on the host and in the sandbox). */
        return a && *a && a[0] != '/' && !strpbrk(a, "\n\r") && strlen(a) < 4096;
}

static int write_skeleton(int dest, const char *alternates, const char *extra, char **err)
{
        static const char *const dirs[] = {"objects/pack", "refs/heads", "refs/tags"};
        _cleanup_close_ int info = -1;
        _cleanup_free_ char *line = NULL;
        int r;

        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                _cleanup_close_ int fd = -1;
                r = gitdir_mkdirs(dest, dirs[i], &fd, err);
                if (r < 0)
                        return r;
        }
        r = gitdir_mkdirs(dest, "objects/info", &info, err);
        if (r < 0)
                return r;
        if (asprintf(&line, "%s\n", alternates) < 0)
                return -ENOMEM;
        r = gitdir_write_file(info, "alternates", line, strlen(line), err);
        if (r < 0)
                return r;
        if (!extra)
                return gitdir_write_file(dest, "config", config_text, sizeof(config_text) - 1, err);
        _cleanup_free_ char *text = NULL;
        if (asprintf(&text, "%s%s", config_text, extra) < 0)
                return -ENOMEM;
        return gitdir_write_file(dest, "config", text, strlen(text), err);
}

/* The source repository, and the base commit, its tree and branch name. */
static int open_base(const struct gitdir_params *p, git_repository **repo, git_commit **commit,
                     git_tree **tree, char **branch, char **err)
{
        int gr, r;

        r = gitdir_source_open(p->source, repo, err);
        if (r < 0)
                return r;
        r = gitdir_source_resolve(*repo, p->rev, p->name, commit, branch, err);
        if (r < 0)
                return r;
        gr = git_commit_tree(tree, *commit);
        if (gr < 0)
                return gitdir_git_error(err, gr, "read the base commit's tree");
        return 0;
}

static int prepare(const struct gitdir_params *p, int dest, char **err)
{
        _cleanup_repository_ git_repository *repo = NULL;
        _cleanup_commit_ git_commit *commit = NULL;
        _cleanup_tree_ git_tree *tree = NULL;
        _cleanup_free_ char *branch = NULL, *refname = NULL, *head = NULL;
        int r;

        if (!p || dest < 0)
                return gitdir_error(err, -EINVAL, "missing parameters");
        if (!alternates_ok(p->alternates))
                return gitdir_error(err, -EINVAL, "alternates must be one relative path (got '%s')",
                                    p->alternates ? p->alternates : "(null)");
        r = dir_is_empty(dest, err);
        if (r < 0)
                return r;

        r = open_base(p, &repo, &commit, &tree, &branch, err);
        if (r < 0)
                return r;

        r = write_skeleton(dest, p->alternates, p->config_extra, err);
        if (r < 0)
                return r;
        if (asprintf(&refname, "refs/heads/%s", branch) < 0)
                return -ENOMEM;
        r = gitdir_write_loose_ref(dest, refname, git_commit_id(commit), err);
        if (r < 0)
                return r;
        r = gitdir_write_tags(repo, dest, err);
        if (r < 0)
                return r;
        if (!p->skip_index) {
                r = gitdir_write_index(repo, tree, p, dest, "index", err);
                if (r < 0)
                        return r;
        }

        if (asprintf(&head, "ref: %s\n", refname) < 0)
                return -ENOMEM;
        return gitdir_write_file(dest, "HEAD", head, strlen(head), err);
}

/* After a call between git_libgit2_init() and here: hand out or free its message. */
static int finish_msg(int r, char *err, char **ret_error)
{
        git_error_clear();
        git_libgit2_shutdown();
        if (r < 0 && ret_error && !err)
                err = strdup(strerror(-r));
        if (r < 0 && ret_error)
                *ret_error = err;
        else
                free(err);
        return r;
}

int gitdir_prepare_msg(const struct gitdir_params *p, int dest_dirfd, char **ret_error)
{
        char *err = NULL;
        int r;

        r = git_libgit2_init();
        if (r < 0)
                return gitdir_git_error(ret_error, r, "initialize libgit2");
        r = prepare(p, dest_dirfd, &err);
        return finish_msg(r, err, ret_error);
}

static int write_index(const struct gitdir_params *p, int dest, const char *name, char **err)
{
        _cleanup_repository_ git_repository *repo = NULL;
        _cleanup_commit_ git_commit *commit = NULL;
        _cleanup_tree_ git_tree *tree = NULL;
        _cleanup_free_ char *branch = NULL;
        int r;

        if (!p || dest < 0 || !name || !*name || strchr(name, '/'))
                return gitdir_error(err, -EINVAL, "missing parameters");
        r = open_base(p, &repo, &commit, &tree, &branch, err);
        if (r < 0)
                return r;
        return gitdir_write_index(repo, tree, p, dest, name, err);
}

int gitdir_write_index_msg(const struct gitdir_params *p, int dest_dirfd, const char *name,
                           char **ret_error)
{
        char *err = NULL;
        int r;

        r = git_libgit2_init();
        if (r < 0)
                return gitdir_git_error(ret_error, r, "initialize libgit2");
        r = write_index(p, dest_dirfd, name, &err);
        return finish_msg(r, err, ret_error);
}

int gitdir_prepare(const struct gitdir_params *p, int dest_dirfd)
{
        return gitdir_prepare_msg(p, dest_dirfd, NULL);
}
