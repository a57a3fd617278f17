/* SPDX-License-Identifier: MIT */
/*
 * sandbox-limits.c: [limits] memory, processes and cpu for the sandbox.
 *
 * The limits are set with prlimit(2) on the sandbox's first process while it
 * waits for its seccomp filter (see sandbox.c): after bubblewrap created the user namespace,
 * before the command runs. The order matters for RLIMIT_NPROC, which the
 * kernel counts per (user namespace, uid): set on the sandbox's first
 * process, it counts the sandbox's own processes only, not every process of
 * the invoking user on the host (the host-level check uses the limit that
 * was in force when the namespace was created, i.e. the user's own).
 *
 * The kernel never enforces RLIMIT_NPROC on the host's root (uid 0 is
 * exempt in copy_process(), inside a user namespace too). A root-run agent
 * is an unprivileged host uid now (sandbox-identity.c), so the rlimit binds
 * it too; the pids cgroup (see cgroup_make() for where) stays, because it
 * also holds every process of the sandbox for the memory cap and for
 * teardown. If none can be made, running as root is refused, unless
 * [limits] cgroup = container says the container's own cgroup caps it
 * (sandbox-container.c, which checks that it does).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "config.h"
#include "sandbox-private.h"
#include "lib/cgroup.h"
#include "lib/util.h"

struct sandbox_cgroup {
        char *path;        /* the pids cgroup (v2: memory too, if enabled there) */
        char *memory_path; /* v1 only: the memory cgroup, or NULL */
};

static int file_write(const char *dir, const char *name, const char *value)
{
        _cleanup_free_ char *p = NULL;
        _cleanup_close_ int fd = -1;
        size_t l = strlen(value);

        if (asprintf(&p, "%s/%s", dir, name) < 0)
                return -ENOMEM;
        fd = open(p, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return negative_errno();
        if (write(fd, value, l) != (ssize_t)l)
                return negative_errno();
        return 0;
}

/* Our own cgroup path in the hierarchy that has `controller` (v1) or in v2
 * (NULL): "" for the root, so that it is put after a hierarchy's mount. */
static int own_cgroup(const char *controller, char **ret)
{
        _cleanup_free_ char *path = NULL;
        int r;

        r = cgroup_self_path(controller, &path);
        if (r < 0)
                return r;
        if (streq(path, "/"))
                path[0] = '\0';
        *ret = TAKE_PTR(path);
        return 0;
}

/*
 * Remove the cgroups of runs that died without cleaning up (SIGKILL). Names
 * are cloister-RUNPID-SANDBOXPID; only a dead RUNPID's are touched, and
 * rmdir() refuses a cgroup that still has processes.
 */
static void cgroup_sweep(const char *parent)
{
        _cleanup_closedir_ DIR *d = opendir(parent);
        struct dirent *de;

        if (!d)
                return;
        while ((de = readdir(d))) {
                const char *rest = startswith(de->d_name, "cloister-");
                char *end;
                long run;

                if (!rest)
                        continue;
                run = strtol(rest, &end, 10);
                if (end == rest || *end != '-' || run <= 0 || run == getpid())
                        continue;
                if (kill((pid_t)run, 0) < 0 && errno == ESRCH)
                        (void)unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
        }
}

/*
 * Make PARENT/cloister-RUN-SEQ with LIMIT = max; *ret gets the path. Made
 * before the sandbox's pid is known, while bubblewrap sets it up: only the
 * move into it (cgroup_attach) waits for the pid.
 */
static int cgroup_try(const char *parent, const char *limit, uint64_t max, char **ret)
{
        static unsigned seq; /* one run may make several sandboxes, one after the other */
        _cleanup_free_ char *dir = NULL;
        char value[32];
        int r;

        cgroup_sweep(parent);
        if (asprintf(&dir, "%s/cloister-%d-%u", parent, (int)getpid(), seq++) < 0)
                return -ENOMEM;
        if (mkdir(dir, 0755) < 0)
                return negative_errno();
        snprintf(value, sizeof(value), "%" PRIu64, max);
        r = file_write(dir, limit, value);
        if (r < 0) {
                (void)rmdir(dir);
                return r;
        }
        *ret = TAKE_PTR(dir);
        return 0;
}

/*
 * Best effort, on top of RLIMIT_AS: cap the sandbox's total memory, which
 * RLIMIT_AS can't (page cache, tmpfs and shmem pages, memfds written
 * without being mapped). v2: in the pids cgroup if memory is enabled there;
 * v1: a cgroup of its own in the memory hierarchy. No swap either, where
 * the knob exists.
 */
static void memory_limit(struct sandbox_cgroup *cg, uint64_t memory)
{
        _cleanup_free_ char *max = NULL, *own = NULL, *parent = NULL;
        char value[32];

        snprintf(value, sizeof(value), "%" PRIu64, memory);
        if (asprintf(&max, "%s/memory.max", cg->path) < 0)
                return;
        if (access(max, F_OK) == 0) {
                if (file_write(cg->path, "memory.max", value) >= 0)
                        (void)file_write(cg->path, "memory.swap.max", "0");
                return;
        }
        if (access("/sys/fs/cgroup/memory/cgroup.procs", F_OK) < 0 ||
            own_cgroup("memory", &own) < 0 || asprintf(&parent, "/sys/fs/cgroup/memory%s", own) < 0)
                return;
        if (cgroup_try(parent, "memory.limit_in_bytes", memory, &cg->memory_path) >= 0)
                (void)file_write(cg->memory_path, "memory.memsw.limit_in_bytes", value);
}

/* Where a cgroup v2 hierarchy is mounted: at the top, or at unified/ on
 * hybrid hosts (v1 controllers, v2 beside them). */
static const char *const v2_roots[] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};

