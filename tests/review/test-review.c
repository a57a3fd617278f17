/* SPDX-License-Identifier: MIT */
/*
 * test-review.c: unit tests for mounts/review against a plain directory
 * standing in for the workspace view. Every patch is checked by the real
 * git binary: `git apply` / `git am` on a fresh clone at the base must give
 * the view back byte for byte, with types and executable bits.
 */
#include <fcntl.h>
#include <ftw.h>

/* Test paths are short; truncation of the fixed buffers cannot happen. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#include "review-fixture.h"
#include "review.h"
#include "lib/util.h"

static char src[192], view[192], changes[192];

static void setup(void)
{
        fx_setup();
        snprintf(src, sizeof(src), "%s/src", fx_dir);
        snprintf(view, sizeof(view), "%s/view", fx_dir);
        snprintf(changes, sizeof(changes), "%s/changes", fx_dir);
}

static review *review_new(bool with_changes, bool in_memory)
{
        struct review_options o = {
                .source = src,
                .rev = "HEAD",
                .view = view,
                .changes = with_changes ? changes : NULL,
                .repo_prefix = "/workspace",
                .home_prefix = "/home/agent",
                .in_memory = in_memory,
        };
        review *r = NULL;
        char *err = NULL;
        int k = review_open(&o, &r, &err);
        ck_assert_msg(k == 0, "review_open: %s", err ? err : "?");
        return r;
}

static void print_to(bool with_changes, enum review_format fmt, const char *name)
{
        char p[256];
        review *r = review_new(with_changes, true);
        FILE *f;
        int k;

        snprintf(p, sizeof(p), "%s/%s", fx_dir, name);
        f = fopen(p, "w");
        ck_assert_ptr_nonnull(f);
        k = review_print(r, fmt, f);
        ck_assert_msg(k == 0, "review_print: %s", review_error(r));
        fclose(f);
        review_free(r);
}

/* Every corner case of the issue at once; the touched paths go to the changes file. */
static void corner_edits(void)
{
        static const char bin[] = {'\0', '\1', 'x', '\377', '\0', '\n', 'y'};

        fx_write_str("a.txt", "one\nTWO\nthree\n"), fx_touch("a.txt", false);
        fx_write_str("nonl.txt", "no newline, still"), fx_touch("nonl.txt", false);
        fx_write_str("empty", ""), fx_touch("empty", false);
        fx_write("new.bin", bin, sizeof(bin)), fx_touch("new.bin", false);
        ck_assert_int_eq(fx_sh("printf '\\0\\0\\3' >> view/bin.dat"), 0);
        fx_touch("bin.dat", false);
        /* file -> directory and directory -> file */
        ck_assert_int_eq(fx_sh("rm view/becomes-dir && mkdir view/becomes-dir"), 0);
        fx_write_str("becomes-dir/inside", "now a dir\n");
        fx_touch("becomes-dir", true), fx_touch("becomes-dir/inside", false);
        ck_assert_int_eq(fx_sh("rm -r view/becomes-file"), 0);
        fx_write_str("becomes-file", "now a file\n"), fx_touch("becomes-file", false);
        /* rename across directories, into a new one */
        ck_assert_int_eq(fx_sh("mkdir view/other && mv view/dir/rename-me.txt "
                               "view/other/renamed.txt"),
                         0);
        fx_touch("dir/rename-me.txt", false), fx_touch("other", true);
        /* executable bits both ways */
        ck_assert_int_eq(fx_sh("chmod +x view/mode.txt && chmod -x view/run.sh"), 0);
        fx_touch("mode.txt", false), fx_touch("run.sh", false);
        /* symlinks: a new one, a changed target, one pointing out of the tree */
        ck_assert_int_eq(fx_sh("ln -s dir/x view/newlink && ln -sfn nonl.txt view/link && "
                               "ln -s /etc/passwd view/outside"),
                         0);
        fx_touch("newlink", false), fx_touch("link", false), fx_touch("outside", false);
        /* spaces and unicode */
        fx_write_str("with space.txt", "spaced\n"), fx_touch("with space.txt", false);
        fx_write_str("ünïcødé/ファイル.txt", "u\n");
        fx_touch("ünïcødé", true);
        /* a whole subtree deleted */
        ck_assert_int_eq(fx_sh("rm -r view/old"), 0);
        fx_touch("old", false);
        /* the agent's own .git is never part of the patch */
        fx_write_str(".git/agent-note", "not exported\n");
        fx_changes_write();
}

START_TEST(corner_cases_round_trip_through_git_apply_walking_the_view)
{
        corner_edits();
        print_to(false, REVIEW_PATCH, "patch");
        ck_assert_int_eq(fx_sh("grep -q 'GIT binary patch' patch"), 0);
        ck_assert_int_eq(fx_sh("grep -q '^rename from dir/rename-me.txt' patch"), 0);
        ck_assert_int_eq(fx_sh("grep -q '^new mode 100755' patch"), 0);
        ck_assert_int_eq(fx_sh("! grep -q agent-note patch"), 0);
        /* The symlink is recorded as a link; /etc/passwd is never read. */
        ck_assert_int_eq(fx_sh("grep -q '^+/etc/passwd' patch && ! grep -q '^+root:' patch"), 0);
        ck_assert_int_eq(fx_apply_and_compare("patch", false), 0);
}
END_TEST

START_TEST(unreadable_changes_list_falls_back_to_walking_the_view)
{
        review *r;

        corner_edits();
        /* What the fs gives when it cannot list a name: garbage or an error. */
        ck_assert_int_eq(fx_sh("printf 'not json\\n' > changes"), 0);
        print_to(true, REVIEW_PATCH, "patch");
        ck_assert_int_eq(fx_apply_and_compare("patch", false), 0);
        r = review_new(true, true);
        ck_assert_int_eq(review_build(r), 0);
        ck_assert_ptr_nonnull(review_warning(r));
        ck_assert_ptr_nonnull(strstr(review_warning(r), "not a change record"));
        review_free(r);
}
END_TEST

