/* SPDX-License-Identifier: MIT */
/* cmd-shell.c: placeholder until its module lands; it refuses to run. */
#include "command.h"

static int shell_run(int argc, char **argv)
{
        (void)argc;
        (void)argv;
        return command_fail(&command_shell, 1, "not available in this build");
}

const struct command command_shell = {
        .name = "shell",
        .summary = "(not available in this build)",
        .usage = "usage: cloister shell ...\n",
        .run = shell_run,
};