/*
 * A fresh pids cgroup for the sandbox, still empty, or -EOPNOTSUPP if none
 * can be made.
 * In order: under our own v2 cgroup if pids is delegated to it; under a
 * "cloister" v2 cgroup at the top (systemd leaves our session scope a leaf,
 * and a cgroup with processes can't have controlled children); under our
 * own cgroup in the v1 pids hierarchy.
 */
static int cgroup_make(uint64_t max, uint64_t memory, struct sandbox_cgroup **ret)
{
        _cleanup_free_ char *path = NULL;
        struct sandbox_cgroup *cg;
        int r = -EOPNOTSUPP;

        for (size_t i = 0; i < ELEMENTSOF(v2_roots) && !path; i++) {
                _cleanup_free_ char *own = NULL, *parent = NULL, *ctl = NULL, *top = NULL;

                if (asprintf(&ctl, "%s/cgroup.controllers", v2_roots[i]) < 0)
                        return -ENOMEM;
                if (!cgroup_file_has(ctl, "pids") || own_cgroup(NULL, &own) < 0)
                        continue;
                free(ctl);
                ctl = NULL;
                if (asprintf(&parent, "%s%s", v2_roots[i], own) < 0 ||
                    asprintf(&ctl, "%s/cgroup.subtree_control", parent) < 0)
                        return -ENOMEM;
                if (cgroup_file_has(ctl, "pids") && cgroup_try(parent, "pids.max", max, &path) >= 0)
                        break;
                free(ctl);
                ctl = NULL;
                if (asprintf(&ctl, "%s/cgroup.subtree_control", v2_roots[i]) < 0 ||
                    asprintf(&top, "%s/cloister", v2_roots[i]) < 0)
                        return -ENOMEM;
                if (!cgroup_file_has(ctl, "pids"))
                        continue;
                if (mkdir(top, 0755) < 0 && errno != EEXIST) {
                        r = negative_errno();
                        continue;
                }
                r = file_write(top, "cgroup.subtree_control", "+pids");
                if (r >= 0)
                        r = cgroup_try(top, "pids.max", max, &path);
                if (r >= 0 && cgroup_file_has(ctl, "memory"))
                        (void)file_write(top, "cgroup.subtree_control", "+memory");
        }
        if (!path && access("/sys/fs/cgroup/pids/cgroup.procs", F_OK) == 0) {
                _cleanup_free_ char *own = NULL, *parent = NULL;

                if (own_cgroup("pids", &own) >= 0) {
                        if (asprintf(&parent, "/sys/fs/cgroup/pids%s", own) < 0)
                                return -ENOMEM;
                        r = cgroup_try(parent, "pids.max", max, &path);
                }
        }
        if (!path)
                return r;
        cg = calloc(1, sizeof(*cg));
        if (!cg) {
                (void)rmdir(path);
                return -ENOMEM;
        }
        cg->path = TAKE_PTR(path);
        memory_limit(cg, memory);
        *ret = cg;
        return 0;
}

