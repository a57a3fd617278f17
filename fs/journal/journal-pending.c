/* SPDX-License-Identifier: MIT */
/*
 * journal-pending.c: compaction before the soft bound (journal.h,
 * "Compaction"). Some operations are held for one window instead of being
 * written at once, so that what follows within the window can be folded
 * into them or cancel them:
 *
 *   writes      of one process to one path merge into one entry (the
 *               extent they cover, how many calls);
 *   makes       a create, mknod, symlink or mkdir: the creating command's
 *               chmod, chown, utimens and truncate of the same path fold
 *               into it (the mode and owner become the final ones), and
 *               another command's are held after it; an unlink or rmdir
 *               while it is held drops it, its writes, what was held after
 *               it and the removal, and counts them in one transient entry
 *               per making command, held for a summary window;
 *   repeats     of the last operation written are counted.
 *
 * Every other operation is written at once, before its caller gets its
 * answer, after the pending entries of its paths (the same path, the
 * directories above it, anything below it), so that the journal stays in
 * causal order for each path. Pending entries of unrelated paths stay
 * pending: lines of different files may be out of time order by up to one
 * window. Pending entries are kept in the order of their first operation
 * and written in that order.
 *
 * All functions are called with j->lock held (journal-internal.h).
 */
#include <stdio.h>
#include <string.h>

#include "journal-internal.h"
#include "lib/util.h"

static void pending_free(struct journal_pending *p)
{
        if (!p)
                return;
        free(p->path);
        free(p->path2);
        free(p->sig);
        json_decref(p->entry);
        free(p);
}

/* Take the entry at i out of list (j->pend or j->tr), not written. */
static void list_remove(journal *j, struct journal_pending **list, size_t *n, size_t i)
{
        struct journal_pending *p = list[i];

        if (j->rep == p)
                j->rep = NULL;
        journal_pending_bytes_add(j, 0, p->estimate);
        memmove(&list[i], &list[i + 1], (*n - i - 1) * sizeof(list[0]));
        (*n)--;
        pending_free(p);
}

static void pending_remove(journal *j, size_t i)
{
        list_remove(j, j->pend, &j->n_pend, i);
}

static int pending_write_one(journal *j, struct journal_pending *p)
{
        _cleanup_(json_decrefp) json_t *o = NULL;
        int r = 0;

        switch (p->kind) {
        case PENDING_HELD:
                return journal_line_write(j, p->entry, p->seq, false);
        case PENDING_MAKE:
                if (p->count > 0)
                        r = journal_json_set_int(p->entry, "folded", (json_int_t)p->count);
                return r < 0 ? r : journal_line_write(j, p->entry, p->seq, false);
        case PENDING_REPEAT:
                /* The first repeat's entry, saying how many identical ones it stands for. */
                r = journal_json_set_int(p->entry, "count", (json_int_t)p->count);
                return r < 0 ? r : journal_line_write(j, p->entry, p->seq, false);
        case PENDING_WRITE:
                o = journal_entry_header(&p->first, "write");
                if (!o)
                        return -ENOMEM;
                r = journal_json_set_name(o, "path", p->path);
                if (r == 0)
                        r = journal_json_set_int(o, "offset", (json_int_t)p->offset);
                if (r == 0)
                        r = journal_json_set_int(o, "length", (json_int_t)(p->end - p->offset));
                break;
        case PENDING_TRANSIENT:
                o = journal_entry_header(&p->first, "transient");
                if (!o)
                        return -ENOMEM;
                r = journal_json_set_name(o, "path", p->path);
                if (r == 0)
                        r = journal_json_set_int(o, "ops", (json_int_t)p->ops);
                break;
        }
        if (r == 0)
                r = journal_json_set_int(o, "count", (json_int_t)p->count);
        if (r == 0)
                r = journal_entry_caller(o, &p->who, p->have_comm ? p->comm : NULL, 0);
        if (r == 0)
                r = journal_line_write(j, o, p->seq, false);
        return r;
}

