/* SPDX-License-Identifier: MIT */
/*
 * lower.h: fs/lower's interface, the immutable lower layer of a
 * copy-on-write part: a git tree at a fixed revision (lower-git.c), a
 * plain host directory (lower-dir.c), or a stack of frozen layers over
 * either (lower-stack.c). Nothing here ever writes to the source.
 *
 * fs/lower owns these and what they use: the shared entry helpers and
 * dispatch (lower.c), the tree cache (lower-tree.c) and the blob size
 * cache (lower-sizes.c); lower-private.h holds what only this folder sees.
 * It may call format/ and lib/ only; core/ and the folders above call in.
 * tests/lint/fs-layers.py checks both the includes and the calls.
 *
 * Entries are addressed by their path relative to the layer root ("" is the
 * root); a git lower also carries the object id so that a child lookup is
 * one tree read. Thread-safe: every function may be called from any FUSE
 * worker thread at once.
 */
#pragma once

#include <git2.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

#include "lower-sizes.h"

struct lower;

struct lower_entry {
        char *path;    /* relative to the lower root, "" for the root; owned */
        git_oid oid;   /* git lower: tree or blob id */
        mode_t mode;   /* type and permission bits (setuid/setgid never set) */
        uint64_t size; /* valid if size_known (git: as checked out, after eol/ident) */
        bool size_known;
        struct timespec mtime, ctime;
        /* git lower: a .gitattributes of the base tree that may convert files (it
         * mentions "crlf" or "ident") is in this entry's directory or above; else
         * no attribute can convert it, and no lookup is made */
        bool attr_scope;
        /* git lower: does checking out convert the blob (eol=crlf, ident)? 0 unknown,
         * 1 no, 2 yes; conv_key names the conversion in the blob cache */
        uint8_t conv;
        uint32_t conv_key;
        /* a stack lower (lower-stack.c) also fills: */
        uint64_t ino;            /* st_ino, when not lower_ino(part, path) (0) */
        char *vpath;             /* the path in the view, when it is not path (a base entry below a
                                    redirect); owned */
        struct frozen_entry *fz; /* an entry of a frozen layer (a reference), or NULL */
};

void lower_entry_clear(struct lower_entry *e);
int lower_entry_copy(const struct lower_entry *from, struct lower_entry *to);

/*
 * Open a git lower at rev of the repository at source. cache_dirfd holds the
 * blob cache; tree_budget bounds the memory of parsed trees (lower-tree.h;
 * 0: the default).
 */
int lower_git_open(const char *source, const char *rev, int cache_dirfd, uint64_t tree_budget,
                   struct lower **ret, char **ret_error);
/* Open a plain-directory lower. */
int lower_dir_open(const char *source, struct lower **ret, char **ret_error);
void lower_free(struct lower *l);

bool lower_is_git(const struct lower *l);
/* The git lower's base commit (hex) and commit time; NULL/0 for a plain dir. */
const char *lower_commit_hex(const struct lower *l);
/* The base commit's committer time (seconds); 0 for a plain dir. */
int64_t lower_commit_time(const struct lower *l);
/* The object directory of a git source (for /.cloister/objects), else NULL. */
const char *lower_objects_dir(const struct lower *l);

int lower_root(struct lower *l, struct lower_entry *ret);
/* -ENOENT when dir has no child name. ret is untouched on failure. */
int lower_child(struct lower *l, const struct lower_entry *dir, const char *name,
                struct lower_entry *ret);
/* Look an entry up by relative path (for redirects). */
int lower_lookup_path(struct lower *l, const char *path, struct lower_entry *ret);
/*
 * Fill e->size (git: from the object header, without inflating, unless the
 * base's .gitattributes convert the file on checkout: then the converted
 * file is made in the blob cache and its size taken).
 */
int lower_size(struct lower *l, struct lower_entry *e);

typedef int (*lower_list_fn)(const char *name, const struct lower_entry *child, void *userdata);
/* Call fn for every child of dir; children's size may be unknown. A negative fn return stops. */
int lower_list(struct lower *l, const struct lower_entry *dir, lower_list_fn fn, void *userdata);

/* A read-only fd with the file's data (git: the inflated cache file). */
int lower_open_data(struct lower *l, const struct lower_entry *e, int *ret_fd);
/*
 * The data of a small file in memory (git: the inflated blob, without a
 * cache file), if it is at most max bytes; -EFBIG if larger, -EOPNOTSUPP for
 * a plain-directory lower. *ret is malloc'd (NULL for an empty file).
 */
int lower_read_small(struct lower *l, struct lower_entry *e, size_t max, char **ret,
                     size_t *ret_len);
/* The target of a symlink, NUL-terminated, malloc'd. */
int lower_readlink(struct lower *l, const struct lower_entry *e, char **ret);

