/* SPDX-License-Identifier: MIT */
/*
 * hostid.c: reserve an unprivileged host uid/gid for root's sandboxes.
 *
 * A reservation is HOSTID_DIR/UID, locked with flock(LOCK_EX) by its holder
 * for as long as it lives. Taking one: open (or create) the file, try the
 * lock without waiting, then check that the name still refers to the file
 * we locked; a holder that releases unlinks the file before closing it, so
 * a racer that opened the old file and got its lock afterwards sees the
 * name gone (or a new file) and moves on. Two holders can therefore never
 * hold the same uid, and a killed holder's uid is free the moment it dies.
 *
 * Where to start looking is a hint, HOSTID_DIR/.next-FIRST-LAST, read and
 * written under its own flock: the lowest uid of the range that may be
 * free. A take moves it past the uid taken, a release back down to the
 * uid let go; a holder killed without releasing, or an id skipped as in
 * use, is looked at again when the search wraps round. Held uids are contiguous from the bottom on
 * a busy host, so without it every take tried each of them in turn
 * (an open and a failing flock each: O(number of sandboxes) per mount).
 *
 * "Owns nothing on the host" can't be proven (files may carry any uid), so
 * the range is chosen away from every id the host hands out (config.h) and
 * each candidate is also checked against what can be seen: the user and
 * group databases, the subordinate id ranges, and running processes (a
 * sandbox whose run died in the narrow SIGKILL window, or that outlived
 * its daemon, may still run as its old uid after the lock is gone). The
 * process check asks the kernel about the one candidate (uid_has_process)
 * rather than reading every process's status, so a mount costs the same
 * system calls with 5,000 sandboxes live as with none.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hostid.h"
#include "lib/util.h"

#define HOSTID_PARENT      "/run/cloister"
#define HOSTID_MAX_TRIES   (1U << 20) /* candidates looked at before giving up */
#define HOSTID_SUBID_LINES 100000     /* /etc/subuid is small; refuse to read forever */

struct hostid {
        uid_t uid;
        uint32_t first, last; /* the range it was taken from: its hint's */
        int dir_fd;
        int fd; /* holds the flock */
};

/* Ranges [lo, hi] of ids the host uses, from /etc/sub[ug]id. */
struct used {
        struct {
                uint64_t lo, hi;
        } * r;
        size_t n, allocated;
};

static int used_add(struct used *u, uint64_t lo, uint64_t hi)
{
        if (u->n == u->allocated) {
                size_t a = MAX(u->allocated * 2, (size_t)16);
                void *p = realloc(u->r, a * sizeof(*u->r));
                if (!p)
                        return -ENOMEM;
                u->r = p;
                u->allocated = a;
        }
        u->r[u->n].lo = lo;
        u->r[u->n++].hi = hi;
        return 0;
}

static bool used_has(const struct used *u, uint64_t id)
{
        for (size_t i = 0; i < u->n; i++)
                if (id >= u->r[i].lo && id <= u->r[i].hi)
                        return true;
        return false;
}

/* "name:start:count" lines; a missing file is empty, a malformed line skipped. */
static int subid_read(const char *path, uint32_t first, uint32_t last, struct used *u)
{
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;
        unsigned lines = 0;

        if (!f)
                return errno == ENOENT ? 0 : negative_errno();
        while (getline(&line, &cap, f) > 0 && lines++ < HOSTID_SUBID_LINES) {
                unsigned long long start, count;
                char *p = strchr(line, ':');

                if (!p || sscanf(p + 1, "%llu:%llu", &start, &count) != 2 || count == 0)
                        continue;
                if (start + count - 1 < first || start > last)
                        continue;
                if (used_add(u, start, start + count - 1) < 0)
                        return -ENOMEM;
        }
        return 0;
}

/*
 * Is there a live process with uid as any of its uids or gids (real,
 * effective, saved, filesystem)? 1 yes, 0 no, < 0 the error. Reads every
 * /proc/PID/status: only when the kernel said that some process has uid as
 * its real uid (uid_has_process), which may be a zombie.
 */
