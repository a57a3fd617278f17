/* SPDX-License-Identifier: MIT */
/*
 * gitindex.c: the workspace .git's index, built while the mount already
 * serves.
 *
 * The index has one entry per file of the base tree, so writing it costs
 * time in proportion to the repo (about 0.3 s for 100,000 files). Done at
 * setup, it made the first mount of a big repo slow; here a thread writes it
 * after the mount is up, and until it is in place a lookup of `index` in the
 * repo's `.git` waits for it. Everything else (the tree, file data, the rest
 * of `.git`) is served at once, and the first `git status` pays for the
 * index only if it comes sooner than the index is done.
 *
 * The file is written under a reserved name, renamed to `index`, and then a
 * marker (<state>/fs/gitdir-index-done) records it, so an index the agent
 * deletes later is not rebuilt. A daemon killed midway leaves no `index`
 * and no marker, and the next mount builds it again; killed between the
 * rename and the marker, the next mount finds the index and only records it.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core.h"
#include "gitdir.h"
#include "state.h"
#include "lib/util.h"

#define INDEX_MARKER "gitdir-index-done"
#define INDEX_TMP    UPPER_PREFIX "index.tmp"

static int write_marker(int fsdir)
{
        int fd = openat(fsdir, INDEX_MARKER, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return negative_errno();
        close(fd);
        return 0;
}

int gitindex_init(struct fs_workspace *ws, int fsdir, char **ret_error)
{
        _cleanup_close_ int git = -1;
        int r;

        if (faccessat(fsdir, INDEX_MARKER, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
                return 0;
        git = state_open_dir(ws->repo.upper_fd, ".git", false);
        if (git == -ENOENT || git == -ENOTDIR || git == -ELOOP) {
                (void)write_marker(fsdir); /* the agent removed or replaced it */
                return 0;
        }
        if (git < 0) {
                r = git;
                goto fail;
        }
        if (faccessat(git, "index", F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
                (void)write_marker(fsdir); /* put in place by a daemon killed just after */
                return 0;
        }
        ws->index.fsdir_fd = fcntl(fsdir, F_DUPFD_CLOEXEC, 3);
        if (ws->index.fsdir_fd < 0) {
                r = negative_errno();
                goto fail;
        }
        ws->index.git_fd = TAKE_FD(git);
        atomic_store(&ws->index.state, GITINDEX_BUILDING);
        return 0;
fail:
        if (ret_error &&
            asprintf(ret_error, "cannot open the workspace .git: %s", strerror(-r)) < 0)
                *ret_error = NULL;
        return r;
}

/*
 * The index appeared behind the kernel's back: drop the attributes it may
 * hold for .git (size, times). No entry for `index` can be cached, negative
 * or not, since its lookups waited; done after waking them, as the kernel
 * may wait on those lookups while it invalidates.
 */
static void forget_git_attrs(struct fs_workspace *ws)
{
        struct node *git;
        struct stat st;

        if (!ws->se || fstat(ws->index.git_fd, &st) < 0)
                return;
        git = node_find_ref(ws, upper_ino(&st));
        if (!git)
                return; /* never looked up: nothing cached */
        {
                fuse_ino_t ino;
                struct fuse_session *se = fs_node_session(ws, git, &ino);

                if (se)
                        (void)fuse_lowlevel_notify_inval_inode(se, ino, -1, 0);
        }
        node_unref(ws, git);
}

/* ns_lock held exclusively. */
static void git_changed(struct fs_workspace *ws)
{
        struct node *git;
        struct stat st;

        assert_wrlocked(&ws->ns_lock);
        if (fstat(ws->index.git_fd, &st) < 0)
                return;
        git = node_find_ref(ws, upper_ino(&st));
        if (git) {
                fs_dir_changed(git);
                node_unref(ws, git);
        }
}

/*
 * gitdir's worktree_size: what the fs shows for a file whose attributes
 * convert it; *size comes in as the blob's, and only a file that converts
 * is read. The lower notes every file that does not convert for the
 * lookups that follow (lower_git_index_file).
 */
struct size_cache {
        struct lower *lower;
        struct lower_git_cursor cur;
        unsigned part; /* the repo layer's, for its inode numbers */
};

/* The inode number the fs gives the lower file at path (cow.c, lower_ino). */
static uint64_t worktree_ino(void *userdata, const char *path)
{
        struct size_cache *c = userdata;

        return lower_ino(c->part, path);
}

static int worktree_size(void *userdata, const char *path, const git_oid *id, uint64_t *size)
{
        struct size_cache *c = userdata;

        return lower_git_index_file(c->lower, &c->cur, path, id, size);
}

