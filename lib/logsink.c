/* SPDX-License-Identifier: MIT */
/*
 * logsink.c: the copy of log lines on standard output (logsink.h).
 *
 * Why the original line is spliced in as it is, not re-encoded: it is
 * already one JSON object, so the result is JSON with no escaping, and the
 * audit chain's hash covers exactly those bytes, which a collector can cut
 * back out (logsink.h).
 *
 * Why non-blocking: the journal writes under the FUSE daemon's lock and the
 * audit log on the broker's request path; a stalled pipe to a collector
 * must never stall the agent's file system or its tokens. A write of at
 * most PIPE_BUF bytes to a pipe is whole or not at all; a longer line that
 * goes out in part is finished for up to SINK_FINISH_MS, else ended with a
 * newline and counted as dropped (the collector sees one line that does
 * not parse).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "logsink.h"
#include "util.h"

#define SINK_FINISH_MS 200
#define SINK_NAME_MAX  64

static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;
static int sink_fd = -1;                       /* protected by sink_lock */
static char sink_workspace[SINK_NAME_MAX + 1]; /* set once, before any line */
static uint64_t sink_dropped;                  /* protected by sink_lock */

static bool name_is_plain(const char *s)
{
        size_t n = strlen(s);

        if (n == 0 || n > SINK_NAME_MAX)
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                      (*s >= '0' && *s <= '9') || *s == '.' || *s == '_' || *s == '-'))
                        return false;
        return true;
}

int logsink_open_stdout(const char *workspace)
{
        int fd;

        if (!name_is_plain(workspace))
                return -EINVAL;
        /* A description of our own (a pipe or a file opened anew), so
         * O_NONBLOCK changes nobody else's; a socket can't be reopened so:
         * then a duplicate, left blocking. */
        fd = open("/proc/self/fd/1", O_WRONLY | O_APPEND | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return negative_errno();
        pthread_mutex_lock(&sink_lock);
        if (sink_fd >= 0)
                close(sink_fd);
        snprintf(sink_workspace, sizeof(sink_workspace), "%s", workspace);
        sink_fd = fd;
        pthread_mutex_unlock(&sink_lock);
        return 0;
}

/* All of buf, or false; a part written is finished while the pipe drains. */
static bool write_all(int fd, const char *buf, size_t len, bool *ret_partial)
{
        size_t off = 0;

        *ret_partial = false;
        while (off < len) {
                ssize_t n = write(fd, buf + off, len - off);

                if (n > 0) {
                        off += (size_t)n;
                        *ret_partial = off < len;
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && errno == EAGAIN && off > 0) {
                        struct pollfd p = {.fd = fd, .events = POLLOUT};
                        if (poll(&p, 1, SINK_FINISH_MS) > 0)
                                continue;
                }
                return false;
        }
        return true;
}

void logsink_line(const char *stream, const char *workspace, const char *line, size_t len)
{
        char head[160], dropped[160];
        _cleanup_free_ char *buf = NULL;
        size_t hlen, total;
        bool partial;

        while (len > 0 && line[len - 1] == '\n')
                len--;
        if (len == 0 || !name_is_plain(stream) || (workspace && !name_is_plain(workspace)))
                return;
        pthread_mutex_lock(&sink_lock);
        if (sink_fd < 0)
                goto out;
        hlen = (size_t)snprintf(head, sizeof(head),
                                "{\"cloister\":\"%s\",\"workspace\":\"%s\",\"line\":", stream,
                                workspace ? workspace : sink_workspace);
        if (sink_dropped) {
                int d = snprintf(dropped, sizeof(dropped),
                                 "{\"cloister\":\"dropped\",\"workspace\":\"%s\",\"lines\":%" PRIu64
                                 "}\n",
                                 sink_workspace, sink_dropped);
                if (write_all(sink_fd, dropped, (size_t)d, &partial))
                        sink_dropped = 0;
                else if (partial)
                        (void)!write(sink_fd, "\n", 1);
        }
        total = hlen + len + 2;
        buf = malloc(total);
        if (!buf) {
                sink_dropped++;
                goto out;
        }
        memcpy(buf, head, hlen);
        memcpy(buf + hlen, line, len);
        memcpy(buf + hlen + len, "}\n", 2);
        if (!write_all(sink_fd, buf, total, &partial)) {
                if (partial)
                        (void)!write(sink_fd, "\n", 1);
                sink_dropped++;
        }
out:
        pthread_mutex_unlock(&sink_lock);
}
