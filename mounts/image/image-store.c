/* SPDX-License-Identifier: MIT */
/*
 * image-store.c: the store's layout (image.h), and what reads it or takes
 * things out: lookup (all a run needs), list, rm and gc.
 *
 * Why this shape: an image is named by its manifest's sha256 and a layer by
 * its blob's, so an image imported twice, or by a thousand workspaces, is
 * stored once, and two images that share a base share its layers. Writers
 * (import, rm, gc) hold STORE/lock; readers need no lock, because nothing
 * is ever changed in place: an image appears by one rename of a complete
 * directory and goes by one rename out of sight before it is removed.
 *
 * The store's top is 0700: its files are the image's, owned by whoever
 * imported them, and another user of the host has no business in them.
 * A root-run sandbox reaches an image's root through a bind of that one
 * directory (sandbox-identity.c's staging), not through the store's path.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image-private.h"
#include "known.h"
#include "lib/mkdir.h"
#include "lib/util.h"

void image_limits_default(struct image_limits *l)
{
        *l = (struct image_limits){
                .max_file = IMAGE_FILE_MAX_DEFAULT,
                .max_size = IMAGE_SIZE_MAX_DEFAULT,
                .max_entries = IMAGE_ENTRIES_MAX_DEFAULT,
        };
}

int image_store_path(char **ret)
{
        _cleanup_free_ char *state = NULL;
        int r = known_xdg_dir("state", &state);

        if (r < 0)
                return r;
        return asprintf(ret, "%s/images", state) < 0 ? -ENOMEM : 0;
}

int image_lookup(const char *store, const char *digest, char **ret_root, char **ret_record_json,
                 char **ret_error)
{
        const char *hex = image_digest_hex(digest);
        _cleanup_free_ char *dir = NULL, *text = NULL, *root = NULL;
        _cleanup_close_ int fd = -1;
        struct stat st;
        int r;

        if (!hex)
                return image_errorf(ret_error, -EINVAL,
                                    "image digest '%s' is not sha256:<64 lowercase hex digits>",
                                    digest ? digest : "");
        if (asprintf(&dir, "%s/images/%s", store, hex) < 0)
                return -ENOMEM;
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                r = negative_errno();
                return image_errorf(ret_error, r,
                                    "image %s is not in the store %s (%s): `cloister image "
                                    "import SOURCE` or a mount with [image] source imports it",
                                    digest, store, strerror(-r));
        }
        r = image_file_read(fd, "image.json", NULL, &text, NULL, NULL, ret_error);
        if (r < 0)
                return r;
        if (fstatat(fd, "root", &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
                return image_errorf(ret_error, -ENOENT, "image %s: no root in %s", digest, dir);
        if (ret_root && asprintf(&root, "%s/root", dir) < 0)
                return -ENOMEM;
        if (ret_root)
                *ret_root = TAKE_PTR(root);
        if (ret_record_json)
                *ret_record_json = TAKE_PTR(text);
        return 0;
}

int image_store_lock(const char *store, bool create, int *ret_fd, char **ret_error)
{
        static const char *const subdirs[] = {"blobs", "layers", "images", "tmp"};
        _cleanup_free_ char *lock = NULL;
        _cleanup_close_ int fd = -1;
        int r;

        if (create) {
                r = mkdir_p(store, 0700, 0700);
                if (r < 0)
                        return image_errorf(ret_error, r, "%s: %s", store, strerror(-r));
        }
        if (asprintf(&lock, "%s/lock", store) < 0)
                return -ENOMEM;
        fd = open(lock, O_RDWR | O_CLOEXEC | O_NOFOLLOW | (create ? O_CREAT : 0), 0600);
        if (fd < 0)
                return image_errorf(ret_error, negative_errno(), "%s: %m", lock);
        if (flock(fd, LOCK_EX) < 0)
                return image_errorf(ret_error, negative_errno(), "%s: %m", lock);
        for (size_t i = 0; create && i < ELEMENTSOF(subdirs); i++) {
                _cleanup_free_ char *d = NULL;
                if (asprintf(&d, "%s/%s", store, subdirs[i]) < 0)
                        return -ENOMEM;
                if (mkdir(d, 0700) < 0 && errno != EEXIST)
                        return image_errorf(ret_error, negative_errno(), "%s: %m", d);
        }
        *ret_fd = TAKE_FD(fd);
        return 0;
}

/* Each name in STORE/SUB (NULL-terminated, or an empty vector if SUB is missing). */
static int names_of(const char *store, const char *sub, char ***ret)
{
        _cleanup_free_ char *path = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        char **v = calloc(1, sizeof(char *));
        size_t n = 0;
        struct dirent *de;

        if (!v || asprintf(&path, "%s/%s", store, sub) < 0) {
                free(v);
                return -ENOMEM;
        }
        d = opendir(path);
        while (d && (de = readdir(d))) {
                char **nv;
                if (de->d_name[0] == '.')
                        continue;
                nv = realloc(v, (n + 2) * sizeof(char *));
                if (!nv) {
                        strv_free(v);
                        return -ENOMEM;
                }
                v = nv;
                v[n] = strdup(de->d_name);
                if (!v[n]) {
                        strv_free(v);
                        return -ENOMEM;
                }
                v[++n] = NULL;
        }
        *ret = v;
        return 0;
}

