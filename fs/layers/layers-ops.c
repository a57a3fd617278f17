/* SPDX-License-Identifier: MIT */
/*
 * layers-ops.c: checkpoint, restore, delete, fork and the removal of
 * layers nothing uses, on disk (docs/fs-design.md, "Layers, checkpoints
 * and forks").
 *
 * Each operation makes what it needs beside the live state (an empty
 * writable layer, a fork's state under a temporary name) and commits with
 * one rename of layers.json (layers.c); a SIGKILL at any crashpoint()
 * leaves the old state or the new one. What is left unreferenced by a
 * crash (a layers/ID never committed, a fork's temporary state) is removed
 * later, never read. Everything is reached from directory fds with
 * O_NOFOLLOW: layer trees hold the agent's names, but only our own
 * directories (layers/ID, fs/repo) are ever opened by name here.
 */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "journal.h"
#include "layers.h"
#include "state.h"
#include "lib/crashpoint.h"
#include "lib/mkdir.h"
#include "lib/errorf.h"
#include "lib/util.h"
#include "lib/values.h"

void fs_layers_report_clear(struct fs_layers_report *r)
{
        strv_free(r->kept_by);
        free(r->fork_state);
        free(r->base);
        free(r->not_carried_first);
        *r = (struct fs_layers_report){0};
}

static char **strv_dup_n(char *const *v, size_t n)
{
        char **out = calloc(n + 1, sizeof(*out));

        for (size_t i = 0; out && i < n; i++)
                if (!(out[i] = strdup(v[i]))) {
                        strv_free(out);
                        return NULL;
                }
        return out;
}

static bool strv_has(char *const *v, size_t n, const char *s)
{
        for (size_t i = 0; i < n; i++)
                if (streq(v[i], s))
                        return true;
        return false;
}

