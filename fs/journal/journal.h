/* SPDX-License-Identifier: MIT */
/*
 * journal.h: the write journal. Every mutating operation the agent makes on
 * a writable layer is appended here as one JSON line, so that a reviewer
 * can see what happened, not only the end result.
 *
 * Called from FUSE handlers, so: no logging, no aborting, thread-safe, and a
 * failure to journal is returned to the caller (which fails the operation:
 * an unrecorded write is not allowed to happen).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct journal journal;

enum journal_op {
        JOURNAL_CREATE,
        JOURNAL_WRITE,
        JOURNAL_TRUNCATE,
        JOURNAL_UNLINK,
        JOURNAL_MKDIR,
        JOURNAL_RMDIR,
        JOURNAL_RENAME,
        JOURNAL_LINK,
        JOURNAL_SYMLINK,
        JOURNAL_CHMOD,
        JOURNAL_CHOWN,
        JOURNAL_UTIMENS,
        JOURNAL_SETXATTR,
        JOURNAL_REMOVEXATTR,
        JOURNAL_MKNOD,
};

/* "cloister-" and two numbers of at most 10 digits, and the NUL. */
#define JOURNAL_CGROUP_MAX 32

/*
 * Who asked: from fuse_req_ctx(); comm is read from /proc/PID/comm by the
 * journal, and run_cgroup from /proc/PID/cgroup (journal-cgroup.c): what a
 * caller puts there is overwritten.
 */
struct journal_caller {
        pid_t pid;
        uid_t uid; /* on the host */
        gid_t gid;
        bool in_sandbox;   /* uid is the agent's sandbox identity (a root-run sandbox) */
        uid_t sandbox_uid; /* then: the agent's uid inside the sandbox */
        /* The run's cgroup the process is in ("cloister-PID-SEQ"), "" if none: "run_cgroup". */
        char run_cgroup[JOURNAL_CGROUP_MAX];
};

/*
 * The name of the cloister run's cgroup that /proc/PID/cgroup's text
 * (len bytes) puts the process in: the last component of the v2 line's
 * path ("0::/a/cloister-12-0"), or of the v1 pids controller's line, when
 * it is one (cloister-DIGITS-DIGITS, shorter than JOURNAL_CGROUP_MAX).
 * true and buf set, or false: in no such cgroup, or a line cut short.
 */
bool journal_cgroup_parse(const char *text, size_t len, char *buf, size_t size);

struct journal_entry {
        enum journal_op op;
        const char *path;  /* workspace-absolute, e.g. "/workspace/src/a.c" */
        const char *path2; /* rename/link target, symlink target; else NULL */
        uint64_t offset;   /* write: offset; truncate: new size */
        uint64_t length;   /* write: length */
        uint32_t mode;     /* create/mkdir/chmod/mknod */
        int64_t uid, gid;  /* chown; -1 = unchanged */
        const char *name;  /* setxattr/removexattr: attribute name */
        int result;        /* 0 or a negative errno */
};

/*
 * Open (create) the journal at `name` under the directory fd state_dirfd and
 * append a "journal_open" mark (the daemon's pid and start time, the bound,
 * and image, the digest of the image the sandbox runs on, if not NULL).
 * max_bytes bounds the file (0: no bound); see "The bound" below.
 */
int journal_open(int state_dirfd, const char *name, uint64_t max_bytes, const char *image,
                 journal **ret);
/* Write pending and coarse entries, append the "journal_close" mark, close. NULL: no-op. */
void journal_free(journal *j);
/*
 * Append one entry; it may be held for a window and compacted (see
 * "Compaction" below). -EDQUOT when the entry no longer fits under the bound
 * (the journal is then cut).
 */
int journal_append(journal *j, const struct journal_caller *who, const struct journal_entry *e);
/*
 * Write the pending entries now (on fsync, at unmount). Coarse entries wait
 * for the end of their window or journal_free(): hurrying them would let the
 * agent undo their bounded rate.
 */
int journal_flush(journal *j);
/*
 * Write everything held now, coarse entries too, and rewrite removed trees
 * (below): for a reader (`cloister log`, over the daemon's control socket),
 * who must see everything that happened. Never asked by the agent.
 */
int journal_flush_all(journal *j);

/*
 * May a mutating operation go ahead? 0, or -EDQUOT once the journal was cut
 * at its bound (the refusal is counted in the "journal_close" mark). Asked
 * before the operation, so that nothing happens that the journal cannot hold.
 */
int journal_admit(journal *j);
/* Bytes in the journal file now (what the bound counts). */
uint64_t journal_size(journal *j);
/*
 * Change the coalescing and the summary windows (JOURNAL_COALESCE_MS,
 * JOURNAL_SUMMARY_MS), right after journal_open. For tests: a long window
 * makes "within one window" independent of the machine's speed.
 */
