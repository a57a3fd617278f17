/* SPDX-License-Identifier: MIT */
/*
 * client.c: the broker's client side: connect, send one line, read one.
 *
 * Responses may carry tokens (and, on the admin socket, secrets), so the
 * receive buffer is sodium_malloc'd and wiped.
 */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "client.h"
#include "lib/util.h"

const char *broker_client_default_socket(void)
{
        const char *env = getenv("CLOISTER_BROKER");

        if (env && *env)
                return env;
        if (access(BROKER_SANDBOX_SOCKET, F_OK) == 0)
                return BROKER_SANDBOX_SOCKET;
        return NULL;
}

int broker_client_connect(const char *path, int *ret_fd, char **ret_error)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        _cleanup_close_ int fd = -1;
        int r;

        if (strlen(path) >= sizeof(sa.sun_path)) {
                if (asprintf(ret_error, "%s: socket path too long", path) < 0)
                        *ret_error = NULL;
                return -ENAMETOOLONG;
        }
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                r = negative_errno();
                if (asprintf(ret_error, "%s: cannot connect to the broker: %s", path,
                             strerror(-r)) < 0)
                        *ret_error = NULL;
                return r;
        }
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int broker_client_call(int fd, json_t *req, json_t **ret_resp)
{
        char *line = json_dumps(req, JSON_COMPACT), *buf = NULL;
        size_t len, got = 0;
        json_t *resp;
        int r = 0;

        if (!line)
                return -ENOMEM;
        len = strlen(line);
        line[len] = '\n'; /* json_dumps' NUL becomes the newline */
        for (size_t off = 0; off < len + 1;) {
                ssize_t n = send(fd, line + off, len + 1 - off, MSG_NOSIGNAL);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        r = negative_errno();
                        break;
                }
                off += (size_t)n;
        }
        sodium_memzero(line, len + 1);
        free(line);
        if (r < 0)
                return r;
        buf = sodium_malloc(BROKER_RESPONSE_MAX + 1);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t n;

                if (got >= BROKER_RESPONSE_MAX) {
                        r = -EFBIG;
                        goto out;
                }
                n = recv(fd, buf + got, BROKER_RESPONSE_MAX - got, 0);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        r = negative_errno();
                        goto out;
                }
                if (n == 0) {
                        r = -ECONNRESET;
                        goto out;
                }
                got += (size_t)n;
                if (memchr(buf + got - n, '\n', (size_t)n))
                        break;
        }
        resp = json_loadb(buf, (size_t)((char *)memchr(buf, '\n', got) - buf), 0, NULL);
        if (!json_is_object(resp)) {
                json_decref(resp);
                r = -EBADMSG;
                goto out;
        }
        *ret_resp = resp;
out:
        sodium_free(buf);
        return r;
}

int broker_client_request(const char *path, json_t *req, json_t **ret_resp, char **ret_error)
{
        _cleanup_close_ int fd = -1;
        int r;

        *ret_error = NULL;
        r = broker_client_connect(path, &fd, ret_error);
        if (r < 0)
                return r;
        r = broker_client_call(fd, req, ret_resp);
        if (r < 0 && asprintf(ret_error, "%s: %s", path,
                              r == -ECONNRESET ? "the broker closed the connection"
                              : r == -EBADMSG  ? "malformed response from the broker"
                                               : strerror(-r)) < 0)
                *ret_error = NULL;
        return r;
}
