/* SPDX-License-Identifier: MIT */
/*
 * cmd-run.c: `cloister run CONFIG -- CMD [ARGS...]`, the command users type
 * most. Parses the command line and prints; mounts/sandbox does the work.
 *
 * Exit status: CMD's, or 128+signal; 2 for a usage or config error; 125 if
 * the sandbox could not be set up, in which case nothing ran.
 *
 * --json: a summary for a program, as the last line on stderr (stdout is
 * the command's): docs/cloister-run.md has its schema.
 *
 * [logs] stdout = json: the command's output goes through run-output.c,
 * each line wrapped as JSON, so that it can't pass for the daemons' log
 * copies on the same stream.
 */
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <jansson.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "claims.h"
#include "command.h"
#include "config.h"
#include "run-common.h"
#include "operations.h"
#include "run-output.h"
#include "sandbox.h"
#include "lib/util.h"

extern char **environ;

static void run_warn(const char *msg)
{
        fprintf(stderr, "cloister: %s\n", msg);
}

/*
 * A regular file written without O_APPEND: every writer through this
 * description (the command, our messages) writes at its offset, over what
 * the daemons appended since through descriptions of their own ([logs]
 * stdout = json). With O_APPEND each write goes to the end.
 */
static void append_if_file(int fd)
{
        struct stat st;
        int fl;

        if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (fl = fcntl(fd, F_GETFL)) >= 0 &&
            !(fl & O_APPEND))
                (void)fcntl(fd, F_SETFL, fl | O_APPEND);
}

static int64_t now_ms(void)
{
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static int64_t wall_ms(void)
{
        struct timespec t;

        clock_gettime(CLOCK_REALTIME, &t);
        return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* The --json summary, one line on stderr; returns status. */
static int summary_print(const struct config *c, int status, const struct sandbox_result *res,
                         int64_t ms, const char *error)
{
        json_t *limits = json_array(), *o;
        char *text;

        if (res && res->timed_out)
                json_array_append_new(limits, json_string("timeout"));
        if (res && res->memory_hit)
                json_array_append_new(limits, json_string("memory"));
        if (res && res->processes_hit)
                json_array_append_new(limits, json_string("processes"));
        o = json_pack("{s:s, s:i, s:o, s:I, s:b, s:o}", "workspace", c->workspace.name, "exit_code",
                      status, "signal",
                      res && res->signal ? json_integer(res->signal) : json_null(), "duration_ms",
                      (json_int_t)ms, "timed_out", res && res->timed_out, "limits_hit", limits);
        if (o && error)
                json_object_set_new(o, "error", json_string(error));
        text = o ? json_dumps(o, JSON_COMPACT) : NULL;
        if (text)
                fprintf(stderr, "%s\n", text);
        free(text);
        json_decref(o);
        return status;
}

int run_common(const struct command *cmd, int argc, char **argv, bool interactive)
{
        static const struct option opts[] = {
                {"allow-host-network", no_argument, NULL, 'N'},
                {"no-mount", no_argument, NULL, 'M'},
                {"verbose", no_argument, NULL, 'v'},
                {"json", no_argument, NULL, 'j'},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        _cleanup_config_ struct config *c = NULL;
        _cleanup_free_ char *error = NULL;
        struct sandbox_result res = {0};
        char *shell_argv[] = {(char *)"/bin/bash", (char *)"-l", NULL};
        bool allow_host_network = false, no_mount = false, verbose = false, json = false;
        int64_t start;
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
                case 'j':
                        if (interactive)
                                return command_fail(cmd, EXIT_USAGE,
                                                    "--json is for 'cloister run'; a shell "
                                                    "has no summary");
                        json = true;
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
        /* A shell keeps the terminal (no new session): what runs in it could
         * write to /dev/tty, a line of its own on a log stream that is one
         * (a container's tty), around the wrapping. */
        if (interactive && c->logs.stdout_json)
                return command_fail(cmd, EXIT_USAGE,
                                    "%s: [logs] stdout = json: a shell keeps the terminal, "
                                    "where its commands could write lines of their own to the "
                                    "log stream; use 'cloister run' (its output is wrapped)",
                                    c->file);
        append_if_file(STDOUT_FILENO);
        append_if_file(STDERR_FILENO);
        run_output *relay = NULL;
        if (c->logs.stdout_json) {
                r = run_output_start(c->workspace.name, &relay, &so.stdout_fd, &so.stderr_fd);
                if (r < 0)
                        return command_fail(cmd, RUN_EXIT_SETUP,
                                            "%s: [logs] stdout = json: cannot relay the "
                                            "command's output: %s; nothing was run",
                                            c->file, strerror(-r));
        }
        start = now_ms();
        {
                /* Before anything is written: never over another workspace's paths. */
                _cleanup_free_ char *why = NULL;
                r = claims_check(c, NULL, NULL, &why);
                if (r < 0 && asprintf(&error, "%s: %s", c->file, why ? why : strerror(-r)) < 0)
                        error = NULL;
        }
        /* Recorded before it runs: a command the record cannot hold does
         * not run. The record's code is linked in (mounts/ops: libcloister_runlog). */
        char run_id[OPS_RUNLOG_ID_LEN + 1] = "";
        if (r >= 0) {
                struct ops_runlog_start rs = {
                        .source = interactive ? "shell" : "run",
                        .argv = so.argv,
                        .cwd = c->repo.path,
                        .env = c->run.env,
                        .start_ms = wall_ms(),
                };
                r = ops_runlog_begin(c, &rs, run_id, &error);
        }
        if (r >= 0)
                r = sandbox_session_run(&so, &res, &error);
        if (run_id[0]) {
                _cleanup_free_ char *why = NULL;
                struct ops_runlog_finish rf = {
                        .end_ms = wall_ms(),
                        .exit_code = r < 0 ? RUN_EXIT_SETUP : res.status,
                        .signal = r < 0 ? 0 : res.signal,
                        .timed_out = r >= 0 && res.timed_out,
                        .stdout_bytes = -1,
                        .stderr_bytes = -1,
                        .pid = res.pid,
                        .bwrap_pid = res.bwrap_pid,
                        .pgid = res.pgid,
                        .runner_pid = getpid(),
                        .cgroup = r < 0 ? NULL : res.cgroup,
                        .error = r < 0 ? (error ? error : strerror(-r)) : NULL,
                };
                if (ops_runlog_end(c, run_id, &rf, &why) < 0)
                        fprintf(stderr, "cloister %s: warning: %s\n", cmd->name,
                                why ? why : "cannot write the run record");
        }
        if (relay) {
                /* Ours closed, the sandbox's gone: the relay sees the pipes' end. */
                safe_close(so.stdout_fd);
                safe_close(so.stderr_fd);
                run_output_finish(relay);
        }
        if (r < 0 && json)
                return summary_print(c, RUN_EXIT_SETUP, NULL, now_ms() - start,
                                     error ? error : strerror(-r));
        if (r < 0)
                return command_fail(cmd, RUN_EXIT_SETUP, "%s; nothing was run",
                                    error ? error : strerror(-r));
        if (json)
                return summary_print(c, res.status, &res, now_ms() - start, NULL);
        /* Never claim a stop that did not happen (a kill(2) refused). */
        if ((res.timed_out || res.signal) && res.stop_error)
                fprintf(stderr,
                        "cloister %s: %s, but the sandbox could not be stopped (%s); it ended on "
                        "its own\n",
                        cmd->name, res.timed_out ? "[limits] timeout reached" : "told to stop",
                        strerror(-res.stop_error));
        else if (res.timed_out)
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
