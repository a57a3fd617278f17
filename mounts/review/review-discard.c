/* SPDX-License-Identifier: MIT */
/*
 * review-discard.c: reset the workspace's files to the base revision.
 *
 * Done through the workspace view (the mount), not by touching the fs's
 * state directory: it works whatever the upper layer's layout is, it goes
 * through the fs's own checks and it is journaled like any other change.
 * The difference base..workspace is computed as for `cloister diff`, then
 * every added path is removed and every deleted or modified one rewritten
 * from the base's blob. The workspace's own .git is left alone.
 *
 * Trust boundary: the view is agent-controlled and may be changing. Every
 * path is resolved beneath the view's fd without following symlinks, and
 * removal recurses with directory fds and O_NOFOLLOW, so a symlink planted
 * by the agent is removed, never followed.
 */
#include <fcntl.h>
#include <limits.h>

#include "review-private.h"

/* Remove `name` in dirfd, recursively if it is a directory, never following symlinks. */
static int tree_remove(int parent, const char *name, unsigned depth)
{
        struct stat st;

        if (depth > REVIEW_MAX_DEPTH)
                return -ELOOP;
        if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : negative_errno();
        if (S_ISDIR(st.st_mode)) {
                _cleanup_closedir_ DIR *d = NULL;
                struct dirent *de;
                int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return negative_errno();
                d = fdopendir(fd);
                if (!d) {
                        safe_close(fd);
                        return negative_errno();
                }
                while ((errno = 0, de = readdir(d))) {
                        if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                                continue;
                        int k = tree_remove(dirfd(d), de->d_name, depth + 1);
                        if (k < 0)
                                return k;
                }
                if (unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                        return negative_errno();
                return 0;
        }
        if (unlinkat(parent, name, 0) < 0 && errno != ENOENT)
                return negative_errno();
        return 0;
}

/* Open the parent of rel as a directory, creating it (and replacing non-directories). */
static int parents_make(int rootfd, const char *rel, int *ret_fd, const char **ret_base)
{
        _cleanup_close_ int cur = openat(rootfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
        const char *p = rel;

        if (cur < 0)
                return negative_errno();
        for (;;) {
                const char *slash = strchr(p, '/');
                char comp[NAME_MAX + 1];
                struct stat st;
                int next, k;

                if (!slash)
                        break;
                if ((size_t)(slash - p) > NAME_MAX)
                        return -ENAMETOOLONG;
                memcpy(comp, p, (size_t)(slash - p));
                comp[slash - p] = 0;
                if (fstatat(cur, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode)) {
                        k = tree_remove(cur, comp, 0);
                        if (k < 0)
                                return k;
                }
                if (mkdirat(cur, comp, 0755) < 0 && errno != EEXIST)
                        return negative_errno();
                next = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (next < 0)
                        return negative_errno();
                safe_close(cur);
                cur = next;
                p = slash + 1;
        }
        *ret_fd = TAKE_FD(cur);
        *ret_base = p;
        return 0;
}

/* Write the base's version of rel (a blob or a symlink) into the view. */
static int path_restore(review *r, const char *rel, const git_oid *id, uint32_t mode)
{
        _cleanup_close_ int pfd = -1, fd = -1;
        git_buf buf = GIT_BUF_INIT;
        git_blob *blob = NULL;
        const char *base;
        struct stat st;
        int g, k;

        g = git_blob_lookup(&blob, r->repo, id);
        if (g < 0)
                return review_git_fail(r, g, "base version of '%s'", rel);
        k = parents_make(r->viewfd, rel, &pfd, &base);
        if (k < 0) {
                review_fail(r, k, "restoring '%s': %s", rel, strerror(-k));
                goto out;
        }
        /* Whatever is there and is not a plain file we can rewrite goes first. */
        if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            (mode == GIT_FILEMODE_LINK || !S_ISREG(st.st_mode))) {
                k = tree_remove(pfd, base, 0);
                if (k < 0) {
                        review_fail(r, k, "removing '%s': %s", rel, strerror(-k));
                        goto out;
                }
        }
        if (mode == GIT_FILEMODE_LINK) {
                _cleanup_free_ char *target =
                        strndup(git_blob_rawcontent(blob), (size_t)git_blob_rawsize(blob));
                if (!target || symlinkat(target, pfd, base) < 0)
                        k = review_fail(r, target ? negative_errno() : -ENOMEM,
                                        "restoring the symlink '%s': %m", rel);
                goto out;
        }
        /*
         * Without blocking: the agent may have put a FIFO at the name since
         * the check above (a running sandbox renames one there), and a
         * blocking open for writing would wait for a reader for ever. What
         * the open landed on must be a plain file still.
         */
        fd = openat(pfd, base,
                    O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
                    0644);
        if (fd < 0) {
                k = review_fail(r, negative_errno(), "restoring '%s': %m", rel);
                goto out;
        }
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                k = review_fail(r, -EAGAIN,
                                "restoring '%s': it is no longer a file (changed while it was "
                                "restored); run the discard again",
                                rel);
                goto out;
        }
        /* As a fresh checkout of the base writes it: eol and ident as its attributes say. */
        k = review_rules_smudge(r, rel, blob, &buf);
        if (k < 0)
                goto out;
        const char *data = buf.ptr;
        size_t len = buf.size, off = 0;
        while (off < len) {
                ssize_t w = write(fd, data + off, len - off);
                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0) {
                        k = review_fail(r, negative_errno(), "restoring '%s': %m", rel);
                        goto out;
                }
                off += (size_t)w;
        }
        if (fchmod(fd, mode == GIT_FILEMODE_BLOB_EXECUTABLE ? 0755 : 0644) < 0)
                k = review_fail(r, negative_errno(), "restoring the mode of '%s': %m", rel);
