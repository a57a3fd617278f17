/* SPDX-License-Identifier: MIT */
/*
 * test-busypoll.c: lib/busypoll, the decision of the FUSE loop and the
 * broker to poll for a moment before sleeping: only with a CPU to spare,
 * read from /proc/loadavg's count of runnable tasks, and only while polls
 * catch requests.
 */
#include <check.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/busypoll.h"
#include "lib/util.h"

static uint64_t now_ns(void)
{
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* A file holding text, as /proc/loadavg would. */
static int loadavg_of(const char *text)
{
        char tmpl[] = "/tmp/cloister-loadavg.XXXXXX";
        int fd = mkstemp(tmpl);

        ck_assert_int_ge(fd, 0);
        unlink(tmpl);
        ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        return fd;
}

static uint64_t until_for(const char *text, unsigned ncpus)
{
        struct busypoll bp;
        uint64_t until;

        busypoll_init_from(&bp, loadavg_of(text), ncpus);
        until = busypoll_until(&bp);
        busypoll_done(&bp);
        ck_assert_int_eq(bp.loadavg_fd, -1);
        return until;
}

START_TEST(polls_while_a_cpu_is_idle)
{
        uint64_t before = now_ns();
        /* The caller is one of the two running tasks: the other CPU is taken. */
        uint64_t until = until_for("0.52 0.58 0.59 2/311 12345\n", 2);

        ck_assert_uint_ge(until, before + BUSYPOLL_WINDOW_NS);
        ck_assert_uint_le(until, now_ns() + BUSYPOLL_WINDOW_NS);
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
        struct busypoll bp;

        /* The client could not run while the caller polls. */
        busypoll_init_from(&bp, loadavg_of("0.00 0.00 0.00 1/90 7\n"), 1);
        ck_assert_int_eq(bp.loadavg_fd, -1);
        ck_assert_uint_eq(busypoll_until(&bp), 0);
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
        ck_assert_uint_eq(until_for("0.00 0.00\n", 2), 0);
        /* No file at all. */
        busypoll_init_from(&bp, -1, 2);
        ck_assert_uint_eq(busypoll_until(&bp), 0);
        busypoll_done(&bp);
}
END_TEST

/* A poller of a machine with a spare CPU: 1 of 2 CPUs running (the caller). */
static void idle_machine(struct busypoll *bp)
{
        busypoll_init_from(bp, loadavg_of("0.00 0.00 0.00 1/90 7\n"), 2);
}

START_TEST(stops_polling_after_misses_and_probes_now_and_then)
{
        struct busypoll bp;

        idle_machine(&bp);
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
        struct busypoll bp;

        idle_machine(&bp);
        /* grep over a tree: mostly caught, a large file now and then missed. */
        for (int i = 0; i < 1000; i++) {
                ck_assert_uint_ne(busypoll_until(&bp), 0);
                busypoll_caught(&bp, i % 3 != 0);
        }
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
        struct busypoll bp;
        struct source queued = {0, 0}, soon = {3, 0}, never = {~0u, 0};

        idle_machine(&bp);
        /* Queued already: one try, no poll. */
        ck_assert_int_eq(busypoll_run(&bp, try_source, &queued, -1), 42);
        ck_assert_uint_eq(queued.tries, 1);
        /* Comes while polling: caught. */
        ck_assert_int_eq(busypoll_run(&bp, try_source, &soon, -1), 42);
        ck_assert_uint_eq(soon.tries, 4);
        /* Never comes: three missed windows, and then a wait tries only once. */
        for (int i = 0; i < 3; i++)
                ck_assert_int_eq(busypoll_run(&bp, try_source, &never, -1), -1);
        ck_assert_uint_gt(never.tries, 3);
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

        busypoll_init_from(&bp, -1, 2);
        ck_assert_int_eq(busypoll_run(&bp, try_source, &never, -1), -1);
        ck_assert_uint_eq(never.tries, 1);
        busypoll_done(&bp);
}
END_TEST

START_TEST(a_poll_ends_with_its_window)
{
        uint64_t start = now_ns(), until = until_for("0.00 0.00 0.00 1/90 7\n", 2);
        unsigned turns = 0;

        ck_assert(!busypoll_more(0));
        ck_assert_uint_ne(until, 0);
        while (busypoll_more(until))
                turns++;
        ck_assert_uint_ge(now_ns() - start, BUSYPOLL_WINDOW_NS);
        ck_assert_uint_gt(turns, 0);
}
END_TEST

START_TEST(reads_this_machines_count)
{
        struct busypoll bp;
        long n = sysconf(_SC_NPROCESSORS_ONLN);

        if (access("/proc/loadavg", R_OK) < 0)
                return; /* no /proc here: off, as sleeps_when_the_count_cannot_be_read checks */
        busypoll_init(&bp);
        ck_assert_uint_eq(bp.ncpus, n > 1 ? (unsigned)n : 1);
        if (n > 1)
                ck_assert_int_ge(bp.loadavg_fd, 0);
        else
                ck_assert_int_eq(bp.loadavg_fd, -1);
        busypoll_done(&bp);
        ck_assert_int_eq(bp.loadavg_fd, -1);
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
