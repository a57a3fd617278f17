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
 * The request and its answer are in mount-server.h; the client, in the
 * binary, is mount-client.c. The handler runs the command itself
 * (command_mount, every check it makes) as the caller would have: in its
 * working directory, with its output, umask, descriptor limit and the
 * variables that place its state and config.
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
#include <sys/file.h>
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

/* Handlers running at once; a connection past them is answered "busy". */
#define MOUNT_SERVER_HANDLERS 64
/* How long a handler waits for its request. */
#define REQUEST_TIMEOUT_S 10

int mount_server_conn = -1;

/* The server's lock (listen_open); its handlers and daemons do not keep it. */
static int server_lock_fd = -1;

static void answer_send(int fd, int code, const char *message)
{
        struct mount_answer a = {.magic = MOUNT_REQUEST_MAGIC, .code = code};

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

/* The caller's value of each of mount_server_env, from fields at *at: 0, or -EBADMSG. */
static int env_take(const char *buf, size_t n, size_t *at)
{
        for (size_t i = 0; i < MOUNT_SERVER_ENV; i++) {
                const char *f = field(buf, n, at), *name = mount_server_env[i], *v;

                if (!f || !(v = startswith(f, name)))
                        return -EBADMSG;
                if (*v == '\0')
                        (void)unsetenv(name);
                else if (*v != '=' || setenv(name, v + 1, 1) < 0)
                        return -EBADMSG;
        }
        return 0;
}

/*
 * A handler, in its own process: read conn's one request, run `cloister
 * mount` as its caller would have, answer. The exit code, for the
 * server's wait only.
 */
static int handle(int conn)
{
        static char buf[MOUNT_REQUEST_MAX];
        union {
                struct cmsghdr h;
                char b[CMSG_SPACE(MOUNT_REQUEST_FDS * sizeof(int))];
        } control;
        struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
        struct msghdr m = {.msg_iov = &iov,
                           .msg_iovlen = 1,
                           .msg_control = control.b,
                           .msg_controllen = sizeof(control.b)};
        struct timeval tv = {.tv_sec = REQUEST_TIMEOUT_S};
        struct mount_request req;
        char *argv[MOUNT_SERVER_ARGS + 1] = {NULL};
        int fds[MOUNT_REQUEST_FDS] = {-1, -1, -1}, nfds = 0, r;
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
                                if (nfds < MOUNT_REQUEST_FDS)
                                        fds[nfds] = fd;
                                else
                                        close(fd);
                                nfds++;
                        }
                }
        if (n < 0) {
                answer_send(conn, 1,
                            errno == EAGAIN || errno == EWOULDBLOCK
                                    ? "the mount server got no request in time"
                                    : "the mount server could not read the request");
                return 1;
        }
        if ((m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || (size_t)n < sizeof(req) ||
            nfds != MOUNT_REQUEST_FDS) {
                answer_send(conn, 1,
                            "malformed request to the mount server: wrong size or descriptors");
                return 1;
        }
        memcpy(&req, buf, sizeof(req));
        if (req.magic != MOUNT_REQUEST_MAGIC || req.argc < 2 || req.argc > MOUNT_SERVER_ARGS) {
                answer_send(conn, 1,
                            "malformed request to the mount server: not a cloister mount request");
                return 1;
        }
        for (uint32_t i = 0; i < req.argc; i++)
                argv[i] = (char *)field(buf, (size_t)n, &at);
        for (uint32_t i = 0; i < req.argc; i++)
                if (!argv[i]) {
                        answer_send(conn, 1,
                                    "malformed request to the mount server: an argument is not "
                                    "terminated");
                        return 1;
                }
        /* What the binary forwards and nothing else: never --server, --foreground, --ready-fd. */
        if (!mount_server_args_ok((int)req.argc, argv)) {
                answer_send(conn, 1,
                            "malformed request to the mount server: arguments it does not run");
                return 1;
        }
        if (env_take(buf, (size_t)n, &at) < 0 || at != (size_t)n) {
                answer_send(conn, 1,
                            "malformed request to the mount server: not the environment's fields");
                return 1;
        }
        /* The client's directory, output and file mode mask, and its descriptor limit. */
        if (fchdir(fds[0]) < 0 || dup2(fds[1], STDOUT_FILENO) < 0 ||
            dup2(fds[2], STDERR_FILENO) < 0) {
                answer_send(conn, 1,
                            "malformed request to the mount server: a descriptor is not usable");
                return 1;
        }
        for (int i = 0; i < MOUNT_REQUEST_FDS; i++)
                close(fds[i]);
        umask((mode_t)(req.umask & 0777));
        {
                struct rlimit rl = {.rlim_cur = req.nofile_cur, .rlim_max = req.nofile_max};

                if (rl.rlim_cur <= rl.rlim_max)
                        (void)setrlimit(RLIMIT_NOFILE, &rl); /* above ours, root's server only */
        }
        /* From here on, the command's own output goes to the client, as from `cloister mount`. */
        mount_server_conn = conn;
        r = command_mount.run((int)req.argc, argv);
        fflush(NULL);
        answer_send(conn, r, NULL);
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
        mount_server_address(path, &a);
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
        /* Two servers starting at once: one could take the other's socket for a
         * dead one's (connect refused between its bind and listen) and leave it
         * listening on a name no longer there. The one holding the lock serves. */
        {
                _cleanup_free_ char *lock = NULL;

                if (asprintf(&lock, "%s.lock", path) < 0)
                        return -ENOMEM;
                server_lock_fd = open(lock, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (server_lock_fd < 0)
                        return -errno;
                if (flock(server_lock_fd, LOCK_EX | LOCK_NB) < 0)
                        return errno == EWOULDBLOCK ? -EADDRINUSE : -errno;
        }
        r = stale_remove(path);
        if (r < 0)
                return r;
        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        mount_server_address(path, &a);
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
        pid_t pid, peer = 0;

        if (conn < 0)
                return;
        if (!mount_server_peer_is_us(conn, &uid, &peer)) {
                snprintf(why, sizeof(why),
                         "the mount server of uid %u serves that uid only, not %d",
                         (unsigned)geteuid(), uid == (uid_t)-1 ? -1 : (int)uid);
                answer_send(conn, 1, why);
                return;
        }
        /* Nor a process of that uid in another mount namespace (a container's,
         * a confined service's): its daemons would be ours, with our view. */
        if (!mount_server_same_namespace(peer)) {
                answer_send(conn, 1, "the mount server serves its own mount namespace only");
                return;
        }
        if (*handlers >= MOUNT_SERVER_HANDLERS) {
                answer_send(conn, 1, "the mount server is busy; try again");
                return;
        }
        fflush(NULL);
        pid = fork();
        if (pid < 0) {
                snprintf(why, sizeof(why), "the mount server cannot fork: %s", strerror(errno));
                answer_send(conn, 1, why);
                return;
        }
        if (pid == 0) {
                close(listen_fd);
                close(server_lock_fd);
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
        pid_t pid;
        int r;

        /* A descriptor received later must not land on 0-2 and be closed by
         * the handler's dup2 of the caller's output: none of them is free. */
        for (int fd = 0; fd <= 2; fd++)
                if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) != fd)
                        return command_fail(&command_mount, 1, "--server: cannot open /dev/null");
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
                for (int st; (pid = waitpid(-1, &st, WNOHANG)) > 0;) {
                        if (handlers)
                                handlers--;
                        /* A handler answers every failure it sees; one killed can't. */
                        if (WIFSIGNALED(st))
                                fprintf(stderr, "cloister mount: the handler %d died of %s\n",
                                        (int)pid, strsignal(WTERMSIG(st)));
                }
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
