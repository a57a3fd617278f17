/* SPDX-License-Identifier: MIT */
/*
 * image-compose.c: an image's root from its unpacked layers.
 *
 * Why hard links and not an overlay mount: the root must be one directory
 * that any later `cloister run` binds read-only, with no mount that
 * outlives a run and no privilege (bubblewrap 0.8 has no overlay). Every
 * directory is made anew in the root; every other entry is a hard link to
 * the layer's inode, so an image costs its directories and the layers are
 * stored once, however many images and workspaces share them. The files
 * are never written after they are unpacked: a hard link can't be changed
 * through the root either, since the sandbox sees it read-only.
 *
 * Whiteouts (the OCI image spec, "Representing Changes"): in a layer,
 * ".wh.NAME" removes NAME of the layers below, and ".wh..wh..opq" in a
 * directory empties that directory of what the layers below put there.
 * Both apply before the layer's own entries of that directory.
 *
 * Everything here walks with directory fds and O_NOFOLLOW: the layers
 * hold symlinks of the image's author, and none is ever followed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image-private.h"
#include "lib/util.h"

#define WHITEOUT          ".wh."
#define WHITEOUT_OPAQUE   ".wh..wh..opq"
#define COMPOSE_DEPTH_MAX 256 /* each level holds two descriptors */

static int rm_rf_children(int dirfd, unsigned depth);

static int rm_rf_at_depth(int dirfd, const char *name, unsigned depth)
{
        struct stat st;
        int r;

        if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : negative_errno();
        if (S_ISDIR(st.st_mode)) {
                _cleanup_close_ int fd = -1;

                if (depth > COMPOSE_DEPTH_MAX)
                        return -ELOOP;
                /* A directory we can't enter (mode 0) is ours: open it up first. */
                (void)fchmodat(dirfd, name, 0700, 0);
                fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return negative_errno();
                r = rm_rf_children(fd, depth + 1);
                if (r < 0)
                        return r;
                return unlinkat(dirfd, name, AT_REMOVEDIR) < 0 ? negative_errno() : 0;
        }
        return unlinkat(dirfd, name, 0) < 0 && errno != ENOENT ? negative_errno() : 0;
}

