/* SPDX-License-Identifier: MIT */
/*
 * sandbox.c: one sandboxed command from start to teardown.
 *
 * bwrap is started with two extra pipes: a status pipe (--json-status-fd)
 * on which it reports the sandbox's first process and, at the end, the
 * command's exit code, and the seccomp pipe (--seccomp). bwrap's sandbox
 * process reads the filter only once its namespaces and mounts are set up,
 * right before the command, so the filter is the gate: we write it only
 * after the resource limits are applied (sandbox-limits.c). If we die
 * before that, bwrap reads an empty filter, fails, and nothing runs: a
 * `cloister run` killed during setup can't leave an unlimited command
 * behind. The filter is smaller than PIPE_BUF, so the write is atomic.
 *
 * While the command runs we hold SIGINT, SIGTERM and SIGHUP in a signalfd
 * and watch bwrap through a pidfd, so that a signal or the wall-clock
 * timeout becomes SIGTERM to every process of the sandbox and, after
 * SANDBOX_GRACE_SECONDS, SIGKILL to its PID namespace. bwrap runs with
 * --die-with-parent: if we are killed outright, so is the sandbox, but for
 * the start, which the records of sandbox-registry.c cover.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "cloister-config.h"
#include "config.h"
#include "sandbox-private.h"
#include "lib/crashpoint.h"
#include "lib/util.h"
#include "proxy/proxy.h"

#define STATUS_MAX 4096 /* bwrap's status documents are a few dozen bytes each */
/* How long a failing run waits for bwrap to name its child, to kill both. */
#define SANDBOX_REPORT_WAIT_MS 2000

struct status_reader {
        char buf[STATUS_MAX + 1];
        size_t len;
        pid_t child_pid;
        int exit_code; /* -1 until bwrap reports it */
};

static void fds_close(struct sandbox_fds *fds)
{
        fds->seccomp = safe_close(fds->seccomp);
        fds->status_w = safe_close(fds->status_w);
        fds->env = safe_close(fds->env);
        fds->userns = safe_close(fds->userns);
        for (size_t i = 0; i < fds->n_stage; i++)
                free(fds->stage[i].path);
        fds->n_stage = 0;
}

/* Consume whole lines; each is one JSON document from bwrap. */
static void status_parse(struct status_reader *s)
{
        char *nl;

        while ((nl = memchr(s->buf, '\n', s->len))) {
                json_t *j;

                *nl = '\0';
                j = json_loads(s->buf, 0, NULL);
                if (j) {
                        json_t *v = json_object_get(j, "child-pid");
                        if (json_is_integer(v) && json_integer_value(v) > 0)
                                s->child_pid = (pid_t)json_integer_value(v);
                        v = json_object_get(j, "exit-code");
                        if (json_is_integer(v))
                                s->exit_code = (int)json_integer_value(v);
                        json_decref(j);
                }
                s->len -= (size_t)(nl + 1 - s->buf);
                memmove(s->buf, nl + 1, s->len);
        }
        if (s->len == STATUS_MAX)
                s->len = 0; /* an overlong line is not bwrap's: drop it */
}

/* Returns 1 on data, 0 on EOF. */
static int status_read(int fd, struct status_reader *s)
{
        ssize_t n = read(fd, s->buf + s->len, STATUS_MAX - s->len);

        if (n < 0)
                return errno == EINTR || errno == EAGAIN ? 1 : negative_errno();
        if (n == 0)
                return 0;
        s->len += (size_t)n;
        status_parse(s);
        return 1;
}