START_TEST(long_escaped_path_in_the_changes_list_is_used_not_skipped)
{
        review *r;

        /* 2,500 bytes that JSON escapes six-fold: a changes line of about 15 KB. */
        ck_assert_int_eq(fx_sh("python3 - <<'EOF'\n"
                               "import os, json\n"
                               "c = '\\x01' * 250\n"
                               "p = '/'.join([c] * 10)\n"
                               "os.makedirs('view/' + os.path.dirname(p))\n"
                               "open('view/' + p, 'w').write('x\\n')\n"
                               "open('changes', 'w').write(json.dumps({'path': '/workspace/' + p, "
                               "'type': 'file', 'opaque': False}) + '\\n')\n"
                               "EOF"),
                         0);
        r = review_new(true, true);
        ck_assert_msg(review_build(r) == 0, "%s", review_error(r));
        ck_assert_msg(review_warning(r) == NULL, "%s", review_warning(r));
        review_free(r);
        print_to(true, REVIEW_PATCH, "patch");
        ck_assert_int_eq(fx_apply_and_compare("patch", false), 0);
}
END_TEST

START_TEST(non_utf8_name_in_the_changes_list_is_read_from_path_hex)
{
        const char *name = "dir/\xff\xfe not utf-8", *abs = "/workspace/dir/\xff\xfe not utf-8";
        char p[256], hex[256] = "";
        review *r;
        FILE *f;

        fx_write_str(name, "x\n");
        for (size_t i = 0; abs[i]; i++)
                snprintf(hex + 2 * i, 3, "%02x", (unsigned char)abs[i]);
        snprintf(p, sizeof(p), "%s/changes", fx_dir);
        f = fopen(p, "w");
        ck_assert_ptr_nonnull(f);
        fprintf(f, "{\"path\":\"/workspace/dir\",\"type\":\"dir\",\"opaque\":false}\n");
        fprintf(f,
                "{\"path\":\"/workspace/dir/?? not utf-8\",\"path_hex\":\"%s\","
                "\"type\":\"file\",\"opaque\":false}\n",
                hex);
        fclose(f);
        r = review_new(true, true);
        ck_assert_msg(review_build(r) == 0, "%s", review_error(r));
        ck_assert_msg(review_warning(r) == NULL, "%s", review_warning(r));
        review_free(r);
        print_to(true, REVIEW_PATCH, "patch");
        ck_assert_int_eq(fx_apply_and_compare("patch", false), 0);
}
END_TEST

START_TEST(odd_names_round_trip_through_git_apply)
{
        /* git quotes these in patches; the walk takes them as they are. */
        fx_write_str("quote\"d", "q\n");
        fx_write_str("back\\slash", "b\n");
        fx_write_str("new\nline", "n\n");
        fx_write_str("tab\there", "t\n");
        fx_write_str("\xff\xfe not utf-8", "x\n");
        fx_write_str("-leading-dash", "d\n");
        print_to(false, REVIEW_PATCH, "patch");
        ck_assert_int_eq(fx_apply_and_compare("patch", false), 0);
}
END_TEST

START_TEST(corner_cases_round_trip_through_git_apply_from_the_changes_list)
{
        review *r;

        corner_edits();
        print_to(true, REVIEW_PATCH, "patch");
        ck_assert_int_eq(fx_apply_and_compare("patch", false), 0);
        /* Unchanged files were reused from the base, not read. */
        r = review_new(true, true);
        ck_assert_int_eq(review_build(r), 0);
        ck_assert_uint_lt(review_files_read(r), 20);
        review_free(r);
}
END_TEST

/* --- randomized edits ------------------------------------------------------------ */

static char **pool;
static size_t n_pool;

static int pool_add(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
        const char *rel = p + strlen(view) + 1;
        if (ftw->level == 0 || strncmp(rel, ".git", 4) == 0)
                return 0;
        if (flag == FTW_F || flag == FTW_D || flag == FTW_SL) {
                pool = realloc(pool, (n_pool + 1) * sizeof(char *));
                pool[n_pool++] = strdup(rel);
        }
        (void)st;
        return 0;
}

static void pool_load(void)
{
        for (size_t i = 0; i < n_pool; i++)
                free(pool[i]);
        n_pool = 0;
        ck_assert_int_eq(nftw(view, pool_add, 16, FTW_PHYS), 0);
}

