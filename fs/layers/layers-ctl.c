/* SPDX-License-Identifier: MIT */
/*
 * layers-ctl.c: asking a mounted workspace's daemon for a checkpoint, over
 * <state>/fs.sock (the server is layers-online.c; docs/fs-design.md,
 * "Checkpoint while mounted"). One JSON line each way per connection.
 *
 * fs_checkpoint() is what `cloister checkpoint` calls: offline when no
 * daemon holds the state (fs.lock), else through the daemon, which alone
 * may switch the layers it serves. A daemon that is starting (it holds
 * fs.lock before its socket listens) or stopping is waited for, briefly.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "layers.h"
#include "lib/util.h"

/* A checkpoint's pause copies the files open for writing: allow it time. */
#define CTL_REPLY_TIMEOUT_S 600
/* A flush takes milliseconds; a daemon that does not even accept (out of
 * descriptors, stopped) must not hang `cloister log`, which reads on. */
#define CTL_FLUSH_TIMEOUT_S 10

int fs_control_path(const char *state, struct sockaddr_un *sa)
{
        *sa = (struct sockaddr_un){.sun_family = AF_UNIX};
        if ((size_t)snprintf(sa->sun_path, sizeof(sa->sun_path), "%s/" FS_CONTROL_SOCKET, state) >=
            sizeof(sa->sun_path))
                return -ENAMETOOLONG;
        return 0;
}

static int request(const char *state, const char *req, time_t timeout_s, json_t **ret,
                   char **ret_error)
{
        struct sockaddr_un sa;
        struct timeval tv = {.tv_sec = timeout_s};
        _cleanup_close_ int fd = -1;
        char buf[FS_CONTROL_MAX + 1];
        size_t len = 0, n = strlen(req);
        json_t *j;
        int r = fs_control_path(state, &sa);

        if (r < 0)
                return r;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return negative_errno();
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
                return negative_errno();
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
        if (send(fd, req, n, MSG_NOSIGNAL) != (ssize_t)n)
                return negative_errno();
        (void)shutdown(fd, SHUT_WR);
        while (len < FS_CONTROL_MAX) {
                ssize_t k = recv(fd, buf + len, FS_CONTROL_MAX - len, 0);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0) {
                        r = negative_errno();
                        if (asprintf(ret_error, "no answer from the daemon: %s", strerror(-r)) < 0)
                                *ret_error = NULL;
                        return r;
                }
                if (k == 0)
                        break;
                len += (size_t)k;
        }
        buf[len] = 0;
        j = json_loads(buf, 0, NULL);
        if (!json_is_object(j)) {
                json_decref(j);
                if (asprintf(ret_error, "the daemon's answer is not understood (did it die?)") < 0)
                        *ret_error = NULL;
                return -EPROTO;
        }
        *ret = j;
        return 0;
}

int fs_checkpoint_online(const char *state, const char *name, struct fs_layers_report *rep,
                         char **ret_error)
{
        _cleanup_free_ char *req = NULL;
        json_t *q = json_pack("{s:s,s:s}", "op", "checkpoint", "name", name), *a = NULL;
        int r;

        req = q ? json_dumps(q, JSON_COMPACT) : NULL;
        json_decref(q);
        if (!req)
                return -ENOMEM;
        r = request(state, req, CTL_REPLY_TIMEOUT_S, &a, ret_error);
        if (r < 0)
                return r;
        if (!json_is_true(json_object_get(a, "ok"))) {
                json_t *e = json_object_get(a, "errno");
                const char *msg = json_string_value(json_object_get(a, "error"));
                r = json_is_integer(e) && json_integer_value(e) > 0 ? -(int)json_integer_value(e)
                                                                    : -EIO;
                if (asprintf(ret_error, "%s", msg ? msg : strerror(-r)) < 0)
                        *ret_error = NULL;
                json_decref(a);
                return r;
        }
        rep->depth = (size_t)json_integer_value(json_object_get(a, "depth"));
        rep->squash_due = rep->depth >= FS_STACK_SQUASH_DUE;
        {
                json_int_t n = json_integer_value(json_object_get(a, "not_carried_count"));
                json_t *f = json_array_get(json_object_get(a, "not_carried"), 0);
                const char *p = json_string_value(json_object_get(f, "path"));
                const char *e = json_string_value(json_object_get(f, "error"));

                rep->not_carried = n > 0 ? (size_t)n : 0;
                if (p && e && asprintf(&rep->not_carried_first, "%s: %s", p, e) < 0)
                        rep->not_carried_first = NULL;
        }
        json_decref(a);
        return 0;
}

int fs_journal_flush_online(const char *state, char **ret_error)
{
        json_t *a = NULL;
        int r = request(state, "{\"op\":\"journal_flush\"}", CTL_FLUSH_TIMEOUT_S, &a, ret_error);

        if (r < 0)
                return r;
        if (!json_is_true(json_object_get(a, "ok"))) {
                json_t *e = json_object_get(a, "errno");
                const char *msg = json_string_value(json_object_get(a, "error"));
                r = json_is_integer(e) && json_integer_value(e) > 0 ? -(int)json_integer_value(e)
                                                                    : -EIO;
                if (asprintf(ret_error, "%s", msg ? msg : strerror(-r)) < 0)
                        *ret_error = NULL;
        }
        json_decref(a);
        return r;
}

int fs_checkpoint(const char *state, const char *name, struct fs_layers_report *rep,
                  char **ret_error)
{
        struct timespec pause = {.tv_nsec = 50 * 1000 * 1000};
        int r = -EBUSY;

        for (unsigned tries = 0; tries < 100; tries++) {
                r = fs_checkpoint_offline(state, name, rep, ret_error);
                if (r != -EBUSY)
                        return r;
                r = fs_checkpoint_online(state, name, rep, ret_error);
                /* Not listening: a daemon starting or stopping; ask again. */
                if (r != -ENOENT && r != -ECONNREFUSED)
                        return r;
                free(*ret_error);
                *ret_error = NULL;
                nanosleep(&pause, NULL);
        }
        if (asprintf(ret_error, "a daemon holds '%s' but does not answer on %s/%s", state, state,
                     FS_CONTROL_SOCKET) < 0)
                *ret_error = NULL;
        return -ETIMEDOUT;
}
