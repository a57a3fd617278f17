/* SPDX-License-Identifier: MIT */
/*
 * control.c: the read-only files in /.cloister.
 *
 *   workspace  {"name", "revision", "rev", "source", "mounted_at"} as JSON
 *   changes    one JSON line per path present in an upper layer (the repo's,
 *              then the hidden home's, so that review never needs the
 *              journal, which may be cut at its bound, to find changes):
 *              {"path":"/workspace/a","type":"file|dir|symlink|fifo|socket|device|deleted",
 *               "opaque":bool} (+ "path_hex", the exact bytes, when the path
 *              is not UTF-8); "deleted" is a whiteout, "opaque" a dir that
 *              hides or replaces the lower one (new, recreated or renamed),
 *              whose whole subtree must be walked; a file that is a
 *              metacopy (metadata changed, data still the lower's) also
 *              has "metacopy":true and "origin" (+ "origin_hex"), the lower
 *              path its data comes from, so review need not read it.
 *
 * changes is computed when opened, from the upper trees only (its size is
 * what the agent changed, not the repo): the writable layer's and, under
 * it, every frozen layer's (docs/fs-design.md, "Layers, checkpoints and
 * forks"), so that a fork's list holds its whole attempt; a path may then
 * be listed more than once, and a frozen layer's paths may have moved
 * since (review re-reads each path, so the list is a superset). Under the
 * namespace lock, a consistent snapshot.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"
#include "layers.h"
#include "lib/util.h"

struct out {
        FILE *f;
        unsigned depth;
        /* The stack under the writable layer, while walking that layer (metacopy
         * origins are its paths); NULL while walking a frozen layer. */
        struct lower *below;
};

static int emit(struct out *o, const char *path, const char *type, bool opaque,
                const char *metacopy_origin)
{
        json_t *j = json_object();
        int r;
        if (!j)
                return -ENOMEM;
        /* Names are bytes: a non-UTF-8 path is "path" (lossy) + "path_hex". */
        r = upper_json_set_name(j, "path", path);
        if (r == 0 && (json_object_set_new(j, "type", json_string(type)) < 0 ||
                       json_object_set_new(j, "opaque", json_boolean(opaque)) < 0))
                r = -ENOMEM;
        if (r == 0 && metacopy_origin) {
                r = json_object_set_new(j, "metacopy", json_true()) < 0 ? -ENOMEM : 0;
                if (r == 0)
                        r = upper_json_set_name(j, "origin", metacopy_origin);
        }
        if (r < 0) {
                json_decref(j);
                return r;
        }
        r = json_dumpf(j, o->f, JSON_COMPACT);
        json_decref(j);
        if (r < 0 || fputc('\n', o->f) == EOF)
                return -EIO;
        return 0;
}

static const char *type_name(mode_t m)
{
        if (S_ISDIR(m))
                return "dir";
        if (S_ISLNK(m))
                return "symlink";
        if (S_ISFIFO(m))
                return "fifo";
        if (S_ISSOCK(m))
                return "socket";
        if (S_ISCHR(m) || S_ISBLK(m))
                return "device"; /* an empty placeholder on the host (attr.c) */
        return "file";
}

/*
 * A metacopy's origin as review can use it: a path of the base tree. The
 * writable layer's origins are paths of the stack under it: given only if
 * the stack resolves it to a base entry (then its base path). A frozen
 * layer's are left out: review reads such a file through the mount.
 */
static char *base_origin(struct out *o, json_t *rec)
{
        _cleanup_free_ char *origin = upper_json_get_name(rec, "origin");
        struct lower_entry e = {0};
        char *p;

        if (!origin || !o->below)
                return NULL;
        if (!lower_is_stack(o->below))
                return TAKE_PTR(origin); /* the base itself: its own paths */
        if (lower_lookup_path(o->below, origin, &e) < 0)
                return NULL;
        p = e.fz ? NULL : strdup(e.path);
        lower_entry_clear(&e);
        return p;
}

