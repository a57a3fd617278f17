/* SPDX-License-Identifier: MIT */
/* cmd-diff.c: placeholder until its module lands; it refuses to run. */
#include "command.h"

static int diff_run(int argc, char **argv)
{
        (void)argc;
        (void)argv;
        return command_fail(&command_diff, 1, "not available in this build");
}

const struct command command_diff = {
        .name = "diff",
        .summary = "(not available in this build)",
        .usage = "usage: cloister diff ...\n",
        .run = diff_run,
};

