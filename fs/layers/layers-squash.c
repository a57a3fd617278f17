/* SPDX-License-Identifier: MIT */
/*
 * layers-squash.c: cloister squash, the frozen layers of a stack merged
 * into one (docs/fs-design.md, "Squash").
 *
 * The new layer is written beside the live state (layers/ID) from the
 * merged view of the stack (lower-stack.c), as one upper tree over the
 * base: every entry of a frozen layer that the view shows, copied (data
 * by reflink where the store can, else copy_file_range) with all of its
 * metadata and its st_ino in its record; a directory merges with the base
 * directory its view merged with (by name, or by an "origin" redirect),
 * or is opaque; a base name the view hides gets a whiteout; a file whose
 * data is the base's stays a metacopy of it; the names of a file with
 * hard links are hard links again. Then layers.json names it as the whole
 * stack: the commit point. Checkpoints and forks keep the layers they
 * name; the ones nothing uses any more are removed.
 *
 * Offline only (fs.lock): the daemon's nodes hold entries of the layers.
 * The view is the same before and after, inode numbers and times
 * included; only ctimes are the copies' own.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format.h"
#include "journal.h"
#include "lower.h"
#include "layers.h"
#include "state.h"
#include "lib/crashpoint.h"
#include "lib/errorf.h"
#include "lib/util.h"

#define SQUASH_DEPTH_MAX 4096

struct squash {
        struct lower *stack, *base;
        struct {
                uint64_t ino;
                int fd; /* O_PATH on the first copy of a file with several names */
        } * links;
        size_t n_links, cap_links;
        size_t entries;
};

/* The base dir a view dir merges with, or NULL. */
static const struct lower_entry *base_part(const struct lower_entry *e)
{
        while (e->fz) {
                if (e->fz->opaque || !e->fz->below.mode)
                        return NULL;
                e = &e->fz->below;
        }
        return e;
}

/* The entry whose data a file is: itself, or what a metacopy stands for. */
static const struct lower_entry *data_part(const struct lower_entry *e)
{
        while (e->fz && e->fz->metacopy)
                e = &e->fz->below;
        return e;
}

struct names {
        char **v;
        size_t n, cap;
};

static int name_add(const char *name, const struct lower_entry *child, void *userdata)
{
        struct names *ns = userdata;
        (void)child;

        if (ns->n == ns->cap) {
                size_t cap = ns->cap ? ns->cap * 2 : 64;
                char **v = realloc(ns->v, cap * sizeof(char *));
                if (!v)
                        return -ENOMEM;
                ns->v = v;
                ns->cap = cap;
        }
        ns->v[ns->n] = strdup(name);
        return ns->v[ns->n++] ? 0 : -ENOMEM;
}

static void names_clear(struct names *ns)
{
        for (size_t i = 0; i < ns->n; i++)
                free(ns->v[i]);
        free(ns->v);
        *ns = (struct names){0};
}

static int link_of(struct squash *q, uint64_t ino)
{
        for (size_t i = 0; i < q->n_links; i++)
                if (q->links[i].ino == ino)
                        return q->links[i].fd;
        return -1;
}

static int link_add(struct squash *q, uint64_t ino, int fd)
{
        if (q->n_links == q->cap_links) {
                size_t cap = q->cap_links ? q->cap_links * 2 : 32;
                void *v = realloc(q->links, cap * sizeof(*q->links));
                if (!v) {
                        safe_close(fd);
                        return -ENOMEM;
                }
                q->links = v;
                q->cap_links = cap;
        }
        q->links[q->n_links].ino = ino;
        q->links[q->n_links++].fd = fd;
        return 0;
}

