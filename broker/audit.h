/* SPDX-License-Identifier: MIT */
/*
 * audit.h: the broker's append-only, hash-chained audit log.
 *
 * <dir>/audit.jsonl holds one JSON object per line. Each line carries
 * "seq" (1, 2, ...), "time", "prev" (the previous line's hash, 64 zeros for
 * the first) and ends with "hash": hex BLAKE2b-256 of the line's exact bytes
 * without the hash member. <dir>/audit.head records the last seq and hash,
 * so deleting lines at the end is caught too (not cryptographically: one
 * who can rewrite the log can rewrite the head). Entries hold jti and claims,
 * never a token or a secret (the callers' contract; request.c keeps it).
 */
#pragma once

#include <jansson.h>
#include <stdint.h>

#define BROKER_AUDIT_FILE     "audit.jsonl"
#define BROKER_AUDIT_HEAD     "audit.head"
#define BROKER_AUDIT_LINE_MAX (64 * 1024)

typedef struct broker_audit broker_audit;

/* Called for every existing entry on open, in order, to rebuild state. */
typedef int (*broker_audit_replay_fn)(void *userdata, json_t *entry);

/*
 * Open (creating if needed) the log in dirfd, verifying the whole chain
 * first: a tampered log refuses to open, with ret_error naming the line.
 */
int broker_audit_open(int dirfd, const char *dir, broker_audit_replay_fn replay, void *userdata,
                      broker_audit **ret, char **ret_error);
/*
 * The same for another chained log in dirfd, e.g. the proxy's net.jsonl with
 * its net.head: same format, same checks, verified by broker_audit_verify().
 */
int broker_audit_open_file(int dirfd, const char *dir, const char *file, const char *head,
                           broker_audit_replay_fn replay, void *userdata, broker_audit **ret,
                           char **ret_error);
/*
 * Append entry (an object; "seq", "time", "prev" are added to it). Returns
 * a negative errno if the line could not be written completely; the log is
 * then left as it was, and the caller must refuse what it was about to do.
 */
int broker_audit_append(broker_audit *a, json_t *entry, int64_t now)
        __attribute__((warn_unused_result));
/*
 * Record the chain's end in audit.head. Appends only mark it stale; the
 * broker syncs once per batch of requests (and on free), which saves a
 * write per token under load. A head that lags the log still verifies.
 */
int broker_audit_sync_head(broker_audit *a);
void broker_audit_free(broker_audit *a);

/*
 * Check a log file (and its head next to it, if present: NAME.jsonl has
 * NAME.head). Returns 0 if
 * intact (ret_lines: how many lines), -EBADMSG with ret_line and a malloc'd
 * one-line ret_reason naming the first edited, deleted or reordered line,
 * or another negative errno if it could not be read.
 */
int broker_audit_verify(const char *path, unsigned *ret_lines, unsigned *ret_line,
                        char **ret_reason);
