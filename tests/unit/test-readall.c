/* SPDX-License-Identifier: MIT */
/*
 * test-readall.c: lib/readall, the bounded read-whole loop that sidecars,
 * configs, the review's store reads and the sandbox's resolv.conf share.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/readall.h"
#include "lib/util.h"

/* A file of n bytes 'a', 'b', ... read back from the start. */
static int file_of(size_t n)
{
        char tmpl[] = "/tmp/cloister-readall.XXXXXX";
        int fd = mkstemp(tmpl);

        ck_assert_int_ge(fd, 0);
        unlink(tmpl);
        for (size_t i = 0; i < n; i++) {
                char c = (char)('a' + i % 26);
                ck_assert_int_eq(write(fd, &c, 1), 1);
        }
        ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
        return fd;
}

static void content_is(const char *buf, size_t len, size_t want)
{
        ck_assert_uint_eq(len, want);
        for (size_t i = 0; i < len; i++)
                ck_assert_int_eq(buf[i], 'a' + (int)(i % 26));
}

START_TEST(reads_what_the_size_says)
{
        _cleanup_close_ int fd = file_of(10000);
        _cleanup_free_ char *buf = NULL;
        size_t len = 0;

        ck_assert_int_eq(fd_read_whole(fd, 10000, 1 << 20, &buf, &len), 0);
        content_is(buf, len, 10000);
        buf[len] = '\0'; /* the spare byte is there (ASan would say otherwise) */
}
END_TEST

START_TEST(reads_past_a_stale_size_and_up_to_a_short_one)
{
        _cleanup_close_ int grown = file_of(5000), shrunk = file_of(100);
        _cleanup_free_ char *a = NULL, *b = NULL;
        size_t la = 0, lb = 0;

        ck_assert_int_eq(fd_read_whole(grown, 3, 1 << 20, &a, &la), 0);
        content_is(a, la, 5000);
        a[la] = '\0';
        ck_assert_int_eq(fd_read_whole(shrunk, 4096, 1 << 20, &b, &lb), 0);
        content_is(b, lb, 100);
        b[lb] = '\0';
}
END_TEST

START_TEST(max_is_the_largest_file_read)
{
        _cleanup_close_ int at = file_of(4096), over = file_of(4097), growing = file_of(9000);
        _cleanup_free_ char *buf = NULL;
        char *none = NULL;
        size_t len = 0;

        ck_assert_int_eq(fd_read_whole(at, 4096, 4096, &buf, &len), 0);
        content_is(buf, len, 4096);
        buf[len] = '\0';
        ck_assert_int_eq(fd_read_whole(over, 4097, 4096, &none, &len), -EFBIG);
        /* A size that lied: found while reading, and nothing handed out. */
        ck_assert_int_eq(fd_read_whole(growing, 10, 4096, &none, &len), -EFBIG);
        ck_assert_ptr_null(none);
}
END_TEST

START_TEST(an_empty_file_and_a_read_error)
{
        _cleanup_close_ int empty = file_of(0);
        _cleanup_free_ char *buf = NULL;
        char *none = NULL;
        size_t len = 1;

        ck_assert_int_eq(fd_read_whole(empty, 0, 16, &buf, &len), 0);
        ck_assert_uint_eq(len, 0);
        buf[0] = '\0';
        ck_assert_int_eq(fd_read_whole(-1, 0, 16, &none, &len), -EBADF);
        ck_assert_ptr_null(none);
}
END_TEST

START_TEST(writes_whole_after_short_writes_and_says_why_not)
{
        _cleanup_close_ int file = file_of(0), pipe_r = -1, pipe_w = -1;
        _cleanup_free_ char *buf = malloc(1 << 20), *back = NULL;
        size_t len = 0;
        int p[2];

        ck_assert_ptr_nonnull(buf);
        for (size_t i = 0; i < 1 << 20; i++)
                buf[i] = (char)('a' + i % 26);
        ck_assert_int_eq(fd_write_whole(file, buf, 1 << 20), 0);
        ck_assert_int_eq(lseek(file, 0, SEEK_SET), 0);
        ck_assert_int_eq(fd_read_whole(file, 0, 2 << 20, &back, &len), 0);
        content_is(back, len, 1 << 20);
        /* A pipe takes part of 1 MiB (a short write), then no more: the
         * second write's errno, not a count, and not a spin. */
        ck_assert_int_eq(pipe2(p, O_NONBLOCK), 0);
        pipe_r = p[0];
        pipe_w = p[1];
        ck_assert_int_eq(fd_write_whole(pipe_w, buf, 1 << 20), -EAGAIN);
        ck_assert_int_eq(fd_write_whole(pipe_r, buf, 1), -EBADF);
        ck_assert_int_eq(fd_write_whole(-1, buf, 0), 0); /* nothing to write */
}
END_TEST

int main(void)
{
        Suite *s = suite_create("readall");
        TCase *tc = tcase_create("readall");
        SRunner *sr;
        int failed;

        tcase_add_test(tc, reads_what_the_size_says);
        tcase_add_test(tc, reads_past_a_stale_size_and_up_to_a_short_one);
        tcase_add_test(tc, max_is_the_largest_file_read);
        tcase_add_test(tc, an_empty_file_and_a_read_error);
        tcase_add_test(tc, writes_whole_after_short_writes_and_says_why_not);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
