/* SPDX-License-Identifier: MIT */
/*
 * test-busypoll.c: lib/busypoll, the decision of the FUSE loop and the
 * broker to poll for a moment before sleeping: only with a CPU to spare,
 * read from /proc/loadavg's count of runnable tasks, and only while polls
 * catch requests.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/busypoll.h"
#include "lib/util.h"

/*
 * A made-up world: a clock that moves only when read (by `step` ns each
 * time), a runnable-task count from a loadavg text, and a count of yields.
 * Nothing here reads the real clock or waits on the scheduler, so no
 * outcome depends on how loaded the machine is.
 */
struct world {
        uint64_t now, step;
        const char *loadavg;
        unsigned yields, reads;
};

static uint64_t fake_now(void *arg)
{
        struct world *w = arg;

        w->now += w->step;
        return w->now;
}

static unsigned fake_running(void *arg)
{
        struct world *w = arg;

        w->reads++;
        return busypoll_parse_loadavg(w->loadavg);
}

static void fake_yield(void *arg)
{
        ((struct world *)arg)->yields++;
}

static void init_in(struct busypoll *bp, struct world *w, unsigned ncpus)
{
        busypoll_init_with(
                bp,
                &(struct busypoll_world){
                        .now_ns = fake_now, .running = fake_running, .yield = fake_yield, .arg = w},
                ncpus);
}

static uint64_t until_for(const char *text, unsigned ncpus)
{
        struct world w = {.now = 1000000, .step = 0, .loadavg = text};
        struct busypoll bp;
        uint64_t until;

        init_in(&bp, &w, ncpus);
        until = busypoll_until(&bp);
        busypoll_done(&bp);
        ck_assert(!bp.on);
        return until;
}

START_TEST(polls_while_a_cpu_is_idle)
{
        /* The caller is one of the two running tasks: the other CPU is idle. */
        ck_assert_uint_eq(until_for("0.52 0.58 0.59 2/311 12345\n", 2),
                          1000000 + BUSYPOLL_WINDOW_NS);
        ck_assert_uint_ne(until_for("0.00 0.00 0.00 1/90 7\n", 4), 0);
        ck_assert_uint_ne(until_for("9.00 9.00 9.00 4/90 7\n", 4), 0);
}
END_TEST

START_TEST(sleeps_when_every_cpu_has_work)
{
        /* make -j2 on two CPUs: two compilers and the caller. */
        ck_assert_uint_eq(until_for("2.10 2.00 1.90 3/311 12345\n", 2), 0);
        ck_assert_uint_eq(until_for("0.00 0.00 0.00 65/90 7\n", 64), 0);
}
END_TEST

START_TEST(never_polls_on_one_cpu)
{
        struct world w = {.loadavg = "0.00 0.00 0.00 1/90 7\n"};
        struct busypoll bp;

        /* The client could not run while the caller polls. */
        init_in(&bp, &w, 1);
        ck_assert(!bp.on);
        ck_assert_uint_eq(busypoll_until(&bp), 0);
        ck_assert_uint_eq(w.reads, 0);
        busypoll_done(&bp);
}
END_TEST

START_TEST(sleeps_when_the_count_cannot_be_read)
{
        struct busypoll bp;

        ck_assert_uint_eq(until_for("", 2), 0);
        ck_assert_uint_eq(until_for("garbage\n", 2), 0);
        ck_assert_uint_eq(until_for("0.00 0.00 0.00 x/90 7\n", 2), 0);
        ck_assert_uint_eq(until_for("0.00 0.00 0.00 1 90 7\n", 2), 0);
        ck_assert_uint_eq(until_for("0.00 0.00 0.00 0/90 7\n", 2), 0);
        ck_assert_uint_eq(until_for("0.00 0.00 0.00 -1/90 7\n", 2), 0);
        ck_assert_uint_eq(until_for("0.00 0.00\n", 2), 0);
        /* No world at all (no /proc/loadavg). */
        busypoll_init_with(&bp, NULL, 2);
        ck_assert(!bp.on);
        ck_assert_uint_eq(busypoll_until(&bp), 0);
        busypoll_done(&bp);
}
END_TEST

