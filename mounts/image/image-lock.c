/* SPDX-License-Identifier: MIT */
/*
 * image-lock.c: a Debian root's packages against a package lock (image.h).
 *
 * SOURCE_DATE_EPOCH makes a build's times the same; what makes its files
 * the same is the packages' versions, and a mirror moves on. A lock names
 * every package of the root at its version, one "NAME VERSION" a line, as
 * packaging/oci/build's packages.lock does for cloister's own image: a
 * build that got other versions is refused, naming them, so that a lock
 * and an epoch give one digest or none. The versions are dpkg's own
 * answer about the root (dpkg-query --admindir), never a parse of its
 * status file here.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "image-private.h"
#include "lib/readall.h"
#include "lib/util.h"

#define LOCK_MAX    (4u << 20) /* bytes of a lock, and of dpkg-query's answer */
#define DIFFS_SHOWN 8

static int line_cmp(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* text's lines (not blank, not "#" comments), in place, sorted; *ret_n of them. */
static int lines_sorted(char *text, char ***ret, size_t *ret_n)
{
        size_t n = 0, cap = 0;
        char **v = NULL, *save = NULL;

        for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                if (!*l || *l == '#')
                        continue;
                if (n == cap) {
                        char **nv = realloc(v, (cap = cap ? 2 * cap : 256) * sizeof(*v));
                        if (!nv) {
                                free(v);
                                return -ENOMEM;
                        }
                        v = nv;
                }
                v[n++] = l;
        }
        if (n)
                qsort(v, n, sizeof(*v), line_cmp);
        *ret = v;
        *ret_n = n;
        return 0;
}

/* "NAME VERSION" of every package installed in root, a line each (dpkg-query's). */
static int root_packages(const char *root, char **ret, char **ret_error)
{
        _cleanup_free_ char *admindir = NULL, *arg = NULL;
        _cleanup_close_ int rfd = -1;
        int p[2], status, r;
        size_t len;
        pid_t pid;

        if (asprintf(&admindir, "%s/var/lib/dpkg", root) < 0 ||
            asprintf(&arg, "--admindir=%s", admindir) < 0)
                return -ENOMEM;
        if (access(admindir, R_OK) < 0)
                return image_errorf(ret_error, -ENOENT,
                                    "%s: not a Debian root (no dpkg database): a package lock "
                                    "checks a root that dpkg installed",
                                    root);
        if (pipe2(p, O_CLOEXEC) < 0)
                return negative_errno();
        pid = fork();
        if (pid < 0) {
                r = negative_errno();
                close(p[0]);
                close(p[1]);
                return r;
        }
        if (pid == 0) {
                (void)dup2(p[1], STDOUT_FILENO);
                execlp("dpkg-query", "dpkg-query", arg, "-W", "-f=${Package} ${Version}\\n",
                       (char *)NULL);
                _exit(127);
        }
        close(p[1]);
        rfd = p[0];
        r = fd_read_whole(rfd, 0, LOCK_MAX, ret, &len);
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return negative_errno();
        if (r < 0)
                return image_errorf(ret_error, r, "dpkg-query --admindir=%s: %s", admindir,
                                    strerror(-r));
        (*ret)[len] = '\0';
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                free(TAKE_PTR(*ret));
                return image_errorf(ret_error, -EIO, "dpkg-query --admindir=%s failed (exit %d)",
                                    admindir, WIFEXITED(status) ? WEXITSTATUS(status) : 128);
        }
        return 0;
}

static int lock_write(const char *lock, char **served, size_t n, char **ret_error)
{
        _cleanup_free_ char *tmp = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        int fd;

        if (asprintf(&tmp, "%s.new", lock) < 0)
                return -ENOMEM;
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0 || !(f = fdopen(fd, "w"))) {
                int r = negative_errno();
                if (fd >= 0)
                        close(fd);
                return image_errorf(ret_error, r, "%s: %s", tmp, strerror(-r));
        }
        fputs("# cloister image build: the Debian packages of the image, exactly. Rewritten by\n"
              "# --update-lock; a build with --lock that gets other versions is refused.\n",
              f);
        for (size_t i = 0; i < n; i++)
                fprintf(f, "%s\n", served[i]);
        if (fflush(f) != 0 || fsync(fileno(f)) < 0 || rename(tmp, lock) < 0) {
                int r = negative_errno();
                (void)unlink(tmp);
                return image_errorf(ret_error, r, "%s: %s", lock, strerror(-r));
        }
        return 0;
}

/* The differences of two sorted lists, as "- pinned" and "+ served" lines, the first few. */
static int lock_compare(const char *lock, char **pinned, size_t np, char **served, size_t ns,
                        char **ret_error)
{
        _cleanup_free_ char *shown = NULL;
        size_t i = 0, j = 0, diffs = 0, len = 0;
        FILE *f = open_memstream(&shown, &len);

        if (!f)
                return -ENOMEM;
        while (i < np || j < ns) {
                int c = i == np ? 1 : j == ns ? -1 : strcmp(pinned[i], served[j]);
                if (c == 0) {
                        i++, j++;
                        continue;
                }
                if (diffs++ < DIFFS_SHOWN)
                        fprintf(f, "%s%s %s", diffs > 1 ? "," : "", c < 0 ? " -" : " +",
                                c < 0 ? pinned[i] : served[j]);
                if (c < 0)
                        i++;
                else
                        j++;
        }
        fclose(f);
        if (!diffs)
                return 0;
        return image_errorf(ret_error, -ESTALE,
                            "the packages are not the ones %s pins (- pinned, + installed):%s%s; "
                            "refresh the lock with --update-lock, or use a mirror that has them",
                            lock, shown ? shown : "", diffs > DIFFS_SHOWN ? ", ..." : "");
}

int image_lock_apply(const char *root, const char *lock, bool update, char **ret_error)
{
        _cleanup_free_ char *now = NULL, *pins = NULL;
        _cleanup_free_ char **served = NULL, **pinned = NULL;
        _cleanup_close_ int fd = -1;
        size_t ns = 0, np = 0, len;
        struct stat st;
        int r;

        r = root_packages(root, &now, ret_error);
        if (r < 0)
                return r;
        r = lines_sorted(now, &served, &ns);
        if (r < 0)
                return r;
        if (update)
                return lock_write(lock, served, ns, ret_error);
        fd = open(lock, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0 || fstat(fd, &st) < 0) {
                r = negative_errno();
                return image_errorf(ret_error, r, "%s: %s%s", lock, strerror(-r),
                                    r == -ENOENT ? " (make it with --update-lock)" : "");
        }
        if (!S_ISREG(st.st_mode))
                return image_errorf(ret_error, -EINVAL, "%s: not a regular file", lock);
        r = fd_read_whole(fd, (size_t)st.st_size, LOCK_MAX, &pins, &len);
        if (r < 0)
                return image_errorf(ret_error, r, "%s: %s", lock,
                                    r == -EFBIG ? "larger than 4 MiB" : strerror(-r));
        pins[len] = '\0';
        if (memchr(pins, '\0', len))
                return image_errorf(ret_error, -EINVAL, "%s: not a text file", lock);
        r = lines_sorted(pins, &pinned, &np);
        if (r < 0)
                return r;
        return lock_compare(lock, pinned, np, served, ns, ret_error);
}
