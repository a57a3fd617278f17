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
        uid_t uid;
        gid_t gid;
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