/* Write the entry at i of list and take it out. */
static int list_write_at(journal *j, struct journal_pending **list, size_t *n, size_t i)
{
        int r = pending_write_one(j, list[i]);

        list_remove(j, list, n, i);
        return r;
}

static int pending_write_at(journal *j, size_t i)
{
        return list_write_at(j, j->pend, &j->n_pend, i);
}

static struct journal_pending *pending_alloc(const char *path, uint64_t seq, unsigned window_ms)
{
        struct journal_pending *p = calloc(1, sizeof(*p));

        if (!p)
                return NULL;
        p->path = strdup(path);
        if (!p->path) {
                free(p);
                return NULL;
        }
        p->hash = journal_path_hash(path);
        p->seq = seq;
        clock_gettime(CLOCK_REALTIME, &p->first);
        p->due = journal_deadline_in(window_ms);
        return p;
}

/*
 * A new entry at the end of the list, its first operation now. When the list
 * is full, the oldest entry is written first: nothing older depends on it.
 */
static int pending_new(journal *j, enum journal_pending_kind kind, const char *path, uint64_t seq,
                       struct journal_pending **ret)
{
        struct journal_pending *p;

        /* An older entry that cannot be written is that entry's loss, not this one's. */
        if (j->n_pend == JOURNAL_COALESCE_SLOTS)
                (void)pending_write_at(j, 0);
        p = pending_alloc(path, seq, j->window_ms);
        if (!p)
                return -ENOMEM;
        p->kind = kind;
        j->pend[j->n_pend++] = p;
        journal_flusher_wake(j);
        *ret = p;
        return 0;
}

static void pending_estimate_set(journal *j, struct journal_pending *p, uint64_t estimate)
{
        journal_pending_bytes_add(j, estimate, p->estimate);
        p->estimate = estimate;
}

static bool path_related(const char *a, const char *b)
{
        return streq(a, b) || journal_path_under(a, b) || journal_path_under(b, a);
}

static bool pending_related(const struct journal_pending *p, const char *path)
{
        switch (p->kind) {
        case PENDING_WRITE:
        case PENDING_MAKE:
        case PENDING_HELD:
                return path_related(p->path, path);
        case PENDING_REPEAT:
                return path_related(p->path, path) || (p->path2 && path_related(p->path2, path));
        case PENDING_TRANSIENT:
                return false; /* a sum over names, in no path's order */
        }
        return false;
}

/*
 * Write, in order, the pending entries an operation on path (and path2)
 * must come after: those of the same path, of the directories above it and
 * of anything below it. exact: only those of the path itself.
 */
static int pending_flush_related(journal *j, const char *path, const char *path2, bool exact)
{
        int ret = 0;

        for (size_t i = 0; i < j->n_pend;) {
                struct journal_pending *p = j->pend[i];
                bool rel = exact ? p->kind != PENDING_REPEAT && p->kind != PENDING_TRANSIENT &&
                                           streq(p->path, path)
                                 : pending_related(p, path) || (path2 && pending_related(p, path2));
                if (!rel) {
                        i++;
                        continue;
                }
                int r = pending_write_at(j, i);
                if (r < 0 && ret == 0)
                        ret = r;
        }
        return ret;
}

/* Write the entries of list due by due_by (all if NULL); due times follow its order. */
static int list_flush(journal *j, struct journal_pending **list, size_t *n,
                      const struct timespec *due_by)
{
        int ret = 0;

        while (*n > 0 && (!due_by || !journal_timespec_before(due_by, &list[0]->due))) {
                int r = list_write_at(j, list, n, 0);
                if (r < 0 && ret == 0)
                        ret = r;
        }
        return ret;
}

int journal_pending_flush(journal *j, const struct timespec *due_by)
{
        int r = list_flush(j, j->pend, &j->n_pend, due_by);
        int k = list_flush(j, j->tr, &j->n_tr, due_by);

        return r < 0 ? r : k;
}

