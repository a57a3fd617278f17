/* SPDX-License-Identifier: MIT */
/*
 * gitdir-index.c: the index that makes `git status` clean without reading
 * a single file.
 *
 * git decides "unchanged" from the index's cached stat data. The fs reports
 * fixed values for every lower file (mtime = ctime = the base commit's
 * committer time, nsec 0, size = blob size, a stable inode number from the
 * path, the agent's owner as the sandbox shows it), so an index whose
 * entries carry exactly those values matches every untouched file under
 * git's default checks (core.checkStat = default, core.trustctime = true).
 * Any change to a file gives it a real ctime (the upper store's), which git
 * compares too: an edit that keeps the size and puts the mtime back (cp -p,
 * touch -r, tar) is seen.
 *
 * Cost, for a 100,000-file tree: one walk of the tree objects and one
 * git_odb_read_header() per blob (no blob is inflated), entries appended in
 * tree order (which is index order, so libgit2 never shifts its array), then
 * git_index_read_tree() to get the cache-tree extension that lets the first
 * `git commit` reuse every unchanged tree instead of rehashing them; it
 * keeps our stat data because path, mode and id match. libgit2 writes the
 * file in one buffered pass.
 *
 * libgit2 only writes an index to a path, so it writes into a private
 * mkdtemp() directory and we copy the bytes into dest with openat(): the
 * destination is never named by a path string.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gitdir-private.h"
#include "lib/readall.h"

struct walk {
        git_index *index;
        git_odb *odb;
        const struct gitdir_params *p;
        char path[PATH_MAX];
        size_t skipped; /* paths git itself refuses to track */
        int r;
        char **err;
};

static int walk_cb(const char *root, const git_tree_entry *te, void *userdata)
{
        struct walk *w = userdata;
        git_filemode_t mode = git_tree_entry_filemode(te);
        const git_oid *id = git_tree_entry_id(te);
        const char *name = git_tree_entry_name(te);
        git_index_entry e = {0};
        git_object_t type;
        size_t size = 0;
        int n, gr;

        /* Git never tracks ".git" (in any case), "." or "..": a tree that holds
         * one was made by hand, and git would refuse to check it out. Leave
         * it out of the index (1 also skips a subtree) rather than fail. */
        if (strcasecmp(name, ".git") == 0 || streq(name, ".") || streq(name, "..")) {
                w->skipped++;
                return 1;
        }

        switch (mode) {
        case GIT_FILEMODE_TREE:
                return 0;
        case GIT_FILEMODE_BLOB:
        case GIT_FILEMODE_BLOB_EXECUTABLE:
        case GIT_FILEMODE_LINK:
                gr = git_odb_read_header(&size, &type, w->odb, id);
                if (gr < 0) {
                        w->r = gitdir_git_error(w->err, gr, "read object header");
                        return -1;
                }
                if (mode != GIT_FILEMODE_LINK && w->p->worktree_size) {
                        uint64_t ws = size;
                        n = snprintf(w->path, sizeof(w->path), "%s%s", root, name);
                        int k = n < 0 || (size_t)n >= sizeof(w->path)
                                        ? -ENAMETOOLONG
                                        : w->p->worktree_size(w->p->userdata, w->path, id, &ws);
                        if (k < 0) {
                                w->r = gitdir_error(w->err, k, "%s%s: size as checked out: %s",
                                                    root, name, strerror(-k));
                                return -1;
                        }
                        size = (size_t)ws;
                }
                break;
        case GIT_FILEMODE_COMMIT:
                break; /* a submodule: git compares no size for gitlinks */
        default:
                w->r = gitdir_error(w->err, -EINVAL, "%s%s: unsupported mode %o", root, name,
                                    (unsigned)mode);
                return -1;
        }

        n = snprintf(w->path, sizeof(w->path), "%s%s", root, name);
        if (n < 0 || (size_t)n >= sizeof(w->path)) {
                w->r = gitdir_error(w->err, -ENAMETOOLONG, "path too long in tree: %s", root);
                return -1;
        }

        /* Exactly what the fs reports for an untouched lower file. The index
         * stores 32-bit seconds and sizes; git truncates st_* the same way. */
        e.ctime.seconds = e.mtime.seconds = (int32_t)w->p->lower_mtime;
        e.ino = w->p->ino ? (uint32_t)w->p->ino(w->p->userdata, w->path) : 0;
        e.mode = mode;
        e.uid = w->p->uid;
        e.gid = w->p->gid;
        e.file_size = (uint32_t)size;
        e.id = *id;
        e.path = w->path;
        gr = git_index_add(w->index, &e);
        if (gr < 0) {
                const git_error *ge = git_error_last();
                if (ge && ge->klass == GIT_ERROR_INDEX) {
                        /* A path libgit2 rejects (e.g. an NTFS alias of .git). */
                        git_error_clear();
                        w->skipped++;
                        return 0;
                }
                w->r = gitdir_git_error(w->err, gr, w->path);
                return -1;
        }
        return 0;
}

