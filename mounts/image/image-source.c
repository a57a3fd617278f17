/* SPDX-License-Identifier: MIT */
/*
 * image-source.c: what an import reads, by the kind of its SOURCE.
 *
 *   oci:DIR[:TAG]          an OCI image layout (index.json, blobs/sha256/);
 *                          TAG picks the manifest by its
 *                          org.opencontainers.image.ref.name annotation
 *   oci-archive:FILE[:TAG] the same as one tar, unpacked first (bounded)
 *   docker-archive:FILE    `docker save` / `podman save` / skopeo's format:
 *                          manifest.json naming a config and layer tars
 *   dir:PATH               a root directory, made one layer (image-dir.c)
 *
 * Every document is read bounded and checked against the sha256 that
 * names it before jansson parses it; each layer blob is checked as it is
 * unpacked (image-unpack.c). An image's digest is its manifest's sha256.
 * A docker archive and a directory have no OCI manifest: cloister writes
 * one (image_manifest_synthesize(), compact JSON with sorted keys, so the
 * same layers always give the same digest), and the layers are checked
 * against the config's diff_ids.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "image-private.h"
#include "lib/util.h"

#define REF_NAME "org.opencontainers.image.ref.name"

static const char *json_str(json_t *o, const char *key)
{
        return json_string_value(json_object_get(o, key));
}

static bool media_is_index(const char *m)
{
        return m && (streq(m, "application/vnd.oci.image.index.v1+json") ||
                     streq(m, "application/vnd.docker.distribution.manifest.list.v2+json"));
}

static const char *host_arch(void)
{
        static struct utsname u;

        if (uname(&u) < 0)
                return "amd64";
        if (streq(u.machine, "x86_64"))
                return "amd64";
        if (streq(u.machine, "aarch64"))
                return "arm64";
        return u.machine;
}

/* blobs/sha256/HEX of a descriptor's digest, as a path under the layout. */
static int blob_path(json_t *desc, const char *what, char **ret_path, char hex[static 65],
                     char **ret_error)
{
        const char *d = json_str(desc, "digest"), *h = image_digest_hex(d);

        if (!h)
                return image_errorf(ret_error, -EBADMSG,
                                    "%s: digest '%s' is not sha256:<64 hex digits>", what,
                                    d ? d : "(none)");
        memcpy(hex, h, IMAGE_HEX_LEN + 1);
        return asprintf(ret_path, "blobs/sha256/%s", h) < 0 ? -ENOMEM : 0;
}

/* The manifest descriptor that index.json names for tag (NULL: the only one). */
static int index_pick(json_t *index, const char *tag, const char *where, json_t **ret,
                      char **ret_error)
{
        json_t *ms = json_object_get(index, "manifests"), *m, *found = NULL;
        size_t i, n = 0;

        if (!json_is_array(ms))
                return image_errorf(ret_error, -EBADMSG, "%s: no \"manifests\" array", where);
        json_array_foreach (ms, i, m) {
                const char *ref = json_str(json_object_get(m, "annotations"), REF_NAME);
                if (tag && !streq_ptr(ref, tag))
                        continue;
                found = m;
                n++;
        }
        if (n == 0)
                return image_errorf(ret_error, -ENOENT, "%s: no manifest%s%s", where,
                                    tag ? " tagged " : "", tag ? tag : "");
        if (n > 1)
                return image_errorf(ret_error, -EINVAL, "%s: %zu manifests%s%s: name one with :TAG",
                                    where, n, tag ? " tagged " : "", tag ? tag : "");
        *ret = found;
        return 0;
}