/* Move pid into the sandbox's cgroups; its children follow it there. */
static int cgroup_attach(const struct sandbox_cgroup *cg, pid_t pid)
{
        char value[32];
        int r;

        snprintf(value, sizeof(value), "%d", (int)pid);
        r = file_write(cg->path, "cgroup.procs", value);
        /* The memory cap is best effort (memory_limit): an error here is not fatal. */
        if (r >= 0 && cg->memory_path)
                (void)file_write(cg->memory_path, "cgroup.procs", value);
        return r;
}

/*
 * Moving a process into a cgroup takes the kernel's cgroup_threadgroup_rwsem
 * for writing, and a writer that finds it idle first waits for an RCU grace
 * period: 5-10 ms on the benchmark machine, the longest step of a run. A
 * second writer within about 10 ms of the first pays nothing. So as soon as
 * a root run knows it will move the sandbox, a thread moves this process
 * into the cgroup it is already in (which changes nothing) and pays that
 * wait while the run goes on; the sandbox's own move comes in its wake.
 * Any hierarchy will do: the lock is one for all of them. Best effort.
 */
static void *cgroup_prime_main(void *arg)
{
        char value[32];

        snprintf(value, sizeof(value), "%d", (int)getpid());
        (void)file_write(arg, "cgroup.procs", value);
        free(arg);
        return NULL;
}

/* root + our own cgroup of controller (NULL: v2), if its cgroup.procs is writable. */
static char *own_cgroup_at(const char *root, const char *controller)
{
        _cleanup_free_ char *own = NULL, *dir = NULL, *procs = NULL;

        if (own_cgroup(controller, &own) < 0 || asprintf(&dir, "%s%s", root, own) < 0 ||
            asprintf(&procs, "%s/cgroup.procs", dir) < 0 || access(procs, W_OK) < 0)
                return NULL;
        return TAKE_PTR(dir);
}

/* Our own cgroup's directory: in a v2 hierarchy (v2_roots), else in the v1
 * pids hierarchy; NULL if none is writable. */
static char *own_cgroup_dir(void)
{
        char *dir;

        for (size_t i = 0; i < ELEMENTSOF(v2_roots); i++)
                if ((dir = own_cgroup_at(v2_roots[i], NULL)))
                        return dir;
        return own_cgroup_at("/sys/fs/cgroup/pids", "pids");
}

void sandbox_cgroup_prime(void)
{
        _cleanup_free_ char *dir = NULL;
        pthread_attr_t attr;
        pthread_t t;

        if (geteuid() != 0 || !(dir = own_cgroup_dir()))
                return;
        if (pthread_attr_init(&attr) != 0)
                return;
        (void)pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, cgroup_prime_main, dir) == 0)
                dir = NULL;
        pthread_attr_destroy(&attr);
}

int sandbox_cgroup_prepare(const struct config *c, struct sandbox_cgroup **ret, char **ret_note,
                           char **ret_error)
{
        int r;

        *ret = NULL;
        *ret_note = NULL;
        /* Whoever runs it: the container's cgroup binds every uid alike. */
        if (c->limits.cgroup == CONFIG_CGROUP_CONTAINER)
                return sandbox_container_verify(c, ret_note, ret_error);
        if (geteuid() != 0)
                return 0;
        r = cgroup_make(c->limits.processes, c->limits.memory, ret);
        if (r < 0)
                return sandbox_errorf(ret_error, r,
                                      "running as root, [limits] processes needs a pids cgroup "
                                      "(also to hold every process of the sandbox), and none "
                                      "could be made: %s",
                                      strerror(-r));
        return 0;
}

static void rmdir_retry(const char *path)
{
        /* The processes are gone, but the kernel may release the cgroup a moment later. */
        for (int i = 0; path && i < 100 && rmdir(path) < 0 && errno == EBUSY; i++)
                nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
}

