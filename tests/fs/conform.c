/* SPDX-License-Identifier: MIT */
/*
 * conform.c: a POSIX conformance probe. `conform DIR` runs a fixed battery
 * of checks in DIR (as root) and prints one line per check, "NAME RESULT",
 * where RESULT says only what any correct local filesystem must answer
 * (errno names, modes, types, link counts, owners, whether a time moved),
 * never an inode number or a clock value. conform.sh runs it on a plain
 * host directory and on the mount (in /workspace, the hidden home and a
 * directory from the git tree) and compares line by line: each line is a
 * TAP test.
 *
 * DIR must hold pre/ (see make_pre in conform.sh: file..file7, exe, exe2,
 * dir/inner..dir5/inner, link), which in the mount comes from the lower layer, so the checks on
 * pre/ exercise copy-up. Everything else is made here, with fixed names.
 *
 * `conform DIR dump` prints the lasting attributes of everything under DIR
 * (for the remount checks).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define NOBODY    65534
#define OTHER     65533
#define THIRD     65532
#define SGROUP    4242
#define MIN(a, b) ((a) < (b) ? (a) : (b))

static const char *ename(int e)
{
        const char *s = e ? strerrorname_np(e) : "OK";
        return s ? s : "E?";
}

static void say(const char *name, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const char *name, const char *fmt, ...)
{
        va_list ap;
        printf("%s ", name);
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        putchar('\n');
        fflush(stdout);
}

/* 0 or the errno of a -1 return. */
static int rc(long r)
{
        return r < 0 ? errno : 0;
}

static void res(const char *name, long r)
{
        say(name, "%s", ename(rc(r)));
}

/* A read's result and data, on one line. */
static void say_read(const char *name, ssize_t k, const char *buf)
{
        char out[128];
        size_t o = 0;
        for (ssize_t i = 0; i < k && o < sizeof(out) - 3; i++) {
                unsigned char c = (unsigned char)buf[i];
                if (c >= 0x21 && c < 0x7f) {
                        out[o++] = (char)c;
                } else {
                        o += (size_t)snprintf(out + o, sizeof(out) - o, "\\x%02x", c);
                }
        }
        out[MIN(o, sizeof(out) - 1)] = 0;
        if (k < 0)
                say(name, "%s", ename(errno));
        else
                say(name, "%zd %s", k, out);
}

/* Let coarse clocks move, so that "did this time change" has an answer. */
static void tick(void)
{
        nanosleep(&(struct timespec){.tv_nsec = 20 * 1000 * 1000}, NULL);
}

static char type_char(mode_t m)
{
        return S_ISREG(m)    ? 'f'
               : S_ISDIR(m)  ? 'd'
               : S_ISLNK(m)  ? 'l'
               : S_ISFIFO(m) ? 'p'
               : S_ISSOCK(m) ? 's'
               : S_ISCHR(m)  ? 'c'
               : S_ISBLK(m)  ? 'b'
                             : '?';
}

/* type, mode, links, owner, size (files), rdev (devices) of a path, or its errno */
static void desc_st(char *buf, size_t len, const struct stat *st)
{
        int n = snprintf(buf, len, "%c %04o n%lu %u:%u", type_char(st->st_mode),
                         (unsigned)(st->st_mode & 07777), (unsigned long)st->st_nlink,
                         (unsigned)st->st_uid, (unsigned)st->st_gid);
        if (S_ISREG(st->st_mode))
                snprintf(buf + n, len - (size_t)n, " s%lld", (long long)st->st_size);
        else if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
                snprintf(buf + n, len - (size_t)n, " %u:%u", major(st->st_rdev),
                         minor(st->st_rdev));
}

static void st(const char *name, const char *path)
{
        struct stat sb;
        char buf[128];
        if (lstat(path, &sb) < 0) {
                say(name, "%s", ename(errno));
                return;
        }
        desc_st(buf, sizeof(buf), &sb);
        say(name, "%s", buf);
}

static void fst(const char *name, int fd)
{
        struct stat sb;
        char buf[128];
        if (fstat(fd, &sb) < 0) {
                say(name, "%s", ename(errno));
                return;
        }
        desc_st(buf, sizeof(buf), &sb);
        say(name, "%s", buf);
}

static int mkfile(const char *path, mode_t mode, const char *data)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        if (fd < 0)
                return -1;
        if (data && write(fd, data, strlen(data)) != (ssize_t)strlen(data)) {
                close(fd);
                return -1;
        }
        return close(fd);
}

static int mksock(const char *path)
{
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), r;
        if (s < 0 || strlen(path) >= sizeof(a.sun_path))
                return -1;
        strcpy(a.sun_path, path);
        r = bind(s, (struct sockaddr *)&a, sizeof(a));
        close(s);
        return r;
}

/* Make path of type t: f d l p s c b. */
static int make(char t, const char *path)
{
        switch (t) {
        case 'f':
                return mkfile(path, 0644, "data");
        case 'd':
                return mkdir(path, 0755);
        case 'l':
                return symlink("target", path);
        case 'p':
                return mkfifo(path, 0644);
        case 's':
                return mksock(path);
        case 'c':
                return mknod(path, S_IFCHR | 0644, makedev(1, 3));
        case 'b':
                return mknod(path, S_IFBLK | 0600, makedev(8, 1));
        }
        errno = EINVAL;
        return -1;
}

static const char *typename(char t)
{
        switch (t) {
        case 'f':
                return "file";
        case 'd':
                return "dir";
        case 'l':
                return "symlink";
        case 'p':
                return "fifo";
        case 's':
                return "socket";
        case 'c':
                return "chr";
        case 'b':
                return "blk";
        }
        return "?";
}

static const char TYPES[] = "fdlpscb";

/* ---- as another user: fork, drop to uid/gid, run one operation ---- */

enum op {
        OP_CREATE,
        OP_UNLINK,
        OP_RENAME,
        OP_WRITE,
        OP_TRUNCATE,
        OP_CHOWN,
        OP_CREATE_MODE,
};

