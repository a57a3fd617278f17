/* SPDX-License-Identifier: MIT */
/* cmd-export.c: placeholder until its module lands; it refuses to run. */
#include "command.h"

static int export_run(int argc, char **argv)
{
        (void)argc;
        (void)argv;
        return command_fail(&command_export, 1, "not available in this build");
}

const struct command command_export = {
        .name = "export",
        .summary = "(not available in this build)",
        .usage = "usage: cloister export ...\n",
        .run = export_run,
};

