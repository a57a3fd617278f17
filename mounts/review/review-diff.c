/* SPDX-License-Identifier: MIT */
/*
 * review-diff.c: the workspace's diff against the base revision, printed
 * by libgit2 in git's formats (patch, --stat, --name-status), and the list
 * of hidden-home changes (names and sizes only: the home may hold secrets
 * the agent was given, so its contents never go into a patch).
 *
 * Patches carry full object ids and binary files as "GIT binary patch", so
 * that `git apply` on a clone at the base reproduces the workspace exactly.
 */
#include <errno.h>
#include <fcntl.h>
#include <git2/sys/repository.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "journal.h"
#include "review-private.h"
#include "lib/quote.h"

/*
 * The repository the diff runs in: the source opened bare, with the base
 * tree as its index. The diff looks up each file's "diff" attribute
 * (binary or text, the funcname driver). In the source with its work tree
 * libgit2 does that by stat and realpath(3) of every component of the path
 * there, for both sides: 100,000 readlink(2)s, a quarter of `cloister
 * diff` over 10,000 changed files; bare, it looks in the index. So the
 * attributes are the base revision's .gitattributes, the source's
 * info/attributes and core.attributesFile, as `git diff` at the base on
 * the host would take them; never the host work tree's files, and never
 * the agent's: a "-diff" it added would show its change to the reviewer
 * as a binary patch.
 */
int review_diff_repo(review *r, git_repository **ret)
{
        git_index *base, *idx = NULL;
        int g, k;

        if (r->bare_repo) {
                *ret = r->bare_repo;
                return 0;
        }
        k = review_rules_base_index(r, &base);
        if (k < 0)
                return k;
        /*
         * Only the base's .gitattributes: libgit2 looks each attribute file
         * up by a binary search of the index, ~8 per path; over the whole
         * base tree that was a third of the diff's time again.
         */
        g = git_index_new(&idx);
        for (size_t i = 0, n = git_index_entrycount(base); g == 0 && i < n; i++) {
                const git_index_entry *e = git_index_get_byindex(base, i);
                const char *slash = strrchr(e->path, '/');
                if (streq(slash ? slash + 1 : e->path, ".gitattributes"))
                        g = git_index_add(idx, e);
        }
        /* BARE wants the git dir itself (a linked work tree's is below the common one). */
        if (g == 0)
                g = git_repository_open_ext(
                        &r->bare_repo, git_repository_path(r->repo),
                        GIT_REPOSITORY_OPEN_NO_SEARCH | GIT_REPOSITORY_OPEN_BARE, NULL);
        /* Its odb is ours: the workspace's new objects are in our mempack only. */
        if (g == 0)
                g = git_repository_set_odb(r->bare_repo, r->odb);
        if (g == 0)
                g = git_repository_set_index(r->bare_repo, idx);
        git_index_free(idx);
        if (g < 0) {
                git_repository_free(r->bare_repo);
                r->bare_repo = NULL;
                return review_git_fail(r, g, "source repository '%s'", r->o.source);
        }
        *ret = r->bare_repo;
        return 0;
}

int review_diff(review *r, git_diff **ret)
{
        git_diff_options dopts = GIT_DIFF_OPTIONS_INIT;
        git_diff_find_options fopts = GIT_DIFF_FIND_OPTIONS_INIT;
        git_diff *diff = NULL;
        git_tree *tree = NULL, *base = NULL;
        git_repository *repo = NULL;
        int g, k;

        k = review_build(r);
        if (k == 0)
                k = review_diff_repo(r, &repo);
        if (k < 0)
                return k;
        g = git_tree_lookup(&tree, repo, &r->tree);
        if (g == 0)
                g = git_tree_lookup(&base, repo,
                                    r->has_since ? &r->since : git_tree_id(r->base_tree));
        if (g < 0) {
                git_tree_free(tree);
                return review_git_fail(r, g, "looking up the workspace tree");
        }
        /* SHOW_BINARY: binary deltas, and full ids on the index line (git apply wants them). */
        dopts.flags = GIT_DIFF_SHOW_BINARY;
        /*
         * libgit2 does not load a blob over max_size (512 MiB unless set), so
         * its "binary patch" would be empty. No blob the review makes is over
         * REVIEW_MAX_FILE_SIZE (larger files are left out), so that is what
         * it is set to.
         */
        dopts.max_size = (git_off_t)REVIEW_MAX_FILE_SIZE;
        g = git_diff_tree_to_tree(&diff, repo, base, tree, &dopts);
        git_tree_free(base);
        git_tree_free(tree);
        if (g < 0)
                return review_git_fail(r, g, "diffing the workspace against the base");
        fopts.flags = GIT_DIFF_FIND_RENAMES;
        g = git_diff_find_similar(diff, &fopts);
        if (g < 0) {
                git_diff_free(diff);
                return review_git_fail(r, g, "detecting renames");
        }
        *ret = diff;
        return 0;
}