/* The count after `key ` in a flat keyed file (memory.events, pids.events), or 0. */
static uint64_t events_count(const char *dir, const char *file, const char *key)
{
        _cleanup_free_ char *p = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        char k[64];
        uint64_t v;

        if (!dir || asprintf(&p, "%s/%s", dir, file) < 0)
                return 0;
        f = fopen(p, "re");
        while (f && fscanf(f, "%63s %" SCNu64, k, &v) == 2)
                if (streq(k, key))
                        return v;
        return 0;
}

void sandbox_cgroup_hits(const struct sandbox_cgroup *cg, struct sandbox_result *res)
{
        if (!cg)
                return;
        /* v2 counts both in the one cgroup; v1 keeps the OOM kills in memory.oom_control. */
        res->memory_hit = events_count(cg->path, "memory.events", "oom_kill") > 0 ||
                          events_count(cg->memory_path, "memory.oom_control", "oom_kill") > 0;
        res->processes_hit = events_count(cg->path, "pids.events", "max") > 0;
}

void sandbox_cgroup_name(const struct sandbox_cgroup *cg, char *buf, size_t size)
{
        const char *slash = cg && cg->path ? strrchr(cg->path, '/') : NULL;

        if (size)
                buf[0] = 0;
        /* cloister-PID-SEQ, made by cgroup_try(): always fits; a name that did not is none. */
        if (slash && strlen(slash + 1) < size)
                memcpy(buf, slash + 1, strlen(slash + 1) + 1);
}

void sandbox_cgroup_free(struct sandbox_cgroup *cg)
{
        if (!cg)
                return;
        rmdir_retry(cg->path);
        rmdir_retry(cg->memory_path);
        free(cg->path);
        free(cg->memory_path);
        free(cg);
}

static int limit_set(pid_t pid, int resource, uint64_t value, uint64_t hard)
{
        struct rlimit rl = {.rlim_cur = value, .rlim_max = hard};

        if (prlimit(pid, resource, &rl, NULL) < 0)
                return negative_errno();
        return 0;
}

struct limit {
        int resource;
        uint64_t value, hard;
        const char *what; /* for "cannot %s" */
};

static size_t limits_table(const struct config *c, struct limit t[static 4])
{
        t[0] = (struct limit){RLIMIT_AS, c->limits.memory, c->limits.memory,
                              "limit memory (RLIMIT_AS)"};
        /* SIGXCPU at the limit, so a tool may stop cleanly; SIGKILL a grace later. */
        t[1] = (struct limit){RLIMIT_CPU, c->limits.cpu, c->limits.cpu + SANDBOX_GRACE_SECONDS,
                              "limit cpu (RLIMIT_CPU)"};
        /* Core dumps of the agent's processes would land in the workspace. */
        t[2] = (struct limit){RLIMIT_CORE, 0, 0, "disable core dumps"};
        t[3] = (struct limit){RLIMIT_NPROC, c->limits.processes, c->limits.processes,
                              "limit processes (RLIMIT_NPROC)"};
        return 4;
}

/* The index of the limit that failed and its errno, or (n, 0). */
struct limits_result {
        size_t failed;
        int error;
};

static struct limits_result limits_set(const struct limit *t, size_t n, pid_t pid)
{
        for (size_t i = 0; i < n; i++) {
                int r = limit_set(pid, t[i].resource, t[i].value, t[i].hard);
                if (r < 0)
                        return (struct limits_result){i, -r};
        }
        return (struct limits_result){n, 0};
}

/*
 * prlimit(2) on another uid's process needs CAP_SYS_RESOURCE over it, which
 * root may lack (some container hosts drop it); the process's own uid and
 * gid need nothing to lower its limits. So for a root-run sandbox, whose
 * processes are its host identity, a helper with that identity sets them.
 * It is forked before bubblewrap and waits for the pid while bubblewrap
 * sets the sandbox up: forked when the pid was known, it was 2.8 ms of
 * every run on the benchmark machine, now it is a pipe's round trip.
 */
struct sandbox_limiter {
        pid_t pid;
        int to_w;   /* the sandbox's pid goes here (EOF: nothing to do, exit) */
        int from_r; /* the helper's struct limits_result comes back here */
};