out:
        git_buf_dispose(&buf);
        git_blob_free(blob);
        return k;
}

static int path_remove(review *r, const char *rel)
{
        _cleanup_close_ int pfd = -1;
        const char *base;
        int k = review_view_parent(r->viewfd, rel, &pfd, &base);

        if (k == -ENOENT || k == -ENOTDIR || k == -ELOOP)
                return 0; /* its parent is gone or is not a directory: so is it */
        if (k == 0)
                k = tree_remove(pfd, base, 0);
        if (k < 0)
                return review_fail(r, k, "removing '%s': %s", rel, strerror(-k));
        return 0;
}

struct restore {
        review *r;
        const char *rel;
        int k;
};

static int restore_one(const char *root, const git_tree_entry *te, void *payload)
{
        struct restore *x = payload;
        _cleanup_free_ char *path = NULL;
        git_filemode_t mode = git_tree_entry_filemode(te);

        if (mode != GIT_FILEMODE_BLOB && mode != GIT_FILEMODE_BLOB_EXECUTABLE &&
            mode != GIT_FILEMODE_LINK)
                return 0; /* a tree (walked into) or a submodule (a checkout has an empty dir) */
        if (asprintf(&path, "%s/%s%s", x->rel, root, git_tree_entry_name(te)) < 0) {
                x->k = review_fail(x->r, -ENOMEM, "out of memory");
                return -1;
        }
        x->k = path_restore(x->r, path, git_tree_entry_id(te), mode);
        return x->k < 0 ? -1 : 0;
}

/*
 * A path the build left out (review_left_out()) kept the base's in the
 * tree, so the diff does not show it: made the base's here, whatever the
 * view holds there (a huge file, a FIFO).
 */