static int line_print(const git_diff_delta *delta, const git_diff_hunk *hunk,
                      const git_diff_line *line, void *payload)
{
        FILE *out = payload;

        /* libgit2 leaves the origin out of the content of these three kinds. */
        if (line->origin == GIT_DIFF_LINE_CONTEXT || line->origin == GIT_DIFF_LINE_ADDITION ||
            line->origin == GIT_DIFF_LINE_DELETION)
                if (fputc(line->origin, out) == EOF)
                        return -1;
        if (line->content_len &&
            fwrite(line->content, 1, line->content_len, out) != line->content_len)
                return -1;
        return 0;
}

/*
 * Agent-chosen names reach a terminal only through lib/quote, quoted as git
 * quotes paths (core.quotePath): a newline cannot forge a line and an
 * escape sequence cannot drive the terminal.
 */
static void path_print(FILE *out, const char *p)
{
        quote_fputs(out, p, 0);
}

/*
 * git diff --name-status: libgit2's NAME_STATUS format differs from git's
 * (it appends mode markers and has no similarity score), so the lines are
 * put together here from libgit2's deltas: "M\tpath", "R087\told\tnew".
 */
static int name_status_print(git_diff *diff, FILE *out)
{
        size_t n = git_diff_num_deltas(diff);

        for (size_t i = 0; i < n; i++) {
                const git_diff_delta *d = git_diff_get_delta(diff, i);
                char c = git_diff_status_char(d->status);
                if (d->status == GIT_DELTA_RENAMED || d->status == GIT_DELTA_COPIED) {
                        fprintf(out, "%c%03u\t", c, (unsigned)d->similarity);
                        path_print(out, d->old_file.path);
                        fputc('\t', out);
                        path_print(out, d->new_file.path);
                } else {
                        fprintf(out, "%c\t", c);
                        path_print(out, d->status == GIT_DELTA_DELETED ? d->old_file.path
                                                                       : d->new_file.path);
                }
                if (fputc('\n', out) == EOF)
                        return -1;
        }
        return 0;
}

static bool stat_names_plain(git_diff *diff)
{
        size_t n = git_diff_num_deltas(diff);

        for (size_t i = 0; i < n; i++) {
                const git_diff_delta *d = git_diff_get_delta(diff, i);
                if (!quote_is_plain(d->old_file.path, 0) || !quote_is_plain(d->new_file.path, 0))
                        return false;
        }
        return true;
}

/* Delta i's line counts, or libgit2's error code. */
static int line_stats(git_diff *diff, size_t i, size_t *ret_added, size_t *ret_removed)
{
        git_patch *patch = NULL;
        size_t a = 0, b = 0;
        int g = git_patch_from_diff(&patch, diff, i);

        /* No patch and no error: a delta libgit2 has no lines for (binary, unchanged). */
        if (g == 0 && patch)
                g = git_patch_line_stats(NULL, &a, &b, patch);
        git_patch_free(patch);
        if (g < 0)
                return g;
        *ret_added = a;
        *ret_removed = b;
        return 0;
}

int review_line_stats(review *r, git_diff *diff, size_t i, size_t *ret_added, size_t *ret_removed)
{
        int g = line_stats(diff, i, ret_added, ret_removed);

        return g < 0 ? review_git_fail(r, g, "counting the lines of change %zu", i) : 0;
}

/* A forward cursor over a blob's lines: the offset of line `line` (1-based), never going back. */
struct line_cursor {
        const char *buf;
        size_t size, pos;
        uint32_t line;
};

