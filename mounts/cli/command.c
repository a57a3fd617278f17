/* SPDX-License-Identifier: MIT */
/*
 * command.c: what the binary and cloister-commands.so share of command.h;
 * each has its own commands[] table (main.c, commands.c).
 */
#include <stdarg.h>
#include <stdio.h>

#include "command.h"
#include "lib/util.h"

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
