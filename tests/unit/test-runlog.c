/* SPDX-License-Identifier: MIT */
/*
 * test-runlog.c: the run record's appends (mounts/ops/ops-runlog.c on
 * broker_audit_open_tail). An append reads the record's end only, so its
 * cost does not grow with the record: counted in bytes read (rchar of
 * /proc/self/io), never in time. And reading only the end papers over
 * nothing: a record cut or edited at its end is refused, an edit further
 * back is still found by the whole check after later appends, and a head
 * one append behind (a runner that died between its line and its head) is
 * taken up.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker/audit.h"
#include "config.h"
#include "operations.h"
#include "lib/util.h"

static char dir[64];
static struct config cfg;

static void setup(void)
{
        strcpy(dir, "/tmp/test-runlog.XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(dir));
        memset(&cfg, 0, sizeof(cfg));
        cfg.workspace.name = (char *)"t";
        cfg.workspace.state = dir;
        cfg.limits.runlog = OPS_RUNLOG_MAX_DEFAULT;
}

static void teardown(void)
{
        char cmd[128];

        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        ck_assert_int_eq(system(cmd), 0);
}

/* Bytes this process has read through read(2) and pread(2) so far. */
static unsigned long long rchar(void)
{
        unsigned long long v = 0;
        char line[128];
        FILE *f = fopen("/proc/self/io", "re");

        ck_assert_ptr_nonnull(f);
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "rchar: %llu", &v) == 1)
                        break;
        fclose(f);
        return v;
}

static char *path_of(const char *name)
{
        char *p;

        ck_assert_int_ge(asprintf(&p, "%s/%s", dir, name), 0);
        return p;
}

/* n lines of a valid chain in the record, written in one pass (not through runs). */
static void record_fill(unsigned n)
{
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_free_ char *error = NULL;
        broker_audit *a = NULL;

        ck_assert_int_ge(dfd, 0);
        ck_assert_int_eq(broker_audit_open_file(dfd, dir, OPS_RUNLOG_FILE, OPS_RUNLOG_HEAD, NULL,
                                                NULL, &a, &error),
                         0);
        for (unsigned i = 0; i < n; i++) {
                json_t *e = json_pack("{s:s, s:s, s:[s], s:s}", "event", "run_start", "run",
                                      "0123456789abcdef", "argv",
                                      "make -j2 a-command-line-of-some-length", "source", "run");
                ck_assert_int_eq(broker_audit_append(a, e, 0), 0);
                json_decref(e);
        }
        ck_assert_int_eq(broker_audit_sync_head(a), 0);
        broker_audit_free(a);
}

static int run_begin(char **ret_error)
{
        char *argv[] = {(char *)"true", NULL};
        struct ops_runlog_start s = {.source = "run", .argv = argv, .cwd = "/workspace"};
        char id[OPS_RUNLOG_ID_LEN + 1];

        return ops_runlog_begin(&cfg, &s, id, ret_error);
}

/* Bytes one run_start append reads. */
static unsigned long long append_reads(void)
{
        _cleanup_free_ char *error = NULL;
        unsigned long long before = rchar();

        ck_assert_msg(run_begin(&error) == 0, "append: %s", error ? error : "?");
        return rchar() - before;
}

static int verify(unsigned *ret_line, char **ret_reason)
{
        _cleanup_free_ char *p = path_of(OPS_RUNLOG_FILE);
        unsigned lines = 0;

        *ret_line = 0;
        return broker_audit_verify(p, &lines, ret_line, ret_reason);
}