static uint64_t line_offset(struct line_cursor *c, uint32_t line)
{
        while (c->line < line && c->pos < c->size) {
                const char *nl = memchr(c->buf + c->pos, '\n', c->size - c->pos);
                c->pos = nl ? (size_t)(nl - c->buf) + 1 : c->size;
                c->line++;
        }
        return c->pos;
}

int review_hunks(review *r, git_diff *diff, size_t i, struct review_hunk **ret, size_t *ret_n)
{
        _cleanup_free_ struct review_hunk *v = NULL;
        git_patch *patch = NULL;
        git_blob *blob = NULL;
        git_repository *repo = NULL;
        struct line_cursor cur = {.line = 1};
        size_t n = 0;
        int g, k;

        k = review_diff_repo(r, &repo);
        if (k < 0)
                return k;
        g = git_patch_from_diff(&patch, diff, i);
        if (g < 0)
                return review_git_fail(r, g, "the hunks of change %zu", i);
        n = patch ? git_patch_num_hunks(patch) : 0;
        if (n) {
                const git_diff_delta *d = git_patch_get_delta(patch);
                /* The new side's bytes, to turn line numbers into offsets (no new side: deleted).
                 */
                if (d->status != GIT_DELTA_DELETED) {
                        g = git_blob_lookup(&blob, repo, &d->new_file.id);
                        if (g == 0) {
                                cur.buf = git_blob_rawcontent(blob);
                                cur.size = (size_t)git_blob_rawsize(blob);
                        }
                }
                v = calloc(n, sizeof(*v));
                if (!v) {
                        git_blob_free(blob);
                        git_patch_free(patch);
                        return -ENOMEM;
                }
        }
        for (size_t h = 0; g == 0 && h < n; h++) {
                const git_diff_hunk *hunk;
                size_t lines;
                /* New-side line numbers: the first changed place, and past the last added line. */
                uint32_t next = 0, first = 0, end = 0;

                g = git_patch_get_hunk(&hunk, &lines, patch, h);
                if (g < 0)
                        break;
                next = (uint32_t)hunk->new_start;
                for (size_t l = 0; g == 0 && l < lines; l++) {
                        const git_diff_line *line;
                        g = git_patch_get_line_in_hunk(&line, patch, h, l);
                        if (g < 0)
                                break;
                        if (line->origin == GIT_DIFF_LINE_ADDITION) {
                                if (!first)
                                        first = (uint32_t)line->new_lineno;
                                end = (uint32_t)line->new_lineno + 1;
                        } else if (line->origin == GIT_DIFF_LINE_DELETION && !first) {
                                first = next;
                        }
                        if (line->new_lineno > 0)
                                next = (uint32_t)line->new_lineno + 1;
                }
                if (!first)
                        first = next;
                if (end < first)
                        end = first;
                v[h] = (struct review_hunk){
                        .old_start = (uint32_t)hunk->old_start,
                        .old_lines = (uint32_t)hunk->old_lines,
                        .new_start = (uint32_t)hunk->new_start,
                        .new_lines = (uint32_t)hunk->new_lines,
                        .change_start = REVIEW_HUNK_NO_BYTES,
                        .change_end = REVIEW_HUNK_NO_BYTES,
                };
                if (cur.buf) {
                        v[h].change_start = line_offset(&cur, first);
                        v[h].change_end = line_offset(&cur, end);
                }
        }
        git_blob_free(blob);
        git_patch_free(patch);
        if (g < 0)
                return review_git_fail(r, g, "the hunks of change %zu", i);
        *ret = n ? TAKE_PTR(v) : NULL;
        *ret_n = n;
        return 0;
}

/*
 * git diff --stat for names libgit2 would print raw (its stats formatter
 * does not quote, and a name is the agent's): the same columns, each name
 * quoted as git quotes it, the bars scaled to at most STAT_BAR characters.
 */
