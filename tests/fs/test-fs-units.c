/* SPDX-License-Identifier: MIT */
/*
 * test-fs-units.c: unit tests (Check) for the fs module's pure parts:
 * upper-layer name escaping, name validation, lower inode numbers, the git
 * and plain-directory lower layers on real repositories made here with
 * libgit2, the git lower's tree cache (lower-tree.c), and hole-preserving
 * data copies.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core.h"
#include "lower-sizes.h"
#include "lower-tree.h"
#include "state.h"
#include "lib/util.h"

static char tmpdir[64];

static void setup(void)
{
        strcpy(tmpdir, "/tmp/cloister-fs-unit.XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
        int fd = open("/tmp", O_RDONLY | O_DIRECTORY);
        state_rm_rf_at(fd, tmpdir + 5, 0);
        close(fd);
}

START_TEST(ordinary_names_are_stored_verbatim)
{
        char buf[256];
        ck_assert_int_eq(upper_name_escape(".wh.foo", buf), 0);
        ck_assert_str_eq(buf, ".wh.foo");
        ck_assert_str_eq(upper_name_unescape(buf), ".wh.foo");
}
END_TEST

START_TEST(reserved_prefix_names_are_escaped_and_round_trip)
{
        char buf[256];
        ck_assert_int_eq(upper_name_escape(".cloister~meta", buf), 0);
        ck_assert_str_eq(buf, ".cloister~=.cloister~meta");
        ck_assert_str_eq(upper_name_unescape(buf), ".cloister~meta");
        ck_assert_ptr_null(upper_name_unescape(".cloister~meta"));
        ck_assert_ptr_null(upper_name_unescape(".cloister~tmp.12"));
}
END_TEST

START_TEST(escaped_name_over_name_max_is_refused)
{
        char name[256], buf[256];
        memset(name, 'x', 250);
        memcpy(name, ".cloister~", 10);
        name[250] = 0;
        ck_assert_int_eq(upper_name_escape(name, buf), -ENAMETOOLONG);
}
END_TEST

START_TEST(upper_paths_escape_each_component)
{
        char out[PATH_MAX], small[8], name[300];

        ck_assert_int_eq(fs_upper_path("a/.cloister~meta/b.cloister~", out, sizeof(out)), 0);
        ck_assert_str_eq(out, "a/.cloister~=.cloister~meta/b.cloister~");
        ck_assert_int_eq(fs_upper_path(".cloister~x", out, sizeof(out)), 0);
        ck_assert_str_eq(out, ".cloister~=.cloister~x");
        ck_assert_int_eq(fs_upper_path("plain", out, sizeof(out)), 0);
        ck_assert_str_eq(out, "plain");
        /* Never a way out of, or around in, the store. */
        ck_assert_int_eq(fs_upper_path("a/../b", out, sizeof(out)), -EINVAL);
        ck_assert_int_eq(fs_upper_path("./a", out, sizeof(out)), -EINVAL);
        ck_assert_int_eq(fs_upper_path("a//b", out, sizeof(out)), -EINVAL);
        ck_assert_int_eq(fs_upper_path("/a", out, sizeof(out)), -EINVAL);
        /* The escape may push a name past NAME_MAX; the buffer is never overrun. */
        memset(name, 'x', 250);
        memcpy(name, ".cloister~", 10);
        name[250] = 0;
        ck_assert_int_eq(fs_upper_path(name, out, sizeof(out)), -ENAMETOOLONG);
        ck_assert_int_eq(fs_upper_path("abcdefgh", small, sizeof(small)), -ENAMETOOLONG);
        ck_assert_int_eq(fs_upper_path("abcdefg", small, sizeof(small)), 0);
        ck_assert_str_eq(small, "abcdefg");
}
END_TEST

START_TEST(invalid_names_are_rejected)
{
        char long_name[257];
        memset(long_name, 'a', 256);
        long_name[256] = 0;
        ck_assert(!fs_name_valid(""));
        ck_assert(!fs_name_valid("."));
        ck_assert(!fs_name_valid(".."));
        ck_assert(!fs_name_valid("a/b"));
        ck_assert(!fs_name_valid(long_name));
        long_name[255] = 0;
        ck_assert(fs_name_valid(long_name));
        ck_assert(fs_name_valid("..."));
}
END_TEST

START_TEST(lower_inode_numbers_are_stable_and_tagged)
{
        uint64_t a = lower_ino(1, "src/main.c");
        ck_assert_uint_eq(a, lower_ino(1, "src/main.c"));
        ck_assert_uint_ne(a, lower_ino(2, "src/main.c"));
        ck_assert_uint_ne(a, lower_ino(1, "src/main.h"));
        ck_assert_uint_eq(a >> 62, 1);
}
END_TEST

