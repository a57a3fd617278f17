/* SPDX-License-Identifier: MIT */
/* cmd-broker.c: placeholder until its module lands; it refuses to run. */
#include "command.h"

static int broker_run(int argc, char **argv)
{
        (void)argc;
        (void)argv;
        return command_fail(&command_broker, 1, "not available in this build");
}

const struct command command_broker = {
        .name = "broker",
        .summary = "(not available in this build)",
        .usage = "usage: cloister broker ...\n",
        .run = broker_run,
};

