/* SPDX-License-Identifier: MIT */
/*
 * test-ops-run.c: a run's end always wakes its caller (operations.h,
 * ops_run_fds): a caller that sleeps in poll() on the run's fds, with the
 * timeout ops_run_timeout_ms() asks for, is woken for the run's end, never
 * left to sleep until something else happens (issue 46: run_command
 * stalled a second in a third of calls, when the result pipe closed before
 * the exit could be reaped and nothing woke the loop for the exit).
 *
 * Nothing here depends on timing: the poll waits without a bound unless
 * the run asks for one, and the test's own timeout is the meson harness's.
 * A wakeup that cannot come fails at once: no fd to wait on, and no bound.
 */
#include <check.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "operations.h"
#include "lib/util.h"

static char tmpdir[] = "/tmp/cloister-ops-run-test-XXXXXX";
static char cfgpath[4096];

/*
 * [network] mode = host is refused without --allow-host-network: the run's
 * session fails at once, with nothing mounted, so its child ends within
 * microseconds of closing the result pipe (the race of the issue, at its
 * most likely).
 */
static struct config *config_fast_failing(void)
{
        struct config *c = NULL;
        _cleanup_free_ char *err = NULL, *text = NULL;
        int fd;

        ck_assert_ptr_nonnull(mkdtemp(tmpdir));
        snprintf(cfgpath, sizeof(cfgpath), "%s/ws.ini", tmpdir);
        ck_assert_int_ge(asprintf(&text,
                                  "[workspace]\nname = ws\nstate = %s/state\n[repo]\nsource = "
                                  "%s/src\n[network]\nmode = host\n",
                                  tmpdir, tmpdir),
                         0);
        fd = open(cfgpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
        close(fd);
        ck_assert_msg(config_load(cfgpath, &c, &err) == 0, "config: %s", err ? err : "?");
        return c;
}

START_TEST(run_end_always_wakes_the_poller)
{
        struct config *c = config_fast_failing();

        for (int i = 0; i < 200; i++) {
                struct ops_run_options o = {.config = c, .config_path = cfgpath, .command = "true"};
                _cleanup_free_ char *error = NULL;
                ops_run *r = NULL;
                json_t *res;

                ck_assert_msg(ops_run_start(&o, &r, &error) == 0, "start: %s", error);
                while (ops_run_pump(r) != 1) {
                        int fds[OPS_RUN_FDS], timeout = ops_run_timeout_ms(r), n;
                        struct pollfd pfd[OPS_RUN_FDS];
                        nfds_t k = 0;

                        ops_run_fds(r, fds);
                        for (int j = 0; j < OPS_RUN_FDS; j++)
                                if (fds[j] >= 0)
                                        pfd[k++] = (struct pollfd){.fd = fds[j], .events = POLLIN};
                        ck_assert_msg(k > 0 || timeout >= 0,
                                      "run %d has not ended, and nothing would wake its caller "
                                      "(no fd to poll, no timeout)",
                                      i);
                        n = poll(pfd, k, timeout);
                        ck_assert_int_ge(n, 0);
                }
                res = ops_run_result(r);
                ck_assert_ptr_nonnull(res);
                /* It ran nothing: the session refused the host network. */
                ck_assert_int_eq(json_integer_value(json_object_get(res, "exit_code")), 125);
                ck_assert_ptr_nonnull(
                        strstr(json_string_value(json_object_get(res, "error")), "host"));
                json_decref(res);
                ops_run_free(r);
        }
        config_free(c);
        unlink(cfgpath);
        rmdir(tmpdir);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("ops_run");
        TCase *tc = tcase_create("wakeup");
        SRunner *sr;
        int failed;

        tcase_add_test(tc, run_end_always_wakes_the_poller);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
