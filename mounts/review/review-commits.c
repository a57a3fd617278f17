/* SPDX-License-Identifier: MIT */
/*
 * review-commits.c: export the commits the agent made inside the
 * workspace's own .git.
 *
 * Trust boundary: the agent controls everything in that .git: its config,
 * its alternates (which libgit2 would follow to any host path), symlinks
 * planted among the objects. So it is never opened as a repository. Instead
 * its objects, HEAD, packed-refs and refs/ are copied, regular files only,
 * read with O_NOFOLLOW from directory fds and bounded in count and bytes,
 * into a private scratch repository that we create ourselves, whose only
 * alternate is the source's object directory. The series is read there,
 * and its objects go to the source as one pack (git_packbuilder).
 *
 * Provenance: every workspace over a source reads all of its objects
 * (/.cloister/objects), other workspaces' exports and other branches
 * included, so a HEAD can name a commit the agent never made. A commit is
 * exported only if the workspace's own objects hold it (looked up without
 * the alternate) and it descends from the base.
 */
#include <fcntl.h>
#include <ftw.h>
#include <git2/sys/odb_backend.h>
#include <limits.h>

#include "review-private.h"

#define REVIEW_MAX_SERIES       10000u
#define REVIEW_MAX_GITDIR_FILES 200000u

struct copy_budget {
        uint64_t bytes;
        size_t files;
};

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
        (void)st;
        (void)flag;
        (void)ftw;
        remove(p);
        return 0;
}

