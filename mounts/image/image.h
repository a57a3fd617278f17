/* SPDX-License-Identifier: MIT */
/*
 * image.h: the image store, shared by every workspace of a user
 * ($XDG_STATE_HOME/cloister/images), and the declared environment a
 * sandbox runs on ([image] in the workspace config, docs/cloister-image.md).
 *
 * The store, content-addressed (image-store.c says why this shape):
 *   STORE/lock                   flock(2): one writer (import, rm, gc) at a time
 *   STORE/blobs/HEX              verified manifests and configs, by sha256
 *   STORE/layers/HEX/            one unpacked layer, by its blob's sha256
 *   STORE/images/HEX/image.json  an image, by its manifest's sha256: its record
 *   STORE/images/HEX/root/       its root: the layers composed, whiteouts applied,
 *                                every file a hard link into layers/ (stored once)
 *   STORE/tmp/                   work in progress; renamed into place when whole
 *
 * Trust boundary: an image is input from outside. Every blob is checked
 * against its sha256, every archive unpacked under the bounds of struct
 * image_limits by image-unpack.c, which never follows a symlink it did not
 * make and refuses what could reach out of the layer. Nothing in the store
 * keeps a setuid or setgid bit, a device node or an extended attribute.
 *
 * Library code: nothing here prints; errors come back as a negative errno
 * and a malloc'd one-line message.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IMAGE_DIGEST_LEN          71 /* "sha256:" + 64 hex digits */
#define IMAGE_HEX_LEN             64
#define IMAGE_JSON_MAX            (4 * 1024 * 1024) /* an index, manifest or config */
#define IMAGE_LAYERS_MAX          256
#define IMAGE_DEPTH_MAX           128           /* directories an entry may be nested in */
#define IMAGE_FILE_MAX_DEFAULT    (4ULL << 30)  /* [image] max_file */
#define IMAGE_SIZE_MAX_DEFAULT    (16ULL << 30) /* [image] max_size */
#define IMAGE_ENTRIES_MAX_DEFAULT 1000000ULL    /* [image] max_entries */

/* What an untrusted archive may hold (docs/config.md, [image]). */
struct image_limits {
        uint64_t max_file;    /* bytes of one entry */
        uint64_t max_size;    /* bytes unpacked, per import */
        uint64_t max_entries; /* entries unpacked, per import */
        bool allow_setuid;    /* setuid/setgid files imported with the bits dropped */
};
void image_limits_default(struct image_limits *l);

/* "sha256:HEX" with 64 lowercase hex digits? */
bool image_digest_valid(const char *digest);

/* $XDG_STATE_HOME/cloister/images, or ~/.local/state/cloister/images (not made). */
int image_store_path(char **ret);

/*
 * Import SOURCE ("oci:DIR[:TAG]", "oci-archive:FILE[:TAG]",
 * "docker-archive:FILE", "dir:PATH") into the store: *ret_digest is the
 * manifest's "sha256:...". An image already stored is not unpacked again;
 * *ret_new says whether this call stored it.
 */
int image_import(const char *store, const char *source, const struct image_limits *l,
                 char **ret_digest, bool *ret_new, char **ret_error);

/*
 * The stored image DIGEST: its root directory (*ret_root) and record
 * (*ret_record, a JSON object; either may be NULL). -ENOENT if absent.
 * Reads only: what `cloister run` calls.
 */
int image_lookup(const char *store, const char *digest, char **ret_root, char **ret_record_json,
                 char **ret_error);

/* A digest, or a unique prefix of its hex digits (4 or more), of a stored image. */
int image_resolve(const char *store, const char *arg, char **ret_digest, char **ret_error);

/*
 * Every stored image's record as a JSON array text (sorted by digest).
 */
int image_list_json(const char *store, char **ret_json, char **ret_error);

/*
 * Hold the stored image DIGEST for a run: *ret_fd, a shared lock on its
 * record, kept open (O_CLOEXEC) for as long as the sandbox runs on it.
 * -ENOENT if it is not there, or was removed while this waited.
 */
int image_hold(const char *store, const char *digest, int *ret_fd, char **ret_error);

/* Remove an image (its root and record; its layers stay until gc); -EBUSY while a run holds it. */
int image_remove(const char *store, const char *digest, char **ret_error);

/*
 * Remove what no image uses: layers, blobs, and work left by an import
 * that did not finish. *ret_json: {"layers": N, "blobs": N, "tmp": N}.
 */
int image_gc(const char *store, char **ret_json, char **ret_error);

/*
 * A workspace's [image] (image-workspace.c). resolve: the root and digest
 * `cloister run` uses (both NULL without [image]), and *ret_hold the
 * image held for the run (image_hold; left alone without [image]);
 * refused when the image is not in the store, or when [image] digest and
 * the digest the last mount imported differ (both named). import: what `cloister mount` does,
 * import source unless the store holds [image] digest, refuse a source
 * whose digest is not [image] digest, and record the digest in the state.
 */
struct config;
int image_workspace_resolve(const struct config *c, char **ret_root, char **ret_digest,
                            int *ret_hold, char **ret_error);
int image_workspace_import(const struct config *c, char **ret_digest, char **ret_error);
int image_workspace_state_write(const struct config *c, const char *digest);
/* The digest a workspace runs on: [image] digest, else the last mount's; -ENOENT: none. */
int image_workspace_digest(const struct config *c, char ret[static IMAGE_DIGEST_LEN + 1]);

/*
 * A Debian root's installed packages against the package lock at lock
 * (image-lock.c): -ESTALE, naming the differences, when they are not the
 * ones it pins; with update, the lock is written from the root instead.
 */
int image_lock_apply(const char *root, const char *lock, bool update, char **ret_error);

/*
 * Build a Debian image with mmdebstrap (suite, comma-separated packages)
 * and import it. Reproducible under SOURCE_DATE_EPOCH (set from the
 * argument when not 0) and a package lock (pkg_lock, if not NULL: checked, or
 * written with update_lock). -ENOENT: mmdebstrap is not installed.
 */
int image_build_debian(const char *store, const char *suite, const char *packages,
                       const char *mirror, uint64_t source_date_epoch, const char *pkg_lock,
                       bool update_lock, const struct image_limits *l, char **ret_digest,
                       char **ret_error);
