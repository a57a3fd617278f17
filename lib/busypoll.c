/* SPDX-License-Identifier: MIT */
/*
 * busypoll.c: the decision to poll before sleeping (busypoll.h).
 *
 * A spare CPU: the kernel's count of runnable tasks, the fourth field of
 * /proc/loadavg ("R/T"), counts the caller, which is running; at most ncpus
 * runnable tasks means no other task waits for a CPU while the caller
 * polls. One pread(2) of that file costs about 0.4 us, a hundredth of the
 * wakeup it may save. The count is the whole machine's (or what a
 * container's /proc shows): a cgroup's CPU limit is not seen, and polling
 * counts against it; the window bounds what one wait can spend.
 *
 * Polls that pay: a score of the recent polls that caught a request, each
 * poll moving it a quarter of the way to 256 (caught) or to 0 (missed). The
 * caller polls while the score is at least half, so three misses in a row
 * stop it; then one wait in PROBE_EVERY polls again, and a catch there
 * starts polling again at once.
 */
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "busypoll.h"
#include "util.h"

#define SCORE_MAX   256u
#define PROBE_EVERY BUSYPOLL_PROBE_EVERY

static uint64_t real_now_ns(void *arg)
{
        struct timespec t;

        (void)arg;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

unsigned busypoll_parse_loadavg(const char *text)
{
        const char *p = text;
        char *end;
        unsigned long r;

        /* "0.00 0.01 0.05 R/T LAST_PID": the fourth field */
        for (int i = 0; i < 3 && p; i++) {
                p = strchr(p, ' ');
                if (p)
                        p++;
        }
        if (!p || *p < '0' || *p > '9')
                return 0;
        r = strtoul(p, &end, 10);
        if (end == p || *end != '/')
                return 0;
        return r > 0xffff ? 0xffff : (unsigned)r;
}

static unsigned real_running(void *arg)
{
        struct busypoll *bp = arg;
        char buf[128];
        ssize_t n = pread(bp->loadavg_fd, buf, sizeof(buf) - 1, 0);

        if (n <= 0)
                return 0;
        buf[n] = '\0';
        return busypoll_parse_loadavg(buf);
}

static void real_yield(void *arg)
{
        (void)arg;
        sched_yield();
}

void busypoll_init_with(struct busypoll *bp, const struct busypoll_world *world, unsigned ncpus)
{
        *bp = (struct busypoll){.loadavg_fd = -1, .ncpus = ncpus, .score = SCORE_MAX};
        if (world)
                bp->world = *world;
        bp->on = world && ncpus >= 2;
}

void busypoll_init(struct busypoll *bp)
{
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        int fd;

        if (n < 2) {
                busypoll_init_with(bp, NULL, 1);
                return;
        }
        fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                busypoll_init_with(bp, NULL, (unsigned)n);
                return;
        }
        busypoll_init_with(bp,
                           &(struct busypoll_world){.now_ns = real_now_ns,
                                                    .running = real_running,
                                                    .yield = real_yield},
                           (unsigned)n);
        bp->loadavg_fd = fd;
        bp->world.arg = bp;
}

void busypoll_done(struct busypoll *bp)
{
        bp->loadavg_fd = safe_close(bp->loadavg_fd);
        bp->on = false;
}

uint64_t busypoll_until(struct busypoll *bp)
{
        unsigned running;

        if (!bp->on)
                return 0;
        if (bp->score < SCORE_MAX / 2 && ++bp->idle < PROBE_EVERY)
                return 0;
        running = bp->world.running(bp->world.arg);
        if (running == 0 || running > bp->ncpus)
                return 0;
        bp->idle = 0;
        return bp->world.now_ns(bp->world.arg) + BUSYPOLL_WINDOW_NS;
}

bool busypoll_more(struct busypoll *bp, uint64_t until)
{
        if (!until || bp->world.now_ns(bp->world.arg) >= until)
                return false;
        /* A task that shares our CPU (the client, often) runs first: polling
         * must not keep it from sending what we poll for. */
        bp->world.yield(bp->world.arg);
        return true;
}

void busypoll_caught(struct busypoll *bp, bool caught)
{
        if (caught) {
                bp->score += (SCORE_MAX - bp->score) / 4;
                /* A catch after a probe: poll again from the next wait. */
                if (bp->score < SCORE_MAX / 2)
                        bp->score = SCORE_MAX / 2;
        } else {
                bp->score -= bp->score / 4;
        }
}

int busypoll_run(struct busypoll *bp, int (*try_once)(void *arg), void *arg, int none)
{
        int r = try_once(arg);
        uint64_t until;

        if (r != none)
                return r; /* queued already: no poll, nothing to score */
        until = busypoll_until(bp);
        if (!until)
                return none;
        while (busypoll_more(bp, until)) {
                r = try_once(arg);
                if (r != none) {
                        busypoll_caught(bp, true);
                        return r;
                }
        }
        busypoll_caught(bp, false);
        return none;
}
