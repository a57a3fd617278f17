/* SPDX-License-Identifier: MIT */
/*
 * claims.c: where a workspace's host paths may lie (claims.h;
 * docs/security.md). For cloister mount, run, check and fork.
 *
 * A workspace claims host paths: its state (broker keys, layers, journal),
 * its mountpoint, its [broker] dir, and its sources (the [repo] source work
 * tree, each [mirror] source, each [home] seed), which its agent reads. No
 * state or mountpoint may lie inside another workspace's claimed path, nor
 * contain one, and no source may hold another's broker dir: another's
 * agent would read its keys, or write into its layers, which `cloister
 * diff` then shows as its own work. Two workspaces may share a source, and
 * a broker.
 *
 * Paths are compared resolved: realpath of the nearest part that exists,
 * the rest put back (config values are clean: no "..", no trailing "/"),
 * and, for what exists, by device and inode, so that a bind mount of a
 * directory is that directory. Each path's existing ancestors' ids are
 * taken once (O(depth)); a check is then one pass over the known configs
 * (known_configs), each loaded once. An index of the claims by path
 * would make it O(depth): the comparisons below are the ones it would
 * answer (is this path, or one of its ancestors, claimed; is anything
 * below it claimed).
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "claims.h"
#include "config.h"
#include "known.h"
#include "lib/errorf.h"
#include "lib/util.h"

struct file_id {
        dev_t dev;
        ino_t ino;
};

enum claim_kind {
        CLAIM_PLACE,  /* the state, the mountpoint: the workspace's alone */
        CLAIM_SECRET, /* [broker] dir: keys; a broker may serve several workspaces */
        CLAIM_SOURCE, /* read by the agent ([repo], [mirror], a [home] seed); may be shared */
};

struct claim {
        enum claim_kind kind;
        const char *section, *key; /* the config's, e.g. "workspace", "state" */
        char *path;                /* resolved */
        bool exists;               /* ids[0] is path's own */
        size_t n_ids;              /* the existing ancestors, nearest first */
        struct file_id *ids;
};

/* v[0]: the state, v[1]: the mountpoint, v[2]: the broker dir, then the sources. */
struct claims {
        const char *name; /* the workspace's */
        const char *file; /* its config's */
        struct claim *v;
        size_t n;
};

static void claims_clear(struct claims *cl)
{
        for (size_t i = 0; i < cl->n; i++) {
                free(cl->v[i].path);
                free(cl->v[i].ids);
        }
        free(cl->v);
        cl->v = NULL;
        cl->n = 0;
}

/* Is a equal to b, or beneath it? Both resolved. */
static bool path_within(const char *a, const char *b)
{
        size_t n = strlen(b);

        if (streq(b, "/"))
                return true;
        return strncmp(a, b, n) == 0 && (a[n] == '\0' || a[n] == '/');
}

/*
 * p resolved: realpath of its nearest existing ancestor, the rest put
 * back; and the ids of the existing ancestors, p's own first if it exists.
 */
static int claim_make(struct claim *cl, enum claim_kind kind, const char *section, const char *key,
                      const char *p)
{
        _cleanup_free_ char *cut = strdup(p), *real = NULL;
        struct stat st;
        size_t keep, n = 1;

        *cl = (struct claim){.kind = kind, .section = section, .key = key};
        if (!cut)
                return -ENOMEM;
        for (;;) {
                char *slash;
                real = realpath(*cut ? cut : "/", NULL);
                if (real)
                        break;
                /* Not there yet, or closed to this user: compared by its path from here. */
                slash = strrchr(cut, '/');
                if (!slash)
                        return -EINVAL;
                *slash = '\0';
        }
        keep = strlen(cut);
        if (asprintf(&cl->path, "%s%s", streq(real, "/") && p[keep] ? "" : real, p + keep) < 0) {
                cl->path = NULL;
                return -ENOMEM;
        }
        cl->exists = !p[keep];
        for (const char *q = real; *q; q++)
                n += *q == '/';
        cl->ids = calloc(n + 1, sizeof(*cl->ids));
        if (!cl->ids)
                return -ENOMEM;
        /* Up from the nearest existing part, through the resolved path. */
        for (char *q = real; cl->n_ids <= n;) {
                char *slash;
                if (stat(*q ? q : "/", &st) == 0)
                        cl->ids[cl->n_ids++] = (struct file_id){st.st_dev, st.st_ino};
                else if (cl->n_ids == 0)
                        cl->exists = false;
                if (!*q)
                        break;
                slash = strrchr(q, '/');
                if (!slash)
                        break;
                *slash = '\0';
        }
        return 0;
}