START_TEST(parses_the_runnable_count)
{
        ck_assert_uint_eq(busypoll_parse_loadavg("0.52 0.58 0.59 2/311 12345\n"), 2);
        ck_assert_uint_eq(busypoll_parse_loadavg("0.00 0.00 0.00 17/90 7"), 17);
        ck_assert_uint_eq(busypoll_parse_loadavg("0.00 0.00 0.00 99999999/90 7"), 0xffff);
        ck_assert_uint_eq(busypoll_parse_loadavg("0.00 0.00 0.00 /90 7"), 0);
}
END_TEST

/* A poller of a machine with a spare CPU: 1 of 2 CPUs running (the caller). */
static void idle_machine(struct busypoll *bp, struct world *w)
{
        *w = (struct world){.now = 1, .step = 1000, .loadavg = "0.00 0.00 0.00 1/90 7\n"};
        init_in(bp, w, 2);
}

START_TEST(stops_polling_after_misses_and_probes_now_and_then)
{
        struct world w;
        struct busypoll bp;

        idle_machine(&bp, &w);
        /* Polls that catch requests go on. */
        for (int i = 0; i < 100; i++) {
                ck_assert_uint_ne(busypoll_until(&bp), 0);
                busypoll_caught(&bp, true);
        }
        /* Two misses in a row are not enough to stop; the third is. */
        ck_assert_uint_ne(busypoll_until(&bp), 0);
        busypoll_caught(&bp, false);
        ck_assert_uint_ne(busypoll_until(&bp), 0);
        busypoll_caught(&bp, false);
        ck_assert_uint_ne(busypoll_until(&bp), 0);
        busypoll_caught(&bp, false);
        /* Then it sleeps at once, but for one wait in BUSYPOLL_PROBE_EVERY. */
        for (int round = 0; round < 3; round++) {
                for (int i = 0; i < BUSYPOLL_PROBE_EVERY - 1; i++)
                        ck_assert_uint_eq(busypoll_until(&bp), 0);
                ck_assert_uint_ne(busypoll_until(&bp), 0);
                busypoll_caught(&bp, false);
        }
        /* A probe that catches a request starts polling again at once. */
        for (int i = 0; i < BUSYPOLL_PROBE_EVERY - 1; i++)
                ck_assert_uint_eq(busypoll_until(&bp), 0);
        ck_assert_uint_ne(busypoll_until(&bp), 0);
        busypoll_caught(&bp, true);
        ck_assert_uint_ne(busypoll_until(&bp), 0);
        busypoll_caught(&bp, true);
        ck_assert_uint_ne(busypoll_until(&bp), 0);
        busypoll_done(&bp);
}
END_TEST

START_TEST(a_miss_now_and_then_does_not_stop_polling)
{
        struct world w;
        struct busypoll bp;

        idle_machine(&bp, &w);
        /* grep over a tree: mostly caught, a large file now and then missed. */
        for (int i = 0; i < 1000; i++) {
                ck_assert_uint_ne(busypoll_until(&bp), 0);
                busypoll_caught(&bp, i % 3 != 0);
        }
        busypoll_done(&bp);
}
END_TEST

START_TEST(a_busy_machine_skips_the_poll_without_scoring_it)
{
        struct world w;
        struct busypoll bp;

        idle_machine(&bp, &w);
        w.loadavg = "2.00 2.00 2.00 3/90 7\n";
        /* Many waits on a busy machine do not count as misses ... */
        for (int i = 0; i < 100; i++)
                ck_assert_uint_eq(busypoll_until(&bp), 0);
        /* ... so once a CPU is free, polling resumes at once. */
        w.loadavg = "0.00 0.00 0.00 1/90 7\n";
        ck_assert_uint_ne(busypoll_until(&bp), 0);
        busypoll_done(&bp);
}
END_TEST

/* A source that has nothing for `empty` tries, then 42. */
struct source {
        unsigned empty, tries;
};

static int try_source(void *arg)
{
        struct source *src = arg;

        return src->tries++ < src->empty ? -1 : 42;
}