bool journal_pending_next_due(const journal *j, struct timespec *ret)
{
        if (j->n_pend == 0 && j->n_tr == 0)
                return false;
        if (j->n_tr == 0 ||
            (j->n_pend > 0 && journal_timespec_before(&j->pend[0]->due, &j->tr[0]->due)))
                *ret = j->pend[0]->due;
        else
                *ret = j->tr[0]->due;
        return true;
}

void journal_pending_free_all(journal *j)
{
        while (j->n_pend > 0)
                pending_remove(j, j->n_pend - 1);
        while (j->n_tr > 0)
                list_remove(j, j->tr, &j->n_tr, j->n_tr - 1);
}

static struct journal_pending *pending_find(journal *j, enum journal_pending_kind kind,
                                            const char *path)
{
        uint64_t h = journal_path_hash(path);

        for (size_t i = 0; i < j->n_pend; i++) {
                struct journal_pending *p = j->pend[i];
                if (p->kind == kind && p->hash == h && streq(p->path, path))
                        return p;
        }
        return NULL;
}

/* Merge a successful write into the pending entry of its process and path, or open one. */
int journal_pending_write_add(journal *j, const struct journal_caller *who,
                              const struct journal_entry *e)
{
        struct journal_pending *p = NULL;
        uint64_t end = e->offset + e->length, h = journal_path_hash(e->path);
        pid_t pid = who ? who->pid : 0;
        int r;

        if (end < e->offset)
                end = UINT64_MAX;
        for (size_t i = 0; i < j->n_pend && !p; i++) {
                struct journal_pending *s = j->pend[i];
                if (s->kind == PENDING_WRITE && s->who.pid == pid && s->hash == h &&
                    streq(s->path, e->path))
                        p = s;
        }
        if (p) {
                /* Not due (due entries were written first): within the window, merge. */
                p->offset = MIN(p->offset, e->offset);
                p->end = MAX(p->end, end);
                p->count++;
                return 0;
        }
        r = pending_new(j, PENDING_WRITE, e->path, j->seq++, &p);
        if (r < 0)
                return r;
        if (who)
                p->who = *who;
        p->have_comm = journal_comm_read(pid, p->comm, sizeof(p->comm));
        p->who.run_cgroup[0] = 0;
        (void)journal_cgroup_read(pid, p->who.run_cgroup, sizeof(p->who.run_cgroup));
        p->offset = e->offset;
        p->end = end;
        p->count = 1;
        pending_estimate_set(j, p, journal_line_estimate(e->path, NULL, NULL));
        return 0;
}

static bool caller_eq(const struct journal_caller *a, const char *comm_a,
                      const struct journal_caller *b, const char *comm_b)
{
        return a->uid == b->uid && a->gid == b->gid && a->in_sandbox == b->in_sandbox &&
               (!a->in_sandbox || a->sandbox_uid == b->sandbox_uid) && streq_ptr(comm_a, comm_b) &&
               streq(a->run_cgroup, b->run_cgroup);
}

static int make_hold(journal *j, const struct journal_caller *who, const struct journal_entry *e,
                     json_t **o, uint64_t seq, const char *comm)
{
        struct journal_pending *p;
        int r;

        /* Entries still pending under this name belong to what had it before. */
        (void)pending_flush_related(j, e->path, NULL, true);
        r = pending_new(j, PENDING_MAKE, e->path, seq, &p);
        if (r < 0)
                return r;
        p->entry = TAKE_PTR(*o);
        if (who)
                p->who = *who;
        if (comm) {
                snprintf(p->comm, sizeof(p->comm), "%s", comm);
                p->have_comm = true;
        }
        pending_estimate_set(j, p, journal_line_estimate(e->path, e->path2, NULL));
        return 0;
}