static int as(uid_t uid, gid_t gid, enum op op, const char *a, const char *b, long x, long y)
{
        pid_t pid = fork();
        int status;
        if (pid < 0)
                return errno;
        if (pid == 0) {
                int fd, e = 0;
                if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
                    setresuid(uid, uid, uid) < 0)
                        _exit(255);
                switch (op) {
                case OP_CREATE:
                        e = rc(mkfile(a, 0644, NULL));
                        break;
                case OP_CREATE_MODE:
                        e = rc(mkfile(a, (mode_t)x, NULL));
                        break;
                case OP_UNLINK:
                        e = rc(unlink(a));
                        break;
                case OP_RENAME:
                        e = rc(rename(a, b));
                        break;
                case OP_WRITE:
                        fd = open(a, O_WRONLY | O_CLOEXEC);
                        e = fd < 0 ? errno : rc(pwrite(fd, "x", 1, 0));
                        if (fd >= 0)
                                close(fd);
                        break;
                case OP_TRUNCATE:
                        e = rc(truncate(a, x));
                        break;
                case OP_CHOWN:
                        e = rc(lchown(a, (uid_t)x, (gid_t)y));
                        break;
                }
                _exit(e);
        }
        if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
                return EINTR;
        return WEXITSTATUS(status);
}

static void res_as(const char *name, int e)
{
        say(name, "%s", e == 255 ? "cannot-drop-privileges" : ename(e));
}

/* ---- times ---- */

struct times {
        struct timespec m, c;
        int err;
};

static struct times times_of(const char *path)
{
        struct stat sb;
        struct times t = {0};
        if (lstat(path, &sb) < 0)
                t.err = errno;
        t.m = sb.st_mtim;
        t.c = sb.st_ctim;
        return t;
}

static int ts_cmp(struct timespec a, struct timespec b)
{
        if (a.tv_sec != b.tv_sec)
                return a.tv_sec < b.tv_sec ? -1 : 1;
        return a.tv_nsec < b.tv_nsec ? -1 : a.tv_nsec > b.tv_nsec;
}

/* "m+ c+": which of mtime and ctime moved forward since `before`. */
static void moved(const char *name, const char *path, struct times before)
{
        struct times now = times_of(path);
        if (before.err || now.err) {
                say(name, "%s", ename(before.err ? before.err : now.err));
                return;
        }
        say(name, "m%c c%c",
            ts_cmp(now.m, before.m) > 0 ? '+'
            : ts_cmp(now.m, before.m)   ? '-'
                                        : '=',
            ts_cmp(now.c, before.c) > 0 ? '+'
            : ts_cmp(now.c, before.c)   ? '-'
                                        : '=');
}

/* ---- sections ---- */

static void modes(void)
{
        umask(0);
        res("mode_mkdir_0777", mkdir("m_d777", 0777));
        st("mode_mkdir_0777_stat", "m_d777");
        res("mode_mkdir_01777", mkdir("m_d1777", 01777));
        st("mode_mkdir_01777_stat", "m_d1777");
        res("mode_mkdir_02755", mkdir("m_d2755", 02755));
        st("mode_mkdir_02755_stat", "m_d2755");
        res("mode_create_0620", mkfile("m_f620", 0620, NULL));
        st("mode_create_0620_stat", "m_f620");
        res("mode_create_0000", mkfile("m_f000", 0, NULL));
        st("mode_create_0000_stat", "m_f000");
        res("mode_create_04755", mkfile("m_f4755", 04755, NULL));
        st("mode_create_04755_stat", "m_f4755");
        res("mode_create_06777", mkfile("m_f6777", 06777, NULL));
        st("mode_create_06777_stat", "m_f6777");
        res("mode_create_01644", mkfile("m_f1644", 01644, NULL));
        st("mode_create_01644_stat", "m_f1644");
        res("mode_mkfifo_0666", mkfifo("m_p666", 0666));
        st("mode_mkfifo_0666_stat", "m_p666");
        res("mode_mknod_reg_0640", mknod("m_r640", S_IFREG | 0640, 0));
        st("mode_mknod_reg_0640_stat", "m_r640");
        res("mode_bind_socket", mksock("m_sock"));
        st("mode_bind_socket_stat", "m_sock");
        res("mode_mknod_chr_0640", mknod("m_c640", S_IFCHR | 0640, makedev(1, 3)));
        st("mode_mknod_chr_0640_stat", "m_c640");
        res("mode_mknod_blk_04660", mknod("m_b4660", S_IFBLK | 04660, makedev(8, 17)));
        st("mode_mknod_blk_04660_stat", "m_b4660");
        umask(022);
        res("mode_umask022_mkdir", mkdir("m_u_d", 0777));
        st("mode_umask022_mkdir_stat", "m_u_d");
        res("mode_umask022_create", mkfile("m_u_f", 0666, NULL));
        st("mode_umask022_create_stat", "m_u_f");
        res("mode_umask022_bind_socket", mksock("m_u_sock"));
        st("mode_umask022_bind_socket_stat", "m_u_sock");
        umask(0);
        /* What a wrong daemon umask broke next: an unprivileged rename in a 0777 dir. */
        res_as("mode_unprivileged_create_in_0777_dir",
               as(NOBODY, NOBODY, OP_CREATE, "m_d777/x", NULL, 0, 0));
        res_as("mode_unprivileged_rename_in_0777_dir",
               as(NOBODY, NOBODY, OP_RENAME, "m_d777/x", "m_d777/y", 0, 0));
}

