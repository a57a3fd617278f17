/* SPDX-License-Identifier: MIT */
/*
 * logsink.h: a copy of every journal, audit and network log line on the
 * process's standard output, for a cluster's log pipeline ([logs] stdout =
 * json, docs/deploy.md), in signed hash chains.
 *
 * Each line goes out as one JSON object, the workspace's name, the
 * stream's, and the line's place in its chain around the original line,
 * byte for byte:
 *
 *   {"cloister":"audit","workspace":"task","chain":"C","n":N,"prev":"P","line":{...}}
 *
 * so a collector reads it as JSON, and gets back the exact bytes an audit
 * line's hash covers by slicing: from after the first `"line":` to before
 * the last `}`.
 *
 * The chain: every (workspace, stream) of a process is one chain. Its hash
 * starts at 32 random bytes, h0 (C is the first 16 hex digits of h0), and
 * each copy's hash is h_n = BLAKE2b-256(h_{n-1} || the copy's bytes without
 * its newline); P is the first 16 hex digits of h_{n-1}, so that a reader
 * finds where the chain breaks. A head line, signed with the workspace's
 * broker key (Ed25519, the key `cloister broker public-key` publishes),
 * says how far the chain goes:
 *
 *   {"cloister":"head","workspace":"task","stream":"audit","chain":"C",
 *    "lines":N,"hash":"HEX(h_N)","dropped":D,"time":MS,"final":false,
 *    "kid":"k4.pid.…","sig":"HEX"}
 *
 * sig is the detached signature of the line's bytes without the
 * ,"sig":"HEX" member. One with "lines":0 and "hash":h0 starts the chain;
 * then one at least every LOGSINK_HEAD_LINES lines and within
 * LOGSINK_HEAD_MS of a line; a last one with "final":true when the process
 * closes the sink (logsink_close()). The agent holds no key, so it cannot
 * make a head; deploy/collector/verify-chain checks them.
 *
 * The files on disk stay the record; the copy never blocks: a line that
 * would (a collector too slow) is dropped, counted in its chain's next
 * head ("dropped", outside the chain), and the next line that goes out is
 * preceded by {"cloister":"dropped","workspace":"W","lines":N}.
 *
 * One sink per process, opened by the command (mount, broker, proxy) before
 * it moves its own output elsewhere; the writers (the journal, the audit
 * log) call logsink_line() wherever they write a line, and it does nothing
 * in a process without a sink. Thread-safe.
 */
#pragma once

#include <stddef.h>

/* A head at least every this many lines of a chain, and within this many ms of its last line. */
#define LOGSINK_HEAD_LINES 1000
#define LOGSINK_HEAD_MS    1000
/* The chains one process keeps (workspaces times streams); lines of more are dropped. */
#define LOGSINK_CHAINS_MAX 256

/*
 * Open the sink on what standard output is now, as a description of its
 * own (so that it can be non-blocking without changing anyone else's), for
 * workspace (a workspace name: [A-Za-z0-9._-]). 0, or a negative errno.
 * Standard output and error, if regular files, are made O_APPEND too, so
 * that nothing written through them lands on a copy.
 */
int logsink_open_stdout(const char *workspace);

/*
 * The key that signs the heads of workspace's chains: sk, an Ed25519
 * secret key (crypto_sign, 64 bytes, copied into guarded memory), named
 * kid (its PASERK id). A chain of a workspace without a key gets no heads
 * (verify-chain refuses it). 0, -EINVAL or -ENOMEM.
 */
int logsink_set_key(const char *workspace, const unsigned char sk[64], const char *kid);

/*
 * Copy one line (a JSON object, with or without its newline) of stream,
 * tagged with workspace (NULL: the one the sink was opened for).
 */
void logsink_line(const char *stream, const char *workspace, const char *line, size_t len);

/*
 * The final head of every chain this process started, then the sink
 * closed and the keys wiped. A no-op without a sink.
 */
void logsink_close(void);
