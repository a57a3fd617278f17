/* SPDX-License-Identifier: MIT */
/*
 * journal-coarse.c: entries past the soft bound (journal.h, "The bound").
 *
 * Once the journal is three quarters of the way to its cut, a legitimate
 * day must go on rather than stop at the cut a few hours later, so each
 * operation is no longer a line but a count: one entry per operation,
 * result, caller (uid, gid, command) and directory, written one coarse
 * window after its first operation. The names of files and rename targets
 * are lost; who changed what in which directory, and how often, is kept.
 *
 * What a hostile agent can make the host store stays bounded, by the cut as
 * before, and the rate at which coarse entries grow is bounded too: at most
 * JOURNAL_COARSE_SLOTS directory entries are open at once; past them, each
 * operation is counted in one tree entry per op, whose path is the deepest
 * directory above everything it counts. So a window writes at most
 * JOURNAL_COARSE_SLOTS + one per op lines, whatever the agent does.
 *
 * All functions are called with j->lock held (journal-internal.h).
 */
#include <stdio.h>
#include <string.h>

#include "journal-internal.h"
#include "lib/util.h"

static void coarse_free(struct journal_coarse *c)
{
        if (!c)
                return;
        free(c->dir);
        free(c);
}

static void coarse_remove(journal *j, size_t i)
{
        struct journal_coarse *c = j->co[i];

        journal_pending_bytes_add(j, 0, c->estimate);
        if (!c->tree)
                j->n_co_dir--;
        memmove(&j->co[i], &j->co[i + 1], (j->n_co - i - 1) * sizeof(j->co[0]));
        j->n_co--;
        coarse_free(c);
}

static int coarse_write(journal *j, const struct journal_coarse *c)
{
        _cleanup_(json_decrefp) json_t *o = NULL;
        int r;

        o = journal_entry_header(&c->first, journal_op_to_string(c->op));
        if (!o)
                return -ENOMEM;
        r = journal_json_set_name(o, "path", c->dir);
        if (r == 0)
                r = json_object_set_new(o, "coarse", json_string(c->tree ? "tree" : "dir")) < 0
                            ? -ENOMEM
                            : 0;
        if (r == 0)
                r = journal_json_set_int(o, "count", (json_int_t)c->count);
        if (r == 0 && c->op == JOURNAL_WRITE)
                r = journal_json_set_int(o, "bytes", (json_int_t)c->bytes);
        if (r == 0 && c->mixed)
                r = json_object_set_new(o, "mixed", json_true()) < 0 ? -ENOMEM : 0;
        if (r == 0)
                r = journal_entry_caller(o, &c->who, c->have_comm ? c->comm : NULL, c->result);
        if (r == 0)
                r = journal_line_write(j, o, c->seq, false);
        return r;
}

int journal_coarse_flush(journal *j, const struct timespec *due_by)
{
        int ret = 0;

        /* Entries are in the order they were opened, so of their due times. */
        while (j->n_co > 0 && (!due_by || !journal_timespec_before(due_by, &j->co[0]->due))) {
                int r = coarse_write(j, j->co[0]);
                if (r < 0 && ret == 0)
                        ret = r;
                coarse_remove(j, 0);
        }
        return ret;
}

int journal_coarse_force(journal *j)
{
        int r;

        if (j->n_co == 0)
                return 0;
        r = coarse_write(j, j->co[0]);
        coarse_remove(j, 0);
        return r;
}

bool journal_coarse_next_due(const journal *j, struct timespec *ret)
{
        if (j->n_co == 0)
                return false;
        *ret = j->co[0]->due;
        return true;
}

void journal_coarse_free_all(journal *j)
{
        while (j->n_co > 0)
                coarse_remove(j, j->n_co - 1);
}

/* The directory holding path ("/" for a name in the root). */
static char *parent_dir(const char *path)
{
        const char *s = strrchr(path, '/');

        if (!s || s == path)
                return strdup("/");
        return strndup(path, (size_t)(s - path));
}