START_TEST(run_returns_what_comes_and_scores_the_poll)
{
        struct world w;
        struct busypoll bp;
        struct source queued = {0, 0}, soon = {3, 0}, never = {~0u, 0};

        idle_machine(&bp, &w);
        /* Queued already: one try, no poll, no load read. */
        ck_assert_int_eq(busypoll_run(&bp, try_source, &queued, -1), 42);
        ck_assert_uint_eq(queued.tries, 1);
        ck_assert_uint_eq(w.reads, 0);
        /* Comes while polling: caught, with a yield before each retry. */
        ck_assert_int_eq(busypoll_run(&bp, try_source, &soon, -1), 42);
        ck_assert_uint_eq(soon.tries, 4);
        ck_assert_uint_eq(w.yields, 3);
        /* Never comes: three missed windows, and then a wait tries only once. */
        for (int i = 0; i < 3; i++)
                ck_assert_int_eq(busypoll_run(&bp, try_source, &never, -1), -1);
        /* The clock moves 1 us a read: each window is 50 reads, 49 retries. */
        ck_assert_uint_eq(never.tries, 3 * (1 + BUSYPOLL_WINDOW_NS / 1000 - 1));
        never.tries = 0;
        ck_assert_int_eq(busypoll_run(&bp, try_source, &never, -1), -1);
        ck_assert_uint_eq(never.tries, 1);
        busypoll_done(&bp);
}
END_TEST

START_TEST(run_tries_once_when_off)
{
        struct busypoll bp;
        struct source never = {~0u, 0};

        busypoll_init_with(&bp, NULL, 2);
        ck_assert_int_eq(busypoll_run(&bp, try_source, &never, -1), -1);
        ck_assert_uint_eq(never.tries, 1);
        busypoll_done(&bp);
}
END_TEST

START_TEST(a_poll_ends_with_its_window)
{
        struct world w;
        struct busypoll bp;
        uint64_t start, until;
        unsigned turns = 0;

        idle_machine(&bp, &w);
        ck_assert(!busypoll_more(&bp, 0));
        start = w.now;
        until = busypoll_until(&bp);
        ck_assert_uint_eq(until, start + 1000 + BUSYPOLL_WINDOW_NS);
        while (busypoll_more(&bp, until))
                turns++;
        /* Every read of the clock before the window's end is one turn. */
        ck_assert_uint_eq(turns, BUSYPOLL_WINDOW_NS / 1000 - 1);
        ck_assert_uint_eq(w.yields, turns);
        ck_assert_uint_ge(w.now, until);
        busypoll_done(&bp);
}
END_TEST

START_TEST(reads_this_machines_count)
{
        struct busypoll bp;
        long n = sysconf(_SC_NPROCESSORS_ONLN);

        busypoll_init(&bp);
        ck_assert_uint_eq(bp.ncpus, n > 1 ? (unsigned)n : 1);
        if (n > 1 && access("/proc/loadavg", R_OK) == 0) {
                ck_assert(bp.on);
                ck_assert_int_ge(bp.loadavg_fd, 0);
                /* This process runs now, so the count is at least 1. */
                ck_assert_uint_ge(bp.world.running(bp.world.arg), 1);
        } else {
                ck_assert(!bp.on);
        }
        busypoll_done(&bp);
        ck_assert_int_eq(bp.loadavg_fd, -1);
        ck_assert(!bp.on);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("busypoll");
        TCase *tc = tcase_create("busypoll");
        SRunner *sr;
        int failed;

        tcase_add_test(tc, polls_while_a_cpu_is_idle);
        tcase_add_test(tc, sleeps_when_every_cpu_has_work);
        tcase_add_test(tc, never_polls_on_one_cpu);
        tcase_add_test(tc, sleeps_when_the_count_cannot_be_read);
        tcase_add_test(tc, parses_the_runnable_count);
        tcase_add_test(tc, a_busy_machine_skips_the_poll_without_scoring_it);
        tcase_add_test(tc, stops_polling_after_misses_and_probes_now_and_then);
        tcase_add_test(tc, a_miss_now_and_then_does_not_stop_polling);
        tcase_add_test(tc, run_returns_what_comes_and_scores_the_poll);
        tcase_add_test(tc, run_tries_once_when_off);
        tcase_add_test(tc, a_poll_ends_with_its_window);
        tcase_add_test(tc, reads_this_machines_count);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