int image_resolve(const char *store, const char *arg, char **ret_digest, char **ret_error)
{
        _cleanup_strv_free_ char **names = NULL;
        size_t skip = strncmp(arg, "sha256:", 7) == 0 ? 7 : 0, n = 0, len = strlen(arg) - skip;
        const char *prefix = arg + skip, *found = NULL;
        int r;

        if (image_digest_valid(arg))
                return (*ret_digest = strdup(arg)) ? 0 : -ENOMEM;
        if (len < 4 || strspn(prefix, "0123456789abcdef") != len)
                return image_errorf(ret_error, -EINVAL,
                                    "'%s' is neither a digest nor 4 or more of its hex digits",
                                    arg);
        r = names_of(store, "images", &names);
        if (r < 0)
                return r;
        for (char **p = names; *p; p++)
                if (strncmp(*p, prefix, len) == 0) {
                        found = *p;
                        n++;
                }
        if (n == 0)
                return image_errorf(ret_error, -ENOENT, "no image sha256:%s... in the store",
                                    prefix);
        if (n > 1)
                return image_errorf(ret_error, -EINVAL,
                                    "'%s' names %zu images: give more of the digest", arg, n);
        return asprintf(ret_digest, "sha256:%s", found) < 0 ? -ENOMEM : 0;
}

static int cmp_str(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

int image_list_json(const char *store, char **ret_json, char **ret_error)
{
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_(json_decrefp) json_t *arr = json_array();
        size_t n = 0;
        int r;

        if (!arr)
                return -ENOMEM;
        r = names_of(store, "images", &names);
        if (r < 0)
                return r;
        while (names[n])
                n++;
        qsort(names, n, sizeof(char *), cmp_str);
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *digest = NULL, *text = NULL;
                json_t *rec;

                if (asprintf(&digest, "sha256:%s", names[i]) < 0)
                        return -ENOMEM;
                if (image_lookup(store, digest, NULL, &text, NULL) < 0)
                        continue; /* not a whole image */
                rec = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
                if (rec && json_array_append_new(arr, rec) < 0)
                        return -ENOMEM;
        }
        *ret_json = json_dumps(arr, JSON_COMPACT | JSON_SORT_KEYS);
        return *ret_json ? 0 : image_errorf(ret_error, -ENOMEM, "out of memory");
}

