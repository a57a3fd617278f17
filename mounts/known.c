/* SPDX-License-Identifier: MIT */
/*
 * known.c: the workspaces this user's configs know (known.h): the configs
 * in $XDG_CONFIG_HOME/cloister (where `cloister init` writes), and those
 * `cloister mount` mounted once (it remembers each in
 * $XDG_STATE_HOME/cloister/configs). `cloister list` lists them (ops-list.c);
 * the check of where a workspace's paths may lie (claims.c) compares
 * against them, from `cloister run` too, which is why this is here and
 * not in mounts/ops.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "known.h"
#include "lib/mkdir.h"
#include "lib/namehash.h"
#include "lib/util.h"

#define REMEMBERED_MAX 16384 /* configs the state file holds: a host of thousands of workspaces */
#define LISTED_MAX     16384

static const char *home_dir(void)
{
        const char *h = getenv("HOME");
        struct passwd *pw;

        if (h && h[0] == '/')
                return h;
        pw = getpwuid(getuid());
        return pw && pw->pw_dir && pw->pw_dir[0] == '/' ? pw->pw_dir : NULL;
}

int known_xdg_dir(const char *kind, char **ret)
{
        const char *var = streq(kind, "config") ? "XDG_CONFIG_HOME" : "XDG_STATE_HOME";
        const char *fallback = streq(kind, "config") ? ".config" : ".local/state";
        const char *v = getenv(var), *home;

        /* The specification: a relative value is invalid and ignored. */
        if (v && v[0] == '/')
                return asprintf(ret, "%s/cloister", v) < 0 ? -ENOMEM : 0;
        home = home_dir();
        if (!home)
                return -ENOENT;
        return asprintf(ret, "%s/%s/cloister", streq(home, "/") ? "" : home, fallback) < 0 ? -ENOMEM
                                                                                           : 0;
}

/* The remembered configs, one absolute path a line, or NULL; *n of them. */
static char **remembered(size_t *n)
{
        _cleanup_free_ char *dir = NULL, *path = NULL, *line = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        char **v = NULL;
        size_t cap = 0, len = 0;
        ssize_t k;

        *n = 0;
        if (known_xdg_dir("state", &dir) < 0 || asprintf(&path, "%s/configs", dir) < 0)
                return NULL;
        f = fopen(path, "re");
        while (f && (k = getline(&line, &len, f)) > 0 && *n < REMEMBERED_MAX) {
                if (line[k - 1] == '\n')
                        line[k - 1] = '\0';
                if (line[0] != '/')
                        continue;
                if (*n + 1 >= cap) {
                        char **nv = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof(*v));
                        if (!nv)
                                break;
                        v = nv;
                }
                if (!(v[*n] = strdup(line)))
                        break;
                v[++*n] = NULL;
        }
        return v;
}

/*
 * Whether the list holds a path is asked of an index beside it, so that a
 * mount does not read the list whole (issue 48: thousands of workspaces):
 * configs.index/NAME (namehash of the path) holds the path, and
 * configs.index/.count the list's line count and size as the index last
 * saw them. A list that changed behind the index (edited or removed by its
 * user; one written before the index existed) is read whole once and the
 * index made again. A name that collides is compared exactly, so a path is
 * never taken for another.
 */
struct remember_index {
        int dfd;
        unsigned long count;
        long long size;
};

static int index_count_save(struct remember_index *x)
{
        char buf[64];
        int n = snprintf(buf, sizeof(buf), "%lu %lld\n", x->count, x->size);
        _cleanup_close_ int fd = openat(
                x->dfd, ".count.new", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);

        if (fd < 0)
                return negative_errno();
        if (write(fd, buf, (size_t)n) != n)
                return -EIO;
        return renameat(x->dfd, ".count.new", x->dfd, ".count") < 0 ? negative_errno() : 0;
}

