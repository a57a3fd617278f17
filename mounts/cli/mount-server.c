/* SPDX-License-Identifier: MIT */
/*
 * mount-server.c: `cloister mount --server`, and the request `cloister
 * mount` sends it (mount-server.h says why it exists).
 *
 * Trust boundary: the server's socket, $XDG_STATE_HOME/cloister/mount.sock
 * (0600, in a directory made 0700), takes connections from processes of the
 * server's own uid only (SO_PEERCRED; root's server serves root only), and
 * a client uses a server of its own uid only: it hands the server its
 * working directory and its stdout and stderr. The server itself reads
 * nothing a client sends and holds no secret: for each connection it forks
 * a handler, which reads and checks the one request (bounded in size, in
 * descriptors and in time), loads the config, and forks the daemon as
 * `cloister mount` does (mount_daemon_fork), then answers and exits. A
 * slow or malformed client stops only its own handler. The server stays
 * single-threaded (no thread may hold a lock across its forks), reaps its
 * handlers, and runs at most MOUNT_SERVER_HANDLERS of them at once. The
 * daemon is the handler's child: once the handler exits it belongs to
 * init (or the nearest subreaper), not to the server, and it lives on
 * when the server ends.
 *
 * The server only loads the module: it does not initialize libgit2 for
 * its daemons, which would fork one seeded random state (mbedTLS's, and
 * libgit2's) into all of them, and cost each more memory than it saves
 * (docs/bench-log/2026-12-07-density-shared-pages.md).
 *
 * Request (SOCK_SEQPACKET, one message): struct request, then the config's
 * path, the state and the mountpoint the client checked, each
 * NUL-terminated; and three descriptors: the client's working directory,
 * stdout and stderr. Answer: struct answer.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "command.h"
#include "config.h"
#include "known.h"
#include "lib/mkdir.h"
#include "lib/util.h"
#include "mount-server.h"

#define REQUEST_MAGIC 0x636c6d31u /* "clm1" */
#define REQUEST_FDS   3           /* working directory, stdout, stderr */
#define REQUEST_MAX   (sizeof(struct request) + 3 * (PATH_MAX + 1))
/* Handlers running at once; a connection past them is answered "busy". */
#define MOUNT_SERVER_HANDLERS 64
/* How long a handler waits for its request. */
#define REQUEST_TIMEOUT_S 10

struct request {
        uint32_t magic;
        uint32_t umask;
        uint64_t nofile_cur, nofile_max; /* the client's RLIMIT_NOFILE */
};

struct answer {
        uint32_t magic;
        int32_t code; /* what `cloister mount` exits with */
        int32_t pid;  /* the daemon's, when code is 0 */
        char message[244];
};

int mount_server_path(char **ret)
{
        _cleanup_free_ char *dir = NULL;
        int r = known_xdg_dir("state", &dir);

        if (r < 0)
                return r;
        if (asprintf(ret, "%s/mount.sock", dir) < 0)
                return -ENOMEM;
        if (strlen(*ret) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
                free(*ret);
                *ret = NULL;
                return -ENAMETOOLONG;
        }
        return 0;
}

static void address(const char *path, struct sockaddr_un *a)
{
        memset(a, 0, sizeof(*a));
        a->sun_family = AF_UNIX;
        memcpy(a->sun_path, path, strlen(path) + 1); /* mount_server_path checked its length */
}

/* The peer's uid is ours (root's: root); its pid in *ret_pid if not NULL. */
static bool peer_is_us(int fd, uid_t *ret_uid, pid_t *ret_pid)
{
        struct ucred cred;
        socklen_t len = sizeof(cred);

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof(cred))
                return false;
        *ret_uid = cred.uid;
        if (ret_pid)
                *ret_pid = cred.pid;
        return cred.uid == geteuid();
}

/* pid mounts where we do: a daemon it forked would mount where we see it. */
static bool same_mount_namespace(pid_t pid)
{
        char p[64];
        struct stat ours, theirs;

        snprintf(p, sizeof(p), "/proc/%d/ns/mnt", (int)pid);
        return pid > 0 && stat("/proc/self/ns/mnt", &ours) == 0 && stat(p, &theirs) == 0 &&
               ours.st_dev == theirs.st_dev && ours.st_ino == theirs.st_ino;
}