static bool is_dir(const char *rel)
{
        char p[512];
        struct stat st;
        snprintf(p, sizeof(p), "%s/%s", view, rel);
        return lstat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool exists(const char *rel)
{
        char p[512];
        struct stat st;
        snprintf(p, sizeof(p), "%s/%s", view, rel);
        return lstat(p, &st) == 0;
}

static const char *const names[] = {"a", "b c", "\xc3\xa9t\xc3\xa9", "d.bin", "e-f", "x y z"};

static void random_edit(unsigned *seed)
{
        char rel[512], rel2[600];
        const char *pick;
        int op = rand_r(seed) % 9;

        pool_load();
        pick = n_pool ? pool[rand_r(seed) % n_pool] : "a.txt";
        snprintf(rel, sizeof(rel), "%s", pick);
        switch (op) {
        case 0: /* create a file, maybe in a new directory, text or binary */
        case 1: {
                char buf[300];
                size_t len = (size_t)(rand_r(seed) % (int)sizeof(buf));
                bool binary = rand_r(seed) % 3 == 0;
                for (size_t i = 0; i < len; i++)
                        buf[i] = binary ? (char)rand_r(seed) : "abc \n"[rand_r(seed) % 5];
                snprintf(rel2, sizeof(rel2), "%s%s%s", is_dir(rel) ? rel : "n", "/",
                         names[rand_r(seed) % ELEMENTSOF(names)]);
                if (!is_dir(rel) && (rand_r(seed) % 2 || !(is_dir("n") || !exists("n"))))
                        snprintf(rel2, sizeof(rel2), "%s", names[rand_r(seed) % ELEMENTSOF(names)]);
                if (is_dir(rel2))
                        return;
                fx_write(rel2, buf, len);
                fx_touch(rel2, false);
                break;
        }
        case 2: /* delete */
                fx_sh("rm -rf -- 'view/%s'", rel);
                fx_touch(rel, false);
                break;
        case 3: /* rename into another directory */
                snprintf(rel2, sizeof(rel2), "moved-%u", (unsigned)rand_r(seed) % 100);
                if (fx_sh("mkdir -p view/m && mv -T -- 'view/%s' 'view/m/%s' 2>/dev/null", rel,
                          rel2) == 0) {
                        char dst[700];
                        snprintf(dst, sizeof(dst), "m/%s", rel2);
                        fx_touch(rel, false);
                        fx_touch("m", false);
                        fx_touch(dst, true);
                }
                break;
        case 4: /* flip the executable bit */
                if (!is_dir(rel)) {
                        fx_sh("test -L 'view/%s' || chmod %cx -- 'view/%s'", rel,
                              rand_r(seed) % 2 ? '+' : '-', rel);
                        fx_touch(rel, false);
                }
                break;
        case 5: /* symlink */
                snprintf(rel2, sizeof(rel2), "link-%u", (unsigned)rand_r(seed) % 50);
                fx_sh("ln -sfn -- 'target %u' 'view/%s'", (unsigned)rand_r(seed), rel2);
                fx_touch(rel2, false);
                break;
        case 6: /* file replaced by a directory, or the reverse */
                fx_sh("rm -rf -- 'view/%s'", rel);
                if (rand_r(seed) % 2) {
                        snprintf(rel2, sizeof(rel2), "%s/in", rel);
                        fx_write_str(rel2, "replaced\n");
                        fx_touch(rel, true);
                        fx_touch(rel2, false);
                } else {
                        fx_write_str(rel, "was something else\n");
                        fx_touch(rel, false);
                }
                break;
        default: /* modify in place: append or truncate */
                if (!is_dir(rel)) {
                        fx_sh("test -L 'view/%s' || { head -c %d /dev/urandom | base64 >> "
                              "'view/%s'; truncate -s %d 'view/%s'; }",
                              rel, rand_r(seed) % 200, rel, rand_r(seed) % 400, rel);
                        fx_touch(rel, false);
                }
        }
}

START_TEST(randomized_edits_round_trip_through_git_apply)
{
        unsigned seed = 1000 + (unsigned)_i;

        for (int i = 0; i < 40; i++)
                random_edit(&seed);
        fx_changes_write();
        print_to(true, REVIEW_PATCH, "patch");
        ck_assert_msg(fx_apply_and_compare("patch", false) == 0, "seed %u (changes list)",
                      1000 + (unsigned)_i);
        print_to(false, REVIEW_PATCH, "patch2");
        ck_assert_msg(fx_sh("cmp -s patch patch2") == 0, "seed %u: walk and list differ",
                      1000 + (unsigned)_i);
}
END_TEST

/* --- the source stays untouched ---------------------------------------------------- */

START_TEST(diff_writes_no_objects_into_the_source)
{
        char *before, *after;

        corner_edits();
        before = fx_sh_out("cd src/.git && find . -type f | sort | xargs sha256sum");
        print_to(true, REVIEW_PATCH, "patch");
        print_to(true, REVIEW_STAT, "stat");
        after = fx_sh_out("cd src/.git && find . -type f | sort | xargs sha256sum");
        ck_assert_str_eq(before, after);
        /* The new blob exists nowhere on disk in the source. */
        ck_assert_int_ne(fx_sh("printf 'spaced\\n' | git hash-object --stdin > h && "
                               "git -C src cat-file -e $(cat h) 2>/dev/null"),
                         0);
        free(before);
        free(after);
}
END_TEST

/* HEAD, refs, index, config, status, and a checksum of every file in .git. */
static void source_snapshot(const char *name)
{
        ck_assert_int_eq(fx_sh("cd src && find .git -type f | sort | xargs sha256sum > "
                               "../%s.files && { git rev-parse HEAD; git show-ref | grep -v "
                               "' refs/cloister/'; GIT_OPTIONAL_LOCKS=0 git status --porcelain; "
                               "} > ../%s.state",
                               name, name),
                         0);
}

START_TEST(export_commit_changes_nothing_but_refs_cloister)
{
        struct review_commit_options co = {.message = "Agent work", .author = "A U Thor <a@u.th>"};
        review *r;
        git_oid id;
        char hex[GIT_OID_HEXSZ + 1];

        corner_edits();
        source_snapshot("before");
        r = review_new(true, false);
        ck_assert_msg(review_commit(r, &co, &id) == 0, "%s", review_error(r));
        ck_assert_msg(review_ref_set(r, "ws1", &id) == 0, "%s", review_error(r));
        review_free(r);
        git_oid_tostr(hex, sizeof(hex), &id);
        source_snapshot("after");
        /* Same HEAD, other refs, status; every file that was in .git is unchanged. */
        ck_assert_int_eq(fx_sh("cmp before.state after.state && cd src && "
                               "sha256sum -c --quiet ../before.files"),
                         0);
        /* What was added: the ref, its reflog and objects only. */
        ck_assert_int_eq(fx_sh("cut -c67- before.files > before.names && cut -c67- after.files "
                               "| grep -v -x -F -f before.names | grep -v -e '^.git/objects/' "
                               "-e '^.git/refs/cloister/ws1$' -e '^.git/logs/refs/cloister/ws1$' "
                               "> added.other; test ! -s added.other"),
                         0);
        ck_assert_int_eq(
                fx_sh("cd src && test \"$(git rev-parse refs/cloister/ws1)\" = %s && "
                      "test \"$(git rev-parse refs/cloister/ws1^)\" = "
                      "\"$(git rev-parse HEAD)\" && "
                      "test \"$(git log -1 --format='%%an <%%ae>|%%s' refs/cloister/ws1)\" "
                      "= 'A U Thor <a@u.th>|Agent work' && git fsck --no-dangling 2>/dev/null",
                      hex),
                0);
        /* The commit's tree is the view, byte for byte. */
        ck_assert_int_eq(fx_sh("git clone -q src fresh && cd fresh && git checkout -q %s && "
                               "cd .. && rm -rf viewc freshc && cp -a view viewc && cp -a fresh "
                               "freshc && find viewc freshc -depth -type d -empty -delete; "
                               "diff -r --no-dereference -x .git viewc freshc",
                               hex),
                         0);
}
END_TEST

START_TEST(mbox_of_the_workspace_applies_with_git_am)
{
        struct review_commit_options co = {.message = "Subject line\n\nBody text.",
                                           .author = "M Box <m@box.org>"};
        review *r;
        git_oid id;
        char p[256];
        FILE *f;

        corner_edits();
        r = review_new(true, true);
        ck_assert_msg(review_commit(r, &co, &id) == 0, "%s", review_error(r));
        snprintf(p, sizeof(p), "%s/mbox", fx_dir);
        f = fopen(p, "w");
        ck_assert_int_eq(review_mbox(r, &id, 1, f), 0);
        fclose(f);
        review_free(r);
        ck_assert_int_eq(fx_apply_and_compare("mbox", true), 0);
        ck_assert_int_eq(fx_sh("test \"$(git -C fresh log -1 --format='%%an|%%s|%%b')\" = "
                               "'M Box|Subject line|Body text.'"),
                         0);
}
END_TEST

START_TEST(agent_commits_are_exported_with_authors_and_messages)
{
        review *r;
        git_oid *ids = NULL;
        size_t n = 0;
        char p[256];
        FILE *f;

        ck_assert_int_eq(fx_sh("cd view && printf 'first\\n' > c1 && git add c1 && "
                               "GIT_AUTHOR_NAME='Agent One' GIT_AUTHOR_EMAIL=one@agent "
                               "git commit -qm 'Add c1' && printf '\\0bin' > c2.bin && "
                               "git mv a.txt moved.txt && git add -A && "
                               "GIT_AUTHOR_NAME='Agent Two' GIT_AUTHOR_EMAIL=two@agent "
                               "git commit -qm 'Add c2' -m 'With a body.'"),
                         0);
        /* The agent's objects live only in its .git (alternates into the source). */
        ck_assert_int_ne(fx_sh("git -C src cat-file -e $(git -C view rev-parse HEAD) 2>/dev/null"),
                         0);
        r = review_new(false, false);
        ck_assert_msg(review_agent_commits(r, &ids, &n) == 0, "%s", review_error(r));
        ck_assert_uint_eq(n, 2);
        ck_assert_int_eq(review_ref_set(r, "series", &ids[1]), 0);
        snprintf(p, sizeof(p), "%s/series.mbox", fx_dir);
        f = fopen(p, "w");
        ck_assert_int_eq(review_mbox(r, ids, n, f), 0);
        fclose(f);
        review_free(r);
        free(ids);
        ck_assert_int_eq(fx_sh("test \"$(git -C src rev-parse refs/cloister/series)\" = "
                               "\"$(git -C view rev-parse HEAD)\" && "
                               "test \"$(git -C src log --format='%%an|%%s' -2 "
                               "refs/cloister/series | tr '\\n' ,)\" = "
                               "'Agent Two|Add c2,Agent One|Add c1,' && "
                               "git -C src fsck --no-dangling 2>/dev/null"),
                         0);
        ck_assert_int_eq(fx_sh("git clone -q src fresh && cd fresh && git am -q ../series.mbox && "
                               "test \"$(git log --format='%%an|%%s' -2 | tr '\\n' ,)\" = "
                               "'Agent Two|Add c2,Agent One|Add c1,' && "
                               "test \"$(git rev-parse HEAD^{tree})\" = "
                               "\"$(git -C ../view rev-parse HEAD^{tree})\""),
                         0);
}
END_TEST

START_TEST(agent_gitdir_symlinks_and_alternates_are_not_followed)
{
        review *r;
        git_oid *ids = NULL;
        size_t n = 0;

        /* A planted symlink among the objects and an alternate to a host path. */
        ck_assert_int_eq(fx_sh("mkdir -p host/objects && cd view && printf 'x\\n' > c && "
                               "git add c && git commit -qm c && "
                               "ln -s /etc .git/objects/evil && "
                               "echo \"$PWD/../host/objects\" >> .git/objects/info/alternates"),
                         0);
        r = review_new(false, true);
        ck_assert_msg(review_agent_commits(r, &ids, &n) == 0, "%s", review_error(r));
        ck_assert_uint_eq(n, 1);
        review_free(r);
        free(ids);
        /* in_memory: nothing was copied into the source. */
        ck_assert_int_ne(fx_sh("git -C src cat-file -e $(git -C view rev-parse HEAD) 2>/dev/null"),
                         0);
}
END_TEST

START_TEST(agent_commit_planting_a_dot_git_path_is_refused)
{
        review *r;
        git_oid *ids = NULL;
        size_t n = 0;

        /* git refuses to add such a path; plumbing makes the tree anyway. */
        ck_assert_int_eq(fx_sh("cd view && blob=$(printf 'evil' | git hash-object -w --stdin) && "
                               "sub=$(printf '100644 blob %%s\\thooks-post-checkout\\n' $blob "
                               "| git mktree --missing) && "
                               "top=$( (git ls-tree HEAD; printf '040000 tree %%s\\t.GIT\\n' "
                               "$sub) | git mktree) && c=$(git commit-tree $top -p HEAD -m evil) "
                               "&& git update-ref refs/heads/main $c"),
                         0);
        r = review_new(false, false);
        ck_assert_int_eq(review_agent_commits(r, &ids, &n), -EINVAL);
        ck_assert_ptr_nonnull(strstr(review_error(r), ".GIT"));
        review_free(r);
        ck_assert_int_eq(fx_sh("test -z \"$(git -C src for-each-ref refs/cloister)\""), 0);
}
END_TEST

/*
 * Another workspace exported X into the source; every workspace reads the
 * source's objects, so this agent's HEAD can name X. X is not the agent's.
 */
static char *foreign_commit_make(void)
{
        ck_assert_int_eq(
                fx_sh("cd src && t=$( (git ls-tree HEAD; printf '100644 blob %%s\\tother.txt\\n' "
                      "$(printf 'other\\n' | git hash-object -w --stdin)) | git mktree) && "
                      "x=$(git commit-tree $t -p HEAD -m 'Work of another workspace') && "
                      "git update-ref refs/cloister/other $x"),
                0);
        return fx_sh_out("git -C src rev-parse refs/cloister/other | tr -d '\\n'");
}

START_TEST(commit_exported_by_another_workspace_is_refused)
{
        _cleanup_free_ char *x = foreign_commit_make();
        _cleanup_free_ char *packs_before = fx_sh_out("ls src/.git/objects/pack | wc -l");
        _cleanup_free_ char *packs_after = NULL;
        git_oid *ids = NULL;
        size_t n = 0;
        review *r;

        ck_assert_int_eq(
                fx_sh("cd view && git cat-file -e %s && git update-ref refs/heads/main %s", x, x),
                0);
        r = review_new(false, false);
        ck_assert_int_eq(review_agent_commits(r, &ids, &n), -EPERM);
        ck_assert_ptr_nonnull(strstr(review_error(r), x));
        ck_assert_ptr_nonnull(strstr(review_error(r), "not in the workspace's own .git objects"));
        review_free(r);
        ck_assert_ptr_null(ids);
        /* Nothing was written into the source for it. */
        packs_after = fx_sh_out("ls src/.git/objects/pack | wc -l");
        ck_assert_str_eq(packs_after, packs_before);
}
END_TEST

START_TEST(agent_commit_on_top_of_a_foreign_one_is_refused)
{
        _cleanup_free_ char *x = foreign_commit_make();
        git_oid *ids = NULL;
        size_t n = 0;
        review *r;

        ck_assert_int_eq(fx_sh("cd view && git reset -q --hard %s && printf 'mine\\n' > mine && "
                               "git add mine && git commit -qm 'My own work'",
                               x),
                         0);
        r = review_new(false, true);
        ck_assert_int_eq(review_agent_commits(r, &ids, &n), -EPERM);
        ck_assert_ptr_nonnull(strstr(review_error(r), x));
        review_free(r);
        /* Rebuilt on the base alone, the agent's own commit exports. */
        ck_assert_int_eq(fx_sh("cd view && git reset -q --hard origin/main && printf 'mine\\n' > "
                               "mine && git add mine && git commit -qm 'My own work'"),
                         0);
        r = review_new(false, true);
        ck_assert_msg(review_agent_commits(r, &ids, &n) == 0, "%s", review_error(r));
        ck_assert_uint_eq(n, 1);
        review_free(r);
        free(ids);
}
END_TEST

START_TEST(no_agent_commits_is_reported)
{
        review *r = review_new(false, true);
        git_oid *ids = NULL;
        size_t n = 0;

        ck_assert_int_eq(review_agent_commits(r, &ids, &n), -ENOENT);
        ck_assert_ptr_nonnull(strstr(review_error(r), "no commits"));
        review_free(r);
}
END_TEST

START_TEST(symlinked_directory_in_the_changes_list_is_not_followed)
{
        /* The agent swaps a directory for a symlink to a host directory. */
        ck_assert_int_eq(fx_sh("rm -r view/dir && ln -s /etc view/dir"), 0);
        fx_touch("dir", false);
        fx_touch("dir/passwd", false);
        fx_changes_write();
        print_to(true, REVIEW_PATCH, "patch");
        ck_assert_int_eq(fx_sh("! grep -q root: patch && grep -q '^+/etc' patch"), 0);
        ck_assert_int_eq(fx_apply_and_compare("patch", false), 0);
}
END_TEST

START_TEST(home_changes_are_listed_with_sizes_and_kept_out_of_the_patch)
{
        struct review_home_change *c = NULL;
        size_t n = 0;
        review *r;
        struct review_options o;

        ck_assert_int_eq(fx_sh("mkdir -p home && printf 'secret-token' > home/.netrc && "
                               "printf '{\"path\":\"/home/agent/.netrc\",\"type\":\"file\"}\\n"
                               "{\"path\":\"/home/agent/gone\",\"type\":\"deleted\"}\\n"
                               "{\"path\":\"/workspace/a.txt\",\"type\":\"file\"}\\n' > changes && "
                               "printf 'changed\\n' > view/a.txt"),
                         0);
        o = (struct review_options){.source = src,
                                    .rev = "HEAD",
                                    .view = view,
                                    .changes = changes,
                                    .repo_prefix = "/workspace",
                                    .home_prefix = "/home/agent",
                                    .in_memory = true};
        char hv[256];
        snprintf(hv, sizeof(hv), "%s/home", fx_dir);
        o.home_view = hv;
        ck_assert_int_eq(review_open(&o, &r, NULL), 0);
        ck_assert_int_eq(review_home_changes(r, &c, &n), 0);
        ck_assert_uint_eq(n, 2);
        ck_assert_str_eq(c[0].path, "/home/agent/.netrc");
        ck_assert_int_eq(c[0].type, 'f');
        ck_assert_uint_eq(c[0].size, 12);
        ck_assert_int_eq(c[1].type, 'D');
        review_home_changes_free(c, n);
        char p[256];
        snprintf(p, sizeof(p), "%s/patch", fx_dir);
        FILE *f = fopen(p, "w");
        ck_assert_int_eq(review_print(r, REVIEW_PATCH, f), 0);
        fclose(f);
        review_free(r);
        ck_assert_int_eq(fx_sh("grep -q '^+changed' patch && ! grep -q secret patch"), 0);
}
END_TEST

START_TEST(home_change_with_a_non_utf8_name_is_listed_by_its_real_name)
{
        struct review_home_change *c = NULL;
        size_t n = 0;
        review *r;
        char hv[256], st[256];

        /* No changes list can be read: the home paths come from the journal. */
        ck_assert_int_eq(
                fx_sh("mkdir -p home state && printf 'secret-token' > home/$(printf '\\377\\376') "
                      "&& "
                      "printf 'not json\\n' > changes && "
                      "printf 'changed\\n' > view/a.txt && "
                      "printf '%%s\\n' "
                      "'{\"time\":\"2026-01-01T10:00:00.000000Z\",\"op\":\"create\","
                      "\"path\":\"/home/agent/??\",\"path_hex\":\"2f686f6d652f6167656e742ffffe\","
                      "\"result\":0}' > state/journal.jsonl"),
                0);
        snprintf(hv, sizeof(hv), "%s/home", fx_dir);
        snprintf(st, sizeof(st), "%s/state", fx_dir);
        struct review_options o = {.source = src,
                                   .rev = "HEAD",
                                   .view = view,
                                   .changes = changes,
                                   .repo_prefix = "/workspace",
                                   .home_prefix = "/home/agent",
                                   .home_view = hv,
                                   .state = st,
                                   .in_memory = true};
        ck_assert_int_eq(review_open(&o, &r, NULL), 0);
        ck_assert_msg(review_home_changes(r, &c, &n) == 0, "%s", review_error(r));
        ck_assert_uint_eq(n, 1);
        ck_assert_str_eq(c[0].path, "/home/agent/\xff\xfe");
        ck_assert_int_eq(c[0].type, 'f'); /* not taken for deleted under a lossy name */
        ck_assert_uint_eq(c[0].size, 12);
        review_home_changes_free(c, n);
        review_free(r);
}
END_TEST

START_TEST(stat_and_name_status_agree_with_git)
{
        char *ours, *theirs;

        corner_edits();
        print_to(true, REVIEW_NAME_STATUS, "ns");
        print_to(true, REVIEW_STAT, "stat");
        /* git's own view of the same change, from a commit of the view. */
        ck_assert_int_eq(fx_sh("cd view && git add -A && git commit -qm w"), 0);
        /* Byte for byte what git prints, quoting of the unicode name included. */
        theirs = fx_sh_out("cd view && git diff -M --name-status HEAD^ HEAD");
        ours = fx_sh_out("cat ns");
        ck_assert_str_eq(ours, theirs);
        free(ours);
        free(theirs);
        ck_assert_int_eq(fx_sh("grep -q 'files changed' stat"), 0);
}
END_TEST

START_TEST(stat_quotes_names_that_could_forge_lines_or_drive_a_terminal)
{
        fx_write_str("e\033]0;owned\007x", "x\n");
        fx_write_str("nl\n 9 files changed", "y\n");
        print_to(false, REVIEW_STAT, "stat");
        /* One line per file plus the summary; no ESC byte; names as git quotes them. */
        ck_assert_int_eq(fx_sh("[ $(wc -l < stat) -eq 3 ] && ! grep -q \"$(printf '\\033')\" stat"),
                         0);
        ck_assert_int_eq(fx_sh("grep -qxF ' \"e\\033]0;owned\\ax\" | 1 +' stat && "
                               "grep -qxF ' \"nl\\n 9 files changed\" | 1 +' stat && "
                               "grep -qxF ' 2 files changed, 2 insertions(+)' stat"),
                         0);
}
END_TEST

/* No byte of fx_dir/NAME that a terminal acts on: C0 but LF and TAB, DEL, C1, bidi controls. */
static void assert_terminal_safe(const char *name)
{
        char p[256], *buf = NULL;
        size_t n = 0;
        FILE *f;

        snprintf(p, sizeof(p), "%s/%s", fx_dir, name);
        f = fopen(p, "re");
        ck_assert_ptr_nonnull(f);
        buf = calloc(1, 1 << 20);
        ck_assert_ptr_nonnull(buf);
        n = fread(buf, 1, (1 << 20) - 1, f);
        fclose(f);
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char)buf[i];
                ck_assert_msg((c >= 0x20 && c != 0x7f && c != 0xff) || c == '\n' || c == '\t',
                              "byte 0x%02x at %zu of %s", c, i, name);
                ck_assert_msg(!(c == 0xe2 && i + 2 < n && (unsigned char)buf[i + 1] == 0x80 &&
                                (unsigned char)buf[i + 2] == 0xae),
                              "U+202E at %zu of %s", i, name);
                ck_assert_msg(!(c == 0xc2 && i + 1 < n && (unsigned char)buf[i + 1] >= 0x80 &&
                                (unsigned char)buf[i + 1] <= 0x9f),
                              "C1 control at %zu of %s", i, name);
        }
        free(buf);
}