void journal_windows_set(journal *j, unsigned window_ms, unsigned summary_ms);

/* "write", "rename", ...; NULL for an unknown op. */
const char *journal_op_to_string(enum journal_op op);

/*
 * Compaction (journal-pending.c). Some operations are held pending for one
 * window (JOURNAL_COALESCE_MS) after their first operation instead of being
 * written at once:
 *  - writes by one process to one path merge into one entry: offset and
 *    length give the extent the writes cover (the lowest offset to the
 *    highest end, holes included), count how many calls;
 *  - a successful create, mknod, symlink or mkdir ("make") is held, and the
 *    chmod, chown, utimens and truncate of the same path by the same command
 *    (uid, gid, comm) fold into it: its "mode" becomes the final mode,
 *    "owner_uid"/"owner_gid" the final owner, "folded" counts them; those
 *    of another command, and set/removexattr, are held after it;
 *  - if the path is unlinked (rmdir'ed) while its make is held, nothing of
 *    it is written: the make, what folded in or was held after it, its
 *    writes and the removal are counted in one "transient" entry per
 *    making command, held for a summary window (JOURNAL_SUMMARY_MS), whose
 *    path is the last such name;
 *  - an operation identical to the last one written (same op, names,
 *    arguments, result, uid, gid and command; only the time and pid differ)
 *    is counted: the entry that follows carries "count".
 * Every other operation is written at once, after the pending entries of
 * its path(s): the same path, the directories above it and anything below
 * it, so each path's entries stay in causal order (a rename of a held file
 * writes its make and writes, then the rename). Entries of unrelated paths
 * stay pending, so lines of different files may be out of time order by up
 * to one window ("time" is always the first operation's). A pending entry
 * is written at most one window after its first operation, whatever
 * follows: by a background thread (started by the first pending entry)
 * and, should that thread be late, by the next append. So a crash loses at
 * most what was held in the last window, and the summaries (transient,
 * coarse) of the last summary window; nothing else: every other operation
 * is written before its caller gets its answer. The close of a file writes
 * nothing (the fs does not flush there); fsync does (journal_flush).
 */
#define JOURNAL_COALESCE_MS 200
/* How long entries that sum up many operations, transient and coarse, are held. */
#define JOURNAL_SUMMARY_MS 10000
/*
 * Pending entries kept at once. When all are taken, the oldest is written
 * early. Each holds at most two names of PATH_MAX and one entry: a few MiB
 * at most.
 */
#define JOURNAL_COALESCE_SLOTS 256
/*
 * Order. Every line has "seq", its place in the order of the daemon's
 * session (from 0 at its journal_open mark): the order of first
 * operations, as "time" is, both taken under the journal's lock. A held
 * entry keeps the number of its first operation, so the file may hold a
 * line before an older one that was held; `cloister log` (journal_reader)
 * prints them in the order of "seq", and the copies to [logs] stdout go
 * out in that order (a line waits, in the daemon, for every older one).
 * Bound on that disorder, which both sides rely on: a line is preceded in
 * the file by at most JOURNAL_ORDER_LINES lines, together at most
 * JOURNAL_ORDER_BYTES, of higher numbers of its session (past that, the
 * oldest held entry is written early), plus what one flush writes at once
 * (JOURNAL_ORDER_SLACK_*). A line without "seq" (an older journal, a mark
 * written with no daemon) keeps its place.
 */
#define JOURNAL_ORDER_LINES       16384
#define JOURNAL_ORDER_BYTES       (16u * 1024 * 1024)
#define JOURNAL_ORDER_SLACK_LINES 1024
#define JOURNAL_ORDER_SLACK_BYTES (1024u * JOURNAL_LINE_MAX)

/*
 * Removed trees (journal-tree.c). A directory made in this session (its
 * mkdir written) and removed in it (its rmdir written), with nothing moved
 * or linked out of it (or linked into it from outside) meanwhile, is
 * history no reviewer needs line by line: every line of its life about names under it (both names,
 * for a rename or link) is replaced, by a rewrite of the file, with one "removed_tree" entry at the
 * place (time, seq) of its mkdir: "count" names made under it, "ops" the operations,
 * "lines"/"bytes" the lines replaced and their "sha256" (of those lines as they were written,
 * newlines included, in file order: a collector holding the [logs] stdout copies can check it),
 * "until" the time of the rmdir, "comms" the commands (at most
 * JOURNAL_TREE_COMMS, "more" if there were more), "failed" the refused
 * operations among them, and the caller fields of the mkdir's. A tree
 * inside a removed tree is part of it. The rewrite writes a new file
 * beside the journal and renames it over it (a crash leaves one or the
 * other, whole), once the trees removed stand for JOURNAL_TREE_REWRITE_MIN
 * bytes and half the file, at the close, and when a reader asks
 * (journal_flush_all). Transient and coarse entries, marks and lines of
 * earlier sessions are kept as they are. JOURNAL_TREE_SLOTS directories,
 * with names of JOURNAL_TREE_NAME_BYTES together, are followed at once;
 * past them, newer ones are not (their lines stay).
 */
