/* SPDX-License-Identifier: MIT */
/* cmd-mount.c: placeholder until its module lands; it refuses to run. */
#include "command.h"

static int mount_run(int argc, char **argv)
{
        (void)argc;
        (void)argv;
        return command_fail(&command_mount, 1, "not available in this build");
}

const struct command command_mount = {
        .name = "mount",
        .summary = "(not available in this build)",
        .usage = "usage: cloister mount ...\n",
        .run = mount_run,
};

static int unmount_run(int argc, char **argv)
{
        (void)argc;
        (void)argv;
        return command_fail(&command_unmount, 1, "not available in this build");
}

const struct command command_unmount = {
        .name = "unmount",
        .summary = "(not available in this build)",
        .usage = "usage: cloister unmount ...\n",
        .run = unmount_run,
};

