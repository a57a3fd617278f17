/* SPDX-License-Identifier: MIT */
/*
 * test-listen-fds.c: the receiving end of socket activation (lib/listen-fds),
 * with real sockets put where systemd puts them (fd 3 on) and the variables
 * it sets. Whatever the test runner keeps on those fds is moved aside while
 * a case runs and put back before it asserts.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "lib/listen-fds.h"
#include "lib/util.h"

#define SLOTS 2

static char tmpdir[] = "/tmp/cloister-listen-fds-XXXXXX";
static int saved[SLOTS];

static void setup(void)
{
        ck_assert_ptr_nonnull(mkdtemp(tmpdir));
        unsetenv("LISTEN_PID");
        unsetenv("LISTEN_FDS");
        unsetenv("LISTEN_FDNAMES");
}

static void teardown(void)
{
        char p[256];

        for (int i = 0; i < SLOTS; i++) {
                snprintf(p, sizeof(p), "%s/s%d.sock", tmpdir, i);
                unlink(p);
        }
        rmdir(tmpdir);
        strcpy(tmpdir, "/tmp/cloister-listen-fds-XXXXXX");
}

/* A listening unix socket bound to <tmpdir>/s<i>.sock. */
static int listener(int i)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        ck_assert_int_ge(fd, 0);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/s%d.sock", tmpdir, i);
        ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        ck_assert_int_eq(listen(fd, 4), 0);
        return fd;
}

/* Move what is on fds 3.. aside and put fds[i] there, without CLOEXEC, as exec leaves them. */
static void place(const int *fds, int n)
{
        for (int i = 0; i < SLOTS; i++)
                saved[i] = fcntl(LISTEN_FDS_START + i, F_DUPFD_CLOEXEC, 100);
        for (int i = 0; i < SLOTS; i++) {
                if (i < n)
                        ck_assert_int_eq(dup2(fds[i], LISTEN_FDS_START + i), LISTEN_FDS_START + i);
                else
                        close(LISTEN_FDS_START + i);
        }
}

static void restore(void)
{
        for (int i = 0; i < SLOTS; i++) {
                if (saved[i] >= 0) {
                        dup2(saved[i], LISTEN_FDS_START + i);
                        close(saved[i]);
                } else {
                        close(LISTEN_FDS_START + i);
                }
        }
}

static void set_pid(long pid)
{
        char s[32];

        snprintf(s, sizeof(s), "%ld", pid);
        setenv("LISTEN_PID", s, 1);
}

START_TEST(passed_sockets_are_counted_made_cloexec_and_the_variables_removed)
{
        int fds[2] = {listener(0), listener(1)};
        int n, cloexec0, cloexec1;

        place(fds, 2);
        set_pid(getpid());
        setenv("LISTEN_FDS", "2", 1);
        setenv("LISTEN_FDNAMES", "agent:other", 1);
        n = listen_fds_take();
        cloexec0 = fcntl(LISTEN_FDS_START, F_GETFD) & FD_CLOEXEC;
        cloexec1 = fcntl(LISTEN_FDS_START + 1, F_GETFD) & FD_CLOEXEC;
        restore();
        ck_assert_int_eq(n, 2);
        ck_assert(cloexec0 && cloexec1);
        ck_assert_ptr_null(getenv("LISTEN_PID"));
        ck_assert_ptr_null(getenv("LISTEN_FDS"));
        ck_assert_ptr_null(getenv("LISTEN_FDNAMES"));
        close(fds[0]);
        close(fds[1]);
}
END_TEST

START_TEST(nothing_is_passed_without_listen_pid)
{
        setenv("LISTEN_FDS", "1", 1);
        ck_assert_int_eq(listen_fds_take(), 0);
        ck_assert_ptr_null(getenv("LISTEN_FDS"));
}
END_TEST

START_TEST(sockets_for_another_process_are_not_taken)
{
        int fd = listener(0), n, cloexec;

        place(&fd, 1);
        set_pid(getpid() == 1 ? 2 : 1);
        setenv("LISTEN_FDS", "1", 1);
        n = listen_fds_take();
        cloexec = fcntl(LISTEN_FDS_START, F_GETFD) & FD_CLOEXEC;
        restore();
        ck_assert_int_eq(n, 0);
        ck_assert_int_eq(cloexec, 0); /* left alone: not ours */
        ck_assert_ptr_null(getenv("LISTEN_PID"));
        ck_assert_ptr_null(getenv("LISTEN_FDS"));
        close(fd);
}
END_TEST

