/* SPDX-License-Identifier: MIT */
/* cmd-token.c: placeholder until its module lands; it refuses to run. */
#include "command.h"

static int token_run(int argc, char **argv)
{
        (void)argc;
        (void)argv;
        return command_fail(&command_token, 1, "not available in this build");
}

const struct command command_token = {
        .name = "token",
        .summary = "(not available in this build)",
        .usage = "usage: cloister token ...\n",
        .run = token_run,
};

