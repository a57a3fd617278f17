/* SPDX-License-Identifier: MIT */
/*
 * gitdir-private.h: what the gitdir files share and nobody else sees.
 *
 * Every helper takes `char **err`: on failure it stores (once: the first,
 * most specific message wins) a malloc'd one-line explanation there and
 * returns a negative errno. err may be NULL.
 */
#pragma once

#include <git2.h>
#include <stddef.h>

#include "gitdir.h"
#include "lib/util.h"

/* Record a one-line message (if none yet) and return r (a negative errno). */
int gitdir_error(char **err, int r, const char *fmt, ...) _printf_(3, 4);
/* Translate libgit2's error gr once: "what: <libgit2 message>", mapped to -errno. */
int gitdir_git_error(char **err, int gr, const char *what);

/* Create file `name` (one component) in dirfd with O_EXCL|O_NOFOLLOW and write data. */
int gitdir_write_file(int dirfd, const char *name, const void *data, size_t len, char **err);
/* Create directory `path` (components separated by '/') under dirfd, all *at() and
 * O_NOFOLLOW; existing directories are reused. Returns an fd for it in *ret_fd. */
int gitdir_mkdirs(int dirfd, const char *path, int *ret_fd, char **err);
/* Write `refname` (e.g. "refs/heads/main") as a loose ref holding id. */
int gitdir_write_loose_ref(int dirfd, const char *refname, const git_oid *id, char **err);

/* Open a source repository (no searching upwards). */
int gitdir_source_open(const char *source, git_repository **ret, char **err);
/* Resolve rev to a commit; *ret_branch: the branch to create in the workspace. */
int gitdir_source_resolve(git_repository *repo, const char *rev, const char *name, git_commit **ret,
                          char **ret_branch, char **err);
/* Write the source's tags (refs/tags/ *) as a packed-refs file into dirfd. */
int gitdir_write_tags(git_repository *repo, int dirfd, char **err);

/* Generate the index for tree with the stat data of gitdir_params into dirfd/"index". */
int gitdir_write_index(git_repository *repo, git_tree *tree, const struct gitdir_params *p,
                       int dirfd, const char *name, char **err);

static inline void gitdir_repository_freep(git_repository **r)
{
        git_repository_free(*r);
}
static inline void gitdir_commit_freep(git_commit **c)
{
        git_commit_free(*c);
}
static inline void gitdir_tree_freep(git_tree **t)
{
        git_tree_free(*t);
}
static inline void gitdir_object_freep(git_object **o)
{
        git_object_free(*o);
}
static inline void gitdir_reference_freep(git_reference **r)
{
        git_reference_free(*r);
}
static inline void gitdir_index_freep(git_index **i)
{
        git_index_free(*i);
}
static inline void gitdir_odb_freep(git_odb **o)
{
        git_odb_free(*o);
}
#define _cleanup_repository_ _cleanup_(gitdir_repository_freep)
#define _cleanup_commit_     _cleanup_(gitdir_commit_freep)
#define _cleanup_tree_       _cleanup_(gitdir_tree_freep)
#define _cleanup_object_     _cleanup_(gitdir_object_freep)
#define _cleanup_reference_  _cleanup_(gitdir_reference_freep)
#define _cleanup_index_      _cleanup_(gitdir_index_freep)
#define _cleanup_odb_        _cleanup_(gitdir_odb_freep)