static int oci_read(struct image_source *s, int base, const char *tag, char **ret_error)
{
        _cleanup_(json_decrefp) json_t *index = NULL, *nested = NULL, *manifest = NULL;
        _cleanup_free_ char *path = NULL, *text = NULL;
        json_t *desc = NULL, *layers, *l;
        size_t i;
        int r;

        r = image_file_read(base, "index.json", NULL, NULL, NULL, &index, ret_error);
        if (r < 0)
                return image_errorf(ret_error, r, "%s/index.json: %s", s->base, strerror(-r));
        r = index_pick(index, tag, "index.json", &desc, ret_error);
        if (r < 0)
                return r;
        if (media_is_index(json_str(desc, "mediaType"))) {
                /* A multi-platform image: this machine's linux platform. */
                json_t *ms, *m;
                char hex[65];

                r = blob_path(desc, "index.json", &path, hex, ret_error);
                if (r >= 0)
                        r = image_file_read(base, path, hex, NULL, NULL, &nested, ret_error);
                if (r < 0)
                        return r;
                desc = NULL;
                ms = json_object_get(nested, "manifests");
                json_array_foreach (ms, i, m) {
                        json_t *p = json_object_get(m, "platform");
                        if (streq_ptr(json_str(p, "os"), "linux") &&
                            streq_ptr(json_str(p, "architecture"), host_arch()) &&
                            !media_is_index(json_str(m, "mediaType"))) {
                                desc = m;
                                break;
                        }
                }
                if (!desc)
                        return image_errorf(ret_error, -ENOENT,
                                            "%s: the image index has no linux/%s manifest", path,
                                            host_arch());
                free(TAKE_PTR(path));
        }
        r = blob_path(desc, "index.json", &path, s->manifest_hex, ret_error);
        if (r < 0)
                return r;
        r = image_file_read(base, path, s->manifest_hex, &s->manifest_text, &s->manifest_len,
                            &manifest, ret_error);
        if (r < 0)
                return r;
        if (media_is_index(json_str(manifest, "mediaType")))
                return image_errorf(ret_error, -EBADMSG, "%s: an index inside an index: refused",
                                    path);
        free(TAKE_PTR(path));
        r = blob_path(json_object_get(manifest, "config"), "manifest config", &path, s->config_hex,
                      ret_error);
        if (r >= 0)
                r = image_file_read(base, path, s->config_hex, &s->config_text, &s->config_len,
                                    NULL, ret_error);
        if (r < 0)
                return r;
        layers = json_object_get(manifest, "layers");
        if (!json_is_array(layers) || json_array_size(layers) > IMAGE_LAYERS_MAX)
                return image_errorf(ret_error, -EBADMSG,
                                    "manifest sha256:%s: \"layers\" is not an array of at most %d",
                                    s->manifest_hex, IMAGE_LAYERS_MAX);
        json_array_foreach (layers, i, l) {
                const char *mt = json_str(l, "mediaType");
                struct image_layer_ref *ref = &s->layers[s->n_layers];

                if (!mt || !strstr(mt, "tar"))
                        return image_errorf(ret_error, -EBADMSG,
                                            "manifest sha256:%s: layer %zu has media type '%s', "
                                            "not a tar",
                                            s->manifest_hex, i, mt ? mt : "(none)");
                free(TAKE_PTR(path));
                r = blob_path(l, "manifest layer", &path, ref->hex, ret_error);
                if (r < 0)
                        return r;
                ref->path = TAKE_PTR(path);
                ref->size = (uint64_t)json_integer_value(json_object_get(l, "size"));
                s->n_layers++;
        }
        return 0;
}

static const char *const layer_media = "application/vnd.oci.image.layer.v1.tar";

int image_manifest_synthesize(struct image_source *s, const char *const *diff_hex, size_t n,
                              const uint64_t *sizes, char **ret_error)
{
        _cleanup_(json_decrefp) json_t *m = NULL, *layers = json_array();
        char digest[IMAGE_DIGEST_LEN + 1];

        if (!layers)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                snprintf(digest, sizeof(digest), "sha256:%s", diff_hex[i]);
                if (json_array_append_new(layers, json_pack("{s:s, s:s, s:I}", "mediaType",
                                                            layer_media, "digest", digest, "size",
                                                            (json_int_t)sizes[i])) < 0)
                        return -ENOMEM;
        }
        snprintf(digest, sizeof(digest), "sha256:%s", s->config_hex);
        m = json_pack("{s:i, s:s, s:{s:s, s:s, s:I}, s:O}", "schemaVersion", 2, "mediaType",
                      "application/vnd.oci.image.manifest.v1+json", "config", "mediaType",
                      "application/vnd.oci.image.config.v1+json", "digest", digest, "size",
                      (json_int_t)s->config_len, "layers", layers);
        if (!m)
                return -ENOMEM;
        s->manifest_text = json_dumps(m, JSON_COMPACT | JSON_SORT_KEYS);
        if (!s->manifest_text)
                return image_errorf(ret_error, -ENOMEM, "cannot write a manifest");
        s->manifest_len = strlen(s->manifest_text);
        image_mem_sha256(s->manifest_text, s->manifest_len, s->manifest_hex);
        return 0;
}