/* A repo with a.txt ("hello\n"), run.sh (exec), link -> a.txt and dir/b. */
static void make_repo(const char *path, git_oid *ret_commit)
{
        git_repository *repo;
        git_treebuilder *tb, *sub;
        git_oid blob, blob2, link, subtree, tree;
        git_signature *sig;
        git_tree *t;

        ck_assert_int_eq(git_repository_init(&repo, path, 0), 0);
        ck_assert_int_eq(git_blob_create_from_buffer(&blob, repo, "hello\n", 6), 0);
        ck_assert_int_eq(git_blob_create_from_buffer(&blob2, repo, "bee", 3), 0);
        ck_assert_int_eq(git_blob_create_from_buffer(&link, repo, "a.txt", 5), 0);
        ck_assert_int_eq(git_treebuilder_new(&sub, repo, NULL), 0);
        ck_assert_int_eq(git_treebuilder_insert(NULL, sub, "b", &blob2, GIT_FILEMODE_BLOB), 0);
        ck_assert_int_eq(git_treebuilder_write(&subtree, sub), 0);
        ck_assert_int_eq(git_treebuilder_new(&tb, repo, NULL), 0);
        ck_assert_int_eq(git_treebuilder_insert(NULL, tb, "a.txt", &blob, GIT_FILEMODE_BLOB), 0);
        ck_assert_int_eq(
                git_treebuilder_insert(NULL, tb, "run.sh", &blob, GIT_FILEMODE_BLOB_EXECUTABLE), 0);
        ck_assert_int_eq(git_treebuilder_insert(NULL, tb, "link", &link, GIT_FILEMODE_LINK), 0);
        ck_assert_int_eq(git_treebuilder_insert(NULL, tb, "dir", &subtree, GIT_FILEMODE_TREE), 0);
        ck_assert_int_eq(git_treebuilder_write(&tree, tb), 0);
        ck_assert_int_eq(git_signature_new(&sig, "t", "t@e", 1700000000, 0), 0);
        ck_assert_int_eq(git_tree_lookup(&t, repo, &tree), 0);
        ck_assert_int_eq(
                git_commit_create(ret_commit, repo, "HEAD", sig, sig, NULL, "m", t, 0, NULL), 0);
        git_tree_free(t);
        git_signature_free(sig);
        git_treebuilder_free(tb);
        git_treebuilder_free(sub);
        git_repository_free(repo);
}

static int count_cb(const char *name, const struct lower_entry *child, void *userdata)
{
        (void)name;
        (void)child;
        (*(int *)userdata)++;
        return 0;
}

START_TEST(git_lower_reads_lazily_what_the_tree_holds)
{
        char repo[128], cache[128], buf[16];
        struct lower *l = NULL;
        struct lower_entry root = {0}, a = {0}, e = {0}, dir = {0}, b = {0};
        git_oid commit;
        char *target = NULL;
        int cfd, fd, n = 0;

        git_libgit2_init();
        snprintf(repo, sizeof(repo), "%s/repo", tmpdir);
        snprintf(cache, sizeof(cache), "%s/cache", tmpdir);
        make_repo(repo, &commit);
        ck_assert_int_eq(mkdir(cache, 0700), 0);
        cfd = open(cache, O_RDONLY | O_DIRECTORY);
        ck_assert_int_eq(lower_git_open(repo, "HEAD", cfd, 0, &l, NULL), 0);
        ck_assert_int_eq(lower_commit_time(l), 1700000000);
        ck_assert_int_eq(lower_root(l, &root), 0);
        ck_assert_int_eq(lower_list(l, &root, count_cb, &n), 0);
        ck_assert_int_eq(n, 4);
        ck_assert_int_eq(lower_child(l, &root, "a.txt", &a), 0);
        ck_assert_int_eq(a.mode, S_IFREG | 0644);
        ck_assert_int_eq(a.mtime.tv_sec, 1700000000);
        ck_assert_int_eq(lower_size(l, &a), 0);
        ck_assert_uint_eq(a.size, 6);
        ck_assert_int_eq(faccessat(cfd, git_oid_tostr_s(&a.oid), F_OK, 0),
                         -1); /* not inflated yet */
        ck_assert_int_eq(lower_open_data(l, &a, &fd), 0);
        ck_assert_int_eq(read(fd, buf, sizeof(buf)), 6);
        ck_assert(memcmp(buf, "hello\n", 6) == 0);
        close(fd);
        ck_assert_int_eq(faccessat(cfd, git_oid_tostr_s(&a.oid), F_OK, 0), 0); /* cached by oid */
        ck_assert_int_eq(lower_child(l, &root, "run.sh", &e), 0);
        ck_assert_int_eq(e.mode, S_IFREG | 0755);
        lower_entry_clear(&e);
        ck_assert_int_eq(lower_child(l, &root, "link", &e), 0);
        ck_assert_int_eq(e.mode, S_IFLNK | 0777);
        ck_assert_int_eq(lower_readlink(l, &e, &target), 0);
        ck_assert_str_eq(target, "a.txt");
        free(target);
        lower_entry_clear(&e);
        ck_assert_int_eq(lower_child(l, &root, "missing", &e), -ENOENT);
        ck_assert_int_eq(lower_child(l, &root, "dir", &dir), 0);
        ck_assert_int_eq(lower_child(l, &dir, "b", &b), 0);
        ck_assert_str_eq(b.path, "dir/b");
        lower_entry_clear(&b);
        ck_assert_int_eq(lower_lookup_path(l, "dir/b", &b), 0);
        ck_assert_int_eq(lower_size(l, &b), 0);
        ck_assert_uint_eq(b.size, 3);
        lower_entry_clear(&b);
        lower_entry_clear(&dir);
        lower_entry_clear(&a);
        lower_entry_clear(&root);
        lower_free(l);
        close(cfd);
        git_libgit2_shutdown();
}
END_TEST

