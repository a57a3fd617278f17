/* SPDX-License-Identifier: MIT */
/*
 * journal-internal.h: what the four parts of the journal writer share.
 *
 *   journal.c          the file: opening, appending lines, the bound, marks,
 *                      the order (seq) and the copies to the sink in it,
 *                      the flusher thread, and journal_append's dispatch;
 *   journal-pending.c  compaction before the soft bound: entries held for one
 *                      window (writes, creates, repeats) and folded, dropped
 *                      or summed up (transient) before they are written;
 *   journal-coarse.c   past the soft bound: one entry per operation, command
 *                      and directory per summary window;
 *   journal-tree.c     removed trees: the past of a directory made and
 *                      removed in the session, rewritten into one entry.
 *
 * Locking: j->lock protects everything in struct journal except `cut`,
 * `refused`, `size` and `pending_bytes`, which journal_admit() reads without
 * it (atomics; written under the lock). It is held across each write(2), so
 * that entries stay ordered. Every function here that takes a journal is
 * called with j->lock held (journal_tree_rewrite() drops it for a while:
 * see there).
 */
#pragma once

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "journal.h"

enum journal_pending_kind {
        PENDING_WRITE,     /* writes of one process to one path */
        PENDING_MAKE,      /* a create, mknod, symlink or mkdir, and what folds into it */
        PENDING_HELD,      /* another command's change of a path whose make is held */
        PENDING_REPEAT,    /* repeats of the last operation written */
        PENDING_TRANSIENT, /* names made and removed within a window, per command */
};

struct journal_pending {
        enum journal_pending_kind kind;
        char *path;    /* TRANSIENT: the last name counted */
        char *path2;   /* REPEAT: the entry's path2 when it names a path (rename, link) */
        uint64_t hash; /* of path (WRITE, MAKE, HELD) */
        uint64_t seq;  /* the order of its first operation (journal.h, "Order") */
        /* MAKE: its entry (mode, owner updated by folds); HELD: its own; REPEAT: the first one's */
        json_t *entry;
        char *sig; /* REPEAT: the signature it counts */
        struct journal_caller who;
        char comm[32];
        bool have_comm;
        uint64_t offset, end; /* WRITE: the extent the writes cover */
        /* WRITE: write calls; MAKE: changes folded in; REPEAT: repeats; TRANSIENT: names */
        uint64_t count;
        uint64_t ops;          /* TRANSIENT: the operations its names stand for */
        uint64_t estimate;     /* the most bytes its line can take (in j->pending_bytes) */
        struct timespec first; /* CLOCK_REALTIME of the first operation: the entry's "time" */
        struct timespec due;   /* CLOCK_MONOTONIC: written by then, whatever follows */
};

struct journal_coarse {
        enum journal_op op;
        bool tree;  /* the overflow entry of its op: anywhere under dir */
        bool mixed; /* tree: other callers than the first's contributed */
        char *dir;
        uint64_t hash; /* of dir */
        int result;
        struct journal_caller who;
        char comm[32];
        bool have_comm;
        uint64_t count, bytes; /* operations; for writes, the bytes written */
        uint64_t estimate;
        uint64_t seq;
        struct timespec first, due;
};

/* A line written but not yet copied to the sink, for lack of an older one (journal.c). */
struct journal_copy {
        uint64_t seq;
        char *line; /* NULL: the sink is off, only counted */
        size_t len;
};

/* Room for the overflow entries (one per op) besides JOURNAL_COARSE_SLOTS. */
#define COARSE_OPS (JOURNAL_MKNOD + 1)

