/* SPDX-License-Identifier: MIT */
/*
 * mountctl.c: finding, cleaning up and stopping a workspace's daemon.
 *
 * A daemon killed with SIGKILL leaves its pid file and a dead FUSE mount
 * (ENOTCONN); both are cleaned up here so that the next mount just works.
 * The pid file is trusted only if that pid is still a cloister process.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core.h"
#include "daemon.h"
#include "fs.h"
#include "lib/pidfile.h"
#include "lib/util.h"

static int read_pid(const char *state)
{
        _cleanup_free_ char *p = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        int pid;
        if (asprintf(&p, "%s/mount.pid", state) < 0)
                return -ENOMEM;
        f = fopen(p, "re");
        if (!f)
                return errno == ENOENT ? 0 : negative_errno();
        if (fscanf(f, "%d", &pid) != 1 || pid <= 1)
                return 0;
        return pid;
}

int fs_proc_starttime(int pid, unsigned long long *ret)
{
        return pidfile_starttime(pid, ret);
}

/* Is pid the daemon that wrote <state>/fs/mount.start (not a reused pid)? */
static bool pid_started_as_recorded(const char *state, int pid)
{
        _cleanup_free_ char *p = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        unsigned long long want, have;
        if (asprintf(&p, "%s/fs/mount.start", state) < 0)
                return true;
        f = fopen(p, "re");
        if (!f || fscanf(f, "%llu", &want) != 1)
                return true; /* nothing recorded: trust the pid */
        return fs_proc_starttime(pid, &have) == 0 && have == want;
}

/* A live (not zombie) process named cloister. */
static bool pid_is_cloister(int pid)
{
        char path[64], stat[256] = "", *p;
        _cleanup_fclose_ FILE *f = NULL;
        snprintf(path, sizeof(path), "/proc/%d/stat", pid);
        f = fopen(path, "re");
        if (!f || !fgets(stat, sizeof(stat), f))
                return false;
        /* "PID (comm) S ...": comm may hold spaces, so find the last ')'. */
        p = strrchr(stat, ')');
        if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
                return false;
        return strncmp(strchr(stat, '(') ? strchr(stat, '(') + 1 : "", "cloister", 8) == 0;
}

/*
 * mountinfo escapes space, tab, newline and backslash in paths as \ooo;
 * undo it in place so that a path compares with its real name.
 */
static void mountinfo_unescape(char *s)
{
        char *o = s;

        for (; *s; s++) {
                if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
                    s[3] >= '0' && s[3] <= '7') {
                        *o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
                        s += 3;
                } else {
                        *o++ = *s;
                }
        }
        *o = '\0';
}

/*
 * Every mount of this mount namespace, topmost last: call fn with its
 * mountpoint, its fstype and its source (fsname); it returns non-zero to
 * stop, which is then returned.
 */
static int mounts_each(int (*fn)(const char *mp, const char *fstype, const char *source, void *arg),
                       void *arg)
{
        _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
        _cleanup_free_ char *line = NULL;
        size_t n = 0;
        int r = 0;

        if (!f)
                return 0;
        while (r == 0 && getline(&line, &n, f) > 0) {
                char mp[PATH_MAX], fstype[256], source[PATH_MAX];
                const char *sep = strstr(line, " - ");
                if (!sep || sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1 ||
                    sscanf(sep + 3, "%255s %4095s", fstype, source) != 2)
                        continue;
                mountinfo_unescape(mp);
                mountinfo_unescape(source);
                r = fn(mp, fstype, source, arg);
        }
        return r;
}

/*
 * What a mount check asks of the mount table, answered per mount: statx(2)
 * names the mount a path lies on (STATX_MNT_ID_UNIQUE, Linux 6.8) and
 * statmount(2) (6.8) describes that one mount and its parent. A check
 * costs a few system calls per mount above the path (O(depth)), where
 * reading /proc/self/mountinfo cost one line per mount of the namespace:
 * a host with 5,000 workspaces mounted read 5,000 lines for each further
 * mount, several times over (issue 48). Where the kernel has neither, or
 * can't tell (a dead FUSE mount's root may fail statx with ENOTCONN), the
 * table is read as before: the answer is the same either way.
 *
 * Neither is in every libc's or kernel's headers yet: the numbers and the
 * part of struct statmount read here are the kernel's ABI
 * (include/uapi/linux/mount.h), whose header stays 512 bytes long.
 */