/* Append a mark to this state's journal (no daemon has it open: the caller knows). */
static void mark(const char *state, const char *what, json_t *fields)
{
        _cleanup_free_ char *s = fields ? json_dumps(fields, JSON_COMPACT) : NULL;
        _cleanup_close_ int fd = open(state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

        json_decref(fields);
        if (fd >= 0 && s)
                (void)journal_mark_append(fd, "journal.jsonl", what, s);
}

/* Drop the refs of layers that neither the stack nor a checkpoint names any more. */
void fs_layers_prune_refs(struct fs_layers *l)
{
        size_t out = 0;

        for (size_t i = 0; i < l->n_layers; i++) {
                const char *id = l->layers[i].id;
                bool used = strv_has(l->stack, l->n_stack, id);
                for (size_t k = 0; !used && k < l->n_cps; k++)
                        used = strv_has(l->cps[k].stack, l->cps[k].n_stack, id);
                if (used) {
                        l->layers[out++] = l->layers[i];
                } else {
                        free(l->layers[i].state);
                        free(l->layers[i].dir);
                }
        }
        l->n_layers = out;
}

/*
 * Make layers/<id>, empty, with its marker: a writable layer to be, whose
 * root shows what the root of from_rel (a layer's dir, absolute or
 * relative to state; NULL: none) shows.
 */
int fs_layer_dir_new(const char *state, const char *from, char id[static FS_LAYER_ID_LEN + 1],
                     char **ret_rel, int *ret_fd, char **ret_error)
{
        _cleanup_close_ int sfd = -1, lfd = -1, fd = -1;
        _cleanup_free_ char *rel = NULL;
        int r;

        fs_layer_id_new(id);
        if (asprintf(&rel, "layers/%s", id) < 0)
                return -ENOMEM;
        sfd = open(state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (sfd < 0)
                return errorf_first(ret_error, negative_errno(), "cannot open '%s': %m", state);
        lfd = state_open_dir(sfd, "layers", true);
        if (lfd < 0)
                return errorf_first(ret_error, lfd, "cannot make '%s/layers': %s", state,
                                    strerror(-lfd));
        if (mkdirat(lfd, id, 0755) < 0)
                return errorf_first(ret_error, negative_errno(), "cannot make '%s/%s': %m", state,
                                    rel);
        fd = openat(lfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errorf_first(ret_error, negative_errno(), "cannot open '%s/%s': %m", state,
                                    rel);
        (void)fchmod(fd, 0755);
        r = fs_layer_marker_write(fd, id);
        if (r < 0)
                return errorf_first(ret_error, r, "cannot write the marker of '%s/%s': %s", state,
                                    rel, strerror(-r));
        if (from) {
                /* After the marker, which moves the dir's mtime. */
                _cleanup_close_ int ffd =
                        openat(sfd, from, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                r = ffd < 0 ? negative_errno() : fs_layer_root_meta_copy(ffd, fd);
                if (r < 0)
                        return errorf_first(ret_error, r,
                                            "cannot carry the root's attributes from '%s': %s",
                                            from, strerror(-r));
        }
        (void)fsync(lfd);
        *ret_rel = TAKE_PTR(rel);
        *ret_fd = TAKE_FD(fd);
        return 0;
}

static void remove_rel(const char *state, const char *rel)
{
        _cleanup_close_ int sfd = open(state, O_RDONLY | O_DIRECTORY | O_CLOEXEC), dfd = -1;
        _cleanup_free_ char *dir = strdup(rel);
        char *slash = dir ? strrchr(dir, '/') : NULL;

        if (sfd < 0 || !slash)
                return;
        *slash = 0;
        dfd = openat(sfd, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd >= 0)
                (void)state_rm_rf_at(dfd, slash + 1, 0);
}

int fs_checkpoint_begin(struct fs_layers *l, const char *name, struct fs_checkpoint_tx *tx,
                        char **ret_error)
{
        _cleanup_close_ int sfd = -1, top = -1;
        int r;

        *tx = (struct fs_checkpoint_tx){.new_top_fd = -1};
        if (!value_name_is_valid(name, FS_CHECKPOINT_MAX, false))
                return errorf_first(
                        ret_error, -EINVAL,
                        "'%s' is not a checkpoint name: 1 to %d of A-Z a-z 0-9 . _ -, not "
                        "starting with . or -",
                        name, FS_CHECKPOINT_MAX);
        if (fs_layers_checkpoint(l, name))
                return errorf_first(ret_error, -EEXIST, "checkpoint '%s' exists already", name);
        if (l->n_cps >= FS_CHECKPOINTS_MAX)
                return errorf_first(ret_error, -ENOSPC,
                                    "%d checkpoints already: delete some (checkpoint --delete)",
                                    FS_CHECKPOINTS_MAX);
        if (l->n_stack >= FS_STACK_MAX)
                return errorf_first(
                        ret_error, -ENOSPC,
                        "the stack holds %d frozen layers, the most it may: squash it first "
                        "(cloister squash)",
                        FS_STACK_MAX);
        snprintf(tx->name, sizeof(tx->name), "%s", name);
        sfd = open(l->state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (sfd < 0)
                return errorf_first(ret_error, negative_errno(), "cannot open '%s': %m", l->state);
        top = openat(sfd, l->top, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (top < 0)
                return errorf_first(
                        ret_error, errno == ENOENT ? -ENOENT : negative_errno(),
                        errno == ENOENT
                                ? "'%s' has no writable layer yet: mount the workspace once "
                                  "first"
                                : "cannot open the writable layer '%s/%s': %m",
                        l->state, l->top);
        if (l->top_id) {
                snprintf(tx->old_id, sizeof(tx->old_id), "%s", l->top_id);
        } else {
                /* fs/repo before its first checkpoint: it gets its id now, and its
                 * root keeps the times the agent gave it (the marker is ours). */
                struct stat st;
                bool had = fstat(top, &st) == 0;
                fs_layer_id_new(tx->old_id);
                r = fs_layer_marker_write(top, tx->old_id);
                if (r < 0)
                        return errorf_first(ret_error, r, "cannot mark '%s/%s': %s", l->state,
                                            l->top, strerror(-r));
                if (had)
                        (void)futimens(top, (struct timespec[]){st.st_atim, st.st_mtim});
        }
        crashpoint("checkpoint");
        r = fs_layer_dir_new(l->state, l->top, tx->new_id, &tx->new_top, &tx->new_top_fd,
                             ret_error);
        if (r < 0)
                return r;
        tx->depth = l->n_stack + 1;
        crashpoint("checkpoint");
        return 0;
}

static int push_ref(struct fs_layers *l, const char *id, const char *state, const char *dir)
{
        struct fs_layer_ref *v;

        if (fs_layers_ref(l, id))
                return 0;
        v = realloc(l->layers, (l->n_layers + 1) * sizeof(*v));
        if (!v)
                return -ENOMEM;
        l->layers = v;
        v = &l->layers[l->n_layers];
        *v = (struct fs_layer_ref){0};
        memcpy(v->id, id, FS_LAYER_ID_LEN + 1);
        v->dir = strdup(dir);
        v->state = state ? strdup(state) : NULL;
        if (!v->dir || (state && !v->state)) {
                free(v->dir);
                free(v->state);
                return -ENOMEM;
        }
        l->n_layers++;
        return 0;
}

int fs_checkpoint_commit(struct fs_layers *l, struct fs_checkpoint_tx *tx, char **ret_error)
{
        struct fs_checkpoint *cps, *cp;
        char **stack;
        int r;

        r = push_ref(l, tx->old_id, NULL, l->top);
        if (r < 0)
                return errorf_first(ret_error, r, "out of memory");
        stack = realloc(l->stack, (l->n_stack + 2) * sizeof(*stack));
        if (!stack)
                return errorf_first(ret_error, -ENOMEM, "out of memory");
        l->stack = stack;
        if (!(l->stack[l->n_stack] = strdup(tx->old_id)))
                return errorf_first(ret_error, -ENOMEM, "out of memory");
        l->n_stack++;
        cps = realloc(l->cps, (l->n_cps + 1) * sizeof(*cps));
        if (!cps)
                return errorf_first(ret_error, -ENOMEM, "out of memory");
        l->cps = cps;
        cp = &l->cps[l->n_cps];
        *cp = (struct fs_checkpoint){.seq = ++l->seq, .time = (int64_t)time(NULL)};
        cp->name = strdup(tx->name);
        cp->stack = strv_dup_n(l->stack, l->n_stack);
        cp->n_stack = l->n_stack;
        if (!cp->name || !cp->stack) {
                free(cp->name);
                strv_free(cp->stack);
                return errorf_first(ret_error, -ENOMEM, "out of memory");
        }
        l->n_cps++;
        free(l->top);
        free(l->top_id);
        l->top = strdup(tx->new_top);
        l->top_id = strdup(tx->new_id);
        if (!l->top || !l->top_id)
                return errorf_first(ret_error, -ENOMEM, "out of memory");
        return fs_layers_save(l, "checkpoint", ret_error);
}

void fs_checkpoint_tx_done(struct fs_layers *l, struct fs_checkpoint_tx *tx, bool committed)
{
        tx->new_top_fd = safe_close(tx->new_top_fd);
        if (!committed && tx->new_top)
                remove_rel(l->state, tx->new_top);
        free(tx->new_top);
        tx->new_top = NULL;
}

int fs_checkpoint_offline(const char *state, const char *name, struct fs_layers_report *rep,
                          char **ret_error)
{
        _cleanup_close_ int busy = -1, lock = -1;
        _cleanup_layers_ struct fs_layers *l = NULL;
        struct fs_checkpoint_tx tx;
        int r;

        busy = fs_layers_lock_offline(state);
        if (busy == -EBUSY)
                return -EBUSY; /* a daemon serves it: ask the daemon (layers-online.c) */
        if (busy < 0)
                return errorf_first(ret_error, busy, "cannot lock '%s/fs.lock': %s", state,
                                    strerror(-busy));
        r = fs_layers_lock_load(state, &lock, &l, ret_error);
        if (r < 0)
                return r;
        r = fs_checkpoint_begin(l, name, &tx, ret_error);
        if (r < 0) {
                fs_checkpoint_tx_done(l, &tx, false);
                return r;
        }
        r = fs_checkpoint_commit(l, &tx, ret_error);
        fs_checkpoint_tx_done(l, &tx, r == 0);
        if (r < 0)
                return r;
        mark(state, "checkpoint",
             json_pack("{s:s,s:I}", "name", name, "depth", (json_int_t)l->n_stack));
        rep->depth = l->n_stack;
        rep->squash_due = l->n_stack >= FS_STACK_SQUASH_DUE;
        return 0;
}

/* ---- removing what nothing uses ---- */

struct refs {
        char *me;    /* realpath of the state whose layers are collected */
        char **dirs; /* its layer dirs (relative) some stack names */
        size_t n, cap;
        char **seen; /* fork states visited (realpath) */
        size_t n_seen, cap_seen;
        bool unsure; /* a fork's layers.json could not be read: remove nothing */
};

static int strv_push(char ***v, size_t *n, size_t *cap, const char *s)
{
        if (*n + 1 >= *cap) {
                size_t c = *cap ? *cap * 2 : 16;
                char **nv = realloc(*v, c * sizeof(char *));
                if (!nv)
                        return -ENOMEM;
                *v = nv;
                *cap = c;
        }
        if (!((*v)[*n] = strdup(s)))
                return -ENOMEM;
        (*v)[++*n] = NULL;
        return 0;
}

/* The dirs of `me`'s layers that l (a state's layers.json) names in any stack. */
static int refs_collect(struct refs *rf, const struct fs_layers *l, bool own)
{
        for (size_t i = 0; i < l->n_layers; i++) {
                const struct fs_layer_ref *ref = &l->layers[i];
                _cleanup_free_ char *rs = NULL;
                bool mine;
                int r;

                if (!ref->state)
                        mine = own;
                else {
                        rs = realpath(ref->state, NULL);
                        mine = rs && streq(rs, rf->me);
                }
                if (mine && !strv_has(rf->dirs, rf->n, ref->dir)) {
                        r = strv_push(&rf->dirs, &rf->n, &rf->cap, ref->dir);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* The states registered in state/forks/ (paths), and the registration file names. */
static int forks_list(const char *state, char ***ret_states, char ***ret_files, size_t *ret_n)
{
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_free_ char *p = NULL;
        char **states = NULL, **files = NULL;
        size_t n = 0, cap = 0, capf = 0, nf = 0;
        struct dirent *de;
        int r = 0;

        if (asprintf(&p, "%s/forks", state) < 0)
                return -ENOMEM;
        d = opendir(p);
        while (d && (de = readdir(d)) && n < FS_FORKS_MAX) {
                _cleanup_close_ int fd = -1;
                char buf[PATH_MAX + 64];
                json_t *j;
                ssize_t k;

                if (de->d_name[0] == '.')
                        continue;
                fd = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0 || (k = read(fd, buf, sizeof(buf) - 1)) <= 0)
                        continue;
                buf[k] = 0;
                j = json_loads(buf, 0, NULL);
                if (json_string_value(json_object_get(j, "state")) &&
                    value_path_is_clean_absolute(json_string_value(json_object_get(j, "state")))) {
                        r = strv_push(&states, &n, &cap,
                                      json_string_value(json_object_get(j, "state")));
                        if (r == 0)
                                r = strv_push(&files, &nf, &capf, de->d_name);
                }
                json_decref(j);
                if (r < 0)
                        break;
        }
        if (r < 0) {
                strv_free(states);
                strv_free(files);
                return r;
        }
        *ret_states = states;
        *ret_files = files;
        *ret_n = n;
        return 0;
}

/*
 * Follow the forks of `state` (registered in its forks/) and theirs, and
 * collect what each names of rf->me. A fork's layers.json is read before
 * its own forks/: a fork registers there (under that fork's lock) before
 * a checkpoint it was made from can go, so nothing slips between.
 */
static int refs_forks(struct refs *rf, const char *state, unsigned depth, bool prune_stale)
{
        _cleanup_strv_free_ char **states = NULL, **files = NULL;
        size_t n = 0;
        int r;

        if (depth > FS_FORKS_DEPTH) {
                rf->unsure = true;
                return 0;
        }
        r = forks_list(state, &states, &files, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                _cleanup_layers_ struct fs_layers *fl = NULL;
                _cleanup_free_ char *real = realpath(states[i], NULL), *err = NULL;

                if (!real || (r = fs_layers_load(real, &fl, &err)) < 0 || !fl->exists) {
                        bool gone = !real || (fl && !fl->exists);
                        if (gone && prune_stale) {
                                /* Its state is gone (deleted, or a fork killed before it was
                                 * made): the registration goes too. */
                                _cleanup_free_ char *p = NULL;
                                if (asprintf(&p, "%s/forks/%s", state, files[i]) >= 0)
                                        (void)unlink(p);
                        } else if (!gone) {
                                rf->unsure = true;
                        }
                        continue;
                }
                if (strv_has(rf->seen, rf->n_seen, real))
                        continue;
                r = strv_push(&rf->seen, &rf->n_seen, &rf->cap_seen, real);
                if (r == 0)
                        r = refs_collect(rf, fl, false);
                if (r == 0)
                        r = refs_forks(rf, real, depth + 1, false);
                if (r < 0)
                        return r;
        }
        return 0;
}

static void refs_clear(struct refs *rf)
{
        free(rf->me);
        strv_free(rf->dirs);
        strv_free(rf->seen);
}

int fs_layers_gc(const struct fs_layers *l, const char *op, struct fs_layers_report *rep,
                 char **ret_error)
{
        struct refs rf = {0};
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_close_ int sfd = -1;
        struct dirent *de;
        int r;

        if (!l->exists)
                return 0; /* nothing was ever frozen */
        rf.me = realpath(l->state, NULL);
        if (!rf.me)
                return errorf_first(ret_error, negative_errno(), "cannot resolve '%s': %m",
                                    l->state);
        r = strv_push(&rf.dirs, &rf.n, &rf.cap, l->top);
        if (r == 0)
                r = refs_collect(&rf, l, true);
        if (r == 0)
                r = refs_forks(&rf, rf.me, 0, true);
        if (r < 0 || rf.unsure) {
                refs_clear(&rf);
                return r < 0 ? errorf_first(ret_error, r, "cannot list who uses the layers: %s",
                                            strerror(-r))
                             : 0;
        }
        sfd = open(l->state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (sfd >= 0 && !strv_has(rf.dirs, rf.n, FS_FIRST_TOP)) {
                _cleanup_close_ int fsd = state_open_dir(sfd, "fs", false);
                if (fsd >= 0 && faccessat(fsd, "repo", F_OK, AT_SYMLINK_NOFOLLOW) == 0 &&
                    state_rm_rf_at(fsd, "repo", 0) == 0)
                        rep->removed++;
        }
        if (sfd >= 0) {
                int lfd = state_open_dir(sfd, "layers", false);
                if (lfd >= 0 && !(d = fdopendir(lfd)))
                        safe_close(lfd);
        }
        while (d && (de = readdir(d))) {
                _cleanup_free_ char *rel = NULL;

                if (de->d_name[0] == '.')
                        continue;
                if (asprintf(&rel, "layers/%s", de->d_name) < 0)
                        break;
                if (strv_has(rf.dirs, rf.n, rel))
                        continue;
                crashpoint(op);
                if (state_rm_rf_at(dirfd(d), de->d_name, 0) == 0)
                        rep->removed++;
        }
        refs_clear(&rf);
        return 0;
}

int fs_restore(const char *state, const char *name, struct fs_layers_report *rep, char **ret_error)
{
        _cleanup_close_ int busy = -1, lock = -1, fd = -1;
        _cleanup_layers_ struct fs_layers *l = NULL;
        _cleanup_free_ char *rel = NULL;
        char id[FS_LAYER_ID_LEN + 1];
        const struct fs_checkpoint *cp;
        char **stack;
        int r;

        busy = fs_layers_lock_offline(state);
        if (busy == -EBUSY)
                return errorf_first(
                        ret_error, -EBUSY,
                        "the workspace is mounted: unmount it first (the processes in it "
                        "would see their files change under them)");
        if (busy < 0)
                return errorf_first(ret_error, busy, "cannot lock '%s/fs.lock': %s", state,
                                    strerror(-busy));
        r = fs_layers_lock_load(state, &lock, &l, ret_error);
        if (r < 0)
                return r;
        cp = fs_layers_checkpoint(l, name);
        if (!cp)
                return errorf_first(ret_error, -ENOENT, "no checkpoint '%s' (checkpoint --list)",
                                    name);
        stack = strv_dup_n(cp->stack, cp->n_stack);
        if (!stack)
                return -ENOMEM;
        crashpoint("restore");
        {
                const struct fs_layer_ref *ref =
                        cp->n_stack ? fs_layers_ref(l, cp->stack[cp->n_stack - 1]) : NULL;
                _cleanup_free_ char *from = ref ? fs_layers_ref_path(l, ref) : NULL;
                r = fs_layer_dir_new(state, from, id, &rel, &fd, ret_error);
        }
        if (r < 0) {
                strv_free(stack);
                return r;
        }
        crashpoint("restore");
        for (size_t i = 0; i < l->n_stack; i++)
                free(l->stack[i]);
        free(l->stack);
        l->stack = stack;
        l->n_stack = cp->n_stack;
        free(l->top);
        free(l->top_id);
        l->top = TAKE_PTR(rel);
        l->top_id = strdup(id);
        if (!l->top_id)
                return -ENOMEM;
        fs_layers_prune_refs(l);
        r = fs_layers_save(l, "restore", ret_error);
        if (r < 0) {
                remove_rel(state, l->top);
                return r;
        }
        mark(state, "restore", json_pack("{s:s}", "checkpoint", name));
        crashpoint("restore");
        rep->depth = l->n_stack;
        rep->squash_due = l->n_stack >= FS_STACK_SQUASH_DUE;
        return fs_layers_gc(l, "restore", rep, ret_error);
}

/* Who, besides the checkpoint being deleted, uses layer id. */
static int users_of(const struct fs_layers *l, const char *id, struct refs *forks,
                    struct fs_layers_report *rep)
{
        size_t n = 0, cap = 0;
        char **v = NULL;
        int r = 0;

        if (strv_has(l->stack, l->n_stack, id))
                r = strv_push(&v, &n, &cap, "the workspace's current state");
        for (size_t i = 0; r == 0 && i < l->n_cps; i++)
                if (strv_has(l->cps[i].stack, l->cps[i].n_stack, id)) {
                        _cleanup_free_ char *s = NULL;
                        r = asprintf(&s, "checkpoint '%s'", l->cps[i].name) < 0
                                    ? -ENOMEM
                                    : strv_push(&v, &n, &cap, s);
                }
        for (size_t i = 0; r == 0 && i < forks->n_seen; i++) {
                _cleanup_layers_ struct fs_layers *fl = NULL;
                _cleanup_free_ char *err = NULL, *s = NULL;
                bool uses = false;

                if (fs_layers_load(forks->seen[i], &fl, &err) < 0)
                        continue;
                uses = strv_has(fl->stack, fl->n_stack, id);
                for (size_t k = 0; !uses && k < fl->n_cps; k++)
                        uses = strv_has(fl->cps[k].stack, fl->cps[k].n_stack, id);
                if (uses)
                        r = asprintf(&s, "the fork at %s", forks->seen[i]) < 0
                                    ? -ENOMEM
                                    : strv_push(&v, &n, &cap, s);
        }
        if (r < 0) {
                strv_free(v);
                return r;
        }
        rep->kept_by = v;
        return 0;
}

int fs_checkpoint_delete(const char *state, const char *name, struct fs_layers_report *rep,
                         char **ret_error)
{
        _cleanup_close_ int lock = -1;
        _cleanup_layers_ struct fs_layers *l = NULL;
        _cleanup_free_ char *top = NULL;
        struct refs rf = {0};
        size_t i;
        int r;

        r = fs_layers_lock_load(state, &lock, &l, ret_error);
        if (r < 0)
                return r;
        for (i = 0; i < l->n_cps && !streq(l->cps[i].name, name); i++)
                ;
        if (i == l->n_cps)
                return errorf_first(ret_error, -ENOENT, "no checkpoint '%s' (checkpoint --list)",
                                    name);
        if (l->cps[i].n_stack && !(top = strdup(l->cps[i].stack[l->cps[i].n_stack - 1])))
                return -ENOMEM;
        free(l->cps[i].name);
        for (size_t k = 0; k < l->cps[i].n_stack; k++)
                free(l->cps[i].stack[k]);
        free(l->cps[i].stack);
        memmove(&l->cps[i], &l->cps[i + 1], (l->n_cps - i - 1) * sizeof(*l->cps));
        l->n_cps--;
        fs_layers_prune_refs(l);
        r = fs_layers_save(l, "delete", ret_error);
        if (r < 0)
                return r;
        if (top) {
                rf.me = realpath(state, NULL);
                if (rf.me)
                        (void)refs_forks(&rf, rf.me, 0, false);
                r = users_of(l, top, &rf, rep);
                refs_clear(&rf);
                if (r < 0)
                        return r;
        }
        rep->depth = l->n_stack;
        return fs_layers_gc(l, "delete", rep, ret_error);
}