START_TEST(append_reads_the_same_for_a_small_and_a_large_record)
{
        _cleanup_free_ char *p = path_of(OPS_RUNLOG_FILE);
        unsigned long long small, large;
        struct stat st;

        record_fill(10);
        small = append_reads();
        /* ~4 MiB more: an append that read all of it would read that much more. */
        record_fill(20000);
        ck_assert_int_eq(stat(p, &st), 0);
        ck_assert_int_gt(st.st_size, 4 * 1024 * 1024);
        large = append_reads();
        ck_assert_msg(large <= small + 4096,
                      "an append read %llu bytes of a %lld-byte record, %llu of a small one", large,
                      (long long)st.st_size, small);
        ck_assert_msg(large < 16 * 1024, "an append read %llu bytes", large);
        /* And the record it left verifies whole. */
        unsigned line;
        _cleanup_free_ char *reason = NULL;
        ck_assert_msg(verify(&line, &reason) == 0, "%s", reason ? reason : "?");
}
END_TEST

/*
 * Edit line `lineno` of the record as a tamperer would: "make -j2" becomes
 * "make -j9", the same length, so that the other lines stay where they are
 * and the line's hash is left as it was.
 */
static void record_edit(unsigned lineno)
{
        _cleanup_free_ char *p = path_of(OPS_RUNLOG_FILE), *line = NULL;
        size_t cap = 0;
        long at = 0;
        FILE *f = fopen(p, "r+e");

        ck_assert_ptr_nonnull(f);
        for (unsigned i = 0; i < lineno; i++) {
                at = ftell(f);
                ck_assert_int_gt(getline(&line, &cap, f), 0);
        }
        char *m = strstr(line, "make -j2");
        ck_assert_ptr_nonnull(m);
        ck_assert_int_eq(fseek(f, at + (long)(m - line) + 7, SEEK_SET), 0);
        ck_assert_int_eq(fputc('9', f), '9');
        ck_assert_int_eq(fclose(f), 0);
}

START_TEST(append_refuses_a_record_whose_last_line_was_edited)
{
        _cleanup_free_ char *error = NULL;

        record_fill(50);
        record_edit(50);
        ck_assert_int_eq(run_begin(&error), -EBADMSG);
        ck_assert_ptr_nonnull(strstr(error, "line 50: edited"));
        ck_assert_ptr_nonnull(strstr(error, "tampered"));
}
END_TEST

START_TEST(append_refuses_a_record_cut_inside_its_last_line)
{
        _cleanup_free_ char *p = path_of(OPS_RUNLOG_FILE), *error = NULL;
        struct stat st;

        record_fill(50);
        ck_assert_int_eq(stat(p, &st), 0);
        ck_assert_int_eq(truncate(p, st.st_size - 10), 0);
        ck_assert_int_eq(run_begin(&error), -EBADMSG);
        ck_assert_ptr_nonnull(strstr(error, "truncated"));
}
END_TEST

START_TEST(append_refuses_a_record_whose_last_lines_were_deleted)
{
        _cleanup_free_ char *p = path_of(OPS_RUNLOG_FILE), *error = NULL;
        _cleanup_free_ char *all = NULL;
        struct stat st;
        FILE *f;

        record_fill(50);
        ck_assert_int_eq(stat(p, &st), 0);
        f = fopen(p, "re");
        ck_assert_ptr_nonnull(f);
        all = malloc((size_t)st.st_size);
        ck_assert_int_eq(fread(all, 1, (size_t)st.st_size, f), (size_t)st.st_size);
        fclose(f);
        /* Cut at a line's end, two lines before the last. */
        char *end = all + st.st_size - 1;
        for (int k = 0; k < 3; end--)
                if (*end == '\n' && ++k == 3)
                        break;
        ck_assert_int_eq(truncate(p, end - all + 1), 0);
        ck_assert_int_eq(run_begin(&error), -EBADMSG);
        ck_assert_ptr_nonnull(strstr(error, "deleted at the end"));
}
END_TEST

