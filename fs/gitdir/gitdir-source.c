/* SPDX-License-Identifier: MIT */
/*
 * gitdir-source.c: what gitdir learns from the source repository: the base
 * commit, the branch name to give the workspace, its tags, where its
 * objects live. Read-only: nothing here writes to the source (libgit2 opens
 * it without searching upwards and we only look up refs and objects).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "gitdir-private.h"

#define GITDIR_FALLBACK_BRANCH "cloister/workspace"

int gitdir_source_open(const char *source, git_repository **ret, char **err)
{
        int gr;

        if (!source || source[0] != '/')
                return gitdir_error(err, -EINVAL, "source must be an absolute path");
        gr = git_repository_open_ext(ret, source, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);
        if (gr < 0)
                return gitdir_git_error(err, gr, source);
        return 0;
}

static bool branch_name_ok(const char *branch)
{
        _cleanup_free_ char *full = NULL;
        int valid = 0;

        if (asprintf(&full, "refs/heads/%s", branch) < 0)
                return false;
        return git_reference_name_is_valid(&valid, full) == 0 && valid;
}

/*
 * The branch the workspace starts on: the source's branch when rev names one
 * (directly, or through HEAD), so `git status` says what the agent expects;
 * otherwise (a tag, an id, an expression) cloister/<name>.
 */
static int pick_branch(git_reference *ref, const git_oid *commit_id, const char *name, char **ret)
{
        _cleanup_reference_ git_reference *resolved = NULL;
        _cleanup_object_ git_object *peeled = NULL;
        _cleanup_free_ char *fallback = NULL;
        char *b;

        if (ref && git_reference_resolve(&resolved, ref) == 0 &&
            git_reference_is_branch(resolved) &&
            git_reference_peel(&peeled, resolved, GIT_OBJECT_COMMIT) == 0 &&
            git_oid_equal(git_object_id(peeled), commit_id) &&
            branch_name_ok(git_reference_shorthand(resolved))) {
                b = strdup(git_reference_shorthand(resolved));
                if (!b)
                        return -ENOMEM;
                *ret = b;
                return 0;
        }
        git_error_clear();

        if (name && asprintf(&fallback, "cloister/%s", name) >= 0 && branch_name_ok(fallback)) {
                *ret = TAKE_PTR(fallback);
                return 0;
        }
        b = strdup(GITDIR_FALLBACK_BRANCH);
        if (!b)
                return -ENOMEM;
        *ret = b;
        return 0;
}

int gitdir_source_resolve(git_repository *repo, const char *rev, const char *name, git_commit **ret,
                          char **ret_branch, char **err)
{
        _cleanup_object_ git_object *obj = NULL, *commit = NULL;
        _cleanup_reference_ git_reference *ref = NULL;
        _cleanup_free_ char *branch = NULL;
        int gr, r;

        if (!rev || !*rev)
                return gitdir_error(err, -EINVAL, "empty revision");
        gr = git_revparse_ext(&obj, &ref, repo, rev);
        if (gr < 0) {
                _cleanup_free_ char *what = NULL;
                if (asprintf(&what, "revision '%s'", rev) < 0)
                        return -ENOMEM;
                return gitdir_git_error(err, gr, what);
        }
        gr = git_object_peel(&commit, obj, GIT_OBJECT_COMMIT);
        if (gr < 0) {
                _cleanup_free_ char *what = NULL;
                if (asprintf(&what, "revision '%s' does not name a commit", rev) < 0)
                        return -ENOMEM;
                return gitdir_git_error(err, gr == GIT_EINVALIDSPEC ? GIT_ENOTFOUND : gr, what);
        }
        if (ret_branch) {
                r = pick_branch(ref, git_object_id(commit), name, &branch);
                if (r < 0)
                        return r;
                *ret_branch = TAKE_PTR(branch);
        }
        *ret = (git_commit *)TAKE_PTR(commit);
        return 0;
}

int gitdir_base_commit_time(const char *source, const char *rev, int64_t *ret)
{
        _cleanup_repository_ git_repository *repo = NULL;
        _cleanup_commit_ git_commit *commit = NULL;
        int r;

        git_libgit2_init();
        r = gitdir_source_open(source, &repo, NULL);
        if (r >= 0)
                r = gitdir_source_resolve(repo, rev, NULL, &commit, NULL, NULL);
        if (r >= 0)
                *ret = (int64_t)git_commit_time(commit);
        git_commit_free(TAKE_PTR(commit));
        git_repository_free(TAKE_PTR(repo));
        git_libgit2_shutdown();
        return r;
}