static int docker_read(struct image_source *s, int base, char **ret_error)
{
        _cleanup_(json_decrefp) json_t *list = NULL, *config = NULL;
        const char *diff[IMAGE_LAYERS_MAX];
        uint64_t sizes[IMAGE_LAYERS_MAX];
        json_t *entry, *layers, *diff_ids, *l;
        const char *cfg;
        size_t i;
        int r;

        r = image_file_read(base, "manifest.json", NULL, NULL, NULL, &list, ret_error);
        if (r < 0)
                return r;
        if (!json_is_array(list) || json_array_size(list) != 1)
                return image_errorf(ret_error, -EINVAL, "manifest.json: holds %zu images, not one",
                                    json_is_array(list) ? json_array_size(list) : 0);
        entry = json_array_get(list, 0);
        cfg = json_str(entry, "Config");
        layers = json_object_get(entry, "Layers");
        if (!cfg || !json_is_array(layers) || json_array_size(layers) > IMAGE_LAYERS_MAX)
                return image_errorf(ret_error, -EBADMSG,
                                    "manifest.json: no \"Config\" or \"Layers\" (at most %d)",
                                    IMAGE_LAYERS_MAX);
        r = image_file_read(base, cfg, NULL, &s->config_text, &s->config_len, &config, ret_error);
        if (r < 0)
                return r;
        image_mem_sha256(s->config_text, s->config_len, s->config_hex);
        diff_ids = json_object_get(json_object_get(config, "rootfs"), "diff_ids");
        if (!json_is_array(diff_ids) || json_array_size(diff_ids) != json_array_size(layers))
                return image_errorf(ret_error, -EBADMSG,
                                    "%s: rootfs.diff_ids does not name each of the %zu layers", cfg,
                                    json_array_size(layers));
        json_array_foreach (layers, i, l) {
                struct image_layer_ref *ref = &s->layers[i];
                const char *p = json_string_value(l);
                const char *want = image_digest_hex(json_string_value(json_array_get(diff_ids, i)));
                _cleanup_close_ int fd = -1;
                struct stat st;

                if (!p || !want)
                        return image_errorf(ret_error, -EBADMSG,
                                            "manifest.json: layer %zu has no path or diff_id", i);
                /* Docker's layers are uncompressed: their sha256 is the diff_id. */
                fd = image_open_beneath(base, p, O_RDONLY);
                if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                        return image_errorf(ret_error, fd < 0 ? fd : -EINVAL,
                                            "%s: not a file in the archive", p);
                memcpy(ref->hex, want, IMAGE_HEX_LEN + 1);
                ref->path = strdup(p);
                if (!ref->path)
                        return -ENOMEM;
                ref->size = (uint64_t)st.st_size;
                diff[i] = ref->hex;
                sizes[i] = ref->size;
                s->n_layers++;
        }
        return image_manifest_synthesize(s, diff, s->n_layers, sizes, ret_error);
}

/* "PATH[:TAG]": PATH whole if it exists, else split at the last ':'. */
static int path_tag_split(const char *spec, char **ret_path, char **ret_tag)
{
        const char *colon = strrchr(spec, ':');

        if (access(spec, F_OK) == 0 || !colon || strchr(colon, '/')) {
                *ret_tag = NULL;
                return (*ret_path = strdup(spec)) ? 0 : -ENOMEM;
        }
        *ret_path = strndup(spec, (size_t)(colon - spec));
        *ret_tag = strdup(colon + 1);
        return *ret_path && *ret_tag ? 0 : -ENOMEM;
}

static int archive_stage(const char *file, const char *tmpdir, struct image_budget *b,
                         struct image_source *s, char **ret_error)
{
        _cleanup_close_ int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        _cleanup_close_ int dir = -1;
        struct stat st;