/* The creating command's own change of what it just made: folded into the make. */
static int make_fold(struct journal_pending *m, const struct journal_entry *e)
{
        json_t *mode = json_object_get(m->entry, "mode");
        int r = 0;

        if (e->op == JOURNAL_CHMOD && json_is_integer(mode))
                r = json_integer_set(mode, (json_integer_value(mode) & ~(json_int_t)07777) |
                                                   (e->mode & 07777));
        if (e->op == JOURNAL_CHOWN) {
                if (r == 0 && e->uid >= 0)
                        r = journal_json_set_int(m->entry, "owner_uid", e->uid);
                if (r == 0 && e->gid >= 0)
                        r = journal_json_set_int(m->entry, "owner_gid", e->gid);
        }
        if (r < 0)
                return -ENOMEM;
        m->count++;
        return 0;
}

/*
 * Count names made and removed within a window in the transient entry of
 * their maker. Such an entry stands for nothing that still exists, so it
 * is held a summary window (JOURNAL_SUMMARY_MS), not one window: a test
 * suite's temporary files are a line per command every few seconds.
 */
static int transient_note(journal *j, const struct journal_caller *who, const char *comm,
                          const struct timespec *first, uint64_t seq, const char *path,
                          uint64_t names, uint64_t ops)
{
        struct journal_pending *t = NULL;
        char *np;

        for (size_t i = 0; i < j->n_tr && !t; i++)
                if (caller_eq(&j->tr[i]->who, j->tr[i]->have_comm ? j->tr[i]->comm : NULL, who,
                              comm))
                        t = j->tr[i];
        if (!t) {
                /* Bounded: the agent names its commands. The oldest goes out early. */
                if (j->n_tr == JOURNAL_TRANSIENT_SLOTS)
                        (void)list_write_at(j, j->tr, &j->n_tr, 0);
                /* In the order of its first name's make, whenever it is written. */
                t = pending_alloc(path, seq, j->summary_ms);
                if (!t)
                        return -ENOMEM;
                t->kind = PENDING_TRANSIENT;
                t->who = *who;
                if (comm) {
                        snprintf(t->comm, sizeof(t->comm), "%s", comm);
                        t->have_comm = true;
                }
                t->first = *first;
                j->tr[j->n_tr++] = t;
                journal_flusher_wake(j);
        } else {
                np = strdup(path);
                if (!np)
                        return -ENOMEM;
                free(t->path);
                t->path = np;
                t->who.pid = who->pid;
        }
        t->count += names;
        t->ops += ops;
        pending_estimate_set(j, t, journal_line_estimate(path, NULL, NULL));
        return 0;
}

/*
 * An unlink or rmdir of what is still held: nothing of it is written. Its
 * make, what folded into it, its writes and the removal become a count in
 * the transient entry of the command that made it.
 */
static int make_drop(journal *j, struct journal_pending *m, const struct journal_entry *e)
{
        struct journal_caller who = m->who;
        char comm[32];
        bool have_comm = m->have_comm;
        struct timespec first = m->first;
        uint64_t seq = m->seq;       /* m goes in the loop below */
        uint64_t names = 0, ops = 1; /* the removal */

        snprintf(comm, sizeof(comm), "%s", m->comm);
        for (size_t i = 0; i < j->n_pend;) {
                struct journal_pending *p = j->pend[i];
                if (p->kind == PENDING_REPEAT || p->kind == PENDING_TRANSIENT ||
                    (!streq(p->path, e->path) && !journal_path_under(p->path, e->path))) {
                        i++;
                        continue;
                }
                if (p->kind == PENDING_MAKE) {
                        names++;
                        ops += 1 + p->count;
                } else {
                        ops += p->kind == PENDING_HELD ? 1 : p->count;
                }
                pending_remove(j, i);
        }
        return transient_note(j, &who, have_comm ? comm : NULL, &first, seq, e->path, names, ops);
}

