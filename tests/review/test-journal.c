/* SPDX-License-Identifier: MIT */
/*
 * test-journal.c: unit tests for fs/journal: what the writer appends, how
 * writes coalesce, that threads never interleave lines, and that the reader
 * survives what a crash leaves behind.
 */
#include <check.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <jansson.h>

#include "journal.h"
#include "lib/util.h"

static char tmpdir[64];
static int dirfd_ = -1;

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
}

static struct journal_caller me(void)
{
        return (struct journal_caller){.pid = getpid(), .uid = getuid(), .gid = getgid()};
}

/* Read every operation (marks skipped); returns the count, fills the first n ops/paths. */
static unsigned read_all(char ops[][16], char paths[][64], json_t **last, unsigned *corrupt,
                         bool *truncated)
{
        journal_reader *r = NULL;
        struct journal_record rec;
        unsigned n = 0;
        int k;

        ck_assert_int_eq(journal_reader_open(dirfd_, "journal.jsonl", &r), 0);
        while ((k = journal_reader_next(r, &rec)) > 0) {
                if (rec.mark)
                        continue;
                if (ops && n < 64) {
                        snprintf(ops[n], 16, "%s", rec.op);
                        snprintf(paths[n], 64, "%s", rec.path);
                }
                if (last) {
                        json_decref(*last);
                        *last = json_deep_copy((json_t *)rec.json);
                }
                n++;
        }
        ck_assert_int_eq(k, 0);
        if (corrupt)
                *corrupt = journal_reader_corrupt(r);
        if (truncated)
                *truncated = journal_reader_truncated(r);
        journal_reader_free(r);
        return n;
}

/* journal_reader_next, skipping the journal's own marks. */
static int next_op(journal_reader *r, struct journal_record *rec)
{
        int k;
        while ((k = journal_reader_next(r, rec)) > 0 && rec->mark)
                ;
        return k;
}

START_TEST(entries_read_back_with_op_paths_result_and_caller)
{
        journal *j = NULL;
        struct journal_caller who = me();
        char ops[64][16], paths[64][64];
        json_t *last = NULL;

        ck_assert_int_eq(journal_open(dirfd_, "journal.jsonl", 0, NULL, &j), 0);
        ck_assert_int_eq(journal_append(j, &who,
                                        &(struct journal_entry){.op = JOURNAL_CREATE,
                                                                .path = "/workspace/a",
                                                                .mode = 0644}),
                         0);
        ck_assert_int_eq(journal_append(j, &who,
                                        &(struct journal_entry){.op = JOURNAL_RENAME,
                                                                .path = "/workspace/a",
                                                                .path2 = "/workspace/b c"}),
                         0);
        ck_assert_int_eq(journal_append(j, &who,
                                        &(struct journal_entry){.op = JOURNAL_UNLINK,
                                                                .path = "/workspace/nope",
                                                                .result = -ENOENT}),
                         0);
        journal_free(j);

        ck_assert_uint_eq(read_all(ops, paths, &last, NULL, NULL), 3);
        ck_assert_str_eq(ops[0], "create");
        ck_assert_str_eq(ops[1], "rename");
        ck_assert_str_eq(paths[1], "/workspace/a");
        ck_assert_str_eq(ops[2], "unlink");
        ck_assert_int_eq(json_integer_value(json_object_get(last, "result")), -ENOENT);
        ck_assert_str_eq(json_string_value(json_object_get(last, "error")), "ENOENT");
        ck_assert_int_eq(json_integer_value(json_object_get(last, "pid")), getpid());
        ck_assert_int_eq(json_integer_value(json_object_get(last, "uid")), getuid());
        /* The command name comes from /proc/self/comm. */
        char comm[32] = "";
        FILE *f = fopen("/proc/self/comm", "re");
        ck_assert_ptr_nonnull(fgets(comm, sizeof(comm), f));
        fclose(f);
        comm[strcspn(comm, "\n")] = 0;
        ck_assert_str_eq(json_string_value(json_object_get(last, "comm")), comm);
        json_decref(last);
}
END_TEST