static int claims_of(const struct config *c, const char *state, struct claims *ret)
{
        _cleanup_free_ char *mnt = NULL, *broker = NULL;
        struct claims cl = {.name = c->workspace.name, .file = c->file};
        int r;

        if (state) {
                /* A fork: its mountpoint and broker dir are its state's defaults. */
                if (asprintf(&mnt, "%s/mnt", state) < 0 ||
                    asprintf(&broker, "%s/broker", state) < 0)
                        return -ENOMEM;
        } else {
                state = c->workspace.state;
        }
        cl.v = calloc(4 + c->n_mirrors + c->home.n_seeds, sizeof(*cl.v));
        if (!cl.v)
                return -ENOMEM;
        r = claim_make(&cl.v[cl.n++], CLAIM_PLACE, "workspace", "state", state);
        if (r >= 0)
                r = claim_make(&cl.v[cl.n++], CLAIM_PLACE, "workspace", "mountpoint",
                               mnt ? mnt : c->workspace.mountpoint);
        if (r >= 0)
                r = claim_make(&cl.v[cl.n++], CLAIM_SECRET, "broker", "dir",
                               broker ? broker : c->broker.dir);
        if (r >= 0)
                r = claim_make(&cl.v[cl.n++], CLAIM_SOURCE, "repo", "source", c->repo.source);
        for (size_t i = 0; r >= 0 && i < c->n_mirrors; i++)
                r = claim_make(&cl.v[cl.n++], CLAIM_SOURCE, "mirror", "source",
                               c->mirrors[i].source);
        for (size_t i = 0; r >= 0 && i < c->home.n_seeds; i++)
                r = claim_make(&cl.v[cl.n++], CLAIM_SOURCE, "home", "seed",
                               c->home.seeds[i].source);
        if (r < 0) {
                claims_clear(&cl);
                return r;
        }
        *ret = cl;
        return 0;
}

/* Is x inside y (or y itself): by path, or by an ancestor of x that is y? */
static bool claim_within(const struct claim *x, const struct claim *y)
{
        if (path_within(x->path, y->path))
                return true;
        if (!y->exists || !y->n_ids)
                return false;
        for (size_t i = 0; i < x->n_ids; i++)
                if (x->ids[i].dev == y->ids[0].dev && x->ids[i].ino == y->ids[0].ino)
                        return true;
        return false;
}

/* How a message names it: "state", "[broker] dir", "[repo] source", ... */
static const char *what(const struct claim *cl)
{
        return cl->kind == CLAIM_PLACE        ? cl->key
               : cl->kind == CLAIM_SECRET     ? "[broker] dir"
               : streq(cl->section, "repo")   ? "[repo] source"
               : streq(cl->section, "mirror") ? "[mirror] source"
                                              : "[home] seed";
}

/* Does overlap between a and b matter? Not between two sources, nor a broker dir's with a
 * place or another broker dir: only where one's agent would read the other's. */
static bool claims_matter(const struct claim *a, const struct claim *b)
{
        if (a->kind == CLAIM_SOURCE)
                return b->kind != CLAIM_SOURCE;
        if (a->kind == CLAIM_SECRET)
                return b->kind == CLAIM_SOURCE;
        return b->kind != CLAIM_SECRET;
}

static void key_set(const struct claim *cl, const char **ret_section, const char **ret_key)
{
        if (ret_section)
                *ret_section = cl->section;
        if (ret_key)
                *ret_key = cl->key;
}

/* ours against theirs: 0, or -EEXIST and why. */
static int claims_against(const struct claims *ours, const struct claims *theirs,
                          const char **ret_section, const char **ret_key, char **ret_error)
{
        for (size_t i = 0; i < ours->n; i++)
                for (size_t j = 0; j < theirs->n; j++) {
                        const struct claim *a = &ours->v[i], *b = &theirs->v[j];
                        bool in, holds;

                        if (!claims_matter(a, b))
                                continue;
                        in = claim_within(a, b);
                        holds = !in && claim_within(b, a);

                        if (!in && !holds)
                                continue;
                        key_set(a, ret_section, ret_key);
                        return errorf(ret_error, -EEXIST,
                                      "%s '%s' %s the %s '%s' of another workspace, '%s' (%s): one "
                                      "workspace's agent could read or change the other's; "
                                      "give each workspace places of its own",
                                      what(a), a->path,
                                      streq(a->path, b->path) ? "is"
                                      : in                    ? "is inside"
                                                              : "contains",
                                      what(b), b->path, theirs->name, theirs->file);
                }
        return 0;
}

/* A workspace's own paths: state, mountpoint, broker dir apart from its sources; the
 * state and the mountpoint apart from each other. */
