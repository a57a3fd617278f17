/* SPDX-License-Identifier: MIT */
/*
 * lower-tree.c: the git lower's directory index and its bounded cache
 * (lower-tree.h says why it exists).
 *
 * One index is one allocation: the header, the entries (28 bytes each: id,
 * name offset and length, mode), the name-sorted permutation (4 bytes each)
 * and the names. What it costs is what the budget is charged, plus a
 * fixed allowance for the allocator's overhead. The cache is a hash table
 * by object id and an LRU list; an index in use (refs > 0) is never freed,
 * so a budget smaller than the trees in use is overrun for as long as they
 * are in use, and no longer.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lower-tree.h"
#include "lib/util.h"

#define MALLOC_OVERHEAD 16

struct tree_cache {
        pthread_mutex_t lock;
        struct tree_index **buckets;
        size_t n_buckets;      /* a power of two */
        struct tree_index lru; /* sentinel: lru.lru_next is the most recently used */
        struct tree_cache_stats st;
};

int tree_cache_new(uint64_t budget, struct tree_cache **ret)
{
        struct tree_cache *c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->n_buckets = 64;
        c->buckets = calloc(c->n_buckets, sizeof(*c->buckets));
        if (!c->buckets) {
                free(c);
                return -ENOMEM;
        }
        pthread_mutex_init(&c->lock, NULL);
        c->lru.lru_next = c->lru.lru_prev = &c->lru;
        c->st.budget = budget ? budget : TREE_CACHE_BUDGET_DEFAULT;
        *ret = c;
        return 0;
}

static void index_free(struct tree_index *t)
{
        free(__atomic_load_n(&t->noted_dir, __ATOMIC_ACQUIRE));
        free(t);
}

void tree_cache_free(struct tree_cache *c)
{
        if (!c)
                return;
        for (struct tree_index *t = c->lru.lru_next, *next; t != &c->lru; t = next) {
                next = t->lru_next;
                index_free(t);
        }
        free(c->buckets);
        pthread_mutex_destroy(&c->lock);
        free(c);
}

static size_t bucket_of(const struct tree_cache *c, const git_oid *oid)
{
        uint64_t h;
        memcpy(&h, oid->id, sizeof(h)); /* an object id is already a hash */
        return (size_t)h & (c->n_buckets - 1);
}

static struct tree_index *find_locked(struct tree_cache *c, const git_oid *oid)
{
        for (struct tree_index *t = c->buckets[bucket_of(c, oid)]; t; t = t->hnext)
                if (git_oid_equal(&t->oid, oid))
                        return t;
        return NULL;
}

static void lru_unlink(struct tree_index *t)
{
        t->lru_prev->lru_next = t->lru_next;
        t->lru_next->lru_prev = t->lru_prev;
}

static void lru_push(struct tree_cache *c, struct tree_index *t)
{
        t->lru_next = c->lru.lru_next;
        t->lru_prev = &c->lru;
        c->lru.lru_next->lru_prev = t;
        c->lru.lru_next = t;
}

/* Twice the buckets once there are more indexes than buckets; on ENOMEM
 * the chains just grow longer. */
static void grow_locked(struct tree_cache *c)
{
        size_t n = c->n_buckets * 2;
        struct tree_index **b;

        if (c->st.entries <= c->n_buckets)
                return;
        b = calloc(n, sizeof(*b));
        if (!b)
                return;
        for (size_t i = 0; i < c->n_buckets; i++)
                for (struct tree_index *t = c->buckets[i], *next; t; t = next) {
                        next = t->hnext;
                        uint64_t h;
                        memcpy(&h, t->oid.id, sizeof(h));
                        t->hnext = b[h & (n - 1)];
                        b[h & (n - 1)] = t;
                }
        free(c->buckets);
        c->buckets = b;
        c->n_buckets = n;
}

static void remove_locked(struct tree_cache *c, struct tree_index *t)
{
        struct tree_index **p = &c->buckets[bucket_of(c, &t->oid)];
        while (*p != t)
                p = &(*p)->hnext;
        *p = t->hnext;
        lru_unlink(t);
        c->st.entries--;
        c->st.bytes -= t->bytes;
}

