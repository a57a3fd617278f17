/* SPDX-License-Identifier: MIT */
/*
 * layers-fork.c: the state directory of a fork (docs/fs-design.md, "Fork,
 * restore, delete").
 *
 * A fork's state is a directory this call makes (mkdir, which fails if
 * anything is there: never a directory someone else made or named), then
 * filled only through its descriptor, and registered in its parent's
 * forks/ (so that the parent's removal of unused layers sees it). It holds
 * an empty writable layer, a layers.json that stacks the checkpoint's
 * frozen layers (where they lie, in the parent's state or further up), the
 * parent's pinned base commit and .git markers, and a journal whose first
 * entry names the parent and the checkpoint. Until it is whole, a file
 * FORK_PARTIAL in it names the parent and the checkpoint, so that the same
 * fork, run again after a crash, knows the directory for its own. Nothing
 * of the parent is copied or changed but its forks/ registry. The caller
 * (cloister fork) checks the place first and writes the config last.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "journal.h"
#include "layers.h"
#include "state.h"
#include "lib/crashpoint.h"
#include "lib/mkdir.h"
#include "lib/errorf.h"
#include "lib/util.h"

/* In a fork's state until it is whole: "PARENT-STATE\nCHECKPOINT\n". */
#define FORK_PARTIAL "fork.partial"

