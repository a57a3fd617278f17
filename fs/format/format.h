/* SPDX-License-Identifier: MIT */
/*
 * format.h: fs/format, the private header of the bottom folder of fs/.
 *
 * Owns: what the workspace filesystem writes on disk, apart from any node
 * or workspace: the reserved names of an upper tree, the sidecar format,
 * the link index's files, the data copy, and the state directory's helpers
 * (state.h, which mounts/ uses too). Everything here works on fds and JSON
 * values only, so that every other folder of fs/ can use it.
 *
 * May call: lib/ only. Nothing here knows a struct node or a workspace.
 * tests/lint/fs-layers.py checks both the includes and the calls.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include <jansson.h>

/* Reserved name prefix in an upper directory; see upper_name_escape(). */
#define UPPER_PREFIX   ".cloister~"
#define UPPER_META     UPPER_PREFIX "meta"
#define UPPER_ESCAPE   UPPER_PREFIX "="
#define LINKS_DIR      UPPER_PREFIX "links" /* a layer's link index (core/links.c) */
#define LINKS_ALIASES  "aliases.json"       /* ... its names that lie below */
#define UPPER_INO_TAG  (2ULL << 62)
#define MIRROR_INO_TAG (3ULL << 62)

/*
 * The largest sidecar read back. Only the daemon writes them, one record
 * per changed entry of the dir, and each save rewrites the whole file, so
 * a dir nears this only far past any usable size.
 */
#define UPPER_META_MAX (1ULL << 30)

/*
 * The /proc/self/fd path of fd, to reach the pinned inode itself (O_PATH
 * fds included) with calls that take a path: never a name the agent could
 * have swapped since.
 */
#define FS_FD_PATH_MAX 32
static inline void fs_fd_path(int fd, char buf[static FS_FD_PATH_MAX])
{
        snprintf(buf, FS_FD_PATH_MAX, "/proc/self/fd/%d", fd);
}

/* st_ino of an entry that exists only in an upper tree: its host inode, tagged. */
static inline uint64_t upper_ino(const struct stat *st)
{
        return (st->st_ino & ~(3ULL << 62)) | UPPER_INO_TAG;
}

/* sidecar.c: names, sidecars and records of an upper tree, on disk */
/* Is name one a directory entry may have (1-255 bytes, no '/', not . or ..)? */
bool fs_name_valid(const char *name);
int upper_name_escape(const char *name, char buf[static 256]);
/* NULL for a marker, else the agent's name (possibly pointing into stored). */
const char *upper_name_unescape(const char *stored);
/* Parse a sidecar (any name bytes restored); NULL if missing or damaged. */
json_t *upper_meta_load_fd(int fd);
/* o[key] = value; if value is not UTF-8, o[key] is lossy ('?' for bytes
 * >= 0x80) and o[key "_hex"] holds its exact bytes in lowercase hex. */
int upper_json_set_name(json_t *o, const char *key, const char *value);
/* The exact name set by upper_json_set_name() (malloc'd), NULL if absent. */
char *upper_json_get_name(json_t *o, const char *key);
/* Write sidecar m (names verbatim) into the directory dfd, atomically. */
int upper_meta_write(int dfd, json_t *m);
/* Remove our marker files from an upper dir (before it is removed). */
int upper_dir_clear_markers(int dfd);
/* The agent's type of an upper entry: a device node is a regular file on the host
 * and "dev": "c"/"b" in its name's sidecar record (the type never changes). */
mode_t upper_rec_type(json_t *rec, mode_t host_type);
/* Add that "dev" to rec for a device node's type; 0 for any other type. */
int upper_rec_add_type(json_t *rec, mode_t type);

/* link-index.c: a layer's link index, read (core/links.c changes it) */
/* The index's name for ino: 16 lowercase hex digits. */
void links_key_of(uint64_t ino, char buf[static 17]);
/* rootfd's aliases.json, or an empty object. */
json_t *links_aliases_load(int rootfd);
unsigned links_aliases_get(json_t *aliases, uint64_t ino);
/* Is fd's inode the one rootfd's index holds for ino? */
bool links_in_index(int rootfd, uint64_t ino, int fd);

/* copy.c: a file's data, extents only, reflinked where the host can */
int copyup_fd_data(int in, int out, uint64_t size);
