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
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

#include "cloister-config.h"
#include "config.h"
#include "sandbox-private.h"
#include "lib/util.h"
#include "proxy/proxy.h"

#ifndef FUSE_SUPER_MAGIC
#define FUSE_SUPER_MAGIC 0x65735546
#endif

#define MOUNT_EXIT_ALREADY 3 /* `cloister mount`: a live daemon already serves it */

static void sleep_ms(long ms)
{
        nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000L}, NULL);
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
static pid_t self_spawn(const char *verb, const char *config_path, bool own_group)
{
        sigset_t all;
        pid_t pid = fork();

        if (pid != 0)
                return pid;
        sigemptyset(&all);
        sigprocmask(SIG_SETMASK, &all, NULL);
        if (own_group) {
                (void)setpgid(0, 0);
                /* If this run dies, the daemon it started must not outlive it. */
                (void)prctl(PR_SET_PDEATHSIG, SIGTERM);
        }
        execl("/proc/self/exe", "cloister", verb, config_path, (char *)NULL);
        _exit(127);
}

static int self_run(const char *verb, const char *config_path)
{
        int status;
        pid_t pid = self_spawn(verb, config_path, false);

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

static int mkdir_p(const char *path, mode_t mode)
{
        _cleanup_free_ char *p = strdup(path);

        if (!p)
                return -ENOMEM;
        for (char *s = p + 1; *s; s++) {
                if (*s != '/')
                        continue;
                *s = '\0';
                if (mkdir(p, 0755) < 0 && errno != EEXIST)
                        return negative_errno();
                *s = '/';
        }
        if (mkdir(p, mode) < 0 && errno != EEXIST)
                return negative_errno();
        return 0;
}

static int state_file(const struct config *c, const char *name, char **ret)
{
        return asprintf(ret, "%s/%s", c->workspace.state, name) < 0 ? -ENOMEM : 0;
}

static int mount_ensure(const struct sandbox_session_options *o, char **ret_error)
{
        const struct config *c = o->config;
        _cleanup_free_ char *marker = NULL;
        int r;

        if (o->no_mount) {
                struct stat st;
                if (stat(c->workspace.mountpoint, &st) < 0 || !S_ISDIR(st.st_mode))
                        return sandbox_errorf(ret_error, -ENOENT, "%s: no such directory",
                                              c->workspace.mountpoint);
                return 0;
        }
        if (is_fuse_mounted(c->workspace.mountpoint))
                return 0;
        if (access("/dev/fuse", F_OK) < 0)
                return sandbox_errorf(ret_error, -ENODEV,
                                      "FUSE is not available (/dev/fuse is missing)");
        r = self_run("mount", o->config_path);
        if (r < 0)
                return sandbox_errorf(ret_error, r, "cannot start 'cloister mount': %s",
                                      strerror(-r));
        if (r != 0 && r != MOUNT_EXIT_ALREADY)
                return sandbox_errorf(ret_error, -EIO,
                                      "mounting the workspace failed ('cloister mount' exited %d)",
                                      r);
        if (!is_fuse_mounted(c->workspace.mountpoint))
                return sandbox_errorf(ret_error, -EIO,
                                      "%s is not a FUSE mount after 'cloister mount' succeeded",
                                      c->workspace.mountpoint);
        if (r == 0) {
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

/* Unmount if this is the last run and a run mounted it. */
static void mount_release(const struct sandbox_session_options *o, int lock_fd)
{
        const struct config *c = o->config;
        _cleanup_free_ char *marker = NULL;
        int r;

        if (o->no_mount || lock_fd < 0 || state_file(c, "run.mounted", &marker) < 0)
                return;
        if (access(marker, F_OK) < 0)
                return; /* the user mounted it; it is theirs to unmount */
        if (flock(lock_fd, LOCK_EX | LOCK_NB) < 0)
                return; /* another run still uses it */
        r = self_run("unmount", o->config_path);
        if (r != 0)
                warnf(o, "unmounting the workspace failed ('cloister unmount' exited %d)", r);
        else
                (void)unlink(marker);
}

static bool socket_live(const char *path)
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
        int status;

        if (pid <= 0)
                return;
        (void)kill(pid, SIGTERM);
        for (int i = 0; i < SANDBOX_BROKER_WAIT_SECONDS * 20; i++) {
                if (waitpid(pid, &status, WNOHANG) == pid)
                        return;
                sleep_ms(50);
        }
        (void)kill(pid, SIGKILL);
        (void)waitpid(pid, &status, 0);
}

/* Start `cloister VERB CONFIG` (the broker, the proxy) unless socket already answers. */
static int daemon_start(const struct sandbox_session_options *o, const char *verb, const char *what,
                        const char *socket, pid_t *ret_pid, char **ret_error)
{
        int status;
        pid_t pid;

        *ret_pid = -1;
        if (socket_live(socket))
                return 0; /* one already serves this workspace */
        pid = self_spawn(verb, o->config_path, true);
        if (pid < 0)
                return sandbox_errorf(ret_error, negative_errno(), "cannot start the %s: %m", what);
        for (int i = 0; i < SANDBOX_BROKER_WAIT_SECONDS * 20; i++) {
                pid_t w = waitpid(pid, &status, WNOHANG);

                if (w == pid)
                        return sandbox_errorf(ret_error, -EIO,
                                              "the %s failed to start ('cloister %s' exited %d); "
                                              "nothing was run",
                                              what, verb,
                                              WIFEXITED(status) ? WEXITSTATUS(status)
                                                                : 128 + WTERMSIG(status));
                if (socket_live(socket)) {
                        *ret_pid = pid;
                        return 0;
                }
                sleep_ms(50);
        }
        broker_stop(pid);
        return sandbox_errorf(ret_error, -ETIMEDOUT, "the %s did not open %s within %d seconds",
                              what, socket, SANDBOX_BROKER_WAIT_SECONDS);
}

static int broker_start(const struct sandbox_session_options *o, pid_t *ret_pid, char **ret_error)
{
        *ret_pid = -1;
        if (!o->config->broker.policy)
                return 0;
        return daemon_start(o, "broker", "broker", o->config->broker.socket, ret_pid, ret_error);
}

int sandbox_session_run(const struct sandbox_session_options *o, struct sandbox_result *ret,
                        char **ret_error)
{
        const struct config *c = o->config;
        _cleanup_strv_free_ char **env = NULL, **refused = NULL;
        _cleanup_free_ char *lock = NULL;
        _cleanup_close_ int lock_fd = -1;
        struct sandbox_options so = {
                .config = c,
                .argv = o->argv,
                .root = c->workspace.mountpoint,
                .host_network = c->network.mode == CONFIG_NETWORK_HOST,
                .interactive = o->interactive,
        };
        _cleanup_free_ char *proxy_socket = NULL;
        sigset_t mask, old;
        pid_t broker = -1, proxy_pid = -1;
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

        r = mkdir_p(c->workspace.state, 0700);
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
        /* A sandbox whose run was killed before bwrap tied them together dies now. */
        sandbox_registry_sweep(c->workspace.state);
        r = mount_ensure(o, ret_error);
        if (r < 0)
                goto out;
        /* As root, the agent is never uid 0: it runs as the workspace's sandbox identity. */
        if (geteuid() == 0) {
                r = sandbox_identity_for(c, o->no_mount, &so.host_uid, &so.host_gid, &held,
                                         ret_error);
                if (r < 0)
                        goto out;
        }
        r = broker_start(o, &broker, ret_error);
        if (r < 0)
                goto out;
        if (c->broker.policy)
                so.broker_socket = c->broker.socket;
        if (c->network.mode == CONFIG_NETWORK_PROXY) {
                if (asprintf(&proxy_socket, "%s/%s", c->workspace.state, PROXY_CONTROL_FILE) < 0) {
                        proxy_socket = NULL;
                        r = -ENOMEM;
                        goto out;
                }
                r = daemon_start(o, "proxy", "egress proxy", proxy_socket, &proxy_pid, ret_error);
                if (r < 0)
                        goto out;
                so.proxy_socket = proxy_socket;
        }

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
        broker_stop(proxy_pid);
        broker_stop(broker);
        hostid_free(held);
        mount_release(o, lock_fd);
        sigprocmask(SIG_SETMASK, &old, NULL);
        return r;
}
