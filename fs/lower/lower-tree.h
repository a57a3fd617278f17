/* SPDX-License-Identifier: MIT */
/*
 * lower-tree.h: the git lower's directory index. Each tree object the
 * lower reads is parsed once into a compact index (the entries in git's
 * order for listings, and a name-sorted permutation for O(log n) lookups;
 * immutable but for the index build's notes, written and read atomically),
 * kept by object id in a cache shared by every FUSE worker and bounded by
 * a memory budget, least recently used first out.
 *
 * libgit2 keeps no tree over 4 KiB in its object cache (and the daemon
 * turns its tree cache off, fs/daemon/daemon.c), so without this a folder of a
 * few hundred entries was read from the pack, delta-resolved and parsed
 * again on every lookup in it. docs/fs-design.md ("The tree cache") has
 * the numbers.
 *
 * Thread-safe: the cache has one mutex, held only to find, insert, count
 * and evict; an index is built outside it and, once returned by
 * tree_cache_get(), stays valid until its tree_cache_put(), evicted or not.
 */
#pragma once

#include <git2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tree_cache;

struct tree_ent {
        git_oid oid;
        uint32_t name_off; /* into tree_index.names, NUL-terminated */
        uint16_t name_len;
        uint16_t mode;  /* git_filemode_t */
        uint32_t noted; /* tree_index_note(): the file's size + 1, 0 if none */
};

struct tree_index {
        git_oid oid;
        uint32_t n;
        /* a .gitattributes entry is in this tree and it may convert files on
         * checkout (it mentions "crlf" or "ident"; lower-tree.c) */
        bool attr_converts;
        const struct tree_ent *ents; /* git's order, what a listing shows */
        const uint32_t *by_name;     /* indexes into ents, in strcmp() order of names */
        const char *names;
        char *noted_dir; /* the folder the notes hold for (tree_index_note) */
        /* the cache's own (under its lock) */
        size_t bytes;
        unsigned refs;
        struct tree_index *hnext, *lru_prev, *lru_next;
};

struct tree_cache_stats {
        uint64_t entries;   /* indexes held */
        uint64_t bytes;     /* their memory, as charged against the budget */
        uint64_t budget;    /* the bound */
        uint64_t hits;      /* tree_cache_get() answered from the cache */
        uint64_t misses;    /* ... that had to read and parse the tree */
        uint64_t evictions; /* indexes dropped to stay within the budget */
};

/* The default budget, when the config sets none ([limits] tree_cache). */
#define TREE_CACHE_BUDGET_DEFAULT (32ULL << 20)

int tree_cache_new(uint64_t budget, struct tree_cache **ret);
void tree_cache_free(struct tree_cache *c);
/*
 * The index of tree oid, read through repo (the calling thread's handle)
 * if the cache does not hold it. Take it back with tree_cache_put().
 * -EIO if the tree can't be read.
 */
int tree_cache_get(struct tree_cache *c, git_repository *repo, const git_oid *oid,
                   struct tree_index **ret);
void tree_cache_put(struct tree_cache *c, struct tree_index *t);
void tree_cache_stats(struct tree_cache *c, struct tree_cache_stats *ret);

/*
 * Notes: what the workspace index build learns of a file (fs/core/gitindex.c),
 * kept for the lookups that follow (the first git status stats every
 * file): e, an entry of t seen as the folder dir (its path from the root,
 * dir_len bytes), is shown as stored, size bytes, with no conversion. A
 * file's attributes depend on its path, and one tree may sit in several
 * folders, so the notes hold for the first folder that notes into t only.
 * Atomic: any thread may note or read while others do.
 */
void tree_index_note(struct tree_index *t, const char *dir, size_t dir_len,
                     const struct tree_ent *e, uint64_t size);
/* The size noted for e when t is seen as the folder dir; false if none. */
bool tree_index_noted(const struct tree_index *t, const char *dir, size_t dir_len,
                      const struct tree_ent *e, uint64_t *ret_size);

/* The entry called name, or NULL. O(log n). */
const struct tree_ent *tree_index_find(const struct tree_index *t, const char *name);
static inline const char *tree_ent_name(const struct tree_index *t, const struct tree_ent *e)
{
        return t->names + e->name_off;
}
