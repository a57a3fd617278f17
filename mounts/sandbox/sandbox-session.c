/* SPDX-License-Identifier: MIT */
/*
 * sandbox-session.c: what `cloister run` does around the sandbox itself:
 * make sure the workspace is mounted and the broker is up, and afterwards
 * tear down what this run started.
 *
 * The mount and the broker are separate programs (`cloister mount`,
 * `cloister broker`, started as /proc/self/exe so that they are exactly this
 * build). Several runs of one workspace may overlap, so the mount belongs to
 * all of them: each run holds a shared flock on <state>/run.lock, and the
 * run that can upgrade it to exclusive at the end is the last one and
 * unmounts, if a run (not the user) mounted it: <state>/run.mounted says so.
 * A run killed with SIGKILL leaves the marker and drops its lock, so the
 * next run adopts the mount and unmounts it when it ends.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <libgen.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include "cloister-config.h"
#include "config.h"
#include "image.h"
#include "sandbox-private.h"
#include "fs.h"
#include "lib/lifetime.h"
#include "lib/mkdir.h"
#include "lib/pidfile.h"
#include "lib/util.h"
#include "broker/keys.h"
#include "proxy/proxy.h"

#ifndef FUSE_SUPER_MAGIC
#define FUSE_SUPER_MAGIC 0x65735546
#endif

static int64_t now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Wait up to timeout_ms for fd to be readable; also returns early when the
 * optional second fd is. Waiting on descriptors instead of sleeping in
 * steps: a step of 50 ms was most of `cloister run`'s start-up.
 */
static void fds_wait(int fd, int fd2, int timeout_ms)
{
        struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = fd2, .events = POLLIN}};

        if (fd < 0 && fd2 < 0) {
                nanosleep(&(struct timespec){timeout_ms / 1000, (timeout_ms % 1000) * 1000000L},
                          NULL);
                return;
        }
        (void)poll(p, 2, timeout_ms); /* a negative fd is ignored by poll */
}

static int pidfd_of(pid_t pid)
{
        return (int)syscall(SYS_pidfd_open, pid, 0);
}