/* Free the least recently used indexes that no one holds until the cache fits. */
static void evict_locked(struct tree_cache *c)
{
        struct tree_index *t = c->lru.lru_prev;
        while (c->st.bytes > c->st.budget && t != &c->lru) {
                struct tree_index *prev = t->lru_prev;
                if (t->refs == 0) {
                        remove_locked(c, t);
                        index_free(t);
                        c->st.evictions++;
                }
                t = prev;
        }
}

struct sort_ctx {
        const struct tree_ent *ents;
        const char *names;
};

static int by_name_cmp(const void *a, const void *b, void *userdata)
{
        const struct sort_ctx *s = userdata;
        return strcmp(s->names + s->ents[*(const uint32_t *)a].name_off,
                      s->names + s->ents[*(const uint32_t *)b].name_off);
}

/*
 * Can the .gitattributes blob id make a checkout convert a file? With the
 * lower's fixed config (core.eol = lf, no autocrlf) only an eol value of
 * crlf and the ident attribute convert (lower-git.c, conv_decide), and
 * attribute names and that value are case-sensitive, so a file that
 * mentions neither "crlf" nor "ident" cannot; nor can a macro help (the
 * lower's repository has no work tree, so libgit2 takes no macro from a
 * .gitattributes). Not parsed, only searched: a false "yes" costs an
 * attribute lookup, never a wrong answer. Unreadable: yes.
 */
static bool attributes_may_convert(git_repository *repo, const git_oid *id)
{
        git_blob *blob = NULL;
        const void *p;
        size_t n;
        bool r;

        if (git_blob_lookup(&blob, repo, id) < 0)
                return true;
        p = git_blob_rawcontent(blob);
        n = (size_t)git_blob_rawsize(blob);
        r = memmem(p, n, "crlf", 4) || memmem(p, n, "ident", 5);
        git_blob_free(blob);
        return r;
}

/* Read and parse tree oid (libgit2's parser) into a fresh index. */
static int index_build(git_repository *repo, const git_oid *oid, struct tree_index **ret)
{
        git_tree *tree = NULL;
        struct tree_index *t;
        struct tree_ent *ents;
        uint32_t *by_name;
        char *names;
        size_t n, names_len = 0, size;

        if (git_tree_lookup(&tree, repo, oid) < 0)
                return -EIO;
        n = git_tree_entrycount(tree);
        if (n > UINT32_MAX / 2) {
                git_tree_free(tree);
                return -EFBIG;
        }
        for (size_t i = 0; i < n; i++)
                names_len += strlen(git_tree_entry_name(git_tree_entry_byindex(tree, i))) + 1;
        /* header, entries, permutation, names: each part stays aligned */
        size = sizeof(*t) + n * sizeof(*ents) + n * sizeof(*by_name) + names_len;
        t = malloc(size);
        if (!t) {
                git_tree_free(tree);
                return -ENOMEM;
        }
        *t = (struct tree_index){.oid = *oid, .n = (uint32_t)n, .bytes = size + MALLOC_OVERHEAD};
        ents = (struct tree_ent *)(t + 1);
        by_name = (uint32_t *)(ents + n);
        names = (char *)(by_name + n);
        names_len = 0;
        for (size_t i = 0; i < n; i++) {
                const git_tree_entry *te = git_tree_entry_byindex(tree, i);
                const char *name = git_tree_entry_name(te);
                size_t len = strlen(name);
                ents[i] = (struct tree_ent){.oid = *git_tree_entry_id(te),
                                            .name_off = (uint32_t)names_len,
                                            .name_len = (uint16_t)MIN(len, (size_t)UINT16_MAX),
                                            .mode = (uint16_t)git_tree_entry_filemode(te)};
                memcpy(names + names_len, name, len + 1);
                names_len += len + 1;
                by_name[i] = (uint32_t)i;
                if (streq(name, ".gitattributes") &&
                    git_tree_entry_filemode(te) != GIT_FILEMODE_TREE)
                        t->attr_converts = attributes_may_convert(repo, git_tree_entry_id(te));
        }
        git_tree_free(tree);
        /* git sorts a folder's name as if it ended in '/': not strcmp() order */
        qsort_r(by_name, n, sizeof(*by_name), by_name_cmp,
                &(struct sort_ctx){.ents = ents, .names = names});
        t->ents = ents;
        t->by_name = by_name;
        t->names = names;
        *ret = t;
        return 0;
}