static int claims_own(const struct claims *cl, const char **ret_section, const char **ret_key,
                      char **ret_error)
{
        const struct claim *state = &cl->v[0], *mnt = &cl->v[1];
        _cleanup_free_ char *own_mnt = NULL;

        for (size_t i = 3; i < cl->n; i++)
                for (size_t k = 0; k < 3; k++) {
                        const struct claim *a = &cl->v[k];
                        if (!claim_within(a, &cl->v[i]) && !claim_within(&cl->v[i], a))
                                continue;
                        key_set(a, ret_section, ret_key);
                        return errorf(ret_error, -EEXIST,
                                      "%s '%s' overlaps its own %s '%s': the agent would "
                                      "see it, or it the agent's work",
                                      what(a), a->path, what(&cl->v[i]), cl->v[i].path);
                }
        if (claim_within(state, mnt)) {
                key_set(state, ret_section, ret_key);
                return errorf(ret_error, -EEXIST,
                              "state '%s' is inside its own mountpoint '%s': the mount would "
                              "hide it",
                              state->path, mnt->path);
        }
        if (asprintf(&own_mnt, "%s/mnt", state->path) < 0)
                return errorf(ret_error, -ENOMEM, "out of memory");
        if (claim_within(mnt, state) && !path_within(mnt->path, own_mnt)) {
                key_set(mnt, ret_section, ret_key);
                return errorf(ret_error, -EEXIST,
                              "mountpoint '%s' is inside its own state '%s' but not in '%s': "
                              "the mount would cover the state's own files",
                              mnt->path, state->path, own_mnt);
        }
        return 0;
}

/*
 * ours against every known config but its own (self, resolved, or NULL),
 * loaded one at a time. fork: a config naming the same state counts too.
 */
static int claims_against_known(const struct claims *ours, const char *self, const char *also_dir,
                                bool fork, const char **ret_section, const char **ret_key,
                                char **ret_error)
{
        _cleanup_strv_free_ char **known = NULL;
        size_t n = 0;
        int r = known_configs(also_dir, &known, &n);

        if (r < 0)
                return errorf(ret_error, r, "cannot list the known configs: %s", strerror(-r));
        for (size_t i = 0; i < n; i++) {
                _cleanup_config_ struct config *o = NULL;
                _cleanup_free_ char *err = NULL;
                struct claims theirs;

                if (self && streq(known[i], self))
                        continue;
                if (config_load(known[i], &o, &err) < 0)
                        continue; /* names nothing anyone can mount */
                r = claims_of(o, NULL, &theirs);
                if (r < 0)
                        return errorf(ret_error, r, "%s: %s", known[i], strerror(-r));
                if (!fork && streq(theirs.v[0].path, ours->v[0].path))
                        r = 0; /* the same state: the same workspace, kept apart by its lock */
                else
                        r = claims_against(ours, &theirs, ret_section, ret_key, ret_error);
                claims_clear(&theirs);
                if (r < 0)
                        return r;
        }
        return 0;
}

int claims_check(const struct config *c, const char **ret_section, const char **ret_key,
                 char **ret_error)
{
        _cleanup_free_ char *self = realpath(c->file, NULL);
        struct claims ours;
        int r = claims_of(c, NULL, &ours);

        if (r < 0)
                return errorf(ret_error, r, "cannot resolve the workspace's paths: %s",
                              strerror(-r));
        r = claims_own(&ours, ret_section, ret_key, ret_error);
        if (r >= 0)
                r = claims_against_known(&ours, self, NULL, false, ret_section, ret_key, ret_error);
        claims_clear(&ours);
        return r;
}

int claims_check_fork(const struct config *c, const char *new_config, const char *state,
                      char **ret_error)
{
        _cleanup_free_ char *dir = strdup(new_config);
        struct claims ours, parent;
        int r;

        if (!dir)
                return errorf(ret_error, -ENOMEM, "out of memory");
        r = claims_of(c, state, &ours);
        if (r < 0)
                return errorf(ret_error, r, "state '%s': cannot resolve it: %s", state,
                              strerror(-r));
        r = claims_of(c, NULL, &parent);
        if (r < 0) {
                claims_clear(&ours);
                return errorf(ret_error, r, "cannot resolve the workspace's paths: %s",
                              strerror(-r));
        }
        /* That the state does not exist yet is fs_fork_state's to say (it makes it with
         * mkdir), as a leftover of this same fork it tells apart. */
        r = claims_against(&ours, &parent, NULL, NULL, ret_error);
        if (r >= 0)
                r = claims_against_known(&ours, NULL, dirname(dir), true, NULL, NULL, ret_error);
        claims_clear(&ours);
        claims_clear(&parent);
        return r;
}
