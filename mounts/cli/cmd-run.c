/* SPDX-License-Identifier: MIT */
/*
 * cmd-run.c: `cloister run CONFIG -- CMD [ARGS...]`, the command users type
 * most. Parses the command line and prints; mounts/sandbox does the work.
 *
 * Exit status: CMD's, or 128+signal; 2 for a usage or config error; 125 if
 * the sandbox could not be set up, in which case nothing ran.
 */
#include <getopt.h>
#include <stdbool.h>
#include <string.h>

#include "command.h"
#include "config.h"
#include "run-common.h"
#include "sandbox.h"
#include "lib/util.h"

extern char **environ;

static void run_warn(const char *msg)
{
        fprintf(stderr, "cloister: %s\n", msg);
}

int run_common(const struct command *cmd, int argc, char **argv, bool interactive)
{
        static const struct option opts[] = {
                {"allow-host-network", no_argument, NULL, 'N'},
                {"no-mount", no_argument, NULL, 'M'},
                {"verbose", no_argument, NULL, 'v'},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        _cleanup_config_ struct config *c = NULL;
        _cleanup_free_ char *error = NULL;
        struct sandbox_result res = {0};
        char *shell_argv[] = {(char *)"/bin/bash", (char *)"-l", NULL};
        bool allow_host_network = false, no_mount = false, verbose = false;
        int opt, r;

        optind = 1;
        opterr = 0;
        while ((opt = getopt_long(argc, argv, "+hv", opts, NULL)) >= 0) {
                switch (opt) {
                case 'v':
                        verbose = true;
                        break;
                case 'N':
                        allow_host_network = true;
                        break;
                case 'M':
                        no_mount = true;
                        break;
                case 'h':
                        command_usage(cmd);
                        return 0;
                default:
                        return command_fail(cmd, EXIT_USAGE,
                                            "unknown option '%s'; see 'cloister help %s'",
                                            argv[optind - 1], cmd->name);
                }
        }
        if (optind >= argc)
                return command_fail(cmd, EXIT_USAGE, "missing CONFIG; see 'cloister help %s'",
                                    cmd->name);
        const char *config_path = argv[optind++];
        if (!interactive) {
                if (optind >= argc || !streq(argv[optind], "--"))
                        return command_fail(cmd, EXIT_USAGE,
                                            "expected '--' and a command after CONFIG");
                optind++;
                if (optind >= argc)
                        return command_fail(cmd, EXIT_USAGE, "missing the command after '--'");
        } else if (optind < argc)
                return command_fail(cmd, EXIT_USAGE, "unexpected argument '%s'", argv[optind]);

        sandbox_trace("cloister started");
        r = config_load(config_path, &c, &error);
        if (r < 0)
                return command_fail(cmd, EXIT_USAGE, "%s",
                                    error ? error : "cannot load the config");
        sandbox_trace("config loaded");
        if (interactive && access("/usr/bin/bash", X_OK) < 0)
                shell_argv[0] = (char *)"/bin/sh", shell_argv[1] = NULL;

        struct sandbox_session_options so = {
                .config_path = config_path,
                .config = c,
                .argv = interactive ? shell_argv : argv + optind,
                .host_env = environ,
                .interactive = interactive,
                .allow_host_network = allow_host_network,
                .no_mount = no_mount,
                .verbose = verbose,
                .warn = run_warn,
        };
        r = sandbox_session_run(&so, &res, &error);
        if (r < 0)
                return command_fail(cmd, RUN_EXIT_SETUP, "%s; nothing was run",
                                    error ? error : strerror(-r));
        if (res.timed_out)
                fprintf(stderr,
                        "cloister %s: [limits] timeout of %llus reached; the sandbox was stopped\n",
                        cmd->name, (unsigned long long)c->limits.timeout);
        else if (res.signal)
                fprintf(stderr, "cloister %s: stopped by signal %d; the sandbox was torn down\n",
                        cmd->name, res.signal);
        return res.status;
}

static int run_run(int argc, char **argv)
{
        return run_common(&command_run, argc, argv, false);
}

const struct command command_run = {
        .name = "run",
        .run = run_run,
};
