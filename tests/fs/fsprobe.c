/* SPDX-License-Identifier: MIT */
/*
 * fsprobe.c: syscall-level probes for the fs tests. One syscall per
 * invocation, no libc wrappers that retry or follow: the exit status is 0 or
 * the errno the syscall failed with, and the errno name is printed, so a TAP
 * script can assert on exactly what the kernel and the daemon answered.
 *
 *   fsprobe open PATH FLAGS [MODE]   FLAGS: comma list of r,w,rw,creat,excl,trunc,append,nofollow
 *   fsprobe osize PATH FLAGS         (open, then fstat through the fd: prints the size)
 *   fsprobe mknod PATH fifo|chr|blk|sock|reg
 *   fsprobe rename OLD NEW [noreplace|exchange]
 *   fsprobe link OLD NEW | symlink TARGET PATH | unlink PATH | mkdir PATH | rmdir PATH
 *   fsprobe chmod PATH OCTAL | chown PATH UID GID | utimens PATH SECONDS | truncate PATH SIZE
 *   fsprobe setxattr PATH NAME VALUE | getxattr PATH NAME | removexattr PATH NAME | listxattr PATH
 *   fsprobe write PATH OFFSET LENGTH  (writes a byte pattern, reports the count)
 *   fsprobe fill PATH CHUNK           (appends until a write fails; prints bytes, errno)
 *   fsprobe statfs PATH               (prints bytes and inodes available)
 *   fsprobe fallocate PATH MODES OFFSET LENGTH   MODES: 0 or a comma list of
 *                                     keep,punch,zero,insert,collapse
 *   fsprobe copyrange SRC DST LENGTH  (copy_file_range into DST, created; prints the count)
 *   fsprobe clone SRC DST             (ioctl FICLONE into DST, created)
 *   fsprobe mmapwrite PATH LENGTH     (MAP_SHARED writes over the file's first LENGTH bytes)
 *   fsprobe fsdiff A B SEED COUNT     (random operations on two trees, compared)
 *   fsprobe readrace PATH NEW         (threads read one O_DIRECT fd while PATH is rewritten
 *                                      to NEW through another; prints how many reads failed
 *                                      and how many were neither the old nor the new data)
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

int fsdiff_main(const char *a, const char *b, unsigned seed, unsigned count);

static int result(int r)
{
        if (r < 0) {
                int e = errno;
                printf("%s\n", strerrorname_np(e) ? strerrorname_np(e) : "E?");
                return e;
        }
        printf("OK\n");
        return 0;
}

struct race {
        int fd;
        const char *old, *new;
        _Atomic unsigned bad, errors;
};

/* Each read of the shared handle must see the old content or (a prefix of) the new. */
static void *race_reader(void *arg)
{
        struct race *rc = arg;
        char buf[4096];
        for (int i = 0; i < 3000; i++) {
                memset(buf, 0, sizeof(buf));
                ssize_t k = pread(rc->fd, buf, sizeof(buf), 0);
                if (k < 0)
                        rc->errors++;
                bool is_old =
                        k >= 0 && (size_t)k == strlen(rc->old) && !memcmp(buf, rc->old, (size_t)k);
                bool is_new =
                        k >= 0 && (size_t)k <= strlen(rc->new) && !memcmp(buf, rc->new, (size_t)k);
                if (!is_old && !is_new) {
                        if (rc->bad++ == 0)
                                fprintf(stderr, "bad read: %zd [%.*s]\n", k, k > 0 ? (int)k : 0,
                                        buf);
                }
        }
        return NULL;
}

static int read_race(const char *path, const char *new)
{
        static char old[4096];
        struct race rc = {.new = new, .old = old};
        pthread_t t[4];
        ssize_t k;
        int w;

        rc.fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC);
        if (rc.fd < 0)
                return result(-1);
        k = pread(rc.fd, old, sizeof(old) - 1, 0);
        if (k < 0)
                return result(-1);
        old[k] = 0;
        for (int i = 0; i < 4; i++)
                pthread_create(&t[i], NULL, race_reader, &rc);
        w = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
        if (w < 0 || write(w, new, strlen(new)) != (ssize_t)strlen(new) || close(w) < 0)
                rc.bad++;
        for (int i = 0; i < 4; i++)
                pthread_join(t[i], NULL);
        close(rc.fd);
        printf("errors=%u mixed=%u\n", rc.errors, rc.bad);
        return 0;
}