void review_scratch_remove(review *r)
{
        if (!r->scratch)
                return;
        nftw(r->scratch, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        free(r->scratch);
        r->scratch = NULL;
}

static int file_copy(review *r, int sdir, int ddir, const char *name, struct copy_budget *b)
{
        _cleanup_close_ int in = -1, out = -1;
        struct stat st;
        char buf[65536];
        ssize_t n;

        if (++b->files > REVIEW_MAX_GITDIR_FILES)
                return review_fail(r, -EMFILE, "the workspace's .git has more than %u files",
                                   REVIEW_MAX_GITDIR_FILES);
        in = openat(sdir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (in < 0)
                return errno == ELOOP ? 0
                                      : review_fail(r, negative_errno(), ".git: '%s': %m", name);
        if (fstat(in, &st) < 0)
                return review_fail(r, negative_errno(), ".git: '%s': %m", name);
        if (!S_ISREG(st.st_mode))
                return 0;
        out = openat(ddir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (out < 0)
                return review_fail(r, negative_errno(), "scratch copy of '%s': %m", name);
        while ((n = read(in, buf, sizeof(buf))) != 0) {
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return review_fail(r, negative_errno(), ".git: reading '%s': %m", name);
                if ((uint64_t)n > b->bytes)
                        return review_fail(r, -EFBIG,
                                           "the workspace's .git holds more than %llu bytes",
                                           (unsigned long long)REVIEW_MAX_GITDIR_SIZE);
                b->bytes -= (uint64_t)n;
                if (write(out, buf, (size_t)n) != n)
                        return review_fail(r, negative_errno(), "scratch copy of '%s': %m", name);
        }
        return 0;
}

/* Copy regular files and directories (never symlinks) from sdir into ddir. */
static int tree_copy(review *r, int sdir, int ddir, unsigned depth, bool objects_top,
                     struct copy_budget *b)
{
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int fd;

        if (depth > 32)
                return review_fail(r, -ELOOP, "the workspace's .git is nested too deep");
        fd = openat(sdir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || !(d = fdopendir(fd))) {
                safe_close(fd);
                return review_fail(r, negative_errno(), "listing the workspace's .git: %m");
        }
        while ((errno = 0, de = readdir(d))) {
                struct stat st;
                int k;

                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                /* objects/info holds alternates: ours replace the agent's. */
                if (objects_top && streq(de->d_name, "info"))
                        continue;
                if (fstatat(sdir, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (S_ISREG(st.st_mode)) {
                        k = file_copy(r, sdir, ddir, de->d_name, b);
                } else if (S_ISDIR(st.st_mode)) {
                        _cleanup_close_ int s2 = -1, d2 = -1;
                        if (mkdirat(ddir, de->d_name, 0755) < 0 && errno != EEXIST)
                                return review_fail(r, negative_errno(), "scratch dir: %m");
                        s2 = openat(sdir, de->d_name,
                                    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        d2 = openat(ddir, de->d_name,
                                    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (s2 < 0 || d2 < 0)
                                return review_fail(r, -EIO, "copying '%s' of .git", de->d_name);
                        k = tree_copy(r, s2, d2, depth + 1, false, b);
                } else {
                        k = 0;
                }
                if (k < 0)
                        return k;
        }
        return 0;
}

static int scratch_create(review *r)
{
        _cleanup_close_ int gitfd = -1, dstfd = -1, sub_s = -1, sub_d = -1;
        struct copy_budget b = {.bytes = REVIEW_MAX_GITDIR_SIZE};
        _cleanup_free_ char *alt = NULL, *dir = NULL;
        const char *tmp = getenv("TMPDIR");
        git_repository *init = NULL;
        FILE *f;
        int g, k;

        gitfd = openat(r->viewfd, ".git", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (gitfd < 0)
                return review_fail(r, errno == ENOENT ? -ENOENT : negative_errno(),
                                   "the workspace has no .git directory: %m");
        /* HEAD names the agent's branch; only a regular file is read (a
         * link in the agent's .git is never followed), so say so plainly. */
        struct stat hst;
        if (fstatat(gitfd, "HEAD", &hst, AT_SYMLINK_NOFOLLOW) < 0)
                return review_fail(r, errno == ENOENT ? -ENOENT : negative_errno(),
                                   "the workspace's .git/HEAD is missing (%m): the agent's "
                                   "commits can't be found; `export --commit` takes the files "
                                   "instead");
        if (S_ISLNK(hst.st_mode))
                return review_fail(r, -EINVAL,
                                   "the workspace's .git/HEAD is a symlink, and cloister never "
                                   "follows the agent's links: make it a regular file again "
                                   "(`git symbolic-ref HEAD refs/heads/BRANCH` in the "
                                   "workspace), or export the files with --commit");
        if (!S_ISREG(hst.st_mode))
                return review_fail(r, -EINVAL,
                                   "the workspace's .git/HEAD is not a regular file: make it "
                                   "one again (`git symbolic-ref HEAD refs/heads/BRANCH` in the "
                                   "workspace), or export the files with --commit");
        if (asprintf(&dir, "%s/cloister-review-XXXXXX", tmp && *tmp == '/' ? tmp : "/tmp") < 0)
                return review_fail(r, -ENOMEM, "out of memory");
        if (!mkdtemp(dir))
                return review_fail(r, negative_errno(), "scratch directory: %m");
        r->scratch = TAKE_PTR(dir);
        g = git_repository_init(&init, r->scratch, 1);
        git_repository_free(init);
        if (g < 0)
                return review_git_fail(r, g, "creating the scratch repository");
        dstfd = open(r->scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dstfd < 0)
                return review_fail(r, negative_errno(), "scratch directory: %m");
        /* init wrote its own HEAD; the agent's replaces it. */
        (void)unlinkat(dstfd, "HEAD", 0);
        k = file_copy(r, gitfd, dstfd, "HEAD", &b);
        if (k == 0 && faccessat(gitfd, "packed-refs", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
                k = file_copy(r, gitfd, dstfd, "packed-refs", &b);
        if (k < 0)
                return k;
        for (int i = 0; i < 2; i++) {
                const char *sub = i == 0 ? "refs" : "objects";
                sub_s = openat(gitfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                sub_d = openat(dstfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub_s >= 0 && sub_d >= 0)
                        k = tree_copy(r, sub_s, sub_d, 0, i == 1, &b);
                sub_s = safe_close(sub_s);
                sub_d = safe_close(sub_d);
                if (k < 0)
                        return k;
        }
        if (asprintf(&alt, "%s/objects/info/alternates", r->scratch) < 0)
                return review_fail(r, -ENOMEM, "out of memory");
        f = fopen(alt, "we");
        if (!f)
                return review_fail(r, negative_errno(), "'%s': %m", alt);
        fprintf(f, "%sobjects\n", git_repository_commondir(r->repo));
        if (fclose(f) != 0)
                return review_fail(r, negative_errno(), "'%s': %m", alt);
        g = git_repository_open_ext(&r->scratch_repo, r->scratch, GIT_REPOSITORY_OPEN_NO_SEARCH,
                                    NULL);
        if (g < 0)
                return review_git_fail(r, g, "opening the scratch repository");
        return 0;
}

/*
 * The agent wrote these trees itself, not through our tree builder: refuse
 * a path git itself would refuse to check out (a ".git" component in any
 * case, ".", ".."), which could plant hooks or config in a reviewer's clone.
 */
static int commit_paths_check(review *r, git_commit *c)
{
        git_diff_options dopts = GIT_DIFF_OPTIONS_INIT;
        git_commit *parent = NULL;
        git_tree *t = NULL, *pt = NULL;
        git_diff *diff = NULL;
        char hex[GIT_OID_HEXSZ + 1];
        int g, k = 0;

        git_oid_tostr(hex, sizeof(hex), git_commit_id(c));
        g = git_commit_parent(&parent, c, 0);
        if (g == 0)
                g = git_commit_tree(&t, c);
        if (g == 0)
                g = git_commit_tree(&pt, parent);
        if (g == 0)
                g = git_diff_tree_to_tree(&diff, r->scratch_repo, pt, t, &dopts);
        if (g < 0) {
                k = review_git_fail(r, g, "reading the agent's commit %s", hex);
                goto out;
        }
        for (size_t i = 0; i < git_diff_num_deltas(diff); i++) {
                const git_diff_delta *d = git_diff_get_delta(diff, i);
                if (d->status != GIT_DELTA_DELETED && !review_path_ok(d->new_file.path)) {
                        k = review_fail(r, -EINVAL,
                                        "the agent's commit %s adds the path '%s', which git "
                                        "refuses to check out; not exported",
                                        hex, d->new_file.path);
                        goto out;
                }
        }
out:
        git_diff_free(diff);
        git_tree_free(t);
        git_tree_free(pt);
        git_commit_free(parent);
        return k;
}

/* The scratch copy's own objects, loose and packed, without its alternate. */
static int own_odb_open(review *r, git_odb **ret)
{
        _cleanup_free_ char *dir = NULL;
        git_odb_backend *loose = NULL, *packed = NULL;
        git_odb *odb = NULL;
        int g;

        if (asprintf(&dir, "%s/objects", r->scratch) < 0)
                return review_fail(r, -ENOMEM, "out of memory");
        g = git_odb_new(&odb);
        if (g == 0)
                g = git_odb_backend_loose(&loose, dir, -1, 0, 0, 0);
        if (g == 0) {
                g = git_odb_add_backend(odb, loose, 2);
                if (g < 0)
                        loose->free(loose);
        }
        if (g == 0)
                g = git_odb_backend_pack(&packed, dir);
        if (g == 0) {
                g = git_odb_add_backend(odb, packed, 1);
                if (g < 0)
                        packed->free(packed);
        }
        if (g < 0) {
                git_odb_free(odb);
                return review_git_fail(r, g, "reading the workspace's own objects");
        }
        *ret = odb;
        return 0;
}

/* The agent made c in this workspace: its own objects hold it, and it descends from the base. */
static int commit_is_own(review *r, git_odb *own, const git_oid *id)
{
        char hex[GIT_OID_HEXSZ + 1];
        int g;

        git_oid_tostr(hex, sizeof(hex), id);
        if (!git_odb_exists(own, id))
                return review_fail(r, -EPERM,
                                   "commit %s is not in the workspace's own .git objects: it comes "
                                   "from the source repository's objects, which every workspace "
                                   "can read (another workspace's export, another branch); only "
                                   "commits made in this workspace are exported",
                                   hex);
        g = git_graph_descendant_of(r->scratch_repo, id, git_commit_id(r->base));
        if (g < 0)
                return review_git_fail(r, g, "the agent's commit %s", hex);
        if (g == 0)
                return review_fail(r, -EINVAL,
                                   "commit %s does not descend from the base revision %s", hex,
                                   r->o.rev);
        return 0;
}

int review_agent_commits(review *r, git_oid **ret, size_t *ret_n)
{
        git_revwalk *walk = NULL;
        git_packbuilder *pb = NULL;
        git_odb *own = NULL;
        _cleanup_free_ git_oid *v = NULL;
        _cleanup_free_ char *packdir = NULL;
        const git_oid *base = git_commit_id(r->base);
        git_oid head, id;
        size_t n = 0;
        int g, k = 0;

        if (!r->scratch_repo) {
                k = scratch_create(r);
                if (k < 0)
                        return k;
        }
        g = git_reference_name_to_id(&head, r->scratch_repo, "HEAD");
        if (g < 0)
                return review_git_fail(r, g, "the workspace's .git: HEAD");
        if (git_oid_equal(&head, base))
                return review_fail(r, -ENOENT, "the agent made no commits on top of the base");
        g = git_graph_descendant_of(r->scratch_repo, &head, base);
        if (g < 0)
                return review_git_fail(r, g, "the workspace's .git: HEAD");
        if (g == 0)
                return review_fail(r, -EINVAL,
                                   "the workspace's HEAD does not descend from the "
                                   "base revision %s",
                                   r->o.rev);
        k = own_odb_open(r, &own);
        if (k < 0)
                return k;
        g = git_revwalk_new(&walk, r->scratch_repo);
        if (g == 0)
                g = git_revwalk_sorting(walk, GIT_SORT_TOPOLOGICAL | GIT_SORT_REVERSE);
        if (g == 0)
                g = git_revwalk_push(walk, &head);
        if (g == 0)
                g = git_revwalk_hide(walk, base);
        if (g < 0) {
                k = review_git_fail(r, g, "walking the agent's commits");
                goto out;
        }
        v = calloc(REVIEW_MAX_SERIES, sizeof(git_oid));
        if (!v) {
                k = review_fail(r, -ENOMEM, "out of memory");
                goto out;
        }
        while ((g = git_revwalk_next(&id, walk)) == 0) {
                git_commit *c = NULL;
                unsigned parents;
                if (n == REVIEW_MAX_SERIES) {
                        k = review_fail(r, -EFBIG, "more than %u commits", REVIEW_MAX_SERIES);
                        goto out;
                }
                k = commit_is_own(r, own, &id);
                if (k < 0)
                        goto out;
                g = git_commit_lookup(&c, r->scratch_repo, &id);
                if (g < 0) {
                        k = review_git_fail(r, g, "the agent's commit");
                        goto out;
                }
                parents = git_commit_parentcount(c);
                k = parents == 1 ? commit_paths_check(r, c) : 0;
                git_commit_free(c);
                if (k < 0)
                        goto out;
                if (parents != 1) {
                        char s[GIT_OID_HEXSZ + 1];
                        k = review_fail(r, -EINVAL,
                                        "commit %s is a merge; only a linear series "
                                        "can be exported",
                                        git_oid_tostr(s, sizeof(s), &id));
                        goto out;
                }
                v[n++] = id;
        }
        if (g != GIT_ITEROVER) {
                k = review_git_fail(r, g, "walking the agent's commits");
                goto out;
        }
        if (!r->o.in_memory) {
                /* One pack with what the series adds; the base's objects are there already. */
                git_revwalk_reset(walk);
                g = git_revwalk_push(walk, &head);
                if (g == 0)
                        g = git_revwalk_hide(walk, base);
                if (g == 0)
                        g = git_packbuilder_new(&pb, r->scratch_repo);
                if (g == 0)
                        g = git_packbuilder_insert_walk(pb, walk);
                if (g == 0 &&
                    asprintf(&packdir, "%sobjects/pack", git_repository_commondir(r->repo)) < 0) {
                        k = review_fail(r, -ENOMEM, "out of memory");
                        goto out;
                }
                if (g == 0)
                        g = git_packbuilder_write(pb, packdir, 0, NULL, NULL);
                if (g < 0) {
                        k = review_git_fail(r, g, "copying the agent's objects into the source");
                        goto out;
                }
                git_odb_refresh(r->odb);
        }
        *ret = TAKE_PTR(v);
        *ret_n = n;
out:
        git_packbuilder_free(pb);
        git_revwalk_free(walk);
        git_odb_free(own);
        return k;
}