START_TEST(mbox_quotes_names_in_the_diffstat_and_create_mode_lines)
{
        struct review_commit_options co = {.message = "Names", .author = "M Box <m@box.org>"};
        review *r;
        git_oid id;
        char p[256];
        FILE *f;

        fx_write_str("e\033]0;owned\007x", "x\n"), fx_touch("e\033]0;owned\007x", false);
        fx_write_str("cr\rhidden", "x\n"), fx_touch("cr\rhidden", false);
        fx_write_str("nl\n 9 files changed", "x\n"), fx_touch("nl\n 9 files changed", false);
        fx_write_str("bin\001\377name", "x\n"), fx_touch("bin\001\377name", false);
        fx_write_str("invoice\342\200\256fdp.exe", "x\n"),
                fx_touch("invoice\342\200\256fdp.exe", false);
        fx_changes_write();
        r = review_new(true, true);
        ck_assert_msg(review_commit(r, &co, &id) == 0, "%s", review_error(r));
        snprintf(p, sizeof(p), "%s/names.mbox", fx_dir);
        f = fopen(p, "w");
        ck_assert_int_eq(review_mbox(r, &id, 1, f), 0);
        fclose(f);
        review_free(r);
        assert_terminal_safe("names.mbox");
        ck_assert_int_eq(
                fx_sh("grep -qF ' \"e\\033]0;owned\\ax\" | 1 +' names.mbox && "
                      "grep -qF ' \"cr\\rhidden\" | 1 +' names.mbox && "
                      "grep -qF ' \"nl\\n 9 files changed\" | 1 +' names.mbox && "
                      "grep -qxF ' 5 files changed, 5 insertions(+)' names.mbox && "
                      "grep -qxF ' create mode 100644 \"bin\\001\\377name\"' names.mbox && "
                      "grep -qxF ' create mode 100644 \"invoice\\342\\200\\256fdp.exe\"' "
                      "names.mbox && "
                      "[ $(grep -c '^ create mode ' names.mbox) -eq 5 ]"),
                0);
        /* Still what git am takes: the same files, names and all. */
        ck_assert_int_eq(fx_apply_and_compare("names.mbox", true), 0);
}
END_TEST

