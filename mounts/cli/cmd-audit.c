/* SPDX-License-Identifier: MIT */
/* cmd-audit.c: placeholder until its module lands; it refuses to run. */
#include "command.h"

static int audit_run(int argc, char **argv)
{
        (void)argc;
        (void)argv;
        return command_fail(&command_audit, 1, "not available in this build");
}

const struct command command_audit = {
        .name = "audit",
        .summary = "(not available in this build)",
        .usage = "usage: cloister audit ...\n",
        .run = audit_run,
};

