/* SPDX-License-Identifier: MIT */
/*
 * test-ops-trace.c: which command wrote each hunk of `cloister report`
 * (operations.h, ops_trace_*): the journal's writes replayed into byte
 * ranges, through overwrites, truncates, renames of files and folders,
 * and coarse entries, then looked up by each hunk's changed bytes.
 */
#include <check.h>
#include <jansson.h>
#include <string.h>

#include "journal.h"
#include "operations.h"
#include "lib/util.h"

static json_t *runs;
static ops_trace *trace;

/* Runs #1, #2, #3: seconds 10-20, 30-40, 50-60. */
static void setup(void)
{
        runs = json_pack("[{s:i, s:i, s:b}, {s:i, s:i, s:b}, {s:i, s:i, s:b}]", "start_ms", 10000,
                         "end_ms", 20000, "ended", 1, "start_ms", 30000, "end_ms", 40000, "ended",
                         1, "start_ms", 50000, "end_ms", 60000, "ended", 1);
        ck_assert_ptr_nonnull(runs);
        ck_assert_int_eq(ops_trace_new("/workspace", runs, &trace), 0);
}

static void teardown(void)
{
        ops_trace_free(trace);
        json_decref(runs);
}

/* One journal line: op on path (path2 for a rename), at time t, with its numbers. */
static void feed(double t, const char *op, const char *path, const char *path2, json_t *fields)
{
        json_t *o = fields ? fields : json_object();
        struct journal_record rec = {.time = t, .op = op, .path = path, .path2 = path2, .json = o};

        if (streq(op, "coarse")) {
                rec.op = "write";
                rec.coarse = true;
        }
        ops_trace_feed(trace, &rec);
        json_decref(o);
}

static void write_at(double t, const char *path, int off, int len)
{
        feed(t, "write", path, NULL, json_pack("{s:i, s:i}", "offset", off, "length", len));
}

/* The runs and "traced" of each hunk of path, whose changed bytes are given as s,e pairs. */
static json_t *annotate(const char *path, const int *bytes, size_t n)
{
        json_t *hunks = json_array(), *stat;

        for (size_t i = 0; i < n; i++)
                json_array_append_new(hunks,
                                      json_pack("{s:i, s:i, s:[i, i]}", "old_start", 1, "new_start",
                                                1, "bytes", bytes[2 * i], bytes[2 * i + 1]));
        stat = json_pack("{s:[{s:s, s:o}]}", "files", "path", path, "hunks", hunks);
        ops_trace_annotate(trace, stat);
        return stat;
}

static const char *hunk_runs(json_t *stat, size_t i)
{
        static char buf[128];
        json_t *h = json_array_get(
                json_object_get(json_array_get(json_object_get(stat, "files"), 0), "hunks"), i);
        json_t *r;
        size_t k;
        int n = snprintf(buf, sizeof(buf), "%s:", json_string_value(json_object_get(h, "traced")));

        json_array_foreach (json_object_get(h, "runs"), k, r)
                n += snprintf(buf + n, sizeof(buf) - (size_t)n, " #%d", (int)json_integer_value(r));
        return buf;
}

START_TEST(each_hunk_names_the_command_that_wrote_its_bytes)
{
        write_at(11, "/workspace/a.c", 0, 4);
        write_at(31, "/workspace/a.c", 138, 5);
        write_at(51, "/workspace/a.c", 292, 5);
        json_t *stat = annotate("a.c", (int[]){0, 4, 138, 143, 292, 297}, 3);
        ck_assert_str_eq(hunk_runs(stat, 0), "bytes: #1");
        ck_assert_str_eq(hunk_runs(stat, 1), "bytes: #2");
        ck_assert_str_eq(hunk_runs(stat, 2), "bytes: #3");
        json_decref(stat);
}
END_TEST

START_TEST(a_later_write_takes_over_the_bytes_it_covers)
{
        write_at(11, "/workspace/a.c", 0, 100);
        write_at(31, "/workspace/a.c", 40, 20);
        json_t *stat = annotate("a.c", (int[]){0, 10, 45, 50, 55, 70}, 3);
        ck_assert_str_eq(hunk_runs(stat, 0), "bytes: #1");
        ck_assert_str_eq(hunk_runs(stat, 1), "bytes: #2");
        ck_assert_str_eq(hunk_runs(stat, 2), "bytes: #1 #2");
        json_decref(stat);
}
END_TEST

