/* SPDX-License-Identifier: MIT */
/*
 * sandbox-filter.c: the seccomp filter's BPF, built in a thread of its own
 * from the start of a run.
 *
 * Why a thread: libseccomp compiles the filter (sandbox-seccomp.c) in
 * 1-6 ms of CPU, and the run used to do it after bubblewrap had started,
 * on the path to the command's first instruction. The filter depends on
 * nothing but this build (no config, no uid), so the run starts it first
 * and takes it when it is needed: from cold it is built while
 * `cloister mount` works, over a mounted workspace while the run locks,
 * checks the mount and builds bwrap's argv.
 *
 * Why not a cache (in the state directory, keyed by a hash): a file that
 * decides what the agent may call would be one more thing to protect and
 * verify, and the only way to verify it is to build it again. The thread
 * costs the same CPU, never a stale or tampered filter.
 *
 * The result is exactly sandbox_seccomp_export()'s, or its error: taking
 * the filter fails when building it failed, and the run refuses.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox-private.h"
#include "lib/util.h"

struct sandbox_filter {
        pthread_t thread;
        bool started, joined;
        void *bpf;
        size_t len;
        int error; /* negative errno from building, or 0 */
};

/* The filter's BPF in memory, to be written to bwrap in one atomic write. */
static int filter_read(void **ret, size_t *ret_len)
{
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = malloc(PIPE_BUF);
        size_t len = 0;
        int r;

        if (!buf)
                return -ENOMEM;
        r = sandbox_seccomp_export(&fd);
        if (r < 0)
                return r;
        for (;;) {
                ssize_t n = read(fd, buf + len, PIPE_BUF - len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        break;
                len += (size_t)n;
                if (len == PIPE_BUF)
                        return -E2BIG; /* would not be written atomically */
        }
        if (len == 0 || len % 8 != 0)
                return -EINVAL;
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

static void *filter_main(void *arg)
{
        sandbox_filter *f = arg;

        f->error = filter_read(&f->bpf, &f->len);
        return NULL;
}

sandbox_filter *sandbox_filter_start(void)
{
        sandbox_filter *f = calloc(1, sizeof(*f));
        sigset_t all, old;

        if (!f)
                return NULL; /* sandbox_filter_take() builds it then */
        /*
         * Every signal blocked in the thread: a stop signal must reach the
         * run's signalfd, never a thread where its default action would end
         * the run before its teardown.
         */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        f->started = pthread_create(&f->thread, NULL, filter_main, f) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        return f;
}

static void filter_join(sandbox_filter *f)
{
        if (f->started && !f->joined) {
                pthread_join(f->thread, NULL);
                f->joined = true;
        }
}

int sandbox_filter_take(sandbox_filter *f, void **ret, size_t *ret_len)
{
        void *copy;

        /* No thread (out of memory, or none could be made): build it here. */
        if (!f || !f->started)
                return filter_read(ret, ret_len);
        filter_join(f);
        if (f->error < 0)
                return f->error;
        copy = malloc(f->len);
        if (!copy)
                return -ENOMEM;
        memcpy(copy, f->bpf, f->len);
        *ret = copy;
        *ret_len = f->len;
        return 0;
}

void sandbox_filter_free(sandbox_filter *f)
{
        if (!f)
                return;
        filter_join(f);
        free(f->bpf);
        free(f);
}
