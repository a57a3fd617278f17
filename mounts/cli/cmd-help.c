/* SPDX-License-Identifier: MIT */
/*
 * cmd-help.c: `cloister help [COMMAND]`.
 */
#include <stdio.h>

#include "command.h"
#include "lib/util.h"

static int help_run(int argc, char **argv)
{
        if (argc > 2)
                return command_fail(&command_help, EXIT_USAGE, "usage: cloister help [COMMAND]");
        if (argc == 2) {
                const struct command *c = command_find(argv[1]);
                if (!c)
                        return command_fail(&command_help, EXIT_USAGE,
                                            "'%s' is not a cloister command", argv[1]);
                printf("cloister %s: %s\n\n%s\nSee docs/cloister-%s.md for the full "
                       "manual.\n",
                       c->name, c->summary, c->usage, c->name);
                return 0;
        }
        printf("usage: cloister COMMAND [ARGS...]\n"
               "       cloister --version\n\n"
               "An agent sandbox: a copy-on-write workspace over FUSE and a token broker.\n\n"
               "Commands:\n");
        for (size_t i = 0; commands[i]; i++)
                printf("  %-8s  %s\n", commands[i]->name, commands[i]->summary);
        printf("\nRun 'cloister help COMMAND' for one command's options.\n");
        return 0;
}

const struct command command_help = {
        .name = "help",
        .summary = "show the commands, or one command's usage",
        .usage = "usage: cloister help [COMMAND]\n",
        .run = help_run,
};