START_TEST(a_file_renamed_over_another_brings_its_writers)
{
        write_at(11, "/workspace/a.c", 0, 100);
        feed(31, "create", "/workspace/sedXYZ", NULL, NULL);
        write_at(31, "/workspace/sedXYZ", 0, 90);
        feed(31, "rename", "/workspace/sedXYZ", "/workspace/a.c", NULL);
        json_t *stat = annotate("a.c", (int[]){10, 20}, 1);
        ck_assert_str_eq(hunk_runs(stat, 0), "bytes: #2");
        json_decref(stat);
}
END_TEST

START_TEST(a_folder_renamed_moves_the_files_below_it)
{
        write_at(11, "/workspace/d/x.c", 0, 10);
        feed(31, "rename", "/workspace/d", "/workspace/e", NULL);
        json_t *stat = annotate("e/x.c", (int[]){0, 5}, 1);
        ck_assert_str_eq(hunk_runs(stat, 0), "bytes: #1");
        json_decref(stat);
        stat = annotate("d/x.c", (int[]){0, 5}, 1);
        ck_assert_str_eq(hunk_runs(stat, 0), "none:");
        json_decref(stat);
}
END_TEST

START_TEST(a_truncate_cuts_the_ranges_past_it)
{
        write_at(11, "/workspace/a.c", 0, 100);
        feed(31, "truncate", "/workspace/a.c", NULL, json_pack("{s:i}", "size", 0));
        write_at(51, "/workspace/a.c", 0, 40);
        /* Lines removed at the end: the place 40 is the last write's end. */
        json_t *stat = annotate("a.c", (int[]){10, 20, 40, 40}, 2);
        ck_assert_str_eq(hunk_runs(stat, 0), "bytes: #3");
        ck_assert_str_eq(hunk_runs(stat, 1), "bytes: #3");
        json_decref(stat);
}
END_TEST

START_TEST(lines_cut_off_the_end_name_the_truncate)
{
        write_at(1, "/workspace/a.c", 0, 100); /* outside any run */
        feed(31, "truncate", "/workspace/a.c", NULL, json_pack("{s:i}", "size", 50));
        json_t *stat = annotate("a.c", (int[]){50, 50}, 1);
        ck_assert_str_eq(hunk_runs(stat, 0), "bytes: #2");
        json_decref(stat);
}
END_TEST

START_TEST(a_coarse_folder_gives_the_files_commands_not_bytes)
{
        write_at(11, "/workspace/d/x.c", 0, 10);
        feed(31, "coarse", "/workspace/d", NULL, NULL);
        json_t *stat = annotate("d/x.c", (int[]){0, 5}, 1);
        ck_assert_str_eq(hunk_runs(stat, 0), "file: #1 #2");
        json_decref(stat);
}
END_TEST

START_TEST(an_unlinked_and_remade_file_starts_anew)
{
        write_at(11, "/workspace/a.c", 0, 100);
        feed(31, "unlink", "/workspace/a.c", NULL, NULL);
        feed(51, "create", "/workspace/a.c", NULL, NULL);
        write_at(51, "/workspace/a.c", 0, 10);
        json_t *stat = annotate("a.c", (int[]){0, 10}, 1);
        ck_assert_str_eq(hunk_runs(stat, 0), "bytes: #3");
        ck_assert_int_eq(json_array_size(json_object_get(
                                 json_array_get(json_object_get(stat, "files"), 0), "runs")),
                         1);
        json_decref(stat);
}
END_TEST

START_TEST(paths_outside_the_repository_are_not_followed)
{
        write_at(11, "/home/agent/a.c", 0, 10);
        write_at(11, "/workspacex/a.c", 0, 10);
        json_t *stat = annotate("a.c", (int[]){0, 10}, 1);
        ck_assert_str_eq(hunk_runs(stat, 0), "none:");
        json_decref(stat);
}
END_TEST

/* One write at time t by a process of cgroup (NULL: none). */
static void write_in(double t, const char *path, int off, int len, const char *cgroup)
{
        json_t *o = json_pack("{s:i, s:i}", "offset", off, "length", len);
        struct journal_record rec = {
                .time = t, .op = "write", .path = path, .json = o, .run_cgroup = cgroup};

        ops_trace_feed(trace, &rec);
        json_decref(o);
}

