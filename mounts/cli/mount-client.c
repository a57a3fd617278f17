/* SPDX-License-Identifier: MIT */
/*
 * mount-client.c: the half of the mount server's protocol that the
 * `cloister` binary holds (mount-server.h): finding this user's server,
 * checking it, and forwarding `cloister mount CONFIG [--json]` to it.
 *
 * Why in the binary and not in the commands module: loading the module's
 * 31 libraries is about 14 ms, half of a mount through a server
 * (docs/bench-log/2026-12-07-density-shared-pages.md). The server has the
 * module loaded already, so its handler makes every check the command
 * makes, in the caller's working directory, with its output, umask,
 * descriptor limit and the environment variables that place its state
 * (MOUNT_SERVER_ENV). This file is built into the module too, for the
 * server's half of the same checks.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "known.h"
#include "lib/util.h"
#include "mount-server.h"

const char *const mount_server_env[MOUNT_SERVER_ENV] = {
        "HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "TMPDIR", "PATH", "SOURCE_DATE_EPOCH"};

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

void mount_server_address(const char *path, struct sockaddr_un *a)
{
        memset(a, 0, sizeof(*a));
        a->sun_family = AF_UNIX;
        memcpy(a->sun_path, path, strlen(path) + 1); /* mount_server_path checked its length */
}

bool mount_server_peer_is_us(int fd, uid_t *ret_uid, pid_t *ret_pid)
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

bool mount_server_same_namespace(pid_t pid)
{
        char p[64];
        struct stat ours, theirs;

        snprintf(p, sizeof(p), "/proc/%d/ns/mnt", (int)pid);
        return pid > 0 && stat("/proc/self/ns/mnt", &ours) == 0 && stat(p, &theirs) == 0 &&
               ours.st_dev == theirs.st_dev && ours.st_ino == theirs.st_ino;
}

/* Whether argv (argv[0] "mount") is what a server runs: one config, --json at most. */
bool mount_server_args_ok(int argc, char *const *argv)
{
        int configs = 0;

        if (argc < 2 || argc > MOUNT_SERVER_ARGS || !streq(argv[0], "mount"))
                return false;
        for (int i = 1; i < argc; i++) {
                if (streq(argv[i], "--json"))
                        continue;
                if (argv[i][0] == '-' || !argv[i][0])
                        return false;
                configs++;
        }
        return configs == 1;
}

/* The request's body: struct mount_request, then argv, then the environment's fields. */
static char *request_body(int argc, char *const *argv, size_t *ret_len)
{
        struct mount_request req = {.magic = MOUNT_REQUEST_MAGIC, .argc = (uint32_t)argc};
        const char *vals[MOUNT_SERVER_ENV];
        struct rlimit rl;
        size_t len = sizeof(req);
        mode_t mask;
        char *body, *at;

        mask = umask(0);
        umask(mask);
        req.umask = mask;
        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                rl.rlim_cur = rl.rlim_max = RLIM_INFINITY;
        req.nofile_cur = rl.rlim_cur;
        req.nofile_max = rl.rlim_max;
        for (int i = 0; i < argc; i++)
                len += strlen(argv[i]) + 1;
        for (size_t i = 0; i < MOUNT_SERVER_ENV; i++) {
                vals[i] = getenv(mount_server_env[i]);
                len += strlen(mount_server_env[i]) + (vals[i] ? strlen(vals[i]) + 1 : 0) + 1;
        }
        if (len > MOUNT_REQUEST_MAX)
                return NULL;
        body = malloc(len);
        if (!body)
                return NULL;
        memcpy(body, &req, sizeof(req));
        at = body + sizeof(req);
        for (int i = 0; i < argc; i++)
                at = stpcpy(at, argv[i]) + 1;
        for (size_t i = 0; i < MOUNT_SERVER_ENV; i++) {
                at = stpcpy(at, mount_server_env[i]);
                if (vals[i])
                        at = stpcpy(stpcpy(at, "="), vals[i]);
                at++;
        }
        *ret_len = len;
        return body;
}

int mount_client_forward(int argc, char *const *argv)
{
        _cleanup_free_ char *path = NULL, *body = NULL;
        _cleanup_close_ int fd = -1, cwd = -1;
        struct sockaddr_un a;
        struct mount_answer ans;
        uid_t uid = (uid_t)-1;
        pid_t server = 0;
        size_t len = 0;
        ssize_t n;
        union {
                struct cmsghdr h;
                char b[CMSG_SPACE(MOUNT_REQUEST_FDS * sizeof(int))];
        } control;

        if (!mount_server_args_ok(argc, argv) || mount_server_path(&path) < 0)
                return MOUNT_SERVER_NONE;
        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return MOUNT_SERVER_NONE;
        mount_server_address(path, &a);
        if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
                return MOUNT_SERVER_NONE;
        /* It gets our directory and output: only a server of our own uid. */
        if (!mount_server_peer_is_us(fd, &uid, &server)) {
                fprintf(stderr,
                        "cloister mount: %s is served by uid %d, not ours: mounting without it\n",
                        path, (int)uid);
                return MOUNT_SERVER_NONE;
        }
        /* A server in another mount namespace (a container's) would mount where we don't see. */
        if (!mount_server_same_namespace(server)) {
                fprintf(stderr,
                        "cloister mount: the server at %s mounts in another mount namespace: "
                        "mounting without it\n",
                        path);
                return MOUNT_SERVER_NONE;
        }
        body = request_body(argc, argv, &len);
        cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (!body || cwd < 0)
                return MOUNT_SERVER_NONE; /* paths past the bound, no directory: as without it */
        {
                struct iovec iov = {.iov_base = body, .iov_len = len};
                struct msghdr m = {.msg_iov = &iov,
                                   .msg_iovlen = 1,
                                   .msg_control = control.b,
                                   .msg_controllen = sizeof(control.b)};
                struct cmsghdr *h;
                int fds[MOUNT_REQUEST_FDS] = {cwd, STDOUT_FILENO, STDERR_FILENO};

                memset(&control, 0, sizeof(control));
                h = CMSG_FIRSTHDR(&m);
                h->cmsg_level = SOL_SOCKET;
                h->cmsg_type = SCM_RIGHTS;
                h->cmsg_len = CMSG_LEN(sizeof(fds));
                memcpy(CMSG_DATA(h), fds, sizeof(fds));
                fflush(NULL);
                if (sendmsg(fd, &m, MSG_NOSIGNAL) < 0) {
                        fprintf(stderr,
                                "cloister mount: cannot send the request to the mount server at "
                                "%s: %s\n",
                                path, strerror(errno));
                        return 1;
                }
        }
        do
                n = recv(fd, &ans, sizeof(ans), 0);
        while (n < 0 && errno == EINTR);
        if (n != (ssize_t)sizeof(ans) || ans.magic != MOUNT_REQUEST_MAGIC) {
                fprintf(stderr, "cloister mount: the mount server at %s ended without an answer\n",
                        path);
                return 1;
        }
        ans.message[sizeof(ans.message) - 1] = '\0';
        if (ans.message[0])
                fprintf(stderr, "cloister mount: %s\n", ans.message);
        return ans.code >= 0 && ans.code < 126 ? ans.code : 1;
}
