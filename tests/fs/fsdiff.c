/* SPDX-License-Identifier: MIT */
/*
 * fsdiff.c: the seeded randomized differential test. The same random
 * operations run on tree A (the mount) and tree B (a plain copy on the host
 * filesystem, e.g. ext4); every operation must give the same result (0 or
 * the same errno), and every 25 operations and at the end the two trees
 * must match: names, types, permission bits, sizes, contents, symlink
 * targets, link counts and user.* xattrs. A top-level .git in A is not
 * compared (the mount synthesizes one). Reproducible: same seed, same run.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

int fsdiff_main(const char *a, const char *b, unsigned seed, unsigned count);

static uint64_t rng;
static unsigned rnd(unsigned n)
{
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        return n ? (unsigned)(rng % n) : 0;
}

#define MAXP 4096
static char *paths[MAXP], *dirs[MAXP];
static size_t n_paths, n_dirs;
static const char *root_a, *root_b;
static char log_lines[32][512];
static unsigned log_n;

static void logop(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logop(const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(log_lines[log_n % 32], 512, fmt, ap);
        va_end(ap);
        if (getenv("FSDIFF_TRACE")) /* every operation, as it is logged */
                fprintf(stderr, "  %u: %s\n", log_n, log_lines[log_n % 32]);
        log_n++;
}

static void dump_log(void)
{
        unsigned start = log_n > 32 ? log_n - 32 : 0;
        fprintf(stderr, "last operations:\n");
        for (unsigned i = start; i < log_n; i++)
                fprintf(stderr, "  %u: %s\n", i, log_lines[i % 32]);
}

static void collect(const char *root, const char *rel)
{
        char full[8192];
        DIR *d;
        struct dirent *de;
        snprintf(full, sizeof(full), "%s/%s", root, rel);
        d = opendir(full);
        if (!d)
                return;
        while ((de = readdir(d))) {
                char p[4096];
                struct stat st;
                if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                        continue;
                if (!*rel && !strcmp(de->d_name, ".git"))
                        continue;
                snprintf(p, sizeof(p), "%s%s%s", rel, *rel ? "/" : "", de->d_name);
                snprintf(full, sizeof(full), "%s/%s", root, p);
                if (lstat(full, &st) < 0 || n_paths >= MAXP)
                        continue;
                paths[n_paths++] = strdup(p);
                if (S_ISDIR(st.st_mode) && n_dirs < MAXP) {
                        dirs[n_dirs++] = strdup(p);
                        collect(root, p);
                }
        }
        closedir(d);
}

static void refresh(void)
{
        for (size_t i = 0; i < n_paths; i++)
                free(paths[i]);
        for (size_t i = 0; i < n_dirs; i++)
                free(dirs[i]);
        n_paths = n_dirs = 0;
        dirs[n_dirs++] = strdup("");
        collect(root_b, "");
}

static const char *names[] = {"a", "b", "c", "f.txt", "d1", ".wh.a", ".cloister~x", "x y"};

/* A random path: an existing one, or a new name in an existing dir. */
static void pick(char *out, size_t size, bool existing)
{
        if (existing && n_paths > 0 && rnd(4) != 0) {
                snprintf(out, size, "%s", paths[rnd((unsigned)n_paths)]);
                return;
        }
        {
                const char *d = dirs[rnd((unsigned)n_dirs)];
                snprintf(out, size, "%s%s%s", d, *d ? "/" : "",
                         names[rnd(sizeof(names) / sizeof(names[0]))]);
        }
}

static int both(const char *rel, char *fa, char *fb)
{
        snprintf(fa, 8192, "%s/%s", root_a, rel);
        snprintf(fb, 8192, "%s/%s", root_b, rel);
        return 0;
}

static int err_of(int r)
{
        return r < 0 ? errno : 0;
}