START_TEST(append_refuses_a_record_whose_last_line_was_replaced_with_its_hash)
{
        _cleanup_free_ char *error = NULL, *h = path_of(OPS_RUNLOG_HEAD);
        char head[128];
        FILE *f;

        record_fill(5);
        /* The head names seq 5 with another hash: the last line was replaced. */
        f = fopen(h, "re");
        ck_assert_ptr_nonnull(f);
        ck_assert_ptr_nonnull(fgets(head, sizeof(head), f));
        fclose(f);
        char *sp = strchr(head, ' ');
        ck_assert_ptr_nonnull(sp);
        sp[1] = sp[1] == 'a' ? 'b' : 'a';
        f = fopen(h, "r+e");
        ck_assert_int_eq(fputs(head, f) >= 0, 1);
        fclose(f);
        ck_assert_int_eq(run_begin(&error), -EBADMSG);
        ck_assert_ptr_nonnull(strstr(error, "replaced"));
}
END_TEST

START_TEST(an_edit_further_back_is_still_found_after_later_appends)
{
        _cleanup_free_ char *error = NULL, *reason = NULL;
        unsigned line = 0;

        record_fill(10);
        record_edit(3);
        ck_assert_int_eq(verify(&line, &reason), -EBADMSG);
        ck_assert_int_eq(line, 3);
        free(reason);
        reason = NULL;
        ck_assert_msg(run_begin(&error) == 0, "%s", error ? error : "?");
        ck_assert_int_eq(verify(&line, &reason), -EBADMSG);
        ck_assert_int_eq(line, 3);
        ck_assert_ptr_nonnull(strstr(reason, "edited"));
}
END_TEST

START_TEST(append_takes_up_a_head_one_line_behind)
{
        _cleanup_free_ char *h = path_of(OPS_RUNLOG_HEAD), *error = NULL, *reason = NULL;
        _cleanup_free_ char *old = NULL;
        unsigned line = 0;
        size_t cap = 0;
        FILE *f;

        record_fill(5);
        f = fopen(h, "re");
        ck_assert_ptr_nonnull(f);
        ck_assert_int_gt(getline(&old, &cap, f), 0);
        fclose(f);
        record_fill(1);
        /* A runner that died between its line and its head: the head names line 5. */
        f = fopen(h, "we");
        ck_assert_int_eq(fputs(old, f) >= 0, 1);
        fclose(f);
        ck_assert_msg(run_begin(&error) == 0, "%s", error ? error : "?");
        ck_assert_msg(verify(&line, &reason) == 0, "%s", reason ? reason : "?");
        f = fopen(h, "re");
        ck_assert_int_gt(getline(&old, &cap, f), 0);
        fclose(f);
        ck_assert_int_eq(strncmp(old, "7 ", 2), 0);
}
END_TEST

START_TEST(append_to_a_full_record_is_refused)
{
        _cleanup_free_ char *error = NULL, *p = path_of(OPS_RUNLOG_FILE);
        struct stat st;

        /* The bound within the reserve: the next run writes audit_full instead. */
        record_fill(20);
        ck_assert_int_eq(stat(p, &st), 0);
        cfg.limits.runlog = (uint64_t)st.st_size + BROKER_AUDIT_RESERVE / 2;
        ck_assert_int_eq(run_begin(&error), -EDQUOT);
        free(error);
        error = NULL;
        cfg.limits.runlog = OPS_RUNLOG_MAX_DEFAULT;
        /* Full once, full always: found from the last line alone. */
        ck_assert_int_eq(run_begin(&error), -EDQUOT);
        ck_assert_ptr_nonnull(strstr(error, "full"));
}
END_TEST

int main(void)
{
        Suite *s = suite_create("runlog");
        TCase *tc = tcase_create("append");
        SRunner *sr;
        int failed;

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, append_reads_the_same_for_a_small_and_a_large_record);
        tcase_add_test(tc, append_refuses_a_record_whose_last_line_was_edited);
        tcase_add_test(tc, append_refuses_a_record_cut_inside_its_last_line);
        tcase_add_test(tc, append_refuses_a_record_whose_last_lines_were_deleted);
        tcase_add_test(tc, append_refuses_a_record_whose_last_line_was_replaced_with_its_hash);
        tcase_add_test(tc, an_edit_further_back_is_still_found_after_later_appends);
        tcase_add_test(tc, append_takes_up_a_head_one_line_behind);
        tcase_add_test(tc, append_to_a_full_record_is_refused);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