/* chmod, chown, utimens and truncate on every type, none of them opened. */
static void setattr_types(void)
{
        char p[64], n[96];
        for (const char *t = TYPES; *t; t++) {
                const char *tn = typename(*t);
                struct times before;
                struct stat sb;
                snprintf(p, sizeof(p), "sa_%s", tn);
                snprintf(n, sizeof(n), "setattr_make_%s", tn);
                res(n, make(*t, p));
                before = times_of(p);
                tick();
                snprintf(n, sizeof(n), "setattr_chmod_%s", tn);
                res(n, fchmodat(AT_FDCWD, p, 0610, AT_SYMLINK_NOFOLLOW));
                snprintf(n, sizeof(n), "setattr_chmod_%s_ctime", tn);
                moved(n, p, before);
                before = times_of(p);
                tick();
                snprintf(n, sizeof(n), "setattr_chown_%s", tn);
                res(n, lchown(p, 1234, 5678));
                snprintf(n, sizeof(n), "setattr_chown_%s_ctime", tn);
                moved(n, p, before);
                snprintf(n, sizeof(n), "setattr_utimens_%s", tn);
                res(n, utimensat(AT_FDCWD, p,
                                 (struct timespec[]){{.tv_sec = 1000, .tv_nsec = 5},
                                                     {.tv_sec = 2000, .tv_nsec = 7}},
                                 AT_SYMLINK_NOFOLLOW));
                snprintf(n, sizeof(n), "setattr_utimens_%s_times", tn);
                if (lstat(p, &sb) == 0)
                        say(n, "%lld.%ld %lld.%ld", (long long)sb.st_atim.tv_sec,
                            sb.st_atim.tv_nsec, (long long)sb.st_mtim.tv_sec, sb.st_mtim.tv_nsec);
                else
                        say(n, "%s", ename(errno));
                if (*t != 'l') {
                        snprintf(n, sizeof(n), "setattr_truncate_%s", tn);
                        res(n, truncate(p, 0));
                        snprintf(n, sizeof(n), "setattr_chmod_follow_%s", tn);
                        res(n, chmod(p, 0640));
                }
                snprintf(n, sizeof(n), "setattr_%s_stat", tn);
                st(n, p);
        }
        /* A symlink's target is untouched by the calls on the link. */
        res("setattr_symlink_target_make", mkfile("target", 0644, NULL));
        res("setattr_chmod_through_symlink", chmod("sa_symlink", 0600));
        st("setattr_chmod_through_symlink_target", "target");
        st("setattr_chmod_through_symlink_link", "sa_symlink");
}