static int proc_has(uid_t uid)
{
        _cleanup_closedir_ DIR *d = opendir("/proc");
        struct dirent *de;

        if (!d)
                return negative_errno();
        while ((de = readdir(d))) {
                char path[sizeof(de->d_name) + 8], buf[4096], *line, *save = NULL;
                ssize_t n;
                int fd;

                if (de->d_name[0] < '1' || de->d_name[0] > '9')
                        continue;
                snprintf(path, sizeof(path), "%s/status", de->d_name);
                fd = openat(dirfd(d), path, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        continue; /* gone already */
                /* One read: State, Uid and Gid are in the first few hundred bytes. */
                do
                        n = read(fd, buf, sizeof(buf) - 1);
                while (n < 0 && errno == EINTR);
                close(fd);
                if (n <= 0)
                        continue; /* gone meanwhile */
                buf[n] = '\0';
                for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                        unsigned long long id[4];

                        /* A zombie (State comes first) can do nothing as anyone any more. */
                        if (startswith(line, "State:") && strpbrk(line + 6, "ZX"))
                                break;
                        if (!startswith(line, "Uid:") && !startswith(line, "Gid:"))
                                continue;
                        if (sscanf(line + 4, "%llu %llu %llu %llu", &id[0], &id[1], &id[2],
                                   &id[3]) != 4)
                                continue;
                        for (size_t i = 0; i < 4; i++)
                                if (id[i] == uid)
                                        return 1;
                }
        }
        return 0;
}

/*
 * Does a live process run as uid? 1 yes, 0 no, < 0 the error.
 * getpriority(PRIO_USER, uid) asks the kernel whether any process has uid
 * as its real uid: it looks up uid's user_struct (there is none once no
 * credential uses it: the usual answer, at once) and otherwise walks its
 * own task list, the processes of every pid namespace below ours too. No
 * files, however many processes the host runs; reading every
 * /proc/PID/status for every candidate cost a mount an open and a read per
 * process (issue 48: with 5,000 idle daemons, 5,000 of each). Only when
 * the kernel finds one are the status files read (proc_has): it may be a
 * zombie not yet reaped (a run's bubblewrap, for a moment after the run
 * ends), which holds nothing, and a uid must come back once its sandbox
 * is gone.
 *
 * Every process of a sandbox has the sandbox's uid as all of its uids (its
 * user namespace maps that one id only, so it can't take another), so none
 * is missed. A host process that has uid only as its effective, saved or
 * filesystem uid, or only as a gid, is seen only when the kernel found some
 * other process with it as its real uid; the range is kept away from such
 * ids by where it lies (config.h) and by the user and group databases.
 */
static int uid_has_process(uid_t uid)
{
        /* The raw call: the kernel's 40..1 for the highest priority found, or ESRCH. */
        if (syscall(SYS_getpriority, PRIO_USER, (id_t)uid) < 0)
                return errno == ESRCH ? 0 : negative_errno();
        return proc_has(uid);
}

static bool nss_has(uid_t id)
{
        /* An error looking it up counts as taken: never hand out what may be someone's. */
        errno = 0;
        if (getpwuid(id) || errno != 0)
                return true;
        errno = 0;
        return getgrgid((gid_t)id) || errno != 0;
}

