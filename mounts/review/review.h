/* SPDX-License-Identifier: MIT */
/*
 * review.h: turn the agent's workspace into something a human can review:
 * a git tree built from the workspace view, its diff against the base
 * revision, a commit (or the agent's own commits) under refs/cloister/NAME,
 * an mbox series, and discarding the work.
 *
 * Trust boundary: the workspace view is agent-controlled. It is read only
 * through directory fds with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS),
 * lstat and readlink; agent symlinks are recorded as symlinks, never
 * followed; every size, path length and count is bounded (limits below,
 * documented in docs/cloister-diff.md). The source repository is trusted.
 *
 * Library code: nothing is printed. A failing call returns a negative errno
 * and leaves a one-line message in review_error().
 */
#pragma once

#include <git2.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Limits on what the agent controls. */
#define REVIEW_MAX_FILE_SIZE  (512ull * 1024 * 1024)      /* one file's bytes */
#define REVIEW_MAX_TOTAL_SIZE (4ull * 1024 * 1024 * 1024) /* all new blobs together */
#define REVIEW_MAX_FILES      1000000u /* entries walked or listed in the changes */
#define REVIEW_MAX_DEPTH      256u     /* directory nesting when walking */
/*
 * One line of .cloister/changes: a path near PATH_MAX whose every byte JSON
 * escapes six-fold ("\u0001"), plus its hex if it is not UTF-8, is about
 * 33 KiB. A longer line makes the review read the whole workspace instead.
 */
#define REVIEW_MAX_CHANGES_LINE (64u * 1024)
/* One rule file of the agent's (.gitignore, .gitattributes, .git/info/exclude). */
#define REVIEW_MAX_RULES_SIZE (4u * 1024 * 1024)
#define REVIEW_MAX_GITDIR_SIZE                                                                     \
        (1024ull * 1024 * 1024) /* agent's .git objects copied for --commits */

typedef struct review review;

/* Called now and then while building: `done` of `total` paths (total 0 = unknown). */
typedef void (*review_progress_fn)(const char *stage, size_t done, size_t total, void *userdata);

struct review_options {
        const char *source; /* the source repository (host path, trusted) */
        const char *rev;    /* the base revision, e.g. "HEAD" */
        const char *view;   /* host path of the repo part of the workspace view */
        const char
                *changes; /* host path of the changes file (.cloister/changes) or NULL: walk all */
        const char
                *repo_prefix;  /* workspace-absolute prefix of the repo in changes ("/workspace") */
        const char *home_view; /* host path of the hidden home in the view, or NULL */
        const char *home_prefix; /* its workspace-absolute prefix ("/home/agent"), or NULL */
        const char *state; /* state dir: its journal names home changes the changes file lacks; or
                              NULL */
        /*
         * host path of the repo's upper store of the daemon serving `view`
         * (<state>/fs/repo), or NULL: a changed file's data is read from
         * there, not through the mount, when the store's file is the one
         * the view shows (same size and times)
         */
        const char *upper;
        const char *const *exclude; /* repo-relative paths never taken (read-only mirrors),
                                       NULL-terminated or NULL */
        /* true: never write the source (diff, mbox); false: commits and their objects
         * go into the source as one pack (export) */
        bool in_memory;
        /* true: take what git's ignore rules leave out too (--include-ignored) */
        bool include_ignored;
        /* all new blobs together, 0: REVIEW_MAX_TOTAL_SIZE (a lower one lets tests reach it) */
        uint64_t max_total_size;
        review_progress_fn progress;
        void *userdata;
};

/* On failure, *ret_error (if not NULL) gets a malloc'd one-line message. */
int review_open(const struct review_options *o, review **ret, char **ret_error);
/* Drops in-memory objects. NULL is a no-op. */
void review_free(review *r);
static inline void review_freep(review **r)
{
        review_free(*r);
}
#define _cleanup_review_ __attribute__((cleanup(review_freep)))

/* The message of the last failure, never NULL. */
const char *review_error(const review *r);
/* A note worth printing (e.g. a slower fallback was taken), or NULL. */
const char *review_warning(const review *r);

/* Build the workspace's tree (once; later calls reuse it). */
int review_build(review *r);
const git_oid *review_base_commit(const review *r);
const git_oid *review_tree(const review *r);
/*
 * A path whose change the build left out, so that nothing the agent puts in
 * the workspace can stop its review: the tree keeps what the base has at
 * that path (nothing, if the base has nothing there), and the caller must
 * say so (docs/cloister-diff.md, "Left out").
 */
enum review_left_out_reason {
        REVIEW_LEFT_OUT_TOO_LARGE,  /* one file over REVIEW_MAX_FILE_SIZE */
        REVIEW_LEFT_OUT_TOTAL,      /* it would take the new blobs past REVIEW_MAX_TOTAL_SIZE */
        REVIEW_LEFT_OUT_SPECIAL,    /* a FIFO, socket or device: git cannot hold it */
        REVIEW_LEFT_OUT_UNREADABLE, /* reading it failed (error) */
        REVIEW_LEFT_OUT_TOO_DEEP,   /* a directory nested deeper than REVIEW_MAX_DEPTH */
        REVIEW_LEFT_OUT_TOO_LONG,   /* its path is PATH_MAX bytes or longer */
};
struct review_left_out {
        char *path; /* repo-relative, the agent's bytes: quote it before printing */
        enum review_left_out_reason reason;
        uint64_t size;  /* bytes seen, for TOO_LARGE and TOTAL (0: it grew while read) */
        uint64_t limit; /* the limit it passed, for TOO_LARGE and TOTAL */
        int error;      /* a positive errno, for UNREADABLE */
        char kind;      /* for SPECIAL: 'p' FIFO, 's' socket, 'c' or 'b' device */
};
/* Left-out paths listed one by one; past this many, only counted. */
#define REVIEW_MAX_LEFT_OUT 1000u
/*
 * The paths the builds left out, in the order met (both trees' for
 * review_since()); *ret_more (if not NULL): how many more were counted but
 * not listed. Valid until review_free().
 */
