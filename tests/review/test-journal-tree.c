/* SPDX-License-Identifier: MIT */
/*
 * test-journal-tree.c: removed trees (journal.h, "Removed trees"; issue 46,
 * item 5). A directory made and removed in one session, whose past outlived
 * every compaction window, is rewritten into one "removed_tree" entry at
 * the place of its mkdir, with its counts and the SHA-256 of the lines it
 * replaces; a tree something left stays line by line; a rewrite that a
 * crash interrupted leaves the journal whole.
 *
 * The windows are an hour long (journal_windows_set) and entries are
 * written with journal_flush(), so nothing depends on the machine's speed.
 */
#include <check.h>
#include <fcntl.h>
#include <jansson.h>
#include <sodium.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "journal.h"
#include "lib/util.h"

#define HOUR_MS (3600u * 1000)

static char tmpdir[64];
static int dirfd_ = -1;

static void setup(void)
{
        strcpy(tmpdir, "/tmp/cloister-journal-tree-XXXXXX");
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

static journal *open_long(void)
{
        journal *j = NULL;

        ck_assert_int_eq(journal_open(dirfd_, "journal.jsonl", 0, NULL, &j), 0);
        journal_windows_set(j, HOUR_MS, HOUR_MS);
        return j;
}

static void append(journal *j, struct journal_entry e)
{
        struct journal_caller who = me();

        ck_assert_int_eq(journal_append(j, &who, &e), 0);
}

/* Operations, in the order `cloister log` reads them (marks left out). */
static size_t lines(json_t **out, size_t max)
{
        journal_reader *r = NULL;
        struct journal_record rec;
        size_t n = 0;
        int k;

        ck_assert_int_eq(journal_reader_open(dirfd_, "journal.jsonl", &r), 0);
        while ((k = journal_reader_next(r, &rec)) > 0) {
                if (rec.mark)
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

/* The whole journal file, NUL-terminated. */
static char *file_read(void)
{
        struct stat st;
        int fd = openat(dirfd_, "journal.jsonl", O_RDONLY | O_CLOEXEC);
        char *buf;

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(fstat(fd, &st), 0);
        buf = calloc(1, (size_t)st.st_size + 1);
        ck_assert_ptr_nonnull(buf);
        ck_assert_int_eq(read(fd, buf, (size_t)st.st_size), st.st_size);
        close(fd);
        return buf;
}

START_TEST(a_tree_made_and_removed_is_one_entry_with_its_counts_and_hash)
{
        journal *j = open_long();
        _cleanup_free_ char *before = NULL, *after = NULL;
        crypto_hash_sha256_state sha;
        unsigned char h[crypto_hash_sha256_BYTES];
        char hex[2 * sizeof(h) + 1], p[64], mk_time[40];
        json_t *l[16];
        size_t n;

        ck_assert_int_ge(sodium_init(), 0);
        /* A test script's trash directory, kept longer than any window. */
        append(j, (struct journal_entry){
                          .op = JOURNAL_MKDIR, .path = "/w/t/trash dir.t1", .mode = 040755});
        for (unsigned d = 0; d < 5; d++) {
                snprintf(p, sizeof(p), "/w/t/trash dir.t1/d%u", d);
                append(j, (struct journal_entry){.op = JOURNAL_MKDIR, .path = p, .mode = 040755});
        }
        ck_assert_int_eq(journal_flush(j), 0);
        for (unsigned i = 0; i < 100; i++) {
                snprintf(p, sizeof(p), "/w/t/trash dir.t1/d%u/f%u", i % 5, i);
                append(j, (struct journal_entry){.op = JOURNAL_CREATE, .path = p, .mode = 0100644});
                append(j, (struct journal_entry){.op = JOURNAL_WRITE, .path = p, .length = 10});
        }
        append(j, (struct journal_entry){.op = JOURNAL_CHMOD,
                                         .path = "/w/t/trash dir.t1/d0/f0",
                                         .mode = 0755,
                                         .result = -EPERM});
        /* What outlives it is kept, line by line. */
        append(j, (struct journal_entry){.op = JOURNAL_CREATE, .path = "/w/keep", .mode = 0100644});
        append(j, (struct journal_entry){.op = JOURNAL_WRITE, .path = "/w/keep", .length = 3});
        ck_assert_int_eq(journal_flush(j), 0);
        /* rm -rf */
        for (unsigned i = 0; i < 100; i++) {
                snprintf(p, sizeof(p), "/w/t/trash dir.t1/d%u/f%u", i % 5, i);
                append(j, (struct journal_entry){.op = JOURNAL_UNLINK, .path = p});
        }
        for (unsigned d = 0; d < 5; d++) {
                snprintf(p, sizeof(p), "/w/t/trash dir.t1/d%u", d);
                append(j, (struct journal_entry){.op = JOURNAL_RMDIR, .path = p});
        }
        append(j, (struct journal_entry){.op = JOURNAL_RMDIR, .path = "/w/t/trash dir.t1"});
        before = file_read();
        /* Before the rewrite: every line is there, the trash's mkdir first. */
        ck_assert_ptr_nonnull(strstr(before, "\"op\":\"rmdir\",\"path\":\"/w/t/trash dir.t1\""));
        {
                /* The trash's mkdir is the first line after the journal_open mark. */
                const char *t = strstr(strchr(before, '\n'), "{\"time\":\"");
                ck_assert_ptr_nonnull(t);
                ck_assert_ptr_nonnull(strstr(t, "\"op\":\"mkdir\",\"path\":\"/w/t/trash dir.t1\""));
                snprintf(mk_time, sizeof(mk_time), "%.27s", t + 9);
        }

        ck_assert_int_eq(journal_flush_all(j), 0); /* what `cloister log` asks */
        after = file_read();
        n = lines(l, ELEMENTSOF(l));
        ck_assert_uint_eq(n, 3);
        ck_assert_str_eq(str(l[0], "op"), "removed_tree");
        ck_assert_str_eq(str(l[0], "path"), "/w/t/trash dir.t1");
        ck_assert_str_eq(str(l[0], "time"), mk_time); /* in the place of its mkdir */
        ck_assert_int_eq(num(l[0], "count"), 1 + 5 + 100);
        ck_assert_int_eq(num(l[0], "lines"), 1 + 5 + 100 * 2 + 1 + 100 + 5 + 1);
        ck_assert_int_eq(num(l[0], "failed"), 1);
        ck_assert_ptr_nonnull(str(l[0], "until"));
        ck_assert_int_eq(json_array_size(json_object_get(l[0], "comms")), 1);
        ck_assert_int_eq(num(l[0], "pid"), getpid());
        ck_assert_str_eq(str(l[1], "op"), "create");
        ck_assert_str_eq(str(l[1], "path"), "/w/keep");
        ck_assert_str_eq(str(l[2], "op"), "write");

        /* The hash is of the lines it replaced, as they were: those of before not after. */
        crypto_hash_sha256_init(&sha);
        for (char *s = before, *e; *s; s = e + 1) {
                e = strchr(s, '\n');
                ck_assert_ptr_nonnull(e);
                *e = 0;
                if (!strstr(after, s)) {
                        *e = '\n';
                        crypto_hash_sha256_update(&sha, (unsigned char *)s, (size_t)(e - s) + 1);
                }
                *e = '\n';
        }
        crypto_hash_sha256_final(&sha, h);
        sodium_bin2hex(hex, sizeof(hex), h, sizeof(h));
        ck_assert_str_eq(str(l[0], "sha256"), hex);
        lines_free(l, n);

        /* Closed: the same, once. */
        journal_free(j);
        n = lines(l, ELEMENTSOF(l));
        ck_assert_uint_eq(n, 3);
        ck_assert_str_eq(str(l[0], "op"), "removed_tree");
        lines_free(l, n);
}
END_TEST

START_TEST(a_tree_inside_a_removed_tree_is_part_of_it)
{
        journal *j = open_long();
        json_t *l[16];
        size_t n;

        /* An earlier session, copied as it is (its seq numbers are its own). */
        append(j, (struct journal_entry){.op = JOURNAL_MKDIR, .path = "/w/a", .mode = 040755});
        append(j, (struct journal_entry){.op = JOURNAL_RMDIR, .path = "/w/early"});
        journal_free(j);
        j = open_long();

        append(j, (struct journal_entry){.op = JOURNAL_MKDIR, .path = "/w/a", .mode = 040755});
        append(j, (struct journal_entry){.op = JOURNAL_MKDIR, .path = "/w/a/b", .mode = 040755});
        append(j,
               (struct journal_entry){.op = JOURNAL_CREATE, .path = "/w/a/b/f", .mode = 0100644});
        ck_assert_int_eq(journal_flush(j), 0);
        append(j, (struct journal_entry){.op = JOURNAL_UNLINK, .path = "/w/a/b/f"});
        append(j, (struct journal_entry){.op = JOURNAL_RMDIR, .path = "/w/a/b"});
        append(j, (struct journal_entry){.op = JOURNAL_CREATE, .path = "/w/a/g", .mode = 0100644});
        ck_assert_int_eq(journal_flush(j), 0);
        append(j, (struct journal_entry){.op = JOURNAL_UNLINK, .path = "/w/a/g"});
        append(j, (struct journal_entry){.op = JOURNAL_RMDIR, .path = "/w/a"});
        journal_free(j); /* the close rewrites too */

        n = lines(l, ELEMENTSOF(l));
        ck_assert_uint_eq(n, 3);
        ck_assert_str_eq(str(l[0], "op"), "mkdir");
        ck_assert_str_eq(str(l[1], "op"), "rmdir");
        ck_assert_str_eq(str(l[1], "path"), "/w/early");
        ck_assert_str_eq(str(l[2], "op"), "removed_tree");
        ck_assert_str_eq(str(l[2], "path"), "/w/a");
        ck_assert_int_eq(num(l[2], "count"), 4); /* a, b, f, g */
        ck_assert_int_eq(num(l[2], "lines"), 8);
        lines_free(l, n);
}
END_TEST

START_TEST(a_tree_something_was_moved_or_linked_out_of_or_into_keeps_its_lines)
{
        journal *j = open_long();
        const char *want[] = {"mkdir", "create", "link",  "rmdir", "mkdir", "create", "rename",
                              "rmdir", "create", "mkdir", "link",  "write", "unlink", "rmdir"};
        json_t *l[24];
        size_t n;

        /* A hard link out of it: the file lives on, so does its history. */
        append(j, (struct journal_entry){.op = JOURNAL_MKDIR, .path = "/w/l", .mode = 040755});
        append(j, (struct journal_entry){.op = JOURNAL_CREATE, .path = "/w/l/a", .mode = 0100644});
        ck_assert_int_eq(journal_flush(j), 0);
        append(j, (struct journal_entry){.op = JOURNAL_LINK, .path = "/w/l/a", .path2 = "/w/la"});
        append(j, (struct journal_entry){.op = JOURNAL_RMDIR, .path = "/w/l"});
        /* A rename out of it. */
        append(j, (struct journal_entry){.op = JOURNAL_MKDIR, .path = "/w/r", .mode = 040755});
        append(j, (struct journal_entry){.op = JOURNAL_CREATE, .path = "/w/r/a", .mode = 0100644});
        ck_assert_int_eq(journal_flush(j), 0);
        append(j, (struct journal_entry){.op = JOURNAL_RENAME, .path = "/w/r/a", .path2 = "/w/ra"});
        append(j, (struct journal_entry){.op = JOURNAL_RMDIR, .path = "/w/r"});
        /* A hard link into it: writes through it change a file that outlives it. */
        append(j, (struct journal_entry){.op = JOURNAL_CREATE, .path = "/w/kept", .mode = 0100644});
        append(j, (struct journal_entry){.op = JOURNAL_MKDIR, .path = "/w/h", .mode = 040755});
        ck_assert_int_eq(journal_flush(j), 0);
        append(j, (struct journal_entry){.op = JOURNAL_LINK, .path = "/w/kept", .path2 = "/w/h/k"});
        append(j, (struct journal_entry){.op = JOURNAL_WRITE, .path = "/w/h/k", .length = 4});
        ck_assert_int_eq(journal_flush(j), 0);
        append(j, (struct journal_entry){.op = JOURNAL_UNLINK, .path = "/w/h/k"});
        append(j, (struct journal_entry){.op = JOURNAL_RMDIR, .path = "/w/h"});
        ck_assert_int_eq(journal_flush_all(j), 0);
        journal_free(j);

        n = lines(l, ELEMENTSOF(l));
        ck_assert_uint_eq(n, ELEMENTSOF(want));
        for (size_t i = 0; i < n; i++)
                ck_assert_str_eq(str(l[i], "op"), want[i]);
        lines_free(l, n);
}
END_TEST

START_TEST(an_interrupted_rewrite_leaves_the_journal_whole)
{
        journal *j = open_long();
        json_t *l[16];
        size_t n;
        int fd;

        append(j, (struct journal_entry){.op = JOURNAL_MKDIR, .path = "/w/x", .mode = 040755});
        journal_free(j);
        /* A crash mid-rewrite leaves the new file half written beside the journal. */
        fd = openat(dirfd_, "journal.jsonl.rewrite", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, "{\"time\":\"2026-", 14), 14);
        close(fd);
        j = open_long();
        ck_assert_int_eq(faccessat(dirfd_, "journal.jsonl.rewrite", F_OK, 0), -1);
        journal_free(j);
        n = lines(l, ELEMENTSOF(l));
        ck_assert_uint_eq(n, 1);
        ck_assert_str_eq(str(l[0], "op"), "mkdir");
        lines_free(l, n);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("journal-tree");
        TCase *tc = tcase_create("journal-tree");
        SRunner *sr;
        int failed;

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, a_tree_made_and_removed_is_one_entry_with_its_counts_and_hash);
        tcase_add_test(tc, a_tree_inside_a_removed_tree_is_part_of_it);
        tcase_add_test(tc, a_tree_something_was_moved_or_linked_out_of_or_into_keeps_its_lines);
        tcase_add_test(tc, an_interrupted_rewrite_leaves_the_journal_whole);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? 1 : 0;
}
