/* SPDX-License-Identifier: MIT */
/*
 * cmd-shell.c: `cloister shell CONFIG`, a person's interactive shell in the
 * same sandbox `cloister run` builds. It keeps the terminal (no new
 * session; TIOCSTI is denied by the seccomp filter instead) and passes TERM.
 */
#include "command.h"
#include "run-common.h"

static int shell_run(int argc, char **argv)
{
        return run_common(&command_shell, argc, argv, true);
}

const struct command command_shell = {
        .name = "shell",
        .run = shell_run,
};