/* A non-dir entry of the view, written into out as en; rec gets its record. */
static int put_file(struct squash *q, const struct lower_entry *e, int out, const char *en,
                    json_t *rec)
{
        struct frozen_entry *f = e->fz;
        char p[FS_FD_PATH_MAX];
        const struct lower_entry *d;
        int fd = -1, in = -1, k, r = 0;
        struct stat st;

        if (fstatat(f->fd, "", &st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) < 0)
                return negative_errno();
        if ((k = link_of(q, e->ino)) >= 0) {
                /* Another name of a file already copied: a hard link again. */
                fs_fd_path(k, p);
                return linkat(AT_FDCWD, p, out, en, AT_SYMLINK_FOLLOW) < 0 ? negative_errno() : 0;
        }
        if (S_ISLNK(f->type)) {
                char target[PATH_MAX + 1];
                ssize_t n = readlinkat(f->fd, "", target, sizeof(target) - 1);
                if (n < 0)
                        return negative_errno();
                target[n] = 0;
                r = symlinkat(target, out, en) < 0 ? negative_errno() : 0;
        } else if (S_ISFIFO(f->type)) {
                r = mkfifoat(out, en, 0600) < 0 ? negative_errno() : 0;
        } else if (S_ISSOCK(f->type)) {
                r = mknodat(out, en, S_IFSOCK | 0600, 0) < 0 ? negative_errno() : 0;
        } else {
                /* A regular file, or a device placeholder (an empty file, attr.c). */
                fd = openat(out, en, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (fd < 0)
                        return negative_errno();
                d = data_part(e);
                if (S_ISREG(f->type) && !d->fz) {
                        /* Its data is the base's: a metacopy of it, as it was. */
                        if (json_object_set_new(rec, "metacopy", json_true()) < 0 ||
                            upper_json_set_name(rec, "origin", d->path) < 0)
                                r = -ENOMEM;
                } else if (S_ISREG(f->type)) {
                        struct stat ds;
                        fs_fd_path(d->fz->fd, p);
                        in = open(p, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
                        r = in < 0 || fstat(in, &ds) < 0
                                    ? negative_errno()
                                    : copyup_fd_data(in, fd, (uint64_t)ds.st_size);
                        safe_close(in);
                }
                fd = safe_close(fd);
        }
        if (r < 0)
                return r;
        fd = openat(out, en, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        r = fs_layer_meta_copy(f->fd, fd);
        if (r == 0 && lower_frozen_nlink(f, e->ino, st.st_nlink) > 1)
                return link_add(q, e->ino, fd); /* takes fd */
        safe_close(fd);
        return r;
}

struct whiteouts {
        struct squash *q;
        const struct lower_entry *dir;
        json_t *wh;
};

/* A base name the view hides: a whiteout. */
static int whiteout_cb(const char *name, const struct lower_entry *child, void *userdata)
{
        struct whiteouts *w = userdata;
        struct lower_entry e = {0};
        int r = lower_child(w->q->stack, w->dir, name, &e);
        (void)child;

        lower_entry_clear(&e);
        if (r == -ENOENT)
                return json_object_set_new_nocheck(w->wh, name, json_integer(1)) < 0 ? -ENOMEM : 0;
        return r < 0 ? r : 0;
}

/* Write the view dir dir (which merges with base_path in the base, or none) into out. */
static int put_dir(struct squash *q, const struct lower_entry *dir, int out, unsigned depth)
{
        struct names ns = {0};
        json_t *meta = json_pack("{s:{},s:{}}", "c", "wh"), *c, *wh;
        const struct lower_entry *bp = base_part(dir);
        int r;

        if (!meta)
                return -ENOMEM;
        if (depth > SQUASH_DEPTH_MAX) {
                json_decref(meta);
                return -ELOOP;
        }
        c = json_object_get(meta, "c");
        wh = json_object_get(meta, "wh");
        r = lower_list(q->stack, dir, name_add, &ns);
        for (size_t i = 0; r == 0 && i < ns.n; i++) {
                const char *name = ns.v[i];
                struct lower_entry e = {0};
                json_t *rec;
                char en[256];

                r = lower_child(q->stack, dir, name, &e);
                if (r == -ENOENT) {
                        r = 0;
                        continue;
                }
                if (r == 0 && !e.fz) {
                        /* A base entry: S's dir merges with the same base dir. */
                        lower_entry_clear(&e);
                        continue;
                }
                if (r == 0)
                        r = upper_name_escape(name, en);
                rec = r == 0 ? json_pack("{s:I}", "ino", (json_int_t)e.ino) : NULL;
                if (r == 0 && !rec)
                        r = -ENOMEM;
                if (r == 0 && S_ISDIR(e.mode)) {
                        const struct lower_entry *cb = base_part(&e);
                        _cleanup_free_ char *natural = bp ? lower_path_join(bp->path, name) : NULL;
                        _cleanup_close_ int cfd = -1;

                        if (!cb)
                                r = json_object_set_new(rec, "opaque", json_true()) < 0 ? -ENOMEM
                                                                                        : 0;
                        else if (!natural || !streq(natural, cb->path))
                                r = upper_json_set_name(rec, "origin", cb->path);
                        if (r == 0 && mkdirat(out, en, 0700) < 0)
                                r = negative_errno();
                        if (r == 0) {
                                cfd = openat(out, en,
                                             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                                r = cfd < 0 ? negative_errno() : put_dir(q, &e, cfd, depth + 1);
                        }
                        /* Its times last: filling it moved them. */
                        if (r == 0)
                                r = fs_layer_meta_copy(e.fz->fd, cfd);
                } else if (r == 0) {
                        r = upper_rec_add_type(rec, e.fz->type);
                        if (r == 0)
                                r = put_file(q, &e, out, en, rec);
                }
                if (r == 0 && json_object_set_nocheck(c, name, rec) < 0)
                        r = -ENOMEM;
                json_decref(rec);
                lower_entry_clear(&e);
                q->entries++;
        }
        names_clear(&ns);
        if (r == 0 && bp) {
                struct whiteouts w = {.q = q, .dir = dir, .wh = wh};
                r = lower_list(q->base, bp, whiteout_cb, &w);
        }
        if (r == 0)
                r = upper_meta_write(out, meta);
        json_decref(meta);
        return r;
}

/* The base lower, as the daemon opens it (daemon.c): the pinned commit, or a plain dir. */
static int base_open(const char *state, const char *source, struct lower **ret, char **ret_error)
{
        _cleanup_close_ int fsd = -1, cache = -1, bfd = -1;
        _cleanup_free_ char *fsdir = NULL;
        char pinned[GIT_OID_HEXSZ + 2] = "";
        ssize_t n;

        if (asprintf(&fsdir, "%s/fs", state) < 0)
                return -ENOMEM;
        fsd = open(fsdir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fsd < 0)
                return errorf_first(ret_error, negative_errno(), "cannot open '%s': %m", fsdir);
        bfd = openat(fsd, "base", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (bfd < 0)
                return lower_dir_open(source, ret, ret_error);
        n = read(bfd, pinned, GIT_OID_HEXSZ + 1);
        if (n < GIT_OID_HEXSZ)
                return errorf_first(ret_error, -EINVAL, "%s/base: not a commit id", fsdir);
        pinned[GIT_OID_HEXSZ] = 0;
        cache = openat(fsd, "cache", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (cache < 0)
                return errorf_first(ret_error, negative_errno(), "cannot open '%s/cache': %m",
                                    fsdir);
        return lower_git_open(source, pinned, cache, 0, ret, ret_error);
}

int fs_squash(const char *state, const char *source, struct fs_layers_report *rep, char **ret_error)
{
        _cleanup_close_ int busy = -1, lock = -1, sfd = -1;
        _cleanup_layers_ struct fs_layers *l = NULL;
        _cleanup_free_ char *rel = NULL, *top_from = NULL;
        struct squash q = {0};
        struct lower_entry root = {0};
        char id[FS_LAYER_ID_LEN + 1];
        bool committed = false;
        size_t depth;
        int r;

        busy = fs_layers_lock_offline(state);
        if (busy == -EBUSY)
                return errorf_first(ret_error, -EBUSY,
                                    "the workspace is mounted: unmount it first");
        if (busy < 0)
                return errorf_first(ret_error, busy, "cannot lock '%s/fs.lock': %s", state,
                                    strerror(-busy));
        r = fs_layers_lock_load(state, &lock, &l, ret_error);
        if (r < 0)
                return r;
        depth = l->n_stack;
        if (depth < 2) {
                /* Nothing to merge; what a squash killed while removing left goes. */
                rep->depth = depth;
                return fs_layers_gc(l, "squash", rep, ret_error);
        }
        r = base_open(state, source, &q.base, ret_error);
        if (r < 0)
                return r;
        q.stack = q.base;
        for (size_t i = 0; r == 0 && i < l->n_stack; i++) {
                const struct fs_layer_ref *ref = fs_layers_ref(l, l->stack[i]);
                _cleanup_free_ char *path = fs_layers_ref_path(l, ref);
                struct lower *next = NULL;
                int fd = path ? open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;

                if (fd < 0 || fs_layer_marker_check(fd, ref->id) < 0) {
                        safe_close(fd);
                        r = errorf_first(ret_error, -ESTALE, "frozen layer %s at '%s' is missing",
                                         ref->id, path ? path : "?");
                        break;
                }
                r = lower_stack_push(q.stack, 1, fd, ref->id, &next);
                if (r == 0) {
                        if (q.stack != q.base)
                                lower_free(q.stack);
                        q.stack = next;
                }
                if (i + 1 == l->n_stack)
                        top_from = path ? strdup(path) : NULL;
        }
        if (r == 0)
                r = fs_layer_dir_new(state, top_from, id, &rel, &sfd, ret_error);
        crashpoint("squash");
        if (r == 0)
                r = lower_root(q.stack, &root);
        if (r == 0)
                r = put_dir(&q, &root, sfd, 0);
        if (r == 0) /* the root's times, which filling it moved */
                r = fs_layer_meta_copy(root.fz->fd, sfd);
        if (r == 0 && syncfs(sfd) < 0)
                r = negative_errno();
        if (r < 0) {
                (void)errorf_first(ret_error, r, "cannot write the merged layer: %s", strerror(-r));
                goto out;
        }
        crashpoint("squash");
        {
                /* The whole stack is the new layer now: the commit point. */
                char **stack = calloc(2, sizeof(char *));
                struct fs_layer_ref *v = realloc(l->layers, (l->n_layers + 1) * sizeof(*v));
                if (!stack || !v || !(stack[0] = strdup(id))) {
                        free(stack);
                        r = -ENOMEM;
                        goto out;
                }
                l->layers = v;
                v[l->n_layers] = (struct fs_layer_ref){.dir = strdup(rel)};
                memcpy(v[l->n_layers].id, id, sizeof(id));
                if (!v[l->n_layers].dir) {
                        strv_free(stack);
                        r = -ENOMEM;
                        goto out;
                }
                l->n_layers++;
                for (size_t i = 0; i < l->n_stack; i++)
                        free(l->stack[i]);
                free(l->stack);
                l->stack = stack;
                l->n_stack = 1;
        }
        fs_layers_prune_refs(l);
        r = fs_layers_save(l, "squash", ret_error);
        if (r < 0)
                goto out;
        committed = true;
        {
                _cleanup_close_ int stfd = open(state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                _cleanup_free_ char *f = NULL;
                if (stfd >= 0 && asprintf(&f, "{\"depth\":%zu,\"layer\":\"%s\"}", depth, id) >= 0)
                        (void)journal_mark_append(stfd, "journal.jsonl", "squash", f);
        }
        rep->depth = 1;
        r = fs_layers_gc(l, "squash", rep, ret_error);
out:
        lower_entry_clear(&root);
        for (size_t i = 0; i < q.n_links; i++)
                safe_close(q.links[i].fd);
        free(q.links);
        if (q.stack && q.stack != q.base)
                lower_free(q.stack);
        lower_free(q.base);
        if (!committed && rel) {
                _cleanup_close_ int lfd = -1;
                char *slash = strrchr(rel, '/');
                _cleanup_free_ char *ldir = NULL;
                if (slash && asprintf(&ldir, "%s/layers", state) >= 0 &&
                    (lfd = open(ldir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >= 0)
                        (void)state_rm_rf_at(lfd, slash + 1, 0);
        }
        return r;
}
