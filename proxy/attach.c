/* SPDX-License-Identifier: MIT */
/*
 * attach.c: `cloister run`'s side of the proxy: put a listening socket at
 * 127.0.0.1:PROXY_PORT inside a sandbox's network namespace and give it to
 * the proxy.
 *
 * Trust boundary: this runs on the host, with the user's privileges, before
 * the agent's command starts (bwrap has created the namespaces; the seccomp
 * filter that lets the command run is written only afterwards). A forked
 * helper joins the sandbox's network namespace (through its owning user
 * namespace when we are not root: we own it, bwrap made it as us), makes the
 * socket and passes it back over a socketpair, then exits. The socket keeps
 * the namespace it was made in; the proxy that accepts on it lives on the
 * host. Nothing inside the sandbox holds the listener, so nothing there can
 * close it, replace it or reach past it: with the proxy gone, connections
 * to 127.0.0.1:3128 are refused, and that is all.
 *
 * IP_FREEBIND: bwrap brings the sandbox's loopback up in its child, which
 * may not have happened yet; the bind must not depend on that race.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/util.h"
#include "proxy.h"

#define ATTACH_TIMEOUT_MS 10000

static int errorf(char **ret_error, int r, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static int errorf(char **ret_error, int r, const char *fmt, ...)
{
        va_list ap;

        if (!ret_error)
                return r;
        va_start(ap, fmt);
        if (vasprintf(ret_error, fmt, ap) < 0)
                *ret_error = NULL;
        va_end(ap);
        return r;
}

static int send_fd(int sock, int fd, const char *data, size_t len)
{
        char cbuf[CMSG_SPACE(sizeof(int))] = {0};
        struct iovec iov = {(void *)data, len};
        struct msghdr m = {.msg_iov = &iov,
                           .msg_iovlen = 1,
                           .msg_control = cbuf,
                           .msg_controllen = sizeof(cbuf)};
        struct cmsghdr *ch = CMSG_FIRSTHDR(&m);

        ch->cmsg_level = SOL_SOCKET;
        ch->cmsg_type = SCM_RIGHTS;
        ch->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(ch), &fd, sizeof(int));
        return sendmsg(sock, &m, MSG_NOSIGNAL) == (ssize_t)len ? 0 : negative_errno();
}

static int recv_fd(int sock, int *ret_fd, char *buf, size_t size)
{
        char cbuf[CMSG_SPACE(sizeof(int))];
        struct iovec iov = {buf, size};
        struct msghdr m = {.msg_iov = &iov,
                           .msg_iovlen = 1,
                           .msg_control = cbuf,
                           .msg_controllen = sizeof(cbuf)};
        struct cmsghdr *ch;
        ssize_t n;

        n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
        if (n < 0)
                return negative_errno();
        ch = CMSG_FIRSTHDR(&m);
        if (!ch || ch->cmsg_type != SCM_RIGHTS || ch->cmsg_len != CMSG_LEN(sizeof(int)))
                return -EBADMSG;
        memcpy(ret_fd, CMSG_DATA(ch), sizeof(int));
        return (int)n;
}

/* In the helper: join pid's network namespace and make the listener there. */
static _noreturn_ void helper(pid_t pid, int sock)
{
        char path[64], code;
        struct sockaddr_in sa = {.sin_family = AF_INET,
                                 .sin_port = htons(PROXY_PORT),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int netns, fd, one = 1;

        snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
        netns = open(path, O_RDONLY | O_CLOEXEC);
        if (netns < 0) {
                code = 'o';
                goto out;
        }
        if (setns(netns, CLONE_NEWNET) < 0) {
                /* Not root: enter the user namespace that owns it (ours, made by bwrap). */
                int userns = ioctl(netns, NS_GET_USERNS);
                if (userns < 0 || setns(userns, CLONE_NEWUSER) < 0 ||
                    setns(netns, CLONE_NEWNET) < 0) {
                        code = 's';
                        goto out;
                }
        }
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof(one)) < 0 ||
            bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 512) < 0) {
                code = 'b';
                goto out;
        }
        code = 'k';
        _exit(send_fd(sock, fd, &code, 1) == 0 ? 0 : 1);