#ifndef NDEBUG
struct lock_probe {
        pthread_mutex_t *m;
        bool held;
};

static void *probe_mutex(void *arg)
{
        struct lock_probe *p = arg;
        p->held = lock_mutex_held(p->m);
        return NULL;
}

/* The checks behind the "caller holds" notes (fs-private.h) say what is held. */
START_TEST(lock_checks_see_what_is_held)
{
        pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
        pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
        struct lock_probe p = {.m = &m, .held = true};
        pthread_t t;

        ck_assert(!lock_mutex_held(&m));
        pthread_mutex_lock(&m);
        ck_assert(lock_mutex_held(&m));
        /* Held, but by another thread: not this one's. */
        ck_assert_int_eq(pthread_create(&t, NULL, probe_mutex, &p), 0);
        pthread_join(t, NULL);
        ck_assert(!p.held);
        pthread_mutex_unlock(&m);
        ck_assert(!lock_mutex_held(&m));

        ck_assert(!lock_rw_held(&l));
        ck_assert(!lock_rw_wrheld(&l));
        pthread_rwlock_rdlock(&l);
        ck_assert(lock_rw_held(&l));
        ck_assert(!lock_rw_wrheld(&l)); /* a reader only: "exclusively" fails */
        pthread_rwlock_unlock(&l);
        pthread_rwlock_wrlock(&l);
        ck_assert(lock_rw_held(&l));
        ck_assert(lock_rw_wrheld(&l));
        pthread_rwlock_unlock(&l);
        /* The checks took nothing: the lock is free again. */
        ck_assert_int_eq(pthread_rwlock_trywrlock(&l), 0);
        pthread_rwlock_unlock(&l);
}
END_TEST
#endif

/*
 * libgit2's errors become the errno that says what happened: a revision
 * or source that is not there ENOENT, one that is not a commit EINVAL, and
 * an object the tree promised but the repository lacks EIO, never ENOENT
 * (the file was listed). Before, open said EINVAL and reads EIO for all.
 */