static int index_mark(struct remember_index *x, const char *real)
{
        char name[NAMEHASH_LEN];
        size_t len = strlen(real);
        _cleanup_close_ int fd = -1;

        namehash("remembered", "", real, name);
        fd = openat(x->dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return errno == EEXIST ? 0 : negative_errno(); /* a collision: see index_has */
        return write(fd, real, len) == (ssize_t)len ? 0 : -EIO;
}

/* 1 if the index says real is listed, 0 if it is not, -EAGAIN if it cannot say (a collision). */
static int index_has(struct remember_index *x, const char *real)
{
        char name[NAMEHASH_LEN], buf[PATH_MAX + 1];
        _cleanup_close_ int fd = -1;
        ssize_t k;

        namehash("remembered", "", real, name);
        fd = openat(x->dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return errno == ENOENT ? 0 : negative_errno();
        k = read(fd, buf, sizeof(buf) - 1);
        if (k < 0)
                return negative_errno();
        buf[k] = '\0';
        return streq(buf, real) ? 1 : -EAGAIN;
}

/* The index made again from the list (n paths of known, size bytes): once, after a change. */
static int index_rebuild(struct remember_index *x, char **known, size_t n, long long size)
{
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int fd = openat(x->dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), r = 0;

        if (fd < 0)
                return negative_errno();
        d = fdopendir(fd);
        if (!d) {
                close(fd);
                return -ENOMEM;
        }
        /* Again until a pass finds nothing: entries removed while a directory
         * is read may hide others from that reading. */
        for (bool again = true; again;) {
                again = false;
                rewinddir(d);
                while ((de = readdir(d)))
                        if ((de->d_name[0] != '.' || streq(de->d_name, ".count.new")) &&
                            unlinkat(x->dfd, de->d_name, 0) == 0)
                                again = true;
        }
        for (size_t i = 0; i < n && r >= 0; i++)
                r = index_mark(x, known[i]);
        x->count = n;
        x->size = size;
        return r < 0 ? r : index_count_save(x);
}

/* The index open and in step with the list (open at lfd, locked), in *x. */
static int index_open_synced(const char *dir, int lfd, struct remember_index *x)
{
        _cleanup_free_ char *path = NULL;
        struct stat st;
        char buf[64];
        ssize_t k = -1;
        int fd, r;

        if (fstat(lfd, &st) < 0)
                return negative_errno();
        if (asprintf(&path, "%s/configs.index", dir) < 0)
                return -ENOMEM;
        if (mkdir(path, 0700) < 0 && errno != EEXIST)
                return negative_errno();
        x->dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (x->dfd < 0)
                return negative_errno();
        fd = openat(x->dfd, ".count", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd >= 0) {
                k = read(fd, buf, sizeof(buf) - 1);
                close(fd);
        }
        if (k > 0) {
                buf[k] = '\0';
                if (sscanf(buf, "%lu %lld", &x->count, &x->size) == 2 && x->size == st.st_size)
                        return 0;
        }
        size_t n = 0;
        char **known = remembered(&n);
        r = index_rebuild(x, known, n, (long long)st.st_size);
        strv_free(known);
        return r;
}

/* The slow way, for a collision of index names: read the list whole. */
static bool list_has(const char *real)
{
        size_t n = 0;
        char **known = remembered(&n);
        bool found = false;

        for (size_t i = 0; i < n && !found; i++)
                found = streq(known[i], real);
        strv_free(known);
        return found;
}

int known_config_remember(const char *config_path)
{
        _cleanup_free_ char *dir = NULL, *path = NULL, *real = realpath(config_path, NULL);
        _cleanup_close_ int fd = -1, dfd = -1;
        struct remember_index x = {.dfd = -1};
        struct stat st;
        int r;

        if (!real)
                return negative_errno();
        if (strchr(real, '\n'))
                return -EINVAL;
        r = known_xdg_dir("state", &dir);
        if (r < 0)
                return r;
        r = mkdir_p(dir, 0755, 0700);
        if (r < 0)
                return r;
        if (asprintf(&path, "%s/configs", dir) < 0)
                return -ENOMEM;
        fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return negative_errno();
        /* Two mounts at once append once each, never half a line; the index goes with it. */
        if (flock(fd, LOCK_EX) < 0)
                return negative_errno();
        r = index_open_synced(dir, fd, &x);
        dfd = x.dfd;
        if (r < 0)
                return r;
        r = index_has(&x, real);
        if (r == -EAGAIN)
                r = list_has(real);
        if (r != 0)
                return r < 0 ? r : 0;
        if (x.count >= REMEMBERED_MAX)
                return -ENOSPC; /* listed by the folder it is in, if at all */
        if (dprintf(fd, "%s\n", real) < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        r = index_mark(&x, real);
        x.count++;
        x.size = (long long)st.st_size;
        return r < 0 ? r : index_count_save(&x);
}

static int path_cmp(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.ini files of dir (not hidden), appended to paths (*n of at most LISTED_MAX). */
static void dir_configs(const char *dir, char **paths, size_t *n)
{
        _cleanup_closedir_ DIR *d = dir ? opendir(dir) : NULL;
        struct dirent *de;
        size_t first = *n;

        while (d && (de = readdir(d)) && *n < LISTED_MAX) {
                size_t l = strlen(de->d_name);
                char *p;
                if (l < 5 || !streq(de->d_name + l - 4, ".ini") || de->d_name[0] == '.')
                        continue;
                if (asprintf(&p, "%s/%s", dir, de->d_name) >= 0)
                        paths[(*n)++] = p;
        }
        qsort(paths + first, *n - first, sizeof(*paths), path_cmp);
}

static int configs_list(const char *also_dir, bool with_remembered, char ***ret, size_t *ret_n)
{
        _cleanup_free_ char *dir = NULL;
        char **paths = NULL, **known, **out;
        size_t n = 0, n_known = 0, n_out = 0;

        paths = calloc(LISTED_MAX + 1, sizeof(char *));
        out = calloc(LISTED_MAX + 1, sizeof(char *));
        if (!paths || !out) {
                free(paths);
                free(out);
                return -ENOMEM;
        }
        if (known_xdg_dir("config", &dir) == 0)
                dir_configs(dir, paths, &n);
        known = with_remembered ? remembered(&n_known) : NULL;
        for (size_t i = 0; i < n_known; i++) {
                if (n < LISTED_MAX)
                        paths[n++] = TAKE_PTR(known[i]);
                free(known[i]);
        }
        free(known);
        dir_configs(also_dir, paths, &n);
        /* The same file by two names (a folder's entry, a remembered one) once. */
        for (size_t i = 0; i < n; i++) {
                char *real = realpath(paths[i], NULL);
                bool dup = !real;

                for (size_t j = 0; j < n_out && !dup; j++)
                        dup = streq(out[j], real);
                if (dup)
                        free(real); /* gone since, or listed already */
                else
                        out[n_out++] = real;
        }
        strv_free(paths);
        *ret = out;
        *ret_n = n_out;
        return 0;
}

int known_configs(const char *also_dir, char ***ret, size_t *ret_n)
{
        return configs_list(also_dir, true, ret, ret_n);
}

int known_configs_in_folders(const char *also_dir, char ***ret, size_t *ret_n)
{
        return configs_list(also_dir, false, ret, ret_n);
}