out:
        (void)!write(sock, &code, 1);
        _exit(1);
}

static int make_listener(pid_t pid, int *ret_fd, char **ret_error)
{
        int sp[2], status, fd = -1, r;
        char code = 0;
        pid_t h;

        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
                return errorf(ret_error, negative_errno(), "socketpair: %m");
        h = fork();
        if (h < 0) {
                r = negative_errno();
                close(sp[0]);
                close(sp[1]);
                return errorf(ret_error, r, "fork: %s", strerror(-r));
        }
        if (h == 0) {
                close(sp[0]);
                helper(pid, sp[1]);
        }
        close(sp[1]);
        struct pollfd p = {.fd = sp[0], .events = POLLIN};
        r = poll(&p, 1, ATTACH_TIMEOUT_MS);
        if (r > 0) {
                r = recv_fd(sp[0], &fd, &code, 1); /* a failing helper sends its code alone */
                if (r == -EBADMSG) {
                        fd = -1;
                        r = -EIO;
                }
        } else {
                r = -ETIMEDOUT;
                kill(h, SIGKILL);
        }
        close(sp[0]);
        while (waitpid(h, &status, 0) < 0 && errno == EINTR)
                ;
        if (r < 0 || fd < 0 || code != 'k') {
                safe_close(fd);
                return errorf(ret_error, r < 0 ? r : -EIO,
                              "cannot make the proxy's socket in the sandbox's network namespace "
                              "(%s)",
                              code == 'o'   ? "cannot open its namespace"
                              : code == 's' ? "cannot enter its namespace"
                              : code == 'b' ? "cannot listen on 127.0.0.1:3128 there"
                                            : "the helper failed");
        }
        *ret_fd = fd;
        return 0;
}

int proxy_attach_sandbox(const char *control_socket, pid_t sandbox_pid, pid_t run_pid, int *ret_fd,
                         char **ret_error)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        _cleanup_close_ int lfd = -1, ctl = -1;
        char line[128], reply[256];
        struct pollfd p;
        ssize_t n;
        int r;

        if (strlen(control_socket) >= sizeof(sa.sun_path))
                return errorf(ret_error, -ENAMETOOLONG, "%s: socket path too long", control_socket);
        strcpy(sa.sun_path, control_socket);
        r = make_listener(sandbox_pid, &lfd, ret_error);
        if (r < 0)
                return r;
        ctl = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (ctl < 0 || connect(ctl, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return errorf(ret_error, negative_errno(), "the proxy is not running (%s: %m)",
                              control_socket);
        snprintf(line, sizeof(line), "{\"op\":\"attach\",\"run\":%d,\"sandbox\":%d}\n",
                 (int)run_pid, (int)sandbox_pid);
        r = send_fd(ctl, lfd, line, strlen(line));
        if (r < 0)
                return errorf(ret_error, r, "cannot hand the socket to the proxy: %s",
                              strerror(-r));
        /* From here the proxy holds the only listener; ours must not keep it alive. */
        lfd = safe_close(lfd);
        p = (struct pollfd){.fd = ctl, .events = POLLIN};
        if (poll(&p, 1, ATTACH_TIMEOUT_MS) <= 0)
                return errorf(ret_error, -ETIMEDOUT, "the proxy did not take the socket");
        n = read(ctl, reply, sizeof(reply) - 1);
        if (n <= 0)
                return errorf(ret_error, -EIO, "the proxy refused the socket");
        reply[n] = '\0';
        if (!strstr(reply, "\"ok\":true"))
                return errorf(ret_error, -EIO, "the proxy refused the socket: %s", reply);
        *ret_fd = TAKE_FD(ctl);
        return 0;
}