static int64_t now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void sandbox_trace(const char *step)
{
        static int enabled = -1;
        struct timespec ts;

        if (enabled < 0)
                enabled = getenv("CLOISTER_TRACE_STARTUP") != NULL;
        if (!enabled)
                return;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        fprintf(stderr, "cloister: trace %lld.%03ld %s\n",
                (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, (ts.tv_nsec / 1000) % 1000,
                step);
}

static _noreturn_ void child_exec(const struct sandbox_options *o, char **argv,
                                  const struct sandbox_fds *fds, const sigset_t *mask)
{
        /* bwrap's own environment: fixed, nothing of the sandbox's (sandbox-env.c) */
        static char *const bwrap_env[] = {(char *)SANDBOX_BWRAP_ENV_PATH, NULL};
        int keep[4];
        size_t n = 0;
        int r;

        /* bwrap and the sandbox start with default signal dispositions */
        signal(SIGINT, SIG_DFL);
        signal(SIGQUIT, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        sigprocmask(SIG_UNBLOCK, mask, NULL);
        /* Keep a terminal's ^C away from bwrap itself unless a person drives it. */
        if (!o->interactive)
                (void)setpgid(0, 0);
        /* Before anything of the sandbox exists: a sweep can find this group. */
        if (fds->record && (r = sandbox_registry_claim(fds->record)) < 0) {
                fprintf(stderr, "cloister: cannot record the sandbox in %s: %s\n",
                        fds->record->path, strerror(-r));
                _exit(127);
        }
        /* /tmp and /dev/shm with their inode limit, in a mount namespace of ours. */
        if (sandbox_tmpfs_enter(fds->tmpfs) < 0)
                _exit(127);
        /* /etc, in the same namespace: one tmpfs that bwrap binds in one step. */
        if (sandbox_etc_enter(fds->etc) < 0)
                _exit(127);
        /* Nothing of ours or our caller's leaks in: only stdio and bwrap's fds. */
        if (syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
                _exit(127);
        if (o->host_uid) {
                /* As root, what only root can do; then bwrap runs as the host identity. */
                r = sandbox_stage_mount(fds);
                if (r < 0) {
                        fprintf(stderr,
                                "cloister: cannot stage the sandbox's bind sources in %s: %s\n",
                                SANDBOX_STAGE_DIR, strerror(-r));
                        _exit(127);
                }
                /*
                 * The system calls, not libc's wrappers: in a process that
                 * ever had threads those signal every thread of ours to
                 * change ids too, and this child shares our memory.
                 */
                if (syscall(SYS_setgroups, 0, NULL) < 0 ||
                    syscall(SYS_setresgid, o->host_gid, o->host_gid, o->host_gid) < 0 ||
                    syscall(SYS_setresuid, o->host_uid, o->host_uid, o->host_uid) < 0) {
                        fprintf(stderr, "cloister: cannot become host uid %u: %m\n",
                                (unsigned)o->host_uid);
                        _exit(127);
                }
                keep[n++] = fds->userns;
        }
        keep[n++] = fds->seccomp;
        keep[n++] = fds->status_w;
        keep[n++] = fds->env;
        for (size_t i = 0; i < n; i++)
                if (fcntl(keep[i], F_SETFD, 0) < 0)
                        _exit(127);
        sandbox_trace("bwrap executed (its mounts staged)");
        /* Last, so that our messages above still reach our own stderr. */
        if ((o->stdout_fd > 2 && dup2(o->stdout_fd, STDOUT_FILENO) < 0) ||
            (o->stderr_fd > 2 && dup2(o->stderr_fd, STDERR_FILENO) < 0))
                _exit(127);
        execve(argv[0], argv, bwrap_env);
        _exit(127);
}

struct child_args {
        const struct sandbox_options *o;
        char **argv;
        const struct sandbox_fds *fds;
        const sigset_t *mask;
};

static int child_main(void *arg)
{
        const struct child_args *a = arg;

        child_exec(a->o, a->argv, a->fds, a->mask);
}

/*
 * Start the child that becomes bwrap the way posix_spawn(3) does: in our
 * memory (CLONE_VM) on a stack of its own, and with us suspended until it
 * execs or exits (CLONE_VFORK). A fork copied our page tables and then both
 * sides took a copy-on-write fault for every page they touched: 1.5-3 ms
 * of every run on the benchmark machine, more than the mounts the child
 * makes. child_exec() is fit for it: system calls only, on its own stack,
 * no allocation, and no signal handler of ours can run in it (its
 * handlers are its own copy; we install none).
 */
static pid_t child_spawn(const struct sandbox_options *o, char **argv,
                         const struct sandbox_fds *fds, const sigset_t *mask)
{
        const size_t size = 256 * 1024; /* child_exec()'s paths and buffers are on it */
        struct child_args a = {o, argv, fds, mask};
        void *stack = mmap(NULL, size, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        pid_t pid;
        int err;

        if (stack == MAP_FAILED)
                return negative_errno();
        pid = clone(child_main, (char *)stack + size, CLONE_VM | CLONE_VFORK | SIGCHLD, &a);
        err = errno;
        munmap(stack, size);
        return pid < 0 ? -err : pid;
}

/* The filter's BPF in memory, to be written in one atomic write later. */
static int filter_load(void **ret, size_t *ret_len)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = malloc(PIPE_BUF);
        size_t len = 0;
        int r;

        if (!buf)
                return -ENOMEM;
        r = sandbox_seccomp_export(&fd);
        if (r < 0)
                return r;
        for (;;) {
                ssize_t n = read(fd, buf + len, PIPE_BUF - len);
                if (n < 0)
                        return negative_errno();
                if (n == 0)
                        break;
                len += (size_t)n;
                if (len == PIPE_BUF)
                        return -E2BIG; /* would not be written atomically */
        }
        if (len == 0 || len % 8 != 0)
                return -EINVAL;
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

/*
 * Wait for bwrap's report of the sandbox's first process, or its end; sfd
 * (the stop signals; -1: none) cuts it short, and so does timeout_ms (-1:
 * none), with -ETIMEDOUT.
 */
static int wait_child_pid(int status_r, int sfd, struct status_reader *s, int timeout_ms)
{
        struct pollfd p[2] = {{.fd = status_r, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
        int64_t until = now_ms() + timeout_ms;

        while (s->child_pid <= 0) {
                int64_t left = timeout_ms < 0 ? -1 : MAX(until - now_ms(), (int64_t)0);
                int r = poll(p, 2, (int)left);

                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (r == 0)
                        return -ETIMEDOUT;
                if (p[1].revents & POLLIN)
                        return -EINTR; /* asked to stop before anything ran */
                if (p[0].revents) {
                        r = status_read(status_r, s);
                        if (r <= 0)
                                return r < 0 ? r : -ECHILD;
                }
        }
        return 0;
}

int sandbox_check_userns(char **ret_error)
{
        _cleanup_fclose_ FILE *f = NULL;
        long v;

        f = fopen("/proc/sys/user/max_user_namespaces", "re");
        if (f && fscanf(f, "%ld", &v) == 1 && v == 0)
                return sandbox_errorf(
                        ret_error, -EPERM,
                        "user namespaces are disabled (user.max_user_namespaces = 0)");
        if (f)
                fclose(TAKE_PTR(f));
        if (geteuid() != 0) {
                f = fopen("/proc/sys/kernel/unprivileged_userns_clone", "re");
                if (f && fscanf(f, "%ld", &v) == 1 && v == 0)
                        return sandbox_errorf(ret_error, -EPERM,
                                              "unprivileged user namespaces are disabled "
                                              "(kernel.unprivileged_userns_clone = 0)");
        }
        return 0;
}

int sandbox_run(const struct sandbox_options *o, struct sandbox_result *ret, char **ret_error)
{
        struct sandbox_tmpfs tmpfs = {0};
        struct sandbox_etc etc = {0};
        struct sandbox_fds fds = {.seccomp = -1,
                                  .status_w = -1,
                                  .env = -1,
                                  .userns = -1,
                                  .tmpfs = &tmpfs,
                                  .etc = &etc};
        _cleanup_close_ int status_r = -1, seccomp_w = -1, sfd = -1, pidfd = -1, proxy_ctl = -1;
        _cleanup_free_ void *filter = NULL;
        _cleanup_free_ char *cgroup_note = NULL;
        size_t filter_len = 0;
        _cleanup_strv_free_ char **argv = NULL;
        struct sandbox_cgroup *cg = NULL;
        struct sandbox_limiter *limiter = NULL;
        struct sandbox_userns *userns = NULL;
        struct sandbox_record record = SANDBOX_RECORD_NULL;
        struct status_reader *st = NULL;
        struct sandbox_result res = {0};
        sigset_t mask, old;
        struct sigaction ign = {.sa_handler = SIG_IGN}, old_int, old_quit, old_pipe;
        int64_t deadline, kill_at = -1;
        pid_t bwrap = -1, pgid = 0;
        int pipefd[2], wstatus = 0, r;
        bool stopping = false;

        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGHUP);
        if (!o->interactive)
                sigaddset(&mask, SIGINT);
        sigprocmask(SIG_BLOCK, &mask, &old);
        sigaction(SIGINT, o->interactive ? &ign : NULL, &old_int);
        sigaction(SIGQUIT, o->interactive ? &ign : NULL, &old_quit);
        /* A bwrap that died early must not kill us by SIGPIPE before teardown. */
        sigaction(SIGPIPE, &ign, &old_pipe);

        st = calloc(1, sizeof(*st));
        if (!st) {
                r = sandbox_errorf(ret_error, -ENOMEM, "out of memory");
                goto out;
        }
        st->exit_code = -1;
        sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
        if (sfd < 0) {
                r = sandbox_errorf(ret_error, negative_errno(), "signalfd: %m");
                goto out;
        }
        /*
         * A limit that can't be enforced refuses the run before anything
         * runs: the timeout (and any stop) needs kill(2) over the
         * sandbox's uid; a container's root that is the host's root
         * (sandbox-hostroot.c) makes the sandbox's uids the host's.
         */
        r = sandbox_kill_check(o->config, o->host_uid, ret_error);
        if (r >= 0 && o->host_uid)
                r = sandbox_host_root_check(o->config, ret_error);
        if (r < 0)
                goto out;
        sandbox_cgroup_prime();
        /* The helper's fork and unshare run while we build bwrap's argv. */
        if (o->host_uid) {
                r = sandbox_stage_dir_ensure(ret_error);
                if (r >= 0)
                        r = sandbox_userns_start(o->host_uid, o->host_gid, &userns, ret_error);
                if (r < 0)
                        goto out;
                /* The number bwrap's argv names; finish puts the namespace on it. */
                fds.userns = open("/dev/null", O_RDONLY | O_CLOEXEC);
                if (fds.userns < 0) {
                        r = sandbox_errorf(ret_error, negative_errno(), "/dev/null: %m");
                        goto out;
                }
        }
        if (pipe2(pipefd, O_CLOEXEC) < 0) {
                r = sandbox_errorf(ret_error, negative_errno(), "pipe: %m");
                goto out;
        }
        fds.seccomp = pipefd[0];
        seccomp_w = pipefd[1];
        if (pipe2(pipefd, O_CLOEXEC) < 0) {
                r = sandbox_errorf(ret_error, negative_errno(), "pipe: %m");
                goto out;
        }
        status_r = pipefd[0];
        fds.status_w = pipefd[1];
        r = sandbox_tmpfs_prepare(o->config, o->host_uid != 0, &tmpfs, ret_error);
        if (r < 0)
                goto out;
        sandbox_trace("tmpfs prepared");
        r = sandbox_bwrap_argv(o, &fds, &argv, ret_error);
        if (r < 0)
                goto out;
        sandbox_trace("bwrap argv built");
        if (o->host_uid) {
                r = sandbox_userns_finish(userns, fds.userns, ret_error);
                if (r < 0)
                        goto out;
                sandbox_trace("user namespace made");
        }

        /* Written before the spawn, and by the child with its group: see
         * sandbox-registry.c. A terminal's run keeps its group, which is the
         * user's shell's: that one is never recorded. */
        r = sandbox_registry_open(o->config->workspace.state, &record);
        if (r < 0) {
                sandbox_errorf(ret_error, r, "cannot record the sandbox in %s/sandboxes: %s",
                               o->config->workspace.state, strerror(-r));
                goto out;
        }
        fds.record = o->interactive ? NULL : &record;
        bwrap = child_spawn(o, argv, &fds, &mask);
        if (bwrap < 0) {
                r = sandbox_errorf(ret_error, bwrap, "cannot start bubblewrap: %s",
                                   strerror(-bwrap));
                goto out;
        }
        fds_close(&fds);
        pgid = o->interactive ? 0 : bwrap;
        res.bwrap_pid = bwrap;
        res.pgid = pgid;
        crashpoint("run");
        pidfd = (int)syscall(SYS_pidfd_open, bwrap, 0);
        if (pidfd < 0) {
                r = sandbox_errorf(ret_error, negative_errno(), "pidfd_open: %m");
                goto out;
        }
        /* While bubblewrap sets up, not before: the fork would delay it. */
        if (o->host_uid) {
                r = sandbox_limiter_start(o->config, o->host_uid, o->host_gid, &limiter, ret_error);
                if (r < 0)
                        goto out;
        }

        r = wait_child_pid(status_r, sfd, st, -1);
        sandbox_trace("bwrap reported its child");
        res.pid = st->child_pid;
        crashpoint("run");
        if (r < 0) {
                if (r == -EINTR)
                        sandbox_errorf(ret_error, r, "interrupted while setting up the sandbox");
                else
                        sandbox_errorf(ret_error, r,
                                       "bubblewrap could not set up the sandbox (see its "
                                       "message above)");
                goto out;
        }
        /*
         * While bubblewrap's child builds the sandbox (most of the start-up),
         * and only now that its pid is known: a failure from here on kills
         * it with bwrap (out:). The filter is read only after our write
         * below; only the move into the cgroups needs the pid.
         */
        r = filter_load(&filter, &filter_len);
        if (r < 0) {
                sandbox_errorf(ret_error, r, "cannot build the seccomp filter: %s", strerror(-r));
                goto out;
        }
        sandbox_trace("seccomp filter built");
        r = sandbox_cgroup_prepare(o->config, &cg, &cgroup_note, ret_error);
        if (r < 0)
                goto out;
        sandbox_cgroup_name(cg, res.cgroup, sizeof(res.cgroup));
        /* What enforces [limits] when the container's cgroup does: said on every run. */
        if (cgroup_note)
                fprintf(stderr, "cloister run: %s\n", cgroup_note);
        sandbox_trace("cgroups made");
        crashpoint("run");
        r = sandbox_registry_update(&record, pgid, st->child_pid);
        if (r < 0) {
                sandbox_errorf(ret_error, r, "cannot record the sandbox in %s/sandboxes: %s",
                               o->config->workspace.state, strerror(-r));
                goto out;
        }
        crashpoint("run");
        /*
         * The proxy's listener goes into the sandbox's network namespace now,
         * before the command can run; the connection stays open for the
         * sandbox's life (when it closes, the proxy drops the listener).
         */
        if (o->proxy_socket) {
                r = proxy_attach_sandbox(o->proxy_socket, st->child_pid, getpid(), &proxy_ctl,
                                         ret_error);
                if (r < 0)
                        goto out;
                sandbox_trace("proxy attached");
        }
        /*
         * Can we stop it? Signal 0 makes the kernel check the permission
         * the timeout's SIGTERM and SIGKILL need, and sends nothing: the
         * capability check above, verified against this very process.
         */
        if (kill(st->child_pid, 0) < 0) {
                r = sandbox_errorf(ret_error, negative_errno(),
                                   "[limits] timeout of %llus cannot be enforced: this process "
                                   "may not signal the sandbox's first process (pid %d): %m",
                                   (unsigned long long)o->config->limits.timeout,
                                   (int)st->child_pid);
                goto out;
        }
        r = sandbox_limits_apply(o->config, st->child_pid, limiter, cg, ret_error);
        sandbox_limiter_free(limiter);
        limiter = NULL;
        if (r < 0)
                goto out;
        /* Limits are in place: hand over the filter, which lets the command run. */
        if (write(seccomp_w, filter, filter_len) != (ssize_t)filter_len) {
                r = sandbox_errorf(ret_error, negative_errno(),
                                   "cannot pass the seccomp filter: %m");
                goto out;
        }
        seccomp_w = safe_close(seccomp_w);
        sandbox_trace("limits applied, filter passed");
        crashpoint("run");
        /* Off the path to the command's start: the user namespace helper has exited. */
        sandbox_userns_free(userns);
        userns = NULL;

        deadline = now_ms() + (int64_t)o->config->limits.timeout * 1000;
        for (;;) {
                struct pollfd p[3] = {
                        {.fd = pidfd, .events = POLLIN},
                        {.fd = sfd, .events = POLLIN},
                        {.fd = status_r, .events = POLLIN},
                };
                int64_t now = now_ms(), until = kill_at >= 0 ? kill_at : deadline;
                int timeout = until <= now ? 0 : (int)MIN(until - now, (int64_t)60000);

                if (poll(p, status_r >= 0 ? 3 : 2, timeout) < 0 && errno != EINTR) {
                        r = sandbox_errorf(ret_error, negative_errno(), "poll: %m");
                        goto out;
                }
                if (p[0].revents & POLLIN)
                        break;
                if (status_r >= 0 && p[2].revents && status_read(status_r, st) <= 0)
                        status_r = safe_close(status_r);
                if (p[1].revents & POLLIN) {
                        struct signalfd_siginfo si;
                        if (read(sfd, &si, sizeof(si)) == sizeof(si)) {
                                if (stopping && kill_at >= 0)
                                        kill_at = now_ms(); /* asked twice: no more grace */
                                if (!res.signal)
                                        res.signal = (int)si.ssi_signo;
                        }
                }
                now = now_ms();
                if (!stopping && (res.signal || now >= deadline)) {
                        res.timed_out = !res.signal;
                        stopping = true;
                        r = sandbox_kill_all(st->child_pid, SIGTERM);
                        if (r < 0 && !res.stop_error)
                                res.stop_error = r;
                        kill_at = now + SANDBOX_GRACE_SECONDS * 1000;
                } else if (stopping && kill_at >= 0 && now >= kill_at) {
                        /* The one that counts: it ends the PID namespace. */
                        res.stop_error = sandbox_kill_all(st->child_pid, SIGKILL);
                        kill_at = -1;
                        deadline = INT64_MAX;
                }
        }
        while (waitpid(bwrap, &wstatus, 0) < 0 && errno == EINTR)
                ;
        bwrap = -1;
        while (status_r >= 0 && status_read(status_r, st) > 0)
                ;
        if (st->exit_code >= 0)
                res.status = st->exit_code;
        else if (WIFSIGNALED(wstatus))
                res.status = 128 + WTERMSIG(wstatus);
        else if (stopping)
                res.status = 128 + SIGKILL; /* bwrap's monitor died with the namespace */
        else {
                r = sandbox_errorf(ret_error, -EPROTO,
                                   "bubblewrap could not start the command (exit %d; see its "
                                   "message above)",
                                   WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
                goto out;
        }
        /* Stopped because we were told to stop (Ctrl-C: SIGINT): the status a
         * shell gives a command that signal ended, 130 for Ctrl-C, however
         * the sandbox's processes ended on the SIGTERM and SIGKILL we sent. */
        if (res.signal)
                res.status = 128 + res.signal;
        sandbox_cgroup_hits(cg, &res);
        *ret = res;
        r = 0;
out:
        if (bwrap > 0) {
                /*
                 * Failed after the spawn: nothing may run, and nothing may be
                 * left. bwrap's child must die with bwrap: killed alone, bwrap
                 * leaves it orphaned and blocked, in its setup, on a wake-up
                 * from bwrap that never comes. So learn its pid first if bwrap
                 * has not said it yet (it does right after the clone, or exits).
                 */
                seccomp_w = safe_close(seccomp_w); /* whatever happens, it reads no filter */
                if (st && st->child_pid <= 0 && status_r >= 0)
                        (void)wait_child_pid(status_r, -1, st, SANDBOX_REPORT_WAIT_MS);
                if (st && st->child_pid > 0)
                        (void)kill(st->child_pid, SIGKILL);
                (void)kill(bwrap, SIGKILL);
                while (waitpid(bwrap, &wstatus, 0) < 0 && errno == EINTR)
                        ;
        }
        sandbox_userns_free(userns);
        sandbox_limiter_free(limiter);
        sandbox_cgroup_free(cg);
        sandbox_registry_close(&record);
        fds_close(&fds);
        sandbox_tmpfs_clear(&tmpfs);
        sandbox_etc_clear(&etc);
        free(st);
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGQUIT, &old_quit, NULL);
        sigaction(SIGPIPE, &old_pipe, NULL);
        sigprocmask(SIG_SETMASK, &old, NULL);
        return r;
}
