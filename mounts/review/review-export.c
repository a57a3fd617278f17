/* SPDX-License-Identifier: MIT */
/*
 * review-export.c: record the workspace as a commit on top of the base,
 * point refs/cloister/NAME at it, and write commits as an mbox series.
 *
 * The source repository is touched in exactly two ways: new objects (or
 * none, for an in-memory review) and the one ref refs/cloister/NAME. HEAD,
 * the index, the working tree and every other ref stay as they were.
 *
 * The mbox is written here rather than by git_email_create_from_diff(),
 * which prints the agent's subject, author and the diffstat's and summary's
 * file names raw: each goes through lib/quote instead. The layout is
 * libgit2's (and git format-patch's), so `git am` reads it the same way.
 */
#include <git2/version.h>
#include <time.h>

#include "review-private.h"
#include "lib/quote.h"

/* "Name <email>" -> signature "now". */
static int signature_parse(review *r, const char *s, git_signature **ret)
{
        const char *lt = strrchr(s, '<'), *gt = strrchr(s, '>');
        _cleanup_free_ char *name = NULL, *email = NULL;
        size_t nl;
        int g;

        if (!lt || !gt || gt < lt || gt[1] != 0)
                return review_fail(r, -EINVAL, "author '%s': expected 'Name <email>'", s);
        nl = (size_t)(lt - s);
        while (nl > 0 && s[nl - 1] == ' ')
                nl--;
        name = strndup(s, nl);
        email = strndup(lt + 1, (size_t)(gt - lt - 1));
        if (!name || !email)
                return review_fail(r, -ENOMEM, "out of memory");
        if (!*name || !*email)
                return review_fail(r, -EINVAL, "author '%s': expected 'Name <email>'", s);
        g = git_signature_now(ret, name, email);
        if (g < 0)
                return review_git_fail(r, g, "author '%s'", s);
        return 0;
}

/* The source repo's user.name/user.email if set, else "cloister". */
static int signature_default(review *r, git_signature **ret)
{
        if (git_signature_default(ret, r->repo) == 0)
                return 0;
        git_error_clear();
        int g = git_signature_now(ret, "cloister", "cloister@localhost");
        return g < 0 ? review_git_fail(r, g, "default signature") : 0;
}

/*
 * The paths the tree left out, as trailers of the message: the commit
 * itself says which of its paths are the base's only because the review
 * could not take the workspace's (a reader of the history, a pipeline
 * pushing it). The agent's names are quoted: a newline in one cannot
 * forge a trailer or a line.
 */
static int left_out_trailers(review *r, char **msg)
{
        size_t n, more;
        const struct review_left_out *l = review_left_out(r, &n, &more);
        char *text = NULL;
        size_t len = 0;
        FILE *f;

        if (n == 0 && more == 0)
                return 0;
        f = open_memstream(&text, &len);
        if (!f)
                return review_fail(r, -ENOMEM, "out of memory");
        fputs(*msg, f);
        fputc('\n', f);
        for (size_t i = 0; i < n; i++) {
                char why[256];
                review_left_out_describe(&l[i], why, sizeof(why));
                fputs("Cloister-Left-Out: ", f);
                quote_fputs(f, l[i].path, 0);
                fprintf(f, " (%s)\n", why);
        }
        if (more)
                fprintf(f, "Cloister-Left-Out: %zu more paths, not listed\n", more);
        if (fclose(f) != 0 || !text) {
                free(text);
                return review_fail(r, -ENOMEM, "out of memory");
        }
        free(*msg);
        *msg = text;
        return 0;
}

/*
 * The image the work was made on (issue 49): a trailer, in the block of the
 * left-out ones when there are any. The digest comes from the config or the
 * mount's record, never from the agent.
 */
static int image_trailer(review *r, char **msg, const char *digest, bool in_block)
{
        char *text = NULL;

        if (asprintf(&text, "%s%sCloister-Image: %s\n", *msg, in_block ? "" : "\n", digest) < 0)
                return review_fail(r, -ENOMEM, "out of memory");
        free(*msg);
        *msg = text;
        return 0;
}

