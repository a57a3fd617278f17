/* SPDX-License-Identifier: MIT */
/*
 * bench-files.c: the small-file workloads of tests/bench/run, in one process.
 *
 * A shell loop would measure fork/exec as much as the filesystem; doing the
 * system calls here keeps the per-file cost down to what the filesystem
 * under test charges. Every call is checked: a workload that fails midway
 * must not be reported as a fast one.
 *
 * usage:
 *   bench-files create DIR N BYTES   mkdir DIR, write N files of BYTES each
 *   bench-files delete DIR N         unlink those N files, rmdir DIR
 *   bench-files append BYTES < LIST  append BYTES to each path read from stdin
 *   bench-files read DIR             read every regular file under DIR, skipping .git
 * prints (read): files=N bytes=N
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char payload[1 << 16];
static unsigned long read_files;
static unsigned long long read_bytes;

static int fail(const char *what, const char *path)
{
        fprintf(stderr, "bench-files: %s %s: %s\n", what, path, strerror(errno));
        return 1;
}

static int write_all(int fd, const char *p, size_t len)
{
        while (len > 0) {
                ssize_t w = write(fd, p, len);
                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        return -1;
                }
                p += w;
                len -= (size_t)w;
        }
        return 0;
}

static int do_create(const char *dir, long n, size_t bytes)
{
        char path[4096];

        if (mkdir(dir, 0755) < 0)
                return fail("mkdir", dir);
        for (long i = 0; i < n; i++) {
                int fd;

                snprintf(path, sizeof(path), "%s/f%06ld", dir, i);
                fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
                if (fd < 0)
                        return fail("create", path);
                if (write_all(fd, payload, bytes) < 0) {
                        close(fd);
                        return fail("write", path);
                }
                if (close(fd) < 0)
                        return fail("close", path);
        }
        return 0;
}

static int do_delete(const char *dir, long n)
{
        char path[4096];

        for (long i = 0; i < n; i++) {
                snprintf(path, sizeof(path), "%s/f%06ld", dir, i);
                if (unlink(path) < 0)
                        return fail("unlink", path);
        }
        if (rmdir(dir) < 0)
                return fail("rmdir", dir);
        return 0;
}

static int do_append(size_t bytes)
{
        char line[4096];

        while (fgets(line, sizeof(line), stdin)) {
                int fd;

                line[strcspn(line, "\n")] = '\0';
                if (!line[0])
                        continue;
                fd = open(line, O_WRONLY | O_APPEND | O_CLOEXEC);
                if (fd < 0)
                        return fail("open", line);
                if (write_all(fd, payload, bytes) < 0) {
                        close(fd);
                        return fail("append", line);
                }
                if (close(fd) < 0)
                        return fail("close", line);
        }
        return 0;
}

static int read_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
        static char buf[1 << 17];
        const char *base = path + ftw->base;
        ssize_t n;
        int fd;

        (void)st;
        if (type == FTW_D && strcmp(base, ".git") == 0)
                return FTW_SKIP_SUBTREE;
        if (type == FTW_DNR || type == FTW_NS) {
                errno = EACCES;
                return fail("walk", path);
        }
        if (type != FTW_F || !S_ISREG(st->st_mode))
                return FTW_CONTINUE;
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return fail("open", path);
        while ((n = read(fd, buf, sizeof(buf))) > 0)
                read_bytes += (unsigned long long)n;
        if (n < 0) {
                int saved = errno;
                close(fd);
                errno = saved;
                return fail("read", path);
        }
        close(fd);
        read_files++;
        return FTW_CONTINUE;
}

int main(int argc, char **argv)
{
        memset(payload, 'x', sizeof(payload));
        for (size_t i = 63; i < sizeof(payload); i += 64)
                payload[i] = '\n';

        if (argc == 5 && strcmp(argv[1], "create") == 0) {
                long n = strtol(argv[3], NULL, 10), b = strtol(argv[4], NULL, 10);
                if (n < 0 || b < 0 || (size_t)b > sizeof(payload))
                        goto usage;
                return do_create(argv[2], n, (size_t)b);
        }
        if (argc == 4 && strcmp(argv[1], "delete") == 0)
                return do_delete(argv[2], strtol(argv[3], NULL, 10));
        if (argc == 3 && strcmp(argv[1], "append") == 0) {
                long b = strtol(argv[2], NULL, 10);
                if (b < 0 || (size_t)b > sizeof(payload))
                        goto usage;
                return do_append((size_t)b);
        }
        if (argc == 3 && strcmp(argv[1], "read") == 0) {
                int r = nftw(argv[2], read_one, 64, FTW_PHYS | FTW_ACTIONRETVAL);
                if (r != 0)
                        return 1;
                printf("files=%lu bytes=%llu\n", read_files, read_bytes);
                return 0;
        }
usage:
        fprintf(stderr, "usage: bench-files create DIR N BYTES | delete DIR N | "
                        "append BYTES < LIST | read DIR\n");
        return 2;
}