START_TEST(mbox_quotes_agent_subjects_authors_and_messages)
{
        review *r;
        git_oid *ids = NULL;
        size_t n = 0;
        char p[256];
        FILE *f;

        ck_assert_int_eq(
                fx_sh("cd view && printf 'x\\n' > c1 && git add c1 && "
                      "GIT_AUTHOR_NAME=\"$(printf 'Ev\\033]0;x\\007il')\" "
                      "GIT_AUTHOR_EMAIL=\"$(printf 'ev\\r@agent')\" "
                      "git commit -q -m \"$(printf 'evil \\033[2J \\342\\200\\256gnp.exe')\" "
                      "-m \"$(printf 'body \\033]52;c;Y3VybA==\\007 line')\" && "
                      "printf 'y\\n' > c2 && git add c2 && "
                      "GIT_AUTHOR_NAME='Jürgen Čapek' GIT_AUTHOR_EMAIL=j@agent "
                      "git commit -qm 'Fix für Umlaute'"),
                0);
        r = review_new(false, true);
        ck_assert_msg(review_agent_commits(r, &ids, &n) == 0, "%s", review_error(r));
        ck_assert_uint_eq(n, 2);
        snprintf(p, sizeof(p), "%s/agent.mbox", fx_dir);
        f = fopen(p, "w");
        ck_assert_int_eq(review_mbox(r, ids, n, f), 0);
        fclose(f);
        review_free(r);
        free(ids);
        assert_terminal_safe("agent.mbox");
        ck_assert_int_eq(
                fx_sh("grep -qxF 'Subject: [PATCH 1/2] \"evil \\033[2J \\342\\200\\256gnp.exe\"' "
                      "agent.mbox && "
                      "grep -qxF 'From: \"Ev\\033]0;x\\ail\" <\"ev\\r@agent\">' agent.mbox && "
                      "grep -qxF '\"body \\033]52;c;Y3VybA==\\a line\"' agent.mbox && "
                      "grep -qxF 'Subject: [PATCH 2/2] Fix für Umlaute' agent.mbox && "
                      "grep -qxF 'From: Jürgen Čapek <j@agent>' agent.mbox"),
                0);
        /* git am takes the series; the printable UTF-8 one keeps its subject and author. */
        ck_assert_int_eq(fx_sh("git clone -q src fresh && cd fresh && git am -q ../agent.mbox && "
                               "test \"$(git log -1 --format='%%an|%%s')\" = 'Jürgen Čapek|Fix für "
                               "Umlaute' && test \"$(git rev-parse HEAD^{tree})\" = "
                               "\"$(git -C ../view rev-parse HEAD^{tree})\""),
                         0);
}
END_TEST