static void unlinked(void)
{
        char buf[64] = {0};
        int fd, dfd;
        struct stat sb;

        res("unl_file_make", mkfile("u_f", 0644, "hello"));
        fd = open("u_f", O_RDWR | O_CLOEXEC);
        res("unl_file_open", fd);
        res("unl_file_unlink", unlink("u_f"));
        fst("unl_file_fstat", fd);
        say_read("unl_file_read", pread(fd, buf, sizeof(buf), 0), buf);
        res("unl_file_write", pwrite(fd, " world", 6, 5));
        fst("unl_file_fstat_after_write", fd);
        memset(buf, 0, sizeof(buf));
        say_read("unl_file_read_after_write", pread(fd, buf, sizeof(buf), 0), buf);
        res("unl_file_ftruncate", ftruncate(fd, 3));
        res("unl_file_fchmod", fchmod(fd, 0600));
        res("unl_file_fchown", fchown(fd, 77, 78));
        res("unl_file_futimens", futimens(fd, (struct timespec[]){{.tv_sec = 5}, {.tv_sec = 6}}));
        fst("unl_file_fstat_after_setattr", fd);
        if (fstat(fd, &sb) == 0)
                say("unl_file_mtime_after_futimens", "%lld", (long long)sb.st_mtime);
        res("unl_file_name_is_gone", access("u_f", F_OK));
        close(fd);

        res("unl_dir_make", mkdir("u_d", 0755));
        dfd = open("u_d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        res("unl_dir_open", dfd);
        res("unl_dir_rmdir", rmdir("u_d"));
        fst("unl_dir_fstat", dfd);
        {
                DIR *d = fdopendir(dup(dfd));
                int count = 0;
                while (d && readdir(d))
                        count++;
                say("unl_dir_readdir_entries", "%d", count);
                if (d)
                        closedir(d);
        }
        res("unl_dir_fchmod", fchmod(dfd, 0700));
        fst("unl_dir_fstat_after_fchmod", dfd);
        res("unl_dir_create_inside", openat(dfd, "x", O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
        close(dfd);

        res("unl_renamed_over_make_old", mkfile("u_old", 0644, "old"));
        res("unl_renamed_over_make_new", mkfile("u_new", 0600, "newer"));
        fd = open("u_old", O_RDONLY | O_CLOEXEC);
        res("unl_renamed_over_rename", rename("u_new", "u_old"));
        fst("unl_renamed_over_fstat", fd);
        memset(buf, 0, sizeof(buf));
        say_read("unl_renamed_over_read", pread(fd, buf, sizeof(buf), 0), buf);
        st("unl_renamed_over_name", "u_old");
        close(fd);

        /* Entries that came with the tree (the lower layer in the mount). */
        fd = open("pre/file", O_RDONLY | O_CLOEXEC);
        res("unl_pre_open_rdonly", fd);
        res("unl_pre_unlink", unlink("pre/file"));
        fst("unl_pre_fstat", fd);
        memset(buf, 0, sizeof(buf));
        say_read("unl_pre_read", pread(fd, buf, sizeof(buf), 0), buf);
        close(fd);
        fd = open("pre/file7", O_RDONLY | O_CLOEXEC);
        res("unl_pre_setattr_open", fd);
        res("unl_pre_setattr_unlink", unlink("pre/file7"));
        res("unl_pre_setattr_fchmod", fchmod(fd, 0604));
        res("unl_pre_setattr_fchown", fchown(fd, 91, 92));
        res("unl_pre_setattr_futimens",
            futimens(fd, (struct timespec[]){{.tv_sec = 15}, {.tv_sec = 16}}));
        fst("unl_pre_setattr_fstat", fd);
        memset(buf, 0, sizeof(buf));
        say_read("unl_pre_setattr_read", pread(fd, buf, sizeof(buf), 0), buf);
        res("unl_pre_setattr_name_is_gone", access("pre/file7", F_OK));
        close(fd);
        res("unl_pre_dir_empty_it", unlink("pre/dir5/inner"));
        dfd = open("pre/dir5", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        res("unl_pre_dir_open", dfd);
        res("unl_pre_dir_rmdir", rmdir("pre/dir5"));
        fst("unl_pre_dir_fstat", dfd);
        res("unl_pre_dir_fchmod", fchmod(dfd, 0711));
        fst("unl_pre_dir_fstat_after_fchmod", dfd);
        res("unl_pre_dir_name_is_gone", access("pre/dir5", F_OK));
        close(dfd);
        fd = open("pre/file2", O_RDWR | O_CLOEXEC);
        res("unl_pre_open_rdwr", fd);
        res("unl_pre_rdwr_unlink", unlink("pre/file2"));
        res("unl_pre_rdwr_write", pwrite(fd, "XY", 2, 1));
        memset(buf, 0, sizeof(buf));
        say_read("unl_pre_rdwr_read", pread(fd, buf, sizeof(buf), 0), buf);
        fst("unl_pre_rdwr_fstat", fd);
        close(fd);
        fd = open("pre/file3", O_RDONLY | O_CLOEXEC);
        res("unl_pre_renamed_over_make", mkfile("u_repl", 0644, "replacement"));
        res("unl_pre_renamed_over_rename", rename("u_repl", "pre/file3"));
        fst("unl_pre_renamed_over_fstat", fd);
        memset(buf, 0, sizeof(buf));
        say_read("unl_pre_renamed_over_read", pread(fd, buf, sizeof(buf), 0), buf);
        st("unl_pre_renamed_over_name", "pre/file3");
        close(fd);

        res("unl_hardlink_make", mkfile("u_h1", 0644, "hl"));
        res("unl_hardlink_link", link("u_h1", "u_h2"));
        fd = open("u_h1", O_RDONLY | O_CLOEXEC);
        res("unl_hardlink_unlink_first", unlink("u_h1"));
        fst("unl_hardlink_fstat_one_left", fd);
        res("unl_hardlink_unlink_second", unlink("u_h2"));
        fst("unl_hardlink_fstat_none_left", fd);
        close(fd);

        /* What Python's tempfile.TemporaryFile() does where O_TMPFILE fails. */
        fd = open(".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
        res("tmpfile_o_tmpfile", fd);
        if (fd < 0) {
                char tmpl[] = "u_tmpXXXXXX";
                fd = mkstemp(tmpl);
                if (fd >= 0)
                        unlink(tmpl);
        }
        res("tmpfile_fallback_open", fd);
        res("tmpfile_fallback_write", pwrite(fd, "temp", 4, 0));
        memset(buf, 0, sizeof(buf));
        say_read("tmpfile_fallback_read", pread(fd, buf, sizeof(buf), 0), buf);
        fst("tmpfile_fallback_fstat", fd);
        close(fd);
}

/* One thread keeps replacing and removing race.c; two open, fstat, read and stat it. */
static _Atomic bool race_stop;
static _Atomic unsigned race_bad[4][160];

static void *race_writer(void *arg)
{
        (void)arg;
        while (!race_stop) {
                (void)mkfile("race.tmp", 0644, "int main(void) { return 0; }\n");
                (void)rename("race.tmp", "race.c");
                (void)unlink("race.c");
        }
        return NULL;
}

static void race_note(int what, int e)
{
        if (e > 0 && e < 160 && e != ENOENT)
                race_bad[what][e]++;
}

static void *race_reader(void *arg)
{
        char buf[256];
        (void)arg;
        while (!race_stop) {
                struct stat sb;
                int fd = open("race.c", O_RDONLY | O_CLOEXEC);
                if (fd < 0) {
                        race_note(0, errno);
                } else {
                        if (fstat(fd, &sb) < 0)
                                race_note(1, errno);
                        if (read(fd, buf, sizeof(buf)) < 0)
                                race_note(2, errno);
                        close(fd);
                }
                if (stat("race.c", &sb) < 0)
                        race_note(3, errno);
        }
        return NULL;
}

static void race(unsigned seconds)
{
        static const char *what[] = {"open", "fstat", "read", "stat"};
        pthread_t w, r1, r2;
        char out[512] = "";
        size_t len = 0;

        pthread_create(&w, NULL, race_writer, NULL);
        pthread_create(&r1, NULL, race_reader, NULL);
        pthread_create(&r2, NULL, race_reader, NULL);
        sleep(seconds);
        race_stop = true;
        pthread_join(w, NULL);
        pthread_join(r1, NULL);
        pthread_join(r2, NULL);
        for (int i = 0; i < 4; i++)
                for (int e = 1; e < 160; e++)
                        if (race_bad[i][e] && len < sizeof(out) - 64)
                                len += (size_t)snprintf(out + len, sizeof(out) - len, " %s:%s",
                                                        what[i], ename(e));
        say("race_rename_unlink_readers_see_only_enoent", "%s", len ? out + 1 : "yes");
}

static void limits(void)
{
        int fd;
        res("efbig_make", mkfile("e_f", 0644, "x"));
        res("efbig_truncate_absurd", truncate("e_f", 999999999999999999LL));
        res("efbig_truncate_negative", truncate("e_f", -1));
        fd = open("e_f", O_RDWR | O_CLOEXEC);
        res("efbig_ftruncate_absurd", ftruncate(fd, 999999999999999999LL));
        res("efbig_pwrite_absurd_offset", pwrite(fd, "x", 1, 999999999999999999LL));
        res("efbig_fallocate_absurd", fallocate(fd, 0, 999999999999999999LL, 4096));
        close(fd);
        st("efbig_file_unchanged", "e_f");
        res("efbig_truncate_sparse_1g", truncate("e_f", 1LL << 30));
        st("efbig_truncate_sparse_1g_stat", "e_f");
        res("efbig_truncate_back", truncate("e_f", 1));
}

static void devices(void)
{
        struct stat a, b;
        struct times before;
        res("dev_mknod_chr", mknod("d_c", S_IFCHR | 0644, makedev(1, 3)));
        st("dev_mknod_chr_stat", "d_c");
        res("dev_mknod_blk", mknod("d_b", S_IFBLK | 0600, makedev(8, 1)));
        st("dev_mknod_blk_stat", "d_b");
        res("dev_mknod_chr_exists", mknod("d_c", S_IFCHR | 0644, makedev(1, 3)));
        res("dev_mkdir_listing", mkdir("d_list", 0755));
        (void)mknod("d_list/c", S_IFCHR | 0644, makedev(5, 1));
        (void)mknod("d_list/b", S_IFBLK | 0644, makedev(7, 0));
        (void)mkfifo("d_list/p", 0644);
        (void)mksock("d_list/s");
        (void)symlink("x", "d_list/l");
        (void)mkfile("d_list/f", 0644, NULL);
        (void)mkdir("d_list/d", 0755);
        {
                /* d_type of each one-letter name, in a fixed order */
                DIR *d = opendir("d_list");
                struct dirent *de;
                char types[16] = "";
                for (const char *o = "bcdflps"; d && *o; o++) {
                        char got = '-';
                        size_t l = strlen(types);
                        rewinddir(d);
                        while ((de = readdir(d)))
                                if (de->d_name[0] == *o && de->d_name[1] == 0)
                                        got = de->d_type == DT_CHR    ? 'c'
                                              : de->d_type == DT_BLK  ? 'b'
                                              : de->d_type == DT_DIR  ? 'd'
                                              : de->d_type == DT_REG  ? 'f'
                                              : de->d_type == DT_LNK  ? 'l'
                                              : de->d_type == DT_FIFO ? 'p'
                                              : de->d_type == DT_SOCK ? 's'
                                                                      : '?';
                        types[l] = got;
                        types[l + 1] = 0;
                }
                if (d)
                        closedir(d);
                say("dev_readdir_types_bcdflps", "%s", types);
        }
        res("dev_rename", rename("d_c", "d_c2"));
        st("dev_rename_stat", "d_c2");
        res("dev_link", link("d_c2", "d_c3"));
        st("dev_link_stat", "d_c3");
        say("dev_link_same_inode", "%s",
            lstat("d_c2", &a) == 0 && lstat("d_c3", &b) == 0 && a.st_ino == b.st_ino ? "yes"
                                                                                     : "no");
        before = times_of("d_c3");
        tick();
        res("dev_chmod", chmod("d_c2", 0640));
        st("dev_chmod_seen_through_other_link", "d_c3");
        moved("dev_chmod_ctime", "d_c3", before);
        res("dev_chmod_setuid", chmod("d_c2", 04640));
        st("dev_chmod_setuid_stat", "d_c3");
        res("dev_chown", lchown("d_c2", 42, 43));
        st("dev_chown_stat", "d_c3");
        res("dev_unlink_one_link", unlink("d_c2"));
        st("dev_unlink_one_link_stat", "d_c3");
        res("dev_rename_over_file_make", mkfile("d_f", 0644, "f"));
        res("dev_rename_over_file", rename("d_c3", "d_f"));
        st("dev_rename_over_file_stat", "d_f");
        res("dev_rename_file_over_dev_make", mkfile("d_f2", 0644, "f2"));
        res("dev_rename_file_over_dev", rename("d_f2", "d_b"));
        st("dev_rename_file_over_dev_stat", "d_b");
        res("dev_unlink", unlink("d_f"));
        res("dev_unlink_gone", access("d_f", F_OK));
        res("dev_mknod_for_remount", mknod("d_keep", S_IFBLK | 0640, makedev(259, 3)));
}

static void special_bits(void)
{
        umask(0);
        res("suid_create_04755", mkfile("s_f", 04755, "x"));
        st("suid_create_04755_stat", "s_f");
        res("suid_chmod_06755", chmod("s_f", 06755));
        st("suid_chmod_06755_stat", "s_f");
        res("suid_chmod_01755", chmod("s_f", 01755));
        st("suid_chmod_01755_stat", "s_f");
        res("suid_chmod_04711", chmod("s_f", 04711));
        res("suid_rename", rename("s_f", "s_g"));
        st("suid_rename_stat", "s_g");
        res("suid_link", link("s_g", "s_h"));
        res("suid_chmod_through_link", chmod("s_h", 06711));
        st("suid_chmod_through_link_other_name", "s_g");
        /* writes: root (CAP_FSETID) keeps the bits, others clear them */
        res("suid_root_write_make", mkfile("s_w", 06777, NULL));
        res_as("suid_root_write", as(0, 0, OP_WRITE, "s_w", NULL, 0, 0));
        st("suid_root_write_keeps_bits", "s_w");
        res_as("suid_nonowner_write", as(NOBODY, NOBODY, OP_WRITE, "s_w", NULL, 0, 0));
        st("suid_nonowner_write_clears_bits", "s_w");
        res("suid_sgid_noexec_make", mkfile("s_w2", 02767, NULL));
        res_as("suid_sgid_noexec_write", as(NOBODY, NOBODY, OP_WRITE, "s_w2", NULL, 0, 0));
        st("suid_sgid_noexec_write_keeps_sgid", "s_w2");
        res("suid_owner_write_make", mkfile("s_w3", 04777, NULL));
        res("suid_owner_write_chown", chown("s_w3", NOBODY, NOBODY));
        res("suid_owner_write_chmod", chmod("s_w3", 04777));
        res_as("suid_owner_write", as(NOBODY, NOBODY, OP_WRITE, "s_w3", NULL, 0, 0));
        st("suid_owner_write_clears", "s_w3");
        res("suid_nonowner_truncate_make", mkfile("s_t", 06777, "abc"));
        res_as("suid_nonowner_truncate", as(NOBODY, NOBODY, OP_TRUNCATE, "s_t", NULL, 1, 0));
        st("suid_nonowner_truncate_clears", "s_t");
        /* chown */
        res("suid_chown_make", mkfile("s_c", 06755, NULL));
        res("suid_root_chown", chown("s_c", 1, 1));
        st("suid_root_chown_stat", "s_c");
        res("suid_chown_noexec_make", mkfile("s_c2", 06745, NULL));
        res("suid_root_chown_noexec", chown("s_c2", 1, 1));
        st("suid_root_chown_noexec_stat", "s_c2");
        res("suid_chown_same_make", mkfile("s_c3", 06755, NULL));
        res("suid_root_chown_minus_one", chown("s_c3", (uid_t)-1, (gid_t)-1));
        st("suid_root_chown_minus_one_stat", "s_c3");
        res("suid_dir_chmod_make", mkdir("s_dir", 0755));
        res("suid_dir_chmod", chmod("s_dir", 07755));
        st("suid_dir_chmod_stat", "s_dir");
        res("suid_fifo_chmod_make", mkfifo("s_p", 0644));
        res("suid_fifo_chmod", chmod("s_p", 06644));
        st("suid_fifo_chmod_stat", "s_p");
        /* setgid directories hand down their group, and setgid to subdirs */
        res("sgid_dir_make", mkdir("sg", 0777));
        res("sgid_dir_chown", chown("sg", 0, SGROUP));
        res("sgid_dir_chmod", chmod("sg", 02777));
        st("sgid_dir_stat", "sg");
        res("sgid_dir_create", mkfile("sg/f", 0644, NULL));
        st("sgid_dir_create_stat", "sg/f");
        res("sgid_dir_mkdir", mkdir("sg/sub", 0755));
        st("sgid_dir_mkdir_stat", "sg/sub");
        res("sgid_dir_mkdir_nested", mkdir("sg/sub/deeper", 0700));
        st("sgid_dir_mkdir_nested_stat", "sg/sub/deeper");
        res("sgid_dir_mkfifo", mkfifo("sg/p", 0600));
        st("sgid_dir_mkfifo_stat", "sg/p");
        res("sgid_dir_symlink", symlink("x", "sg/l"));
        st("sgid_dir_symlink_stat", "sg/l");
        res_as("sgid_dir_nonmember_create_02755",
               as(NOBODY, NOBODY, OP_CREATE_MODE, "sg/nm", NULL, 02755, 0));
        st("sgid_dir_nonmember_create_02755_stat", "sg/nm");
        res("sgid_dir_rename_keeps", rename("sg", "sg2"));
        st("sgid_dir_rename_keeps_stat", "sg2");
        res("sgid_dir_rename_back", rename("sg2", "sg"));
        /* copy-up of an entry that came with the tree */
        res("suid_pre_chmod", chmod("pre/exe", 04755));
        st("suid_pre_chmod_stat", "pre/exe");
        res("suid_pre_dir_chmod", chmod("pre/dir", 02755));
        st("suid_pre_dir_chmod_stat", "pre/dir");
        res("suid_pre_dir_create", mkdir("pre/dir/made", 0755));
        st("suid_pre_dir_create_stat", "pre/dir/made");
}

static void times(void)
{
        struct times t, d;
        int fd;
        res("time_make", mkfile("t_f", 0644, "abc"));
        res("time_make_dir", mkdir("t_d", 0755));
#define STEP(name, path, dirpath, expr)                                                            \
        do {                                                                                       \
                t = times_of(path);                                                                \
                d = times_of(dirpath);                                                             \
                tick();                                                                            \
                res(name, expr);                                                                   \
                moved(name "_file", path, t);                                                      \
                moved(name "_dir", dirpath, d);                                                    \
        } while (0)
        STEP("time_chmod", "t_f", ".", chmod("t_f", 0600));
        STEP("time_chown", "t_f", ".", chown("t_f", 5, 5));
        STEP("time_chown_minus_one", "t_f", ".", chown("t_f", (uid_t)-1, (gid_t)-1));
        STEP("time_truncate", "t_f", ".", truncate("t_f", 1));
        STEP("time_truncate_same_size", "t_f", ".", truncate("t_f", 1));
        fd = open("t_f", O_WRONLY | O_CLOEXEC);
        STEP("time_write", "t_f", ".", pwrite(fd, "z", 1, 0));
        close(fd);
        STEP("time_setxattr", "t_f", ".", setxattr("t_f", "user.k", "v", 1, 0));
        STEP("time_removexattr", "t_f", ".", removexattr("t_f", "user.k"));
        STEP("time_link", "t_f", "t_d", link("t_f", "t_d/hl"));
        STEP("time_unlink_hard_link", "t_f", "t_d", unlink("t_d/hl"));
        /* a renamed entry's ctime moves too (its own name changed) */
#define MOVE(name, from, to, dirpath)                                                              \
        do {                                                                                       \
                t = times_of(from);                                                                \
                d = times_of(dirpath);                                                             \
                tick();                                                                            \
                res(name, rename(from, to));                                                       \
                moved(name "_file", to, t);                                                        \
                moved(name "_dir", dirpath, d);                                                    \
        } while (0)
        MOVE("time_rename", "t_f", "t_f2", ".");
        MOVE("time_rename_back", "t_f2", "t_f", ".");
        MOVE("time_rename_into_dir", "t_f", "t_d/f", "t_d");
        MOVE("time_rename_out_of_dir", "t_d/f", "t_f", "t_d");
        MOVE("time_rename_a_dir", "t_d", "t_d2", ".");
        MOVE("time_rename_a_dir_back", "t_d2", "t_d", ".");
        STEP("time_create", "t_d", "t_d", mkfile("t_d/new", 0644, NULL));
        STEP("time_unlink", "t_d", "t_d", unlink("t_d/new"));
        STEP("time_mkdir", "t_d", "t_d", mkdir("t_d/sub", 0755));
        STEP("time_rmdir", "t_d", "t_d", rmdir("t_d/sub"));
        STEP("time_symlink", "t_d", "t_d", symlink("x", "t_d/l"));
        STEP("time_mknod", "t_d", "t_d", mknod("t_d/p", S_IFIFO | 0644, 0));
        STEP("time_mknod_chr", "t_d", "t_d", mknod("t_d/c", S_IFCHR | 0644, makedev(1, 3)));
        STEP("time_exchange", "t_d/l", "t_d",
             renameat2(AT_FDCWD, "t_d/l", AT_FDCWD, "t_d/p", RENAME_EXCHANGE));
        STEP("time_utimens_now", "t_f", ".", utimensat(AT_FDCWD, "t_f", NULL, 0));
        fd = open("t_f", O_RDONLY | O_CLOEXEC);
        {
                char b[4];
                STEP("time_read", "t_f", ".", read(fd, b, sizeof(b)));
        }
        close(fd);
        /* entries from the tree */
        STEP("time_pre_chmod", "pre/dir/inner", "pre/dir", chmod("pre/dir/inner", 0600));
        STEP("time_pre_create", "pre/dir/inner", "pre/dir", mkfile("pre/dir/new", 0644, NULL));
        MOVE("time_pre_rename", "pre/dir/inner", "pre/dir/in2", "pre/dir");
        MOVE("time_pre_rename_a_dir", "pre/dir3", "pre/dir4", "pre");
        STEP("time_pre_unlink", "pre/dir", "pre/dir", unlink("pre/dir/in2"));
        STEP("time_pre_truncate", "pre/exe", "pre", truncate("pre/exe", 2));
#undef STEP
#undef MOVE
}

static void sticky(void)
{
        res("sticky_make", mkdir("st", 01777));
        res_as("sticky_create_by_owner", as(NOBODY, NOBODY, OP_CREATE, "st/f", NULL, 0, 0));
        res_as("sticky_unlink_by_other", as(OTHER, OTHER, OP_UNLINK, "st/f", NULL, 0, 0));
        res_as("sticky_rename_by_other", as(OTHER, OTHER, OP_RENAME, "st/f", "st/g", 0, 0));
        res_as("sticky_rename_over_by_other_make", as(OTHER, OTHER, OP_CREATE, "st/o", NULL, 0, 0));
        res_as("sticky_rename_over_by_other", as(OTHER, OTHER, OP_RENAME, "st/o", "st/f", 0, 0));
        res_as("sticky_rename_by_owner", as(NOBODY, NOBODY, OP_RENAME, "st/f", "st/g", 0, 0));
        st("sticky_rename_by_owner_stat", "st/g");
        res("sticky_dir_chown", chown("st", THIRD, THIRD));
        res_as("sticky_unlink_by_dir_owner", as(THIRD, THIRD, OP_UNLINK, "st/g", NULL, 0, 0));
        res_as("sticky_create_again", as(NOBODY, NOBODY, OP_CREATE, "st/h", NULL, 0, 0));
        res("sticky_unlink_by_root", unlink("st/h"));
        res("sticky_chmod_off", chmod("st", 0777));
        res_as("sticky_off_unlink_by_other", as(OTHER, OTHER, OP_UNLINK, "st/o", NULL, 0, 0));
}

static void hardlinks(void)
{
        char a[64], b[64], n[96];
        struct stat sa, sb;
        for (const char *t = TYPES; *t; t++) {
                const char *tn = typename(*t);
                snprintf(a, sizeof(a), "hl_%s", tn);
                snprintf(b, sizeof(b), "hl_%s.2", tn);
                (void)make(*t, a);
                snprintf(n, sizeof(n), "link_%s", tn);
                res(n, link(a, b));
                snprintf(n, sizeof(n), "link_%s_stat", tn);
                st(n, a);
                snprintf(n, sizeof(n), "link_%s_same_inode", tn);
                say(n, "%s",
                    lstat(a, &sa) == 0 && lstat(b, &sb) == 0 && sa.st_ino == sb.st_ino ? "yes"
                                                                                       : "no");
                snprintf(n, sizeof(n), "link_%s_unlink_first", tn);
                res(n, *t == 'd' ? rmdir(a) : unlink(a));
                snprintf(n, sizeof(n), "link_%s_other_stat", tn);
                st(n, b);
        }
        res("link_pre_file", link("pre/exe", "hl_pre"));
        st("link_pre_file_stat", "pre/exe");
        res("link_pre_write_through_link", truncate("hl_pre", 1));
        st("link_pre_write_seen_by_other", "pre/exe");
        res("link_pre_dir", link("pre/dir", "hl_pre_dir"));
        res("link_onto_existing", link("hl_file.2", "hl_fifo.2"));
        res("link_missing", link("nonexistent", "hl_missing"));
}

/* rename of every type over every type */
static void rename_matrix(void)
{
        char s[64], d[64], n[96];
        for (const char *a = TYPES; *a; a++)
                for (const char *b = TYPES; *b; b++) {
                        snprintf(s, sizeof(s), "rn_%c%c_s", *a, *b);
                        snprintf(d, sizeof(d), "rn_%c%c_d", *a, *b);
                        (void)make(*a, s);
                        (void)make(*b, d);
                        snprintf(n, sizeof(n), "rename_%s_over_%s", typename(*a), typename(*b));
                        res(n, rename(s, d));
                        snprintf(n, sizeof(n), "rename_%s_over_%s_result", typename(*a),
                                 typename(*b));
                        {
                                struct stat x;
                                char buf[128];
                                int e1 = lstat(s, &x) < 0 ? errno : 0;
                                if (lstat(d, &x) == 0)
                                        desc_st(buf, sizeof(buf), &x);
                                else
                                        snprintf(buf, sizeof(buf), "%s", ename(errno));
                                say(n, "src:%s dst:%s", ename(e1), buf);
                        }
                }
        res("rename_dir_over_nonempty_dir_make", mkdir("rn_full", 0755));
        (void)mkfile("rn_full/x", 0644, NULL);
        (void)mkdir("rn_empty", 0755);
        res("rename_dir_over_nonempty_dir", rename("rn_empty", "rn_full"));
        res("rename_dir_into_itself", rename("rn_full", "rn_full/sub"));
        res("rename_onto_itself", rename("rn_full", "rn_full"));
        res("rename_hard_links_of_one_file",
            link("rn_full/x", "rn_full/y") ? -1 : rename("rn_full/x", "rn_full/y"));
        st("rename_hard_links_of_one_file_src", "rn_full/x");
        res("rename_pre_file_over_pre_file", rename("pre/file6", "pre/exe2"));
        st("rename_pre_file_over_pre_file_stat", "pre/exe2");
        res("rename_pre_dir_over_new_empty_dir_make", mkdir("rn_target", 0755));
        res("rename_pre_dir_over_new_empty_dir", rename("pre/dir2", "rn_target"));
        st("rename_pre_dir_over_new_empty_dir_stat", "rn_target/inner");
        res("rename_new_dir_over_pre_nonempty_dir", rename("rn_empty", "pre/dir4"));
        res("rename_noreplace_existing",
            renameat2(AT_FDCWD, "rn_full", AT_FDCWD, "rn_target", RENAME_NOREPLACE));
        res("rename_noreplace_new",
            renameat2(AT_FDCWD, "rn_full", AT_FDCWD, "rn_full2", RENAME_NOREPLACE));
        res("rename_noreplace_over_pre",
            renameat2(AT_FDCWD, "rn_full2", AT_FDCWD, "pre/exe", RENAME_NOREPLACE));
        (void)mkfile("x_file", 0644, "xf");
        (void)mkdir("x_dir", 0755);
        (void)symlink("t", "x_link");
        res("exchange_file_dir", renameat2(AT_FDCWD, "x_file", AT_FDCWD, "x_dir", RENAME_EXCHANGE));
        st("exchange_file_dir_a", "x_file");
        st("exchange_file_dir_b", "x_dir");
        res("exchange_file_symlink",
            renameat2(AT_FDCWD, "x_dir", AT_FDCWD, "x_link", RENAME_EXCHANGE));
        st("exchange_file_symlink_a", "x_dir");
        st("exchange_file_symlink_b", "x_link");
        res("exchange_missing", renameat2(AT_FDCWD, "x_dir", AT_FDCWD, "x_none", RENAME_EXCHANGE));
        res("exchange_and_noreplace",
            renameat2(AT_FDCWD, "x_dir", AT_FDCWD, "x_link", RENAME_EXCHANGE | RENAME_NOREPLACE));
        res("exchange_with_pre",
            renameat2(AT_FDCWD, "x_dir", AT_FDCWD, "pre/file5", RENAME_EXCHANGE));
        st("exchange_with_pre_a", "x_dir");
        st("exchange_with_pre_b", "pre/file5");
        res("exchange_dir_into_its_subdir",
            renameat2(AT_FDCWD, "x_file", AT_FDCWD, "x_file/inside", RENAME_EXCHANGE));
}

static void names(void)
{
        char name[300], path[4200];
        int fd, depth = 0;
        size_t len;

        memset(name, 'n', 255);
        name[255] = 0;
        res("name_255_create", mkfile(name, 0644, "n"));
        st("name_255_stat", name);
        name[0] = 'm';
        res("name_255_mkdir", mkdir(name, 0755));
        name[0] = 'l';
        res("name_255_symlink", symlink("x", name));
        name[0] = 'k';
        {
                char old[300];
                memset(old, 'n', 255);
                old[255] = 0;
                res("name_255_link", link(old, name));
                name[0] = 'j';
                res("name_255_rename", rename(old, name));
                res("name_255_unlink", unlink(name));
        }
        memset(name, 'o', 256);
        name[256] = 0;
        res("name_256_create", mkfile(name, 0644, NULL));
        res("name_256_mkdir", mkdir(name, 0755));
        res("name_256_stat", access(name, F_OK));
        /* a relative path of 4095 bytes (PATH_MAX with its NUL), and one of 4096 */
        res("path_chain_root", mkdir("p", 0755));
        strcpy(path, "p");
        memset(name, 'p', 200);
        name[200] = 0;
        while (strlen(path) + 1 + 200 + 1 + 50 < 4095) {
                strcat(path, "/");
                strcat(path, name);
                if (mkdir(path, 0755) < 0)
                        break;
                depth++;
        }
        say("path_chain_depth", "%d", depth);
        len = strlen(path);
        strcat(path, "/");
        memset(path + len + 1, 'f', 4095 - len - 1);
        path[4095] = 0;
        fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        res("path_4095_create", fd);
        if (fd >= 0)
                close(fd);
        res("path_4095_stat", access(path, F_OK));
        res("path_4095_unlink", unlink(path));
        memset(path + len + 1, 'g', 4096 - len - 1);
        path[4096] = 0;
        res("path_4096_create", open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
        {
                static char target[4200], back[4200];
                ssize_t k;
                memset(target, 't', 4095);
                target[4095] = 0;
                res("symlink_target_4095", symlink(target, "sym4095"));
                k = readlink("sym4095", back, sizeof(back));
                say("symlink_target_4095_readlink", "%zd", k);
                target[4095] = 't';
                target[4096] = 0;
                res("symlink_target_4096", symlink(target, "sym4096"));
        }
}

static void owners(void)
{
        res("chown_make", mkfile("o_f", 0644, NULL));
        res("chown_root_any", chown("o_f", 123456789, 987654321));
        st("chown_root_any_stat", "o_f");
        res("chown_root_minus_one", chown("o_f", (uid_t)-1, (gid_t)-1));
        st("chown_root_minus_one_stat", "o_f");
        res("chown_to_nobody", chown("o_f", NOBODY, NOBODY));
        res_as("chown_owner_gives_away", as(NOBODY, NOBODY, OP_CHOWN, "o_f", NULL, 0, -1));
        res_as("chown_owner_to_foreign_group", as(NOBODY, NOBODY, OP_CHOWN, "o_f", NULL, -1, 0));
        res_as("chown_owner_to_own_group", as(NOBODY, NOBODY, OP_CHOWN, "o_f", NULL, -1, NOBODY));
        res_as("chown_owner_to_self", as(NOBODY, NOBODY, OP_CHOWN, "o_f", NULL, NOBODY, -1));
        res_as("chown_nonowner", as(OTHER, OTHER, OP_CHOWN, "o_f", NULL, OTHER, OTHER));
        st("chown_after_refusals_stat", "o_f");
        res("chown_pre_file", chown("pre/file4", 31337, 31338));
        st("chown_pre_file_stat", "pre/file4");
        res("chown_pre_dir", chown("pre/dir", 31337, 31338));
        st("chown_pre_dir_stat", "pre/dir");
        res("chown_symlink_itself", lchown("pre/link", 4, 5));
        st("chown_symlink_itself_stat", "pre/link");
}

/* Lasting attributes of every entry under dir, sorted by name, for remount checks. */
static void dump(const char *dir, int depth)
{
        struct dirent **list = NULL;
        int n = scandir(dir, &list, NULL, alphasort);
        for (int i = 0; i < n; i++) {
                char p[8192], buf[128];
                struct stat sb;
                if (strcmp(list[i]->d_name, ".") && strcmp(list[i]->d_name, "..") &&
                    strcmp(list[i]->d_name, ".git")) {
                        snprintf(p, sizeof(p), "%s/%s", dir, list[i]->d_name);
                        if (lstat(p, &sb) == 0) {
                                desc_st(buf, sizeof(buf), &sb);
                                printf("%s %s m%lld.%09ld c%lld.%09ld\n", p, buf,
                                       (long long)sb.st_mtim.tv_sec, sb.st_mtim.tv_nsec,
                                       (long long)sb.st_ctim.tv_sec, sb.st_ctim.tv_nsec);
                                if (S_ISDIR(sb.st_mode) && depth < 32)
                                        dump(p, depth + 1);
                        }
                }
                free(list[i]);
        }
        free(list);
}

int main(int argc, char **argv)
{
        if (argc < 2) {
                fprintf(stderr, "usage: conform DIR [dump|SECTION...]\n");
                return 2;
        }
        if (chdir(argv[1]) < 0) {
                perror(argv[1]);
                return 2;
        }
        if (argc > 2 && !strcmp(argv[2], "dump")) {
                dump(".", 0);
                return 0;
        }
        if (geteuid() != 0) {
                fprintf(stderr, "conform: needs root\n");
                return 77;
        }
        modes();
        setattr_types();
        unlinked();
        race(2);
        limits();
        devices();
        special_bits();
        times();
        sticky();
        hardlinks();
        rename_matrix();
        names();
        owners();
        return 0;
}
