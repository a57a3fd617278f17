/* SPDX-License-Identifier: MIT */
/*
 * image-import.c: a SOURCE into the store, whole or not at all.
 *
 * Everything is made under STORE/tmp/import-XXXXXX: the unpacked outer
 * archive, each new layer, the composed root and the record. A layer
 * enters STORE/layers/ by one rename when it is whole and its digest
 * checked; the image enters STORE/images/ by one rename when its root and
 * record are whole. On any failure the work directory is removed, and so
 * are the layers this import added: nothing of a failed import is left to
 * be used, or to be mistaken for what it is not. An import cut short (a
 * crash, a kill) leaves only STORE/tmp/, which gc empties.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "image-private.h"
#include "lib/crashpoint.h"
#include "lib/util.h"

/* A small file, written whole then renamed into dirfd. */
static int file_put(int dirfd, const char *name, const char *data, size_t len)
{
        char tmp[IMAGE_HEX_LEN + 16];
        _cleanup_close_ int fd = -1;
        int r = 0;

        snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
        (void)unlinkat(dirfd, tmp, 0);
        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0)
                return negative_errno();
        for (size_t done = 0; done < len && r == 0;) {
                ssize_t n = write(fd, data + done, len - done);
                if (n < 0 && errno != EINTR)
                        r = negative_errno();
                else if (n > 0)
                        done += (size_t)n;
        }
        if (r == 0 && fchmod(fd, 0644) < 0)
                r = negative_errno();
        if (r == 0 && renameat(dirfd, tmp, dirfd, name) < 0)
                r = negative_errno();
        if (r < 0)
                (void)unlinkat(dirfd, tmp, 0);
        return r;
}

struct import {
        const char *store;
        char *work; /* STORE/tmp/import-XXXXXX */
        int storefd, workfd, layersfd;
        char *added[IMAGE_LAYERS_MAX]; /* layers this import put in the store */
        size_t n_added;
        char **error;
};

static int layer_add(struct import *im, struct image_source *s, size_t i, int basefd,
                     struct image_budget *b)
{
        struct image_layer_ref *l = &s->layers[i];
        char tmpname[IMAGE_HEX_LEN + 8], what[IMAGE_DIGEST_LEN + 16];
        _cleanup_close_ int blob = -1, dir = -1;
        struct stat st;
        int r;