static int rm_rf_children(int dirfd, unsigned depth)
{
        int fd = dup(dirfd);
        DIR *d;
        struct dirent *de;
        int r = 0;

        if (fd < 0)
                return negative_errno();
        d = fdopendir(fd);
        if (!d) {
                close(fd);
                return negative_errno();
        }
        rewinddir(d); /* a dup shares its offset: start from the first entry */
        while (r == 0 && (errno = 0, de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                r = rm_rf_at_depth(dirfd, de->d_name, depth);
        }
        if (r == 0 && errno)
                r = negative_errno();
        closedir(d);
        return r;
}

int image_rm_rf_at(int dirfd, const char *name)
{
        return rm_rf_at_depth(dirfd, name, 0);
}

struct compose {
        const char *layer; /* hex, for errors */
        char **error;
};

static int compose_dir(struct compose *c, int from, int to, unsigned depth)
{
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int fd, r = 0;

        if (depth > COMPOSE_DEPTH_MAX)
                return image_errorf(c->error, -ELOOP,
                                    "layer sha256:%s: directories nested deeper than %d", c->layer,
                                    COMPOSE_DEPTH_MAX);
        /* First the whiteouts, which act on the layers below. */
        if (faccessat(from, WHITEOUT_OPAQUE, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
                r = rm_rf_children(to, depth);
                if (r < 0)
                        return image_errorf(c->error, r, "cannot apply an opaque whiteout: %s",
                                            strerror(-r));
        }
        for (int pass = 0; pass < 2; pass++) {
                fd = dup(from);
                if (fd < 0)
                        return negative_errno();
                d = fdopendir(fd);
                if (!d) {
                        close(fd);
                        return negative_errno();
                }
                rewinddir(d); /* a dup shares its offset with the last pass's */
                while ((errno = 0, de = readdir(d))) {
                        const char *n = de->d_name;
                        bool wh = startswith(n, WHITEOUT) != NULL;
                        struct stat st;

                        if (streq(n, ".") || streq(n, "..") || wh != (pass == 0))
                                continue;
                        if (wh) {
                                if (streq(n, WHITEOUT_OPAQUE))
                                        continue;
                                r = image_rm_rf_at(to, n + strlen(WHITEOUT));
                                if (r < 0)
                                        return image_errorf(c->error, r,
                                                            "cannot apply whiteout %s: %s", n,
                                                            strerror(-r));
                                continue;
                        }
                        if (fstatat(from, n, &st, AT_SYMLINK_NOFOLLOW) < 0)
                                return negative_errno();
                        if (S_ISDIR(st.st_mode)) {
                                _cleanup_close_ int sub_from = -1, sub_to = -1;
                                struct stat tst;

                                if (fstatat(to, n, &tst, AT_SYMLINK_NOFOLLOW) == 0 &&
                                    !S_ISDIR(tst.st_mode) && unlinkat(to, n, 0) < 0)
                                        return negative_errno();
                                if (mkdirat(to, n, 0700) < 0 && errno != EEXIST)
                                        return negative_errno();
                                sub_from = openat(from, n,
                                                  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                                sub_to = openat(to, n,
                                                O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                                if (sub_from < 0 || sub_to < 0)
                                        return negative_errno();
                                r = compose_dir(c, sub_from, sub_to, depth + 1);
                                if (r < 0)
                                        return r;
                                if (fchmod(sub_to, st.st_mode & 01777) < 0)
                                        return negative_errno();
                                continue;
                        }
                        r = image_rm_rf_at(to, n);
                        if (r < 0)
                                return r;
                        if (linkat(from, n, to, n, 0) < 0)
                                return image_errorf(c->error, negative_errno(),
                                                    "layer sha256:%s: cannot link %s: %m", c->layer,
                                                    n);
                }
                if (errno)
                        return negative_errno();
                closedir(TAKE_PTR(d));
        }
        return 0;
}

/*
 * What `cloister run` binds over the image's /etc (sandbox-bwrap.c): empty
 * files, so that each has a place to be mounted on in a read-only root. The
 * image's own are hidden in the sandbox anyway.
 */
static const char *const etc_synthesized[] = {"passwd",        "group",       "hostname", "hosts",
                                              "nsswitch.conf", "resolv.conf", "gitconfig"};

static int etc_prepare(int rootfd, char **ret_error)
{
        _cleanup_close_ int etc = -1;
        struct stat st;
        int r;

        if (fstatat(rootfd, "etc", &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode))
                return image_errorf(ret_error, -EINVAL,
                                    "the image's /etc is not a directory: refused");
        if (mkdirat(rootfd, "etc", 0755) < 0 && errno != EEXIST)
                return negative_errno();
        etc = openat(rootfd, "etc", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (etc < 0)
                return negative_errno();
        for (size_t i = 0; i < ELEMENTSOF(etc_synthesized); i++) {
                _cleanup_close_ int fd = -1;

                r = image_rm_rf_at(etc, etc_synthesized[i]);
                if (r < 0)
                        return r;
                fd = openat(etc, etc_synthesized[i],
                            O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
                if (fd < 0 || fchmod(fd, 0644) < 0)
                        return negative_errno();
        }
        return 0;
}

int image_compose(int layersfd, char *const *layer_hex, size_t n, int rootfd, char **ret_error)
{
        int r;

        for (size_t i = 0; i < n; i++) {
                struct compose c = {.layer = layer_hex[i], .error = ret_error};
                _cleanup_close_ int from = openat(layersfd, layer_hex[i],
                                                  O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (from < 0)
                        return image_errorf(ret_error, negative_errno(),
                                            "layer sha256:%s is not in the store: %m",
                                            layer_hex[i]);
                r = compose_dir(&c, from, rootfd, 0);
                if (r < 0)
                        return image_errorf(ret_error, r, "layer sha256:%s: %s", layer_hex[i],
                                            strerror(-r));
        }
        r = etc_prepare(rootfd, ret_error);
        if (r < 0)
                return image_errorf(ret_error, r, "the image's /etc: %s", strerror(-r));
        return fchmod(rootfd, 0755) < 0 ? negative_errno() : 0;
}
