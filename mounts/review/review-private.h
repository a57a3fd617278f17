/* SPDX-License-Identifier: MIT */
/*
 * review-private.h: what the review_*.c files share; not part of the API.
 */
#pragma once

#include <git2.h>
#include <sys/stat.h>

#include "review.h"
#include "lib/util.h"

/* One path of the changes file that belongs to the hidden home. */
struct review_home_path {
        char *path; /* workspace-absolute */
};

struct review {
        struct review_options o; /* the caller's strings, valid for r's lifetime */
        git_repository *repo;
        git_repository *bare_repo; /* the source without its work tree: review-diff.c */
        git_odb *odb;
        git_odb_backend *mempack; /* new objects; owned by odb once added */
        git_commit *base;
        git_tree *base_tree;
        git_oid tree;
        bool built;
        int viewfd;  /* O_PATH|O_DIRECTORY of o.view */
        int homefd;  /* of o.home_view, or -1 */
        int upperfd; /* O_PATH|O_DIRECTORY of o.upper, or -1 */

        char **home_paths; /* from the changes file */
        bool changes_read; /* the changes file was read (it lists the home too) */
        size_t n_home_paths, cap_home_paths;

        size_t files_read;
        uint64_t bytes_read;
        size_t ignored;                   /* paths left out by the ignore rules */
        struct review_left_out *left_out; /* review_left_out(): kept across review_since() */
        size_t n_left_out, more_left_out;
        struct review_rules *rules; /* review-rules.c, made on first use */

        char *scratch; /* private copy of the agent's .git, removed on free */
        git_repository *scratch_repo;

        git_oid replaced; /* where review_ref_set() found the ref, if has_replaced */
        bool has_replaced;

        git_oid since; /* review_since(): the tree diffs start from instead of the base's */
        bool has_since;

        char err[1024];
        char warning[1200]; /* something the user should know; "" if none */
};

/*
 * diff --stat (email: as in a format-patch mail, bars unscaled, with the
 * create/delete/mode summary), agent-chosen names quoted.
 */
int review_stat_write(git_diff *diff, FILE *out, bool email);

/* Record a message for review_error() and return `code` (a negative errno). */
int review_fail(review *r, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The same, with libgit2's last message appended; maps libgit2's code to an errno. */
int review_git_fail(review *r, int gerr, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* Record rel as left out (review.h); only -ENOMEM fails. */
int review_left_out_add(review *r, const char *rel, const struct review_left_out *l);
void review_left_out_clear(review *r);

/* Write the objects made so far into the source's odb as one pack. */
int review_persist(review *r);

/* review-view.c: agent-controlled files, read without following symlinks. */
/* A repo-relative path that git can hold and we may take: no "..", ".", "", ".git". */
bool review_path_ok(const char *rel);
/* Open the parent directory of `rel` beneath rootfd, no symlinks; *ret_base points into rel. */
int review_view_parent(int rootfd, const char *rel, int *ret_fd, const char **ret_base);
/* Read a regular file `name` in dirfd (no symlinks, bounded by REVIEW_MAX_FILE_SIZE). */
int review_view_read(int dirfd, const char *name, void **ret, size_t *ret_len);
/*
 * rel's data read straight from the upper store (o.upper) when the store's
 * file has the size and times the view's lstat (vst) gave; -EAGAIN: read
 * it through the view instead.
 */
int review_upper_read(review *r, const char *rel, const struct stat *vst, void **ret,
                      size_t *ret_len);
/* Have the kernel hand the daemon every page written through a mapping (syncfs of the view). */
int review_view_settle(review *r);
/* Read a symlink's target (bounded by PATH_MAX). */
int review_view_readlink(int dirfd, const char *name, char **ret);

/* review-tree.c: one repo path listed in .cloister/changes, relative to the repo. */
struct review_change {
        char *path;
        bool opaque;
        bool metacopy; /* the fs holds metadata only: the data is the base's at origin */
        char *origin;  /* repo-relative, or NULL */
};
int review_changes_load(review *r, struct review_change **ret, size_t *ret_n);
void review_changes_free(struct review_change *c, size_t n);
int review_home_path_add(review *r, const char *workspace_path);

/*
 * review-rules.c: git's ignore rules and attributes, from private copies of
 * the agent's rule files (see there). rel is repo-relative and passed
 * review_path_ok().
 */
struct review_rules;
void review_rules_free(struct review_rules *s);
/* Would `git add -A` leave rel out? dir: rel is a directory. */
int review_rules_ignored(review *r, const char *rel, bool dir, bool *ret);
/* An ignore file has negations, which libgit2 applies only within their own file. */
bool review_rules_uncertain(const review *r);
/* The base tree as an index (the rules' own; owned by them). */
int review_rules_base_index(review *r, git_index **ret);
/* Does checking rel in convert it (eol, ident, as git add does)? */
int review_rules_has_filters(review *r, const char *rel, bool *ret);
/* Does checking the base's rel out convert it (its attributes in the base)? */
int review_rules_checkout_has_filters(review *r, const char *rel, bool *ret);
/* rel's content as git add stores it; *ret_converted false: out untouched, data as is. */
int review_rules_clean(review *r, const char *rel, const void *data, size_t len, git_buf *out,
                       bool *ret_converted);
/* A base blob as a fresh checkout of the base writes it (its attributes only). */
int review_rules_smudge(review *r, const char *rel, git_blob *blob, git_buf *out);

/* review-diff.c: the source, bare, with the base's .gitattributes as its index: where a
 * patch is made (the attributes it shows changes with, and why, are there). */
int review_diff_repo(review *r, git_repository **ret);

/* review-commits.c */
void review_scratch_remove(review *r);