START_TEST(sequential_writes_coalesce_into_one_entry)
{
        journal *j = NULL;
        struct journal_caller who = me();
        json_t *last = NULL;

        ck_assert_int_eq(journal_open(dirfd_, "journal.jsonl", 0, NULL, &j), 0);
        for (unsigned i = 0; i < 10000; i++)
                ck_assert_int_eq(journal_append(j, &who,
                                                &(struct journal_entry){.op = JOURNAL_WRITE,
                                                                        .path = "/workspace/big",
                                                                        .offset = i * 4096ull,
                                                                        .length = 4096}),
                                 0);
        journal_free(j);
        /* Unless the machine stalled for a whole window, that is one entry; never 10000. */
        unsigned n = read_all(NULL, NULL, &last, NULL, NULL);
        ck_assert_uint_ge(n, 1);
        ck_assert_uint_lt(n, 100);
        if (n == 1) {
                ck_assert_int_eq(json_integer_value(json_object_get(last, "offset")), 0);
                ck_assert_int_eq(json_integer_value(json_object_get(last, "length")), 10000 * 4096);
                ck_assert_int_eq(json_integer_value(json_object_get(last, "count")), 10000);
        }
        json_decref(last);
}
END_TEST

/*
 * Issue 34: writes of one process to one file merge within a window even
 * where their ranges do not touch (the extent they cover); another file's
 * writes stay pending while an operation on the first is written after its
 * own writes.
 */
START_TEST(writes_merge_even_when_ranges_do_not_touch_and_stay_ordered_per_file)
{
        journal *j = NULL;
        struct journal_caller who = me();
        char ops[64][16], paths[64][64];
        json_t *first = NULL;
        journal_reader *r = NULL;
        struct journal_record rec;

        ck_assert_int_eq(journal_open(dirfd_, "journal.jsonl", 0, NULL, &j), 0);
        /* A window longer than the test: what is "within one" does not depend on speed. */
        journal_windows_set(j, 3600 * 1000, 3600 * 1000);
        journal_append(
                j, &who,
                &(struct journal_entry){
                        .op = JOURNAL_WRITE, .path = "/workspace/x", .offset = 0, .length = 10});
        journal_append(j, &who,
                       &(struct journal_entry){.op = JOURNAL_WRITE,
                                               .path = "/workspace/x",
                                               .offset = 1000000,
                                               .length = 10});
        journal_append(
                j, &who,
                &(struct journal_entry){
                        .op = JOURNAL_WRITE, .path = "/workspace/y", .offset = 0, .length = 10});
        /* An operation on x comes after x's writes; y's, held, is read in its place before it. */
        journal_append(j, &who,
                       &(struct journal_entry){.op = JOURNAL_UNLINK, .path = "/workspace/x"});
        journal_free(j);
        ck_assert_uint_eq(read_all(ops, paths, NULL, NULL, NULL), 3);
        ck_assert_str_eq(ops[0], "write");
        ck_assert_str_eq(paths[0], "/workspace/x");
        ck_assert_str_eq(ops[1], "write");
        ck_assert_str_eq(paths[1], "/workspace/y");
        ck_assert_str_eq(ops[2], "unlink");
        ck_assert_int_eq(journal_reader_open(dirfd_, "journal.jsonl", &r), 0);
        ck_assert_int_eq(next_op(r, &rec), 1);
        first = (json_t *)rec.json;
        ck_assert_int_eq(json_integer_value(json_object_get(first, "offset")), 0);
        ck_assert_int_eq(json_integer_value(json_object_get(first, "length")), 1000010);
        ck_assert_int_eq(rec.count, 2);
        journal_reader_free(r);
}
END_TEST

START_TEST(idle_pending_write_is_flushed_without_further_calls)
{
        journal *j = NULL;
        struct journal_caller who = me();
        unsigned n = 0;

        ck_assert_int_eq(journal_open(dirfd_, "journal.jsonl", 0, NULL, &j), 0);
        journal_append(
                j, &who,
                &(struct journal_entry){
                        .op = JOURNAL_WRITE, .path = "/workspace/x", .offset = 0, .length = 10});
        /* The flusher thread writes it once due; poll generously (no timing assertion). */
        for (int i = 0; i < 600 && n == 0; i++) {
                n = read_all(NULL, NULL, NULL, NULL, NULL);
                if (n == 0)
                        nanosleep(&(struct timespec){0, 50000000}, NULL);
        }
        ck_assert_uint_eq(n, 1);
        journal_free(j);
        ck_assert_uint_eq(read_all(NULL, NULL, NULL, NULL, NULL), 1);
}
END_TEST