static int copy_fd(int in, int out)
{
        char buf[1 << 16];

        for (;;) {
                ssize_t n = read(in, buf, sizeof(buf));
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        return 0;
                int r = fd_write_whole(out, buf, (size_t)n);
                if (r < 0)
                        return r;
        }
}

/* Copy tmpdir/index into dirfd/name and date it after every entry. */
static int install_index(const char *tmp_index, int dirfd, const char *name, int64_t lower_mtime,
                         char **err)
{
        _cleanup_close_ int in = -1, out = -1;
        struct timespec now, ts[2];
        int r;

        in = open(tmp_index, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (in < 0)
                return gitdir_error(err, negative_errno(), "open the generated index: %m");
        out = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (out < 0)
                return gitdir_error(err, negative_errno(), "create index: %m");
        r = copy_fd(in, out);
        if (r < 0)
                return gitdir_error(err, r, "write index: %s", strerror(-r));

        /*
         * No racy git: an entry whose mtime is not older than the index file
         * is "racily clean" and git re-reads its data. A base commit dated in
         * the future (clock skew) would make every entry racy, so the index
         * is then dated just after it.
         */
        if (clock_gettime(CLOCK_REALTIME, &now) < 0)
                return gitdir_error(err, negative_errno(), "clock_gettime: %m");
        if ((int64_t)now.tv_sec <= lower_mtime) {
                now.tv_sec = (time_t)(lower_mtime + 1);
                now.tv_nsec = 0;
        }
        ts[0] = ts[1] = now;
        if (futimens(out, ts) < 0)
                return gitdir_error(err, negative_errno(), "date index: %m");
        if (close(TAKE_FD(out)) < 0)
                return gitdir_error(err, negative_errno(), "close index: %m");
        return 0;
}

int gitdir_write_index(git_repository *repo, git_tree *tree, const struct gitdir_params *p,
                       int dirfd, const char *name, char **err)
{
        _cleanup_index_ git_index *index = NULL;
        _cleanup_odb_ git_odb *odb = NULL;
        _cleanup_free_ struct walk *w = NULL;
        _cleanup_free_ char *tmp_index = NULL; /* libgit2 needs a path */
        const char *tmpdir = secure_getenv("TMPDIR");
        char tmp[PATH_MAX];
        bool made_tmp = false;
        int gr, r;

        if (!tmpdir || tmpdir[0] != '/')
                tmpdir = "/tmp";
        if (snprintf(tmp, sizeof(tmp), "%s/cloister-gitdir.XXXXXX", tmpdir) >= (int)sizeof(tmp))
                return gitdir_error(err, -ENAMETOOLONG, "TMPDIR too long");
        if (!mkdtemp(tmp))
                return gitdir_error(err, negative_errno(), "mkdtemp %s: %m", tmp);
        made_tmp = true;
        if (asprintf(&tmp_index, "%s/index", tmp) < 0) {
                r = -ENOMEM;
                goto out;
        }

        gr = git_repository_odb(&odb, repo);
        if (gr < 0) {
                r = gitdir_git_error(err, gr, "open the source's object database");
                goto out;
        }
        gr = git_index_open(&index, tmp_index);
        if (gr < 0) {
                r = gitdir_git_error(err, gr, "create index");
                goto out;
        }

        w = calloc(1, sizeof(*w));
        if (!w) {
                r = -ENOMEM;
                goto out;
        }
        w->index = index;
        w->odb = odb;
        w->p = p;
        w->err = err;
        gr = git_tree_walk(tree, GIT_TREEWALK_PRE, walk_cb, w);
        if (gr < 0) {
                r = w->r < 0 ? w->r : gitdir_git_error(err, gr, "walk the base tree");
                goto out;
        }

        /* Rebuild from the tree for the cache-tree extension; stat data is kept.
         * Not when paths were left out: read_tree would refuse them, and a
         * cache-tree must describe exactly the index's entries. */
        if (w->skipped == 0) {
                gr = git_index_read_tree(index, tree);
                if (gr < 0) {
                        r = gitdir_git_error(err, gr, "build the index's tree cache");
                        goto out;
                }
        }
        gr = git_index_write(index);
        if (gr < 0) {
                r = gitdir_git_error(err, gr, "write index");
                goto out;
        }
        r = install_index(tmp_index, dirfd, name, p->lower_mtime, err);
out:
        if (made_tmp) {
                _cleanup_close_ int tfd = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (tfd >= 0) {
                        (void)unlinkat(tfd, "index", 0);
                        (void)unlinkat(tfd, "index.lock", 0);
                }
                (void)rmdir(tmp);
        }
        return r;
}