const struct review_left_out *review_left_out(const review *r, size_t *ret_n, size_t *ret_more);
/* Its reason as a stable token: "too_large", "total_too_large", "special", "unreadable",
 * "too_deep", "name_too_long". */
const char *review_left_out_reason(const struct review_left_out *l);
/* Why, for a person, in one line without the path: "629145600 bytes, over ...". */
void review_left_out_describe(const struct review_left_out *l, char *buf, size_t size);

/* Number of files read from the view while building (not reused from the base). */
size_t review_files_read(const review *r);
/*
 * Paths the build left out because git's ignore rules match them (as
 * `git add -A` would; a directory counts once, its contents are not walked).
 */
size_t review_ignored(const review *r);
/*
 * Some rule file has a negation ('!'): libgit2 applies those only against
 * rules of the same file, git against all, so git might take some of the
 * ignored paths (docs/cloister-diff.md).
 */
bool review_ignored_uncertain(const review *r);

enum review_format {
        REVIEW_PATCH,       /* unified diff, git format, binary as GIT binary patch */
        REVIEW_STAT,        /* like git diff --stat */
        REVIEW_NAME_STATUS, /* like git diff --name-status */
};

/*
 * Build the tree of another view of the same repository, old (its view,
 * changes and upper; the rest is r's): a checkpoint's, mounted apart
 * (cloister diff --since). Its tree is kept in r's objects and is from
 * then on what review_diff() and review_print() start from, not the base.
 * Call before review_build().
 */
int review_since(review *r, const struct review_options *old);

/* Diff base..workspace (or since..workspace) with rename detection. Builds first if needed. */
int review_diff(review *r, git_diff **ret);
int review_print(review *r, enum review_format fmt, FILE *out);
/*
 * Delta i of a review_diff() diff: its lines added and removed, as git diff
 * --stat counts them (both 0 for a binary file). The one count both the
 * --stat text and mounts/ops' JSON stat use. On failure a negative errno,
 * review_error() says why, and *ret_added and *ret_removed are untouched.
 */
int review_line_stats(review *r, git_diff *diff, size_t i, size_t *ret_added, size_t *ret_removed);
/*
 * Delta i's hunks, as the patch numbers them, each with the bytes of the
 * new file its change is at: [change_start, change_end) holds its added
 * lines; a hunk that only removes lines has an empty range at the place
 * they were. Both are REVIEW_HUNK_NO_BYTES for a deleted file. For
 * `cloister report`, which joins them to the journal's write offsets. A
 * binary or unchanged delta has none (*ret NULL, *ret_n 0). On failure a
 * negative errno, review_error() says why.
 */
#define REVIEW_HUNK_NO_BYTES UINT64_MAX
struct review_hunk {
        uint32_t old_start, old_lines, new_start, new_lines; /* the "@@" line's numbers */
        uint64_t change_start, change_end;
};
int review_hunks(review *r, git_diff *diff, size_t i, struct review_hunk **ret, size_t *ret_n);

/* A change in the hidden home: never its contents. */
struct review_home_change {
        char *path; /* workspace-absolute */
        char type;  /* 'f' file, 'd' dir, 'l' symlink, 'o' other, 'D' deleted */
        uint64_t size;
};
int review_home_changes(review *r, struct review_home_change **ret, size_t *ret_n);
void review_home_changes_free(struct review_home_change *c, size_t n);

struct review_commit_options {
        const char *message; /* NULL: "Work from cloister workspace NAME" */
        const char *author;  /* "Name <email>"; NULL: the source repo's user, else "cloister" */
        const char *name;    /* the workspace name, for the default message */
        const char *image;   /* [image]'s digest: a Cloister-Image trailer; or NULL */
};

/* Record the workspace as a commit whose parent is the base. Not under a ref. */
int review_commit(review *r, const struct review_commit_options *o, git_oid *ret);
/*
 * Point refs/cloister/NAME at `id`; no other ref, HEAD or index is touched.
 * Every update is logged in the ref's reflog (made if missing), so an
 * earlier export stays reachable as refs/cloister/NAME@{1}, ....
 */
int review_ref_set(review *r, const char *name, const git_oid *id);
/* What review_ref_set() moved the ref away from, or NULL (new, or unchanged). */
const git_oid *review_ref_replaced(const review *r);

/*
 * The agent's own commits in the workspace's .git (view/.git): copied into a
 * private scratch repository (regular files only, bounded), then the series
 * base..HEAD (linear, non-merge) is returned oldest first and its objects
 * are copied into the source's object database (one pack). -ENOENT (with a
 * message) when the agent made no commits.
 */
int review_agent_commits(review *r, git_oid **ret, size_t *ret_n);

/* An mbox series (`git am` input) of these commits, oldest first. */
int review_mbox(review *r, const git_oid *commits, size_t n, FILE *out);

/*
 * Reset the workspace's files to the base revision, through the view: added
 * paths are removed, deleted and modified ones rewritten from the base. The
 * workspace's .git is left alone. See docs/cloister-export.md.
 */
int review_discard(review *r);
