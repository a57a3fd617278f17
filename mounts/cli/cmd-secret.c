/* SPDX-License-Identifier: MIT */
/* cmd-secret.c: placeholder until its module lands; it refuses to run. */
#include "command.h"

static int secret_run(int argc, char **argv)
{
        (void)argc;
        (void)argv;
        return command_fail(&command_secret, 1, "not available in this build");
}

const struct command command_secret = {
        .name = "secret",
        .summary = "(not available in this build)",
        .usage = "usage: cloister secret ...\n",
        .run = secret_run,
};

