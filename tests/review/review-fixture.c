/* SPDX-License-Identifier: MIT */
/*
 * review-fixture.c: see review-fixture.h.
 */
#include <fcntl.h>
#include <libgen.h>

#include "review-fixture.h"

char fx_dir[128];

static char **touched;
static bool *touched_opaque;
static size_t n_touched, cap_touched;

static char *vformat(const char *fmt, va_list ap)
{
        char *s = NULL;
        ck_assert_int_ge(vasprintf(&s, fmt, ap), 0);
        return s;
}

int fx_sh(const char *fmt, ...)
{
        va_list ap;
        char *cmd, *full = NULL;
        int st;

        va_start(ap, fmt);
        cmd = vformat(fmt, ap);
        va_end(ap);
        ck_assert_int_ge(asprintf(&full, "cd '%s' && { %s\n}", fx_dir, cmd), 0);
        st = system(full);
        free(cmd);
        free(full);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

char *fx_sh_out(const char *fmt, ...)
{
        va_list ap;
        char *cmd, *full = NULL, *buf = NULL;
        size_t len = 0;
        FILE *p;

        va_start(ap, fmt);
        cmd = vformat(fmt, ap);
        va_end(ap);
        ck_assert_int_ge(asprintf(&full, "cd '%s' && { %s\n}", fx_dir, cmd), 0);
        p = popen(full, "r");
        ck_assert_ptr_nonnull(p);
        FILE *m = open_memstream(&buf, &len);
        char tmp[4096];
        size_t n;
        while ((n = fread(tmp, 1, sizeof(tmp), p)) > 0)
                fwrite(tmp, 1, n, m);
        pclose(p);
        fclose(m);
        free(cmd);
        free(full);
        return buf;
}

void fx_setup(void)
{
        strcpy(fx_dir, "/tmp/cloister-review-test-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(fx_dir));
        /* A predictable git: no user config, fixed identities. */
        setenv("HOME", fx_dir, 1);
        setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
        setenv("GIT_AUTHOR_NAME", "Base Author", 1);
        setenv("GIT_AUTHOR_EMAIL", "base@example.org", 1);
        setenv("GIT_COMMITTER_NAME", "Base Committer", 1);
        setenv("GIT_COMMITTER_EMAIL", "committer@example.org", 1);
        ck_assert_int_eq(fx_sh("git init -q -b main src && cd src && "
                               "mkdir -p dir/sub old/deep/er && "
                               "printf 'one\\ntwo\\nthree\\n' > a.txt && "
                               "printf 'no newline' > nonl.txt && "
                               "printf 'x\\n' > dir/x && printf 'y\\n' > dir/sub/y && "
                               "printf 'r\\n%%.0s' $(seq 1 50) > dir/rename-me.txt && "
                               "printf 'f\\n' > becomes-dir && mkdir becomes-file && "
                               "printf 'g\\n' > becomes-file/g && "
                               "printf 'h\\n' > old/deep/er/h && printf 'i\\n' > old/i && "
                               "printf '#!/bin/sh\\n' > run.sh && chmod +x run.sh && "
                               "printf 'plain\\n' > mode.txt && "
                               "head -c 3000 /dev/zero | tr '\\0' 'b' > bin.dat && "
                               "printf '\\0\\1\\2' >> bin.dat && "
                               "ln -s a.txt link && "
                               "git add -A && git commit -qm base"),
                         0);
        /* The view: what the agent sees, including a .git that must be ignored. */
        ck_assert_int_eq(fx_sh("git clone -q --shared src view"), 0);
        n_touched = 0;
}

void fx_teardown(void)
{
        for (size_t i = 0; i < n_touched; i++)
                free(touched[i]);
        free(touched);
        free(touched_opaque);
        touched = NULL;
        touched_opaque = NULL;
        n_touched = cap_touched = 0;
        ck_assert_int_eq(fx_sh("cd / && rm -rf '%s'", fx_dir), 0);
}

static void mkparents(const char *path)
{
        char *copy = strdup(path);
        char *d = dirname(copy);
        char *cmd = NULL;
        ck_assert_int_ge(asprintf(&cmd, "mkdir -p -- \"%s\"", d), 0);
        ck_assert_int_eq(system(cmd), 0);
        free(cmd);
        free(copy);
}

void fx_write(const char *rel, const void *data, size_t len)
{
        char *p = NULL;
        int fd;

        ck_assert_int_ge(asprintf(&p, "%s/view/%s", fx_dir, rel), 0);
        mkparents(p);
        fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
        close(fd);
        free(p);
}

void fx_write_str(const char *rel, const char *s)
{
        fx_write(rel, s, strlen(s));
}

void fx_touch(const char *rel, bool opaque)
{
        for (size_t i = 0; i < n_touched; i++)
                if (strcmp(touched[i], rel) == 0) {
                        touched_opaque[i] |= opaque;
                        return;
                }
        if (n_touched == cap_touched) {
                cap_touched = cap_touched ? 2 * cap_touched : 64;
                touched = realloc(touched, cap_touched * sizeof(char *));
                touched_opaque = realloc(touched_opaque, cap_touched * sizeof(bool));
                ck_assert(touched && touched_opaque);
        }
        touched[n_touched] = strdup(rel);
        touched_opaque[n_touched++] = opaque;
}

void fx_changes_write(void)
{
        char *p = NULL;
        FILE *f;

        ck_assert_int_ge(asprintf(&p, "%s/changes", fx_dir), 0);
        f = fopen(p, "w");
        ck_assert_ptr_nonnull(f);
        for (size_t i = 0; i < n_touched; i++) {
                char *vp = NULL;
                struct stat st;
                const char *type = "deleted";
                ck_assert_int_ge(asprintf(&vp, "%s/view/%s", fx_dir, touched[i]), 0);
                if (lstat(vp, &st) == 0)
                        type = S_ISDIR(st.st_mode)   ? "dir"
                               : S_ISLNK(st.st_mode) ? "symlink"
                               : S_ISREG(st.st_mode) ? "file"
                                                     : "fifo";
                /* Test names hold no quotes or backslashes, so plain %s is valid JSON. */
                fprintf(f, "{\"path\":\"/workspace/%s\",\"type\":\"%s\",\"opaque\":%s}\n",
                        touched[i], type,
                        touched_opaque[i] && strcmp(type, "dir") == 0 ? "true" : "false");
                free(vp);
        }
        fclose(f);
        free(p);
}

int fx_apply_and_compare(const char *patch, bool am)
{
        int r;

        r = fx_sh("rm -rf fresh && git clone -q src fresh && cd fresh && %s '%s/%s' >/dev/null",
                  am ? "git am -q" : "git apply --whitespace=nowarn", fx_dir, patch);
        if (r != 0)
                return r;
        /* git holds no empty directories: compare copies without them. */
        r = fx_sh("rm -rf viewc freshc && cp -a view viewc && cp -a fresh freshc && "
                  "find viewc freshc -depth -type d -empty -delete");
        if (r != 0)
                return r;
        /* Contents (symlinks as links), then types and executable bits. */
        r = fx_sh("diff -r --no-dereference -x .git viewc freshc >/dev/null");
        if (r != 0)
                return 100 + r;
        return fx_sh("for d in viewc freshc; do (cd $d && find . -path ./.git -prune -o "
                     "-printf '%%p %%y\\n' | sort > ../$d.types && find . -path ./.git -prune "
                     "-o -type f -perm -u+x -print | sort > ../$d.exec); done && "
                     "cmp -s viewc.types freshc.types && cmp -s viewc.exec freshc.exec")
                       ? 200
                       : 0;
}