START_TEST(errors_naming_agent_paths_hold_no_control_characters)
{
        review *r;
        git_oid *ids = NULL;
        size_t n = 0;

        /* A commit planting .GIT below a directory whose name drives the terminal. */
        ck_assert_int_eq(
                fx_sh("cd view && blob=$(printf 'evil' | git hash-object -w --stdin) && "
                      "hooks=$(printf '100644 blob %%s\\thook\\n' $blob | git mktree) && "
                      "dotgit=$(printf '040000 tree %%s\\t.GIT\\n' $hooks | git mktree) && "
                      "top=$( (git ls-tree HEAD; printf '040000 tree %%s\\tx\\033]0;y\\007\\n' "
                      "$dotgit) | git mktree) && c=$(git commit-tree $top -p HEAD -m evil) "
                      "&& git update-ref refs/heads/main $c"),
                0);
        r = review_new(false, true);
        ck_assert_int_eq(review_agent_commits(r, &ids, &n), -EINVAL);
        ck_assert_ptr_null(strchr(review_error(r), '\033'));
        ck_assert_ptr_null(strchr(review_error(r), '\007'));
        ck_assert_msg(strstr(review_error(r), "'x\\033]0;y\\a/.GIT/hook'"), "%s", review_error(r));
        review_free(r);
}
END_TEST