static void *build(void *arg)
{
        struct fs_workspace *ws = arg;
        _cleanup_free_ char *err = NULL;
        _cleanup_free_ struct size_cache *sc = calloc(1, sizeof(*sc));
        struct gitdir_params p = {
                .source = ws->source,
                .rev = lower_commit_hex(ws->repo.base), /* exactly the tree served */
                .name = ws->name,
                .lower_mtime = lower_commit_time(ws->repo.base),
                .uid = ws->index_uid ? ws->index_uid : ws->uid,
                .gid = ws->index_gid ? ws->index_gid : ws->gid,
                .worktree_size = sc ? worktree_size : NULL,
                .ino = sc ? worktree_ino : NULL,
                .userdata = sc,
        };
        const char *delay = secure_getenv("CLOISTER_TEST_INDEX_DELAY_MS");
        struct stat st;
        int r;

        if (sc) {
                sc->lower = ws->repo.base;
                sc->part = ws->repo.part;
        }
        /* Tests widen the window in which lookups must wait (at most 10 s). */
        if (delay)
                usleep((useconds_t)MIN(strtoul(delay, NULL, 10), 10000UL) * 1000);
        (void)unlinkat(ws->index.git_fd, INDEX_TMP, 0); /* left by a killed daemon */
        r = gitdir_write_index_msg(&p, ws->index.git_fd, INDEX_TMP, &err);
        /* Only a whole build's sizes are kept; failing to keep them costs
         * later mounts a header read per file, as before. */
        if (sc && r == 0) {
                int k = lower_git_cursor_save(sc->lower, &sc->cur);
                if (k < 0)
                        fuse_log(FUSE_LOG_WARNING,
                                 "cloister mount: cannot keep the blob sizes: %s\n", strerror(-k));
        }
        if (sc)
                lower_git_cursor_done(sc->lower, &sc->cur);
        if (r == 0 && fstatat(ws->index.git_fd, INDEX_TMP, &st, AT_SYMLINK_NOFOLLOW) < 0)
                r = negative_errno();
        if (r == 0) {
                /* A change of .git's names, as any other: under ns_lock, and
                 * what was read of .git's listing goes (fs_dir_changed). */
                pthread_rwlock_wrlock(&ws->ns_lock);
                git_changed(ws);
                if (renameat(ws->index.git_fd, INDEX_TMP, ws->index.git_fd, "index") < 0)
                        r = negative_errno();
                pthread_rwlock_unlock(&ws->ns_lock);
        }
        if (r == 0) {
                quota_add(ws, 1, quota_cost(&st));
                if (write_marker(ws->index.fsdir_fd) < 0)
                        fuse_log(FUSE_LOG_WARNING,
                                 "cloister mount: cannot record the .git index: %m\n");
        } else {
                (void)unlinkat(ws->index.git_fd, INDEX_TMP, 0);
                fuse_log(FUSE_LOG_WARNING, "cloister mount: cannot build %s/.git/index: %s\n",
                         ws->repo.mpath, err ? err : strerror(-r));
        }
        pthread_mutex_lock(&ws->index.lock);
        atomic_store(&ws->index.state, r < 0 ? r : GITINDEX_NONE);
        pthread_cond_broadcast(&ws->index.done);
        pthread_mutex_unlock(&ws->index.lock);
        if (r == 0)
                forget_git_attrs(ws);
        /* The build's transient state (libgit2's index of every entry, the
         * sizes' builder) was allocated in this thread's malloc arena and
         * freed in pieces that glibc keeps: 24 of the idle daemon's 34 MB
         * anonymous at 100,000 files. Give the free pages back. */
        (void)malloc_trim(0);
        return NULL;
}

int gitindex_start(struct fs_workspace *ws)
{
        int r;

        if (atomic_load(&ws->index.state) != GITINDEX_BUILDING)
                return 0;
        r = pthread_create(&ws->index.thread, NULL, build, ws);
        if (r != 0)
                return -r;
        ws->index.started = true;
        return 0;
}

int gitindex_wait(struct fs_workspace *ws, struct node *p, const char *name)
{
        bool is_index;
        int state = atomic_load(&ws->index.state);

        if (state == GITINDEX_NONE || !streq(name, "index") || p->kind != NODE_COW)
                return 0;
        pthread_rwlock_rdlock(&ws->ns_lock);
        is_index = p->layer == &ws->repo && p->parent == ws->repo.root && p->name &&
                   streq(p->name, ".git") && !p->unlinked;
        pthread_rwlock_unlock(&ws->ns_lock);
        if (!is_index)
                return 0;
        pthread_mutex_lock(&ws->index.lock);
        while ((state = atomic_load(&ws->index.state)) == GITINDEX_BUILDING)
                pthread_cond_wait(&ws->index.done, &ws->index.lock);
        pthread_mutex_unlock(&ws->index.lock);
        /* Failed: better an error than an empty index, which would make git
         * see every file as deleted. The daemon's log says why. */
        return state < 0 ? -EIO : 0;
}

void gitindex_stop(struct fs_workspace *ws)
{
        if (ws->index.started) {
                pthread_join(ws->index.thread, NULL);
                ws->index.started = false;
        }
        ws->index.git_fd = safe_close(ws->index.git_fd);
        ws->index.fsdir_fd = safe_close(ws->index.fsdir_fd);
}
