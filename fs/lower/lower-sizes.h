/* SPDX-License-Identifier: MIT */
/*
 * lower-sizes.h: the sizes of the base tree's blobs, kept on disk between
 * mounts (lower-sizes.c).
 *
 * A blob's size is a function of its id, so a size once learned holds for
 * every later mount of every workspace of the source. The index build
 * learns them all (one object header each); the file it leaves in the blob
 * cache lets a daemon that starts on an existing state size a file without
 * reading the pack, where a header read walks the object's whole delta
 * chain (libgit2 resolves the type at the chain's end), page by page of a
 * pack that is cold after a reboot or a remount.
 */
#pragma once

#include <git2.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BLOB_SIZES_FILE "sizes"
/* 2.4 million blobs: a larger file is not one this code wrote for a tree the
 * daemon can serve ([limits] of the index build), and is ignored. */
#define BLOB_SIZES_MAX_BYTES (64u << 20)

struct blob_sizes;

/*
 * Read dirfd/BLOB_SIZES_FILE. -ENOENT if there is none, -EINVAL if it is
 * not one this code wrote whole (wrong magic or length, over
 * BLOB_SIZES_MAX_BYTES, ids not in strictly increasing order): the caller
 * then goes without it.
 */
int blob_sizes_open(int dirfd, struct blob_sizes **ret);
/* The size recorded for oid, if any. O(log n); thread-safe. */
bool blob_sizes_find(const struct blob_sizes *s, const git_oid *oid, uint64_t *ret_size);
void blob_sizes_free(struct blob_sizes *s);

/* Collecting sizes as the index build learns them, then writing them once. */
struct blob_sizes_builder {
        struct blob_size_rec *v;
        size_t n, cap;
        bool failed; /* out of memory once: nothing is written */
};
void blob_sizes_add(struct blob_sizes_builder *b, const git_oid *oid, uint64_t size);
/* Sort, drop duplicates, and write dirfd/BLOB_SIZES_FILE (tmp + rename).
 * ret (may be NULL): the same sizes in memory, also when the write failed;
 * left alone if out of memory. */
int blob_sizes_write(struct blob_sizes_builder *b, int dirfd, struct blob_sizes **ret);
void blob_sizes_builder_done(struct blob_sizes_builder *b);