static int left_out_reset(review *r, const char *rel)
{
        _cleanup_free_ char *prefix = NULL;
        git_tree_entry *te = NULL;
        git_tree *sub = NULL;
        struct restore x = {.r = r, .rel = rel};
        int g, k;

        /*
         * A path too long to open (PATH_MAX) lies below something the base
         * does not have: the shortest such prefix goes, and it with it.
         */
        if (strlen(rel) >= PATH_MAX) {
                for (const char *s = strchr(rel, '/'); s; s = strchr(s + 1, '/')) {
                        if (!(prefix = strndup(rel, (size_t)(s - rel))))
                                return review_fail(r, -ENOMEM, "out of memory");
                        if (git_tree_entry_bypath(&te, r->base_tree, prefix) < 0) {
                                git_error_clear();
                                return path_remove(r, prefix);
                        }
                        git_tree_entry_free(te);
                        te = NULL;
                        free(prefix);
                        prefix = NULL;
                }
                /* Only its last name is new: its parent, a base directory, opens. */
                return path_remove(r, rel);
        }
        k = path_remove(r, rel);

        if (k < 0)
                return k;
        if (git_tree_entry_bypath(&te, r->base_tree, rel) < 0) {
                git_error_clear();
                return 0;
        }
        if (git_tree_entry_type(te) != GIT_OBJECT_TREE) {
                git_filemode_t mode = git_tree_entry_filemode(te);
                if (mode == GIT_FILEMODE_BLOB || mode == GIT_FILEMODE_BLOB_EXECUTABLE ||
                    mode == GIT_FILEMODE_LINK)
                        k = path_restore(r, rel, git_tree_entry_id(te), mode);
                git_tree_entry_free(te);
                return k;
        }
        g = git_tree_lookup(&sub, r->repo, git_tree_entry_id(te));
        git_tree_entry_free(te);
        if (g == 0)
                g = git_tree_walk(sub, GIT_TREEWALK_PRE, restore_one, &x);
        git_tree_free(sub);
        if (x.k < 0)
                return x.k;
        return g < 0 ? review_git_fail(r, g, "the base's '%s'", rel) : 0;
}

static int discard_once(review *r)
{
        git_diff_options dopts = GIT_DIFF_OPTIONS_INIT;
        struct review_change *c = NULL;
        git_diff *diff = NULL;
        git_tree *tree = NULL;
        size_t n = 0, nd;
        int g, k;

        k = review_build(r);
        if (k < 0)
                return k;
        g = git_tree_lookup(&tree, r->repo, &r->tree);
        if (g == 0)
                g = git_diff_tree_to_tree(&diff, r->repo, r->base_tree, tree, &dopts);
        git_tree_free(tree);
        if (g < 0)
                return review_git_fail(r, g, "diffing the workspace against the base");
        nd = git_diff_num_deltas(diff);
        /*
         * The list is read before anything is touched: if it cannot be had,
         * discard still resets all that git can see rather than stopping
         * half-way, and only what git cannot hold (empty directories,
         * FIFOs) the agent added stays, with a warning.
         */
        if (r->o.changes && review_changes_load(r, &c, &n) < 0) {
                snprintf(r->warning, sizeof(r->warning),
                         "the changes list could not be read (%s); empty directories and "
                         "special files the agent added are left in place",
                         review_error(r));
                c = NULL;
                n = 0;
        }
        /* Removals first, so that restored paths find their parents free. */
        for (size_t i = 0; i < nd && k >= 0; i++) {
                const git_diff_delta *d = git_diff_get_delta(diff, i);
                if (d->status == GIT_DELTA_ADDED)
                        k = path_remove(r, d->new_file.path);
        }
        /* Listed paths git cannot see (empty dirs, FIFOs) that the base does not have. */
        for (size_t i = n; i > 0 && k >= 0; i--) {
                git_tree_entry *te = NULL;
                if (!c[i - 1].path[0])
                        continue;
                if (git_tree_entry_bypath(&te, r->base_tree, c[i - 1].path) == 0)
                        git_tree_entry_free(te);
                else
                        k = path_remove(r, c[i - 1].path);
        }
        for (size_t i = 0; i < nd && k >= 0; i++) {
                const git_diff_delta *d = git_diff_get_delta(diff, i);
                if (d->status == GIT_DELTA_DELETED || d->status == GIT_DELTA_MODIFIED)
                        k = path_restore(r, d->old_file.path, &d->old_file.id, d->old_file.mode);
        }
        for (size_t i = 0; i < r->n_left_out && k >= 0; i++)
                k = left_out_reset(r, r->left_out[i].path);
        review_changes_free(c, n);
        git_diff_free(diff);
        if (k >= 0) {
                /* What the view holds now is the base: rebuild on the next request. */
                r->built = false;
        }
        return k;
}

int review_discard(review *r)
{
        /*
         * Left-out paths past the listed ones are only counted: each round
         * resets those listed, and the next build finds the rest.
         */
        for (unsigned round = 0; round <= REVIEW_MAX_FILES / REVIEW_MAX_LEFT_OUT; round++) {
                bool more;
                int k;

                if (round > 0) /* the last round's: those paths are the base's now */
                        review_left_out_clear(r);
                k = discard_once(r);
                more = r->more_left_out > 0;
                if (k < 0 || !more)
                        return k;
        }
        return 0;
}