int review_commit(review *r, const struct review_commit_options *o, git_oid *ret)
{
        git_signature *author = NULL, *committer = NULL;
        _cleanup_free_ char *msg = NULL;
        git_tree *tree = NULL;
        const git_commit *parents[1] = {r->base};
        size_t n_left = 0, more_left = 0;
        int g, k;

        k = review_build(r);
        if (k < 0)
                return k;
        /*
         * git would not make an empty commit either, and git am cannot apply
         * one; but when the work is only what was left out, the commit is
         * where that is said (its trailers).
         */
        (void)review_left_out(r, &n_left, &more_left);
        if (git_oid_equal(&r->tree, git_tree_id(r->base_tree)) && n_left + more_left == 0)
                return review_fail(r, -ENODATA,
                                   "the workspace has no changes against the base revision %s; "
                                   "nothing to export",
                                   r->o.rev);
        k = signature_default(r, &committer);
        if (k < 0)
                goto out;
        if (o && o->author)
                k = signature_parse(r, o->author, &author);
        else
                k = git_signature_dup(&author, committer) < 0 ? review_git_fail(r, -1, "signature")
                                                              : 0;
        if (k < 0)
                goto out;
        if (o && o->message) {
                size_t l = strlen(o->message);
                if (asprintf(&msg, "%s%s", o->message, l && o->message[l - 1] == '\n' ? "" : "\n") <
                    0)
                        msg = NULL;
        } else if (asprintf(&msg, "Work from cloister workspace %s\n",
                            o && o->name ? o->name : "") < 0) {
                msg = NULL;
        }
        if (!msg) {
                k = review_fail(r, -ENOMEM, "out of memory");
                goto out;
        }
        k = left_out_trailers(r, &msg);
        if (k >= 0 && o && o->image)
                k = image_trailer(r, &msg, o->image, n_left + more_left > 0);
        if (k < 0)
                goto out;
        g = git_tree_lookup(&tree, r->repo, &r->tree);
        if (g == 0)
                g = git_commit_create(ret, r->repo, NULL, author, committer, NULL, msg, tree, 1,
                                      parents);
        if (g < 0)
                k = review_git_fail(r, g, "creating the commit");
        else if (!r->o.in_memory)
                k = review_persist(r);
out:
        git_tree_free(tree);
        git_signature_free(author);
        git_signature_free(committer);
        return k;
}

int review_ref_set(review *r, const char *name, const git_oid *id)
{
        _cleanup_free_ char *refname = NULL;
        git_reference *ref = NULL;
        int valid = 0, g;

        if (asprintf(&refname, "refs/cloister/%s", name) < 0)
                return review_fail(r, -ENOMEM, "out of memory");
        if (git_reference_name_is_valid(&valid, refname) < 0 || !valid)
                return review_fail(r, -EINVAL, "'%s' is not a valid ref name", refname);
        /* The objects may have just arrived in a new pack: let the odb see them. */
        git_odb_refresh(r->odb);
        /*
         * Every export is kept in the ref's reflog, so that a later one
         * (each --commit is a new commit on the base, never a fast-forward
         * of the last) loses nothing: `git reflog refs/cloister/NAME`. git
         * logs refs outside refs/heads only once their log exists.
         */
        g = git_reference_ensure_log(r->repo, refname);
        if (g < 0)
                return review_git_fail(r, g, "creating the reflog of %s", refname);
        bool had = git_reference_name_to_id(&r->replaced, r->repo, refname) == 0 &&
                   !git_oid_equal(&r->replaced, id);
        g = git_reference_create(&ref, r->repo, refname, id, 1, "cloister export");
        git_reference_free(ref);
        if (g < 0)
                return review_git_fail(r, g, "setting %s", refname);
        r->has_replaced = had;
        return 0;
}

const git_oid *review_ref_replaced(const review *r)
{
        return r->has_replaced ? &r->replaced : NULL;
}

/* The repository that holds these commits: the agent's scratch copy if any. */
static git_repository *commits_repo(review *r)
{
        return r->scratch_repo ? r->scratch_repo : r->repo;
}