/* Discard must leave the view equal to a clean checkout of the base. */
static void discard_and_compare(void)
{
        review *r = review_new(true, true);
        ck_assert_msg(review_discard(r) == 0, "%s", review_error(r));
        review_free(r);
        ck_assert_int_eq(fx_sh("git clone -q src fresh && printf '' > empty.patch"), 0);
        ck_assert_int_eq(fx_sh("rm -rf viewc freshc && cp -a view viewc && cp -a fresh freshc && "
                               "find viewc freshc -depth -type d -empty -delete; "
                               "diff -r --no-dereference -x .git viewc freshc"),
                         0);
}

START_TEST(discard_resets_corner_cases_to_the_base)
{
        corner_edits();
        ck_assert_int_eq(fx_sh("mkfifo view/a-fifo && mkdir view/empty-dir"), 0);
        fx_touch("a-fifo", false);
        fx_touch("empty-dir", false);
        fx_changes_write();
        discard_and_compare();
        ck_assert_int_eq(fx_sh("test ! -e view/a-fifo && test ! -e view/empty-dir && "
                               "test -x view/run.sh && test ! -x view/mode.txt && "
                               "test \"$(readlink view/link)\" = a.txt"),
                         0);
        /* The agent's .git is left alone. */
        ck_assert_int_eq(fx_sh("test -f view/.git/agent-note"), 0);
}
END_TEST

