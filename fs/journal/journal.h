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

/* Who asked: from fuse_req_ctx(); comm is read from /proc/PID/comm by the journal. */
struct journal_caller {
        pid_t pid;
        uid_t uid; /* on the host */
        gid_t gid;
        bool in_sandbox;   /* uid is the agent's sandbox identity (a root-run sandbox) */
        uid_t sandbox_uid; /* then: the agent's uid inside the sandbox */
};

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

/* Open (create) the journal at `name` under the directory fd state_dirfd. */
int journal_open(int state_dirfd, const char *name, journal **ret);
/* Flush any coalesced write entry and close. NULL is a no-op. */
void journal_free(journal *j);
/* Append one entry; writes to the same file and adjacent ranges may be coalesced. */
int journal_append(journal *j, const struct journal_caller *who, const struct journal_entry *e);
/* Flush coalesced entries now (e.g. on fsync or release of the file). */
int journal_flush(journal *j);

/* "write", "rename", ...; NULL for an unknown op. */
const char *journal_op_to_string(enum journal_op op);

/*
 * Coalescing: consecutive writes by the same process to the same path whose
 * ranges touch or overlap are merged into one entry (offset, length, count)
 * while they keep arriving within JOURNAL_COALESCE_MS of each other. A
 * background thread, started by the first coalesced write, flushes a pending
 * entry once it has been idle for that long, so a crash loses at most the
 * last window. Any other operation flushes pending writes first, so the
 * journal stays in order.
 */
#define JOURNAL_COALESCE_MS 200
/* Pending coalesced writes kept at once (distinct files being written). */
#define JOURNAL_COALESCE_SLOTS 16
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
 * Reading the journal, for `cloister log`. Lines are JSON objects:
 *   {"time":"2026-12-02T16:43:00.123456Z","op":"write","path":"/workspace/a",
 *    "offset":0,"length":4096,"count":1,"result":0,"pid":42,"uid":0,"gid":0,
 *    "comm":"cat"}
 * plus "sandbox_uid" (the agent's uid inside the sandbox) when "uid" is the
 * host identity of a root-run sandbox, "path2" (rename/link/symlink target),
 * "mode", "owner_uid"/"owner_gid" (chown), "name" (xattr), "error" ("ENOENT")
 * when result < 0, "path_hex" / "path2_hex" when a name is not valid UTF-8
 * ("path" then has "?" for each byte above 0x7f).
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
         * quote them before printing (review_path_print).
         */
        const char *path;  /* never NULL ("" if absent) */
        const char *path2; /* NULL if absent */
        const char *name;  /* setxattr/removexattr: the attribute name; else NULL */
        const char *comm;  /* NULL if the process was gone */
        int64_t pid, uid;
        int64_t sandbox_uid; /* -1 if absent */
        int64_t result;
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
/* Parse an RFC 3339 UTC time as written in "time" to seconds; -EINVAL if bad. */
int journal_time_parse(const char *s, double *ret);