#ifndef __NR_statmount
#define __NR_statmount 457
#endif
#define MC_STATX_MNT_ID_UNIQUE  0x4000U
#define MC_STATMOUNT_MNT_BASIC  0x0002U
#define MC_STATMOUNT_MNT_POINT  0x0010U
#define MC_STATMOUNT_FS_TYPE    0x0020U
#define MC_STATMOUNT_FS_SUBTYPE 0x0100U
#define MC_STATMOUNT_SB_SOURCE  0x0200U
#define MC_MOUNT_CHAIN_MAX      4096 /* mounts stacked above a path: far more than any host */

struct mc_mnt_id_req {
        uint32_t size, spare;
        uint64_t mnt_id, param;
};

struct mc_statmount {
        uint32_t size, mnt_opts;
        uint64_t mask;
        uint32_t sb_dev_major, sb_dev_minor;
        uint64_t sb_magic;
        uint32_t sb_flags, fs_type;
        uint64_t mnt_id, mnt_parent_id;
        uint32_t mnt_id_old, mnt_parent_id_old;
        uint64_t mnt_attr, mnt_propagation, mnt_peer_group, mnt_master, propagate_from;
        uint32_t mnt_root, mnt_point;
        uint64_t mnt_ns_id;
        uint32_t fs_subtype, sb_source;
        uint64_t rest[48];
        char str[];
};
_Static_assert(sizeof(struct mc_statmount) == 512, "struct statmount's header is 512 bytes");

/* One mount, as mountinfo would list it. */
struct mount_desc {
        uint64_t id, parent;
        char point[PATH_MAX], fstype[256], source[PATH_MAX];
};

/* The mount that path (which must exist) lies on, or -EOPNOTSUPP if statx can't say. */
static int mount_id_of(const char *path, uint64_t *ret)
{
        struct statx stx;

        /* DONT_SYNC: a FUSE mount's root answers from its cache, not from its daemon. */
        if (statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_STATX_DONT_SYNC,
                  MC_STATX_MNT_ID_UNIQUE, &stx) < 0)
                return errno == ENOENT || errno == ENOTDIR ? -ENOENT : -EOPNOTSUPP;
        if (!(stx.stx_mask & MC_STATX_MNT_ID_UNIQUE))
                return -EOPNOTSUPP;
        *ret = stx.stx_mnt_id;
        return 0;
}

/* statmount(2) of mount id into d; -EOPNOTSUPP where the kernel can't say all of it. */
static int mount_describe(uint64_t id, struct mount_desc *d)
{
        const uint64_t want = MC_STATMOUNT_MNT_BASIC | MC_STATMOUNT_MNT_POINT |
                              MC_STATMOUNT_FS_TYPE | MC_STATMOUNT_FS_SUBTYPE |
                              MC_STATMOUNT_SB_SOURCE;
        const size_t size = sizeof(struct mc_statmount) + 2 * PATH_MAX + 512;
        struct mc_mnt_id_req req = {.size = 24, .mnt_id = id, .param = want};
        _cleanup_free_ struct mc_statmount *sm = malloc(size);
        const char *type, *sub;

        if (!sm)
                return -ENOMEM;
        if (syscall(__NR_statmount, &req, sm, size, 0) < 0)
                return -EOPNOTSUPP; /* ENOSYS, or gone meanwhile: the table decides */
        /* An empty subtype or source may come without its bit: only a type of fuse needs one. */
        if ((sm->mask & (want & ~(MC_STATMOUNT_FS_SUBTYPE | MC_STATMOUNT_SB_SOURCE))) !=
                    (want & ~(MC_STATMOUNT_FS_SUBTYPE | MC_STATMOUNT_SB_SOURCE)) ||
            sm->size > size || sm->mnt_point >= size - sizeof(*sm) ||
            sm->fs_type >= size - sizeof(*sm))
                return -EOPNOTSUPP;
        sm->str[size - sizeof(*sm) - 1] = '\0';
        type = sm->str + sm->fs_type;
        sub = (sm->mask & MC_STATMOUNT_FS_SUBTYPE) && sm->fs_subtype < size - sizeof(*sm)
                      ? sm->str + sm->fs_subtype
                      : NULL;
        if (startswith(type, "fuse") && (!sub || !(sm->mask & MC_STATMOUNT_SB_SOURCE)))
                return -EOPNOTSUPP; /* fuse.WHAT, or whose: the table says */
        d->id = sm->mnt_id;
        d->parent = sm->mnt_parent_id;
        snprintf(d->point, sizeof(d->point), "%s", sm->str + sm->mnt_point);
        /* mountinfo's "type.subtype" */
        snprintf(d->fstype, sizeof(d->fstype), "%s%s%s", type, sub && *sub ? "." : "",
                 sub ? sub : "");
        snprintf(d->source, sizeof(d->source), "%s",
                 (sm->mask & MC_STATMOUNT_SB_SOURCE) && sm->sb_source < size - sizeof(*sm)
                         ? sm->str + sm->sb_source
                         : "");
        return 0;
}

