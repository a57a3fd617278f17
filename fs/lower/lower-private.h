/* SPDX-License-Identifier: MIT */
/*
 * lower-private.h: fs/lower's private header: the ops table each kind of
 * lower fills (lower-git.c, lower-dir.c, lower-stack.c), the struct lower
 * they share, and the frozen layer of a stack (lower-stack.c, whose
 * references lower.c counts). lower.h says what the folder owns and may
 * call.
 */
#pragma once

#include <pthread.h>
#include <stdatomic.h>

#include <jansson.h>

#include "lower.h"

struct lower_ops {
        bool git; /* a git tree: it has a commit, its time and objects (lower_is_git) */
        int (*root)(struct lower *l, struct lower_entry *ret);
        int (*child)(struct lower *l, const struct lower_entry *dir, const char *name,
                     struct lower_entry *ret);
        int (*lookup_path)(struct lower *l, const char *path, struct lower_entry *ret);
        int (*size)(struct lower *l, struct lower_entry *e);
        int (*list)(struct lower *l, const struct lower_entry *dir, lower_list_fn fn,
                    void *userdata);
        int (*open_data)(struct lower *l, const struct lower_entry *e, int *ret_fd);
        int (*readlink)(struct lower *l, const struct lower_entry *e, char **ret);
        void (*free)(struct lower *l);
        /* A small file in memory (git: its blob); NULL: none (-EOPNOTSUPP). A
         * stack's passes its base's entries on. */
        int (*read_small)(struct lower *l, struct lower_entry *e, size_t max, char **ret,
                          size_t *ret_len);
};

struct lower {
        const struct lower_ops *ops;
        /* git */
        char *source;
        pthread_key_t thread_key; /* per-thread git_repository + odb, see lower-git.c */
        bool key_created;
        git_oid tree_oid;
        git_oid commit_oid; /* attributes come from this commit's .gitattributes only */
        char commit_hex[GIT_OID_HEXSZ + 1];
        char *config_path; /* the fixed git config of the per-thread handles (lower-git.c) */
        bool sealed;       /* lower_git_seal(): host git files are out of libgit2's reach */
        char *objects_dir;
        struct timespec time;     /* committer time of the base commit */
        int cache_dirfd;          /* inflated blobs, named by object id */
        struct tree_cache *trees; /* parsed trees by id, shared by all threads (lower-tree.c) */
        struct blob_sizes *sizes; /* set once (atomically), then read by all (lower-sizes.h) */
        /* plain directory */
        int root_fd;
};

/* A frozen layer of a stack (lower-stack.c), shared by the entries found in it. */
struct frozen_layer {
        _Atomic unsigned refs;
        unsigned k;
        int root_fd;
        pthread_mutex_t lock; /* aliases, read once */
        json_t *aliases;      /* its link index's counts (links.c), NULL until read */
        int has_index;        /* it holds a link index: 1 yes, 0 no, -1 not looked yet */
        char id[33];
        struct frozen_layer *below; /* a reference; NULL: view k-1 is the base */
        struct lower *base;         /* not owned */
        unsigned part;
};
void lower_frozen_layer_unref(struct frozen_layer *f);

