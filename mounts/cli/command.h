/* SPDX-License-Identifier: MIT */
/*
 * command.h: one git-style subcommand of the `cloister` binary.
 *
 * Each cmd-*.c file defines one `const struct command command_NAME`, and
 * main.c lists them. A command's run() gets argv with argv[0] set to its own
 * name and returns the process exit code: 0 success, 1 failure, 2 usage or
 * config error (see docs/cloister.md for the table).
 */
#pragma once

#include <stdio.h>

#define EXIT_USAGE 2

struct command {
        const char *name;
        const char *summary; /* one line, for `cloister help` */
        const char *usage;   /* synopsis and options, for `cloister help NAME` */
        int (*run)(int argc, char **argv);
};

extern const struct command command_help, command_check, command_mount, command_unmount,
        command_log, command_diff, command_export, command_broker, command_token, command_secret,
        command_audit, command_run, command_shell, command_proxy;

extern const struct command *const commands[];

const struct command *command_find(const char *name);

/* "cloister NAME: message" on stderr, one line; returns code. */
int command_fail(const struct command *c, int code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