/*
 * The topmost mount at path, if path is a mountpoint: 1 and *d, 0 if it is
 * not one (or does not exist), -EOPNOTSUPP if the kernel can't tell.
 */
static int mount_top(const char *path, struct mount_desc *d)
{
        uint64_t id;
        int r = mount_id_of(path, &id);

        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        r = mount_describe(id, d);
        if (r < 0)
                return r;
        /* path lies on the topmost mount there; it is that mount's root iff it is its point. */
        return streq(d->point, path) ? 1 : 0;
}

struct kind_query {
        const char *path;
        int kind;
        char source[PATH_MAX];
};

static int kind_of(const char *mp, const char *fstype, const char *source, void *arg)
{
        struct kind_query *q = arg;

        if (streq(mp, q->path)) { /* the last one listed is on top */
                q->kind = streq(fstype, "fuse.cloister") ? 1 : 2;
                snprintf(q->source, sizeof(q->source), "%s", source);
        }
        return 0;
}

/* The topmost mount at path into q: by its mount where the kernel says, else from the table. */
static void mount_query(struct kind_query *q)
{
        struct mount_desc d;
        int r = mount_top(q->path, &d);

        if (r >= 0) {
                if (r > 0)
                        (void)kind_of(d.point, d.fstype, d.source, q);
                return;
        }
        (void)mounts_each(kind_of, q);
}

/* Is path a mountpoint? 1: a cloister FUSE mount, 2: something else, 0: no. */
static int mount_kind(const char *path)
{
        struct kind_query q = {.path = path};

        mount_query(&q);
        return q.kind;
}

int fs_state_id(const char *state, char out[static FS_STATE_ID_MAX])
{
        struct stat st;

        if (stat(state, &st) < 0)
                return negative_errno();
        snprintf(out, FS_STATE_ID_MAX, "%llx.%llx", (unsigned long long)st.st_dev,
                 (unsigned long long)st.st_ino);
        return 0;
}

/*
 * Whose is the cloister mount at mountpoint? Its fsname is
 * cloister:NAME:STATEID (session.c): 1 if STATEID is state's, 0 if another
 * workspace's (its name in owner), -ENOENT if no cloister mount is there.
 * A mount of an older cloister (cloister:NAME, no id) is taken as ours
 * when the names agree (or name is "", the caller not knowing it): the
 * only way to tell.
 */
int fs_mount_owner(const char *state, const char *name, const char *mountpoint,
                   char owner[static FS_NAME_MAX + 1])
{
        struct kind_query q = {.path = mountpoint};
        char id[FS_STATE_ID_MAX];
        const char *who, *sep;

        mount_query(&q);
        if (q.kind != 1 || !(who = startswith(q.source, "cloister:")))
                return -ENOENT;
        sep = strrchr(who, ':');
        snprintf(owner, FS_NAME_MAX + 1, "%.*s", sep ? (int)(sep - who) : (int)strlen(who), who);
        if (!sep) /* name "": the caller does not know it, and asks about ids only */
                return !*name || streq(who, name) ? 1 : 0;
        if (fs_state_id(state, id) < 0)
                return 0;
        return streq(sep + 1, id) ? 1 : 0;
}

static int mount_covering(const char *mp, const char *fstype, const char *source, void *arg)
{
        const char *path = arg;
        size_t n = strlen(mp);

        (void)source;
        /* A cloister mount strictly above path: path would be inside it. */
        return streq(fstype, "fuse.cloister") && !streq(mp, path) &&
               (streq(mp, "/") || (strncmp(path, mp, n) == 0 && path[n] == '/'));
}