int gitdir_source_objects(const char *source, char **ret)
{
        _cleanup_repository_ git_repository *repo = NULL;
        git_buf buf = GIT_BUF_INIT;
        char *s = NULL;
        int r;

        git_libgit2_init();
        r = gitdir_source_open(source, &repo, NULL);
        if (r >= 0 && git_repository_item_path(&buf, repo, GIT_REPOSITORY_ITEM_OBJECTS) < 0)
                r = -EIO;
        if (r >= 0) {
                size_t l = buf.size;
                while (l > 1 && buf.ptr[l - 1] == '/')
                        l--;
                s = strndup(buf.ptr, l);
                if (!s)
                        r = -ENOMEM;
        }
        git_buf_dispose(&buf);
        git_repository_free(TAKE_PTR(repo));
        git_libgit2_shutdown();
        if (r < 0)
                return r;
        *ret = s;
        return 0;
}

int gitdir_alternates_path(const char *repo_path, char **ret)
{
        static const char tail[] = ".cloister/objects";
        size_t depth = 0, len;
        char *s, *o;

        if (!repo_path || repo_path[0] != '/')
                return -EINVAL;
        if (!streq(repo_path, "/")) {
                for (const char *c = repo_path; *c;) {
                        const char *e;
                        size_t l;

                        if (*c != '/')
                                return -EINVAL;
                        c++;
                        e = strchrnul(c, '/');
                        l = (size_t)(e - c);
                        if (l == 0 || (l == 1 && c[0] == '.') ||
                            (l == 2 && c[0] == '.' && c[1] == '.'))
                                return -EINVAL;
                        depth++;
                        c = e;
                }
        }
        /* Up from objects/ and .git/, then one level per component of repo_path. */
        depth += 2;
        len = depth * 3 + sizeof(tail);
        s = malloc(len);
        if (!s)
                return -ENOMEM;
        o = s;
        for (size_t i = 0; i < depth; i++, o += 3)
                memcpy(o, "../", 3);
        memcpy(o, tail, sizeof(tail));
        *ret = s;
        return 0;
}

struct tag {
        char *name;
        git_oid id;
};

static int tag_cmp(const void *a, const void *b)
{
        return strcmp(((const struct tag *)a)->name, ((const struct tag *)b)->name);
}

static void tags_free(struct tag *t, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(t[i].name);
        free(t);
}

/*
 * Tags make `git describe` (which many builds call for a version string)
 * and `git log --decorate` work. They are written as one packed-refs file
 * rather than one file each: one write however many tags there are. The
 * header claims "sorted" only, not "peeled", so git peels annotated tags
 * itself when it needs to, and we read no tag objects at mount.
 */
int gitdir_write_tags(git_repository *repo, int dirfd, char **err)
{
        git_reference_iterator *it = NULL;
        git_reference *ref = NULL;
        struct tag *tags = NULL;
        size_t n = 0, cap = 0;
        FILE *f = NULL;
        char *text = NULL;
        size_t text_len = 0;
        int gr, r = 0;

        gr = git_reference_iterator_glob_new(&it, repo, "refs/tags/*");
        if (gr < 0)
                return gitdir_git_error(err, gr, "list the source's tags");
        while ((gr = git_reference_next(&ref, it)) == 0) {
                const git_oid *id = git_reference_target(ref);
                int valid = 0;

                if (id && git_reference_name_is_valid(&valid, git_reference_name(ref)) == 0 &&
                    valid) {
                        if (n == cap) {
                                size_t ncap = cap ? cap * 2 : 64;
                                struct tag *nt = reallocarray(tags, ncap, sizeof(*tags));
                                if (!nt) {
                                        r = -ENOMEM;
                                        goto out;
                                }
                                tags = nt;
                                cap = ncap;
                        }
                        tags[n].name = strdup(git_reference_name(ref));
                        if (!tags[n].name) {
                                r = -ENOMEM;
                                goto out;
                        }
                        git_oid_cpy(&tags[n].id, id);
                        n++;
                }
                git_reference_free(TAKE_PTR(ref));
        }
        if (gr != GIT_ITEROVER) {
                r = gitdir_git_error(err, gr, "list the source's tags");
                goto out;
        }
        if (n == 0)
                goto out;
        qsort(tags, n, sizeof(*tags), tag_cmp);

        f = open_memstream(&text, &text_len);
        if (!f) {
                r = -ENOMEM;
                goto out;
        }
        fputs("# pack-refs with: sorted \n", f);
        for (size_t i = 0; i < n; i++) {
                char hex[GIT_OID_HEXSZ + 1];
                git_oid_tostr(hex, sizeof(hex), &tags[i].id);
                fprintf(f, "%s %s\n", hex, tags[i].name);
        }
        if (fclose(TAKE_PTR(f)) != 0) {
                r = -ENOMEM;
                goto out;
        }
        r = gitdir_write_file(dirfd, "packed-refs", text, text_len, err);
out:
        if (f)
                fclose(f);
        free(text);
        git_reference_free(ref);
        git_reference_iterator_free(it);
        tags_free(tags, n);
        return r;
}