START_TEST(git_errors_say_what_happened)
{
        char repo[128], cache[128], obj[256];
        struct lower *l = NULL;
        struct lower_entry root = {0}, a = {0};
        git_oid commit;
        char *err = NULL;
        int cfd, fd = -1;

        git_libgit2_init();
        snprintf(repo, sizeof(repo), "%s/errrepo", tmpdir);
        snprintf(cache, sizeof(cache), "%s/errcache", tmpdir);
        make_repo(repo, &commit);
        ck_assert_int_eq(mkdir(cache, 0700), 0);
        cfd = open(cache, O_RDONLY | O_DIRECTORY);
        ck_assert_int_eq(lower_git_open(repo, "no-such-branch", cfd, 0, &l, &err), -ENOENT);
        ck_assert_ptr_nonnull(strstr(err, "no-such-branch"));
        free(err);
        err = NULL;
        ck_assert_int_eq(lower_git_open(repo, "HEAD^{tree}", cfd, 0, &l, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(err, "not a commit"));
        free(err);
        err = NULL;
        ck_assert_int_eq(lower_git_open("/nonexistent/cloister-repo", "HEAD", cfd, 0, &l, &err),
                         -ENOENT);
        free(err);
        ck_assert_int_eq(lower_git_open(repo, "HEAD", cfd, 0, &l, NULL), 0);
        ck_assert_int_eq(lower_root(l, &root), 0);
        ck_assert_int_eq(lower_child(l, &root, "a.txt", &a), 0);
        /* The blob goes from the object database: the tree still names it. */
        {
                const char *hex = git_oid_tostr_s(&a.oid);
                snprintf(obj, sizeof(obj), "%s/.git/objects/%.2s/%s", repo, hex, hex + 2);
        }
        ck_assert_int_eq(unlink(obj), 0);
        ck_assert_int_eq(lower_size(l, &a), -EIO);
        ck_assert_int_eq(lower_open_data(l, &a, &fd), -EIO);
        ck_assert_int_eq(fd, -1);
        lower_entry_clear(&a);
        lower_entry_clear(&root);
        lower_free(l);
        close(cfd);
        git_libgit2_shutdown();
}
END_TEST

/*
 * A tree of n entries in one folder, names chosen so that git's order (a
 * folder sorts as if its name ended in '/') differs from strcmp()'s: "d%05u"
 * folders beside "d%05u.c" and "d%05u-x" files. Returns the tree's id.
 */
static void make_big_tree(git_repository *repo, unsigned n, git_oid *ret)
{
        git_treebuilder *tb, *sub;
        git_oid blob, subtree;
        char name[32];

        ck_assert_int_eq(git_blob_create_from_buffer(&blob, repo, "x\n", 2), 0);
        ck_assert_int_eq(git_treebuilder_new(&sub, repo, NULL), 0);
        ck_assert_int_eq(git_treebuilder_insert(NULL, sub, "leaf", &blob, GIT_FILEMODE_BLOB), 0);
        ck_assert_int_eq(git_treebuilder_write(&subtree, sub), 0);
        git_treebuilder_free(sub);
        ck_assert_int_eq(git_treebuilder_new(&tb, repo, NULL), 0);
        for (unsigned i = 0; i < n; i++) {
                unsigned k = i / 3;
                if (i % 3 == 0) {
                        snprintf(name, sizeof(name), "d%05u", k);
                        ck_assert_int_eq(
                                git_treebuilder_insert(NULL, tb, name, &subtree, GIT_FILEMODE_TREE),
                                0);
                } else {
                        snprintf(name, sizeof(name), i % 3 == 1 ? "d%05u.c" : "d%05u-x", k);
                        ck_assert_int_eq(
                                git_treebuilder_insert(NULL, tb, name, &blob, GIT_FILEMODE_BLOB),
                                0);
                }
        }
        ck_assert_int_eq(git_treebuilder_write(ret, tb), 0);
        git_treebuilder_free(tb);
}

START_TEST(tree_cache_finds_every_entry_of_a_huge_folder_and_keeps_git_order)
{
        char path[128];
        git_repository *repo;
        git_tree *tree;
        git_oid id;
        struct tree_cache *c;
        struct tree_index *t;
        struct tree_cache_stats st;
        const unsigned n = 12000;

        git_libgit2_init();
        snprintf(path, sizeof(path), "%s/big", tmpdir);
        ck_assert_int_eq(git_repository_init(&repo, path, 1), 0);
        make_big_tree(repo, n, &id);
        ck_assert_int_eq(git_tree_lookup(&tree, repo, &id), 0);
        ck_assert_int_eq(tree_cache_new(0, &c), 0);
        ck_assert_int_eq(tree_cache_get(c, repo, &id, &t), 0);
        ck_assert_uint_eq(t->n, n);
        for (unsigned i = 0; i < n; i++) {
                const git_tree_entry *te = git_tree_entry_byindex(tree, i);
                const struct tree_ent *e = tree_index_find(t, git_tree_entry_name(te));
                /* the listing is git's order, and each name finds its own entry */
                ck_assert_str_eq(tree_ent_name(t, &t->ents[i]), git_tree_entry_name(te));
                ck_assert_ptr_eq(e, &t->ents[i]);
                ck_assert(git_oid_equal(&e->oid, git_tree_entry_id(te)));
                ck_assert_uint_eq(e->mode, git_tree_entry_filemode(te));
        }
        ck_assert_ptr_null(tree_index_find(t, "d00001."));
        ck_assert_ptr_null(tree_index_find(t, "d99999"));
        ck_assert_ptr_null(tree_index_find(t, ""));
        ck_assert(!t->attr_converts);
        tree_cache_put(c, t);
        /* the second get is answered from the cache */
        ck_assert_int_eq(tree_cache_get(c, repo, &id, &t), 0);
        tree_cache_put(c, t);
        tree_cache_stats(c, &st);
        ck_assert_uint_eq(st.misses, 1);
        ck_assert_uint_eq(st.hits, 1);
        ck_assert_uint_eq(st.entries, 1);
        /*
         * What an entry costs (docs/fs-design.md, "The tree cache"): 36
         * bytes plus its name and NUL, and a header per tree.
         */
        uint64_t names = 0;
        for (unsigned i = 0; i < n; i++)
                names += strlen(git_tree_entry_name(git_tree_entry_byindex(tree, i))) + 1;
        printf("# tree cache: %u entries in %" PRIu64 " bytes, %.1f per entry\n", n, st.bytes,
               (double)st.bytes / n);
        ck_assert_uint_le(st.bytes, (uint64_t)n * 36 + names + 256);
        tree_cache_free(c);
        git_tree_free(tree);
        git_repository_free(repo);
        git_libgit2_shutdown();
}
END_TEST

START_TEST(tree_cache_stays_within_a_tiny_budget_and_answers_the_same)
{
        char path[128];
        git_repository *repo;
        git_oid ids[8];
        struct tree_cache *c;
        struct tree_index *t, *held;
        struct tree_cache_stats st;

        git_libgit2_init();
        snprintf(path, sizeof(path), "%s/small", tmpdir);
        ck_assert_int_eq(git_repository_init(&repo, path, 1), 0);
        for (unsigned i = 0; i < 8; i++)
                make_big_tree(repo, 60 + i * 30, &ids[i]); /* 2.5 to 12 KB of index each */
        ck_assert_int_eq(tree_cache_new(16 * 1024, &c), 0);
        for (unsigned round = 0; round < 3; round++)
                for (unsigned i = 0; i < 8; i++) {
                        ck_assert_int_eq(tree_cache_get(c, repo, &ids[i], &t), 0);
                        ck_assert_uint_eq(t->n, 60 + i * 30);
                        ck_assert_ptr_nonnull(tree_index_find(t, "d00017.c"));
                        ck_assert_ptr_null(tree_index_find(t, "d00017.h"));
                        tree_cache_put(c, t);
                        tree_cache_stats(c, &st);
                        ck_assert_uint_le(st.bytes, 16 * 1024);
                }
        tree_cache_stats(c, &st);
        ck_assert_uint_gt(st.evictions, 0);
        ck_assert_uint_eq(st.hits + st.misses, 24);
        /* the most recently used stays: the last tree put is still there */
        uint64_t misses = st.misses;
        ck_assert_int_eq(tree_cache_get(c, repo, &ids[7], &t), 0);
        tree_cache_put(c, t);
        tree_cache_stats(c, &st);
        ck_assert_uint_eq(st.misses, misses);
        /* an index in use is never freed, even far over the budget ... */
        ck_assert_int_eq(tree_cache_get(c, repo, &ids[0], &held), 0);
        for (unsigned i = 1; i < 8; i++) {
                ck_assert_int_eq(tree_cache_get(c, repo, &ids[i], &t), 0);
                tree_cache_put(c, t);
        }
        ck_assert_uint_eq(held->n, 60);
        ck_assert_ptr_nonnull(tree_index_find(held, "d00019-x"));
        tree_cache_put(c, held);
        /* ... and the cache is back within it once it is put */
        tree_cache_stats(c, &st);
        ck_assert_uint_le(st.bytes, 16 * 1024);
        tree_cache_free(c);
        git_repository_free(repo);
        git_libgit2_shutdown();
}
END_TEST

START_TEST(tree_cache_over_budget_alone_is_dropped_when_put)
{
        char path[128];
        git_repository *repo;
        git_oid id;
        struct tree_cache *c;
        struct tree_index *t;
        struct tree_cache_stats st;

        git_libgit2_init();
        snprintf(path, sizeof(path), "%s/one", tmpdir);
        ck_assert_int_eq(git_repository_init(&repo, path, 1), 0);
        make_big_tree(repo, 3000, &id);
        ck_assert_int_eq(tree_cache_new(4096, &c), 0);
        ck_assert_int_eq(tree_cache_get(c, repo, &id, &t), 0);
        ck_assert_ptr_nonnull(tree_index_find(t, "d00999-x"));
        tree_cache_put(c, t);
        tree_cache_stats(c, &st);
        ck_assert_uint_eq(st.entries, 0);
        ck_assert_uint_eq(st.bytes, 0);
        ck_assert_uint_eq(st.evictions, 1);
        tree_cache_free(c);
        git_repository_free(repo);
        git_libgit2_shutdown();
}
END_TEST

/* A tree of one entry, .gitattributes, holding text (a folder of that name if text is NULL). */
static void attributes_tree(git_repository *repo, const char *text, git_oid *ret)
{
        git_treebuilder *tb;
        git_oid id;

        ck_assert_int_eq(git_treebuilder_new(&tb, repo, NULL), 0);
        if (text) {
                ck_assert_int_eq(git_blob_create_from_buffer(&id, repo, text, strlen(text)), 0);
                ck_assert_int_eq(
                        git_treebuilder_insert(NULL, tb, ".gitattributes", &id, GIT_FILEMODE_BLOB),
                        0);
        } else {
                make_big_tree(repo, 3, &id);
                ck_assert_int_eq(
                        git_treebuilder_insert(NULL, tb, ".gitattributes", &id, GIT_FILEMODE_TREE),
                        0);
        }
        ck_assert_int_eq(git_treebuilder_write(ret, tb), 0);
        git_treebuilder_free(tb);
}

/*
 * Only a .gitattributes that names eol=crlf or ident puts the files below it
 * in attribute scope (lower-tree.c, attributes_may_convert): git.git's kind
 * of whitespace=, diff=, text and eol=lf rules cost no attribute lookup.
 */
START_TEST(tree_cache_flags_only_attributes_that_may_convert)
{
        static const struct {
                const char *text;
                bool converts;
        } cases[] = {
                {"* whitespace=!indent,trail,space\n*.[ch] diff=cpp text eol=lf\n", false},
                {"*.png binary\n*.txt text=auto\n*.sh -text\nCODE.md -whitespace\n", false},
                {"*.bat text eol=crlf\n", true},
                {"*.v ident\n", true},
                {"*.txt crlf\n", true},      /* the old attribute: asked, to be safe */
                {"*.txt eol=CRLF\n", false}, /* git takes only "crlf" */
                {NULL, false},               /* a folder called .gitattributes */
        };
        char path[128];
        git_repository *repo;
        struct tree_cache *c;
        struct tree_index *t;
        git_oid id;

        git_libgit2_init();
        snprintf(path, sizeof(path), "%s/attrs", tmpdir);
        ck_assert_int_eq(git_repository_init(&repo, path, 1), 0);
        ck_assert_int_eq(tree_cache_new(0, &c), 0);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                attributes_tree(repo, cases[i].text, &id);
                ck_assert_int_eq(tree_cache_get(c, repo, &id, &t), 0);
                ck_assert_msg(t->attr_converts == cases[i].converts, "case %zu: %s", i,
                              cases[i].text ? cases[i].text : "(folder)");
                tree_cache_put(c, t);
        }
        tree_cache_free(c);
        git_repository_free(repo);
        git_libgit2_shutdown();
}
END_TEST

