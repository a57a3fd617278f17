/* SPDX-License-Identifier: MIT */
/*
 * cloister-exec.c: the first program of every sandbox. It runs the command
 * it is given as execvp(3) finds it, so that the command keeps this
 * process (its pid, its place in the sandbox's limits and filter), and if
 * that fails it says why in one line and exits as sh and env do: 127 when
 * the command is not found, 126 when it is found and cannot be run.
 *
 * Why a program of its own: bubblewrap executes the command itself and,
 * if it can't, exits 1 without the exit code it reports for a command
 * that ran, which cloister can't tell from a sandbox that failed to
 * build. A person (or a tool) that typed a wrong command name gets the
 * status every shell gives it, and a failed sandbox keeps 125.
 *
 * It runs inside the sandbox, under its seccomp filter, as the agent. It
 * takes no options: everything after argv[0] is the command.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lib/quote.h"

int main(int argc, char **argv)
{
        int e;

        if (argc < 2) {
                fputs("usage: cloister-exec COMMAND [ARGS...]\n", stderr);
                return 125;
        }
        execvp(argv[1], argv + 1);
        e = errno;
        /* The name as typed, quoted if it holds bytes a terminal would act on. */
        fputs("cloister: ", stderr);
        quote_fputs(stderr, argv[1], QUOTE_UTF8);
        fprintf(stderr, ": %s\n",
                e == ENOENT && !strchr(argv[1], '/') ? "command not found" : strerror(e));
        return e == ENOENT || e == ENOTDIR ? 127 : 126;
}