        if (fstatat(im->layersfd, l->hex, &st, AT_SYMLINK_NOFOLLOW) == 0)
                return 0; /* stored already: shared */
        snprintf(tmpname, sizeof(tmpname), "layer-%zu", i);
        snprintf(what, sizeof(what), "layer sha256:%.12s", l->hex);
        if (l->path[0] == '/') {
                blob = open(l->path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
                r = blob < 0 ? negative_errno() : 0;
        } else {
                blob = image_open_beneath(basefd, l->path, O_RDONLY);
                r = blob < 0 ? blob : 0;
        }
        if (r < 0)
                return image_errorf(im->error, r, "%s/%s: the layer's blob: %s", s->base, l->path,
                                    strerror(-r));
        if (mkdirat(im->workfd, tmpname, 0700) < 0)
                return negative_errno();
        dir = openat(im->workfd, tmpname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dir < 0)
                return negative_errno();
        r = image_unpack(blob, l->hex, dir, b, what, im->error);
        if (r < 0)
                return r;
        crashpoint("import");
        if (fchmod(dir, 0755) < 0)
                return negative_errno();
        if (renameat(im->workfd, tmpname, im->layersfd, l->hex) < 0)
                return image_errorf(im->error, negative_errno(), "%s: cannot store it: %m", what);
        crashpoint("import");
        im->added[im->n_added] = strdup(l->hex);
        if (!im->added[im->n_added])
                return -ENOMEM;
        im->n_added++;
        return 0;
}

static int record_write(struct import *im, struct image_source *s, const char *source,
                        const struct image_budget *b, int imagefd)
{
        _cleanup_(json_decrefp) json_t *rec = NULL, *layers = json_array();
        _cleanup_free_ char *text = NULL;
        char d[IMAGE_DIGEST_LEN + 1];

        if (!layers)
                return -ENOMEM;
        for (size_t i = 0; i < s->n_layers; i++) {
                snprintf(d, sizeof(d), "sha256:%s", s->layers[i].hex);
                if (json_array_append_new(layers, json_string(d)) < 0)
                        return -ENOMEM;
        }
        snprintf(d, sizeof(d), "sha256:%s", s->config_hex);
        rec = json_pack("{s:s+, s:s, s:s, s:s, s:O, s:I, s:I, s:I}", "digest",
                        "sha256:", s->manifest_hex, "config", d, "source", source, "kind", s->kind,
                        "layers", layers, "size", (json_int_t)b->bytes, "entries",
                        (json_int_t)b->entries, "imported", (json_int_t)time(NULL));
        if (!rec || !(text = json_dumps(rec, JSON_COMPACT | JSON_SORT_KEYS)))
                return -ENOMEM;
        return file_put(imagefd, "image.json", text, strlen(text));
}

static int import_do(struct import *im, const char *source, const struct image_limits *l,
                     char **ret_digest, bool *ret_new)
{
        struct image_budget b = {.limits = l};
        struct image_source s = {0};
        _cleanup_close_ int basefd = -1, blobsfd = -1, imagesfd = -1, imagefd = -1, rootfd = -1;
        char *hexes[IMAGE_LAYERS_MAX];
        struct stat st;
        int r;

        r = image_source_open(source, im->work, &b, &s, im->error);
        if (r < 0)
                goto out;
        crashpoint("import");
        if (asprintf(ret_digest, "sha256:%s", s.manifest_hex) < 0) {
                r = -ENOMEM;
                goto out;
        }
        imagesfd = openat(im->storefd, "images", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        blobsfd = openat(im->storefd, "blobs", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (imagesfd < 0 || blobsfd < 0) {
                r = negative_errno();
                goto out;
        }
        if (fstatat(imagesfd, s.manifest_hex, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                *ret_new = false; /* stored already */
                r = 0;
                goto out;
        }
        basefd = open(s.base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (basefd < 0) {
                r = image_errorf(im->error, negative_errno(), "%s: %m", s.base);
                goto out;
        }
        for (size_t i = 0; i < s.n_layers; i++) {
                r = layer_add(im, &s, i, basefd, &b);
                if (r < 0)
                        goto out;
                hexes[i] = s.layers[i].hex;
        }
        r = file_put(blobsfd, s.manifest_hex, s.manifest_text, s.manifest_len);
        if (r >= 0)
                r = file_put(blobsfd, s.config_hex, s.config_text, s.config_len);
        if (r < 0)
                goto out;
        if (mkdirat(im->workfd, "image", 0755) < 0 ||
            (imagefd = openat(im->workfd, "image", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
            mkdirat(imagefd, "root", 0755) < 0 ||
            (rootfd = openat(imagefd, "root", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
                r = negative_errno();
                goto out;
        }
        crashpoint("import");
        r = image_compose(im->layersfd, hexes, s.n_layers, rootfd, im->error);
        if (r < 0)
                goto out;
        crashpoint("import");
        r = record_write(im, &s, source, &b, imagefd);
        if (r < 0 || fchmod(imagefd, 0755) < 0) {
                r = r < 0 ? r : negative_errno();
                goto out;
        }
        if (renameat(im->workfd, "image", imagesfd, s.manifest_hex) < 0) {
                r = image_errorf(im->error, negative_errno(), "cannot store image %s: %m",
                                 *ret_digest);
                goto out;
        }
        *ret_new = true;
        crashpoint("import");
out:
        if (r < 0)
                free(TAKE_PTR(*ret_digest));
        image_source_clear(&s);
        return r;
}

int image_import(const char *store, const char *source, const struct image_limits *l,
                 char **ret_digest, bool *ret_new, char **ret_error)
{
        struct import im = {
                .store = store, .storefd = -1, .workfd = -1, .layersfd = -1, .error = ret_error};
        _cleanup_close_ int lock = -1, tmpfd = -1;
        _cleanup_free_ char *digest = NULL;
        bool is_new = false;
        int r;

        r = image_store_lock(store, true, &lock, ret_error);
        if (r < 0)
                return r;
        im.storefd = open(store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        im.layersfd = im.storefd < 0
                              ? -1
                              : openat(im.storefd, "layers", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (asprintf(&im.work, "%s/tmp/import-XXXXXX", store) < 0) {
                im.work = NULL;
                r = -ENOMEM;
                goto out;
        }
        if (im.layersfd < 0 || !mkdtemp(im.work) ||
            (im.workfd = open(im.work, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
                r = image_errorf(ret_error, negative_errno(), "%s: %m", store);
                goto out;
        }
        r = import_do(&im, source, l, &digest, &is_new);
        if (r < 0) {
                for (size_t i = 0; i < im.n_added; i++)
                        (void)image_rm_rf_at(im.layersfd, im.added[i]);
                if (ret_error && !*ret_error)
                        image_errorf(ret_error, r, "%s: %s", source, strerror(-r));
        }
out:
        if (im.work && im.workfd >= 0) {
                tmpfd = openat(im.storefd, "tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (tmpfd >= 0)
                        (void)image_rm_rf_at(tmpfd, strrchr(im.work, '/') + 1);
        }
        for (size_t i = 0; i < im.n_added; i++)
                free(im.added[i]);
        free(im.work);
        safe_close(im.workfd);
        safe_close(im.layersfd);
        safe_close(im.storefd);
        if (r < 0)
                return r;
        *ret_digest = TAKE_PTR(digest);
        if (ret_new)
                *ret_new = is_new;
        return 0;
}

int image_workspace_import(const struct config *c, char **ret_digest, char **ret_error)
{
        _cleanup_free_ char *store = NULL, *digest = NULL;
        struct image_limits l = {
                .max_file = c->image.max_file,
                .max_size = c->image.max_size,
                .max_entries = c->image.max_entries,
                .allow_setuid = c->image.allow_setuid,
        };
        int r;

        *ret_digest = NULL;
        if (!c->image.source)
                return 0;
        r = image_store_path(&store);
        if (r < 0)
                return image_errorf(ret_error, r, "cannot tell where the image store is: %s",
                                    strerror(-r));
        /*
         * A directory layout is read again each time (its index, manifest and
         * config: a few reads), so a source that has moved on is refused; an
         * archive or a dir: source, whose digest costs unpacking or hashing it
         * whole, is not when the store holds the digest the config names.
         */
        if (c->image.digest && !startswith(c->image.source, "oci:") &&
            image_lookup(store, c->image.digest, NULL, NULL, NULL) == 0) {
                digest = strdup(c->image.digest); /* stored: the source is not read again */
                if (!digest)
                        return -ENOMEM;
        } else {
                r = image_import(store, c->image.source, &l, &digest, NULL, ret_error);
                if (r < 0)
                        return image_errorf(ret_error, r, "[image] source %s: %s", c->image.source,
                                            strerror(-r));
                if (c->image.digest && !streq(digest, c->image.digest))
                        return image_errorf(ret_error, -EBADMSG,
                                            "[image] source %s is %s, not the %s that [image] "
                                            "digest names: refused",
                                            c->image.source, digest, c->image.digest);
        }
        r = image_workspace_state_write(c, digest);
        if (r < 0)
                return image_errorf(ret_error, r, "%s/image: %s", c->workspace.state, strerror(-r));
        *ret_digest = TAKE_PTR(digest);
        return 0;
}

int image_build_debian(const char *store, const char *suite, const char *packages,
                       const char *mirror, uint64_t source_date_epoch, const char *pkg_lock,
                       bool update_lock, const struct image_limits *l, char **ret_digest,
                       char **ret_error)
{
        _cleanup_free_ char *work = NULL, *root = NULL, *include = NULL, *epoch = NULL,
                            *source = NULL;
        struct image_limits bits = *l;
        _cleanup_close_ int lock = -1, tmpfd = -1, workfd = -1;
        pid_t pid;
        int status, r;

        if (access("/usr/bin/mmdebstrap", X_OK) < 0)
                return image_errorf(ret_error, -ENOENT,
                                    "mmdebstrap is not installed (apt-get install mmdebstrap)");
        r = image_store_lock(store, true, &lock, ret_error);
        if (r < 0)
                return r;
        if (asprintf(&work, "%s/tmp/build-XXXXXX", store) < 0)
                return -ENOMEM;
        if (!mkdtemp(work))
                return image_errorf(ret_error, negative_errno(), "%s: %m", work);
        /* The store's lock is let go for the minutes mmdebstrap takes; the work
         * directory's own lock keeps a gc meanwhile from sweeping it away. */
        workfd = open(work, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (workfd < 0 || flock(workfd, LOCK_EX) < 0) {
                r = image_errorf(ret_error, negative_errno(), "%s: %m", work);
                (void)rmdir(work);
                return r;
        }
        safe_close(TAKE_FD(lock)); /* the import takes it again */
        if (asprintf(&root, "%s/root", work) < 0 ||
            asprintf(&include, "--include=%s", packages ? packages : "") < 0 ||
            asprintf(&epoch, "%llu", (unsigned long long)source_date_epoch) < 0 ||
            asprintf(&source, "dir:%s", root) < 0) {
                r = -ENOMEM;
                goto out;
        }
        pid = fork();
        if (pid < 0) {
                r = negative_errno();
                goto out;
        }
        if (pid == 0) {
                const char *argv[12];
                size_t n = 0;

                argv[n++] = "mmdebstrap";
                argv[n++] = "--quiet";
                argv[n++] = "--mode=root";
                argv[n++] = "--variant=apt";
                argv[n++] = "--format=directory";
                if (packages && *packages)
                        argv[n++] = include;
                argv[n++] = "--aptopt=Acquire::Retries \"2\"";
                argv[n++] = "--";
                argv[n++] = suite;
                argv[n++] = root;
                argv[n++] = mirror; /* NULL: mmdebstrap's default, the host's apt sources */
                argv[n] = NULL;
                if (source_date_epoch)
                        setenv("SOURCE_DATE_EPOCH", epoch, 1);
                (void)dup2(STDERR_FILENO, STDOUT_FILENO); /* the import's JSON keeps stdout */
                execv("/usr/bin/mmdebstrap", (char *const *)argv);
                _exit(127);
        }
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR) {
                        r = negative_errno();
                        goto out;
                }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                r = image_errorf(ret_error, -EIO,
                                 "mmdebstrap %s failed (exit %d): see its messages above", suite,
                                 WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
                goto out;
        }
        /* mmdebstrap's root mode makes /dev's nodes; the sandbox has its own /dev. */
        {
                _cleanup_close_ int dev = -1;
                _cleanup_free_ char *devpath = NULL;
                if (asprintf(&devpath, "%s/dev", root) < 0) {
                        r = -ENOMEM;
                        goto out;
                }
                r = image_rm_rf_at(AT_FDCWD, devpath);
                if (r >= 0 && mkdir(devpath, 0755) < 0)
                        r = negative_errno();
                if (r < 0) {
                        image_errorf(ret_error, r, "%s: %s", devpath, strerror(-r));
                        goto out;
                }
        }
        /* The versions the mirror served, against the lock, before anything is stored. */
        if (pkg_lock) {
                r = image_lock_apply(root, pkg_lock, update_lock, ret_error);
                if (r < 0)
                        goto out;
        }
        /* Debian's setuid programs (passwd, su, mount) come in without the bit. */
        bits.allow_setuid = true;
        if (source_date_epoch)
                setenv("SOURCE_DATE_EPOCH", epoch, 1); /* the layer's times (image-dir.c) */
        r = image_import(store, source, &bits, ret_digest, NULL, ret_error);
out:
        tmpfd = -1;
        {
                _cleanup_free_ char *tmp = NULL;
                if (asprintf(&tmp, "%s/tmp", store) >= 0 &&
                    (tmpfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0)
                        (void)image_rm_rf_at(tmpfd, strrchr(work, '/') + 1);
        }
        return r;
}