int image_hold(const char *store, const char *digest, int *ret_fd, char **ret_error)
{
        const char *hex = image_digest_hex(digest);
        _cleanup_free_ char *record = NULL;
        _cleanup_close_ int fd = -1;
        struct stat held, now;

        if (!hex)
                return image_errorf(ret_error, -EINVAL,
                                    "'%s' is not sha256:<64 lowercase hex digits>", digest);
        if (asprintf(&record, "%s/images/%s/image.json", store, hex) < 0)
                return -ENOMEM;
        fd = open(record, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return image_errorf(ret_error, negative_errno(), "image %s: %m", digest);
        while (flock(fd, LOCK_SH) < 0)
                if (errno != EINTR)
                        return image_errorf(ret_error, negative_errno(), "%s: %m", record);
        /* An rm that held it while this waited has taken it out of the store. */
        if (fstat(fd, &held) < 0 || stat(record, &now) < 0 || held.st_ino != now.st_ino ||
            held.st_dev != now.st_dev)
                return image_errorf(ret_error, -ENOENT, "image %s was removed from the store",
                                    digest);
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int image_remove(const char *store, const char *digest, char **ret_error)
{
        const char *hex = image_digest_hex(digest);
        _cleanup_free_ char *from = NULL, *to = NULL, *tmp = NULL, *record = NULL;
        _cleanup_close_ int lock = -1, tmpfd = -1, held = -1;
        int r;

        if (!hex)
                return image_errorf(ret_error, -EINVAL,
                                    "'%s' is not sha256:<64 lowercase hex digits>", digest);
        r = image_store_lock(store, false, &lock, ret_error);
        if (r < 0)
                return r == -ENOENT ? image_errorf(ret_error, -ENOENT, "no store at %s", store) : r;
        if (asprintf(&from, "%s/images/%s", store, hex) < 0 ||
            asprintf(&tmp, "%s/tmp", store) < 0 || asprintf(&to, "%s/rm-%s", tmp, hex) < 0 ||
            asprintf(&record, "%s/image.json", from) < 0)
                return -ENOMEM;
        /* Not from under a sandbox that runs on it (image_hold); and none takes it meanwhile. */
        held = open(record, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
        if (held >= 0 && flock(held, LOCK_EX | LOCK_NB) < 0)
                return image_errorf(ret_error, errno == EWOULDBLOCK ? -EBUSY : negative_errno(),
                                    "image %s is in use by a run (cloister run, shell or "
                                    "run_command): refused; remove it once the run ends",
                                    digest);
        /* Out of sight in one step; then removed at leisure. */
        if (rename(from, to) < 0)
                return image_errorf(ret_error, negative_errno(), "image %s: %m", digest);
        tmpfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (tmpfd < 0)
                return negative_errno();
        r = image_rm_rf_at(tmpfd, to + strlen(tmp) + 1);
        return r < 0 ? image_errorf(ret_error, r, "%s: %s", to, strerror(-r)) : 0;
}

/* Add every digest of a record (the image, its config, its layers) to a set. */
static void record_refs(json_t *rec, json_t *blobs, json_t *layers)
{
        json_t *l;
        size_t i;
        const char *h;

        if ((h = image_digest_hex(json_string_value(json_object_get(rec, "digest")))))
                json_object_set_new(blobs, h, json_true());
        if ((h = image_digest_hex(json_string_value(json_object_get(rec, "config")))))
                json_object_set_new(blobs, h, json_true());
        json_array_foreach (json_object_get(rec, "layers"), i, l)
                if ((h = image_digest_hex(json_string_value(l))))
                        json_object_set_new(layers, h, json_true());
}

/* Whether name (in dirfd) is a directory that its maker holds locked (flock), as a build does. */
static bool busy_at(int dirfd, const char *name)
{
        _cleanup_close_ int fd =
                openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

        return fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK;
}

static int sweep(const char *store, const char *sub, json_t *keep, size_t *ret_n)
{
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -1;
        int r;

        *ret_n = 0;
        if (asprintf(&path, "%s/%s", store, sub) < 0)
                return -ENOMEM;
        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : negative_errno();
        r = names_of(store, sub, &names);
        if (r < 0)
                return r;
        for (char **n = names; *n; n++) {
                if (keep && json_object_get(keep, *n))
                        continue;
                if (!keep && busy_at(fd, *n))
                        continue; /* tmp/: a build at work there (image_build_debian) */
                r = image_rm_rf_at(fd, *n);
                if (r < 0)
                        return r;
                (*ret_n)++;
        }
        return 0;
}

int image_gc(const char *store, char **ret_json, char **ret_error)
{
        _cleanup_(json_decrefp) json_t *blobs = json_object(), *layers = json_object(), *out = NULL;
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_close_ int lock = -1;
        size_t n_layers = 0, n_blobs = 0, n_tmp = 0;
        int r;

        if (!blobs || !layers)
                return -ENOMEM;
        r = image_store_lock(store, true, &lock, ret_error);
        if (r < 0)
                return r;
        r = names_of(store, "images", &names);
        if (r < 0)
                return r;
        for (char **n = names; *n; n++) {
                _cleanup_free_ char *digest = NULL, *text = NULL;
                _cleanup_(json_decrefp) json_t *rec = NULL;

                if (asprintf(&digest, "sha256:%s", *n) < 0)
                        return -ENOMEM;
                if (image_lookup(store, digest, NULL, &text, NULL) < 0)
                        continue;
                rec = json_loads(text, 0, NULL);
                if (rec)
                        record_refs(rec, blobs, layers);
        }
        r = sweep(store, "layers", layers, &n_layers);
        if (r >= 0)
                r = sweep(store, "blobs", blobs, &n_blobs);
        if (r >= 0)
                r = sweep(store, "tmp", NULL, &n_tmp);
        if (r < 0)
                return image_errorf(ret_error, r, "%s: %s", store, strerror(-r));
        out = json_pack("{s:I, s:I, s:I}", "layers", (json_int_t)n_layers, "blobs",
                        (json_int_t)n_blobs, "tmp", (json_int_t)n_tmp);
        if (!out || !(*ret_json = json_dumps(out, JSON_COMPACT | JSON_SORT_KEYS)))
                return -ENOMEM;
        return 0;
}