/* Shorten dir (in place) to the deepest directory that holds both it and other. */
static void dir_common(char *dir, const char *other)
{
        size_t i = 0;

        while (dir[i] && dir[i] == other[i])
                i++;
        if (!((dir[i] == 0 || dir[i] == '/') && (other[i] == 0 || other[i] == '/')))
                while (i > 0 && dir[i] != '/')
                        i--;
        dir[i] = 0;
        if (!dir[0])
                strcpy(dir, "/"); /* dir held at least "/" and its NUL */
}

static bool caller_same(const struct journal_coarse *c, const struct journal_caller *who,
                        const char *comm, int result)
{
        return c->result == result && c->who.uid == who->uid && c->who.gid == who->gid &&
               c->who.in_sandbox == who->in_sandbox &&
               (!who->in_sandbox || c->who.sandbox_uid == who->sandbox_uid) &&
               streq_ptr(c->have_comm ? c->comm : NULL, comm) &&
               streq(c->who.run_cgroup, who->run_cgroup);
}

static int coarse_new(journal *j, const struct journal_caller *who, const struct journal_entry *e,
                      const char *comm, char **dir, bool tree, struct journal_coarse **ret)
{
        struct journal_coarse *c = calloc(1, sizeof(*c));

        if (!c)
                return -ENOMEM;
        c->op = e->op;
        c->tree = tree;
        c->dir = TAKE_PTR(*dir);
        c->hash = journal_path_hash(c->dir);
        c->result = e->result;
        c->who = *who;
        if (comm) {
                snprintf(c->comm, sizeof(c->comm), "%s", comm);
                c->have_comm = true;
        }
        c->seq = j->seq++;
        clock_gettime(CLOCK_REALTIME, &c->first);
        c->due = journal_deadline_in(j->summary_ms);
        c->estimate = journal_line_estimate(c->dir, NULL, NULL);
        journal_pending_bytes_add(j, c->estimate, 0);
        j->co[j->n_co++] = c;
        if (!tree)
                j->n_co_dir++;
        journal_flusher_wake(j);
        *ret = c;
        return 0;
}

int journal_coarse_add(journal *j, const struct journal_caller *who, const struct journal_entry *e,
                       const char *comm)
{
        static const struct journal_caller nobody = {0};
        _cleanup_free_ char *dir = parent_dir(e->path);
        struct journal_coarse *c = NULL;
        uint64_t h;
        int r;

        if (!dir)
                return -ENOMEM;
        if (!who)
                who = &nobody;
        h = journal_path_hash(dir);
        for (size_t i = 0; i < j->n_co && !c; i++) {
                struct journal_coarse *s = j->co[i];
                if (!s->tree && s->op == e->op && s->hash == h && streq(s->dir, dir) &&
                    caller_same(s, who, comm, e->result))
                        c = s;
        }
        if (!c && j->n_co_dir < JOURNAL_COARSE_SLOTS) {
                r = coarse_new(j, who, e, comm, &dir, false, &c);
                if (r < 0)
                        return r;
        } else if (!c) {
                /* Every directory entry is taken: the tree entry of this op counts it. */
                for (size_t i = 0; i < j->n_co && !c; i++)
                        if (j->co[i]->tree && j->co[i]->op == e->op)
                                c = j->co[i];
                if (!c) {
                        r = coarse_new(j, who, e, comm, &dir, true, &c);
                        if (r < 0)
                                return r;
                } else {
                        dir_common(c->dir, dir);
                        c->mixed |= !caller_same(c, who, comm, e->result);
                        uint64_t est = journal_line_estimate(c->dir, NULL, NULL);
                        journal_pending_bytes_add(j, est, c->estimate);
                        c->estimate = est;
                }
        }
        c->count++;
        if (e->op == JOURNAL_WRITE)
                c->bytes += e->length;
        return 0;
}