/*
 * Another command's change of a path whose make is held: held after it, so
 * that it goes with the make if the path is removed within the window, and
 * is written after it (not folded: it names its own command) if not.
 */
static int held_add(journal *j, const struct journal_entry *e, json_t **o, uint64_t seq)
{
        struct journal_pending *p;
        int r;

        r = pending_new(j, PENDING_HELD, e->path, seq, &p);
        if (r < 0)
                return r;
        p->entry = TAKE_PTR(*o);
        pending_estimate_set(j, p, journal_line_estimate(e->path, NULL, e->name));
        return 0;
}

/* Written now, after the pending entries of its paths; or counted as a repeat. */
static int immediate(journal *j, const struct journal_entry *e, json_t **o, char **sig,
                     uint64_t seq)
{
        bool two = e->op == JOURNAL_RENAME || e->op == JOURNAL_LINK;
        int r;

        if (j->last_sig && streq(j->last_sig, *sig) && !j->cut) {
                /* The same operation again: counted, written once per window. */
                if (!j->rep) {
                        struct journal_pending *p;
                        r = pending_new(j, PENDING_REPEAT, e->path, seq, &p);
                        if (r < 0)
                                return r;
                        if (two && e->path2 && !(p->path2 = strdup(e->path2))) {
                                pending_remove(j, j->n_pend - 1);
                                return -ENOMEM;
                        }
                        p->entry = TAKE_PTR(*o);
                        p->sig = TAKE_PTR(*sig);
                        pending_estimate_set(j, p,
                                             journal_line_estimate(e->path, e->path2, e->name));
                        j->rep = p;
                }
                j->rep->count++;
                return 0;
        }
        /* Their failure is not this operation's. */
        (void)pending_flush_related(j, e->path, two ? e->path2 : NULL, false);
        r = journal_line_write(j, *o, seq, false);
        if (r == 0) {
                free(j->last_sig);
                j->last_sig = TAKE_PTR(*sig);
                j->rep = NULL; /* a pending repeat of the previous one is complete */
        }
        return r;
}

int journal_pending_op(journal *j, const struct journal_caller *who, const struct journal_entry *e,
                       json_t **o, char **sig, uint64_t seq, const char *comm)
{
        static const struct journal_caller nobody = {0};
        struct journal_pending *m;

        if (e->result == 0) {
                switch (e->op) {
                case JOURNAL_CREATE:
                case JOURNAL_MKNOD:
                case JOURNAL_SYMLINK:
                case JOURNAL_MKDIR:
                        return make_hold(j, who, e, o, seq, comm);
                case JOURNAL_UNLINK:
                case JOURNAL_RMDIR:
                        m = pending_find(j, PENDING_MAKE, e->path);
                        if (m)
                                return make_drop(j, m, e);
                        break;
                case JOURNAL_CHMOD:
                case JOURNAL_CHOWN:
                case JOURNAL_UTIMENS:
                case JOURNAL_TRUNCATE:
                        m = pending_find(j, PENDING_MAKE, e->path);
                        if (m && caller_eq(&m->who, m->have_comm ? m->comm : NULL,
                                           who ? who : &nobody, comm))
                                return make_fold(m, e);
                        if (m)
                                return held_add(j, e, o, seq);
                        break;
                case JOURNAL_SETXATTR:
                case JOURNAL_REMOVEXATTR:
                        if (pending_find(j, PENDING_MAKE, e->path))
                                return held_add(j, e, o, seq);
                        break;
                default:
                        break;
                }
        }
        return immediate(j, e, o, sig, seq);
}

int journal_pending_force(journal *j, uint64_t seq)
{
        if (j->n_pend > 0 && j->pend[0]->seq == seq)
                return pending_write_at(j, 0);
        for (size_t i = 0; i < j->n_tr; i++)
                if (j->tr[i]->seq == seq)
                        return list_write_at(j, j->tr, &j->n_tr, i);
        return 0;
}