#define STAT_BAR 40
static int stat_print(git_diff *diff, FILE *out, bool summary)
{
        size_t n = git_diff_num_deltas(diff), total_add = 0, total_del = 0, most = 0;
        _cleanup_free_ size_t *adds = calloc(n + 1, sizeof(size_t)),
                              *dels = calloc(n + 1, sizeof(size_t));
        int g;

        if (!adds || !dels)
                return GIT_ERROR;
        for (size_t i = 0; i < n; i++) {
                g = line_stats(diff, i, &adds[i], &dels[i]);
                if (g < 0)
                        return g;
                total_add += adds[i];
                total_del += dels[i];
                most = MAX(most, adds[i] + dels[i]);
        }
        for (size_t i = 0; i < n; i++) {
                const git_diff_delta *d = git_diff_get_delta(diff, i);
                size_t a = adds[i], r = dels[i];

                fputc(' ', out);
                if (d->status == GIT_DELTA_RENAMED || d->status == GIT_DELTA_COPIED) {
                        path_print(out, d->old_file.path);
                        fputs(" => ", out);
                }
                path_print(out,
                           d->status == GIT_DELTA_DELETED ? d->old_file.path : d->new_file.path);
                if (d->flags & GIT_DIFF_FLAG_BINARY) {
                        fprintf(out, " | Bin %" PRIu64 " -> %" PRIu64 " bytes\n",
                                (uint64_t)d->old_file.size, (uint64_t)d->new_file.size);
                        continue;
                }
                if (most > STAT_BAR) {
                        a = (a * STAT_BAR + most - 1) / most;
                        r = (r * STAT_BAR + most - 1) / most;
                }
                fprintf(out, " | %zu ", adds[i] + dels[i]);
                for (size_t k = 0; k < a; k++)
                        fputc('+', out);
                for (size_t k = 0; k < r; k++)
                        fputc('-', out);
                fputc('\n', out);
        }
        /* As git words it: a zero count is left out unless both are zero. */
        fprintf(out, " %zu file%s changed", n, n == 1 ? "" : "s");
        if (total_add || !total_del)
                fprintf(out, ", %zu insertion%s(+)", total_add, total_add == 1 ? "" : "s");
        if (total_del || !total_add)
                fprintf(out, ", %zu deletion%s(-)", total_del, total_del == 1 ? "" : "s");
        fputc('\n', out);
        /* The summary git format-patch adds, with the names quoted. */
        for (size_t i = 0; summary && i < n; i++) {
                const git_diff_delta *d = git_diff_get_delta(diff, i);

                if (d->old_file.mode == d->new_file.mode)
                        continue;
                if (d->old_file.mode == 0)
                        fprintf(out, " create mode %06o ", d->new_file.mode);
                else if (d->new_file.mode == 0)
                        fprintf(out, " delete mode %06o ", d->old_file.mode);
                else
                        fprintf(out, " mode change %06o => %06o ", d->old_file.mode,
                                d->new_file.mode);
                path_print(out, d->new_file.mode ? d->new_file.path : d->old_file.path);
                fputc('\n', out);
        }
        return ferror(out) ? -1 : 0;
}

int review_stat_write(git_diff *diff, FILE *out, bool email)
{
        git_diff_stats *stats = NULL;
        git_buf buf = GIT_BUF_INIT;
        int g;

        /* libgit2 prints names raw here; see stat_print. */
        if (!stat_names_plain(diff))
                return stat_print(diff, out, email);
        /* As git diff --stat, or as libgit2's emails: full bars and the summary. */
        g = git_diff_get_stats(&stats, diff);
        if (g == 0 && (email || git_diff_num_deltas(diff) > 0))
                g = git_diff_stats_to_buf(&buf, stats,
                                          GIT_DIFF_STATS_FULL | GIT_DIFF_STATS_INCLUDE_SUMMARY,
                                          email ? 0 : 80);
        if (g == 0 && buf.size && fwrite(buf.ptr, 1, buf.size, out) != buf.size)
                g = -1;
        git_buf_dispose(&buf);
        git_diff_stats_free(stats);
        return g;
}

int review_print(review *r, enum review_format fmt, FILE *out)
{
        git_diff *diff = NULL;
        int g, k;

        k = review_diff(r, &diff);
        if (k < 0)
                return k;
        switch (fmt) {
        case REVIEW_PATCH:
                g = git_diff_print(diff, GIT_DIFF_FORMAT_PATCH, line_print, out);
                break;
        case REVIEW_NAME_STATUS:
                g = name_status_print(diff, out);
                break;
        case REVIEW_STAT:
                g = review_stat_write(diff, out, false);
                break;
        default:
                g = -1;
        }
        git_diff_free(diff);
        if (g < 0 && ferror(out))
                return review_fail(r, errno == EPIPE ? -EPIPE : -EIO, "writing the diff: %m");
        if (g < 0)
                return review_git_fail(r, g, "formatting the diff");
        return 0;
}

