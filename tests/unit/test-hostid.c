/* SPDX-License-Identifier: MIT */
/*
 * test-hostid.c: reservations of the host uids root's sandboxes run as.
 * Each test uses a range of its own, far from the default one, so that the
 * sandboxes other tests start on this machine never take its uids. Needs
 * root (the reservations live in root's /run/cloister/host-uids).
 */
#include <check.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hostid.h"
#include "lib/util.h"

static uint32_t base;

static void setup(void)
{
        /* 1024 ids per run, in 2102000000..2145000000, chosen by pid and time. */
        base = 2102000000U +
               (uint32_t)(((unsigned)getpid() * 7919U + (unsigned)time(NULL)) % 42000U) * 1024U;
}

static hostid *take(uint32_t first, uint32_t last)
{
        _cleanup_free_ char *err = NULL;
        hostid *h = NULL;
        int r = hostid_acquire(first, last, "/test-hostid", &h, &err);

        ck_assert_msg(r == 0, "hostid_acquire: %s", err ? err : strerror(-r));
        return h;
}

START_TEST(lowest_free_uid_of_the_range_is_given)
{
        hostid *a = take(base, base + 2), *b = take(base, base + 2);

        ck_assert_uint_eq(hostid_uid(a), base);
        ck_assert_uint_eq(hostid_uid(b), base + 1);
        hostid_free(a);
        a = take(base, base + 2);
        ck_assert_uint_eq(hostid_uid(a), base);
        hostid_free(a);
        hostid_free(b);
}
END_TEST

START_TEST(exhausted_range_fails_and_says_so)
{
        _cleanup_free_ char *err = NULL;
        hostid *a = take(base, base), *b = NULL;
        int r = hostid_acquire(base, base, "/test-hostid", &b, &err);

        ck_assert_int_eq(r, -EUSERS);
        ck_assert_ptr_null(b);
        ck_assert_ptr_nonnull(err);
        ck_assert_ptr_nonnull(strstr(err, "no free host uid in"));
        hostid_free(a);
}
END_TEST

START_TEST(reservation_names_its_holder)
{
        hostid *a = take(base, base);

        ck_assert_int_eq(hostid_check(base, getpid()), 0);
        ck_assert_int_eq(hostid_check(base, getpid() + 1), -EPERM);
        hostid_free(a);
        ck_assert_int_eq(hostid_check(base, getpid()), -ESRCH);
}
END_TEST

START_TEST(uid_a_process_runs_as_is_skipped)
{
        int p[2];
        char b;
        pid_t child;
        hostid *a;

        ck_assert_int_eq(pipe(p), 0);
        child = fork();
        ck_assert_int_ge(child, 0);
        if (child == 0) {
                close(p[0]);
                if (setgroups(0, NULL) < 0 || setresgid(base, base, base) < 0 ||
                    setresuid(base, base, base) < 0)
                        _exit(1);
                (void)write(p[1], "x", 1);
                pause();
                _exit(0);
        }
        close(p[1]);
        ck_assert_int_eq(read(p[0], &b, 1), 1);
        a = take(base, base + 1);
        ck_assert_uint_eq(hostid_uid(a), base + 1);
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        hostid_free(a);
        close(p[0]);
}
END_TEST

/* A zombie not yet reaped (a run's bubblewrap, for a moment) holds nothing: its uid is given. */
START_TEST(uid_of_a_zombie_is_given)
{
        pid_t child = fork();
        siginfo_t si;
        hostid *a;

        ck_assert_int_ge(child, 0);
        if (child == 0) {
                if (setgroups(0, NULL) < 0 || setresgid(base, base, base) < 0 ||
                    setresuid(base, base, base) < 0)
                        _exit(1);
                _exit(0);
        }
        /* Wait for it to exit, but leave it a zombie. */
        ck_assert_int_eq(waitid(P_PID, (id_t)child, &si, WEXITED | WNOWAIT), 0);
        ck_assert_int_eq(si.si_status, 0);
        a = take(base, base);
        ck_assert_uint_eq(hostid_uid(a), base);
        hostid_free(a);
        waitpid(child, NULL, 0);
}
END_TEST

START_TEST(uid_of_a_user_is_skipped)
{
        _cleanup_free_ char *err = NULL;
        hostid *h = NULL;
        struct passwd *pw = getpwnam("nobody");

        if (!pw)
                return; /* no such user here: nothing to check against */
        ck_assert_int_eq(hostid_acquire(pw->pw_uid, pw->pw_uid, "/test-hostid", &h, &err), -EUSERS);
        ck_assert_ptr_null(h);
}
END_TEST

START_TEST(killed_holder_frees_its_uid)
{
        pid_t child = fork();
        int status;
        hostid *a;

        ck_assert_int_ge(child, 0);
        if (child == 0) {
                hostid *h = NULL;
                if (hostid_acquire(base, base, "/test-hostid", &h, NULL) < 0)
                        _exit(1);
                raise(SIGKILL); /* no release: the kernel drops the lock */
                _exit(2);
        }
        ck_assert_int_eq(waitpid(child, &status, 0), child);
        ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        a = take(base, base);
        ck_assert_uint_eq(hostid_uid(a), base);
        ck_assert_int_eq(hostid_check(base, getpid()), 0);
        hostid_free(a);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("hostid");
        TCase *tc = tcase_create("hostid");
        SRunner *sr;
        int failed;

        if (geteuid() != 0) {
                puts("SKIP: reservations are root's (/run/cloister/host-uids)");
                return 77;
        }
        tcase_add_checked_fixture(tc, setup, NULL);
        tcase_add_test(tc, lowest_free_uid_of_the_range_is_given);
        tcase_add_test(tc, exhausted_range_fails_and_says_so);
        tcase_add_test(tc, reservation_names_its_holder);
        tcase_add_test(tc, uid_a_process_runs_as_is_skipped);
        tcase_add_test(tc, uid_of_a_zombie_is_given);
        tcase_add_test(tc, uid_of_a_user_is_skipped);
        tcase_add_test(tc, killed_holder_frees_its_uid);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? 1 : 0;
}