struct thread_arg {
        journal *j;
        int id;
};

static void *thread_main(void *p)
{
        struct thread_arg *a = p;
        struct journal_caller who = me();
        char path[64];

        for (int i = 0; i < 500; i++) {
                snprintf(path, sizeof(path), "/workspace/t%d/%d", a->id, i);
                if (journal_append(a->j, &who,
                                   &(struct journal_entry){
                                           .op = JOURNAL_MKDIR, .path = path, .mode = 0755}) < 0)
                        return (void *)1;
                if (journal_append(a->j, &who,
                                   &(struct journal_entry){.op = JOURNAL_WRITE,
                                                           .path = path,
                                                           .offset = (uint64_t)i * 7,
                                                           .length = 7}) < 0)
                        return (void *)1;
        }
        return NULL;
}

START_TEST(concurrent_appends_never_interleave_lines)
{
        journal *j = NULL;
        pthread_t t[8];
        struct thread_arg a[8];
        unsigned corrupt = 99, n;

        ck_assert_int_eq(journal_open(dirfd_, "journal.jsonl", 0, NULL, &j), 0);
        for (int i = 0; i < 8; i++) {
                a[i] = (struct thread_arg){j, i};
                ck_assert_int_eq(pthread_create(&t[i], NULL, thread_main, &a[i]), 0);
        }
        for (int i = 0; i < 8; i++) {
                void *rv;
                pthread_join(t[i], &rv);
                ck_assert_ptr_null(rv);
        }
        journal_free(j);
        n = read_all(NULL, NULL, NULL, &corrupt, NULL);
        ck_assert_uint_eq(corrupt, 0);
        /* 4000 mkdirs, and each write is to a distinct path: 4000 writes. */
        ck_assert_uint_eq(n, 8000);
}
END_TEST

static void file_append_raw(const char *s)
{
        int fd = openat(dirfd_, "journal.jsonl", O_WRONLY | O_APPEND | O_CREAT, 0600);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, s, strlen(s)), (ssize_t)strlen(s));
        close(fd);
}

START_TEST(cut_short_last_line_is_reported_and_the_rest_read)
{
        journal *j = NULL;
        struct journal_caller who = me();
        unsigned corrupt = 0;
        bool truncated = false;

        ck_assert_int_eq(journal_open(dirfd_, "journal.jsonl", 0, NULL, &j), 0);
        journal_append(j, &who, &(struct journal_entry){.op = JOURNAL_MKDIR, .path = "/a"});
        journal_free(j);
        file_append_raw("{\"time\":\"2026-01-01T00:00:00.000000Z\",\"op\":\"wri");
        ck_assert_uint_eq(read_all(NULL, NULL, NULL, &corrupt, &truncated), 1);
        ck_assert_uint_eq(corrupt, 1);
        ck_assert(truncated);

        /* The next writer starts on a fresh line: only the cut line is lost. */
        ck_assert_int_eq(journal_open(dirfd_, "journal.jsonl", 0, NULL, &j), 0);
        journal_append(j, &who, &(struct journal_entry){.op = JOURNAL_RMDIR, .path = "/a"});
        journal_free(j);
        ck_assert_uint_eq(read_all(NULL, NULL, NULL, &corrupt, &truncated), 2);
        ck_assert_uint_eq(corrupt, 1);
        ck_assert(!truncated);
}
END_TEST

START_TEST(garbage_line_in_the_middle_is_skipped_and_counted)
{
        unsigned corrupt = 0;
        file_append_raw("{\"time\":\"2026-01-01T00:00:00.5Z\",\"op\":\"mkdir\",\"path\":\"/a\"}\n"
                        "not json at all\n"
                        "{\"op\":\"mkdir\"}\n"
                        "{\"time\":\"2026-01-01T00:00:01Z\",\"op\":\"rmdir\",\"path\":\"/a\"}\n");
        ck_assert_uint_eq(read_all(NULL, NULL, NULL, &corrupt, NULL), 2);
        ck_assert_uint_eq(corrupt, 2);
}
END_TEST