void review_home_changes_free(struct review_home_change *c, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free(c[i].path);
        free(c);
}

static int str_cmp(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The fs's changes file may list the repo only. Then the journal, which
 * records every mutating operation on every writable layer, names the home
 * paths the agent touched (both sides of a rename); each is looked at now.
 * A transient entry names a file that never outlived its window: nothing
 * to look at. A coarse entry names a directory, which is looked at as one.
 */
static int home_paths_from_journal(review *r)
{
        _cleanup_close_ int dfd = -1;
        journal_reader *jr = NULL;
        struct journal_record rec;
        size_t w = 0;
        int k;

        dfd = open(r->o.state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return review_fail(r, negative_errno(), "state directory '%s': %m", r->o.state);
        k = journal_reader_open(dfd, "journal.jsonl", &jr);
        if (k == -ENOENT)
                return 0;
        if (k < 0)
                return review_fail(r, k, "%s/journal.jsonl: %s", r->o.state, strerror(-k));
        while ((k = journal_reader_next(jr, &rec)) > 0) {
                const char *ps[2] = {rec.path, rec.path2};
                if (streq(rec.op, "transient"))
                        continue;
                for (int i = 0; i < 2 && k >= 0; i++) {
                        const char *rest = ps[i] ? startswith(ps[i], r->o.home_prefix) : NULL;
                        if (!rest || *rest != '/' || rec.result < 0)
                                continue;
                        if (r->n_home_paths >= REVIEW_MAX_FILES)
                                k = review_fail(r, -EMFILE, "more than %u home changes",
                                                REVIEW_MAX_FILES);
                        else if (review_home_path_add(r, ps[i]) < 0)
                                k = review_fail(r, -ENOMEM, "out of memory");
                }
        }
        journal_reader_free(jr);
        if (k < 0)
                return k;
        /* Sorted and unique, so each path is listed once. */
        if (r->n_home_paths > 1)
                qsort(r->home_paths, r->n_home_paths, sizeof(char *), str_cmp);
        for (size_t i = 0; i < r->n_home_paths; i++) {
                if (w > 0 && streq(r->home_paths[w - 1], r->home_paths[i])) {
                        free(r->home_paths[i]);
                        continue;
                }
                r->home_paths[w++] = r->home_paths[i];
        }
        r->n_home_paths = w;
        return 0;
}

int review_home_changes(review *r, struct review_home_change **ret, size_t *ret_n)
{
        struct review_home_change *c = NULL;
        size_t n = 0, plen;
        int k;

        /* The home paths come from the changes file, read while building. */
        k = review_build(r);
        if (k < 0)
                return k;
        /*
         * The changes list names the home's changes. The journal (which may
         * be long, and cut at its bound) is read only when the list was not:
         * then it is the one record of the home's paths.
         */
        if (!r->changes_read && r->n_home_paths == 0 && r->o.state && r->o.home_prefix) {
                k = home_paths_from_journal(r);
                if (k < 0)
                        return k;
        }
        if (r->n_home_paths) {
                c = calloc(r->n_home_paths, sizeof(*c));
                if (!c)
                        return review_fail(r, -ENOMEM, "out of memory");
        }
        plen = r->o.home_prefix ? strlen(r->o.home_prefix) : 0;
        for (size_t i = 0; i < r->n_home_paths; i++) {
                const char *p = r->home_paths[i], *rel = p + plen;
                _cleanup_close_ int pfd = -1;
                const char *base;
                struct stat st;

                while (*rel == '/')
                        rel++;
                if (!*rel)
                        continue; /* the home directory itself */
                c[n] = (struct review_home_change){.path = strdup(p), .type = 'D'};
                if (!c[n].path) {
                        review_home_changes_free(c, n);
                        return review_fail(r, -ENOMEM, "out of memory");
                }
                if (r->homefd >= 0 && review_view_parent(r->homefd, rel, &pfd, &base) == 0 &&
                    fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                        c[n].type = S_ISREG(st.st_mode)   ? 'f'
                                    : S_ISDIR(st.st_mode) ? 'd'
                                    : S_ISLNK(st.st_mode) ? 'l'
                                                          : 'o';
                        c[n].size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
                }
                n++;
        }
        *ret = c;
        *ret_n = n;
        return 0;
}
