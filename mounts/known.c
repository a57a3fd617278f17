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

int known_config_remember(const char *config_path)
{
        _cleanup_free_ char *dir = NULL, *path = NULL, *real = realpath(config_path, NULL);
        _cleanup_close_ int fd = -1;
        char **known;
        size_t n = 0;
        bool found = false;
        int r;

        if (!real)
                return negative_errno();
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
        /* Two mounts at once append once each, never half a line. */
        if (flock(fd, LOCK_EX) < 0)
                return negative_errno();
        known = remembered(&n);
        for (size_t i = 0; i < n && !found; i++)
                found = streq(known[i], real);
        strv_free(known);
        if (found)
                return 0;
        if (n >= REMEMBERED_MAX)
                return -ENOSPC; /* listed by the folder it is in, if at all */
        if (strchr(real, '\n'))
                return -EINVAL;
        r = dprintf(fd, "%s\n", real) < 0 ? negative_errno() : 0;
        return r;
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
