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
 * taken once (O(depth)).
 *
 * The configs of the two folders (known_configs_in_folders: cloister
 * init's, and beside a fork's new config) are few and hand-made, and are
 * each loaded on every check. The remembered ones, one for every workspace
 * ever mounted (thousands on a host that runs many agents), are found
 * through an index instead, so that a check costs O(depth), not O(number
 * of workspaces): $XDG_STATE_HOME/cloister/claims/KEY/CONFIG, a symlink to
 * the config's resolved path, where CONFIG is a hash of that path and KEY
 * a hash of (kind of claim, "at" or "under", a resolved path or a
 * "#DEV:INO"). A claim y is recorded "at" its path and its own id, and
 * "under" each of its path's ancestors (itself and "/" included) and each
 * existing ancestor's id. Is x within some y: look up "at" x's ancestors
 * and their ids; does x contain some y: look up "under" x's path and id;
 * each only for the kinds that matter to x (claims_matter). What the index
 * finds is only a candidate: its config is loaded and compared as it is
 * now (claims_against), so an entry left by an older version of a config
 * refuses nothing. A workspace is recorded when it mounts (claims_record,
 * under claims/lock); the index is built from the remembered configs the
 * first time it is used (claims/built).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "claims.h"
#include "config.h"
#include "known.h"
#include "lib/errorf.h"
#include "lib/mkdir.h"
#include "lib/namehash.h"
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

/* ---- the index of the remembered workspaces' claims (see the top) ---- */

#define INDEX_NAME NAMEHASH_LEN

struct candidates {
        char **v; /* resolved config paths, each once */
        size_t n, allocated;
};

static void key_name(enum claim_kind kind, const char *rel, const char *value,
                     char out[static INDEX_NAME])
{
        char k[2] = {(char)('0' + kind), '\0'};

        namehash(k, rel, value, out);
}

static void id_value(const struct file_id *id, char out[static 48])
{
        snprintf(out, 48, "#%llx:%llx", (unsigned long long)id->dev, (unsigned long long)id->ino);
}

/* $XDG_STATE_HOME/cloister/claims, made if missing. */
static int index_open(int *ret_fd)
{
        _cleanup_free_ char *dir = NULL, *path = NULL;
        int fd, r = known_xdg_dir("state", &dir);

        if (r < 0)
                return r;
        if (asprintf(&path, "%s/claims", dir) < 0)
                return -ENOMEM;
        r = mkdir_p(path, 0755, 0700);
        if (r < 0)
                return r;
        fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        *ret_fd = fd;
        return 0;
}