/*
 * The index build's notes (tree_index_note): kept per entry, for the folder
 * that noted first only (a tree may sit in several folders, whose attributes
 * may differ), and never for a size the note cannot hold.
 */
START_TEST(tree_cache_notes_hold_for_the_folder_that_made_them)
{
        char path[128];
        git_repository *repo;
        struct tree_cache *c;
        struct tree_index *t, *again;
        const struct tree_ent *a, *b;
        uint64_t size;
        git_oid id;

        git_libgit2_init();
        snprintf(path, sizeof(path), "%s/notes", tmpdir);
        ck_assert_int_eq(git_repository_init(&repo, path, 1), 0);
        make_big_tree(repo, 6, &id);
        ck_assert_int_eq(tree_cache_new(0, &c), 0);
        ck_assert_int_eq(tree_cache_get(c, repo, &id, &t), 0);
        a = tree_index_find(t, "d00000.c");
        b = tree_index_find(t, "d00001.c");
        ck_assert_ptr_nonnull(a);
        ck_assert_ptr_nonnull(b);
        ck_assert(!tree_index_noted(t, "src/x", 5, a, &size));
        tree_index_note(t, "src/x", 5, a, 1234);
        ck_assert(tree_index_noted(t, "src/x", 5, a, &size));
        ck_assert_uint_eq(size, 1234);
        ck_assert(!tree_index_noted(t, "src/x", 5, b, &size)); /* b was not noted */
        ck_assert(!tree_index_noted(t, "src", 3, a, &size));   /* another folder */
        ck_assert(!tree_index_noted(t, "src/xy", 6, a, &size));
        ck_assert(!tree_index_noted(t, "", 0, a, &size));
        tree_index_note(t, "other", 5, b, 7); /* src/x owns the notes */
        ck_assert(!tree_index_noted(t, "other", 5, b, &size));
        ck_assert(!tree_index_noted(t, "src/x", 5, b, &size));
        tree_index_note(t, "src/x", 5, b, (uint64_t)UINT32_MAX); /* too big to note */
        ck_assert(!tree_index_noted(t, "src/x", 5, b, &size));
        tree_index_note(t, "src/x", 5, b, 0); /* an empty file is a size too */
        ck_assert(tree_index_noted(t, "src/x", 5, b, &size));
        ck_assert_uint_eq(size, 0);
        /* the same index, shared: the notes are there for the next holder */
        ck_assert_int_eq(tree_cache_get(c, repo, &id, &again), 0);
        ck_assert_ptr_eq(again, t);
        ck_assert(tree_index_noted(again, "src/x", 5, a, &size));
        tree_cache_put(c, again);
        tree_cache_put(c, t);
        tree_cache_free(c);
        git_repository_free(repo);
        git_libgit2_shutdown();
}
END_TEST