/* A directory of root's that nobody else may write, made if missing. */
static int private_dir(int at, const char *name, mode_t mode, int *ret_fd)
{
        _cleanup_close_ int fd = -1;
        struct stat st;

        if (mkdirat(at, name, mode) < 0 && errno != EEXIST)
                return negative_errno();
        fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (st.st_uid != 0 || (st.st_mode & 0022))
                return -EPERM;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static int dir_open(int *ret_fd, char **ret_error)
{
        _cleanup_close_ int parent = -1;
        int r;

        r = private_dir(AT_FDCWD, HOSTID_PARENT, 0755, &parent);
        if (r < 0) {
                if (ret_error && asprintf(ret_error, "%s: %s%s", HOSTID_PARENT, strerror(-r),
                                          r == -EPERM ? " (must be root's, not group- or "
                                                        "world-writable)"
                                                      : "") < 0)
                        *ret_error = NULL;
                return r;
        }
        r = private_dir(parent, "host-uids", 0700, ret_fd);
        if (r < 0 && ret_error &&
            asprintf(ret_error, "%s: %s%s", HOSTID_DIR, strerror(-r),
                     r == -EPERM ? " (must be root's, not group- or world-writable)" : "") < 0)
                *ret_error = NULL;
        return r;
}

/*
 * Whether a live holder has the reservation open as fd locked: 1 yes, 0 no,
 * < 0 the error. The shared lock taken to tell goes with the fd.
 */
static int lock_held(int fd)
{
        if (flock(fd, LOCK_SH | LOCK_NB) == 0)
                return 0;
        return errno == EWOULDBLOCK ? 1 : negative_errno();
}

/*
 * Is uid's reservation held by a live holder? Checked before the name
 * service: a machine with many sandboxes would otherwise look up every
 * held uid in passwd and group (two file scans each) on every mount.
 */
static bool held(int dir_fd, uid_t uid)
{
        _cleanup_close_ int fd = -1;
        char name[16];

        snprintf(name, sizeof(name), "%u", (unsigned)uid);
        fd = openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return false; /* no reservation (or none we can tell): try_take decides */
        return lock_held(fd) > 0;
}

/* 1: uid is ours now (fd locked, record written), 0: taken, < 0: error. */
static int try_take(int dir_fd, uid_t uid, const char *owner, int *ret_fd)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *rec = NULL;
        char name[16];
        struct stat a, b;
        int l;

        snprintf(name, sizeof(name), "%u", (unsigned)uid);
        fd = openat(dir_fd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
        if (fd < 0)
                return negative_errno();
        if (flock(fd, LOCK_EX | LOCK_NB) < 0)
                return errno == EWOULDBLOCK ? 0 : negative_errno();
        if (fstat(fd, &a) < 0)
                return negative_errno();
        if (fstatat(dir_fd, name, &b, AT_SYMLINK_NOFOLLOW) < 0 || a.st_ino != b.st_ino ||
            a.st_dev != b.st_dev)
                return 0; /* released and unlinked under us: not this file */
        l = asprintf(&rec, "%d %s\n", (int)getpid(), owner);
        if (l < 0) {
                rec = NULL;
                return -ENOMEM;
        }
        if (ftruncate(fd, 0) < 0 || pwrite(fd, rec, (size_t)l, 0) != l)
                return -EIO;
        *ret_fd = TAKE_FD(fd);
        return 1;
}

/* The hint's file for [first, last], locked; *ret_hint: where to start (first if none). */
static int hint_open(int dir_fd, uint32_t first, uint32_t last, uint64_t *ret_hint)
{
        char name[48], buf[32];
        unsigned long long v;
        ssize_t n;
        int fd;

        snprintf(name, sizeof(name), ".next-%u-%u", first, last);
        fd = openat(dir_fd, name, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
        if (fd < 0)
                return negative_errno();
        if (flock(fd, LOCK_EX) < 0) {
                int r = negative_errno();
                close(fd);
                return r;
        }
        *ret_hint = first;
        n = pread(fd, buf, sizeof(buf) - 1, 0);
        if (n > 0) {
                buf[n] = '\0';
                if (sscanf(buf, "%llu", &v) == 1 && v >= first && v <= last)
                        *ret_hint = v;
        }
        return fd;
}

static void hint_write(int fd, uint64_t next)
{
        char buf[32];
        int l = snprintf(buf, sizeof(buf), "%llu\n", (unsigned long long)next);

        if (ftruncate(fd, 0) == 0)
                (void)!pwrite(fd, buf, (size_t)l, 0);
}

int hostid_acquire(uint32_t first, uint32_t last, const char *owner, hostid **ret, char **ret_error)
{
        struct used used = {0};
        _cleanup_close_ int dir_fd = -1;
        uint64_t tried = 0, id = first, hint = first;
        bool probe_failed = false;
        hostid *h;
        int r, fd = -1, hint_fd = -1;

        if (first == 0 || first > last) {
                r = -EINVAL;
                if (ret_error &&
                    asprintf(ret_error, "host uid range %u-%u is not valid", first, last) < 0)
                        *ret_error = NULL;
                return r;
        }
        r = dir_open(&dir_fd, ret_error);
        if (r < 0)
                return r;
        r = subid_read("/etc/subuid", first, last, &used);
        if (r >= 0)
                r = subid_read("/etc/subgid", first, last, &used);
        if (r < 0) {
                free(used.r);
                if (ret_error && asprintf(ret_error, "cannot tell which host uids are in use: %s",
                                          strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        r = hint_fd = hint_open(dir_fd, first, last, &hint);
        if (r >= 0) {
                uint64_t span = (uint64_t)last - first + 1;

                /* From the hint up, then round from first: each id once. */
                r = 0;
                for (; tried < span && tried < HOSTID_MAX_TRIES; tried++) {
                        id = first + (hint - first + tried) % span;
                        if (held(dir_fd, (uid_t)id) || used_has(&used, id) || nss_has((uid_t)id))
                                continue;
                        r = uid_has_process((uid_t)id);
                        if (r < 0) {
                                probe_failed = true;
                                break;
                        }
                        if (r > 0) {
                                r = 0;
                                continue;
                        }
                        r = try_take(dir_fd, (uid_t)id, owner, &fd);
                        if (r != 0)
                                break;
                }
                if (r > 0)
                        hint_write(hint_fd, id < last ? id + 1 : first);
                safe_close(hint_fd);
        }
        free(used.r);
        if (r < 0) {
                if (ret_error &&
                    (probe_failed ? asprintf(ret_error,
                                             "cannot tell whether a process runs as host uid "
                                             "%llu: %s",
                                             (unsigned long long)id, strerror(-r))
                                  : asprintf(ret_error, "cannot reserve a host uid in %s: %s",
                                             HOSTID_DIR, strerror(-r))) < 0)
                        *ret_error = NULL;
                return r;
        }
        if (r == 0) {
                if (ret_error &&
                    asprintf(ret_error,
                             "no free host uid in %u-%u: all %llu are held by other sandboxes "
                             "or in use on this host (users, groups, subordinate ids, "
                             "processes)%s",
                             first, last, (unsigned long long)tried,
                             tried < (uint64_t)last - first + 1 ? " as far as was searched" : "") <
                            0)
                        *ret_error = NULL;
                return -EUSERS;
        }
        h = calloc(1, sizeof(*h));
        if (!h) {
                char name[16];
                snprintf(name, sizeof(name), "%u", (unsigned)id);
                (void)unlinkat(dir_fd, name, 0);
                close(fd);
                return -ENOMEM;
        }
        h->uid = (uid_t)id;
        h->first = first;
        h->last = last;
        h->fd = fd;
        h->dir_fd = TAKE_FD(dir_fd);
        *ret = h;
        return 0;
}

uid_t hostid_uid(const hostid *h)
{
        return h->uid;
}

/* The next take may start at h's uid again: the hint moves down to it. */
static void hint_lower(const hostid *h)
{
        uint64_t hint;
        int fd = hint_open(h->dir_fd, h->first, h->last, &hint);

        if (fd < 0)
                return;
        if (h->uid < hint)
                hint_write(fd, h->uid);
        close(fd);
}

void hostid_free(hostid *h)
{
        char name[16];

        if (!h)
                return;
        /* Unlink while the lock is ours (see the top of the file), then let go. */
        snprintf(name, sizeof(name), "%u", (unsigned)h->uid);
        (void)unlinkat(h->dir_fd, name, 0);
        hint_lower(h);
        safe_close(h->fd);
        safe_close(h->dir_fd);
        free(h);
}

int hostid_check(uid_t uid, pid_t pid)
{
        _cleanup_close_ int fd = -1;
        char path[64], buf[32];
        ssize_t n;
        int holder, r;

        snprintf(path, sizeof(path), "%s/%u", HOSTID_DIR, (unsigned)uid);
        fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return errno == ENOENT ? -ESRCH : negative_errno();
        r = lock_held(fd);
        if (r <= 0)
                return r == 0 ? -ESRCH : r; /* 0: nobody holds it */
        n = pread(fd, buf, sizeof(buf) - 1, 0);
        if (n <= 0)
                return -EPERM;
        buf[n] = '\0';
        if (sscanf(buf, "%d", &holder) != 1 || holder != (int)pid)
                return -EPERM;
        return 0;
}