static int open_flags(const char *s)
{
        int f = 0;
        char *copy = strdup(s), *save = NULL;
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                if (!strcmp(t, "r"))
                        f |= O_RDONLY;
                else if (!strcmp(t, "w"))
                        f |= O_WRONLY;
                else if (!strcmp(t, "rw"))
                        f |= O_RDWR;
                else if (!strcmp(t, "creat"))
                        f |= O_CREAT;
                else if (!strcmp(t, "excl"))
                        f |= O_EXCL;
                else if (!strcmp(t, "trunc"))
                        f |= O_TRUNC;
                else if (!strcmp(t, "append"))
                        f |= O_APPEND;
                else if (!strcmp(t, "nofollow"))
                        f |= O_NOFOLLOW;
                else if (!strcmp(t, "dir"))
                        f |= O_DIRECTORY;
        }
        free(copy);
        return f;
}

int main(int argc, char **argv)
{
        const char *cmd = argc > 1 ? argv[1] : "";
        if (argc < 3) {
                fprintf(stderr, "usage: fsprobe CMD ARGS...\n");
                return 2;
        }
        if (!strcmp(cmd, "open")) {
                int fd = open(argv[2], open_flags(argc > 3 ? argv[3] : "r") | O_CLOEXEC,
                              argc > 4 ? (mode_t)strtoul(argv[4], NULL, 8) : 0644);
                return result(fd);
        }
        if (!strcmp(cmd, "osize") && argc == 4) { /* open, then fstat: the size */
                struct stat st;
                int fd = open(argv[2], open_flags(argv[3]) | O_CLOEXEC);
                if (fd < 0 || fstat(fd, &st) < 0)
                        return result(-1);
                printf("%lld\n", (long long)st.st_size);
                close(fd);
                return 0;
        }
        if (!strcmp(cmd, "mknod") && argc == 4) {
                mode_t m = !strcmp(argv[3], "fifo")   ? S_IFIFO
                           : !strcmp(argv[3], "chr")  ? S_IFCHR
                           : !strcmp(argv[3], "blk")  ? S_IFBLK
                           : !strcmp(argv[3], "sock") ? S_IFSOCK
                                                      : S_IFREG;
                return result(mknod(argv[2], m | 0644, makedev(1, 3)));
        }
        if (!strcmp(cmd, "rename") && argc >= 4) {
                unsigned fl = 0;
                if (argc > 4)
                        fl = !strcmp(argv[4], "noreplace") ? RENAME_NOREPLACE : RENAME_EXCHANGE;
                return result(renameat2(AT_FDCWD, argv[2], AT_FDCWD, argv[3], fl));
        }
        if (!strcmp(cmd, "link") && argc == 4)
                return result(link(argv[2], argv[3]));
        if (!strcmp(cmd, "symlink") && argc == 4)
                return result(symlink(argv[2], argv[3]));
        if (!strcmp(cmd, "unlink"))
                return result(unlink(argv[2]));
        if (!strcmp(cmd, "mkdir"))
                return result(mkdir(argv[2], 0755));
        if (!strcmp(cmd, "rmdir"))
                return result(rmdir(argv[2]));
        if (!strcmp(cmd, "chmod") && argc == 4)
                return result(chmod(argv[2], (mode_t)strtoul(argv[3], NULL, 8)));
        if (!strcmp(cmd, "chown") && argc == 5)
                return result(lchown(argv[2], (uid_t)atoi(argv[3]), (gid_t)atoi(argv[4])));
        if (!strcmp(cmd, "utimens") && argc == 4) {
                struct timespec ts[2] = {{.tv_sec = atol(argv[3])}, {.tv_sec = atol(argv[3])}};
                return result(utimensat(AT_FDCWD, argv[2], ts, AT_SYMLINK_NOFOLLOW));
        }
        if (!strcmp(cmd, "fallocate") && argc == 6) {
                int mode = 0, fd = open(argv[2], O_RDWR | O_CLOEXEC);
                if (strstr(argv[3], "keep"))
                        mode |= FALLOC_FL_KEEP_SIZE;
                if (strstr(argv[3], "punch"))
                        mode |= FALLOC_FL_PUNCH_HOLE;
                if (strstr(argv[3], "zero"))
                        mode |= FALLOC_FL_ZERO_RANGE;
                if (strstr(argv[3], "insert"))
                        mode |= FALLOC_FL_INSERT_RANGE;
                if (strstr(argv[3], "collapse"))
                        mode |= FALLOC_FL_COLLAPSE_RANGE;
                if (fd < 0)
                        return result(-1);
                return result(fallocate(fd, mode, atoll(argv[4]), atoll(argv[5])));
        }
        if (!strcmp(cmd, "copyrange") && argc == 5) {
                int in = open(argv[2], O_RDONLY | O_CLOEXEC),
                    out = open(argv[3], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                long long want = atoll(argv[4]), total = 0;
                int e = 0;
                if (in < 0 || out < 0)
                        return result(-1);
                while (total < want) {
                        ssize_t k = copy_file_range(in, NULL, out, NULL, (size_t)(want - total), 0);
                        if (k <= 0) {
                                e = k < 0 ? errno : 0;
                                break;
                        }
                        total += k;
                }
                printf("%lld %s\n", total, e ? strerrorname_np(e) : "OK");
                return 0;
        }
        if (!strcmp(cmd, "clone") && argc == 4) {
                int in = open(argv[2], O_RDONLY | O_CLOEXEC),
                    out = open(argv[3], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
                if (in < 0 || out < 0)
                        return result(-1);
                return result(ioctl(out, FICLONE, in));
        }
        if (!strcmp(cmd, "mmapwrite") && argc == 4) {
                size_t len = (size_t)atoll(argv[3]);
                int fd = open(argv[2], O_RDWR | O_CLOEXEC);
                char *m = fd < 0 ? MAP_FAILED
                                 : mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
                if (m == MAP_FAILED)
                        return result(-1);
                memset(m, 'm', len);
                return result(msync(m, len, MS_SYNC));
        }
        if (!strcmp(cmd, "truncate") && argc == 4)
                return result(truncate(argv[2], atoll(argv[3])));
        if (!strcmp(cmd, "setxattr") && argc == 5)
                return result(lsetxattr(argv[2], argv[3], argv[4], strlen(argv[4]), 0));
        if (!strcmp(cmd, "removexattr") && argc == 4)
                return result(lremovexattr(argv[2], argv[3]));
        if (!strcmp(cmd, "getxattr") && argc == 4) {
                char buf[4096];
                ssize_t k = lgetxattr(argv[2], argv[3], buf, sizeof(buf) - 1);
                if (k < 0)
                        return result(-1);
                buf[k] = 0;
                printf("%s\n", buf);
                return 0;
        }
        if (!strcmp(cmd, "listxattr")) {
                char buf[65536];
                ssize_t k = llistxattr(argv[2], buf, sizeof(buf));
                if (k < 0)
                        return result(-1);
                for (ssize_t i = 0; i < k; i += (ssize_t)strlen(buf + i) + 1)
                        printf("%s\n", buf + i);
                return 0;
        }
        if (!strcmp(cmd, "write") && argc == 5) {
                size_t len = (size_t)atoll(argv[4]);
                char *buf = malloc(len ? len : 1);
                int fd = open(argv[2], O_WRONLY | O_CLOEXEC);
                ssize_t k;
                for (size_t i = 0; i < len; i++)
                        buf[i] = (char)('a' + i % 26);
                if (fd < 0) {
                        free(buf);
                        return result(-1);
                }
                k = pwrite(fd, buf, len, atoll(argv[3]));
                free(buf);
                if (k < 0)
                        return result(-1);
                printf("%zd\n", k);
                return close(fd) < 0 ? result(-1) : 0;
        }
        if (!strcmp(cmd, "fill") && argc == 4) {
                size_t chunk = (size_t)atoll(argv[3]);
                char *buf = calloc(1, chunk);
                long long total = 0;
                int fd = open(argv[2], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644), e = 0;
                if (fd < 0 || !buf) {
                        free(buf);
                        return result(-1);
                }
                memset(buf, 'q', chunk);
                for (;;) {
                        ssize_t k = write(fd, buf, chunk);
                        if (k < 0) {
                                e = errno;
                                break;
                        }
                        total += k;
                }
                close(fd);
                free(buf);
                printf("%lld %s\n", total, strerrorname_np(e) ? strerrorname_np(e) : "E?");
                return 0;
        }
        if (!strcmp(cmd, "statfs")) {
                struct statvfs sv;
                if (statvfs(argv[2], &sv) < 0)
                        return result(-1);
                printf("%llu %llu\n", (unsigned long long)sv.f_bavail * sv.f_bsize,
                       (unsigned long long)sv.f_favail);
                return 0;
        }
        if (!strcmp(cmd, "readrace") && argc == 4)
                return read_race(argv[2], argv[3]);
        if (!strcmp(cmd, "fsdiff") && argc == 6)
                return fsdiff_main(argv[2], argv[3], (unsigned)atoi(argv[4]),
                                   (unsigned)atoi(argv[5]));
        fprintf(stderr, "fsprobe: unknown command or arguments\n");
        return 2;
}
