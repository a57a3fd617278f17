/* SPDX-License-Identifier: MIT */
/*
 * test-journal-compact.c: unit tests for the journal's compaction (issue
 * 34): what folds into a held create, what a file made and removed within
 * a window leaves (one transient count per command), that each path's
 * entries stay in causal order, and the coarse entries past the soft bound.
 *
 * The windows are made an hour long (journal_windows_set), so that what
 * happens "within one window" never depends on the machine's speed; the
 * final journal_free() writes whatever is still held.
 */
#include <check.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "journal.h"
#include "lib/util.h"

#define HOUR_MS (3600u * 1000)

static char tmpdir[64];
static int dirfd_ = -1;
static pid_t other_pid = -1; /* a process named "maker2": another command */

static void setup(void)
{
        strcpy(tmpdir, "/tmp/cloister-journal-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(tmpdir));
        dirfd_ = open(tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(dirfd_, 0);
}

static void teardown(void)
{
        char cmd[128];
        close(dirfd_);
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        ck_assert_int_eq(system(cmd), 0);
        if (other_pid > 0) {
                kill(other_pid, SIGKILL);
                waitpid(other_pid, NULL, 0);
                other_pid = -1;
        }
}

static struct journal_caller me(void)
{
        return (struct journal_caller){.pid = getpid(), .uid = getuid(), .gid = getgid()};
}

/* Another command: a child named "maker2", until teardown. */
static struct journal_caller other(void)
{
        char path[64], comm[32] = "";

        other_pid = fork();
        ck_assert_int_ge(other_pid, 0);
        if (other_pid == 0) {
                prctl(PR_SET_NAME, "maker2");
                for (;;)
                        pause();
        }
        /* Bounded wait for the rename to show, not a timing assumption. */
        snprintf(path, sizeof(path), "/proc/%d/comm", (int)other_pid);
        for (int i = 0; i < 1000 && !streq(comm, "maker2\n"); i++) {
                FILE *f = fopen(path, "re");
                if (f) {
                        if (!fgets(comm, sizeof(comm), f))
                                comm[0] = 0;
                        fclose(f);
                }
                if (!streq(comm, "maker2\n"))
                        nanosleep(&(struct timespec){0, 10000000}, NULL);
        }
        ck_assert_str_eq(comm, "maker2\n");
        return (struct journal_caller){.pid = other_pid, .uid = getuid(), .gid = getgid()};
}

static journal *open_long(uint64_t max)
{
        journal *j = NULL;

        ck_assert_int_eq(journal_open(dirfd_, "journal.jsonl", max, NULL, &j), 0);
        journal_windows_set(j, HOUR_MS, HOUR_MS);
        return j;
}

static void append(journal *j, const struct journal_caller *who, struct journal_entry e)
{
        ck_assert_int_eq(journal_append(j, who, &e), 0);
}

/* Every line as a JSON object (marks too if asked), oldest first; returns how many. */
static size_t lines(json_t **out, size_t max, bool marks)
{
        journal_reader *r = NULL;
        struct journal_record rec;
        size_t n = 0;
        int k;

        ck_assert_int_eq(journal_reader_open(dirfd_, "journal.jsonl", &r), 0);
        while ((k = journal_reader_next(r, &rec)) > 0) {
                if (rec.mark && !marks)
                        continue;
                ck_assert_uint_lt(n, max);
                out[n++] = json_deep_copy((json_t *)rec.json);
        }
        ck_assert_int_eq(k, 0);
        ck_assert_uint_eq(journal_reader_corrupt(r), 0);
        journal_reader_free(r);
        return n;
}

static void lines_free(json_t **l, size_t n)
{
        for (size_t i = 0; i < n; i++)
                json_decref(l[i]);
}

static const char *str(json_t *o, const char *key)
{
        return json_string_value(json_object_get(o, key));
}

static json_int_t num(json_t *o, const char *key)
{
        return json_integer_value(json_object_get(o, key));
}

START_TEST(file_made_and_removed_within_a_window_leaves_one_transient_count)
{
        struct journal_caller who = me();
        journal *j = open_long(0);
        json_t *l[16];
        size_t n;

        /* A test's scratch file: made, written, made executable, removed. */
        append(j, &who,
               (struct journal_entry){.op = JOURNAL_CREATE, .path = "/w/a", .mode = 0100600});
        for (unsigned i = 0; i < 3; i++)
                append(j, &who,
                       (struct journal_entry){.op = JOURNAL_WRITE,
                                              .path = "/w/a",
                                              .offset = i * 10,
                                              .length = 10});
        append(j, &who, (struct journal_entry){.op = JOURNAL_CHMOD, .path = "/w/a", .mode = 0755});
        append(j, &who, (struct journal_entry){.op = JOURNAL_UNLINK, .path = "/w/a"});
        /* A scratch directory with a file in it, removed. */
        append(j, &who,
               (struct journal_entry){.op = JOURNAL_MKDIR, .path = "/w/d", .mode = 040755});
        append(j, &who,
               (struct journal_entry){.op = JOURNAL_CREATE, .path = "/w/d/x", .mode = 0100644});
        append(j, &who, (struct journal_entry){.op = JOURNAL_UNLINK, .path = "/w/d/x"});
        append(j, &who, (struct journal_entry){.op = JOURNAL_RMDIR, .path = "/w/d"});
        journal_free(j);

        n = lines(l, 16, false);
        ck_assert_uint_eq(n, 1);
        ck_assert_str_eq(str(l[0], "op"), "transient");
        ck_assert_str_eq(str(l[0], "path"), "/w/d"); /* the last name counted */
        ck_assert_int_eq(num(l[0], "count"), 3);
        /* a: create, 3 writes, chmod, unlink; d/x: create, unlink; d: mkdir, rmdir */
        ck_assert_int_eq(num(l[0], "ops"), 10);
        ck_assert_int_eq(num(l[0], "pid"), getpid());
        ck_assert_ptr_nonnull(str(l[0], "comm"));
        lines_free(l, n);
}
END_TEST

START_TEST(transient_counts_are_one_entry_per_making_command)
{
        struct journal_caller who = me(), who2 = other();
        journal *j = open_long(0);
        json_t *l[16];
        size_t n;

        for (unsigned i = 0; i < 50; i++) {
                char p[32];
                snprintf(p, sizeof(p), "/w/t.%u", i);
                append(j, i % 2 ? &who : &who2,
                       (struct journal_entry){.op = JOURNAL_CREATE, .path = p, .mode = 0100644});
                /* Who removes it does not matter: the maker is what a reviewer asks about. */
                append(j, &who, (struct journal_entry){.op = JOURNAL_UNLINK, .path = p});
        }
        journal_free(j);
        n = lines(l, 16, false);
        ck_assert_uint_eq(n, 2);
        ck_assert_str_eq(str(l[0], "comm"), "maker2"); /* the first to make one */
        ck_assert_str_eq(str(l[0], "path"), "/w/t.48");
        ck_assert_str_ne(str(l[1], "comm"), "maker2");
        ck_assert_str_eq(str(l[1], "path"), "/w/t.49");
        for (size_t i = 0; i < n; i++) {
                ck_assert_str_eq(str(l[i], "op"), "transient");
                ck_assert_int_eq(num(l[i], "count"), 25);
                ck_assert_int_eq(num(l[i], "ops"), 50);
        }
        lines_free(l, n);
}
END_TEST

START_TEST(created_then_changed_written_and_renamed_keeps_create_with_final_mode_write_rename)
{
        struct journal_caller who = me();
        journal *j = open_long(0);
        json_t *l[16];
        size_t n;

        /* What `sed -i` does: a temporary file, its owner and mode set, renamed over. */
        append(j, &who,
               (struct journal_entry){.op = JOURNAL_CREATE, .path = "/w/sedX", .mode = 0100600});
        append(j, &who,
               (struct journal_entry){.op = JOURNAL_CHOWN, .path = "/w/sedX", .uid = 5, .gid = 6});
        append(j, &who,
               (struct journal_entry){.op = JOURNAL_CHMOD, .path = "/w/sedX", .mode = 0644});
        append(j, &who,
               (struct journal_entry){
                       .op = JOURNAL_WRITE, .path = "/w/sedX", .offset = 0, .length = 20});
        append(j, &who,
               (struct journal_entry){
                       .op = JOURNAL_RENAME, .path = "/w/sedX", .path2 = "/w/f.txt"});
        journal_free(j);

        n = lines(l, 16, false);
        ck_assert_uint_eq(n, 3);
        ck_assert_str_eq(str(l[0], "op"), "create");
        ck_assert_int_eq(num(l[0], "mode"), 0100644); /* the final mode, type kept */
        ck_assert_int_eq(num(l[0], "owner_uid"), 5);
        ck_assert_int_eq(num(l[0], "owner_gid"), 6);
        ck_assert_int_eq(num(l[0], "folded"), 2);
        ck_assert_str_eq(str(l[1], "op"), "write");
        ck_assert_int_eq(num(l[1], "length"), 20);
        ck_assert_str_eq(str(l[2], "op"), "rename");
        ck_assert_str_eq(str(l[2], "path2"), "/w/f.txt");
        lines_free(l, n);
}
END_TEST

/*
 * A change by another command is not folded (it names its own command): it
 * is held after the create, written after it if the file stays, and goes
 * with it if the file is removed within the window.
 */
START_TEST(another_commands_change_of_a_held_create_is_held_after_it)
{
        struct journal_caller who = me(), who2 = other();
        journal *j = open_long(0);
        json_t *l[16];
        size_t n;

        append(j, &who2,
               (struct journal_entry){.op = JOURNAL_CREATE, .path = "/w/run.sh", .mode = 0100644});
        append(j, &who,
               (struct journal_entry){.op = JOURNAL_CHMOD, .path = "/w/run.sh", .mode = 0755});
        append(j, &who2,
               (struct journal_entry){.op = JOURNAL_CREATE, .path = "/w/tmp.sh", .mode = 0100644});
        append(j, &who,
               (struct journal_entry){.op = JOURNAL_CHMOD, .path = "/w/tmp.sh", .mode = 0755});
        append(j, &who,
               (struct journal_entry){
                       .op = JOURNAL_SETXATTR, .path = "/w/tmp.sh", .name = "user.x"});
        append(j, &who, (struct journal_entry){.op = JOURNAL_UNLINK, .path = "/w/tmp.sh"});
        journal_free(j);

        n = lines(l, 16, false);
        ck_assert_uint_eq(n, 3);
        ck_assert_str_eq(str(l[0], "op"), "create");
        ck_assert_str_eq(str(l[0], "path"), "/w/run.sh");
        ck_assert_str_eq(str(l[0], "comm"), "maker2");
        ck_assert_int_eq(num(l[0], "mode"), 0100644);
        ck_assert_ptr_null(json_object_get(l[0], "folded"));
        ck_assert_str_eq(str(l[1], "op"), "chmod");
        ck_assert_str_eq(str(l[1], "path"), "/w/run.sh");
        ck_assert_str_ne(str(l[1], "comm"), "maker2");
        ck_assert_str_eq(str(l[2], "op"), "transient");
        ck_assert_str_eq(str(l[2], "comm"), "maker2");
        ck_assert_int_eq(num(l[2], "count"), 1);
        ck_assert_int_eq(num(l[2], "ops"), 4); /* create, chmod, setxattr, unlink */
        lines_free(l, n);
}
END_TEST

START_TEST(rename_of_a_held_directory_writes_what_is_under_it_first)
{
        struct journal_caller who = me();
        journal *j = open_long(0);
        const char *want[][2] = {
                {"mkdir", "/w/d"},     {"create", "/w/d/x"}, {"write", "/w/d/x"},
                {"create", "/w/late"}, {"rename", "/w/d"},   {"unlink", "/w/e/x"},
                {"link", "/w/other"},
        };
        json_t *l[16];
        size_t n;

        append(j, &who,
               (struct journal_entry){.op = JOURNAL_MKDIR, .path = "/w/d", .mode = 040755});
        append(j, &who,
               (struct journal_entry){.op = JOURNAL_CREATE, .path = "/w/d/x", .mode = 0100644});
        append(j, &who, (struct journal_entry){.op = JOURNAL_WRITE, .path = "/w/d/x", .length = 5});
        /* Unrelated, and held: written later, read in its place (journal.h, "Order"). */
        append(j, &who,
               (struct journal_entry){.op = JOURNAL_CREATE, .path = "/w/late", .mode = 0100644});
        append(j, &who,
               (struct journal_entry){.op = JOURNAL_RENAME, .path = "/w/d", .path2 = "/w/e"});
        /* The file was written under its old name: its removal is not transient. */
        append(j, &who, (struct journal_entry){.op = JOURNAL_UNLINK, .path = "/w/e/x"});
        /* A created file linked elsewhere: its create goes first, held or not. */
        append(j, &who,
               (struct journal_entry){.op = JOURNAL_CREATE, .path = "/w/other", .mode = 0100644});
        append(j, &who,
               (struct journal_entry){.op = JOURNAL_LINK, .path = "/w/other", .path2 = "/w/o2"});
        journal_free(j);

        n = lines(l, 16, false);
        ck_assert_uint_eq(n, ELEMENTSOF(want) + 1);
        for (size_t i = 0, k = 0; i < n; i++) {
                /* The create of /w/other comes right before its link. */
                if (streq(str(l[i], "path"), "/w/other") && streq(str(l[i], "op"), "create")) {
                        ck_assert_str_eq(str(l[i + 1], "op"), "link");
                        continue;
                }
                ck_assert_str_eq(str(l[i], "op"), want[k][0]);
                ck_assert_str_eq(str(l[i], "path"), want[k][1]);
                k++;
        }
        lines_free(l, n);
}
END_TEST

START_TEST(a_create_already_written_is_followed_by_its_unlink)
{
        struct journal_caller who = me();
        journal *j = open_long(0);
        json_t *l[16];
        size_t n;

        append(j, &who,
               (struct journal_entry){.op = JOURNAL_CREATE, .path = "/w/kept", .mode = 0100644});
        ck_assert_int_eq(journal_flush(j), 0); /* as fsync does */
        append(j, &who, (struct journal_entry){.op = JOURNAL_UNLINK, .path = "/w/kept"});
        journal_free(j);
        n = lines(l, 16, false);
        ck_assert_uint_eq(n, 2);
        ck_assert_str_eq(str(l[0], "op"), "create");
        ck_assert_str_eq(str(l[1], "op"), "unlink");
        lines_free(l, n);
}
END_TEST

/*
 * Past the soft bound a day goes on: every operation is admitted and counted
 * in a coarse entry (per op, command and directory; past the slots, one tree
 * entry per op), one mark says where, and nothing is cut.
 */
START_TEST(past_the_soft_bound_operations_go_on_in_coarse_entries)
{
        const uint64_t max = JOURNAL_MAX_BYTES_MIN;
        const unsigned total = 20000, dirs = 300;
        struct journal_caller who = me();
        journal *j = open_long(max);
        journal_reader *r = NULL;
        struct journal_record rec;
        unsigned marks = 0, fine = 0, coarse = 0, trees = 0;
        int64_t counted = 0;
        bool after_mark = false;
        struct stat st;

        for (unsigned i = 0; i < total; i++) {
                char p[64];
                snprintf(p, sizeof(p), "/workspace/d%u/f", i % dirs);
                ck_assert_int_eq(journal_admit(j), 0);
                /* Alternating modes and paths: nothing repeats, nothing folds. */
                append(j, &who,
                       (struct journal_entry){
                               .op = JOURNAL_CHMOD, .path = p, .mode = i % 2 ? 0600 : 0640});
        }
        journal_free(j);
        ck_assert_int_eq(fstatat(dirfd_, "journal.jsonl", &st, 0), 0);
        ck_assert_uint_le((uint64_t)st.st_size, max);

        ck_assert_int_eq(journal_reader_open(dirfd_, "journal.jsonl", &r), 0);
        while (journal_reader_next(r, &rec) > 0) {
                json_t *o = (json_t *)rec.json;
                if (streq(rec.op, "journal_coarse")) {
                        marks++;
                        after_mark = true;
                        ck_assert_int_eq(num(o, "max_bytes"), max);
                        ck_assert_int_gt(num(o, "at_bytes"), 0);
                        continue;
                }
                if (rec.mark)
                        continue;
                ck_assert_str_eq(rec.op, "chmod");
                counted += rec.count;
                if (!rec.coarse) {
                        ck_assert(!after_mark);
                        fine++;
                        continue;
                }
                ck_assert(after_mark);
                coarse++;
                if (streq(str(o, "coarse"), "tree")) {
                        trees++;
                        ck_assert_str_eq(rec.path, "/workspace"); /* above every d<i> */
                } else {
                        ck_assert_str_eq(str(o, "coarse"), "dir");
                        ck_assert(startswith(rec.path, "/workspace/d"));
                }
        }
        ck_assert_uint_eq(journal_reader_cuts(r), 0);
        ck_assert_uint_eq(journal_reader_coarse(r), 1);
        journal_reader_free(r);
        ck_assert_uint_eq(marks, 1);
        ck_assert_int_eq(counted, total); /* every operation is in some entry */
        ck_assert_uint_gt(fine, 100);
        /* At most a directory entry per slot and one tree entry per op, in one window. */
        ck_assert_uint_le(coarse, JOURNAL_COARSE_SLOTS + 1);
        ck_assert_uint_eq(trees, 1);
}
END_TEST

/* The session after one that went coarse starts coarse, with its own mark. */
START_TEST(a_journal_past_the_soft_bound_is_coarse_again_at_the_next_open)
{
        const uint64_t max = JOURNAL_MAX_BYTES_MIN;
        struct journal_caller who = me();
        journal *j = open_long(max);
        static json_t *l[16384];
        size_t n;

        for (unsigned i = 0; i < 10000; i++) {
                char p[64];
                snprintf(p, sizeof(p), "/workspace/e%u", i);
                append(j, &who, (struct journal_entry){.op = JOURNAL_UTIMENS, .path = p});
        }
        journal_free(j);
        j = open_long(max);
        append(j, &who,
               (struct journal_entry){
                       .op = JOURNAL_RENAME, .path = "/workspace/a/x", .path2 = "/b"});
        journal_free(j);

        /* The last lines: open, the coarse mark, the rename as a coarse entry, close. */
        n = lines(l, ELEMENTSOF(l), true);
        ck_assert_uint_ge(n, 4);
        ck_assert_str_eq(str(l[n - 4], "op"), "journal_open");
        ck_assert_str_eq(str(l[n - 3], "op"), "journal_coarse");
        ck_assert_str_eq(str(l[n - 2], "op"), "rename");
        ck_assert_str_eq(str(l[n - 2], "path"), "/workspace/a");
        ck_assert_str_eq(str(l[n - 2], "coarse"), "dir");
        ck_assert_int_eq(num(l[n - 2], "count"), 1);
        ck_assert_ptr_null(json_object_get(l[n - 2], "path2"));
        ck_assert_str_eq(str(l[n - 1], "op"), "journal_close");
        lines_free(l, n);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("journal-compact");
        TCase *tc = tcase_create("journal-compact");
        SRunner *sr;
        int failed;

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, file_made_and_removed_within_a_window_leaves_one_transient_count);
        tcase_add_test(tc, transient_counts_are_one_entry_per_making_command);
        tcase_add_test(
                tc,
                created_then_changed_written_and_renamed_keeps_create_with_final_mode_write_rename);
        tcase_add_test(tc, another_commands_change_of_a_held_create_is_held_after_it);
        tcase_add_test(tc, rename_of_a_held_directory_writes_what_is_under_it_first);
        tcase_add_test(tc, a_create_already_written_is_followed_by_its_unlink);
        tcase_add_test(tc, past_the_soft_bound_operations_go_on_in_coarse_entries);
        tcase_add_test(tc, a_journal_past_the_soft_bound_is_coarse_again_at_the_next_open);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? 1 : 0;
}
