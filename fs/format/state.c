/* SPDX-License-Identifier: MIT */
/*
 * state.c: the state directory on the host, and the hidden home's seeds.
 *
 *   <state>/mount.pid          the serving daemon's pid
 *   <state>/journal.jsonl      the write journal (fs/journal)
 *   <state>/fs/repo/           the repo's upper tree (names verbatim, plus
 *                              ".cloister~*" sidecars, see upper.c)
 *   <state>/fs/home/upper/     the hidden home's upper tree
 *   <state>/fs/home/seed/      the seed snapshot, rebuilt at every mount
 *   <state>/fs/cache/          inflated blobs, named by object id
 *
 * Everything below <state> is opened from the state dirfd with single
 * components and O_NOFOLLOW, so a symlink planted in the state cannot
 * redirect the daemon.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format.h"
#include "state.h"
#include "lib/util.h"

int state_mkdir_p(const char *path, mode_t mode)
{
        _cleanup_free_ char *p = strdup(path);
        if (!p)
                return -ENOMEM;
        for (char *s = p + 1; *s; s++)
                if (*s == '/') {
                        *s = 0;
                        if (mkdir(p, 0755) < 0 && errno != EEXIST)
                                return negative_errno();
                        *s = '/';
                }
        if (mkdir(p, mode) < 0 && errno != EEXIST)
                return negative_errno();
        return 0;
}

int state_open_dir(int dfd, const char *name, bool create)
{
        int fd;
        if (create && mkdirat(dfd, name, 0700) < 0 && errno != EEXIST)
                return negative_errno();
        fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        return fd < 0 ? negative_errno() : fd;
}

int state_rm_rf_at(int dfd, const char *name, unsigned depth)
{
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int fd, r = 0;

        if (depth > 4096)
                return -ELOOP;
        if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
                return 0;
        if (errno != EISDIR && errno != EPERM)
                return negative_errno();
        fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        d = fdopendir(fd);
        if (!d) {
                safe_close(fd);
                return negative_errno();
        }
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                r = state_rm_rf_at(dirfd(d), de->d_name, depth + 1);
                if (r < 0)
                        return r;
        }
        if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                return negative_errno();
        return 0;
}

/* Copy one host entry (never following a symlink) to name in dfd. */
static int copy_entry(int sfd_dir, const char *sname, int dfd, const char *dname, unsigned depth)
{
        struct stat st;
        int r = 0;

        if (depth > 256)
                return -ELOOP;
        if (fstatat(sfd_dir, sname, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return negative_errno();
        if (S_ISDIR(st.st_mode)) {
                _cleanup_closedir_ DIR *d = NULL;
                _cleanup_close_ int out = -1;
                struct dirent *de;
                int in = openat(sfd_dir, sname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (in < 0 || !(d = fdopendir(in))) {
                        safe_close(in);
                        return negative_errno();
                }
                if (mkdirat(dfd, dname, 0700) < 0 && errno != EEXIST)
                        return negative_errno();
                out = openat(dfd, dname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (out < 0)
                        return negative_errno();
                while ((de = readdir(d))) {
                        if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                                continue;
                        r = copy_entry(dirfd(d), de->d_name, out, de->d_name, depth + 1);
                        if (r < 0)
                                return r;
                }
                (void)fchmod(out, st.st_mode & 0777);
                (void)futimens(out, (struct timespec[]){st.st_atim, st.st_mtim});
        } else if (S_ISREG(st.st_mode)) {
                _cleanup_close_ int in = -1, out = -1;
                in = openat(sfd_dir, sname, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
                if (in < 0)
                        return negative_errno();
                out = openat(dfd, dname, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
                             0600);
                if (out < 0)
                        return negative_errno();
                r = copyup_fd_data(in, out, (uint64_t)st.st_size);
                if (r < 0)
                        return r;
                (void)fchmod(out, st.st_mode & 0777);
                (void)futimens(out, (struct timespec[]){st.st_atim, st.st_mtim});
        } else if (S_ISLNK(st.st_mode)) {
                char buf[PATH_MAX + 1];
                ssize_t k = readlinkat(sfd_dir, sname, buf, sizeof(buf) - 1);
                if (k < 0)
                        return negative_errno();
                buf[k] = 0;
                if (symlinkat(buf, dfd, dname) < 0 && errno != EEXIST)
                        return negative_errno();
        }
        /* Devices, sockets and FIFOs of the host are not seeded. */
        return 0;
}

int state_copy_seed(const char *source, int dest_root, const char *dest)
{
        _cleanup_free_ char *src_dir = NULL, *d = strdup(dest);
        _cleanup_close_ int sfd = -1, dfd = -1;
        const char *base;
        char *slash, *comp;

        if (!d)
                return -ENOMEM;
        /* The source's parent directory, then its last component (never followed). */
        src_dir = strdup(source);
        if (!src_dir)
                return -ENOMEM;
        slash = strrchr(src_dir, '/');
        if (!slash || !slash[1])
                return -EINVAL;
        base = source + (slash - src_dir) + 1;
        *slash = 0;
        sfd = open(*src_dir ? src_dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (sfd < 0)
                return negative_errno();
        /* dest is relative and clean (config-validate): make its parents. */
        dfd = fcntl(dest_root, F_DUPFD_CLOEXEC, 3);
        if (dfd < 0)
                return negative_errno();
        comp = d;
        while ((slash = strchr(comp, '/'))) {
                int next;
                *slash = 0;
                if (!fs_name_valid(comp))
                        return -EINVAL;
                next = state_open_dir(dfd, comp, true);
                if (next < 0)
                        return next;
                safe_close(dfd);
                dfd = next;
                comp = slash + 1;
        }
        if (!fs_name_valid(comp))
                return -EINVAL;
        return copy_entry(sfd, base, dfd, comp, 0);
}
