/* SPDX-License-Identifier: MIT */
/*
 * cmd-fork.c: `cloister fork CONFIG NEW_CONFIG [--from CHECKPOINT]
 * [--name NAME] [--state DIR] [--json]`: a new workspace that stacks the
 * same frozen layers, read-only and shared, under a writable layer of its
 * own (docs/cloister-fork.md, docs/fs-design.md).
 *
 * The work is ops_fork()'s (mounts/ops/ops-layers.c): the checkpoint
 * (unless --from; through the daemon if the parent is mounted), the fork's
 * state (fs_fork_state: made aside, renamed into place, registered with
 * the parent), then NEW_CONFIG, written last: until it exists there is no
 * fork, and a fork killed before it is made again by the same command.
 */
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "command.h"
#include "config.h"
#include "operations.h"
#include "lib/util.h"

/* NAME from NEW_CONFIG: its file name without a ".ini". */
static char *name_from_path(const char *path)
{
        _cleanup_free_ char *copy = strdup(path);
        char *base, *dot;

        if (!copy)
                return NULL;
        base = basename(copy);
        dot = strrchr(base, '.');
        if (dot && streq(dot, ".ini"))
                *dot = 0;
        return strdup(base);
}

static int fork_run(int argc, char **argv)
{
        static const struct option opts[] = {
                {"from", required_argument, NULL, 'f'},  {"name", required_argument, NULL, 'n'},
                {"state", required_argument, NULL, 's'}, {"json", no_argument, NULL, 'j'},
                {"help", no_argument, NULL, 'h'},        {},
        };
        _cleanup_config_ struct config *c = NULL;
        _cleanup_free_ char *err = NULL, *name = NULL, *state = NULL, *out = NULL;
        _cleanup_(json_decrefp) json_t *o = NULL;
        const char *from = NULL;
        bool json = false;
        int opt, r;

        while ((opt = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                switch (opt) {
                case 'f':
                        from = optarg;
                        break;
                case 'n':
                        free(name);
                        name = strdup(optarg);
                        break;
                case 's':
                        free(state);
                        state = strdup(optarg);
                        break;
                case 'j':
                        json = true;
                        break;
                case 'h':
                        return command_usage(&command_fork);
                default:
                        return EXIT_USAGE;
                }
        }
        if (optind + 2 != argc)
                return command_fail(&command_fork, EXIT_USAGE,
                                    "usage: cloister fork CONFIG NEW_CONFIG [--from CHECKPOINT] "
                                    "[--name NAME] [--state DIR]; see 'cloister help fork'");
        r = config_load(argv[optind], &c, &err);
        if (r < 0)
                return command_fail(&command_fork, EXIT_USAGE, "%s", err ? err : strerror(-r));
        /* Relative to the working directory; ops_fork() checks the rest, as for MCP. */
        r = ops_path_absolute(argv[optind + 1], &out);
        if (r == 0 && state) {
                char *abs = NULL;
                r = ops_path_absolute(state, &abs);
                free(state);
                state = abs;
        }
        if (r < 0 || (!name && !(name = name_from_path(out))))
                return command_fail(&command_fork, 1, "%s", r < 0 ? strerror(-r) : "out of memory");
        r = ops_fork(c,
                     &(struct ops_fork_options){
                             .new_config = out, .name = name, .from = from, .state = state},
                     &o, &err);
        /* -EINVAL: ops_fork() refused what was asked (a name, a path, a config that exists). */
        if (r < 0)
                return command_fail(&command_fork, r == -EINVAL ? EXIT_USAGE : 1, "%s",
                                    err ? err : strerror(-r));
        if (json) {
                _cleanup_free_ char *s = json_dumps(o, JSON_COMPACT);
                if (!s)
                        return command_fail(&command_fork, 1, "out of memory");
                puts(s);
        } else {
                printf("fork %s of %s at checkpoint %s: %s (state %s)\n", name, c->workspace.name,
                       json_string_value(json_object_get(o, "checkpoint")), out,
                       json_string_value(json_object_get(o, "state")));
        }
        return fflush(stdout) == 0 ? 0 : 1;
}

const struct command command_fork = {
        .name = "fork",
        .run = fork_run,
};