START_TEST(non_utf8_names_are_kept_in_hex)
{
        journal *j = NULL;
        struct journal_caller who = me();
        json_t *last = NULL;

        ck_assert_int_eq(journal_open(dirfd_, "journal.jsonl", 0, NULL, &j), 0);
        ck_assert_int_eq(journal_append(j, &who,
                                        &(struct journal_entry){.op = JOURNAL_CREATE,
                                                                .path = "/workspace/\xff\xfe"}),
                         0);
        journal_free(j);
        ck_assert_uint_eq(read_all(NULL, NULL, &last, NULL, NULL), 1);
        ck_assert_str_eq(json_string_value(json_object_get(last, "path")), "/workspace/??");
        ck_assert_str_eq(json_string_value(json_object_get(last, "path_hex")),
                         "2f776f726b73706163652ffffe");
        json_decref(last);
}
END_TEST

/*
 * The longest entry an agent can cause: a symlink whose path and target are
 * both near PATH_MAX, made of bytes JSON escapes six-fold, plus one byte
 * that is not UTF-8 so that each is stored again in hex. The reader must
 * not take it for damage, or the operation would vanish from the log.
 */
START_TEST(longest_possible_entry_is_read_back_not_skipped_as_damage)
{
        journal *j = NULL;
        struct journal_caller who = me();
        json_t *last = NULL;
        unsigned corrupt = 99;
        char path[PATH_MAX], target[PATH_MAX];

        strcpy(path, "/workspace/");
        for (size_t i = strlen(path); i < PATH_MAX - 1; i++)
                path[i] = i % 256 == 0 ? '/' : '\x01';
        path[PATH_MAX - 1] = 0;
        path[20] = '\xff';
        memset(target, '\x01', PATH_MAX - 1);
        target[PATH_MAX - 1] = 0;
        target[7] = '\xfe';
        ck_assert_int_eq(journal_open(dirfd_, "journal.jsonl", 0, NULL, &j), 0);
        ck_assert_int_eq(journal_append(j, &who,
                                        &(struct journal_entry){.op = JOURNAL_SYMLINK,
                                                                .path = path,
                                                                .path2 = target}),
                         0);
        journal_free(j);
        ck_assert_uint_eq(read_all(NULL, NULL, &last, &corrupt, NULL), 1);
        ck_assert_uint_eq(corrupt, 0);
        ck_assert_uint_eq(strlen(json_string_value(json_object_get(last, "path2_hex"))),
                          2 * (PATH_MAX - 1));
        json_decref(last);
}
END_TEST

START_TEST(reader_gives_non_utf8_names_as_their_exact_bytes)
{
        journal *j = NULL;
        journal_reader *r = NULL;
        struct journal_caller who = me();
        struct journal_record rec;

        ck_assert_int_eq(journal_open(dirfd_, "journal.jsonl", 0, NULL, &j), 0);
        ck_assert_int_eq(journal_append(j, &who,
                                        &(struct journal_entry){.op = JOURNAL_RENAME,
                                                                .path = "/home/agent/\xff\xfe",
                                                                .path2 = "/home/agent/b\x80"}),
                         0);
        ck_assert_int_eq(journal_append(j, &who,
                                        &(struct journal_entry){.op = JOURNAL_SETXATTR,
                                                                .path = "/home/agent/plain",
                                                                .name = "user.\xc3"}),
                         0);
        journal_free(j);
        ck_assert_int_eq(journal_reader_open(dirfd_, "journal.jsonl", &r), 0);
        ck_assert_int_eq(next_op(r, &rec), 1);
        ck_assert_str_eq(rec.path, "/home/agent/\xff\xfe");
        ck_assert_str_eq(rec.path2, "/home/agent/b\x80");
        ck_assert_int_eq(next_op(r, &rec), 1);
        ck_assert_str_eq(rec.path, "/home/agent/plain");
        ck_assert_str_eq(rec.name, "user.\xc3");
        ck_assert_int_eq(next_op(r, &rec), 0);
        journal_reader_free(r);
}
END_TEST