static _noreturn_ void limiter_main(const struct config *c, uid_t uid, gid_t gid, int to_r,
                                    int from_w)
{
        struct limits_result res = {0, EIO};
        struct limit t[4];
        size_t n = limits_table(c, t);
        int lo = MIN(to_r, from_w), hi = MAX(to_r, from_w);
        pid_t pid;

        /* Nothing else of ours held open (the seccomp pipe, bwrap's status pipe): only the two. */
        if (lo > 3)
                (void)syscall(SYS_close_range, 3U, (unsigned)lo - 1, 0U);
        if (hi > lo + 1)
                (void)syscall(SYS_close_range, (unsigned)lo + 1, (unsigned)hi - 1, 0U);
        (void)syscall(SYS_close_range, (unsigned)hi + 1, ~0U, 0U);
        if (setgroups(0, NULL) < 0 || setresgid(gid, gid, gid) < 0 ||
            setresuid(uid, uid, uid) < 0) {
                res = (struct limits_result){0, errno};
                _exit(write(from_w, &res, sizeof(res)) == sizeof(res) ? 0 : 1);
        }
        for (;;) {
                ssize_t k = read(to_r, &pid, sizeof(pid));
                if (k < 0 && errno == EINTR)
                        continue;
                if (k != sizeof(pid))
                        _exit(0); /* the run gave up before the sandbox existed */
                break;
        }
        res = limits_set(t, n, pid);
        _exit(write(from_w, &res, sizeof(res)) == sizeof(res) ? 0 : 1);
}

int sandbox_limiter_start(const struct config *c, uid_t uid, gid_t gid,
                          struct sandbox_limiter **ret, char **ret_error)
{
        struct sandbox_limiter *l = calloc(1, sizeof(*l));
        int to = -1, from = -1;
        pid_t pid;

        if (!l)
                return sandbox_errorf(ret_error, -ENOMEM, "out of memory");
        pid = sandbox_helper_fork(&to, &from);
        if (pid == 0)
                limiter_main(c, uid, gid, to, from);
        if (pid < 0) {
                free(l);
                return sandbox_errorf(ret_error, (int)pid, "cannot start the limits helper: %s",
                                      strerror((int)-pid));
        }
        *l = (struct sandbox_limiter){.pid = pid, .to_w = to, .from_r = from};
        *ret = l;
        return 0;
}

void sandbox_limiter_free(struct sandbox_limiter *l)
{
        int status;

        if (!l)
                return;
        safe_close(l->to_w);
        safe_close(l->from_r);
        while (l->pid > 0 && waitpid(l->pid, &status, 0) < 0 && errno == EINTR)
                ;
        free(l);
}

static struct limits_result limiter_run(struct sandbox_limiter *l, pid_t pid)
{
        struct limits_result res = {0, EIO};
        /* A helper that could not take the identity has exited, its errno in the pipe. */
        int werr = write(l->to_w, &pid, sizeof(pid)) == sizeof(pid) ? 0 : errno ? errno : EIO;

        l->to_w = safe_close(l->to_w);
        for (;;) {
                ssize_t k = read(l->from_r, &res, sizeof(res));
                if (k < 0 && errno == EINTR)
                        continue;
                if (k != sizeof(res))
                        res = (struct limits_result){0, werr ? werr : EIO};
                return res;
        }
}

int sandbox_limits_apply(const struct config *c, pid_t pid, struct sandbox_limiter *l,
                         const struct sandbox_cgroup *cg, char **ret_error)
{
        struct limit t[4];
        size_t n = limits_table(c, t);
        struct limits_result res = l ? limiter_run(l, pid) : limits_set(t, n, pid);
        int r;

        if (res.error)
                return sandbox_errorf(ret_error, -res.error, "cannot %s: %s",
                                      t[MIN(res.failed, n - 1)].what, strerror(res.error));
        if (cg) {
                r = cgroup_attach(cg, pid);
                if (r < 0)
                        return sandbox_errorf(ret_error, r,
                                              "cannot move the sandbox into its pids cgroup %s: %s",
                                              cg->path, strerror(-r));
        }
        return 0;
}

