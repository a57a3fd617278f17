/* SPDX-License-Identifier: MIT */
/*
 * review.c: opening the source repository and the workspace view for
 * review, error messages, and the in-memory object database that keeps
 * `cloister diff` from writing anything into the source.
 */
#include <fcntl.h>
#include <git2/sys/mempack.h>
#include <limits.h>
#include <git2/sys/odb_backend.h>
#include <stdarg.h>

#include "review-private.h"
#include "lib/quote.h"

/*
 * Messages name agent-chosen paths (and libgit2 quotes agent refs and
 * paths raw): their control characters are escaped here, once, before the
 * CLI prints them.
 */
static void err_defuse(review *r)
{
        _cleanup_free_ char *q = NULL;

        if (quote_is_plain(r->err, QUOTE_UTF8 | QUOTE_BARE))
                return;
        q = quote_dup(r->err, QUOTE_UTF8 | QUOTE_BARE);
        if (q)
                snprintf(r->err, sizeof(r->err), "%s", q);
        else
                snprintf(r->err, sizeof(r->err), "(an error message with control characters)");
}

int review_fail(review *r, int code, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(r->err, sizeof(r->err), fmt, ap);
        va_end(ap);
        err_defuse(r);
        return code;
}

int review_git_fail(review *r, int gerr, const char *fmt, ...)
{
        const git_error *e = git_error_last();
        va_list ap;
        size_t n;

        va_start(ap, fmt);
        vsnprintf(r->err, sizeof(r->err), fmt, ap);
        va_end(ap);
        n = strlen(r->err);
        snprintf(r->err + n, sizeof(r->err) - n, ": %s",
                 e && e->message ? e->message : "libgit2 error");
        err_defuse(r);
        switch (gerr) {
        case GIT_ENOTFOUND:
                return -ENOENT;
        case GIT_EEXISTS:
                return -EEXIST;
        case GIT_EINVALIDSPEC:
        case GIT_EAMBIGUOUS:
                return -EINVAL;
        default:
                return -EIO;
        }
}

const char *review_warning(const review *r)
{
        return r->warning[0] ? r->warning : NULL;
}

const char *review_error(const review *r)
{
        return r->err[0] ? r->err : "unknown error";
}