        if (fd < 0)
                return image_errorf(ret_error, negative_errno(), "%s: %m", file);
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
                return image_errorf(ret_error, -EINVAL, "%s: not a regular file", file);
        if (asprintf(&s->workdir, "%s/archive", tmpdir) < 0)
                return -ENOMEM;
        if (mkdir(s->workdir, 0700) < 0)
                return image_errorf(ret_error, negative_errno(), "%s: %m", s->workdir);
        dir = open(s->workdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0)
                return negative_errno();
        s->base = strdup(s->workdir);
        if (!s->base)
                return -ENOMEM;
        return image_unpack(fd, NULL, dir, b, file, ret_error);
}

int image_source_open(const char *source, const char *tmpdir, struct image_budget *b,
                      struct image_source *s, char **ret_error)
{
        _cleanup_free_ char *path = NULL, *tag = NULL;
        _cleanup_close_ int base = -1;
        const char *rest;
        int r;

        *s = (struct image_source){0};
        if ((rest = startswith(source, "oci:")) || (rest = startswith(source, "oci-archive:"))) {
                bool archive = startswith(source, "oci-archive:");
                r = path_tag_split(rest, &path, &tag);
                if (r < 0)
                        return r;
                s->kind = strdup(archive ? "oci-archive" : "oci");
                if (archive) {
                        r = archive_stage(path, tmpdir, b, s, ret_error);
                        if (r < 0)
                                return r;
                } else if (!(s->base = strdup(path)))
                        return -ENOMEM;
        } else if ((rest = startswith(source, "docker-archive:"))) {
                s->kind = strdup("docker-archive");
                r = archive_stage(rest, tmpdir, b, s, ret_error);
                if (r < 0)
                        return r;
        } else if ((rest = startswith(source, "dir:"))) {
                const char *diff[1];
                uint64_t size[1];
                struct stat st;
                _cleanup_free_ char *tar = NULL;

                s->kind = strdup("dir");
                if (asprintf(&tar, "%s/layer.tar", tmpdir) < 0)
                        return -ENOMEM;
                r = image_dir_tar(rest, tar, 0, ret_error);
                if (r < 0)
                        return r;
                _cleanup_close_ int fd = open(tar, O_RDONLY | O_CLOEXEC);
                if (fd < 0 || fstat(fd, &st) < 0)
                        return negative_errno();
                r = image_fd_sha256(fd, s->layers[0].hex);
                if (r < 0)
                        return r;
                s->layers[0].path = TAKE_PTR(tar);
                s->layers[0].size = (uint64_t)st.st_size;
                s->n_layers = 1;
                s->base = strdup("/");
                diff[0] = s->layers[0].hex;
                size[0] = s->layers[0].size;
                if (asprintf(&s->config_text,
                             "{\"architecture\":\"%s\",\"config\":{},\"os\":\"linux\","
                             "\"rootfs\":{\"diff_ids\":[\"sha256:%s\"],\"type\":\"layers\"}}",
                             host_arch(), s->layers[0].hex) < 0)
                        return -ENOMEM;
                s->config_len = strlen(s->config_text);
                image_mem_sha256(s->config_text, s->config_len, s->config_hex);
                return image_manifest_synthesize(s, diff, 1, size, ret_error);
        } else {
                return image_errorf(ret_error, -EINVAL,
                                    "source '%s': not oci:DIR[:TAG], oci-archive:FILE[:TAG], "
                                    "docker-archive:FILE or dir:PATH",
                                    source);
        }
        if (!s->kind || !s->base)
                return -ENOMEM;
        base = open(s->base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (base < 0)
                return image_errorf(ret_error, negative_errno(), "%s: %m", s->base);
        if (streq(s->kind, "docker-archive"))
                return docker_read(s, base, ret_error);
        return oci_read(s, base, tag, ret_error);
}

void image_source_clear(struct image_source *s)
{
        free(s->workdir);
        free(s->base);
        free(s->manifest_text);
        free(s->config_text);
        free(s->kind);
        for (size_t i = 0; i < s->n_layers; i++)
                free(s->layers[i].path);
        *s = (struct image_source){0};
}
