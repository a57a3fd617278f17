/* SPDX-License-Identifier: MIT */
/*
 * image-private.h: what the files of mounts/image share. Sections follow
 * the split: the blob checks (image-blob.c), the unpacker of untrusted
 * archives (image-unpack.c), the composition of layers into a root
 * (image-compose.c), the sources (image-source.c) and the store
 * (image-store.c, image-import.c).
 */
#pragma once

#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "image.h"

int image_errorf(char **ret_error, int r, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* --- image-blob.c: sha256 of files, bounded JSON -------------------------- */
/* sha256 of what fd reads from its start to its end, as 64 hex digits. */
int image_fd_sha256(int fd, char hex[static IMAGE_HEX_LEN + 1]);
/* Open path under dirfd: symlinks followed only while they stay beneath it. */
int image_open_beneath(int dirfd, const char *path, int flags);
/* sha256 of memory. */
void image_mem_sha256(const void *p, size_t len, char hex[static IMAGE_HEX_LEN + 1]);
/*
 * Read path (at most IMAGE_JSON_MAX bytes); if want_hex is not NULL, its
 * sha256 must be that. *ret_text is NUL-terminated; *ret_json parsed (either may be NULL).
 */
int image_file_read(int dirfd, const char *path, const char *want_hex, char **ret_text,
                    size_t *ret_len, json_t **ret_json, char **ret_error);
/* "sha256:HEX" -> HEX (a pointer into digest), or NULL if not one. */
const char *image_digest_hex(const char *digest);

/* --- image-unpack.c: an untrusted tar, into an empty directory ------------ */
/* What one import has unpacked so far, against its limits. */
struct image_budget {
        const struct image_limits *limits;
        uint64_t bytes, entries;
};
/*
 * Unpack the tar (gzip, zstd, xz or bzip2 compressed, or none) that fd
 * reads into the empty directory dirfd. With want_hex, the bytes read must
 * hash to it (checked at the end, before success). what names the archive
 * in errors. On failure the directory may hold part of it: the caller
 * removes it.
 */
int image_unpack(int fd, const char *want_hex, int dirfd, struct image_budget *b, const char *what,
                 char **ret_error);

/* --- image-compose.c: layers into a root ---------------------------------- */
/*
 * Compose the unpacked layers (bottom first) into the empty directory
 * rootfd: directories made, every other entry a hard link to the layer's,
 * whiteouts (.wh.NAME, .wh..wh..opq) applied. Then the mount points the
 * sandbox needs, and /etc's synthesized names as empty files.
 */
int image_compose(int layersfd, char *const *layer_hex, size_t n, int rootfd, char **ret_error);
/* Remove name under dirfd, whatever it is, never following a symlink. */
int image_rm_rf_at(int dirfd, const char *name);

/* --- image-source.c: what an import reads --------------------------------- */
struct image_layer_ref {
        char hex[IMAGE_HEX_LEN + 1]; /* the blob's sha256 */
        char *path;                  /* the blob file, or NULL if unpacked already */
        uint64_t size;
};
struct image_source {
        char *workdir;       /* STORE/tmp/... where an archive was unpacked, or NULL */
        char *base;          /* the directory the blobs are read from */
        char *manifest_text; /* the manifest, as stored (its sha256 is the digest) */
        size_t manifest_len;
        char manifest_hex[IMAGE_HEX_LEN + 1];
        char *config_text;
        size_t config_len;
        char config_hex[IMAGE_HEX_LEN + 1];
        struct image_layer_ref layers[IMAGE_LAYERS_MAX];
        size_t n_layers;
        char *kind; /* "oci", "oci-archive", "docker-archive", "dir" */
};
/* Read SOURCE's index, manifest and config (verified), staging archives in tmpdir. */
int image_source_open(const char *source, const char *tmpdir, struct image_budget *b,
                      struct image_source *s, char **ret_error);
void image_source_clear(struct image_source *s);
/* dir:PATH: the directory as one tar layer, written to layer_path (deterministic). */
int image_dir_tar(const char *dir, const char *layer_path, uint64_t source_date_epoch,
                  char **ret_error);
/* A manifest and config for one uncompressed layer (dir:, docker-archive:). */
int image_manifest_synthesize(struct image_source *s, const char *const *diff_hex, size_t n,
                              const uint64_t *sizes, char **ret_error);

/* --- image-store.c, image-import.c: the store ------------------------------ */
/* Take STORE/lock (made with the store's folders if create); *ret_fd holds it. */
int image_store_lock(const char *store, bool create, int *ret_fd, char **ret_error);
