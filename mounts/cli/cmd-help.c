/* SPDX-License-Identifier: MIT */
/*
 * cmd-help.c: `cloister help [COMMAND]`, and what every command prints for
 * --help.
 *
 * Both print the command's manual page (manual.h): its Name line as the
 * summary, its Synopsis, Options and Exit status as the text. No command
 * carries help text of its own that could drift from its page. A command
 * that has no page yet (its docs/cloister-NAME.md is not written, or this
 * is a -Ddocs=false build) falls back to the summary and usage in its
 * struct command, and says that its manual is missing; the cli tests fail
 * on any command without a page.
 */
#include <stdio.h>

#include "command.h"
#include "manual.h"
#include "lib/util.h"

static const struct manual_page *manual_find(const char *name)
{
        for (const struct manual_page *p = manual_pages; p->name; p++)
                if (streq(p->name, name))
                        return p;
        return NULL;
}

static const char *command_summary(const struct command *c)
{
        const struct manual_page *p = manual_find(c->name);

        return p ? p->summary : c->summary ? c->summary : "";
}

int command_usage(const struct command *c)
{
        const struct manual_page *p = manual_find(c->name);

        printf("cloister %s: %s\n\n", c->name, command_summary(c));
        if (p) {
                fputs(p->text, stdout);
                printf("\nThe full manual: man cloister-%s (docs/cloister-%s.md).\n", c->name,
                       c->name);
        } else {
                if (c->usage)
                        printf("%s\n", c->usage);
                printf("This cloister was built without the manual page of '%s' "
                       "(docs/cloister-%s.md).\n",
                       c->name, c->name);
        }
        return 0;
}

static int help_run(int argc, char **argv)
{
        if (argc == 2 && (streq(argv[1], "--help") || streq(argv[1], "-h")))
                return command_usage(&command_help);
        if (argc > 2 || (argc == 2 && argv[1][0] == '-'))
                return command_fail(&command_help, EXIT_USAGE, "usage: cloister help [COMMAND]");
        if (argc == 2) {
                const struct command *c = command_find(argv[1]);
                if (!c)
                        return command_fail(&command_help, EXIT_USAGE,
                                            "'%s' is not a cloister command", argv[1]);
                return command_usage(c);
        }
        printf("usage: cloister COMMAND [ARGS...]\n"
               "       cloister --version\n\n"
               "An agent sandbox: a copy-on-write workspace over FUSE and a token broker.\n\n"
               "Commands:\n");
        for (size_t i = 0; commands[i]; i++)
                printf("  %-8s  %s\n", commands[i]->name, command_summary(commands[i]));
        printf("\nRun 'cloister help COMMAND' for one command's synopsis and options,\n"
               "'man cloister-COMMAND' for its manual.\n");
        return 0;
}

const struct command command_help = {
        .name = "help",
        .run = help_run,
};