struct journal {
        int fd;
        int dirfd;            /* the state directory, for the rewrite (journal-tree.c) */
        char *name;           /* the journal's name in it */
        uint64_t session_off; /* where this session's lines begin (its journal_open mark) */
        pthread_mutex_t lock;
        pthread_cond_t cond; /* wakes the flusher: new pending entry or stop */
        pthread_t flusher;
        bool flusher_running, stop;
        bool need_newline;      /* the file does not end with '\n' (short write, crash) */
        uint64_t size;          /* bytes in the file, as far as we wrote them (atomic stores) */
        uint64_t pending_bytes; /* sum of the pending entries' estimates (atomic stores) */
        uint64_t max_bytes;
        uint64_t soft_bytes; /* coarse entries from here on (0: no bound) */
        bool cut;            /* the bound was reached (atomic) */
        bool coarse;         /* past the soft bound */
        uint64_t dropped;    /* entries not written after the cut */
        uint64_t refused;    /* operations journal_admit() turned away (atomic) */
        unsigned window_ms, summary_ms;
        char *last_sig; /* the last operation written, for repeats (entry_signature) */
        /* Pending entries in the order of their first operation (so also of due times). */
        struct journal_pending *pend[JOURNAL_COALESCE_SLOTS];
        size_t n_pend;
        struct journal_pending *rep; /* the PENDING_REPEAT counting last_sig, if any */
        /* Transient entries, held a summary window (JOURNAL_SUMMARY_MS), oldest first. */
        struct journal_pending *tr[JOURNAL_TRANSIENT_SLOTS];
        size_t n_tr;
        struct journal_coarse *co[JOURNAL_COARSE_SLOTS + COARSE_OPS];
        size_t n_co, n_co_dir; /* all coarse entries; those that are not tree entries */
        /*
         * Order (journal.h): the next sequence number, and the lines written
         * ahead of an older entry still held, in the order written, until
         * every older one is written (then they go to the sink in order).
         */
        uint64_t seq;
        struct journal_copy *copies;
        size_t n_copies, cap_copies;
        uint64_t copies_bytes;
        /* Removed trees (journal-tree.c). */
        struct journal_trees *trees;
};

/* journal.c */
/* Append o as one line, with "seq" (its place in the order). */
int journal_line_write(journal *j, json_t *o, uint64_t seq, bool mark);
/* Set "time" to now and return the next sequence number: an entry that happens now. */
uint64_t journal_seq_now(journal *j, json_t *o);
json_t *journal_entry_header(const struct timespec *when, const char *op);
int journal_entry_caller(json_t *o, const struct journal_caller *who, const char *comm, int result);
int journal_json_set_name(json_t *o, const char *key, const char *value);
int journal_json_set_int(json_t *o, const char *key, json_int_t v);
bool journal_comm_read(pid_t pid, char *buf, size_t size);
/* journal-cgroup.c: who->run_cgroup's value (false: none); an answer is kept a window per pid. */
bool journal_cgroup_read(pid_t pid, char *buf, size_t size);
struct timespec journal_deadline_in(unsigned ms);
bool journal_timespec_before(const struct timespec *a, const struct timespec *b);
void journal_flusher_wake(journal *j);
void journal_pending_bytes_add(journal *j, uint64_t add, uint64_t sub);
/* The most bytes a line holding these names can take (NULL: absent). */
uint64_t journal_line_estimate(const char *path, const char *path2, const char *name);
uint64_t journal_path_hash(const char *path);
/* Is `path` inside the directory `dir` (at any depth)? */
bool journal_path_under(const char *path, const char *dir);

/* journal-pending.c */
int journal_pending_write_add(journal *j, const struct journal_caller *who,
                              const struct journal_entry *e);
/* A non-write operation, its entry built: fold, drop, hold or write it. Takes o and sig. */
int journal_pending_op(journal *j, const struct journal_caller *who, const struct journal_entry *e,
                       json_t **o, char **sig, uint64_t seq, const char *comm);
/* Write the held entry numbered seq (pending or transient) early. */
int journal_pending_force(journal *j, uint64_t seq);
/* Write pending entries in order: all, or (due_by set) those due by then. */
int journal_pending_flush(journal *j, const struct timespec *due_by);
void journal_pending_free_all(journal *j);
bool journal_pending_next_due(const journal *j, struct timespec *ret);

/* journal-coarse.c */
int journal_coarse_add(journal *j, const struct journal_caller *who, const struct journal_entry *e,
                       const char *comm);
int journal_coarse_flush(journal *j, const struct timespec *due_by);
void journal_coarse_free_all(journal *j);
/* Write the oldest coarse entry early. */
int journal_coarse_force(journal *j);

/* journal-tree.c */
/* A line was written: follow the directories made in this session, and those removed. */
void journal_tree_note(journal *j, json_t *o, uint64_t seq, size_t len);
/* Are removed trees worth a rewrite now (any at all: at close, or when a reader asks)? */
bool journal_tree_rewrite_due(journal *j, bool any);
/*
 * Rewrite the file without the lines of removed trees, each replaced by one
 * "removed_tree" entry. Called with j->lock held; drops it while it reads
 * what is already written.
 */
int journal_tree_rewrite(journal *j);
void journal_tree_free_all(journal *j);
/* Remove the new file of a rewrite that a crash interrupted (at open). */
int journal_tree_leftover_remove(journal *j);
bool journal_coarse_next_due(const journal *j, struct timespec *ret);
