/* SPDX-License-Identifier: MIT */
/*
 * layers.h: the layer stack of a workspace's state directory, on disk.
 *
 * <state>/fs/layers.json names the writable layer, the frozen layers
 * beneath it, the checkpoints and, for a fork, its parent
 * (docs/fs-design.md, "Layers, checkpoints and forks"). Every change is
 * prepared beside the live state and committed by one rename of a new
 * layers.json, under <state>/fs/layers.lock. The daemon (layers-online.c)
 * and the CLI (offline) share these functions.
 *
 * fs/layers owns the layer store: layers.json (layers.c), checkpoint,
 * restore and delete (layers-ops.c), fork and views (layers-fork.c),
 * squash (layers-squash.c) and the client of a mounted daemon's control
 * socket (layers-ctl.c). This header is both its public one (mounts/ uses
 * it) and its private one. It may call lower/, format/, journal/ and
 * lib/; core/ and daemon/ call in. tests/lint/fs-layers.py checks both
 * the includes and the calls.
 *
 * Library code: nothing here prints; errors come back as a negative errno
 * and a malloc'd one-line message.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Frozen layers in one stack at most, and from when `checkpoint` says a squash is due. */
#define FS_STACK_MAX        64
#define FS_STACK_SQUASH_DUE 48
/* Checkpoints one workspace may hold at once. */
#define FS_CHECKPOINTS_MAX 1024
/* Forks registered in one state, and how deep GC follows forks of forks. */
#define FS_FORKS_MAX      4096
#define FS_FORKS_DEPTH    64
#define FS_CHECKPOINT_MAX 64 /* the longest checkpoint name */
/* A layer id: 128 random bits in lowercase hex. */
#define FS_LAYER_ID_LEN 32
/* The marker file in a layer's root that holds its id. */
#define FS_LAYER_MARKER ".cloister~layer"
#define FS_LAYERS_FILE  "layers.json"
/* The first writable layer, relative to the state. */
#define FS_FIRST_TOP "fs/repo"

struct fs_layer_ref {
        char id[FS_LAYER_ID_LEN + 1];
        char *state; /* the state directory that wrote it (absolute); NULL: this one */
        char *dir;   /* its tree, relative to that state */
};

struct fs_checkpoint {
        char *name;
        char **stack; /* layer ids, bottom first */
        size_t n_stack;
        uint64_t seq; /* order of creation */
        int64_t time; /* seconds since the epoch */
};

struct fs_layers {
        char *state;  /* absolute, as given */
        bool exists;  /* layers.json was there (else: fs/repo writable, nothing frozen) */
        char *top;    /* the writable layer, relative to state */
        char *top_id; /* its id, NULL until it has one (fs/repo before the first checkpoint) */
        char **stack; /* frozen layer ids, bottom first */
        size_t n_stack;
        struct fs_layer_ref *layers; /* where each layer of stack and checkpoints lies */
        size_t n_layers;
        struct fs_checkpoint *cps;
        size_t n_cps;
        uint64_t seq;
        /* A fork: what it was made from (all NULL otherwise). */
        char *parent_name, *parent_state, *parent_checkpoint;
};

/* Read <state>/fs/layers.json (or what its absence means). */
int fs_layers_load(const char *state, struct fs_layers **ret, char **ret_error);
void fs_layers_free(struct fs_layers *l);
static inline void fs_layers_freep(struct fs_layers **l)
{
        fs_layers_free(*l);
}
#define _cleanup_layers_ __attribute__((cleanup(fs_layers_freep)))
/*
 * Write l as <state>/fs/layers.json: temporary file, fsync, rename, fsync of
 * fs/. op names the command for its crash points (lib/crashpoint.h).
 */
int fs_layers_save(const struct fs_layers *l, const char *op, char **ret_error);
/* The same, into the fs/ directory open at dfd (l->state names it in messages only). */
int fs_layers_save_at(const struct fs_layers *l, int dfd, const char *op, char **ret_error);

const struct fs_layer_ref *fs_layers_ref(const struct fs_layers *l, const char *id);
const struct fs_checkpoint *fs_layers_checkpoint(const struct fs_layers *l, const char *name);
/* The absolute path of a layer's tree (malloc'd), or NULL. */
char *fs_layers_ref_path(const struct fs_layers *l, const struct fs_layer_ref *ref);

/*
 * Take <state>/fs/layers.lock (blocking): every read-modify-write of
 * layers.json holds it. Returns the fd to close, or a negative errno.
 */
int fs_layers_lock(const char *state);
/*
 * Take <state>/fs.lock without waiting, as a daemon holds it for its life:
 * -EBUSY if a daemon serves the state. Returns the fd to close.
 */
int fs_layers_lock_offline(const char *state);
/* fs_layers_lock() then fs_layers_load(), with the lock's failure in words:
 * the start of every operation on layers.json. */
int fs_layers_lock_load(const char *state, int *ret_lock, struct fs_layers **ret, char **ret_error);

/* A fresh layer id. */
void fs_layer_id_new(char out[static FS_LAYER_ID_LEN + 1]);
/* Write or check the marker in a layer's root. */
int fs_layer_marker_write(int dirfd, const char *id);
int fs_layer_marker_check(int dirfd, const char *id);
/*
 * A new writable layer's root shows what the root showed before: owner,
 * mode, user.* and trusted.cloister.* xattrs, times (from: the root of the
 * layer it continues; both are directory fds).
 */
int fs_layer_root_meta_copy(int from, int to);
/* The same for any entry (fds: O_PATH or open; a symlink gets owner and times). */
int fs_layer_meta_copy(int from, int to);

