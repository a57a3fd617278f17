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
#include <stdbool.h>
#include <stdint.h>

#define BROKER_AUDIT_FILE     "audit.jsonl"
#define BROKER_AUDIT_HEAD     "audit.head"
#define BROKER_AUDIT_LINE_MAX (64 * 1024)

/*
 * The bound on the log's size ([limits] audit, docs/config.md). Past
 * max_bytes - BROKER_AUDIT_RESERVE one {"event":"audit_full"} line is
 * written (in the reserve) and every later append fails with -EDQUOT, so
 * callers refuse what they were about to do (fail closed). Lines already
 * written are never touched.
 */
#define BROKER_AUDIT_MAX_DEFAULT (64ull * 1024 * 1024)
#define BROKER_AUDIT_MAX_MIN     (1024ull * 1024)
#define BROKER_AUDIT_RESERVE     (4 * 1024)
/*
 * Lines an agent can cause at will and that change nothing (a refused
 * request, its own introspection, a revocation of nothing): at most
 * BROKER_AUDIT_NOISE_BURST at once and BROKER_AUDIT_NOISE_RATE a second,
 * and none once the log is half full, so that they cannot use up the room
 * that issuing tokens needs. The ones not written are counted, and the next
 * such line says how many ("suppressed"); so does a last "audit_suppressed"
 * line when the log is closed.
 */
#define BROKER_AUDIT_NOISE_RATE  1
#define BROKER_AUDIT_NOISE_BURST 60

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
 * The same, for a log that many short-lived processes append to (the run
 * record): it reads only the log's last line and its head, however long
 * the log is, and opens if they agree: the last line complete with its
 * hash right, and the head naming it (or the line before it, a writer that
 * died between the two). Anything else (a log cut, its last line edited,
 * the head behind or ahead) gets broker_audit_open_file()'s whole check,
 * which refuses a tampered log naming the line. A line edited further back
 * is not seen here: broker_audit_verify() finds it, before and after later
 * appends, since they chain to the lines before them. A log whose last
 * line is audit_full is full: appends fail with -EDQUOT.
 */
int broker_audit_open_tail(int dirfd, const char *dir, const char *file, const char *head,
                           broker_audit **ret, char **ret_error);
/*
 * Append entry (an object; "seq", "time", "prev" are added to it). Returns
 * a negative errno if the line could not be written completely; the log is
 * then left as it was, and the caller must refuse what it was about to do.
 */
int broker_audit_append(broker_audit *a, json_t *entry, int64_t now)
        __attribute__((warn_unused_result));
/*
 * The same for an entry the caller has serialized itself (the hot path of
 * issuing a token): head is "{" and the members whose keys sort before
 * "prev", each followed by ','; tail the members whose keys sort after
 * "time", then '}'. The line is then exactly what broker_audit_append()
 * writes for the same entry, if the members are written as json_dumps()
 * writes them with JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII.
 */
int broker_audit_append_text(broker_audit *a, const char *head, size_t head_len, const char *tail,
                             size_t tail_len, int64_t now) __attribute__((warn_unused_result));
/*
 * Record the chain's end in audit.head. Appends only mark it stale; the
 * broker syncs it at most every BROKER_AUDIT_HEAD_LAG_MS while lines are
 * appended and within that time once they stop (and on free), which saves
 * a write per token. A head that lags the log still verifies.
 */
#define BROKER_AUDIT_HEAD_LAG_MS 20
bool broker_audit_head_stale(const broker_audit *a);
int broker_audit_sync_head(broker_audit *a);
/* Set the bound (0: none; the default is BROKER_AUDIT_MAX_DEFAULT). */
void broker_audit_set_max(broker_audit *a, uint64_t max_bytes);
/*
 * Append a line the agent can cause at will (see BROKER_AUDIT_NOISE_RATE):
 * 0 written, 1 not written but counted, or a negative errno.
 */
int broker_audit_append_noise(broker_audit *a, json_t *entry, int64_t now)
        __attribute__((warn_unused_result));
void broker_audit_free(broker_audit *a);
/*
 * The workspace the log's lines are tagged with when they are also copied
 * to standard output (lib/logsink.h). 0 or -ENOMEM.
 */
int broker_audit_set_name(broker_audit *a, const char *workspace);

/*
 * Check a log file (and its head next to it, if present: NAME.jsonl has
 * NAME.head). Returns 0 if
 * intact (ret_lines: how many lines), -EBADMSG with ret_line and a malloc'd
 * one-line ret_reason naming the first edited, deleted or reordered line,
 * or another negative errno if it could not be read.
 */
int broker_audit_verify(const char *path, unsigned *ret_lines, unsigned *ret_line,
                        char **ret_reason);