START_TEST(discard_with_an_unreadable_changes_list_resets_all_git_sees)
{
        review *r;

        corner_edits();
        /* What the fs gives when it cannot list a name: garbage or an error. */
        ck_assert_int_eq(fx_sh("printf 'not json\\n' > changes"), 0);
        r = review_new(true, true);
        ck_assert_msg(review_discard(r) == 0, "%s", review_error(r));
        ck_assert_ptr_nonnull(review_warning(r));
        ck_assert_ptr_nonnull(strstr(review_warning(r), "left in place"));
        review_free(r);
        /* Nothing left half-way: a second discard finds the view at the base. */
        discard_and_compare();
}
END_TEST

START_TEST(discard_resets_randomized_edits_to_the_base)
{
        unsigned seed = 2000 + (unsigned)_i;

        for (int i = 0; i < 40; i++)
                random_edit(&seed);
        fx_changes_write();
        discard_and_compare();
}
END_TEST

START_TEST(discard_removes_agent_symlinks_without_following_them)
{
        /* The agent swaps a directory for a symlink to a host directory with a canary. */
        ck_assert_int_eq(fx_sh("mkdir canary && printf keep > canary/dir-x && "
                               "rm -r view/dir && ln -s ../canary view/dir"),
                         0);
        fx_touch("dir", false);
        fx_changes_write();
        discard_and_compare();
        ck_assert_int_eq(fx_sh("test \"$(cat canary/dir-x)\" = keep && test ! -L view/dir && "
                               "test -f view/dir/x"),
                         0);
}
END_TEST

START_TEST(export_of_an_unchanged_workspace_is_refused)
{
        review *r = review_new(false, false);
        git_oid id;

        ck_assert_int_eq(review_commit(r, NULL, &id), -ENODATA);
        ck_assert_ptr_nonnull(strstr(review_error(r), "no changes"));
        review_free(r);
        ck_assert_int_eq(fx_sh("test -z \"$(git -C src for-each-ref refs/cloister)\""), 0);
}
END_TEST

START_TEST(bad_author_is_a_clear_error)
{
        struct review_commit_options co = {.author = "no email here"};
        review *r;
        git_oid id;

        fx_write_str("a.txt", "changed\n");
        r = review_new(false, false);
        ck_assert_int_eq(review_commit(r, &co, &id), -EINVAL);
        ck_assert_str_eq(review_error(r), "author 'no email here': expected 'Name <email>'");
        review_free(r);
}
END_TEST

START_TEST(bad_base_revision_is_a_clear_error)
{
        struct review_options o = {
                .source = src, .rev = "no-such-rev", .view = view, .in_memory = true};
        review *r = NULL;
        char *err = NULL;

        ck_assert_int_eq(review_open(&o, &r, &err), -ENOENT);
        ck_assert_ptr_null(r);
        ck_assert_ptr_nonnull(strstr(err, "no-such-rev"));
        free(err);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("review");
        TCase *tc = tcase_create("review");
        SRunner *sr;
        int failed;

        tcase_add_checked_fixture(tc, setup, fx_teardown);
        tcase_set_timeout(tc, 300);
        tcase_add_test(tc, corner_cases_round_trip_through_git_apply_walking_the_view);
        tcase_add_test(tc, corner_cases_round_trip_through_git_apply_from_the_changes_list);
        tcase_add_test(tc, odd_names_round_trip_through_git_apply);
        tcase_add_test(tc, unreadable_changes_list_falls_back_to_walking_the_view);
        tcase_add_loop_test(tc, randomized_edits_round_trip_through_git_apply, 0, 6);
        tcase_add_test(tc, diff_writes_no_objects_into_the_source);
        tcase_add_test(tc, export_commit_changes_nothing_but_refs_cloister);
        tcase_add_test(tc, mbox_of_the_workspace_applies_with_git_am);
        tcase_add_test(tc, commit_exported_by_another_workspace_is_refused);
        tcase_add_test(tc, agent_commit_on_top_of_a_foreign_one_is_refused);
        tcase_add_test(tc, mbox_quotes_names_in_the_diffstat_and_create_mode_lines);
        tcase_add_test(tc, mbox_quotes_agent_subjects_authors_and_messages);
        tcase_add_test(tc, errors_naming_agent_paths_hold_no_control_characters);
        tcase_add_test(tc, agent_commits_are_exported_with_authors_and_messages);
        tcase_add_test(tc, agent_gitdir_symlinks_and_alternates_are_not_followed);
        tcase_add_test(tc, no_agent_commits_is_reported);
        tcase_add_test(tc, agent_commit_planting_a_dot_git_path_is_refused);
        tcase_add_test(tc, symlinked_directory_in_the_changes_list_is_not_followed);
        tcase_add_test(tc, home_changes_are_listed_with_sizes_and_kept_out_of_the_patch);
        tcase_add_test(tc, stat_quotes_names_that_could_forge_lines_or_drive_a_terminal);
        tcase_add_test(tc, discard_with_an_unreadable_changes_list_resets_all_git_sees);
        tcase_add_test(tc, long_escaped_path_in_the_changes_list_is_used_not_skipped);
        tcase_add_test(tc, home_change_with_a_non_utf8_name_is_listed_by_its_real_name);
        tcase_add_test(tc, non_utf8_name_in_the_changes_list_is_read_from_path_hex);
        tcase_add_test(tc, stat_and_name_status_agree_with_git);
        tcase_add_test(tc, discard_resets_corner_cases_to_the_base);
        tcase_add_loop_test(tc, discard_resets_randomized_edits_to_the_base, 0, 4);
        tcase_add_test(tc, discard_removes_agent_symlinks_without_following_them);
        tcase_add_test(tc, export_of_an_unchanged_workspace_is_refused);
        tcase_add_test(tc, bad_author_is_a_clear_error);
        tcase_add_test(tc, bad_base_revision_is_a_clear_error);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? 1 : 0;
}