static void answer_send(int fd, int code, int pid, const char *message)
{
        struct answer a = {.magic = REQUEST_MAGIC, .code = code, .pid = pid};

        if (message)
                snprintf(a.message, sizeof(a.message), "%s", message);
        (void)!send(fd, &a, sizeof(a), MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* The NUL-terminated string at *at in buf[0, n), and *at past it; NULL if none, or empty. */
static const char *field(const char *buf, size_t n, size_t *at)
{
        const char *s = buf + *at, *nul;

        if (*at >= n || !(nul = memchr(s, '\0', n - *at)) || nul == s)
                return NULL;
        *at += (size_t)(nul - s) + 1;
        return s;
}

/*
 * A handler, in its own process: read conn's one request, load its config,
 * start the daemon, answer. The exit code, for the server's wait only.
 */
static int handle(int conn)
{
        static char buf[REQUEST_MAX];
        union {
                struct cmsghdr h;
                char b[CMSG_SPACE(REQUEST_FDS * sizeof(int))];
        } control;
        struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
        struct msghdr m = {.msg_iov = &iov,
                           .msg_iovlen = 1,
                           .msg_control = control.b,
                           .msg_controllen = sizeof(control.b)};
        struct timeval tv = {.tv_sec = REQUEST_TIMEOUT_S};
        _cleanup_config_ struct config *c = NULL;
        _cleanup_free_ char *err = NULL;
        struct request req;
        const char *file, *state, *mnt;
        int fds[REQUEST_FDS] = {-1, -1, -1}, nfds = 0, r, pid = 0;
        size_t at = sizeof(req);
        ssize_t n;

        (void)setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        n = recvmsg(conn, &m, MSG_CMSG_CLOEXEC);
        for (struct cmsghdr *h = n >= 0 ? CMSG_FIRSTHDR(&m) : NULL; h; h = CMSG_NXTHDR(&m, h))
                if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
                        int k = (int)((h->cmsg_len - CMSG_LEN(0)) / sizeof(int));

                        for (int i = 0; i < k; i++) {
                                int fd;

                                memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
                                if (nfds < REQUEST_FDS)
                                        fds[nfds] = fd;
                                else
                                        close(fd);
                                nfds++;
                        }
                }
        if (n < 0) {
                answer_send(conn, 1, 0,
                            errno == EAGAIN || errno == EWOULDBLOCK
                                    ? "the mount server got no request in time"
                                    : "the mount server could not read the request");
                return 1;
        }
        if ((m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || (size_t)n < sizeof(req) ||
            nfds != REQUEST_FDS) {
                answer_send(conn, 1, 0,
                            "malformed request to the mount server: wrong size or descriptors");
                return 1;
        }
        memcpy(&req, buf, sizeof(req));
        file = field(buf, (size_t)n, &at);
        state = field(buf, (size_t)n, &at);
        mnt = field(buf, (size_t)n, &at);
        if (req.magic != REQUEST_MAGIC || !file || !state || !mnt || at != (size_t)n) {
                answer_send(conn, 1, 0,
                            "malformed request to the mount server: not a cloister mount request");
                return 1;
        }
        /* The client's directory, output and file mode mask, and its descriptor limit. */
        if (fchdir(fds[0]) < 0 || dup2(fds[1], STDOUT_FILENO) < 0 ||
            dup2(fds[2], STDERR_FILENO) < 0) {
                answer_send(conn, 1, 0,
                            "malformed request to the mount server: a descriptor is not usable");
                return 1;
        }
        for (int i = 0; i < REQUEST_FDS; i++)
                close(fds[i]);
        umask((mode_t)(req.umask & 0777));
        {
                struct rlimit rl = {.rlim_cur = req.nofile_cur, .rlim_max = req.nofile_max};

                if (rl.rlim_cur <= rl.rlim_max)
                        (void)setrlimit(RLIMIT_NOFILE, &rl); /* above ours, root's server only */
        }
        /* From here on, errors go to the client's stderr, as those of `cloister mount`. */
        r = config_load(file, &c, &err);
        if (r < 0) {
                answer_send(
                        conn,
                        command_fail(&command_mount, EXIT_USAGE, "%s", err ? err : strerror(-r)), 0,
                        NULL);
                return EXIT_USAGE;
        }
        /* The client checked where these lie: a config changed since is not what it checked. */
        if (!streq(c->workspace.state, state) || !streq(c->workspace.mountpoint, mnt)) {
                answer_send(conn,
                            command_fail(&command_mount, 1,
                                         "%s: changed while being mounted; try again", c->file),
                            0, NULL);
                return 1;
        }
        r = mount_daemon_fork(c, conn, &pid);
        answer_send(conn, r, r == 0 ? pid : 0, NULL);
        return r;
}

/* A server listens at path already: refuse. A socket left by a dead one: remove it. */
static int stale_remove(const char *path)
{
        struct sockaddr_un a;
        struct stat st;
        _cleanup_close_ int fd = -1;

        if (lstat(path, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISSOCK(st.st_mode))
                return -EEXIST;
        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        address(path, &a);
        if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
                return -EADDRINUSE;
        if (errno != ECONNREFUSED)
                return -errno;
        return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
}

static int listen_open(const char *path, int *ret)
{
        _cleanup_free_ char *dir = strdup(path);
        _cleanup_close_ int fd = -1;
        struct sockaddr_un a;
        mode_t old;
        int r;

        if (!dir)
                return -ENOMEM;
        *strrchr(dir, '/') = '\0';
        r = mkdir_p(dir, 0700, 0700);
        if (r < 0)
                return r;
        r = stale_remove(path);
        if (r < 0)
                return r;
        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        address(path, &a);
        old = umask(0177); /* the socket 0600: connecting needs write permission */
        r = bind(fd, (struct sockaddr *)&a, sizeof(a));
        umask(old);
        if (r < 0 || listen(fd, MOUNT_SERVER_HANDLERS) < 0)
                return -errno;
        *ret = TAKE_FD(fd);
        return 0;
}

/* One connection: refuse it, or fork its handler. */
static void accept_one(int listen_fd, int sig_fd, const sigset_t *old_mask, unsigned *handlers)
{
        _cleanup_close_ int conn = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
        char why[128];
        uid_t uid = (uid_t)-1;
        pid_t pid;

        if (conn < 0)
                return;
        if (!peer_is_us(conn, &uid, NULL)) {
                snprintf(why, sizeof(why),
                         "the mount server of uid %u serves that uid only, not %d",
                         (unsigned)geteuid(), uid == (uid_t)-1 ? -1 : (int)uid);
                answer_send(conn, 1, 0, why);
                return;
        }
        if (*handlers >= MOUNT_SERVER_HANDLERS) {
                answer_send(conn, 1, 0, "the mount server is busy; try again");
                return;
        }
        fflush(NULL);
        pid = fork();
        if (pid < 0) {
                snprintf(why, sizeof(why), "the mount server cannot fork: %s", strerror(errno));
                answer_send(conn, 1, 0, why);
                return;
        }
        if (pid == 0) {
                close(listen_fd);
                close(sig_fd);
                signal(SIGPIPE, SIG_DFL);
                (void)sigprocmask(SIG_SETMASK, old_mask, NULL);
                exit(handle(conn)); /* exit, not _exit: LeakSanitizer runs at exit */
        }
        (*handlers)++;
}

int mount_server_main(void)
{
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int listen_fd = -1, sig_fd = -1;
        sigset_t mask, old_mask;
        unsigned handlers = 0;
        struct stat ours;
        int r;

        r = mount_server_path(&path);
        if (r < 0)
                return command_fail(&command_mount, 1, "--server: no socket path: %s",
                                    strerror(-r));
        sigemptyset(&mask);
        sigaddset(&mask, SIGCHLD);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &mask, &old_mask) < 0 ||
            (sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK)) < 0)
                return command_fail(&command_mount, 1, "--server: signalfd: %s", strerror(errno));
        r = listen_open(path, &listen_fd);
        if (r == -EADDRINUSE)
                return command_fail(&command_mount, 1,
                                    "--server: a mount server listens at %s already", path);
        if (r < 0)
                return command_fail(&command_mount, 1, "--server: cannot listen at %s: %s", path,
                                    r == -EEXIST ? "it exists and is not a socket" : strerror(-r));
        if (stat(path, &ours) < 0)
                return command_fail(&command_mount, 1, "--server: %s: %s", path, strerror(errno));
        signal(SIGPIPE, SIG_IGN);
        fprintf(stderr, "cloister mount: serving mounts at %s\n", path);
        for (bool stop = false; !stop;) {
                struct pollfd p[2] = {{.fd = sig_fd, .events = POLLIN},
                                      {.fd = listen_fd, .events = POLLIN}};
                struct signalfd_siginfo si;

                if (poll(p, 2, -1) < 0 && errno != EINTR)
                        break;
                while (read(sig_fd, &si, sizeof(si)) == sizeof(si))
                        if (si.ssi_signo != SIGCHLD)
                                stop = true;
                while (waitpid(-1, NULL, WNOHANG) > 0)
                        if (handlers)
                                handlers--;
                if (!stop && (p[1].revents & POLLIN))
                        accept_one(listen_fd, sig_fd, &old_mask, &handlers);
        }
        /* Ours still (not a later server's): remove it. Handlers finish on their own. */
        {
                struct stat st;

                if (stat(path, &st) == 0 && st.st_dev == ours.st_dev && st.st_ino == ours.st_ino)
                        (void)unlink(path);
        }
        return 0;
}