/* Copy a small file (a marker, the base id) from one fs/ dir to another, if it exists. */
static int copy_small(int from, int to, const char *name, char **ret_copy)
{
        _cleanup_close_ int in = -1, out = -1;
        char buf[256];
        ssize_t n;

        in = openat(from, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (in < 0)
                return errno == ENOENT ? 0 : negative_errno();
        n = read(in, buf, sizeof(buf) - 1);
        if (n < 0)
                return negative_errno();
        out = openat(to, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (out < 0 || write(out, buf, (size_t)n) != n || fsync(out) < 0)
                return negative_errno();
        if (ret_copy) {
                buf[n] = 0;
                buf[strcspn(buf, "\n")] = 0;
                *ret_copy = strdup(buf);
                if (!*ret_copy)
                        return -ENOMEM;
        }
        return 1;
}

/* The FORK_PARTIAL line for this fork: "PARENT\nCHECKPOINT\n". */
static char *partial_line(const char *parent, const char *name)
{
        char *s;

        return asprintf(&s, "%s\n%s\n", parent, name) < 0 ? NULL : s;
}

/*
 * An existing new_state that the same fork, killed before its config was
 * written, left: half made (its FORK_PARTIAL says so) or whole but never
 * mounted. 1 if so, 0 if nothing is there, -EEXIST for anything else: an
 * empty directory too, which someone else may have made for a workspace.
 */
static int replaceable(const char *new_state, const char *parent, const char *name)
{
        _cleanup_layers_ struct fs_layers *fl = NULL;
        _cleanup_free_ char *err = NULL, *ps = NULL, *want = partial_line(parent, name);
        _cleanup_close_ int sfd = -1, pfd = -1;
        char buf[PATH_MAX + 128];
        struct stat st;
        ssize_t n;

        if (!want)
                return -ENOMEM;
        if (lstat(new_state, &st) < 0)
                return errno == ENOENT ? 0 : negative_errno();
        if (!S_ISDIR(st.st_mode))
                return -EEXIST;
        sfd = open(new_state, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sfd < 0 || faccessat(sfd, "fs.lock", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
                return -EEXIST; /* mounted once: someone's work */
        pfd = openat(sfd, FORK_PARTIAL, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (pfd >= 0) {
                n = read(pfd, buf, sizeof(buf) - 1);
                if (n < 0)
                        return -EEXIST;
                buf[n] = 0;
                return streq(buf, want) ? 1 : -EEXIST;
        }
        if (fs_layers_load(new_state, &fl, &err) < 0 || !fl->parent_state)
                return -EEXIST;
        ps = realpath(fl->parent_state, NULL);
        if (!ps || !streq(ps, parent) || !streq(fl->parent_checkpoint, name))
                return -EEXIST;
        return 1; /* whole, never mounted, and the same fork: made again */
}

/*
 * Fill the new, empty state open at sfd (path: its name, for layers.json's
 * messages). Every write goes through sfd.
 */
static int write_state(const struct fs_layers *pl, const char *parent_real, const char *parent_name,
                       const struct fs_checkpoint *cp, int sfd, const char *path, bool with_journal,
                       char **ret_base, char **ret_error)
{
        _cleanup_layers_ struct fs_layers *l = calloc(1, sizeof(*l));
        _cleanup_close_ int fsd = -1, top = -1, pfs = -1;
        _cleanup_free_ char *fields = NULL;
        char id[FS_LAYER_ID_LEN + 1];
        json_t *j, *stack;
        int r;

        if (!l || !(l->state = strdup(path)) || !(l->top = strdup(FS_FIRST_TOP)))
                return -ENOMEM;
        errno = 0;
        fsd = state_open_dir(sfd, "fs", true);
        top = fsd < 0 ? -1 : state_open_dir(fsd, "repo", true);
        if (top < 0)
                return errorf_first(ret_error, errno ? negative_errno() : -EIO,
                                    "cannot make '%s/fs/repo': %m", path);
        (void)fchmod(top, 0755);
        fs_layer_id_new(id);
        r = fs_layer_marker_write(top, id);
        if (r < 0)
                return errorf_first(ret_error, r, "cannot mark '%s/fs/repo': %s", path,
                                    strerror(-r));
        if (cp->n_stack) {
                /* The root shows what the checkpoint's root showed. */
                const struct fs_layer_ref *ref = fs_layers_ref(pl, cp->stack[cp->n_stack - 1]);
                _cleanup_free_ char *from = ref ? fs_layers_ref_path(pl, ref) : NULL;
                _cleanup_close_ int ffd =
                        from ? open(from, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
                r = ffd < 0 ? -ENOENT : fs_layer_root_meta_copy(ffd, top);
                if (r < 0)
                        return errorf_first(ret_error, r,
                                            "cannot carry the checkpoint's root over: %s",
                                            strerror(-r));
        }
        l->exists = true;
        l->top_id = strdup(id);
        l->stack = calloc(cp->n_stack + 1, sizeof(char *));
        l->layers = calloc(cp->n_stack + 1, sizeof(*l->layers));
        l->parent_name = strdup(parent_name);
        l->parent_state = strdup(parent_real);
        l->parent_checkpoint = strdup(cp->name);
        if (!l->top_id || !l->stack || !l->layers || !l->parent_name || !l->parent_state ||
            !l->parent_checkpoint)
                return -ENOMEM;
        for (size_t i = 0; i < cp->n_stack; i++) {
                const struct fs_layer_ref *ref = fs_layers_ref(pl, cp->stack[i]);
                struct fs_layer_ref *nr = &l->layers[i];

                if (!ref)
                        return errorf_first(ret_error, -EBADMSG,
                                            "layer %s of checkpoint '%s' is unknown", cp->stack[i],
                                            cp->name);
                if (!(l->stack[i] = strdup(cp->stack[i])))
                        return -ENOMEM;
                l->n_stack++;
                memcpy(nr->id, ref->id, sizeof(nr->id));
                nr->state = strdup(ref->state ? ref->state : parent_real);
                nr->dir = strdup(ref->dir);
                l->n_layers++;
                if (!nr->state || !nr->dir)
                        return -ENOMEM;
        }
        r = fs_layers_save_at(l, fsd, "fork", ret_error);
        if (r < 0)
                return r;
        /* The base and .git markers: the workspace .git lies in the frozen layers. */
        {
                _cleanup_free_ char *pfsdir = NULL;
                if (asprintf(&pfsdir, "%s/fs", pl->state) < 0)
                        return -ENOMEM;
                pfs = open(pfsdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (pfs < 0)
                        return errorf_first(ret_error, negative_errno(), "cannot open '%s': %m",
                                            pfsdir);
        }
        r = copy_small(pfs, fsd, "base", ret_base);
        if (r >= 0)
                r = copy_small(pfs, fsd, "gitdir-done", NULL);
        if (r >= 0)
                r = copy_small(pfs, fsd, "gitdir-index-done", NULL);
        if (r < 0)
                return errorf_first(ret_error, r, "cannot copy the parent's fs/ markers: %s",
                                    strerror(-r));
        if (!with_journal) {
                (void)fsync(fsd);
                return 0;
        }
        stack = json_array();
        for (size_t i = 0; stack && i < cp->n_stack; i++)
                json_array_append_new(stack, json_string(cp->stack[i]));
        j = json_pack("{s:{s:s,s:s},s:s,s:o?}", "parent", "name", parent_name, "state", parent_real,
                      "checkpoint", cp->name, "stack", stack);
        fields = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        if (!fields)
                return -ENOMEM;
        r = journal_mark_append(sfd, "journal.jsonl", "fork", fields);
        if (r < 0)
                return errorf_first(ret_error, r, "cannot start the fork's journal: %s",
                                    strerror(-r));
        (void)fsync(fsd);
        (void)fsync(sfd);
        return 0;
}

static int dir_sync_of(const char *path)
{
        _cleanup_free_ char *d = strdup(path);
        _cleanup_close_ int fd = -1;
        char *slash = d ? strrchr(d, '/') : NULL;

        if (!slash)
                return -ENOMEM;
        *slash = 0;
        fd = open(*d ? d : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        return fd < 0 || fsync(fd) < 0 ? negative_errno() : 0;
}

/* Does a registration in forks/ say exactly s? */
static bool registered(int dfd, const char *s)
{
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        if (fd < 0 || !(d = fdopendir(fd))) {
                safe_close(fd);
                return false;
        }
        while ((de = readdir(d))) {
                _cleanup_close_ int f = -1;
                char buf[PATH_MAX + 64];
                ssize_t k;

                if (de->d_name[0] == '.' || strchr(de->d_name, '.'))
                        continue;
                f = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                if (f >= 0 && (k = read(f, buf, sizeof(buf) - 1)) > 0) {
                        buf[k] = 0;
                        if (streq(buf, s))
                                return true;
                }
        }
        return false;
}

/* forks/<id>: {"state": ...}, written whole and renamed into place. */
static int register_fork(const char *state, const char *fork_state, char **ret_error)
{
        _cleanup_close_ int sfd = -1, dfd = -1, fd = -1;
        _cleanup_free_ char *s = NULL;
        char id[FS_LAYER_ID_LEN + 1], tmp[FS_LAYER_ID_LEN + 8];
        json_t *j = json_pack("{s:s}", "state", fork_state);
        size_t n;

        s = j ? json_dumps(j, JSON_COMPACT) : NULL;
        json_decref(j);
        if (!s)
                return -ENOMEM;
        sfd = open(state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        dfd = sfd < 0 ? -1 : state_open_dir(sfd, "forks", true);
        if (dfd < 0)
                return errorf_first(ret_error, dfd < 0 && errno ? negative_errno() : -EIO,
                                    "cannot make '%s/forks': %m", state);
        if (registered(dfd, s))
                return 0; /* made again after a crash: registered already */
        fs_layer_id_new(id);
        snprintf(tmp, sizeof(tmp), "%s.tmp", id);
        fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        n = strlen(s);
        if (fd < 0 || write(fd, s, n) != (ssize_t)n || fsync(fd) < 0 ||
            renameat(dfd, tmp, dfd, id) < 0 || fsync(dfd) < 0)
                return errorf_first(ret_error, negative_errno(),
                                    "cannot register the fork in '%s': %m", state);
        return 0;
}

/* Remove new_state, a leftover of this same fork (replaceable() said so). */
static int remove_leftover(const char *new_state)
{
        _cleanup_free_ char *dir = strdup(new_state);
        char *slash = dir ? strrchr(dir, '/') : NULL;
        _cleanup_close_ int dfd = -1;

        if (!slash)
                return -ENOMEM;
        *slash = 0;
        dfd = open(*dir ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return negative_errno();
        return state_rm_rf_at(dfd, slash + 1, 0);
}

/* Make path, which must not exist, and open it: 0700, no symlink followed. */
static int make_own_dir(const char *path, char **ret_error)
{
        int fd;

        if (mkdir(path, 0700) < 0)
                return errorf_first(ret_error, negative_errno(),
                                    errno == EEXIST ? "'%s' exists already: a fork needs a state "
                                                      "directory of its own, made for it (--state)"
                                                    : "cannot make '%s': %m",
                                    path);
        fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errorf_first(ret_error, negative_errno(), "cannot open '%s': %m", path);
        return fd;
}

int fs_fork_state(const char *state, const char *parent_name, const char *name,
                  const char *new_state, struct fs_layers_report *rep, char **ret_error)
{
        _cleanup_close_ int lock = -1, sfd = -1, pfd = -1;
        _cleanup_layers_ struct fs_layers *l = NULL;
        _cleanup_free_ char *real = NULL, *base = NULL, *partial = NULL;
        const struct fs_checkpoint *cp;
        size_t n;
        int r;

        r = fs_layers_lock_load(state, &lock, &l, ret_error);
        if (r < 0)
                return r;
        cp = fs_layers_checkpoint(l, name);
        if (!cp)
                return errorf_first(ret_error, -ENOENT,
                                    "no checkpoint '%s' in '%s' (checkpoint --list)", name, state);
        real = realpath(state, NULL);
        if (!real)
                return errorf_first(ret_error, negative_errno(), "cannot resolve '%s': %m", state);
        partial = partial_line(real, name);
        if (!partial)
                return -ENOMEM;
        r = replaceable(new_state, real, name);
        if (r == -EEXIST)
                return errorf_first(ret_error, r,
                                    "'%s' exists already: a fork needs a state directory of its "
                                    "own, made for it (--state)",
                                    new_state);
        if (r < 0)
                return errorf_first(ret_error, r, "cannot look at '%s': %s", new_state,
                                    strerror(-r));
        /* The same fork, killed before its config was written: made again. */
        if (r == 1 && remove_leftover(new_state) < 0)
                return errorf_first(ret_error, -EEXIST, "cannot replace '%s'", new_state);
        r = mkdir_parents(new_state, 0755);
        if (r < 0)
                return errorf_first(ret_error, r, "cannot make the parents of '%s': %s", new_state,
                                    strerror(-r));
        sfd = make_own_dir(new_state, ret_error);
        if (sfd < 0)
                return sfd;
        (void)dir_sync_of(new_state);
        n = strlen(partial);
        pfd = openat(sfd, FORK_PARTIAL, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (pfd < 0 || write(pfd, partial, n) != (ssize_t)n || fsync(pfd) < 0)
                return errorf_first(ret_error, negative_errno(), "cannot write '%s/%s': %m",
                                    new_state, FORK_PARTIAL);
        r = write_state(l, real, parent_name, cp, sfd, new_state, true, &base, ret_error);
        if (r < 0)
                return r == -ENOMEM ? errorf_first(ret_error, r, "out of memory") : r;
        crashpoint("fork");
        if (unlinkat(sfd, FORK_PARTIAL, 0) < 0 || fsync(sfd) < 0)
                return errorf_first(ret_error, negative_errno(), "cannot finish '%s': %m",
                                    new_state);
        crashpoint("fork");
        {
                _cleanup_free_ char *new_real = realpath(new_state, NULL);
                r = register_fork(real, new_real ? new_real : new_state, ret_error);
        }
        if (r < 0)
                return r;
        crashpoint("fork");
        rep->depth = cp->n_stack;
        rep->fork_state = strdup(new_state);
        rep->base = TAKE_PTR(base);
        return rep->fork_state ? 0 : -ENOMEM;
}

int fs_checkpoint_view_state(const char *state, const char *name, const char *view_state,
                             char **ret_base, char **ret_error)
{
        _cleanup_close_ int lock = -1, sfd = -1;
        _cleanup_layers_ struct fs_layers *l = NULL;
        _cleanup_free_ char *real = NULL;
        const struct fs_checkpoint *cp;
        int r;

        r = fs_layers_lock_load(state, &lock, &l, ret_error);
        if (r < 0)
                return r;
        cp = fs_layers_checkpoint(l, name);
        if (!cp)
                return errorf_first(ret_error, -ENOENT, "no checkpoint '%s' (checkpoint --list)",
                                    name);
        real = realpath(state, NULL);
        if (!real)
                return errorf_first(ret_error, negative_errno(), "cannot resolve '%s': %m", state);
        sfd = make_own_dir(view_state, ret_error);
        if (sfd < 0)
                return sfd;
        r = write_state(l, real, "view", cp, sfd, view_state, false, ret_base, ret_error);
        return r == -ENOMEM ? errorf_first(ret_error, r, "out of memory") : r;
}