int tree_cache_get(struct tree_cache *c, git_repository *repo, const git_oid *oid,
                   struct tree_index **ret)
{
        struct tree_index *t, *other;
        int r;

        pthread_mutex_lock(&c->lock);
        t = find_locked(c, oid);
        if (t) {
                t->refs++;
                lru_unlink(t);
                lru_push(c, t);
                c->st.hits++;
        } else {
                c->st.misses++;
        }
        pthread_mutex_unlock(&c->lock);
        if (t) {
                *ret = t;
                return 0;
        }

        /* Built unlocked: a big tree takes a while to read and parse. Two
         * threads may build the same one; the second keeps the first's. */
        r = index_build(repo, oid, &t);
        if (r < 0)
                return r;
        pthread_mutex_lock(&c->lock);
        other = find_locked(c, oid);
        if (other) {
                index_free(t);
                t = other;
                lru_unlink(t);
        } else {
                size_t b = bucket_of(c, oid);
                t->hnext = c->buckets[b];
                c->buckets[b] = t;
                c->st.entries++;
                c->st.bytes += t->bytes;
        }
        t->refs++;
        lru_push(c, t);
        evict_locked(c);
        grow_locked(c);
        pthread_mutex_unlock(&c->lock);
        *ret = t;
        return 0;
}

void tree_cache_put(struct tree_cache *c, struct tree_index *t)
{
        if (!t)
                return;
        pthread_mutex_lock(&c->lock);
        t->refs--;
        if (t->refs == 0 && c->st.bytes > c->st.budget)
                evict_locked(c);
        pthread_mutex_unlock(&c->lock);
}

void tree_cache_stats(struct tree_cache *c, struct tree_cache_stats *ret)
{
        pthread_mutex_lock(&c->lock);
        *ret = c->st;
        pthread_mutex_unlock(&c->lock);
}

/* Does t's notes hold for the folder dir? Claims them for dir if no folder has yet. */
static bool noted_dir_is(struct tree_index *t, const char *dir, size_t dir_len, bool claim)
{
        char *have = __atomic_load_n(&t->noted_dir, __ATOMIC_ACQUIRE), *mine;

        if (!have && claim) {
                mine = strndup(dir, dir_len);
                if (!mine)
                        return false;
                if (__atomic_compare_exchange_n(&t->noted_dir, &have, mine, false, __ATOMIC_ACQ_REL,
                                                __ATOMIC_ACQUIRE))
                        have = mine;
                else
                        free(mine); /* another folder was first: have is its */
        }
        return have && strlen(have) == dir_len && memcmp(have, dir, dir_len) == 0;
}

void tree_index_note(struct tree_index *t, const char *dir, size_t dir_len,
                     const struct tree_ent *e, uint64_t size)
{
        if (size >= UINT32_MAX || !noted_dir_is(t, dir, dir_len, true))
                return;
        /* ents is part of t's own allocation: only the notes ever change */
        __atomic_store_n(&((struct tree_ent *)e)->noted, (uint32_t)size + 1, __ATOMIC_RELAXED);
}

bool tree_index_noted(const struct tree_index *t, const char *dir, size_t dir_len,
                      const struct tree_ent *e, uint64_t *ret_size)
{
        uint32_t v = __atomic_load_n(&e->noted, __ATOMIC_RELAXED);

        if (v == 0 || !noted_dir_is((struct tree_index *)t, dir, dir_len, false))
                return false;
        *ret_size = v - 1;
        return true;
}

const struct tree_ent *tree_index_find(const struct tree_index *t, const char *name)
{
        size_t lo = 0, hi = t->n;
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                const struct tree_ent *e = &t->ents[t->by_name[mid]];
                int c = strcmp(name, t->names + e->name_off);
                if (c == 0)
                        return e;
                if (c < 0)
                        hi = mid;
                else
                        lo = mid + 1;
        }
        return NULL;
}
