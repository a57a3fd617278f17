/* SPDX-License-Identifier: MIT */
/*
 * busypoll.h: poll for the next request for a moment before sleeping, while
 * that keeps catching requests and a CPU is spare.
 *
 * Why: a server that sleeps between requests is woken for each one, and on
 * the virtual machines agents run on, a wakeup of a thread whose vCPU has
 * halted (an inter-processor interrupt) costs tens of microseconds, several
 * times the request itself. A client that sends request after request with
 * little work between (grep over a tree: OPEN, RELEASE, OPEN...; a tool
 * asking token after token) pays that on every one. Polling without
 * sleeping for a few tens of microseconds after a request catches the next
 * one with no wakeup at all.
 *
 * It is not free, so it is done only where it pays (busypoll.c):
 * - only while a CPU is idle: with every CPU busy (make -j on all cores) a
 *   poll would take CPU time from the work itself;
 * - only while polls catch requests: a client that works longer between
 *   requests (find: a whole directory of cached stats) makes every poll a
 *   miss, and worse, the poller holds a CPU the scheduler would otherwise
 *   have let the client and the server share cheaply. After a few misses
 *   the caller sleeps at once, and tries a poll again only now and then;
 * - while polling, the poller yields to any task waiting for its CPU.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* How long one poll lasts before the caller sleeps (the bench: 30 us caught
 * grep's next request, 10 us did not). */
#define BUSYPOLL_WINDOW_NS 50000
/* Once polls stopped paying, one wait in this many polls again. */
#define BUSYPOLL_PROBE_EVERY 32

/*
 * What the decision reads of the world: the clock, the machine's runnable
 * tasks, and the yield to a waiting task. busypoll_init() takes the real
 * ones; a test gives its own, so that no test depends on the clock or the
 * scheduler (a window that passes while a loaded machine runs something
 * else would otherwise decide the outcome).
 */
struct busypoll_world {
        uint64_t (*now_ns)(void *arg);  /* CLOCK_MONOTONIC, ns */
        unsigned (*running)(void *arg); /* runnable tasks, the caller included; 0: unknown */
        void (*yield)(void *arg);       /* let a task waiting for this CPU run */
        void *arg;
};

struct busypoll {
        struct busypoll_world world;
        int loadavg_fd; /* /proc/loadavg, read by the real world's running(); -1: none */
        bool on;        /* false: never poll (one CPU, or no count to read) */
        unsigned ncpus; /* online CPUs */
        unsigned score; /* recent polls that caught a request, out of 256 (decaying) */
        unsigned idle;  /* waits without a poll since the last one */
};

/* Never fails: without /proc or with one CPU (where polling would only keep
 * the client from running) it is off, and busypoll_until() says so. */
void busypoll_init(struct busypoll *bp);
/* The same with a given world and CPU count: what the tests use. A NULL
 * world turns polling off. */
void busypoll_init_with(struct busypoll *bp, const struct busypoll_world *world, unsigned ncpus);
void busypoll_done(struct busypoll *bp);

/* The runnable-task count of a text in /proc/loadavg's format ("0.00 0.01
 * 0.05 R/T LAST_PID": R), or 0 if it has none. */
unsigned busypoll_parse_loadavg(const char *text);

/*
 * Whether to poll before this wait, and until when (the world's clock, ns);
 * 0: sleep at once. Call it once per wait, on the thread that will poll (its
 * own running state counts), and report how a poll ended with
 * busypoll_caught(). Not thread-safe: one poller at a time.
 */
uint64_t busypoll_until(struct busypoll *bp);

/* Whether a poll that started with busypoll_until() may go on; it yields the
 * CPU to a waiting task first. */
bool busypoll_more(struct busypoll *bp, uint64_t until);

/* How the poll busypoll_until() allowed ended: a request came (true) or the
 * window passed (false). */
void busypoll_caught(struct busypoll *bp, bool caught);

/*
 * One wait's polling, what the FUSE loop and the broker both do: try_once()
 * (never blocking) once; if it returns none (nothing there yet), again and
 * again for as long as busypoll_until() allows, reporting how that ended.
 * Returns try_once()'s first result other than none, or none: then the
 * caller sleeps until something comes.
 */
int busypoll_run(struct busypoll *bp, int (*try_once)(void *arg), void *arg, int none);