static int walk(struct out *o, int dfd, const char *path)
{
        _cleanup_closedir_ DIR *d = NULL;
        json_t *meta = NULL, *wh, *c;
        struct dirent *de;
        const char *k;
        json_t *v;
        int fd, r = 0;

        if (++o->depth > 4096)
                return -ELOOP;
        fd = openat(dfd, UPPER_META, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0) {
                meta = upper_meta_load_fd(fd);
                close(fd);
        }
        wh = json_object_get(meta, "wh");
        c = json_object_get(meta, "c");
        json_object_foreach (wh, k, v) {
                _cleanup_free_ char *p = NULL;
                if (asprintf(&p, "%s/%s", path, k) < 0) {
                        r = -ENOMEM;
                        goto out;
                }
                r = emit(o, p, "deleted", false, NULL);
                if (r < 0)
                        goto out;
        }
        fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || !(d = fdopendir(fd))) {
                safe_close(fd);
                r = negative_errno();
                goto out;
        }
        while ((de = readdir(d))) {
                const char *name = upper_name_unescape(de->d_name);
                _cleanup_free_ char *p = NULL;
                json_t *rec;
                struct stat st;
                bool opaque;

                if (!name || streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (asprintf(&p, "%s/%s", path, name) < 0) {
                        r = -ENOMEM;
                        goto out;
                }
                rec = json_object_get(c, name);
                opaque = S_ISDIR(st.st_mode) &&
                         (json_is_true(json_object_get(rec, "opaque")) ||
                          json_object_get(rec, "origin") || json_object_get(rec, "origin_hex"));
                _cleanup_free_ char *origin =
                        S_ISREG(st.st_mode) && json_is_true(json_object_get(rec, "metacopy"))
                                ? base_origin(o, rec)
                                : NULL;
                r = emit(o, p, type_name(upper_rec_type(rec, st.st_mode)), opaque, origin);
                if (r < 0)
                        goto out;
                if (S_ISDIR(st.st_mode)) {
                        _cleanup_close_ int sub =
                                openat(dirfd(d), de->d_name,
                                       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (sub < 0)
                                continue;
                        r = walk(o, sub, p);
                        if (r < 0)
                                goto out;
                }
        }
out:
        o->depth--;
        json_decref(meta);
        return r;
}

static int control_changes(struct fs_workspace *ws, char **ret, size_t *ret_len)
{
        struct out o = {0};
        char *buf = NULL;
        size_t len = 0;
        int r;

        o.f = open_memstream(&buf, &len);
        if (!o.f)
                return -ENOMEM;
        pthread_rwlock_rdlock(&ws->ns_lock);
        o.below = ws->repo.lower;
        r = walk(&o, ws->repo.upper_fd, ws->repo.mpath);
        o.below = NULL;
        {
                /* Frozen layers: what each changed (a fork's diff is its whole attempt). */
                int fds[FS_STACK_MAX];
                size_t n = lower_stack_layers(ws->repo.lower, fds, ELEMENTSOF(fds));
                for (size_t i = 0; r == 0 && i < n; i++)
                        r = walk(&o, fds[i], ws->repo.mpath);
        }
        if (r == 0 && ws->has_home) {
                o.below = ws->home.lower;
                r = walk(&o, ws->home.upper_fd, ws->home.mpath);
        }
        pthread_rwlock_unlock(&ws->ns_lock);
        if (fclose(o.f) != 0 && r == 0)
                r = -ENOMEM;
        if (r < 0) {
                free(buf);
                return r;
        }
        *ret = buf;
        *ret_len = len;
        return 0;
}

int control_read_all(struct fs_workspace *ws, enum ctl_file f, char **ret, size_t *ret_len)
{
        if (f == CTL_CHANGES)
                return control_changes(ws, ret, ret_len);
        *ret = strdup(ws->workspace_json);
        if (!*ret)
                return -ENOMEM;
        *ret_len = strlen(*ret);
        return 0;
}