#define JOURNAL_TREE_REWRITE_MIN (8ull * 1024 * 1024)
#define JOURNAL_TREE_SLOTS       65536
#define JOURNAL_TREE_NAME_BYTES  (16u * 1024 * 1024)
#define JOURNAL_TREE_COMMS       8

/*
 * Transient entries stand for nothing that still exists: each is held a
 * summary window (JOURNAL_SUMMARY_MS) rather than one window, so a
 * test suite's temporary files are one line per command every few seconds.
 * At most this many commands' at once; past them the oldest is written early.
 */
#define JOURNAL_TRANSIENT_SLOTS 32
/*
 * The longest line. The writer refuses to write a longer one (the operation
 * then fails: nothing unrecorded happens) and the reader takes a longer one
 * for damage. The longest entry the agent can cause is a symlink or rename
 * with two names near PATH_MAX, each byte escaped six-fold by JSON
 * ("\u0001") and, if the name is not UTF-8, stored again in hex: 2 x 4096
 * x 8 bytes, plus an xattr name and fixed fields, under 72 KiB.
 */
#define JOURNAL_LINE_MAX (128 * 1024)
/*
 * The bound. Pending entries count against it before they are written (at
 * their longest possible size). Past the soft bound, three quarters of the
 * way to the cut, one "journal_coarse" mark is written and from then on
 * every operation is counted in a coarse entry instead (journal-coarse.c):
 * one per operation, result, caller (uid, gid, comm) and directory ("path"
 * is the directory, "coarse":"dir"), written JOURNAL_SUMMARY_MS after its
 * first operation; past JOURNAL_COARSE_SLOTS such entries open at once, one
 * per op ("coarse":"tree", "path" the deepest directory above all it counts,
 * "mixed" if more than one caller or result). File names, rename targets,
 * modes and offsets are lost; which command changed what in which
 * directory, and how often, is kept; `cloister diff` still has every
 * change. So the rate at which the journal grows is bounded (at most
 * JOURNAL_COARSE_SLOTS + one per op lines per window), and a legitimate day
 * keeps working long after the soft bound.
 *
 * The cut: once less than JOURNAL_RESERVE + JOURNAL_HEADROOM (at most a
 * quarter of the bound) is left beyond what is written and pending,
 * journal_admit() writes one "journal_truncated" mark and from then on
 * refuses every mutating operation with EDQUOT before it happens, so nothing
 * happens unrecorded. The headroom takes the entries of requests admitted
 * just before the cut and in flight on other threads; the reserve, only
 * marks. An entry that would still not fit is not written and is counted as
 * dropped (only conceivable with many requests in flight, each with names
 * near PATH_MAX). Lines already written are never touched, and the file
 * never grows past the bound.
 */
#define JOURNAL_RESERVE      (4 * 1024)
#define JOURNAL_HEADROOM     (256 * 1024)
#define JOURNAL_COARSE_SLOTS 128
/* Bounds of [limits] journal (docs/config.md), and its default. */
#define JOURNAL_MAX_BYTES_MIN     (1024ull * 1024)
#define JOURNAL_MAX_BYTES_DEFAULT (256ull * 1024 * 1024)

/*
 * Marks: entries about the journal itself, never an agent's operation, with
 * an op starting "journal_":
 *   journal_open       a daemon opened the journal: "pid", "start" (its
 *                      /proc start time, to tell it from a reused pid),
 *                      "max_bytes", and "image" (the [image] digest the
 *                      sandbox runs on) where the workspace has one
 *   journal_close      it closed it cleanly: "dropped" (entries lost after
 *                      the cut), "refused" (operations refused with EDQUOT),
 *                      "cut" (the bound it was cut at: the next session at
 *                      that bound starts cut, however close to it the file
 *                      ends, since pending entries counted at their longest)
 *   journal_truncated  the bound was reached here: "max_bytes"
 *   journal_coarse     the soft bound was passed (or already was at open):
 *                      operations after it are in coarse entries;
 *                      "max_bytes", "at_bytes" (the soft bound),
 *                      "window_ms" (the coarse window)
 * A journal_open that follows a session without its journal_close means the
 * daemon before it stopped uncleanly (SIGKILL, crash): operations it did in
 * its last moments may be missing (see docs/fs-design.md, "Journal").
 */
#define JOURNAL_MARK_PREFIX "journal_"