/*
 * Is a cloister mount strictly above path? 1 yes, 0 no: the mounts path lies
 * on, from the one it resolves to down to the root, each one's parent in
 * turn; or, where the kernel can't tell, every mount of the table.
 */
static int covered(const char *path)
{
        _cleanup_free_ char *dir = strdup(path);
        struct mount_desc d = {.point = ""};
        uint64_t id;
        int r;

        if (!dir)
                return mounts_each(mount_covering, (void *)path);
        /* The nearest part of path that exists lies on the same mounts path would. */
        while ((r = mount_id_of(dir, &id)) == -ENOENT) {
                char *slash = strrchr(dir, '/');
                if (!slash || slash == dir)
                        break;
                *slash = '\0';
        }
        for (int i = 0; r == 0 && i < MC_MOUNT_CHAIN_MAX; i++) {
                bool at_root = i > 0 && streq(d.point, "/");

                r = mount_describe(id, &d);
                if (r < 0 && at_root)
                        return 0; /* beneath our "/": outside what this namespace sees */
                if (r < 0)
                        break;
                if (mount_covering(d.point, d.fstype, d.source, (void *)path))
                        return 1;
                if (d.parent == d.id || d.parent == 0)
                        return 0; /* the root of the namespace */
                id = d.parent;
        }
        return mounts_each(mount_covering, (void *)path);
}

/* The nearest existing ancestor of path (or path), resolved; NULL if none resolves. */
static char *resolve_existing(const char *path)
{
        _cleanup_free_ char *p = strdup(path);

        while (p && *p) {
                char *r = realpath(p, NULL), *slash;
                if (r) {
                        /* Put the part that does not exist yet back on. */
                        size_t keep = strlen(p);
                        char *out = NULL;
                        if (asprintf(&out, "%s%s", r, path + keep) < 0)
                                out = NULL;
                        free(r);
                        return out;
                }
                slash = strrchr(p, '/');
                if (!slash)
                        break;
                *slash = '\0';
                if (!*p)
                        return realpath("/", NULL);
        }
        return NULL;
}

static bool within(const char *path, const char *dir)
{
        size_t n = strlen(dir);

        return streq(dir, "/") || (strncmp(path, dir, n) == 0 && (!path[n] || path[n] == '/'));
}