/* RFC 2822, as libgit2 and git write it: "Tue, 3 Dec 2024 07:57:00 +0100". */
static void date_print(FILE *out, const git_time *when)
{
        static const char wday[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
        static const char mon[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
        time_t t = (time_t)(when->time + (git_time_t)when->offset * 60);
        int off = when->offset < 0 ? -when->offset : when->offset;
        struct tm tm;

        if (!gmtime_r(&t, &tm))
                tm = (struct tm){.tm_mday = 1, .tm_year = 70, .tm_wday = 4};
        fprintf(out, "Date: %s, %d %s %04d %02d:%02d:%02d %c%02d%02d\n", wday[tm.tm_wday],
                tm.tm_mday, mon[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec,
                when->offset < 0 ? '-' : '+', off / 60, off % 60);
}

/*
 * The message, each line quoted on its own (a line with a control
 * character in it becomes a quoted string; other lines stay as they are).
 */
static void text_print(FILE *out, const char *text)
{
        _cleanup_free_ char *copy = strdup(text);
        char *line = copy;

        if (!copy)
                return;
        while (*line) {
                char *nl = strchr(line, '\n');

                if (nl)
                        *nl = '\0';
                quote_fputs(out, line, QUOTE_UTF8);
                fputc('\n', out);
                if (!nl)
                        break;
                line = nl + 1;
        }
}

/*
 * Would `git am` change this text patch? Its mailsplit takes a CR before a
 * line's end for the mail's own line ending and drops it (git am --keep-cr
 * aside), so a file with a CR at a line end came back without it, and a
 * context line with one no longer matched.
 */
static bool patch_has_line_end_cr(git_patch *patch)
{
        for (size_t h = 0; h < git_patch_num_hunks(patch); h++) {
                int lines = git_patch_num_lines_in_hunk(patch, h);
                for (int l = 0; l < lines; l++) {
                        const git_diff_line *line = NULL;
                        size_t len;
                        if (git_patch_get_line_in_hunk(&line, patch, h, (size_t)l) < 0)
                                return true; /* cannot tell: the binary form is always safe */
                        len = line->content_len;
                        if (len && line->content[len - 1] == '\n')
                                len--;
                        if (len && line->content[len - 1] == '\r')
                                return true;
                }
        }
        return false;
}

/* A patch as git's text, to out. */
static int patch_buf_write(git_patch *patch, FILE *out)
{
        git_buf buf = GIT_BUF_INIT;
        int g = git_patch_to_buf(&buf, patch);

        if (g == 0 && fwrite(buf.ptr, 1, buf.size, out) != buf.size)
                g = -1;
        git_buf_dispose(&buf);
        return g;
}

/* Delta i of diff as a patch, to out. */
static int patch_write(git_diff *diff, size_t i, FILE *out)
{
        git_patch *patch = NULL;
        int g = git_patch_from_diff(&patch, diff, i);

        if (g == 0)
                g = patch_buf_write(patch, out);
        git_patch_free(patch);
        return g;
}

/*
 * The change of delta d as a binary patch, headers and all: a diff of
 * just its two paths (exact names, not patterns) with FORCE_BINARY. A
 * rename may come out as a deletion and an addition; git am makes the
 * same tree of either.
 */
static int binary_patch_write(git_repository *repo, git_tree *pt, git_tree *t,
                              const git_diff_delta *d, FILE *out)
{
        git_diff_options o = GIT_DIFF_OPTIONS_INIT;
        git_diff_find_options f = GIT_DIFF_FIND_OPTIONS_INIT;
        char *paths[2] = {(char *)d->old_file.path, (char *)d->new_file.path};
        git_diff *diff = NULL;
        int g;

        o.flags = GIT_DIFF_SHOW_BINARY | GIT_DIFF_FORCE_BINARY | GIT_DIFF_DISABLE_PATHSPEC_MATCH;
        o.pathspec.strings = paths;
        o.pathspec.count = streq(paths[0], paths[1]) ? 1 : 2;
        f.flags = GIT_DIFF_FIND_RENAMES;
        g = git_diff_tree_to_tree(&diff, repo, pt, t, &o);
        if (g == 0)
                g = git_diff_find_similar(diff, &f);
        for (size_t i = 0; g == 0 && i < git_diff_num_deltas(diff); i++) {
                const git_diff_delta *e = git_diff_get_delta(diff, i);
                /* A name matches what is below it too (a file that became a dir): not ours. */
                if (!streq(e->old_file.path, paths[0]) && !streq(e->old_file.path, paths[1]) &&
                    !streq(e->new_file.path, paths[0]) && !streq(e->new_file.path, paths[1]))
                        continue;
                g = patch_write(diff, i, out);
        }
        git_diff_free(diff);
        return g;
}

static int email_write(git_repository *repo, git_tree *pt, git_tree *t, git_diff *diff, size_t i,
                       size_t n, const git_oid *id, git_commit *c, FILE *out)
{
        const git_signature *a = git_commit_author(c);
        const char *summary = git_commit_summary(c), *body = git_commit_body(c);
        char hex[GIT_OID_HEXSZ + 1];
        int g;

        fprintf(out,
                "From %s Mon Sep 17 00:00:00 2001\nFrom: ", git_oid_tostr(hex, sizeof(hex), id));
        quote_fputs(out, a->name, QUOTE_UTF8);
        fputs(" <", out);
        quote_fputs(out, a->email, QUOTE_UTF8);
        fputs(">\n", out);
        date_print(out, &a->when);
        /* Numbered [PATCH i/n] like git format-patch; git am takes either. */
        if (n > 1)
                fprintf(out, "Subject: [PATCH %zu/%zu] ", i, n);
        else
                fputs("Subject: [PATCH] ", out);
        quote_fputs(out, summary ? summary : "", QUOTE_UTF8);
        fputs("\n\n", out);
        if (body)
                text_print(out, body);
        fputs("---\n", out);
        g = review_stat_write(diff, out, true);
        fputc('\n', out);
        for (size_t d = 0; g == 0 && d < git_diff_num_deltas(diff); d++) {
                git_patch *patch = NULL;

                g = git_patch_from_diff(&patch, diff, d);
                if (g == 0 && patch_has_line_end_cr(patch))
                        g = binary_patch_write(repo, pt, t, git_diff_get_delta(diff, d), out);
                else if (g == 0)
                        g = patch_buf_write(patch, out);
                git_patch_free(patch);
        }
        fputs("--\nlibgit2 " LIBGIT2_VERSION "\n\n", out);
        return g;
}

int review_mbox(review *r, const git_oid *commits, size_t n, FILE *out)
{
        git_repository *repo = commits_repo(r);
        int k = 0;

        /* The workspace's own commit: shown with the diff's attributes (review_diff_repo). */
        if (repo == r->repo)
                k = review_diff_repo(r, &repo);

        for (size_t i = 0; i < n && k == 0; i++) {
                git_diff_options dopts = GIT_DIFF_OPTIONS_INIT;
                git_diff_find_options fopts = GIT_DIFF_FIND_OPTIONS_INIT;
                git_commit *c = NULL, *parent = NULL;
                git_tree *t = NULL, *pt = NULL;
                git_diff *diff = NULL;
                char idstr[GIT_OID_HEXSZ + 1];
                int g;

                git_oid_tostr(idstr, sizeof(idstr), &commits[i]);
                g = git_commit_lookup(&c, repo, &commits[i]);
                if (g == 0 && git_commit_parentcount(c) != 1) {
                        k = review_fail(r, -EINVAL,
                                        "commit %s is a merge or a root commit; "
                                        "an mbox holds a linear series",
                                        idstr);
                        goto next;
                }
                if (g == 0)
                        g = git_commit_parent(&parent, c, 0);
                if (g == 0)
                        g = git_commit_tree(&t, c);
                if (g == 0)
                        g = git_commit_tree(&pt, parent);
                dopts.flags = GIT_DIFF_SHOW_BINARY;
                if (g == 0)
                        g = git_diff_tree_to_tree(&diff, repo, pt, t, &dopts);
                fopts.flags = GIT_DIFF_FIND_RENAMES;
                if (g == 0)
                        g = git_diff_find_similar(diff, &fopts);
                if (g == 0)
                        g = email_write(repo, pt, t, diff, i + 1, n, &commits[i], c, out);
                if (g < 0 && ferror(out)) {
                        k = review_fail(r, -EIO, "writing the mbox: %m");
                        goto next;
                }
                if (g < 0) {
                        k = review_git_fail(r, g, "formatting commit %s as an email", idstr);
                        goto next;
                }
                if (ferror(out))
                        k = review_fail(r, -EIO, "writing the mbox: %m");
        next:
                git_diff_free(diff);
                git_tree_free(t);
                git_tree_free(pt);
                git_commit_free(parent);
                git_commit_free(c);
        }
        return k;
}
