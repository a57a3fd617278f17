/* SPDX-License-Identifier: MIT */
/*
 * reap.c: the last close of a removed file, off the request path.
 *
 * Closing the last fd of an unlinked file is when the host filesystem frees
 * its blocks: 90 ms for a 256 MiB file on ext4. That close came in FORGET or
 * RELEASE, which fs/ops/loop.c answers inline while no other worker reads
 * /dev/fuse, and from node_free under itable_lock: every request of the mount
 * waited for it (docs/bench-log/append.md). Such fds go to one thread
 * that closes them. Nothing reads them again, and the quota was given the
 * space back before (quota_reclaim), as it was. The thread starts on first
 * use; a full queue, or a thread that cannot start, closes inline, as before.
 */
#include <string.h>
#include <unistd.h>

#include "core.h"

static void *reap_main(void *arg)
{
        struct fs_workspace *ws = arg;
        int fds[REAP_MAX];
        size_t n;

        pthread_mutex_lock(&ws->reap.lock);
        for (;;) {
                while (ws->reap.n == 0 && !ws->reap.stop)
                        pthread_cond_wait(&ws->reap.wake, &ws->reap.lock);
                if (ws->reap.n == 0)
                        break; /* stopping, and nothing is left */
                n = ws->reap.n;
                memcpy(fds, ws->reap.fds, n * sizeof(int));
                ws->reap.n = 0;
                pthread_mutex_unlock(&ws->reap.lock);
                for (size_t i = 0; i < n; i++)
                        (void)close(fds[i]);
                pthread_mutex_lock(&ws->reap.lock);
        }
        pthread_mutex_unlock(&ws->reap.lock);
        return NULL;
}

void reap_init(struct fs_workspace *ws)
{
        pthread_mutex_init(&ws->reap.lock, NULL);
        pthread_cond_init(&ws->reap.wake, NULL);
}

void reap_close(struct fs_workspace *ws, int fd)
{
        bool queued = false;

        if (fd < 0)
                return;
        pthread_mutex_lock(&ws->reap.lock);
        if (!ws->reap.started && !ws->reap.stop)
                ws->reap.started = pthread_create(&ws->reap.thread, NULL, reap_main, ws) == 0;
        if (ws->reap.started && !ws->reap.stop && ws->reap.n < REAP_MAX) {
                ws->reap.fds[ws->reap.n++] = fd;
                queued = true;
                pthread_cond_signal(&ws->reap.wake);
        }
        pthread_mutex_unlock(&ws->reap.lock);
        if (!queued)
                (void)close(fd);
}

void reap_stop(struct fs_workspace *ws)
{
        bool started;

        pthread_mutex_lock(&ws->reap.lock);
        ws->reap.stop = true;
        started = ws->reap.started;
        pthread_cond_signal(&ws->reap.wake);
        pthread_mutex_unlock(&ws->reap.lock);
        if (started)
                pthread_join(ws->reap.thread, NULL); /* it closes what is queued first */
        pthread_mutex_destroy(&ws->reap.lock);
        pthread_cond_destroy(&ws->reap.wake);
}
