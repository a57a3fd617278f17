/* SPDX-License-Identifier: MIT */
/*
 * cmd-report.c: `cloister report CONFIG [-o FILE] [--since CHECKPOINT]
 * [--json]`: one self-contained HTML page of everything the agent did
 * (report-html.c), from ops_report()'s data; --json prints the data.
 *
 * The page is made in memory, bounded (REPORT_HTML_MAX_DEFAULT), then
 * written at once: to FILE through a temporary file renamed over it, so a
 * reader never sees half a report; else to standard output.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "command.h"
#include "config.h"
#include "operations.h"
#include "report-html.h"
#include "lib/util.h"
#include "lib/values.h"

static int write_file(const char *path, const char *buf, size_t len)
{
        _cleanup_free_ char *tmp = NULL;
        _cleanup_close_ int fd = -1;
        int r = 0;

        if (asprintf(&tmp, "%s.XXXXXX", path) < 0)
                return -ENOMEM;
        fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        for (size_t off = 0; off < len && r == 0;) {
                ssize_t n = write(fd, buf + off, len - off);
                if (n < 0 && errno != EINTR)
                        r = negative_errno();
                else if (n > 0)
                        off += (size_t)n;
        }
        if (r == 0 && (fchmod(fd, 0644) < 0 || fsync(fd) < 0))
                r = negative_errno();
        if (r == 0 && rename(tmp, path) < 0)
                r = negative_errno();
        if (r < 0)
                (void)unlink(tmp);
        return r;
}

static int report_run(int argc, char **argv)
{
        static const struct option opts[] = {
                {"output", required_argument, NULL, 'o'},
                {"since", required_argument, NULL, 'S'},
                {"json", no_argument, NULL, 'j'},
                {"max-size", required_argument, NULL, 'M'},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        _cleanup_config_ struct config *c = NULL;
        _cleanup_(json_decrefp) json_t *report = NULL;
        _cleanup_free_ char *error = NULL, *buf = NULL;
        const char *output = NULL, *since = NULL;
        size_t len = 0;
        uint64_t max = REPORT_HTML_MAX_DEFAULT;
        bool json = false;
        FILE *mem;
        int opt, r;

        optind = 1;
        while ((opt = getopt_long(argc, argv, "ho:", opts, NULL)) >= 0) {
                switch (opt) {
                case 'o':
                        output = optarg;
                        break;
                case 'S':
                        since = optarg;
                        break;
                case 'j':
                        json = true;
                        break;
                case 'M':
                        if (value_parse_size(optarg, &max) < 0 || max < 64 * 1024 ||
                            max > 1024ull * 1024 * 1024)
                                return command_fail(&command_report, EXIT_USAGE,
                                                    "--max-size '%s': not a size from 64K to 1G",
                                                    optarg);
                        break;
                case 'h':
                        command_usage(&command_report);
                        return 0;
                default:
                        return command_fail(&command_report, EXIT_USAGE,
                                            "unknown option; see 'cloister help report'");
                }
        }
        if (optind != argc - 1)
                return command_fail(&command_report, EXIT_USAGE,
                                    "expected one CONFIG; see 'cloister help report'");
        r = config_load(argv[optind], &c, &error);
        if (r < 0)
                return command_fail(&command_report, EXIT_USAGE, "%s",
                                    error ? error : strerror(-r));
        r = ops_report(c, argv[optind], since, &report, &error);
        if (r < 0)
                return command_fail(&command_report, r == -ENOENT && since ? EXIT_USAGE : 1, "%s",
                                    error ? error : strerror(-r));
        mem = open_memstream(&buf, &len);
        if (!mem)
                return command_fail(&command_report, 1, "out of memory");
        if (json) {
                r = json_dumpf(report, mem, JSON_COMPACT | JSON_SORT_KEYS) < 0 ? -EIO : 0;
                fputc('\n', mem);
        } else
                r = report_html_write(mem, report, (size_t)max);
        if (fclose(mem) != 0 && r == 0)
                r = -ENOMEM;
        if (r < 0)
                return command_fail(&command_report, 1, "cannot make the report: %s", strerror(-r));
        if (output) {
                r = write_file(output, buf, len);
                if (r < 0)
                        return command_fail(&command_report, 1, "%s: %s", output, strerror(-r));
                fprintf(stderr, "cloister report: %s (%zu bytes)\n", output, len);
                return 0;
        }
        if (fwrite(buf, 1, len, stdout) != len || fflush(stdout) != 0)
                return command_fail(&command_report, 1, "writing the report: %m");
        return 0;
}

const struct command command_report = {
        .name = "report",
        .run = report_run,
};
