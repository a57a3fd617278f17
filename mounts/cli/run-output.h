/* SPDX-License-Identifier: MIT */
/*
 * run-output.h: [logs] stdout = json for `cloister run`: the command's
 * standard output and error are pipes of ours, and each line of them goes
 * to our standard output wrapped as one JSON object,
 *
 *   {"cloister":"output","workspace":"task","stream":"stdout","line":"TEXT"}
 *
 * so that nothing the agent writes reaches the log stream as a line of its
 * own (it could otherwise print lines that pass for cloister's, issue 43).
 * TEXT is the line without its newline, JSON-escaped; a line whose output
 * line would be longer than PIPE_BUF (4096 bytes, one atomic write on a
 * pipe) goes out in parts, and a part or a last line not ended by a
 * newline has "partial":true; bytes that are not UTF-8 are U+FFFD in TEXT,
 * and the line has "lossy":true. RUN_OUTPUT_LINE_MAX bounds what is held
 * of a line that has not ended yet.
 */
#pragma once

#define RUN_OUTPUT_LINE_MAX (16 * 1024)

typedef struct run_output run_output;

/*
 * Start relaying: *ret_stdout and *ret_stderr are the write ends for the
 * command (close-on-exec; the caller closes them once the command has
 * them). 0 or a negative errno.
 */
int run_output_start(const char *workspace, run_output **ret, int *ret_stdout, int *ret_stderr);
/*
 * The command has ended (the caller closed its write ends): relay what is
 * left, until the pipes' end, and free.
 */
void run_output_finish(run_output *o);
