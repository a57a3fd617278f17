/* SPDX-License-Identifier: MIT */
/*
 * cmd-mcp.c: `cloister mcp [OPTIONS] CONFIG...`: an MCP server on stdin
 * and stdout for the workspaces of the configs given (mounts/mcp,
 * docs/cloister-mcp.md, docs/mcp.md).
 *
 * stdout is the protocol's alone: the server writes to a copy of it, and
 * fd 1 itself goes to stderr, so that nothing a library prints can land
 * in the middle of a message.
 */
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cloister-config.h"
#include "command.h"
#include "config.h"
#include "mcp.h"
#include "lib/util.h"
#include "lib/values.h"

/* One line to stderr, in one write: worker threads log too. */
static void log_line(const char *line)
{
        _cleanup_free_ char *l = NULL;

        if (asprintf(&l, "%s\n", line) > 0)
                (void)!write(STDERR_FILENO, l, strlen(l));
}

static int option_count(const char *name, const char *v, uint64_t min, uint64_t max, uint64_t *ret)
{
        if (value_parse_uint(v, ret) < 0 || *ret < min || *ret > max) {
                fprintf(stderr,
                        "cloister mcp: --%s: '%s' is not a count from %" PRIu64 " to %" PRIu64 "\n",
                        name, v, min, max);
                return -1;
        }
        return 0;
}

static int option_size(const char *name, const char *v, uint64_t min, uint64_t max, uint64_t *ret)
{
        if (value_parse_size(v, ret) < 0 || *ret < min || *ret > max) {
                fprintf(stderr,
                        "cloister mcp: --%s: '%s' is not a size from %" PRIu64 " to %" PRIu64
                        " bytes (4K, 1M, ...)\n",
                        name, v, min, max);
                return -1;
        }
        return 0;
}

static int mcp_run(int argc, char **argv)
{
        static const struct option opts[] = {
                {"output-max", required_argument, NULL, 'o'},
                {"request-max", required_argument, NULL, 'r'},
                {"runs", required_argument, NULL, 'n'},
                {"background", required_argument, NULL, 'b'},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        struct mcp_options o = {
                .output_max = MCP_OUTPUT_MAX_DEFAULT,
                .request_max = MCP_REQUEST_MAX_DEFAULT,
                .runs_max = MCP_RUNS_MAX_DEFAULT,
                .background_max = MCP_BACKGROUND_MAX_DEFAULT,
                .requests_max = MCP_REQUESTS_MAX_DEFAULT,
                .version = CLOISTER_VERSION,
                .log = log_line,
        };
        struct config **configs = NULL;
        uint64_t v;
        int opt, n, out = -1, ret = 1, k;

        while ((opt = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                switch (opt) {
                case 'o':
                        if (option_size("output-max", optarg, 1024, 64 << 20, &v) < 0)
                                return EXIT_USAGE;
                        o.output_max = (size_t)v;
                        break;
                case 'r':
                        if (option_size("request-max", optarg, 64 << 10, 256 << 20, &v) < 0)
                                return EXIT_USAGE;
                        o.request_max = (size_t)v;
                        break;
                case 'n':
                        if (option_count("runs", optarg, 1, MCP_RUNS_MAX, &v) < 0)
                                return EXIT_USAGE;
                        o.runs_max = (unsigned)v;
                        break;
                case 'b':
                        if (option_count("background", optarg, 0, MCP_RUNS_MAX, &v) < 0)
                                return EXIT_USAGE;
                        o.background_max = (unsigned)v;
                        break;
                case 'h':
                        command_usage(&command_mcp);
                        return 0;
                default:
                        return EXIT_USAGE;
                }
        }
        n = argc - optind;
        if (n < 1) {
                fprintf(stderr,
                        "cloister mcp: expected one CONFIG or more; see 'cloister help mcp'\n");
                return EXIT_USAGE;
        }
        configs = calloc((size_t)n, sizeof(*configs));
        if (!configs)
                return 1;
        for (int i = 0; i < n; i++) {
                _cleanup_free_ char *err = NULL;
                k = config_load(argv[optind + i], &configs[i], &err);
                if (k < 0) {
                        fprintf(stderr, "cloister mcp: %s\n", err ? err : strerror(-k));
                        ret = EXIT_USAGE;
                        goto out;
                }
                for (int j = 0; j < i; j++)
                        if (streq(configs[j]->workspace.name, configs[i]->workspace.name)) {
                                fprintf(stderr,
                                        "cloister mcp: %s and %s both name the workspace '%s'; "
                                        "the tools find a workspace by its name\n",
                                        argv[optind + j], argv[optind + i],
                                        configs[i]->workspace.name);
                                ret = EXIT_USAGE;
                                goto out;
                        }
        }
        o.configs = configs;
        o.config_paths = (const char *const *)(argv + optind);
        o.n = (size_t)n;
        out = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
        if (out < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
                fprintf(stderr, "cloister mcp: cannot set up stdout: %m\n");
                goto out;
        }
        log_line("cloister mcp: serving on stdin and stdout");
        k = mcp_serve(&o, STDIN_FILENO, out);
        if (k < 0)
                fprintf(stderr, "cloister mcp: %s\n", strerror(-k));
        ret = k < 0 ? 1 : 0;
out:
        safe_close(out);
        for (int i = 0; i < n; i++)
                config_free(configs[i]);
        free(configs);
        return ret;
}

const struct command command_mcp = {
        .name = "mcp",
        .run = mcp_run,
};