START_TEST(sigkill_mid_appends_leaves_a_readable_journal)
{
        pid_t pid = fork();
        unsigned corrupt = 99, n;
        int status;

        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                journal *j = NULL;
                struct journal_caller who = me();
                if (journal_open(dirfd_, "journal.jsonl", 0, NULL, &j) < 0)
                        _exit(1);
                for (uint64_t i = 0;; i++) {
                        char d[64];
                        snprintf(d, sizeof(d), "/workspace/d%llu", (unsigned long long)i);
                        journal_append(j, &who,
                                       &(struct journal_entry){.op = JOURNAL_MKDIR, .path = d});
                        journal_append(j, &who,
                                       &(struct journal_entry){.op = JOURNAL_WRITE,
                                                               .path = "/workspace/f",
                                                               .offset = i,
                                                               .length = 1});
                }
        }
        /* Let it write for a while, then kill it without warning. */
        for (int i = 0; i < 200; i++) {
                struct stat st;
                if (fstatat(dirfd_, "journal.jsonl", &st, 0) == 0 && st.st_size > 100000)
                        break;
                nanosleep(&(struct timespec){0, 20000000}, NULL);
        }
        kill(pid, SIGKILL);
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert(WIFSIGNALED(status));
        n = read_all(NULL, NULL, NULL, &corrupt, NULL);
        ck_assert_uint_gt(n, 100);
        ck_assert_uint_le(corrupt, 1);
}
END_TEST