/*
 * For a process that opens no other repository than l's source, once it has
 * opened it: libgit2 no longer looks for the host's system, XDG and global
 * git files, and l's per-thread handles get a config without
 * core.attributesFile. Without it, every attribute lookup (the first stat of
 * a file under a .gitattributes that may convert, as in git.git) made an
 * access(2) of /etc/gitattributes and two stat(2)s of that file: three of
 * the five system calls of a cold lookup. Process-wide: the daemon calls it
 * before any per-thread handle exists. A failure leaves l as it was (and
 * correct, only slower).
 */
int lower_git_seal(struct lower *l);

/*
 * The workspace index build's view of a file of the base tree, path, blob
 * oid, *size its blob's size (git_odb_read_header): *size becomes its size
 * as checked out (after the base revision's eol and ident attributes, never
 * a filter that runs a program; read only for a path under a
 * .gitattributes that mentions "crlf" or "ident"),
 * and a file that does not convert is noted in its folder's tree index
 * (lower-tree.h), so that its first stat after the build (the first git
 * status stats every file) neither reads its object header again nor looks
 * its attributes up. Files come folder by folder: c keeps the folder's
 * scope and tree; start it zeroed, end it with lower_git_cursor_done().
 */
struct lower_git_cursor {
        char dir[PATH_MAX];
        bool started, scope;
        void *tree; /* struct tree_index, held */
        struct blob_sizes_builder sizes;
};
int lower_git_index_file(struct lower *l, struct lower_git_cursor *c, const char *path,
                         const git_oid *oid, uint64_t *size);
/*
 * After a whole build: keep every blob size it learned in the blob cache
 * (lower-sizes.h), for the lookups of this daemon once the notes are
 * evicted and of every later one on this state, which read no object
 * header for them.
 */
int lower_git_cursor_save(struct lower *l, struct lower_git_cursor *c);
void lower_git_cursor_done(struct lower *l, struct lower_git_cursor *c);

/*
 * A stack of frozen layers over a base lower (lower-stack.c;
 * docs/fs-design.md, "Layers, checkpoints and forks"): below, plus one
 * frozen layer on top, whose tree root_fd is (taken, O_RDONLY|O_DIRECTORY).
 * below is the base (a git or dir lower) or a stack pushed on it; the new
 * stack shares below's layers and refers to the base, which must outlive
 * every stack on it. Entries of the frozen layers carry a struct frozen_entry.
 */
int lower_stack_push(struct lower *below, unsigned part, int root_fd, const char *id,
                     struct lower **ret);
bool lower_is_stack(const struct lower *l);
/*
 * A lower_entry for an entry of the top frozen layer of stack l, from what a node
 * held of it while it was writable (a checkpoint while mounted): its fd
 * (the frozen entry's to close once this returns 0; still the caller's on an
 * error), a dir's sidecar (a json_t *, a reference is taken; NULL: read
 * it), what it merges with below (moved from *below), its st_ino and path.
 */
int lower_stack_adopt(struct lower *l, int fd, mode_t type, bool opaque, bool metacopy, void *meta,
                      struct lower_entry *below, uint64_t ino, const char *path,
                      struct lower_entry *ret);
/* Give a lower_entry of a stack its path in the view (a base entry's goes to vpath). */
int lower_stack_set_path(struct lower_entry *e, const char *vpath);
/* The root fds of a stack's frozen layers, top first (borrowed); how many. */
size_t lower_stack_layers(const struct lower *l, int *fds, size_t max);

/* An entry of a frozen layer: what a stack lower's lower_entry carries (lower_entry.fz). */
struct frozen_layer;
struct frozen_entry {
        _Atomic unsigned refs;
        struct frozen_layer *layer; /* a reference */
        unsigned k;                 /* its layer: 1 = the lowest frozen one */
        int fd;                     /* a dir: O_RDONLY|O_DIRECTORY; else O_PATH|O_NOFOLLOW */
        mode_t type;                /* the agent's type (a device placeholder's too) */
        bool opaque, metacopy;
        bool indexed;             /* fd is a copy in a layer's link index (links.c) */
        nlink_t nlink;            /* host links of the inode when found */
        void *meta;               /* dirs: the layer dir's sidecar (json_t *), read at lookup */
        pthread_mutex_t lock;     /* below.size, filled once */
        struct lower_entry below; /* a dir: the dir it merges with below (mode 0: none);
                              a metacopy: the entry its data is */
};
/* st_nlink of a frozen file as the view counts it (links.c), from its host count. */
nlink_t lower_frozen_nlink(struct frozen_entry *f, uint64_t ino, nlink_t host);
void lower_frozen_entry_ref(struct frozen_entry *f);
void lower_frozen_entry_unref(struct frozen_entry *f);

/* The path of e in the view it was found in. */
static inline const char *lower_entry_vpath(const struct lower_entry *e)
{
        return e->vpath ? e->vpath : e->path;
}
/* st_ino of a lower entry of part. */
uint64_t lower_entry_ino(unsigned part, const struct lower_entry *e);

/* Join a relative lower path and a name ("" + "a" = "a", "a" + "b" = "a/b"). */
char *lower_path_join(const char *dir, const char *name);

/* Stable inode number of a lower path within part number `part`. */
uint64_t lower_ino(unsigned part, const char *path);