START_TEST(dir_lower_shows_symlinks_without_following_them)
{
        char src[128], p[192];
        struct lower *l = NULL;
        struct lower_entry root = {0}, e = {0};
        char *target = NULL;

        snprintf(src, sizeof(src), "%s/src", tmpdir);
        ck_assert_int_eq(mkdir(src, 0755), 0);
        snprintf(p, sizeof(p), "%s/esc", src);
        ck_assert_int_eq(symlink("/etc", p), 0);
        ck_assert_int_eq(lower_dir_open(src, &l, NULL), 0);
        ck_assert_int_eq(lower_root(l, &root), 0);
        ck_assert_int_eq(lower_child(l, &root, "esc", &e), 0);
        ck_assert(S_ISLNK(e.mode));
        ck_assert_int_eq(lower_readlink(l, &e, &target), 0);
        ck_assert_str_eq(target, "/etc");
        free(target);
        lower_entry_clear(&e);
        /* A path through the link must not resolve (RESOLVE_NO_SYMLINKS). */
        ck_assert_int_ne(lower_lookup_path(l, "esc/passwd", &e), 0);
        lower_entry_clear(&root);
        lower_free(l);
}
END_TEST

START_TEST(data_copy_keeps_holes)
{
        char a[128], b[128];
        struct stat st;
        int in, out;

        snprintf(a, sizeof(a), "%s/sparse", tmpdir);
        snprintf(b, sizeof(b), "%s/copy", tmpdir);
        in = open(a, O_RDWR | O_CREAT, 0600);
        ck_assert_int_ge(in, 0);
        ck_assert_int_eq(pwrite(in, "x", 1, 32 << 20), 1);
        out = open(b, O_RDWR | O_CREAT, 0600);
        ck_assert_int_eq(copyup_fd_data(in, out, (32 << 20) + 1), 0);
        ck_assert_int_eq(fstat(out, &st), 0);
        ck_assert_int_eq(st.st_size, (32 << 20) + 1);
        ck_assert_int_lt(st.st_blocks, 1024);
        close(in);
        close(out);
}
END_TEST