static double mono_now(void)
{
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/*
 * Issue 15: under a steady stream of adjacent writes, the coalesced entry is
 * on disk at most one window after its first write. No timing assumption:
 * an append that starts a full window after the first append returned must
 * find the entry due, and write it before returning, however loaded the
 * machine (the flusher thread may be late; the append is not).
 */
START_TEST(steady_writes_are_written_within_a_window_of_the_first)
{
        journal *j = NULL;
        struct journal_caller who = me();
        double first_done = 0;
        bool checked = false;

        ck_assert_int_eq(journal_open(dirfd_, "journal.jsonl", 0, NULL, &j), 0);
        for (unsigned i = 0; i < 400; i++) {
                double start = mono_now();
                ck_assert_int_eq(journal_append(j, &who,
                                                &(struct journal_entry){.op = JOURNAL_WRITE,
                                                                        .path = "/workspace/log",
                                                                        .offset = i * 65536ull,
                                                                        .length = 65536}),
                                 0);
                if (i == 0)
                        first_done = mono_now();
                else if (start - first_done >= JOURNAL_COALESCE_MS / 1000.0 + 0.001) {
                        ck_assert_uint_ge(read_all(NULL, NULL, NULL, NULL, NULL), 1);
                        checked = true;
                        break;
                }
                nanosleep(&(struct timespec){0, 5000000}, NULL);
        }
        ck_assert(checked);
        journal_free(j);
}
END_TEST

/* Issue 11: a loop of one chmod is one entry and a count per window, not one line each. */
START_TEST(repeats_of_one_operation_become_entries_with_a_count)
{
        journal *j = NULL;
        struct journal_caller who = me();
        journal_reader *r = NULL;
        struct journal_record rec;
        unsigned entries = 0;
        int64_t total = 0;

        ck_assert_int_eq(journal_open(dirfd_, "journal.jsonl", 0, NULL, &j), 0);
        for (unsigned i = 0; i < 20000; i++) {
                /* A new process each time, as `while :; do chmod 644 x; done` does. */
                who.pid = 100000 + (pid_t)i;
                ck_assert_int_eq(journal_append(j, &who,
                                                &(struct journal_entry){.op = JOURNAL_CHMOD,
                                                                        .path = "/workspace/x",
                                                                        .mode = 0644}),
                                 0);
        }
        /* A different mode is a different operation: its own line, after the repeats. */
        ck_assert_int_eq(journal_append(j, &who,
                                        &(struct journal_entry){.op = JOURNAL_CHMOD,
                                                                .path = "/workspace/x",
                                                                .mode = 0755}),
                         0);
        journal_free(j);

        ck_assert_int_eq(journal_reader_open(dirfd_, "journal.jsonl", &r), 0);
        while (journal_reader_next(r, &rec) > 0) {
                json_t *o = (json_t *)rec.json;
                if (rec.mark)
                        continue;
                entries++;
                ck_assert_str_eq(rec.op, "chmod");
                if (json_integer_value(json_object_get(o, "mode")) == 0755) {
                        ck_assert_int_eq(rec.count, 1);
                        ck_assert_int_eq(total, 20000); /* every 0644 came before it */
                        continue;
                }
                total += rec.count;
        }
        journal_reader_free(r);
        ck_assert_int_eq(total, 20000);
        /* 1 + one per window: far fewer than 20000, whatever the machine's speed. */
        ck_assert_uint_lt(entries, 2000);
}
END_TEST

/*
 * Issue 11: at the bound, one mark, EDQUOT, and every line written before
 * stays; issue 34: the cut still comes past the soft bound. Coarse entries
 * grow at a bounded rate, so this agent makes each one large (a directory
 * with a long name, a new one each time) to reach the cut at once. Every
 * admitted operation is counted in some entry, and none is dropped.
 */
START_TEST(bound_cuts_the_journal_with_one_mark_and_refuses_what_follows)
{
        const uint64_t max = 64 * 1024;
        journal *j = NULL;
        struct journal_caller who = me();
        journal_reader *r = NULL;
        struct journal_record rec;
        unsigned ok = 0, writes = 0, coarse_marks = 0;
        int64_t mkdirs = 0;
        char last_op[32] = "", longname[1001];
        bool cut_seen = false;
        struct stat st;
        int k = 0;

        memset(longname, 'a', sizeof(longname) - 1);
        longname[sizeof(longname) - 1] = 0;
        ck_assert_int_eq(journal_open(dirfd_, "journal.jsonl", max, NULL, &j), 0);
        /* A write acknowledged before the cut, still pending at it: it must not be lost. */
        ck_assert_int_eq(journal_append(j, &who,
                                        &(struct journal_entry){.op = JOURNAL_WRITE,
                                                                .path = "/workspace/pending",
                                                                .length = 10}),
                         0);
        for (unsigned i = 0; i < 100000; i++) {
                char p[1200];
                snprintf(p, sizeof(p), "/workspace/%s/%u/sub", longname, i);
                k = journal_admit(j);
                if (k < 0)
                        break;
                /* Admitted: it happens, so its entry must be written. */
                ck_assert_int_eq(
                        journal_append(j, &who,
                                       &(struct journal_entry){.op = JOURNAL_MKDIR, .path = p}),
                        0);
                ok++;
        }
        ck_assert_int_eq(k, -EDQUOT);
        ck_assert_uint_gt(ok, 10);
        ck_assert_int_eq(journal_admit(j), -EDQUOT);
        journal_free(j);
        ck_assert_int_eq(fstatat(dirfd_, "journal.jsonl", &st, 0), 0);
        ck_assert_uint_le((uint64_t)st.st_size, max);

        ck_assert_int_eq(journal_reader_open(dirfd_, "journal.jsonl", &r), 0);
        while (journal_reader_next(r, &rec) > 0) {
                json_t *o = (json_t *)rec.json;
                if (streq(rec.op, "mkdir"))
                        mkdirs += rec.count; /* one, or a coarse entry's count */
                else if (streq(rec.op, "write"))
                        writes++;
                else if (streq(rec.op, "journal_truncated"))
                        cut_seen = true;
                else if (streq(rec.op, "journal_coarse"))
                        coarse_marks++;
                snprintf(last_op, sizeof(last_op), "%s", rec.op);
                if (streq(rec.op, "journal_close")) {
                        ck_assert_int_eq(json_integer_value(json_object_get(o, "refused")), 2);
                        ck_assert_int_eq(json_integer_value(json_object_get(o, "dropped")), 0);
                }
        }
        ck_assert_uint_eq(journal_reader_corrupt(r), 0);
        ck_assert_uint_eq(journal_reader_cuts(r), 1);
        journal_reader_free(r);
        ck_assert(cut_seen);
        ck_assert_uint_eq(coarse_marks, 1);
        ck_assert_int_eq(mkdirs, ok); /* nothing that was acknowledged is missing */
        ck_assert_uint_eq(writes, 1);
        ck_assert_str_eq(last_op, "journal_close");

        /* Still full at the next open with the same bound; a larger one admits again. */
        ck_assert_int_eq(journal_open(dirfd_, "journal.jsonl", max, NULL, &j), 0);
        ck_assert_int_eq(journal_admit(j), -EDQUOT);
        journal_free(j);
        ck_assert_int_eq(journal_open(dirfd_, "journal.jsonl", 4 * max, NULL, &j), 0);
        ck_assert_int_eq(journal_admit(j), 0);
        ck_assert_int_eq(journal_append(j, &who,
                                        &(struct journal_entry){.op = JOURNAL_RMDIR,
                                                                .path = "/workspace/dir-0"}),
                         0);
        journal_free(j);
}
END_TEST

/* Issue 15: a daemon that never closed the journal is reported; a live one is not. */
START_TEST(stop_without_the_close_mark_is_reported_and_a_live_writer_is_not)
{
        journal *j = NULL, *live = NULL;
        struct journal_caller who = me();
        journal_reader *r = NULL;
        struct journal_record rec;
        bool flagged = false;
        int status;
        pid_t pid;

        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                if (journal_open(dirfd_, "journal.jsonl", 0, NULL, &j) < 0)
                        _exit(1);
                journal_append(j, &who, &(struct journal_entry){.op = JOURNAL_MKDIR, .path = "/a"});
                raise(SIGKILL);
        }
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert(WIFSIGNALED(status));
        ck_assert_int_eq(journal_reader_open(dirfd_, "journal.jsonl", &r), 0);
        while (journal_reader_next(r, &rec) > 0)
                ;
        ck_assert_uint_eq(journal_reader_unclean_stops(r), 1);
        ck_assert(!journal_reader_live(r));
        journal_reader_free(r);

        /* A new session after it: its open mark says the one before stopped uncleanly. */
        ck_assert_int_eq(journal_open(dirfd_, "journal.jsonl", 0, NULL, &live), 0);
        ck_assert_int_eq(journal_reader_open(dirfd_, "journal.jsonl", &r), 0);
        while (journal_reader_next(r, &rec) > 0)
                if (rec.after_unclean_stop)
                        flagged = streq(rec.op, "journal_open");
        ck_assert(flagged);
        ck_assert_uint_eq(journal_reader_unclean_stops(r), 1); /* the live one is not counted */
        ck_assert(journal_reader_live(r));
        journal_reader_free(r);
        journal_free(live);

        ck_assert_int_eq(journal_reader_open(dirfd_, "journal.jsonl", &r), 0);
        while (journal_reader_next(r, &rec) > 0)
                ;
        ck_assert_uint_eq(journal_reader_unclean_stops(r), 1);
        ck_assert(!journal_reader_live(r));
        journal_reader_free(r);
}
END_TEST

