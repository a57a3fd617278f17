/* SPDX-License-Identifier: MIT */
/* cmd-log.c: placeholder until its module lands; it refuses to run. */
#include "command.h"

static int log_run(int argc, char **argv)
{
        (void)argc;
        (void)argv;
        return command_fail(&command_log, 1, "not available in this build");
}

const struct command command_log = {
        .name = "log",
        .summary = "(not available in this build)",
        .usage = "usage: cloister log ...\n",
        .run = log_run,
};

