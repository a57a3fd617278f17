/* SPDX-License-Identifier: MIT */
/*
 * command.h: one git-style subcommand of the `cloister` binary.
 *
 * Each cmd-*.c file defines one `const struct command command_NAME`, and
 * main.c lists them. A command's run() gets argv with argv[0] set to its own
 * name and returns the process exit code: 0 success, 1 failure, 2 usage or
 * config error (see docs/cloister.md for the table).
 *
 * A command's words for people live in its manual page,
 * docs/cloister-NAME.md: `cloister help NAME` and NAME --help print the
 * page's Synopsis, Options and Exit status (command_usage()), and the
 * command list shows the page's Name line. Write those there, not here.
 */
#pragma once

#include <stdio.h>

#define EXIT_USAGE 2

struct command {
        const char *name;
        int (*run)(int argc, char **argv);
        /*
         * Only for a command whose docs/cloister-NAME.md is not written yet:
         * shown until it is (and the cli tests fail meanwhile). Leave NULL.
         */
        const char *summary;
        const char *usage;
};

extern const struct command command_help, command_check, command_mount, command_unmount,
        command_log, command_diff, command_export, command_broker, command_token, command_secret,
        command_audit, command_run, command_shell, command_proxy, command_mcp, command_init,
        command_status, command_list, command_checkpoint, command_fork, command_restore,
        command_squash, command_report, command_image;

extern const struct command *const commands[];

const struct command *command_find(const char *name);

/* Print the command's help (what `cloister help NAME` prints) on stdout; returns 0. */
int command_usage(const struct command *c);

/* cloister-commands.so's entry point (commands.c): argv[0] is a command name or "--version". */
int cloister_commands_main(int argc, char **argv);

/* "cloister NAME: message" on stderr, one line; returns code. */
int command_fail(const struct command *c, int code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