START_TEST(time_parse_accepts_what_the_writer_writes_only)
{
        double t;
        ck_assert_int_eq(journal_time_parse("1970-01-01T00:00:10.250000Z", &t), 0);
        ck_assert(t > 10.24 && t < 10.26);
        ck_assert_int_eq(journal_time_parse("2026-12-02T16:00:00Z", &t), 0);
        ck_assert_int_eq(journal_time_parse("2026-12-02 16:00:00", &t), -EINVAL);
        ck_assert_int_eq(journal_time_parse("2026-12-02T16:00:00.Z", &t), -EINVAL);
        ck_assert_int_eq(journal_time_parse("", &t), -EINVAL);
}
END_TEST

/* /proc/PID/cgroup's text: the cloister run's cgroup it names, or "-". */
static const char *cgroup_of(const char *text)
{
        static char buf[JOURNAL_CGROUP_MAX];

        return journal_cgroup_parse(text, strlen(text), buf, sizeof(buf)) ? buf : "-";
}

START_TEST(cgroup_of_a_writer_is_its_runs_cgroup_name_or_none)
{
        /* v2: the one line, its path's last component. */
        ck_assert_str_eq(cgroup_of("0::/cloister/cloister-123-0\n"), "cloister-123-0");
        ck_assert_str_eq(cgroup_of("0::/user.slice/x.scope/cloister-4194304-17\n"),
                         "cloister-4194304-17");
        /* v1: the pids controller's line, whatever the others say. */
        ck_assert_str_eq(cgroup_of("12:memory:/cloister-9-1\n11:cpu,cpuacct:/\n"
                                   "10:pids:/docker/abc/cloister-9-0\n1:name=systemd:/x\n"),
                         "cloister-9-0");
        ck_assert_str_eq(cgroup_of("3:blkio,pids:/cloister-9-2\n"), "cloister-9-2");
        /* A hybrid host: v2 holds no controller, the v1 pids line does. */
        ck_assert_str_eq(cgroup_of("5:pids:/cloister-7-0\n0::/user.slice\n"), "cloister-7-0");
        /* Not a run's: a host process, a look-alike, a memory cgroup only, a deeper path. */
        ck_assert_str_eq(cgroup_of("0::/user.slice/session-1.scope\n"), "-");
        ck_assert_str_eq(cgroup_of("0::/cloister\n"), "-");
        ck_assert_str_eq(cgroup_of("0::/cloister-12\n"), "-");
        ck_assert_str_eq(cgroup_of("0::/cloister-12-\n"), "-");
        ck_assert_str_eq(cgroup_of("0::/cloister-1x-0\n"), "-");
        ck_assert_str_eq(cgroup_of("0::/cloister-1-0-2\n"), "-");
        ck_assert_str_eq(cgroup_of("0::/cloister-12345678901-0\n"), "-");
        ck_assert_str_eq(cgroup_of("0::/cloister-1-0/sub\n"), "-");
        ck_assert_str_eq(cgroup_of("4:memory:/cloister-1-1\n"), "-");
        ck_assert_str_eq(cgroup_of("1:name=pids:/cloister-1-1\n"), "-");
        ck_assert_str_eq(cgroup_of(""), "-");
        ck_assert_str_eq(cgroup_of("garbage\n"), "-");
        /* A line cut short (no newline: the read's bound) is no answer. */
        ck_assert_str_eq(cgroup_of("0::/cloister-1-0"), "-");
        /* An over-long line, even one that ends in a run's name: none. */
        size_t n = 8192;
        char *long_line = malloc(n + 64);
        ck_assert_ptr_nonnull(long_line);
        memcpy(long_line, "0::/", 4);
        memset(long_line + 4, 'a', n);
        strcpy(long_line + 4 + n, "/cloister-1-0\n");
        ck_assert_str_eq(cgroup_of(long_line), "-");
        free(long_line);
        /* A buffer too small for the name: none, nothing cut. */
        char small[8];
        ck_assert(!journal_cgroup_parse("0::/cloister-1-0\n", 17, small, sizeof(small)));
}
END_TEST

