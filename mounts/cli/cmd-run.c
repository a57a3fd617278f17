/* SPDX-License-Identifier: MIT */
/* cmd-run.c: placeholder until its module lands; it refuses to run. */
#include "command.h"

static int run_run(int argc, char **argv)
{
        (void)argc;
        (void)argv;
        return command_fail(&command_run, 1, "not available in this build");
}

const struct command command_run = {
        .name = "run",
        .summary = "(not available in this build)",
        .usage = "usage: cloister run ...\n",
        .run = run_run,
};