static uint64_t hash_file(const char *p, int *err)
{
        uint64_t h = 0xcbf29ce484222325ULL;
        char buf[65536];
        ssize_t k;
        int fd = open(p, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
        *err = 0;
        if (fd < 0) {
                *err = errno;
                return 0;
        }
        while ((k = read(fd, buf, sizeof(buf))) > 0)
                for (ssize_t i = 0; i < k; i++)
                        h = (h ^ (unsigned char)buf[i]) * 0x100000001b3ULL;
        if (k < 0)
                *err = errno;
        close(fd);
        return h;
}

static int compare_entry(const char *rel)
{
        char fa[8192], fb[8192];
        struct stat sa, sb;
        both(rel, fa, fb);
        if (lstat(fa, &sa) < 0 || lstat(fb, &sb) < 0) {
                fprintf(stderr, "MISMATCH %s: lstat A=%d B=%d\n", rel, err_of(lstat(fa, &sa)),
                        err_of(lstat(fb, &sb)));
                return 1;
        }
        if ((sa.st_mode & S_IFMT) != (sb.st_mode & S_IFMT) ||
            (sa.st_mode & 07777) != (sb.st_mode & 07777)) {
                fprintf(stderr, "MISMATCH %s: mode A=%o B=%o\n", rel, sa.st_mode, sb.st_mode);
                return 1;
        }
        if (sa.st_nlink != sb.st_nlink) {
                fprintf(stderr, "MISMATCH %s: nlink A=%lu B=%lu\n", rel, (unsigned long)sa.st_nlink,
                        (unsigned long)sb.st_nlink);
                return 1;
        }
        if (S_ISREG(sa.st_mode)) {
                int ea, eb;
                uint64_t ha = hash_file(fa, &ea), hb = hash_file(fb, &eb);
                if (sa.st_size != sb.st_size || ha != hb || ea != eb) {
                        fprintf(stderr, "MISMATCH %s: size A=%lld B=%lld hash %s\n", rel,
                                (long long)sa.st_size, (long long)sb.st_size,
                                ha == hb ? "same" : "differs");
                        return 1;
                }
        }
        if (S_ISLNK(sa.st_mode)) {
                char la[4096] = "", lb[4096] = "";
                (void)!readlink(fa, la, sizeof(la) - 1);
                (void)!readlink(fb, lb, sizeof(lb) - 1);
                if (strcmp(la, lb)) {
                        fprintf(stderr, "MISMATCH %s: link A=%s B=%s\n", rel, la, lb);
                        return 1;
                }
        }
        if (S_ISREG(sa.st_mode) || S_ISDIR(sa.st_mode)) {
                char xa[4096] = "", xb[4096] = "";
                ssize_t ka = llistxattr(fa, xa, sizeof(xa)), kb = llistxattr(fb, xb, sizeof(xb));
                /* Only user.* is compared: the host may add security.* on B. */
                size_t ua = 0, ub = 0;
                for (ssize_t i = 0; ka > 0 && i < ka; i += (ssize_t)strlen(xa + i) + 1)
                        if (!strncmp(xa + i, "user.", 5))
                                ua++;
                for (ssize_t i = 0; kb > 0 && i < kb; i += (ssize_t)strlen(xb + i) + 1)
                        if (!strncmp(xb + i, "user.", 5))
                                ub++;
                if (ua != ub) {
                        fprintf(stderr, "MISMATCH %s: %zu vs %zu user xattrs\n", rel, ua, ub);
                        return 1;
                }
        }
        return 0;
}

static int cmp_names(const void *x, const void *y)
{
        return strcmp(*(char *const *)x, *(char *const *)y);
}

static int compare_dir(const char *rel)
{
        char fa[8192], fb[8192];
        char *la[MAXP], *lb[MAXP];
        size_t na = 0, nb = 0;
        int bad = 0;
        both(rel, fa, fb);
        for (int side = 0; side < 2; side++) {
                DIR *d = opendir(side ? fb : fa);
                struct dirent *de;
                char **l = side ? lb : la;
                size_t *n = side ? &nb : &na;
                if (!d) {
                        fprintf(stderr, "MISMATCH %s: opendir %s failed: %s\n", rel,
                                side ? "B" : "A", strerror(errno));
                        return 1;
                }
                while ((de = readdir(d)) && *n < MAXP) {
                        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                                continue;
                        if (!*rel && !strcmp(de->d_name, ".git"))
                                continue;
                        l[(*n)++] = strdup(de->d_name);
                }
                closedir(d);
                qsort(l, *n, sizeof(char *), cmp_names);
        }
        if (na != nb) {
                fprintf(stderr, "MISMATCH %s: %zu entries in A, %zu in B\n", rel, na, nb);
                bad = 1;
        }
        for (size_t i = 0; !bad && i < na; i++) {
                char p[4096];
                struct stat st;
                if (strcmp(la[i], lb[i])) {
                        fprintf(stderr, "MISMATCH %s: entry A=%s B=%s\n", rel, la[i], lb[i]);
                        bad = 1;
                        break;
                }
                snprintf(p, sizeof(p), "%s%s%s", rel, *rel ? "/" : "", la[i]);
                bad = compare_entry(p);
                both(p, fa, fb);
                if (!bad && lstat(fb, &st) == 0 && S_ISDIR(st.st_mode))
                        bad = compare_dir(p);
        }
        for (size_t i = 0; i < na; i++)
                free(la[i]);
        for (size_t i = 0; i < nb; i++)
                free(lb[i]);
        return bad;
}

static void fill(char *buf, size_t len)
{
        for (size_t i = 0; i < len; i++)
                buf[i] = (char)rnd(256);
}

/* One random operation on both trees; returns 1 on a mismatch. */
static int step(unsigned i)
{
        char p1[4096], p2[4096], a1[8192], b1[8192], a2[8192], b2[8192];
        int ea = 0, eb = 0;
        unsigned op = rnd(14);
        if (getenv("FSDIFF_TRACE"))
                fprintf(stderr, "op %u\n", i);
        pick(p1, sizeof(p1), op != 0 && op != 4 && op != 7 && op != 11);
        pick(p2, sizeof(p2), rnd(2));
        both(p1, a1, b1);
        both(p2, a2, b2);
        switch (op) {
        case 0:
        case 1: {
                int fl = O_WRONLY | O_NONBLOCK | (op == 0 ? O_CREAT : 0) |
                         (rnd(4) == 0 ? O_EXCL : 0) | (rnd(4) == 0 ? O_TRUNC : 0) |
                         (rnd(4) == 0 ? O_APPEND : 0);
                size_t len = rnd(6000);
                off_t off = rnd(9000);
                char *buf = malloc(len + 1);
                int fa = open(a1, fl, 0644), fb;
                ea = err_of(fa);
                fb = open(b1, fl, 0644);
                eb = err_of(fb);
                fill(buf, len);
                logop("open+write %s flags=%#x len=%zu off=%lld -> %d/%d", p1, fl, len,
                      (long long)off, ea, eb);
                if (fa >= 0 && fb >= 0) {
                        ssize_t ka =
                                (fl & O_APPEND) ? write(fa, buf, len) : pwrite(fa, buf, len, off);
                        ssize_t kb =
                                (fl & O_APPEND) ? write(fb, buf, len) : pwrite(fb, buf, len, off);
                        if (ka != kb) {
                                fprintf(stderr, "MISMATCH op %u: write %zd vs %zd\n", i, ka, kb);
                                ea = -1;
                        }
                }
                if (fa >= 0)
                        close(fa);
                if (fb >= 0)
                        close(fb);
                free(buf);
                break;
        }
        case 2: {
                off_t sz = rnd(4) == 0 ? 0 : rnd(12000);
                ea = err_of(truncate(a1, sz));
                eb = err_of(truncate(b1, sz));
                logop("truncate %s %lld -> %d/%d", p1, (long long)sz, ea, eb);
                break;
        }
        case 3:
                ea = err_of(unlink(a1));
                eb = err_of(unlink(b1));
                logop("unlink %s -> %d/%d", p1, ea, eb);
                break;
        case 4:
                ea = err_of(mkdir(a1, 0755));
                eb = err_of(mkdir(b1, 0755));
                logop("mkdir %s -> %d/%d", p1, ea, eb);
                break;
        case 5:
                ea = err_of(rmdir(a1));
                eb = err_of(rmdir(b1));
                logop("rmdir %s -> %d/%d", p1, ea, eb);
                break;
        case 6: {
                unsigned fl = rnd(3) == 0 ? RENAME_NOREPLACE : rnd(3) == 0 ? RENAME_EXCHANGE : 0;
                ea = err_of(renameat2(AT_FDCWD, a1, AT_FDCWD, a2, fl));
                eb = err_of(renameat2(AT_FDCWD, b1, AT_FDCWD, b2, fl));
                logop("rename %s %s flags=%u -> %d/%d", p1, p2, fl, ea, eb);
                break;
        }
        case 7: {
                char t[32];
                snprintf(t, sizeof(t), "target-%u", rnd(100));
                ea = err_of(symlink(t, a1));
                eb = err_of(symlink(t, b1));
                logop("symlink %s %s -> %d/%d", t, p1, ea, eb);
                break;
        }
        case 8:
                ea = err_of(link(a1, a2));
                eb = err_of(link(b1, b2));
                logop("link %s %s -> %d/%d", p1, p2, ea, eb);
                break;
        case 9: {
                static const mode_t modes[] = {0600, 0644, 0755, 0700, 0444, 0750};
                mode_t m = modes[rnd(6)];
                ea = err_of(chmod(a1, m));
                eb = err_of(chmod(b1, m));
                logop("chmod %s %o -> %d/%d", p1, m, ea, eb);
                break;
        }
        case 10: {
                char v[16];
                snprintf(v, sizeof(v), "v%u", rnd(10));
                if (rnd(3)) {
                        ea = err_of(lsetxattr(a1, "user.k", v, strlen(v), 0));
                        eb = err_of(lsetxattr(b1, "user.k", v, strlen(v), 0));
                        logop("setxattr %s -> %d/%d", p1, ea, eb);
                } else {
                        ea = err_of(lremovexattr(a1, "user.k"));
                        eb = err_of(lremovexattr(b1, "user.k"));
                        logop("removexattr %s -> %d/%d", p1, ea, eb);
                }
                break;
        }
        case 11:
                ea = err_of(mkfifo(a1, 0644));
                eb = err_of(mkfifo(b1, 0644));
                logop("mkfifo %s -> %d/%d", p1, ea, eb);
                break;
        case 12: {
                struct stat st;
                if (lstat(b1, &st) == 0 && S_ISREG(st.st_mode)) {
                        int xa, xb;
                        uint64_t ha = hash_file(a1, &xa), hb = hash_file(b1, &xb);
                        logop("read %s", p1);
                        if (ha != hb || xa != xb) {
                                fprintf(stderr, "MISMATCH op %u: read %s differs\n", i, p1);
                                ea = -1;
                        }
                }
                break;
        }
        default: {
                struct timespec ts[2] = {{.tv_sec = 1600000000 + rnd(1000)},
                                         {.tv_sec = 1600000000 + rnd(1000)}};
                struct stat sa, sb;
                ea = err_of(utimensat(AT_FDCWD, a1, ts, AT_SYMLINK_NOFOLLOW));
                eb = err_of(utimensat(AT_FDCWD, b1, ts, AT_SYMLINK_NOFOLLOW));
                logop("utimens %s -> %d/%d", p1, ea, eb);
                if (ea == 0 && eb == 0 && lstat(a1, &sa) == 0 && lstat(b1, &sb) == 0 &&
                    sa.st_mtime != sb.st_mtime) {
                        fprintf(stderr, "MISMATCH op %u: mtime %lld vs %lld\n", i,
                                (long long)sa.st_mtime, (long long)sb.st_mtime);
                        ea = -1;
                }
                break;
        }
        }
        if (ea != eb) {
                fprintf(stderr, "MISMATCH op %u: results A=%s B=%s\n", i,
                        ea > 0 ? strerrorname_np(ea)
                        : ea   ? "compare"
                               : "OK",
                        eb > 0 ? strerrorname_np(eb) : "OK");
                return 1;
        }
        return 0;
}

int fsdiff_main(const char *a, const char *b, unsigned seed, unsigned count)
{
        rng = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)seed * 0x100000001b3ULL);
        root_a = a;
        root_b = b;
        if (compare_dir("")) {
                fprintf(stderr, "trees differ before any operation\n");
                return 1;
        }
        for (unsigned i = 0; i < count; i++) {
                refresh();
                if (step(i) || (i % 25 == 24 && compare_dir(""))) {
                        dump_log();
                        printf("FAIL at op %u (seed %u)\n", i, seed);
                        return 1;
                }
        }
        if (compare_dir("")) {
                dump_log();
                printf("FAIL at the end (seed %u)\n", seed);
                return 1;
        }
        printf("OK %u operations (seed %u)\n", count, seed);
        return 0;
}