static void warnf(const struct sandbox_session_options *o, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static void warnf(const struct sandbox_session_options *o, const char *fmt, ...)
{
        _cleanup_free_ char *m = NULL;
        va_list ap;

        if (!o->warn)
                return;
        va_start(ap, fmt);
        if (vasprintf(&m, fmt, ap) < 0)
                m = NULL;
        va_end(ap);
        if (m)
                o->warn(m);
}

/* Start `/proc/self/exe VERB CONFIG` with default signals; own process group if asked. */
/* How self_spawn starts a daemon. */
enum {
        SPAWN_DAEMON = 1 << 0, /* a broker or a proxy: its own process group, and
                                * `--for-runs`: it serves while any run of the workspace
                                * lives, this one or another (lib/lifetime.h), so it must
                                * not die with this run (no PR_SET_PDEATHSIG) */
        SPAWN_QUIET = 1 << 1,  /* `--quiet`: no start and stop notes (a run shows them with -v) */
};

/* `cloister VERB [--quiet] [--for-runs] CONFIG`, not waited for. */
static pid_t self_spawn(const char *verb, const char *config_path, unsigned flags)
{
        const char *argv[6];
        sigset_t all;
        size_t n = 0;
        pid_t pid = fork();

        if (pid != 0)
                return pid;
        sigemptyset(&all);
        sigprocmask(SIG_SETMASK, &all, NULL);
        /* Away from the terminal's Ctrl-C: the run decides when it stops. */
        if (flags & SPAWN_DAEMON)
                (void)setpgid(0, 0);
        argv[n++] = "cloister";
        argv[n++] = verb;
        if (flags & SPAWN_QUIET)
                argv[n++] = "--quiet";
        if (flags & SPAWN_DAEMON)
                argv[n++] = "--for-runs";
        argv[n++] = config_path;
        argv[n] = NULL;
        execv("/proc/self/exe", (char *const *)argv);
        _exit(127);
}

static int self_run(const char *verb, const char *config_path)
{
        int status;
        pid_t pid = self_spawn(verb, config_path, 0);

        if (pid < 0)
                return negative_errno();
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return negative_errno();
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static bool is_fuse_mounted(const char *path)
{
        struct statfs sf;

        /* ENOTCONN: a dead daemon's mount; `cloister mount` cleans it up. */
        return statfs(path, &sf) == 0 && sf.f_type == FUSE_SUPER_MAGIC;
}

static int state_file(const struct config *c, const char *name, char **ret)
{
        return asprintf(ret, "%s/%s", c->workspace.state, name) < 0 ? -ENOMEM : 0;
}

/*
 * `cloister mount CONFIG --ready-fd=3` as a daemon of its own: a child of
 * ours forks it and exits at once, so that it is nobody's child here (a
 * long-lived caller, cloister mcp, would otherwise keep it as a zombie
 * after it is unmounted) and it is in a session of its own, away from the
 * terminal's Ctrl-C. Before, the run started `cloister mount`, which
 * forked the daemon and exited once it served: that fork of a process
 * with 31 libraries mapped, and that exit, were on the path of every run
 * from cold (cmd-mount.c, at --ready-fd, says what else it gains).
 * Returns the read end of the pipe the daemon writes one byte to once it
 * serves; EOF without it: it failed (or another daemon already serves).
 */
static int mount_spawn(const char *config_path, char **ret_error)
{
        _cleanup_close_ int rd = -1, wr = -1;
        int p[2], status;
        pid_t pid;

        if (pipe2(p, O_CLOEXEC) < 0)
                return sandbox_errorf(ret_error, negative_errno(), "pipe: %m");
        rd = p[0];
        wr = p[1];
        pid = fork();
        if (pid < 0)
                return sandbox_errorf(ret_error, negative_errno(),
                                      "cannot start 'cloister mount': %m");
        if (pid == 0) {
                /* Async-signal-safe calls only: a caller (cloister mcp) may have
                 * threads. The option last: the command line still reads
                 * `cloister mount CONFIG`, as pgrep -f and people look for it. */
                const char *argv[] = {"cloister", "mount", config_path, "--ready-fd=3", NULL};
                sigset_t none;

                sigemptyset(&none);
                sigprocmask(SIG_SETMASK, &none, NULL);
                pid = fork();
                if (pid != 0)
                        _exit(pid < 0 ? 127 : 0);
                (void)setsid();
                /* fd 3 without close-on-exec (dup2 onto itself would keep it). */
                if (wr == 3 ? fcntl(3, F_SETFD, 0) < 0 : dup2(wr, 3) < 0)
                        _exit(127);
                execv("/proc/self/exe", (char *const *)argv);
                _exit(127);
        }
        wr = safe_close(wr);
        while (waitpid(pid, &status, 0) < 0)
                if (errno != EINTR)
                        return sandbox_errorf(ret_error, negative_errno(),
                                              "cannot wait for 'cloister mount': %m");
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return sandbox_errorf(ret_error, -EIO, "cannot start 'cloister mount'");
        return TAKE_FD(rd);
}

/* The size of the daemon's log now: what it says after this is this mount's. */
static off_t mount_log_size(const struct config *c)
{
        _cleanup_free_ char *path = NULL;
        struct stat st;

        if (state_file(c, "fs/daemon.log", &path) < 0 || stat(path, &st) < 0)
                return 0;
        return st.st_size;
}

/*
 * Make sure the workspace is mounted, in two halves so that the broker and
 * the proxy start while the mount's daemon starts: mount_begin() starts it
 * unless the workspace is mounted (m->ready = -1 then), mount_finish()
 * waits for it and checks.
 */
struct mount_start {
        int ready;    /* the daemon's ready pipe (mount_spawn), or -1 */
        off_t log_at; /* the size of its log before it started */
};

static int mount_begin(const struct sandbox_session_options *o, struct mount_start *m,
                       char **ret_error)
{
        const struct config *c = o->config;

        m->ready = -1;
        if (o->no_mount) {
                struct stat st;
                if (stat(c->workspace.mountpoint, &st) < 0 || !S_ISDIR(st.st_mode))
                        return sandbox_errorf(ret_error, -ENOENT, "%s: no such directory",
                                              c->workspace.mountpoint);
                return 0;
        }
        {
                /* Never another workspace's mount, live or dead, nor a place
                 * it may not go (fs_mountpoint_check): its writes would land
                 * in the other's work. */
                _cleanup_free_ char *why = NULL;
                int r = fs_mountpoint_check(c->workspace.state, c->workspace.name,
                                            c->workspace.mountpoint, c->repo.source, &why);
                if (r < 0)
                        return sandbox_errorf(ret_error, r, "%s: %s", c->file,
                                              why ? why : strerror(-r));
        }
        if (is_fuse_mounted(c->workspace.mountpoint))
                return 0;
        if (access("/dev/fuse", F_OK) < 0)
                return sandbox_errorf(ret_error, -ENODEV,
                                      "FUSE is not available (/dev/fuse is missing)");
        m->log_at = mount_log_size(c);
        m->ready = mount_spawn(o->config_path, ret_error);
        return m->ready < 0 ? m->ready : 0;
}

static int mount_finish(const struct sandbox_session_options *o, struct mount_start *m,
                        char **ret_error)
{
        const struct config *c = o->config;
        _cleanup_free_ char *marker = NULL;
        char byte;
        ssize_t n;

        if (m->ready < 0)
                return 0;
        do
                n = read(m->ready, &byte, 1);
        while (n < 0 && errno == EINTR);
        m->ready = safe_close(m->ready);
        if (n != 1) {
                /* Exited without serving: `cloister mount` said why on our
                 * stderr, or in its log; or another daemon serves (exit 3). */
                if (is_fuse_mounted(c->workspace.mountpoint))
                        return 0;
                _cleanup_free_ char *why = fs_daemon_log_error(c->workspace.state, m->log_at);
                /* One line: libfuse's reason and the daemon's, then ours. */
                for (char *nl = why ? strchr(why, '\n') : NULL; nl; nl = strchr(nl, '\n'))
                        *nl = ';';
                return sandbox_errorf(ret_error, -EIO,
                                      "mounting the workspace failed%s%s (the daemon ended before "
                                      "serving; its log: %s/fs/daemon.log)",
                                      why ? ": " : "", why ? why : "", c->workspace.state);
        }
        if (!is_fuse_mounted(c->workspace.mountpoint))
                return sandbox_errorf(ret_error, -EIO,
                                      "%s is not a FUSE mount after 'cloister mount' succeeded",
                                      c->workspace.mountpoint);
        {
                _cleanup_close_ int fd = -1;

                if (state_file(c, "run.mounted", &marker) < 0)
                        return -ENOMEM;
                fd = open(marker, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
                if (fd < 0)
                        warnf(o, "cannot write %s (%m); the mount will stay after this run",
                              marker);
        }
        return 0;
}

bool sandbox_socket_live(const char *path)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        _cleanup_close_ int fd = -1;

        if (strlen(path) >= sizeof(sa.sun_path))
                return false;
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        return fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
}

static void broker_stop(pid_t pid)
{
        _cleanup_close_ int pidfd = -1;
        int64_t until = now_ms() + SANDBOX_BROKER_WAIT_SECONDS * 1000;
        int status;

        if (pid <= 0)
                return;
        pidfd = pidfd_of(pid);
        (void)kill(pid, SIGTERM);
        for (;;) {
                int64_t left = until - now_ms();

                if (waitpid(pid, &status, WNOHANG) == pid)
                        return;
                if (left <= 0)
                        break;
                /* Without a pidfd (old kernel), look again every 20 ms. */
                fds_wait(pidfd, -1, pidfd >= 0 ? (int)left : (int)MIN(left, 20));
        }
        (void)kill(pid, SIGKILL);
        (void)waitpid(pid, &status, 0);
}

/*
 * An inotify watch on the directory that will hold socket, so that its
 * creation wakes us; -1 if there is none (then we look every few ms).
 */
static int socket_watch(const char *socket)
{
        _cleanup_free_ char *dir = strdup(socket);
        int fd;

        if (!dir)
                return -1;
        fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
        if (fd < 0)
                return -1;
        if (inotify_add_watch(fd, dirname(dir), IN_CREATE | IN_MOVED_TO | IN_ATTRIB) < 0)
                return safe_close(fd);
        return fd;
}

static void fd_drain(int fd)
{
        char buf[4096];

        while (fd >= 0 && read(fd, buf, sizeof(buf)) > 0)
                ;
}

/*
 * The end of a run: whether it is the last of its workspace (it can take
 * run.lock exclusively: no other run holds it shared), and if so, what runs
 * started goes with it: the broker and the proxy started for runs (found by
 * their pid files, or this run's own children), and the mount, if a run
 * made it. Another run still going keeps them all.
 */
static void run_release(const struct sandbox_session_options *o, int lock_fd, pid_t own_broker,
                        pid_t own_proxy)
{
        const struct config *c = o->config;
        _cleanup_free_ char *marker = NULL;
        _cleanup_close_ int state = -1;
        int r;

        if (lock_fd < 0 || flock(lock_fd, LOCK_EX | LOCK_NB) < 0)
                return; /* another run still uses them */
        state = open(c->workspace.state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (state >= 0) {
                (void)pidfile_stop(state, "proxy.for-runs", SANDBOX_BROKER_WAIT_SECONDS * 1000);
                (void)pidfile_stop(state, "broker.for-runs", SANDBOX_BROKER_WAIT_SECONDS * 1000);
        }
        /* Ours, in case they had not written their pid files yet. */
        broker_stop(own_proxy);
        broker_stop(own_broker);
        if (o->no_mount || state_file(c, "run.mounted", &marker) < 0)
                return;
        if (access(marker, F_OK) < 0)
                return; /* the user mounted it; it is theirs to unmount */
        r = self_run("unmount", o->config_path);
        if (r != 0)
                warnf(o, "unmounting the workspace failed ('cloister unmount' exited %d)", r);
        else
                (void)unlink(marker);
}

/* A daemon (the broker, the proxy) this run started and waits for. */
struct daemon {
        const char *verb, *what, *socket;
        pid_t pid; /* -1: none started (one already answered, or none wanted) */
        int pidfd, watch;
};

static void daemon_close(struct daemon *d)
{
        d->pidfd = safe_close(d->pidfd);
        d->watch = safe_close(d->watch);
}

/* Start `cloister VERB CONFIG` unless socket already answers; don't wait. */
static int daemon_spawn(const struct sandbox_session_options *o, struct daemon *d, char **ret_error)
{
        if (sandbox_socket_live(d->socket))
                return 0; /* one already serves this workspace */
        d->watch = socket_watch(d->socket);
        d->pid = self_spawn(d->verb, o->config_path, SPAWN_DAEMON | (o->verbose ? 0 : SPAWN_QUIET));
        if (d->pid < 0)
                return sandbox_errorf(ret_error, negative_errno(), "cannot start the %s: %m",
                                      d->what);
        d->pidfd = pidfd_of(d->pid);
        return 0;
}

/* Wait until the daemon's socket answers; stop it if it never does. */
static int daemon_ready(struct daemon *d, char **ret_error)
{
        int64_t until = now_ms() + SANDBOX_BROKER_WAIT_SECONDS * 1000;
        int status;

        if (d->pid < 0)
                return 0;
        for (;;) {
                pid_t w = waitpid(d->pid, &status, WNOHANG);
                int64_t left;

                if (w == d->pid) {
                        d->pid = -1;
                        daemon_close(d);
                        return sandbox_errorf(
                                ret_error, -EIO, "the %s failed to start ('cloister %s' exited %d)",
                                d->what, d->verb,
                                WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
                }
                fd_drain(d->watch);
                if (sandbox_socket_live(d->socket)) {
                        daemon_close(d);
                        return 0;
                }
                left = until - now_ms();
                if (left <= 0)
                        break;
                /*
                 * The socket's creation (bind) or the daemon's exit wakes us.
                 * listen() follows bind at once but makes no event: a socket
                 * that exists and refuses is looked at again in 1 ms. Without
                 * a watch, look every 2 ms.
                 */
                fds_wait(d->watch, d->pidfd,
                         (int)MIN(left, d->watch < 0                   ? 2
                                        : access(d->socket, F_OK) == 0 ? 1
                                                                       : 50));
        }
        broker_stop(d->pid);
        d->pid = -1;
        daemon_close(d);
        return sandbox_errorf(ret_error, -ETIMEDOUT, "the %s did not open %s within %d seconds",
                              d->what, d->socket, SANDBOX_BROKER_WAIT_SECONDS);
}

/*
 * Whether the proxy may start while the broker is still starting: only once
 * the broker has published its keys (the proxy loads them when it starts and
 * looks again at most once a second; the broker writes them only on its very
 * first start, or when told to rotate). On a workspace's first run the
 * proxy waits for the broker.
 */
static bool broker_keys_published(const struct config *c)
{
        _cleanup_free_ char *path = NULL;

        if (!c->broker.policy)
                return true;
        if (asprintf(&path, "%s/" BROKER_PUBLIC_FILE, c->broker.dir) < 0)
                return false;
        return access(path, F_OK) == 0;
}

int sandbox_session_run(const struct sandbox_session_options *o, struct sandbox_result *ret,
                        char **ret_error)
{
        const struct config *c = o->config;
        _cleanup_strv_free_ char **env = NULL, **refused = NULL;
        _cleanup_free_ char *lock = NULL, *dlock = NULL;
        _cleanup_close_ int lock_fd = -1, lifetime_fd = -1, daemons_fd = -1;
        struct sandbox_options so = {
                .config = c,
                .argv = o->argv,
                .root = c->workspace.mountpoint,
                .host_network = c->network.mode == CONFIG_NETWORK_HOST,
                .interactive = o->interactive,
                .stdout_fd = o->stdout_fd,
                .stderr_fd = o->stderr_fd,
        };
        _cleanup_free_ char *proxy_socket = NULL, *image_root = NULL, *image_digest = NULL;
        /* [image]: held while the sandbox runs on it, so that `image rm` refuses (image_hold). */
        _cleanup_close_ int image_hold = -1;
        sigset_t mask, old;
        struct daemon broker = {"broker", "broker", NULL, -1, -1, -1};
        struct daemon egress = {"proxy", "egress proxy", NULL, -1, -1, -1};
        struct mount_start mount = {.ready = -1};
        bool proxy_spawned = false;
        hostid *held = NULL;
        int r;

        if (access(CLOISTER_BWRAP, X_OK) < 0)
                return sandbox_errorf(ret_error, -ENOENT,
                                      "bubblewrap is not installed (%s: %m); install the "
                                      "'bubblewrap' package",
                                      CLOISTER_BWRAP);
        r = sandbox_check_userns(ret_error);
        if (r < 0)
                return r;
        if (so.host_network && !o->allow_host_network)
                return sandbox_errorf(ret_error, -EPERM,
                                      "%s: [network] mode = host is refused without "
                                      "--allow-host-network (mode = proxy gives the agent an "
                                      "allow-listed network)",
                                      c->file);
        if (so.host_network)
                warnf(o, "warning: the sandbox shares the host's network (--allow-host-network)");

        /* Stop signals wait until teardown can run; sandbox_run() reads them. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGHUP);
        if (!o->interactive)
                sigaddset(&mask, SIGINT);
        sigprocmask(SIG_BLOCK, &mask, &old);

        r = mkdir_p(c->workspace.state, 0755, 0700);
        if (r < 0) {
                sandbox_errorf(ret_error, r, "cannot create %s: %s", c->workspace.state,
                               strerror(-r));
                goto out;
        }
        r = state_file(c, "run.lock", &lock);
        if (r < 0)
                goto out;
        lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (lock_fd < 0 || flock(lock_fd, LOCK_SH) < 0) {
                r = sandbox_errorf(ret_error, negative_errno(), "cannot lock %s: %m", lock);
                goto out;
        }
        /*
         * This run keeps the broker and the proxy alive, whoever started
         * them (lib/lifetime.h); while one is stopping because the last run
         * ended, this waits, and then starts a new one.
         */
        lifetime_fd = lifetime_hold(c->workspace.state);
        if (lifetime_fd < 0) {
                r = sandbox_errorf(ret_error, lifetime_fd, "cannot lock %s/%s: %s",
                                   c->workspace.state, LIFETIME_LOCK, strerror(-lifetime_fd));
                goto out;
        }
        /* A sandbox whose run was killed before bwrap tied them together dies now. */
        sandbox_registry_sweep(c->workspace.state);
        sandbox_trace("locked");
        /*
         * The mount, the broker and the proxy are independent programs
         * that each take a while to start (a process each, with its
         * dynamic linking): start all three, then wait. Only the proxy may
         * need the broker first (broker_keys_published()).
         */
        /*
         * One run at a time looks for the mount and the daemons and starts
         * what is missing: two runs that start together would each start a
         * mount (or a broker), and the second would fail on the first's,
         * taking its run down with it. Held until all of them serve.
         */
        r = state_file(c, "daemons.lock", &dlock);
        if (r < 0)
                goto out;
        daemons_fd = open(dlock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (daemons_fd < 0 || flock(daemons_fd, LOCK_EX) < 0) {
                r = sandbox_errorf(ret_error, negative_errno(), "cannot lock %s: %m", dlock);
                goto out;
        }
        r = mount_begin(o, &mount, ret_error);
        if (r < 0)
                goto out;
        if (c->broker.policy) {
                so.broker_socket = c->broker.socket;
                broker.socket = c->broker.socket;
                r = daemon_spawn(o, &broker, ret_error);
                if (r < 0)
                        goto out;
        }
        if (c->network.mode == CONFIG_NETWORK_PROXY) {
                if (asprintf(&proxy_socket, "%s/%s", c->workspace.state, PROXY_CONTROL_FILE) < 0) {
                        proxy_socket = NULL;
                        r = -ENOMEM;
                        goto out;
                }
                egress.socket = so.proxy_socket = proxy_socket;
                if (broker.pid < 0 || broker_keys_published(c)) {
                        r = daemon_spawn(o, &egress, ret_error);
                        if (r < 0)
                                goto out;
                        proxy_spawned = true;
                }
        }
        r = mount_finish(o, &mount, ret_error);
        if (r < 0)
                goto out;
        sandbox_trace("mounted");
        /* [image]: imported by the mount; here only found, and checked against the config. */
        r = image_workspace_resolve(c, &image_root, &image_digest, &image_hold, ret_error);
        if (r < 0)
                goto out;
        so.image_root = image_root;
        so.image_digest = image_digest;
        /* As root, the agent is never uid 0: it runs as the workspace's sandbox identity. */
        if (geteuid() == 0) {
                r = sandbox_identity_for(c, o->no_mount, &so.host_uid, &so.host_gid, &held,
                                         ret_error);
                if (r < 0)
                        goto out;
        }
        r = daemon_ready(&broker, ret_error);
        if (r < 0)
                goto out;
        sandbox_trace("broker up");
        if (egress.socket) {
                if (!proxy_spawned) {
                        r = daemon_spawn(o, &egress, ret_error);
                        if (r < 0)
                                goto out;
                }
                r = daemon_ready(&egress, ret_error);
                if (r < 0)
                        goto out;
                sandbox_trace("proxy up");
        }
        daemons_fd = safe_close(daemons_fd);

        so.extra_env = o->extra_env;
        r = sandbox_env_build(&so, o->host_env, &env, &refused);
        if (r < 0) {
                sandbox_errorf(ret_error, r, "cannot build the environment: %s", strerror(-r));
                goto out;
        }
        for (char **n = refused; *n; n++)
                warnf(o,
                      "warning: [run] env: not passing %s into the sandbox: it looks like a "
                      "secret or is set by cloister",
                      *n);
        so.env = env;
        r = sandbox_run(&so, ret, ret_error);
out:
        if (mount.ready >= 0) {
                /* Failed while `cloister mount` worked: let it finish, to unmount after. */
                _cleanup_free_ char *ignored = NULL;
                (void)mount_finish(o, &mount, &ignored);
        }
        daemons_fd = safe_close(daemons_fd);
        daemon_close(&egress);
        daemon_close(&broker);
        hostid_free(held);
        run_release(o, lock_fd, broker.pid, egress.pid);
        sigprocmask(SIG_SETMASK, &old, NULL);
        return r;
}

struct sandbox_hold {
        struct sandbox_session_options o;
        int lock_fd;
};

int sandbox_hold_take(const struct sandbox_session_options *o, sandbox_hold **ret, char **ret_error)
{
        const struct config *c = o->config;
        _cleanup_free_ char *lock = NULL, *dlock = NULL;
        _cleanup_close_ int lock_fd = -1, daemons_fd = -1;
        sandbox_hold *h;
        struct mount_start mount = {.ready = -1};
        int r;

        r = mkdir_p(c->workspace.state, 0755, 0700);
        if (r < 0)
                return sandbox_errorf(ret_error, r, "cannot create %s: %s", c->workspace.state,
                                      strerror(-r));
        if (state_file(c, "run.lock", &lock) < 0 || state_file(c, "daemons.lock", &dlock) < 0)
                return -ENOMEM;
        lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (lock_fd < 0 || flock(lock_fd, LOCK_SH) < 0)
                return sandbox_errorf(ret_error, negative_errno(), "cannot lock %s: %m", lock);
        daemons_fd = open(dlock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (daemons_fd < 0 || flock(daemons_fd, LOCK_EX) < 0)
                return sandbox_errorf(ret_error, negative_errno(), "cannot lock %s: %m", dlock);
        r = mount_begin(o, &mount, ret_error);
        if (r == 0)
                r = mount_finish(o, &mount, ret_error);
        if (r < 0)
                return r;
        h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        h->o = (struct sandbox_session_options){
                .config_path = o->config_path, .config = o->config, .warn = o->warn};
        h->lock_fd = TAKE_FD(lock_fd);
        *ret = h;
        return 0;
}

void sandbox_hold_release(sandbox_hold *h)
{
        if (!h)
                return;
        run_release(&h->o, h->lock_fd, -1, -1);
        safe_close(h->lock_fd);
        free(h);
}