static git_oid oid_of(unsigned v)
{
        git_oid o;
        memset(&o, 0, sizeof(o));
        o.id[0] = (unsigned char)(v >> 8);
        o.id[19] = (unsigned char)v;
        return o;
}

static void put_file(int dirfd, const char *name, const void *buf, size_t len)
{
        int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, buf, len), (ssize_t)len);
        close(fd);
}

START_TEST(blob_sizes_round_trip_and_refuse_what_they_did_not_write)
{
        struct blob_sizes_builder b = {0};
        struct blob_sizes *s = NULL, *mem = NULL;
        char buf[16384];
        git_oid o;
        uint64_t size = 0;
        ssize_t n;
        int dirfd = open(tmpdir, O_RDONLY | O_DIRECTORY), fd;

        ck_assert_int_ge(dirfd, 0);
        ck_assert_int_eq(blob_sizes_open(dirfd, &s), -ENOENT);
        /* Out of order, one blob twice (two paths), one over 4 GiB. */
        for (unsigned i = 300; i > 0; i--) {
                o = oid_of(i);
                blob_sizes_add(&b, &o, i * 7u);
        }
        o = oid_of(42);
        blob_sizes_add(&b, &o, 42 * 7u);
        o = oid_of(1000);
        blob_sizes_add(&b, &o, (uint64_t)5 << 32);
        ck_assert_int_eq(blob_sizes_write(&b, dirfd, &mem), 0);
        blob_sizes_builder_done(&b);
        ck_assert_ptr_nonnull(mem);
        ck_assert_int_eq(blob_sizes_open(dirfd, &s), 0);
        /* The writer's copy in memory and the file read back say the same. */
        for (int k = 0; k < 2; k++) {
                const struct blob_sizes *t = k ? mem : s;
                for (unsigned i = 1; i <= 300; i++) {
                        o = oid_of(i);
                        ck_assert(blob_sizes_find(t, &o, &size));
                        ck_assert_uint_eq(size, i * 7u);
                }
                o = oid_of(1000);
                ck_assert(blob_sizes_find(t, &o, &size));
                ck_assert_uint_eq(size, (uint64_t)5 << 32);
                o = oid_of(301);
                ck_assert(!blob_sizes_find(t, &o, &size));
        }
        ck_assert(!blob_sizes_find(NULL, &o, &size));
        blob_sizes_free(s);
        blob_sizes_free(mem);

        /* 16 bytes of head and 28 per record: 301 distinct blobs, no repeat. */
        fd = openat(dirfd, BLOB_SIZES_FILE, O_RDONLY);
        n = read(fd, buf, sizeof(buf));
        close(fd);
        ck_assert_int_eq(n, 16 + 301 * 28);
        /* Torn, or not in order, or not ours: refused, never half-used. */
        put_file(dirfd, BLOB_SIZES_FILE, buf, (size_t)n - 3);
        ck_assert_int_eq(blob_sizes_open(dirfd, &s), -EINVAL);
        put_file(dirfd, BLOB_SIZES_FILE, buf, (size_t)n - 28);
        ck_assert_int_eq(blob_sizes_open(dirfd, &s), -EINVAL); /* count says 301 */
        memcpy(buf + 16 + 28, buf + 16, 20);                   /* record 1 = record 0 */
        put_file(dirfd, BLOB_SIZES_FILE, buf, (size_t)n);
        ck_assert_int_eq(blob_sizes_open(dirfd, &s), -EINVAL);
        memcpy(buf, "NOTSIZES", 8);
        put_file(dirfd, BLOB_SIZES_FILE, buf, (size_t)n);
        ck_assert_int_eq(blob_sizes_open(dirfd, &s), -EINVAL);
        ck_assert_int_eq(unlinkat(dirfd, BLOB_SIZES_FILE, 0), 0);
        ck_assert_int_eq(symlinkat("/etc/passwd", dirfd, BLOB_SIZES_FILE), 0);
        ck_assert_int_eq(blob_sizes_open(dirfd, &s), -ELOOP);
        ck_assert_int_eq(unlinkat(dirfd, BLOB_SIZES_FILE, 0), 0);
        ck_assert_int_eq(mkfifoat(dirfd, BLOB_SIZES_FILE, 0600), 0); /* no writer: must not block */
        ck_assert_int_eq(blob_sizes_open(dirfd, &s), -EINVAL);
        close(dirfd);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("fs");
        TCase *tc = tcase_create("units");
        tcase_set_timeout(
                tc,
                120); /* the git repos of the tree cache tests, under ASan on a loaded machine */
        SRunner *sr;
        int failed;

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, ordinary_names_are_stored_verbatim);
        tcase_add_test(tc, reserved_prefix_names_are_escaped_and_round_trip);
        tcase_add_test(tc, escaped_name_over_name_max_is_refused);
        tcase_add_test(tc, upper_paths_escape_each_component);
        tcase_add_test(tc, invalid_names_are_rejected);
        tcase_add_test(tc, lower_inode_numbers_are_stable_and_tagged);
        tcase_add_test(tc, git_lower_reads_lazily_what_the_tree_holds);
        tcase_add_test(tc, git_errors_say_what_happened);
#ifndef NDEBUG
        tcase_add_test(tc, lock_checks_see_what_is_held);
#endif
        tcase_add_test(tc, tree_cache_finds_every_entry_of_a_huge_folder_and_keeps_git_order);
        tcase_add_test(tc, tree_cache_stays_within_a_tiny_budget_and_answers_the_same);
        tcase_add_test(tc, tree_cache_over_budget_alone_is_dropped_when_put);
        tcase_add_test(tc, tree_cache_flags_only_attributes_that_may_convert);
        tcase_add_test(tc, tree_cache_notes_hold_for_the_folder_that_made_them);
        tcase_add_test(tc, dir_lower_shows_symlinks_without_following_them);
        tcase_add_test(tc, data_copy_keeps_holes);
        tcase_add_test(tc, blob_sizes_round_trip_and_refuse_what_they_did_not_write);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? 1 : 0;
}