static int refuse(char **ret_error, int code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static int refuse(char **ret_error, int code, const char *fmt, ...)
{
        va_list ap;

        if (ret_error) {
                va_start(ap, fmt);
                if (vasprintf(ret_error, fmt, ap) < 0)
                        *ret_error = NULL;
                va_end(ap);
        }
        return code;
}

int fs_mountpoint_check(const char *state, const char *name, const char *mountpoint,
                        const char *source, char **ret_error)
{
        _cleanup_free_ char *real = resolve_existing(mountpoint);
        _cleanup_free_ char *real_state = resolve_existing(state);
        _cleanup_free_ char *real_source = source ? realpath(source, NULL) : NULL;
        char owner[FS_NAME_MAX + 1] = "";
        struct stat st;
        int r;

        if (!real || !real_state)
                return refuse(ret_error, -ENOENT, "mountpoint '%s': cannot resolve its path",
                              mountpoint);
        /* Someone else's mount there, live or dead: never ours to use or detach. */
        r = fs_mount_owner(state, name, real, owner);
        if (r == 0)
                return refuse(ret_error, -EEXIST,
                              "mountpoint '%s' is the mount of another workspace ('%s'); give "
                              "this one its own [workspace] mountpoint",
                              mountpoint, owner);
        if (r == 1)
                return 0; /* ours: the probe handles it, live or dead */
        if (mount_kind(real) == 2)
                return refuse(ret_error, -EBUSY,
                              "mountpoint '%s' is already a mountpoint of something else",
                              mountpoint);
        if (covered(real))
                return refuse(ret_error, -EEXIST,
                              "mountpoint '%s' is inside the mount of a workspace; choose a "
                              "directory outside every cloister mount",
                              mountpoint);
        if (real_source && within(real, real_source))
                return refuse(ret_error, -EEXIST,
                              "mountpoint '%s' is inside the source repository '%s': the mount "
                              "would show up in the work tree it presents",
                              mountpoint, source);
        /* Inside another workspace's state (it holds fs.lock); ours may hold it (<state>/mnt). */
        {
                _cleanup_free_ char *dir = strdup(real);
                for (char *slash; dir && (slash = strrchr(dir, '/')) && slash != dir;) {
                        *slash = '\0';
                        if (within(real_state, dir) && within(dir, real_state))
                                break; /* our own state */
                        _cleanup_free_ char *lock = NULL;
                        if (asprintf(&lock, "%s/fs.lock", dir) >= 0 && lstat(lock, &st) == 0 &&
                            S_ISREG(st.st_mode))
                                return refuse(ret_error, -EEXIST,
                                              "mountpoint '%s' is inside the state directory "
                                              "'%s' of another workspace",
                                              mountpoint, dir);
                }
        }
        /* An existing directory that holds something: a mount would hide it. */
        if (lstat(real, &st) == 0) {
                _cleanup_closedir_ DIR *d = NULL;
                struct dirent *de;
                if (!S_ISDIR(st.st_mode))
                        return refuse(ret_error, -ENOTDIR, "mountpoint '%s' is not a directory",
                                      mountpoint);
                d = opendir(real);
                while (d && (de = readdir(d)))
                        if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                                return refuse(ret_error, -ENOTEMPTY,
                                              "mountpoint '%s' is not empty: the mount would "
                                              "hide what it holds; choose an empty directory "
                                              "(or leave mountpoint unset: <state>/mnt)",
                                              mountpoint);
        }
        return 0;
}

static bool is_mounted(const char *path)
{
        return mount_kind(path) != 0;
}

static void detach(const char *mountpoint)
{
        if (geteuid() == 0) {
                (void)umount2(mountpoint, MNT_DETACH);
                return;
        }
        pid_t pid = fork();
        if (pid == 0) {
                execlp("fusermount3", "fusermount3", "-u", "-z", mountpoint, (char *)NULL);
                _exit(127);
        }
        if (pid > 0)
                (void)waitpid(pid, NULL, 0);
}

int fs_mount_probe(const char *state, const char *mountpoint, int *ret_pid)
{
        int pid = read_pid(state);
        bool alive;
        if (pid < 0)
                return pid;
        alive = pid > 0 && pid_is_cloister(pid) && pid_started_as_recorded(state, pid);
        if (alive && is_mounted(mountpoint)) {
                if (ret_pid)
                        *ret_pid = pid;
                return 1;
        }
        if (alive) {
                /* Starting up, or shutting down: treat as serving; the caller may retry. */
                if (ret_pid)
                        *ret_pid = pid;
                return 1;
        }
        /* Dead daemon: detach its mount (ENOTCONN) and forget its pid. */
        if (is_mounted(mountpoint)) {
                char owner[FS_NAME_MAX + 1];
                if (mount_kind(mountpoint) != 1)
                        return -EBUSY; /* not a cloister mount: leave it alone */
                if (fs_mount_owner(state, "", mountpoint, owner) == 0)
                        return -EEXIST; /* another workspace's: never ours to detach */
                detach(mountpoint);
                if (is_mounted(mountpoint))
                        return -EBUSY;
        }
        {
                _cleanup_free_ char *p = NULL;
                if (asprintf(&p, "%s/mount.pid", state) >= 0)
                        (void)unlink(p);
        }
        return 0;
}

int fs_unmount(const char *state, const char *mountpoint, int timeout_ms)
{
        int pid = 0, r;
        struct timespec delay = {.tv_nsec = 20 * 1000 * 1000};

        r = fs_mount_probe(state, mountpoint, &pid);
        if (r <= 0)
                return r;
        /* The daemon unmounts (lazily, so an open file can't wedge it) and exits. */
        if (kill(pid, SIGTERM) < 0 && errno != ESRCH)
                return negative_errno();
        for (int waited = 0; pid_is_cloister(pid); waited += 20) {
                if (waited >= timeout_ms)
                        return -ETIMEDOUT;
                nanosleep(&delay, NULL);
        }
        if (is_mounted(mountpoint))
                detach(mountpoint);
        return 0;
}

/* For `cloister mount` and `cloister run` alike (fs.h): the caller prints it. */
char *fs_daemon_log_error(const char *state, off_t since)
{
        char *ret = NULL;
        _cleanup_free_ char *p = NULL;
        _cleanup_close_ int fd = -1;
        char buf[4096], *line;
        struct stat st;
        ssize_t n;
        off_t at;

        if (asprintf(&p, "%s/fs/daemon.log", state) < 0)
                return NULL;
        fd = open(p, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0)
                return NULL;
        at = st.st_size > (off_t)sizeof(buf) - 1 ? st.st_size - (off_t)sizeof(buf) + 1 : 0;
        if (at < since)
                at = since; /* older lines are another mount's */
        n = pread(fd, buf, sizeof(buf) - 1, at);
        if (n <= 0)
                return NULL;
        buf[n] = '\0';
        while (n > 0 && buf[n - 1] == '\n')
                buf[--n] = '\0';
        line = strrchr(buf, '\n');
        line = line ? line + 1 : buf;
        if (!startswith(line, "cloister mount: "))
                return NULL;
        /* libfuse's (or fusermount3's) own reason is the line before ours. */
        if (line > buf) {
                char *prev;

                line[-1] = '\0';
                prev = strrchr(buf, '\n');
                prev = prev ? prev + 1 : buf;
                if ((startswith(prev, "fuse: ") || startswith(prev, "fusermount3: ")) &&
                    asprintf(&ret, "%s\n%s", prev, line) < 0)
                        ret = NULL;
        }
        return ret ? ret : strdup(line);
}

static int str_cmp(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

struct left_query {
        char **sorted; /* the mountpoints of the daemons that exited */
        size_t n;
        bool *left; /* by index in sorted: still a cloister mount */
};

static int left_of(const char *mp, const char *fstype, const char *source, void *arg)
{
        struct left_query *q = arg;
        const char *key = mp;
        char **hit = bsearch(&key, q->sorted, q->n, sizeof(*q->sorted), str_cmp);

        if (hit)
                q->left[hit - q->sorted] = streq(fstype, "fuse.cloister");
        return 0;
}

int fs_unmount_many(const char *const *states, const char *const *mountpoints, size_t n,
                    int timeout_ms, int *ret_results)
{
        struct timespec delay = {.tv_nsec = 20 * 1000 * 1000};
        struct left_query q = {0};
        _cleanup_free_ int *pids = calloc(n ? n : 1, sizeof(int));
        size_t waiting = 0;

        if (!pids)
                return -ENOMEM;
        /* All told at once: each daemon flushes its journal and unmounts itself, in parallel. */
        for (size_t i = 0; i < n; i++) {
                int pid = read_pid(states[i]);

                ret_results[i] = 0;
                if (pid > 0 && pid_is_cloister(pid) && pid_started_as_recorded(states[i], pid)) {
                        if (kill(pid, SIGTERM) < 0 && errno != ESRCH)
                                ret_results[i] = negative_errno();
                        else
                                pids[i] = pid, waiting++;
                } else if (pid != 0) {
                        /* A dead daemon's leftovers (or an unreadable pid file): one at a time. */
                        ret_results[i] = fs_mount_probe(states[i], mountpoints[i], NULL);
                        ret_results[i] = MIN(ret_results[i], 0);
                }
        }
        for (int waited = 0; waiting > 0; waited += 20) {
                if (waited >= timeout_ms) {
                        for (size_t i = 0; i < n; i++)
                                if (pids[i])
                                        ret_results[i] = -ETIMEDOUT;
                        break;
                }
                nanosleep(&delay, NULL);
                for (size_t i = 0; i < n; i++)
                        if (pids[i] && !pid_is_cloister(pids[i]))
                                pids[i] = 0, waiting--;
        }
        /* A mount its exited daemon left (it could not detach it): one pass over the table. */
        q.sorted = calloc(n ? n : 1, sizeof(char *));
        q.left = calloc(n ? n : 1, sizeof(bool));
        if (!q.sorted || !q.left) {
                free(q.sorted);
                free(q.left);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
                if (ret_results[i] == 0)
                        q.sorted[q.n++] = (char *)mountpoints[i];
        qsort(q.sorted, q.n, sizeof(*q.sorted), str_cmp);
        (void)mounts_each(left_of, &q);
        for (size_t i = 0; i < q.n; i++)
                if (q.left[i])
                        detach(q.sorted[i]);
        free(q.sorted);
        free(q.left);
        return 0;
}