/* pid's parent, from /proc/PID/stat (which needs no ptrace access); 0 if gone. */
static pid_t parent_of(pid_t pid)
{
        char p[64], buf[512], *close_paren;
        _cleanup_close_ int fd = -1;
        ssize_t n;
        int ppid;

        snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
        fd = open(p, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || (n = read(fd, buf, sizeof(buf) - 1)) <= 0)
                return 0;
        buf[n] = '\0';
        /* "PID (COMM) STATE PPID ...": COMM may hold anything, so from its last ')'. */
        close_paren = strrchr(buf, ')');
        if (!close_paren || sscanf(close_paren + 1, " %*c %d", &ppid) != 1)
                return 0;
        return (pid_t)ppid;
}

/*
 * Signal every process below pid1 by ancestry, where its PID namespace
 * can't be compared: /proc/PID/ns of another uid's process takes
 * CAP_SYS_PTRACE, which a container's root usually lacks. In a PID
 * namespace an orphan is adopted by its init, pid1, so every process of
 * the sandbox has pid1 among its ancestors.
 */
static int kill_descendants(pid_t pid1, int sig)
{
        _cleanup_closedir_ DIR *d = opendir("/proc");
        struct dirent *de;
        int r = 0;

        if (!d)
                return negative_errno();
        while ((de = readdir(d))) {
                char *end;
                long pid = strtol(de->d_name, &end, 10);
                pid_t up = (pid_t)pid;

                if (*end || pid <= 1 || pid == pid1)
                        continue;
                /* Bounded: a chain longer than this is not one this run made. */
                for (int depth = 0; depth < 4096 && up > 1 && up != pid1; depth++)
                        up = parent_of(up);
                if (up == pid1 && kill((pid_t)pid, sig) < 0 && errno != ESRCH)
                        r = negative_errno();
        }
        return r;
}

/* The sandbox's PID namespace is the one its first process lives in. */
int sandbox_kill_all(pid_t pid1, int sig)
{
        _cleanup_closedir_ DIR *d = NULL;
        char p[64];
        struct stat ns, st;
        struct dirent *de;
        int r = 0;

        if (sig == SIGKILL) {
                /* Killing a PID namespace's init kills everything in it. */
                return kill(pid1, SIGKILL) < 0 && errno != ESRCH ? negative_errno() : 0;
        }
        snprintf(p, sizeof(p), "/proc/%d/ns/pid", (int)pid1);
        if (stat(p, &ns) < 0) {
                if (errno == EACCES || errno == EPERM)
                        return kill_descendants(pid1, sig);
                return 0; /* gone */
        }
        d = opendir("/proc");
        if (!d)
                return negative_errno();
        while ((de = readdir(d))) {
                char *end;
                long pid = strtol(de->d_name, &end, 10);

                if (*end || pid <= 0 || pid == pid1)
                        continue;
                snprintf(p, sizeof(p), "/proc/%ld/ns/pid", pid);
                if (stat(p, &st) == 0 && st.st_ino == ns.st_ino && st.st_dev == ns.st_dev &&
                    kill((pid_t)pid, sig) < 0 && errno != ESRCH)
                        r = negative_errno();
        }
        return r;
}

int sandbox_kill_check(const struct config *c, uid_t host_uid, char **ret_error)
{
        struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
        struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3] = {};

        /* The sandbox is our own uid's: kill(2) needs no capability. */
        if (!host_uid || host_uid == geteuid())
                return 0;
        if (syscall(SYS_capget, &h, d) < 0)
                return sandbox_errorf(ret_error, negative_errno(),
                                      "[limits] timeout of %llus: cannot read this process's "
                                      "capabilities: %m",
                                      (unsigned long long)c->limits.timeout);
        if (!(d[CAP_TO_INDEX(CAP_KILL)].effective & CAP_TO_MASK(CAP_KILL)))
                return sandbox_errorf(
                        ret_error, -EPERM,
                        "[limits] timeout of %llus cannot be enforced: this process lacks "
                        "CAP_KILL, which it needs to stop the sandbox (host uid %u, not its own) "
                        "at the timeout or when told to stop (podman: --cap-add KILL; "
                        "Kubernetes: securityContext.capabilities.add: [KILL])",
                        (unsigned long long)c->limits.timeout, (unsigned)host_uid);
        return 0;
}