static const char *hunk_join(json_t *stat, size_t i)
{
        json_t *h = json_array_get(
                json_object_get(json_array_get(json_object_get(stat, "files"), 0), "hunks"), i);
        return json_string_value(json_object_get(h, "join")) ?: "-";
}

START_TEST(overlapping_runs_get_their_writes_by_cgroup_others_by_time)
{
        /*
         * #4 (cgroup-4-0) and #5 (cgroup-5-0) overlap, #5 started last;
         * #6 has no cgroup (an unprivileged run) and overlaps #5's end.
         * #1-#3 (setup()) are replaced.
         */
        ops_trace_free(trace);
        json_decref(runs);
        runs = json_pack("[{s:i, s:i, s:b, s:s}, {s:i, s:i, s:b, s:s}, {s:i, s:i, s:b}]",
                         "start_ms", 10000, "end_ms", 40000, "ended", 1, "cgroup", "cloister-4-0",
                         "start_ms", 20000, "end_ms", 50000, "ended", 1, "cgroup", "cloister-5-0",
                         "start_ms", 45000, "end_ms", 60000, "ended", 1);
        ck_assert_int_eq(ops_trace_new("/workspace", runs, &trace), 0);
        /* While both run: each its own, though a time join would give both to #2. */
        write_in(30, "/workspace/a.c", 0, 10, "cloister-4-0");
        write_in(31, "/workspace/a.c", 10, 10, "cloister-5-0");
        /* A writer in no cgroup while #2 and #3 run: by time, the latest started. */
        write_in(47, "/workspace/a.c", 20, 10, NULL);
        /* A cgroup no listed run has (a run before --since, its end lost): by time, but
         * never a run of another cgroup: #3 (no cgroup) at 55, none at 35. */
        write_in(55, "/workspace/a.c", 30, 10, "cloister-9-0");
        write_in(35, "/workspace/a.c", 40, 10, "cloister-9-0");
        /* A cgroup whose name came back later (a runner's pid reused): its time tells. */
        write_in(5, "/workspace/a.c", 50, 10, "cloister-5-0");
        json_t *stat =
                annotate("a.c", (int[]){0, 10, 10, 20, 20, 30, 30, 40, 40, 50, 50, 60, 0, 20}, 7);
        ck_assert_str_eq(hunk_runs(stat, 0), "bytes: #1");
        ck_assert_str_eq(hunk_join(stat, 0), "cgroup");
        ck_assert_str_eq(hunk_runs(stat, 1), "bytes: #2");
        ck_assert_str_eq(hunk_join(stat, 1), "cgroup");
        ck_assert_str_eq(hunk_runs(stat, 2), "bytes: #3");
        ck_assert_str_eq(hunk_join(stat, 2), "time");
        ck_assert_str_eq(hunk_runs(stat, 3), "bytes: #3");
        ck_assert_str_eq(hunk_join(stat, 3), "time");
        ck_assert_str_eq(hunk_runs(stat, 4), "file: #1 #2 #3");
        ck_assert_str_eq(hunk_runs(stat, 5), "file: #1 #2 #3");
        ck_assert_str_eq(hunk_join(stat, 5), "mixed");
        ck_assert_str_eq(hunk_runs(stat, 6), "bytes: #1 #2");
        ck_assert_str_eq(hunk_join(stat, 6), "cgroup");
        json_decref(stat);
}
END_TEST

static Suite *trace_suite(void)
{
        Suite *s = suite_create("ops_trace");
        TCase *tc = tcase_create("hunks");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, each_hunk_names_the_command_that_wrote_its_bytes);
        tcase_add_test(tc, a_later_write_takes_over_the_bytes_it_covers);
        tcase_add_test(tc, a_file_renamed_over_another_brings_its_writers);
        tcase_add_test(tc, a_folder_renamed_moves_the_files_below_it);
        tcase_add_test(tc, a_truncate_cuts_the_ranges_past_it);
        tcase_add_test(tc, lines_cut_off_the_end_name_the_truncate);
        tcase_add_test(tc, a_coarse_folder_gives_the_files_commands_not_bytes);
        tcase_add_test(tc, an_unlinked_and_remade_file_starts_anew);
        tcase_add_test(tc, paths_outside_the_repository_are_not_followed);
        tcase_add_test(tc, overlapping_runs_get_their_writes_by_cgroup_others_by_time);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        SRunner *sr = srunner_create(trace_suite());
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? 1 : 0;
}