int mount_server_request(const char *file, const struct config *c, int *ret_pid)
{
        _cleanup_free_ char *path = NULL, *body = NULL;
        _cleanup_close_ int fd = -1, cwd = -1;
        struct sockaddr_un a;
        struct request req = {.magic = REQUEST_MAGIC};
        struct answer ans;
        struct rlimit rl;
        uid_t uid = (uid_t)-1;
        pid_t server = 0;
        size_t len;
        ssize_t n;
        mode_t mask;
        union {
                struct cmsghdr h;
                char b[CMSG_SPACE(REQUEST_FDS * sizeof(int))];
        } control;

        if (mount_server_path(&path) < 0)
                return MOUNT_SERVER_NONE;
        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return MOUNT_SERVER_NONE;
        address(path, &a);
        if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
                return MOUNT_SERVER_NONE;
        /* It gets our directory and output: only a server of our own uid. */
        if (!peer_is_us(fd, &uid, &server)) {
                fprintf(stderr,
                        "cloister mount: %s is served by uid %d, not ours: mounting without it\n",
                        path, (int)uid);
                return MOUNT_SERVER_NONE;
        }
        /* A server in another mount namespace (a container's) would mount where we don't see. */
        if (!same_mount_namespace(server)) {
                fprintf(stderr,
                        "cloister mount: the server at %s mounts in another mount namespace: "
                        "mounting without it\n",
                        path);
                return MOUNT_SERVER_NONE;
        }
        cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (cwd < 0)
                return command_fail(&command_mount, 1, "cannot open the working directory: %s",
                                    strerror(errno));
        mask = umask(0);
        umask(mask);
        req.umask = mask;
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
                req.nofile_cur = rl.rlim_cur;
                req.nofile_max = rl.rlim_max;
        } else {
                req.nofile_cur = req.nofile_max = RLIM_INFINITY;
        }
        len = sizeof(req) + strlen(file) + strlen(c->workspace.state) +
              strlen(c->workspace.mountpoint) + 3;
        if (len > REQUEST_MAX)
                return MOUNT_SERVER_NONE; /* paths past PATH_MAX: nothing a server could open */
        body = malloc(len);
        if (!body)
                return command_fail(&command_mount, 1, "out of memory");
        memcpy(body, &req, sizeof(req));
        stpcpy(stpcpy(stpcpy(body + sizeof(req), file) + 1, c->workspace.state) + 1,
               c->workspace.mountpoint);
        {
                struct iovec iov = {.iov_base = body, .iov_len = len};
                struct msghdr m = {.msg_iov = &iov,
                                   .msg_iovlen = 1,
                                   .msg_control = control.b,
                                   .msg_controllen = sizeof(control.b)};
                struct cmsghdr *h = CMSG_FIRSTHDR(&m);
                int fds[REQUEST_FDS] = {cwd, STDOUT_FILENO, STDERR_FILENO};

                memset(&control, 0, sizeof(control));
                h->cmsg_level = SOL_SOCKET;
                h->cmsg_type = SCM_RIGHTS;
                h->cmsg_len = CMSG_LEN(sizeof(fds));
                memcpy(CMSG_DATA(h), fds, sizeof(fds));
                fflush(NULL);
                if (sendmsg(fd, &m, MSG_NOSIGNAL) < 0)
                        return command_fail(&command_mount, 1,
                                            "cannot send the request to the mount server at %s: %s",
                                            path, strerror(errno));
        }
        do
                n = recv(fd, &ans, sizeof(ans), 0);
        while (n < 0 && errno == EINTR);
        if (n != (ssize_t)sizeof(ans) || ans.magic != REQUEST_MAGIC)
                return command_fail(&command_mount, 1,
                                    "the mount server at %s ended without an answer (see %s/fs/"
                                    "daemon.log)",
                                    path, c->workspace.state);
        ans.message[sizeof(ans.message) - 1] = '\0';
        if (ans.message[0])
                fprintf(stderr, "cloister mount: %s\n", ans.message);
        if (ans.code == 0 && ans.pid <= 0)
                return command_fail(&command_mount, 1, "the mount server answered no daemon");
        *ret_pid = ans.pid;
        return ans.code == 0 ? 0 : ans.code > 0 && ans.code < 126 ? ans.code : 1;
}