/* One entry: KEY/CONFIG -> config. */
static int index_put(int dfd, const char *key, const char *config_name, const char *config)
{
        _cleanup_close_ int kfd = -1;
        char old[PATH_MAX];
        ssize_t n;

        if (mkdirat(dfd, key, 0700) < 0 && errno != EEXIST)
                return negative_errno();
        kfd = openat(dfd, key, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (kfd < 0)
                return negative_errno();
        if (symlinkat(config, kfd, config_name) == 0)
                return 0;
        if (errno != EEXIST)
                return negative_errno();
        n = readlinkat(kfd, config_name, old, sizeof(old) - 1);
        if (n >= 0 && (old[n] = '\0', streq(old, config)))
                return 0; /* recorded already */
        if (unlinkat(kfd, config_name, 0) < 0 || symlinkat(config, kfd, config_name) < 0)
                return negative_errno();
        return 0;
}

static int claim_record(int dfd, const struct claim *y, const char *config_name, const char *config)
{
        _cleanup_free_ char *p = strdup(y->path);
        char key[INDEX_NAME], id[48];
        int r;

        if (!p)
                return -ENOMEM;
        key_name(y->kind, "at", y->path, key);
        r = index_put(dfd, key, config_name, config);
        if (r >= 0 && y->exists && y->n_ids) {
                id_value(&y->ids[0], id);
                key_name(y->kind, "at", id, key);
                r = index_put(dfd, key, config_name, config);
        }
        for (size_t i = 0; r >= 0 && i < y->n_ids; i++) {
                id_value(&y->ids[i], id);
                key_name(y->kind, "under", id, key);
                r = index_put(dfd, key, config_name, config);
        }
        /* Under the path itself, each ancestor, and "/". */
        while (r >= 0) {
                char *slash = strrchr(p, '/');

                key_name(y->kind, "under", *p ? p : "/", key);
                r = index_put(dfd, key, config_name, config);
                if (!*p || !slash)
                        break;
                *slash = '\0';
        }
        return r;
}

/* Record c's claims (from file, resolved) in the index open at dfd; the caller holds the lock. */
static int config_record(int dfd, const struct config *c, const char *file)
{
        char name[INDEX_NAME];
        struct claims cl;
        int r = claims_of(c, NULL, &cl);

        if (r < 0)
                return r;
        namehash("config", "", file, name);
        for (size_t i = 0; r >= 0 && i < cl.n; i++)
                r = claim_record(dfd, &cl.v[i], name, file);
        claims_clear(&cl);
        return r;
}

/*
 * The first time: every remembered config in the index (once; claims/built
 * says it was). Under the lock, so two first mounts do it once.
 */
static int index_build(int dfd)
{
        _cleanup_strv_free_ char **known = NULL;
        _cleanup_close_ int fd = -1;
        size_t n = 0;
        int r;

        if (faccessat(dfd, "built", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
                return 0;
        r = known_configs(NULL, &known, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                _cleanup_config_ struct config *o = NULL;
                _cleanup_free_ char *err = NULL;

                if (config_load(known[i], &o, &err) < 0)
                        continue; /* names nothing anyone can mount */
                r = config_record(dfd, o, known[i]);
                if (r < 0)
                        return r;
        }
        fd = openat(dfd, "built", O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        return fd < 0 ? negative_errno() : 0;
}

static int index_lock(int dfd, int *ret_fd)
{
        int fd = openat(dfd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

        if (fd < 0)
                return negative_errno();
        if (flock(fd, LOCK_EX) < 0) {
                int r = negative_errno();
                close(fd);
                return r;
        }
        *ret_fd = fd;
        return 0;
}

/* The index open and built, for a check: dfd, or < 0. */
static int index_ready(int *ret_fd)
{
        _cleanup_close_ int dfd = -1, lock = -1;
        int r = index_open(&dfd);

        if (r < 0)
                return r;
        if (faccessat(dfd, "built", F_OK, AT_SYMLINK_NOFOLLOW) != 0) {
                r = index_lock(dfd, &lock);
                if (r >= 0)
                        r = index_build(dfd);
                if (r < 0)
                        return r;
        }
        *ret_fd = TAKE_FD(dfd);
        return 0;
}

int claims_record(const struct config *c)
{
        _cleanup_free_ char *file = realpath(c->file, NULL);
        _cleanup_close_ int dfd = -1, lock = -1;
        int r;

        if (!file)
                return negative_errno();
        r = index_open(&dfd);
        if (r >= 0)
                r = index_lock(dfd, &lock);
        if (r >= 0)
                r = index_build(dfd);
        if (r >= 0)
                r = config_record(dfd, c, file);
        return r;
}

static int candidates_add(struct candidates *cs, const char *config)
{
        char *p;

        for (size_t i = 0; i < cs->n; i++)
                if (streq(cs->v[i], config))
                        return 0;
        if (cs->n + 1 >= cs->allocated) {
                size_t a = MAX(cs->allocated * 2, (size_t)8);
                char **v = realloc(cs->v, a * sizeof(*v));
                if (!v)
                        return -ENOMEM;
                cs->v = v;
                cs->allocated = a;
        }
        p = strdup(config);
        if (!p)
                return -ENOMEM;
        cs->v[cs->n++] = p;
        cs->v[cs->n] = NULL;
        return 0;
}

/* Every config recorded under KEY (kind, rel, value). */
static int index_get(int dfd, enum claim_kind kind, const char *rel, const char *value,
                     struct candidates *cs)
{
        _cleanup_closedir_ DIR *d = NULL;
        char key[INDEX_NAME], target[PATH_MAX];
        struct dirent *de;
        int fd, r = 0;

        key_name(kind, rel, value, key);
        fd = openat(dfd, key, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : negative_errno();
        d = fdopendir(fd);
        if (!d) {
                r = negative_errno();
                close(fd);
                return r;
        }
        while (r >= 0 && (de = readdir(d))) {
                ssize_t n;

                if (de->d_name[0] == '.')
                        continue;
                n = readlinkat(dirfd(d), de->d_name, target, sizeof(target) - 1);
                if (n <= 0 || target[0] != '/')
                        continue;
                target[n] = '\0';
                r = candidates_add(cs, target);
        }
        return r;
}

/* The recorded configs that may hold a claim x is within, or that is within x. */
static int index_lookup(int dfd, const struct claim *x, struct candidates *cs)
{
        static const enum claim_kind kinds[] = {CLAIM_PLACE, CLAIM_SECRET, CLAIM_SOURCE};
        int r = 0;

        for (size_t k = 0; r >= 0 && k < ELEMENTSOF(kinds); k++) {
                struct claim probe = {.kind = kinds[k]};
                _cleanup_free_ char *p = NULL;
                char id[48];

                if (!claims_matter(x, &probe))
                        continue;
                p = strdup(x->path);
                if (!p)
                        return -ENOMEM;
                /* x within y: y is at x's path or an ancestor's, or at one of their ids. */
                while (r >= 0) {
                        char *slash = strrchr(p, '/');

                        r = index_get(dfd, kinds[k], "at", *p ? p : "/", cs);
                        if (!*p || !slash)
                                break;
                        *slash = '\0';
                }
                for (size_t i = 0; r >= 0 && i < x->n_ids; i++) {
                        id_value(&x->ids[i], id);
                        r = index_get(dfd, kinds[k], "at", id, cs);
                }
                /* y within x: y is under x's path, or under its id. */
                if (r >= 0)
                        r = index_get(dfd, kinds[k], "under", x->path, cs);
                if (r >= 0 && x->exists && x->n_ids) {
                        id_value(&x->ids[0], id);
                        r = index_get(dfd, kinds[k], "under", id, cs);
                }
        }
        return r;
}

/* ours against the config at path (resolved), loaded now; a config that no longer loads
 * names nothing anyone can mount. */
static int against_config(const struct claims *ours, const char *path, bool fork,
                          const char **ret_section, const char **ret_key, char **ret_error)
{
        _cleanup_config_ struct config *o = NULL;
        _cleanup_free_ char *err = NULL;
        struct claims theirs;
        int r;

        if (config_load(path, &o, &err) < 0)
                return 0;
        r = claims_of(o, NULL, &theirs);
        if (r < 0)
                return errorf(ret_error, r, "%s: %s", path, strerror(-r));
        if (!fork && streq(theirs.v[0].path, ours->v[0].path))
                r = 0; /* the same state: the same workspace, kept apart by its lock */
        else
                r = claims_against(ours, &theirs, ret_section, ret_key, ret_error);
        claims_clear(&theirs);
        return r;
}

/*
 * ours against every known config but its own (self, resolved, or NULL):
 * those of the folders (and of also_dir) each, the remembered ones through
 * the index. fork: a config naming the same state counts too.
 */
static int claims_against_known(const struct claims *ours, const char *self, const char *also_dir,
                                bool fork, const char **ret_section, const char **ret_key,
                                char **ret_error)
{
        _cleanup_strv_free_ char **known = NULL;
        _cleanup_close_ int dfd = -1;
        struct candidates cs = {0};
        size_t n = 0;
        /* No index where the state home can't be written (read-only, another user's): every
         * remembered config is loaded then, as before there was one. */
        bool indexed = index_ready(&dfd) >= 0;
        int r = indexed ? known_configs_in_folders(also_dir, &known, &n)
                        : known_configs(also_dir, &known, &n);

        if (r < 0)
                return errorf(ret_error, r, "cannot list the known configs: %s", strerror(-r));
        for (size_t i = 0; indexed && r >= 0 && i < ours->n; i++)
                r = index_lookup(dfd, &ours->v[i], &cs);
        if (r < 0) {
                strv_free(cs.v);
                return errorf(ret_error, r, "cannot read the index of known workspaces: %s",
                              strerror(-r));
        }
        for (size_t i = 0; r >= 0 && i < n; i++)
                if (!self || !streq(known[i], self))
                        r = against_config(ours, known[i], fork, ret_section, ret_key, ret_error);
        for (size_t i = 0; r >= 0 && i < cs.n; i++)
                if (!self || !streq(cs.v[i], self))
                        r = against_config(ours, cs.v[i], fork, ret_section, ret_key, ret_error);
        strv_free(cs.v);
        return r;
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
