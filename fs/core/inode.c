/* SPDX-License-Identifier: MIT */
/*
 * inode.c: the inode table. A node lives while the kernel holds lookups on
 * it (nlookup, dropped by forget/forget_multi) or we hold references
 * (children keep their parent, open handles keep their node). The FUSE
 * node id is the node's address; st_ino is the stable number, and the
 * table maps st_ino to the node so that a second name or a readdirplus
 * finds the same node.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"
#include "lib/util.h"

struct node *node_new(struct fs_workspace *ws, enum node_kind kind, mode_t type, uint64_t ino)
{
        struct node *n = calloc(1, sizeof(*n));
        (void)ws;
        if (!n)
                return NULL;
        n->kind = kind;
        n->type = type & S_IFMT;
        n->ino = ino;
        n->ufd = -1;
        n->hfd = -1;
        pthread_mutex_init(&n->lock, NULL);
        return n;
}

void node_free(struct node *n)
{
        lower_entry_clear(&n->lower);
        safe_close(n->ufd);
        safe_close(n->hfd);
        json_decref(n->meta);
        free(n->children);
        free(n->name);
        pthread_mutex_destroy(&n->lock);
        free(n);
}

static size_t bucket_of(struct fs_workspace *ws, uint64_t ino)
{
        return (size_t)((ino * 0x9E3779B97F4A7C15ULL) >> 7) & (ws->n_buckets - 1);
}

static void table_grow(struct fs_workspace *ws)
{
        size_t nb = ws->n_buckets ? ws->n_buckets * 2 : 1024;
        struct node **b = calloc(nb, sizeof(*b));
        struct node **old = ws->buckets;
        size_t old_n = ws->n_buckets;
        if (!b)
                return; /* keep the old table; chains just get longer */
        ws->buckets = b;
        ws->n_buckets = nb;
        for (size_t i = 0; i < old_n; i++)
                for (struct node *n = old[i], *next; n; n = next) {
                        size_t k = bucket_of(ws, n->ino);
                        next = n->hnext;
                        n->hnext = b[k];
                        b[k] = n;
                }
        free(old);
}

struct node *node_find_lookup(struct fs_workspace *ws, uint64_t ino)
{
        struct node *n = NULL;
        pthread_mutex_lock(&ws->itable_lock);
        if (ws->n_buckets)
                for (n = ws->buckets[bucket_of(ws, ino)]; n; n = n->hnext)
                        if (n->ino == ino)
                                break;
        if (n)
                n->nlookup++;
        pthread_mutex_unlock(&ws->itable_lock);
        return n;
}

struct node *node_insert_lookup(struct fs_workspace *ws, struct node *n)
{
        struct node *found = NULL;
        pthread_mutex_lock(&ws->itable_lock);
        if (ws->n_nodes >= ws->n_buckets)
                table_grow(ws);
        if (ws->n_buckets) {
                size_t k = bucket_of(ws, n->ino);
                for (found = ws->buckets[k]; found; found = found->hnext)
                        if (found->ino == n->ino)
                                break;
                if (!found) {
                        n->hnext = ws->buckets[k];
                        ws->buckets[k] = n;
                        n->hashed = true;
                        ws->n_nodes++;
                        if (++ws->shed.inserts >= ws->shed.next && ws->shed.kick)
                                ws->shed.kick(ws);
                }
        }
        if (found) {
                /* Another thread (or name) got there first: use that node. */
                found->nlookup++;
                pthread_mutex_unlock(&ws->itable_lock);
                node_free(n);
                return found;
        }
        if (n->parent)
                n->parent->refs++;
        n->nlookup++;
        pthread_mutex_unlock(&ws->itable_lock);
        return n;
}

static void unhash(struct fs_workspace *ws, struct node *n)
{
        struct node **p;
        if (!n->hashed)
                return;
        for (p = &ws->buckets[bucket_of(ws, n->ino)]; *p; p = &(*p)->hnext)
                if (*p == n) {
                        *p = n->hnext;
                        ws->n_nodes--;
                        break;
                }
        n->hashed = false;
}

/* Drop nodes with no lookups and no references, walking up to parents. Lock held. */
static void release_locked(struct fs_workspace *ws, struct node *n)
{
        while (n && n->nlookup == 0 && n->refs == 0) {
                struct node *parent = n->parent;
                quota_reclaim(ws, n);
                unhash(ws, n);
                if (n->unlinked) { /* its pin may be the last fd of a big file */
                        reap_close(ws, n->hfd);
                        n->hfd = -1;
                }
                node_free(n);
                if (!parent)
                        break;
                parent->refs--;
                n = parent;
        }
}