int review_open(const struct review_options *o, review **ret, char **ret_error)
{
        review *r;
        git_object *obj = NULL;
        int g, k = 0;

        if (!o || !o->source || !o->rev || !o->view)
                return -EINVAL;
        r = calloc(1, sizeof(*r));
        if (!r)
                return -ENOMEM;
        r->o = *o;
        r->viewfd = r->homefd = r->upperfd = -1;
        git_libgit2_init();
        /*
         * libgit2 caches no tree over 4 KiB by default, so each lookup by
         * path below a directory of a hundred files inflated it again (the
         * review looks up every listed path in the base tree). Keep them.
         */
        git_libgit2_opts(GIT_OPT_SET_CACHE_OBJECT_LIMIT, GIT_OBJECT_TREE, (size_t)16 << 20);

        g = git_repository_open_ext(&r->repo, o->source, GIT_REPOSITORY_OPEN_NO_SEARCH, NULL);
        if (g < 0) {
                k = review_git_fail(r, g, "source repository '%s'", o->source);
                goto out;
        }
        g = git_revparse_single(&obj, r->repo, o->rev);
        if (g == 0)
                g = git_object_peel((git_object **)&r->base, obj, GIT_OBJECT_COMMIT);
        git_object_free(obj);
        if (g == 0)
                g = git_commit_tree(&r->base_tree, r->base);
        if (g < 0) {
                k = review_git_fail(r, g, "base revision '%s' in '%s'", o->rev, o->source);
                goto out;
        }
        g = git_repository_odb(&r->odb, r->repo);
        if (g < 0) {
                k = review_git_fail(r, g, "object database of '%s'", o->source);
                goto out;
        }
        /*
         * Highest priority: every new object lands in memory, none on disk.
         * An export then writes them into the source as one pack
         * (review_persist), which is much faster than thousands of loose
         * objects; `cloister diff` just drops them.
         */
        g = git_mempack_new(&r->mempack);
        if (g == 0)
                g = git_odb_add_backend(r->odb, r->mempack, 999);
        if (g < 0) {
                if (r->mempack && r->mempack->free)
                        r->mempack->free(r->mempack);
                r->mempack = NULL;
                k = review_git_fail(r, g, "in-memory object database");
                goto out;
        }
        r->viewfd = open(o->view, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (r->viewfd < 0) {
                k = review_fail(r, negative_errno(), "workspace view '%s': %m", o->view);
                goto out;
        }
        if (o->home_view) {
                r->homefd = open(o->home_view, O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (r->homefd < 0 && errno != ENOENT) {
                        k = review_fail(r, negative_errno(), "hidden home view '%s': %m",
                                        o->home_view);
                        goto out;
                }
        }
        /* Only a shortcut: without it every file is read through the view. */
        if (o->upper)
                r->upperfd = open(o->upper, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
out:
        if (k < 0) {
                if (ret_error)
                        *ret_error = strdup(review_error(r));
                review_free(r);
                return k;
        }
        *ret = r;
        return 0;
}

void review_free(review *r)
{
        if (!r)
                return;
        if (r->mempack)
                git_mempack_reset(r->mempack);
        git_repository_free(r->scratch_repo);
        review_scratch_remove(r);
        review_rules_free(r->rules);
        git_tree_free(r->base_tree);
        git_commit_free(r->base);
        git_odb_free(r->odb);
        git_repository_free(r->bare_repo);
        git_repository_free(r->repo);
        for (size_t i = 0; i < r->n_home_paths; i++)
                free(r->home_paths[i]);
        free(r->home_paths);
        review_left_out_clear(r);
        safe_close(r->viewfd);
        safe_close(r->homefd);
        safe_close(r->upperfd);
        free(r);
        git_libgit2_shutdown();
}

int review_persist(review *r)
{
        git_buf pack = GIT_BUF_INIT;
        git_odb_writepack *wp = NULL;
        git_indexer_progress stats = {0};
        int g;

        if (r->o.in_memory)
                return review_fail(r, -EPERM, "this review keeps the source untouched");
        g = git_mempack_dump(&pack, r->repo, r->mempack);
        /* The pack backend takes it (mempack has no writepack): objects/pack/. */
        if (g == 0)
                g = git_odb_write_pack(&wp, r->odb, NULL, NULL);
        if (g == 0)
                g = wp->append(wp, pack.ptr, pack.size, &stats);
        if (g == 0)
                g = wp->commit(wp, &stats);
        if (wp)
                wp->free(wp);
        git_buf_dispose(&pack);
        if (g < 0)
                return review_git_fail(r, g, "writing the new objects into the source");
        git_odb_refresh(r->odb);
        return 0;
}

const git_oid *review_base_commit(const review *r)
{
        return git_commit_id(r->base);
}

const git_oid *review_tree(const review *r)
{
        return r->built ? &r->tree : NULL;
}

size_t review_files_read(const review *r)
{
        return r->files_read;
}

size_t review_ignored(const review *r)
{
        return r->ignored;
}

bool review_ignored_uncertain(const review *r)
{
        return r->ignored && review_rules_uncertain(r);
}

void review_left_out_clear(review *r)
{
        for (size_t i = 0; i < r->n_left_out; i++)
                free(r->left_out[i].path);
        free(r->left_out);
        r->left_out = NULL;
        r->n_left_out = r->more_left_out = 0;
}

int review_left_out_add(review *r, const char *rel, const struct review_left_out *l)
{
        struct review_left_out *nv;

        /* Once each: --since builds two trees, and both may leave one path out. */
        for (size_t i = 0; i < r->n_left_out; i++)
                if (streq(r->left_out[i].path, rel))
                        return 0;
        if (r->n_left_out >= REVIEW_MAX_LEFT_OUT) {
                r->more_left_out++;
                return 0;
        }
        /* Grown one by one: a left-out path is rare, and the list is bounded. */
        nv = realloc(r->left_out, (r->n_left_out + 1) * sizeof(*nv));
        if (!nv)
                return review_fail(r, -ENOMEM, "out of memory");
        r->left_out = nv;
        nv[r->n_left_out] = *l;
        if (!(nv[r->n_left_out].path = strdup(rel)))
                return review_fail(r, -ENOMEM, "out of memory");
        r->n_left_out++;
        return 0;
}

const struct review_left_out *review_left_out(const review *r, size_t *ret_n, size_t *ret_more)
{
        *ret_n = r->n_left_out;
        if (ret_more)
                *ret_more = r->more_left_out;
        return r->left_out;
}

const char *review_left_out_reason(const struct review_left_out *l)
{
        switch (l->reason) {
        case REVIEW_LEFT_OUT_TOO_LARGE:
                return "too_large";
        case REVIEW_LEFT_OUT_TOTAL:
                return "total_too_large";
        case REVIEW_LEFT_OUT_SPECIAL:
                return "special";
        case REVIEW_LEFT_OUT_UNREADABLE:
                return "unreadable";
        case REVIEW_LEFT_OUT_TOO_DEEP:
                return "too_deep";
        case REVIEW_LEFT_OUT_TOO_LONG:
                return "name_too_long";
        }
        return "unreadable";
}

void review_left_out_describe(const struct review_left_out *l, char *buf, size_t size)
{
        const char *what =
                l->reason == REVIEW_LEFT_OUT_TOO_LARGE ? "one file" : "all changed files together";

        switch (l->reason) {
        case REVIEW_LEFT_OUT_TOO_LARGE:
        case REVIEW_LEFT_OUT_TOTAL:
                if (l->size)
                        snprintf(buf, size, "%llu bytes, past the limit of %llu bytes for %s",
                                 (unsigned long long)l->size, (unsigned long long)l->limit, what);
                else
                        snprintf(buf, size,
                                 "grew past the limit of %llu bytes for %s while it was read",
                                 (unsigned long long)l->limit, what);
                break;
        case REVIEW_LEFT_OUT_SPECIAL:
                snprintf(buf, size, "a %s, which git cannot hold",
                         l->kind == 'p'   ? "FIFO"
                         : l->kind == 's' ? "socket"
                                          : "device");
                break;
        case REVIEW_LEFT_OUT_UNREADABLE:
                snprintf(buf, size, "could not be read: %s", strerror(l->error));
                break;
        case REVIEW_LEFT_OUT_TOO_DEEP:
                snprintf(buf, size, "a directory nested deeper than %u", REVIEW_MAX_DEPTH);
                break;
        case REVIEW_LEFT_OUT_TOO_LONG:
                snprintf(buf, size, "its path is longer than %u bytes", PATH_MAX - 1);
                break;
        }
}
