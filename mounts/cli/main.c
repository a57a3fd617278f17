/* SPDX-License-Identifier: MIT */
/*
 * main.c: the `cloister` binary. Dispatches to a subcommand, git-style.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cloister-config.h"
#include "command.h"
#include "lib/util.h"

const struct command *const commands[] = {
        &command_help,  &command_check,
        &command_mount, &command_unmount,
        &command_run,   &command_shell,
        &command_diff,  &command_export,
        &command_log,   &command_broker,
        &command_token, &command_secret,
        &command_audit, &command_proxy,
        NULL,
};

const struct command *command_find(const char *name)
{
        for (size_t i = 0; commands[i]; i++)
                if (streq(commands[i]->name, name))
                        return commands[i];
        return NULL;
}

int command_fail(const struct command *c, int code, const char *fmt, ...)
{
        va_list ap;

        fprintf(stderr, "cloister %s: ", c->name);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        return code;
}

int main(int argc, char **argv)
{
        const struct command *c;

        if (argc < 2) {
                fprintf(stderr, "usage: cloister COMMAND [ARGS...]; see 'cloister help'\n");
                return EXIT_USAGE;
        }
        if (streq(argv[1], "--version") || streq(argv[1], "version")) {
                printf("cloister %s\n", CLOISTER_VERSION);
                return 0;
        }
        if (streq(argv[1], "--help") || streq(argv[1], "-h"))
                return command_help.run(1, (char *[]){(char *)"help", NULL});
        if (argv[1][0] == '-') {
                fprintf(stderr, "cloister: unknown option '%s'; see 'cloister help'\n", argv[1]);
                return EXIT_USAGE;
        }
        c = command_find(argv[1]);
        if (!c) {
                fprintf(stderr, "cloister: '%s' is not a cloister command; see 'cloister help'\n",
                        argv[1]);
                return EXIT_USAGE;
        }
        return c->run(argc - 1, argv + 1);
}