START_TEST(an_entry_names_the_cgroup_of_its_writer_only_if_a_runs)
{
        struct journal_caller who = me();
        journal *j = NULL;
        json_t *last = NULL;

        /* Whatever the caller says: the journal reads /proc. This test is in no run's cgroup. */
        snprintf(who.run_cgroup, sizeof(who.run_cgroup), "cloister-1-0");
        ck_assert_int_eq(journal_open(dirfd_, "journal.jsonl", 0, NULL, &j), 0);
        ck_assert_int_eq(journal_append(j, &who,
                                        &(struct journal_entry){.op = JOURNAL_MKDIR,
                                                                .path = "/workspace/d",
                                                                .mode = 0755}),
                         0);
        journal_free(j);
        ck_assert_uint_eq(read_all(NULL, NULL, &last, NULL, NULL), 1);
        ck_assert_ptr_null(json_object_get(last, "run_cgroup"));
        json_decref(last);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("journal");
        TCase *tc = tcase_create("journal");
        SRunner *sr;
        int failed;

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, entries_read_back_with_op_paths_result_and_caller);
        tcase_add_test(tc, sequential_writes_coalesce_into_one_entry);
        tcase_add_test(tc, writes_merge_even_when_ranges_do_not_touch_and_stay_ordered_per_file);
        tcase_add_test(tc, idle_pending_write_is_flushed_without_further_calls);
        tcase_add_test(tc, concurrent_appends_never_interleave_lines);
        tcase_add_test(tc, cut_short_last_line_is_reported_and_the_rest_read);
        tcase_add_test(tc, garbage_line_in_the_middle_is_skipped_and_counted);
        tcase_add_test(tc, non_utf8_names_are_kept_in_hex);
        tcase_add_test(tc, reader_gives_non_utf8_names_as_their_exact_bytes);
        tcase_add_test(tc, longest_possible_entry_is_read_back_not_skipped_as_damage);
        tcase_add_test(tc, sigkill_mid_appends_leaves_a_readable_journal);
        tcase_add_test(tc, time_parse_accepts_what_the_writer_writes_only);
        tcase_add_test(tc, steady_writes_are_written_within_a_window_of_the_first);
        tcase_add_test(tc, repeats_of_one_operation_become_entries_with_a_count);
        tcase_add_test(tc, bound_cuts_the_journal_with_one_mark_and_refuses_what_follows);
        tcase_add_test(tc, stop_without_the_close_mark_is_reported_and_a_live_writer_is_not);
        tcase_add_test(tc, cgroup_of_a_writer_is_its_runs_cgroup_name_or_none);
        tcase_add_test(tc, an_entry_names_the_cgroup_of_its_writer_only_if_a_runs);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? 1 : 0;
}