/*
 * Marks about the workspace's layers (docs/fs-design.md, "Layers,
 * checkpoints and forks"), with an object of fields (JSON text) after
 * "time" and "op":
 *   journal_fork        the first entry of a fork's journal: "parent"
 *                       ({"name", "state"}), "checkpoint", "stack"
 *   journal_checkpoint  "name", "depth"
 *   journal_restore     "checkpoint"
 *   journal_squash      "depth" (before), "layer" (the merged one)
 * journal_mark() writes through the daemon's open journal; journal_mark_append()
 * appends to the file at dirfd/name while no daemon has it open.
 */
int journal_mark(journal *j, const char *what, const char *fields_json);
int journal_mark_append(int dirfd, const char *name, const char *what, const char *fields_json);

/*
 * Reading the journal, for `cloister log`. Lines are JSON objects:
 *   {"time":"2026-12-02T16:43:00.123456Z","op":"write","path":"/workspace/a",
 *    "offset":0,"length":4096,"count":1,"result":0,"pid":42,"uid":0,"gid":0,
 *    "comm":"cat"}
 * plus "sandbox_uid" (the agent's uid inside the sandbox) when "uid" is the
 * host identity of a root-run sandbox, "path2" (rename/link/symlink target),
 * "mode", "owner_uid"/"owner_gid" (chown), "name" (xattr), "error" ("ENOENT")
 * when result < 0, "path_hex" / "path2_hex" when a name is not valid UTF-8
 * ("path" then has "?" for each byte above 0x7f), "folded" (a make: changes
 * folded in). A "transient" entry counts names made and removed within a
 * window ("count"; "ops": the operations they stand for; "path": the last
 * one). A coarse entry has "coarse" ("dir" or "tree"), its "path" is a
 * directory, "count" the operations, "bytes" for writes, "mixed" (tree).
 * A line that does not parse (a crash mid-append, a full disk) is skipped and
 * counted, never fatal.
 */
typedef struct journal_reader journal_reader;

struct journal_record {
        const char *line; /* the raw JSON line, without the newline */
        double time;      /* seconds since the epoch, from "time" */
        const char *time_str;
        const char *op;
        /*
         * Names are the exact bytes the agent used (decoded from path_hex
         * etc. when they are not UTF-8), so they may be any bytes but NUL:
         * quote them before printing (quote_fputs, lib/quote.h).
         */
        const char *path;       /* never NULL ("" if absent) */
        const char *path2;      /* NULL if absent */
        const char *name;       /* setxattr/removexattr: the attribute name; else NULL */
        const char *comm;       /* NULL if the process was gone */
        const char *run_cgroup; /* the run's cgroup (struct journal_caller), NULL if none */
        int64_t pid, uid;
        int64_t sandbox_uid; /* -1 if absent */
        int64_t result;
        /*
         * write: calls merged; transient: names; coarse: operations; other
         * ops: identical repeats merged (1)
         */
        int64_t count;
        bool coarse; /* a coarse entry: path is the directory (journal.h, "The bound") */
        bool mark;   /* a journal_* mark, not an operation */
        /* A journal_open mark whose previous session never wrote its journal_close. */
        bool after_unclean_stop;
        const void *json; /* the parsed object (a json_t *), valid until the next call */
};

/* Open `name` under state_dirfd for reading. -ENOENT if there is no journal yet. */
int journal_reader_open(int state_dirfd, const char *name, journal_reader **ret);
void journal_reader_free(journal_reader *r);
/*
 * Next well-formed record: 1 and *ret filled (valid until the next call),
 * 0 at the end, or a negative errno on a read error.
 */
int journal_reader_next(journal_reader *r, struct journal_record *ret);
/* Lines skipped as corrupt so far, and whether the last line was cut short. */
unsigned journal_reader_corrupt(const journal_reader *r);
bool journal_reader_truncated(const journal_reader *r);
/* Line number (1-based) of the first corrupt line, 0 if none. */
unsigned journal_reader_first_corrupt_line(const journal_reader *r);
/*
 * After the last record: sessions that ended without their journal_close
 * mark (the last one counts only if its daemon is gone), whether the last
 * session's daemon still runs (the journal is being written), and how many
 * journal_truncated marks were read.
 */
unsigned journal_reader_unclean_stops(const journal_reader *r);
bool journal_reader_live(const journal_reader *r);
unsigned journal_reader_cuts(const journal_reader *r);
/* journal_coarse marks read: sessions that wrote coarse entries. */
unsigned journal_reader_coarse(const journal_reader *r);
/* A process's start time (/proc/PID/stat field 22); -ESRCH if it is gone or a zombie. */
int journal_proc_starttime(pid_t pid, unsigned long long *ret);
/* Parse an RFC 3339 UTC time as written in "time" to seconds; -EINVAL if bad. */
int journal_time_parse(const char *s, double *ret);