/*
 * Make layers/<id> in state, empty but for its marker, its root showing
 * what the root of from (a layer's dir, absolute or relative to state;
 * NULL: none) shows. Not referenced by anything until a commit.
 */
int fs_layer_dir_new(const char *state, const char *from, char id[static FS_LAYER_ID_LEN + 1],
                     char **ret_rel, int *ret_fd, char **ret_error);
struct fs_layers_report;
/*
 * cloister squash: the frozen layers of the stack merged into one new
 * frozen layer (source: the workspace's [repo] source). -EBUSY if mounted.
 */
int fs_squash(const char *state, const char *source, struct fs_layers_report *rep,
              char **ret_error);

/*
 * A checkpoint in two steps, so that the daemon can carry the files open
 * for writing into the new writable layer in between (layers-online.c):
 * begin makes the new, empty writable layer (layers/ID, not yet referenced)
 * and gives the current one an id; commit writes layers.json. The caller
 * holds fs_layers_lock() throughout. abort removes what begin made.
 */
struct fs_checkpoint_tx {
        char name[FS_CHECKPOINT_MAX + 1];
        char old_id[FS_LAYER_ID_LEN + 1]; /* the writable layer being frozen */
        char new_id[FS_LAYER_ID_LEN + 1];
        char *new_top; /* relative to the state: layers/<new_id> */
        int new_top_fd;
        size_t depth; /* frozen layers once committed */
};
int fs_checkpoint_begin(struct fs_layers *l, const char *name, struct fs_checkpoint_tx *tx,
                        char **ret_error);
int fs_checkpoint_commit(struct fs_layers *l, struct fs_checkpoint_tx *tx, char **ret_error);
void fs_checkpoint_tx_done(struct fs_layers *l, struct fs_checkpoint_tx *tx, bool committed);

/* What a command did, for its report. */
struct fs_layers_report {
        size_t depth;     /* frozen layers in the stack now */
        bool squash_due;  /* depth >= FS_STACK_SQUASH_DUE */
        size_t removed;   /* layer directories removed */
        char **kept_by;   /* NULL-terminated: who still uses the layer of a deleted checkpoint */
        char *fork_state; /* fork: the new state */
        char *base;       /* fork: the base commit, if pinned */
        /* checkpoint while mounted: files open for writing whose copy-up into
         * the new layer failed (their handles' writes fail), and the first */
        size_t not_carried;
        char *not_carried_first; /* "PATH: ERROR" */
};
void fs_layers_report_clear(struct fs_layers_report *r);

/*
 * The daemon's control socket, <state>/fs.sock: one JSON request and one
 * JSON reply per connection, each at most FS_CONTROL_MAX bytes
 * (layers-online.c serves it, layers-ctl.c asks).
 */
#define FS_CONTROL_SOCKET "fs.sock"
#define FS_CONTROL_MAX    4096
struct sockaddr_un;
int fs_control_path(const char *state, struct sockaddr_un *sa);

/* cloister checkpoint: offline, or through the daemon that serves the state. */
int fs_checkpoint(const char *state, const char *name, struct fs_layers_report *rep,
                  char **ret_error);
/* The same through the daemon only: -ENOENT or -ECONNREFUSED if none listens. */
int fs_checkpoint_online(const char *state, const char *name, struct fs_layers_report *rep,
                         char **ret_error);
/*
 * cloister log: ask the daemon serving state to write what its journal
 * holds (and rewrite removed trees) before the journal is read. -ENOENT or
 * -ECONNREFUSED if none listens (nothing is held then).
 */
int fs_journal_flush_online(const char *state, char **ret_error);
/* cloister checkpoint with no daemon serving: -EBUSY if one does. */
int fs_checkpoint_offline(const char *state, const char *name, struct fs_layers_report *rep,
                          char **ret_error);
/* cloister restore: -EBUSY if mounted. */
int fs_restore(const char *state, const char *name, struct fs_layers_report *rep, char **ret_error);
/* cloister checkpoint --delete: the name goes; layers nothing uses any more with it. */
int fs_checkpoint_delete(const char *state, const char *name, struct fs_layers_report *rep,
                         char **ret_error);
/*
 * The state of a fork of `state` (the workspace parent_name) at its
 * checkpoint `name`, at new_state (absolute; its parent directory is made).
 * new_state must not exist (it is made with mkdir, and filled through its
 * descriptor), unless it is that same fork, half made or never mounted
 * (killed before its config was written), which is made again. The fork is
 * registered in state's forks/. Where new_state may lie is the caller's
 * check (cloister fork: ops_fork).
 */
int fs_fork_state(const char *state, const char *parent_name, const char *name,
                  const char *new_state, struct fs_layers_report *rep, char **ret_error);
/*
 * A state at view_state (to be made: its parent must exist) that shows
 * checkpoint `name` of `state` and nothing else: for a temporary mount
 * (cloister diff --since), never registered, removed by its caller.
 * *ret_base: the pinned base commit, if there is one.
 */
int fs_checkpoint_view_state(const char *state, const char *name, const char *view_state,
                             char **ret_base, char **ret_error);
/* Drop the refs of layers that neither the stack nor a checkpoint names any more. */
void fs_layers_prune_refs(struct fs_layers *l);
/*
 * Remove the layer directories of `state` that nothing refers to: not its
 * own layers.json (writable layer, stack, checkpoints), nor any fork's
 * (followed through <state>/forks/ transitively). Caller holds the lock;
 * op names the command, for its crash points.
 */
int fs_layers_gc(const struct fs_layers *l, const char *op, struct fs_layers_report *rep,
                 char **ret_error);
