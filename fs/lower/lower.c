/* SPDX-License-Identifier: MIT */
/*
 * lower.c: what both lower-layer kinds share: entry helpers, dispatch and
 * the inode numbers of lower entries.
 *
 * Lower inode numbers are a hash of the part number and the path, not of
 * the object id: identical files must not look like hard links, and the
 * path of a lower entry never changes for the life of a state (the base
 * revision is fixed), so the number is stable across remounts without any
 * bookkeeping. The top bits (01) keep them apart from upper (10) and mirror
 * (11) numbers; synthetic nodes use small numbers.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lower-private.h"
#include "lib/util.h"

/* The references of frozen entries and layers (lower-stack.c makes them):
 * here, so that lower.c's entry helpers need not call into a kind. */
void lower_frozen_layer_unref(struct frozen_layer *f)
{
        while (f && atomic_fetch_sub(&f->refs, 1) == 1) {
                struct frozen_layer *below = f->below;
                safe_close(f->root_fd);
                json_decref(f->aliases);
                pthread_mutex_destroy(&f->lock);
                free(f);
                f = below;
        }
}

void lower_frozen_entry_ref(struct frozen_entry *f)
{
        atomic_fetch_add(&f->refs, 1);
}

void lower_frozen_entry_unref(struct frozen_entry *f)
{
        if (!f || atomic_fetch_sub(&f->refs, 1) != 1)
                return;
        safe_close(f->fd);
        json_decref(f->meta);
        lower_entry_clear(&f->below);
        lower_frozen_layer_unref(f->layer);
        pthread_mutex_destroy(&f->lock);
        free(f);
}

void lower_entry_clear(struct lower_entry *e)
{
        free(e->path);
        free(e->vpath);
        if (e->fz)
                lower_frozen_entry_unref(e->fz);
        *e = (struct lower_entry){0};
}

int lower_entry_copy(const struct lower_entry *from, struct lower_entry *to)
{
        char *p = strdup(from->path ? from->path : "");
        char *v = from->vpath ? strdup(from->vpath) : NULL;
        if (!p || (from->vpath && !v)) {
                free(p);
                free(v);
                return -ENOMEM;
        }
        *to = *from;
        to->path = p;
        to->vpath = v;
        if (to->fz)
                lower_frozen_entry_ref(to->fz);
        return 0;
}

uint64_t lower_entry_ino(unsigned part, const struct lower_entry *e)
{
        return e->ino ? e->ino : lower_ino(part, e->path);
}

char *lower_path_join(const char *dir, const char *name)
{
        char *p;
        if (!dir || !*dir)
                return strdup(name);
        if (asprintf(&p, "%s/%s", dir, name) < 0)
                return NULL;
        return p;
}

uint64_t lower_ino(unsigned part, const char *path)
{
        /* FNV-1a, 64 bit; collisions at 10^5 entries are ~1e-9 likely. */
        uint64_t h = 0xcbf29ce484222325ULL;
        h = (h ^ (part & 0xff)) * 0x100000001b3ULL;
        for (const unsigned char *c = (const unsigned char *)path; *c; c++)
                h = (h ^ *c) * 0x100000001b3ULL;
        return (h & ((1ULL << 62) - 1)) | (1ULL << 62);
}

void lower_free(struct lower *l)
{
        if (!l)
                return;
        l->ops->free(l);
}

bool lower_is_git(const struct lower *l)
{
        return l->ops->git;
}

const char *lower_commit_hex(const struct lower *l)
{
        return lower_is_git(l) ? l->commit_hex : NULL;
}

int64_t lower_commit_time(const struct lower *l)
{
        return lower_is_git(l) ? (int64_t)l->time.tv_sec : 0;
}

const char *lower_objects_dir(const struct lower *l)
{
        return l->objects_dir;
}

int lower_root(struct lower *l, struct lower_entry *ret)
{
        return l->ops->root(l, ret);
}

int lower_child(struct lower *l, const struct lower_entry *dir, const char *name,
                struct lower_entry *ret)
{
        if (!S_ISDIR(dir->mode))
                return -ENOTDIR;
        return l->ops->child(l, dir, name, ret);
}

int lower_lookup_path(struct lower *l, const char *path, struct lower_entry *ret)
{
        return l->ops->lookup_path(l, path, ret);
}

int lower_size(struct lower *l, struct lower_entry *e)
{
        if (e->size_known)
                return 0;
        return l->ops->size(l, e);
}

int lower_list(struct lower *l, const struct lower_entry *dir, lower_list_fn fn, void *userdata)
{
        if (!S_ISDIR(dir->mode))
                return -ENOTDIR;
        return l->ops->list(l, dir, fn, userdata);
}

int lower_open_data(struct lower *l, const struct lower_entry *e, int *ret_fd)
{
        if (!S_ISREG(e->mode))
                return -EINVAL;
        return l->ops->open_data(l, e, ret_fd);
}

int lower_read_small(struct lower *l, struct lower_entry *e, size_t max, char **ret,
                     size_t *ret_len)
{
        if (!l->ops->read_small)
                return -EOPNOTSUPP; /* a plain directory: open its file */
        return l->ops->read_small(l, e, max, ret, ret_len);
}

int lower_readlink(struct lower *l, const struct lower_entry *e, char **ret)
{
        if (!S_ISLNK(e->mode))
                return -EINVAL;
        return l->ops->readlink(l, e, ret);
}
