/* SPDX-License-Identifier: MIT */
/*
 * logsink.h: a copy of every journal, audit and network log line on the
 * process's standard output, for a cluster's log pipeline ([logs] stdout =
 * json, docs/deploy.md).
 *
 * Each line goes out as one JSON object, the workspace's name and the
 * stream's around the original line, byte for byte:
 *
 *   {"cloister":"audit","workspace":"task","line":{...the exact line...}}
 *
 * so a collector reads it as JSON, and gets back the exact bytes an audit
 * line's hash covers by slicing: from after the first `"line":` to before
 * the last `}`. The files on disk stay the record; the copy never blocks:
 * a line that would (a collector too slow) is dropped and counted, and the
 * next line that goes out is preceded by
 * {"cloister":"dropped","workspace":"W","lines":N}.
 *
 * One sink per process, opened by the command (mount, broker, proxy) before
 * it moves its own output elsewhere; the writers (the journal, the audit
 * log) call logsink_line() wherever they write a line, and it does nothing
 * in a process without a sink. Thread-safe.
 */
#pragma once

#include <stddef.h>

/*
 * Open the sink on what standard output is now, as a description of its
 * own (so that it can be non-blocking without changing anyone else's), for
 * workspace (a workspace name: [A-Za-z0-9._-]). 0, or a negative errno.
 */
int logsink_open_stdout(const char *workspace);

/*
 * Copy one line (a JSON object, with or without its newline) of stream,
 * tagged with workspace (NULL: the one the sink was opened for).
 */
void logsink_line(const char *stream, const char *workspace, const char *line, size_t len);
