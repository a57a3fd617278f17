/* SPDX-License-Identifier: MIT */
/*
 * gitdir.h: the sanitized `.git` that makes the workspace a working git
 * checkout without copying the source repository.
 *
 * The FUSE daemon calls gitdir_prepare() once, at the first mount of a state,
 * on the empty `.git` directory it creates in the repo's upper layer, and
 * gitdir_write_index_msg() once the mount serves (fs/core/gitindex.c). What they
 * write (docs/workspace-git.md has the details and the reasons):
 *   HEAD, refs/heads/<branch>  the base revision, on a branch named after the
 *                              source's branch (or cloister/<name>)
 *   packed-refs                the source's tags (for `git describe`)
 *   config                     synthesized from scratch: no credentials, no
 *                              url rewrites, no includes, hooks disabled
 *   objects/info/alternates    a RELATIVE path to <mnt>/.cloister/objects,
 *                              the fs's read-only view of the source objects
 *   index                      one entry per file of the base tree, with the
 *                              stat data the fs reports for lower files, so
 *                              `git status` is clean without reading data
 *
 * Trust boundary: the source repository path and the revision come from the
 * workspace config (trusted, host side). Nothing here reads from the agent:
 * the destination is a directory fd the daemon just created, and every file
 * is created in it with *at() calls, O_EXCL and O_NOFOLLOW. The source
 * repository is only read, never written.
 *
 * Library code: nothing is printed. Errors are negative errno values; the
 * _msg variants also return a malloc'd one-line explanation.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct git_oid;

struct gitdir_params {
        const char *source;     /* host path of the source repository (work tree or bare) */
        const char *rev;        /* base revision, e.g. "HEAD", "main", a tag or an id */
        const char *alternates; /* written to objects/info/alternates: the RELATIVE path
                                 * from <workspace>/.git/objects to <mnt>/.cloister/objects
                                 * (see gitdir_alternates_path()) */
        const char *name;       /* workspace name, for the fallback branch cloister/<name>;
                                 * NULL: "cloister/workspace" */
        int64_t lower_mtime;    /* committer time of the base commit: every index entry
                                 * gets mtime = ctime = this, nsec 0 */
        uid_t uid;              /* the owner git sees for lower files (in the sandbox) */
        gid_t gid;
        /*
         * The inode number the fs reports for the file at path (relative to
         * the work tree): git compares it (core.checkStat = default), so a
         * file renamed over another is seen. NULL: 0.
         */
        uint64_t (*ino)(void *userdata, const char *path);
        bool skip_index; /* gitdir_prepare(): leave the index out, for a later
                          * gitdir_write_index_msg() (mount time stays flat) */
        /*
         * The size of a file as the fs shows it, when its attributes (eol,
         * ident) make that differ from the blob's: git takes a size that
         * differs from the index's for a change without reading the file.
         * Called for each regular file of the base tree; NULL: blob sizes.
         */
        int (*worktree_size)(void *userdata, const char *path, const struct git_oid *id,
                             uint64_t *size);
        void *userdata;
        const char *config_extra; /* appended to the config (trusted: from the workspace
                                   * config, e.g. the proxy's url rewrites); NULL: none */
};

/*
 * Fill the EMPTY directory dest_dirfd with a sanitized `.git` for the base
 * revision. Returns 0, or a negative errno: -ENOTEMPTY if dest has entries,
 * -ENOENT if the source is not a repository or rev does not name a commit,
 * -EINVAL for invalid parameters. On failure dest may hold some files but no
 * HEAD (HEAD is written last, so git does not take a half-made directory
 * for a repository); the caller should prepare into a fresh directory under
 * a temporary name and rename it into place.
 */
int gitdir_prepare(const struct gitdir_params *p, int dest_dirfd);
/* Same; on failure *ret_error (if not NULL) is a malloc'd one-line message. */
int gitdir_prepare_msg(const struct gitdir_params *p, int dest_dirfd, char **ret_error);
/*
 * Write the index of p->rev (best a full commit id: exactly the tree the fs
 * shows) into dest_dirfd as `name`, created with O_EXCL: the caller renames
 * it to "index". Uses p->source, rev, lower_mtime, uid and gid. Returns 0 or
 * a negative errno; on failure *ret_error (if not NULL) is a malloc'd
 * one-line message.
 */
int gitdir_write_index_msg(const struct gitdir_params *p, int dest_dirfd, const char *name,
                           char **ret_error);

/*
 * The committer time (seconds since the epoch) of the commit that rev names
 * in source: the fs reports it as st_mtime/st_ctime of every lower file.
 */
int gitdir_base_commit_time(const char *source, const char *rev, int64_t *ret);

/*
 * The host path of the source's object directory (what the fs exposes,
 * read-only, at <mnt>/.cloister/objects): <source>/.git/objects for a work
 * tree, <source>/objects for a bare repository, the common directory's
 * objects for a linked worktree. The source's own objects/info/alternates
 * (e.g. a `git clone --shared`) name further directories that git follows
 * from there; see docs/workspace-git.md.
 */
int gitdir_source_objects(const char *source, char **ret);

/*
 * The relative path from <mnt><repo_path>/.git/objects to
 * <mnt>/.cloister/objects, e.g. "/workspace" -> "../../../.cloister/objects",
 * "/a/b" -> "../../../../.cloister/objects". repo_path must be absolute and
 * clean (no "//", ".", ".." or trailing "/"). -EINVAL otherwise.
 */
int gitdir_alternates_path(const char *repo_path, char **ret);