START_TEST(malformed_variables_are_errors_not_zero)
{
        static const char *const bad_fds[] = {
                "", "x", "-1", "+1", "01", "1 ", " 1", "65", "99999999999999999999"};
        static const char *const bad_pid[] = {"", "0", "-5", "12ab", "99999999999"};

        for (size_t i = 0; i < ELEMENTSOF(bad_fds); i++) {
                set_pid(getpid());
                setenv("LISTEN_FDS", bad_fds[i], 1);
                ck_assert_msg(listen_fds_take() == -EINVAL, "LISTEN_FDS='%s' accepted", bad_fds[i]);
                ck_assert_ptr_null(getenv("LISTEN_FDS"));
        }
        set_pid(getpid());
        unsetenv("LISTEN_FDS");
        ck_assert_int_eq(listen_fds_take(), -EINVAL);
        for (size_t i = 0; i < ELEMENTSOF(bad_pid); i++) {
                setenv("LISTEN_PID", bad_pid[i], 1);
                setenv("LISTEN_FDS", "1", 1);
                ck_assert_msg(listen_fds_take() == -EINVAL, "LISTEN_PID='%s' accepted", bad_pid[i]);
        }
}
END_TEST

START_TEST(an_announced_descriptor_that_is_not_open_is_ebadf)
{
        int n;

        place(NULL, 0);
        set_pid(getpid());
        setenv("LISTEN_FDS", "2", 1);
        n = listen_fds_take();
        restore();
        ck_assert_int_eq(n, -EBADF);
}
END_TEST

START_TEST(zero_fds_is_zero)
{
        set_pid(getpid());
        setenv("LISTEN_FDS", "0", 1);
        ck_assert_int_eq(listen_fds_take(), 0);
}
END_TEST

START_TEST(the_path_of_a_listening_unix_socket_is_read_back)
{
        char want[256], got[256];
        int fd = listener(0);

        snprintf(want, sizeof(want), "%s/s0.sock", tmpdir);
        ck_assert_int_eq(listen_fd_unix_path(fd, got, sizeof(got)), 0);
        ck_assert_str_eq(got, want);
        ck_assert_int_eq(listen_fd_unix_path(fd, got, 8), -ENAMETOOLONG);
        close(fd);
}
END_TEST

START_TEST(what_is_not_a_listening_unix_path_socket_is_told_apart)
{
        char got[256], p[256];
        int sp[2], fd;
        struct sockaddr_un sa = {.sun_family = AF_UNIX};

        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
        ck_assert_int_eq(listen_fd_unix_path(sp[0], got, sizeof(got)), -EINVAL);
        close(sp[0]);
        close(sp[1]);

        fd = socket(AF_UNIX, SOCK_DGRAM, 0);
        ck_assert_int_eq(listen_fd_unix_path(fd, got, sizeof(got)), -EPROTOTYPE);
        close(fd);

        /* bound, not listening */
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/s1.sock", tmpdir);
        ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        ck_assert_int_eq(listen_fd_unix_path(fd, got, sizeof(got)), -EINVAL);
        close(fd);

        /* abstract */
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        memset(sa.sun_path, 0, sizeof(sa.sun_path));
        snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "cloister-test-%d", (int)getpid());
        ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa,
                              (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
                                          strlen(sa.sun_path + 1))),
                         0);
        ck_assert_int_eq(listen(fd, 1), 0);
        ck_assert_int_eq(listen_fd_unix_path(fd, got, sizeof(got)), -EAFNOSUPPORT);
        close(fd);

        /* not a unix socket (loopback TCP, port 0: nothing leaves the machine) */
        fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd >= 0) {
                ck_assert_int_eq(listen(fd, 1), 0);
                ck_assert_int_eq(listen_fd_unix_path(fd, got, sizeof(got)), -EAFNOSUPPORT);
                close(fd);
        }

        snprintf(p, sizeof(p), "%s/plain", tmpdir);
        fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(listen_fd_unix_path(fd, got, sizeof(got)), -ENOTSOCK);
        close(fd);
        unlink(p);
}
END_TEST

static Suite *listen_fds_suite(void)
{
        Suite *s = suite_create("listen_fds");
        TCase *tc = tcase_create("listen_fds");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, passed_sockets_are_counted_made_cloexec_and_the_variables_removed);
        tcase_add_test(tc, nothing_is_passed_without_listen_pid);
        tcase_add_test(tc, sockets_for_another_process_are_not_taken);
        tcase_add_test(tc, malformed_variables_are_errors_not_zero);
        tcase_add_test(tc, an_announced_descriptor_that_is_not_open_is_ebadf);
        tcase_add_test(tc, zero_fds_is_zero);
        tcase_add_test(tc, the_path_of_a_listening_unix_socket_is_read_back);
        tcase_add_test(tc, what_is_not_a_listening_unix_path_socket_is_told_apart);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        SRunner *sr = srunner_create(listen_fds_suite());
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