void node_forget(struct fs_workspace *ws, struct node *n, uint64_t nlookup)
{
        pthread_mutex_lock(&ws->itable_lock);
        n->nlookup = nlookup > n->nlookup ? 0 : n->nlookup - nlookup;
        release_locked(ws, n);
        pthread_mutex_unlock(&ws->itable_lock);
}

void node_ref(struct fs_workspace *ws, struct node *n)
{
        pthread_mutex_lock(&ws->itable_lock);
        n->refs++;
        pthread_mutex_unlock(&ws->itable_lock);
}

void node_unref(struct fs_workspace *ws, struct node *n)
{
        pthread_mutex_lock(&ws->itable_lock);
        n->refs--;
        release_locked(ws, n);
        pthread_mutex_unlock(&ws->itable_lock);
}

int node_set_parent(struct fs_workspace *ws, struct node *n, struct node *parent, const char *name)
{
        char *s = strdup(name);
        struct node *old;

        assert_wrlocked(&ws->ns_lock);
        if (!s)
                return -ENOMEM;
        pthread_mutex_lock(&ws->itable_lock);
        old = n->parent;
        if (old != parent && S_ISDIR(n->type))
                atomic_store(&n->moved, true); /* its ".." changed: ops_opendir */
        parent->refs++;
        n->parent = parent;
        free(n->name);
        n->name = s;
        n->unlinked = false;
        n->name_stale = false;
        if (old) {
                old->refs--;
                release_locked(ws, old);
        }
        pthread_mutex_unlock(&ws->itable_lock);
        return 0;
}

void node_mark_unlinked(struct fs_workspace *ws, struct node *n)
{
        assert_wrlocked(&ws->ns_lock);
        /* itable_lock too: the shed reads it holding only that (holds_fd). */
        pthread_mutex_lock(&ws->itable_lock);
        n->unlinked = true;
        pthread_mutex_unlock(&ws->itable_lock);
}

char *node_path(const struct node *n)
{
        size_t len = 0, pos;
        char *p;
        for (const struct node *i = n; i && i->parent; i = i->parent)
                len += 1 + strlen(i->name);
        p = malloc(len + 2);
        if (!p)
                return NULL;
        if (len == 0)
                return strcpy(p, "/");
        p[len] = 0;
        pos = len;
        for (const struct node *i = n; i && i->parent; i = i->parent) {
                size_t l = strlen(i->name);
                pos -= l;
                memcpy(p + pos, i->name, l);
                p[--pos] = '/';
        }
        return p;
}

void node_table_free(struct fs_workspace *ws)
{
        /* At teardown every node goes, whatever its counts. */
        for (size_t i = 0; i < ws->n_buckets; i++)
                for (struct node *n = ws->buckets[i], *next; n; n = next) {
                        next = n->hnext;
                        node_free(n);
                }
        free(ws->buckets);
        ws->buckets = NULL;
        ws->n_buckets = ws->n_nodes = 0;
}

struct node *node_insert_new(struct fs_workspace *ws, struct node *n)
{
        pthread_mutex_lock(&ws->itable_lock);
        if (ws->n_nodes >= ws->n_buckets)
                table_grow(ws);
        if (ws->n_buckets) {
                size_t k = bucket_of(ws, n->ino);
                for (struct node *o = ws->buckets[k]; o; o = o->hnext)
                        if (o->ino == n->ino) {
                                /* A stale node of a deleted entry whose host inode was reused. */
                                unhash(ws, o);
                                break;
                        }
                n->hnext = ws->buckets[k];
                ws->buckets[k] = n;
                n->hashed = true;
                ws->n_nodes++;
                if (++ws->shed.inserts >= ws->shed.next && ws->shed.kick)
                        ws->shed.kick(ws);
        }
        if (n->parent)
                n->parent->refs++;
        n->nlookup++;
        pthread_mutex_unlock(&ws->itable_lock);
        return n;
}

struct node *node_find_ref(struct fs_workspace *ws, uint64_t ino)
{
        struct node *n = NULL;
        pthread_mutex_lock(&ws->itable_lock);
        if (ws->n_buckets)
                for (n = ws->buckets[bucket_of(ws, ino)]; n; n = n->hnext)
                        if (n->ino == ino)
                                break;
        if (n)
                n->refs++;
        pthread_mutex_unlock(&ws->itable_lock);
        return n;
}
