/* SPDX-License-Identifier: MIT */
/*
 * cmd-fork.c: `cloister fork CONFIG NEW_CONFIG [--from CHECKPOINT]
 * [--name NAME] [--state DIR] [--json]`: a new workspace that stacks the
 * same frozen layers, read-only and shared, under a writable layer of its
 * own (docs/cloister-fork.md, docs/fs-design.md).
 *
 * Order: the checkpoint (unless --from; through the daemon if the parent
 * is mounted), the fork's state (fs_fork_state: made aside, renamed into
 * place, registered with the parent), then NEW_CONFIG, written last: until
 * it exists there is no fork, and a fork killed before it is made again
 * by the same command.
 */
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "command.h"
#include "config.h"
#include "layers.h"
#include "lib/mkdir.h"
#include "lib/util.h"
#include "lib/values.h"

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

/* An absolute, clean path for p (relative to the working directory). */
static char *absolute(const char *p)
{
        char cwd[PATH_MAX], *out;

        if (p[0] == '/')
                return strdup(p);
        if (!getcwd(cwd, sizeof(cwd)) || asprintf(&out, "%s/%s", cwd, p) < 0)
                return NULL;
        return out;
}

/* A checkpoint name for the fork's own: fork-NAME, or fork-NAME.2, ... if taken. */
static int auto_checkpoint(const struct config *c, const char *name, char **ret, char **err)
{
        _cleanup_layers_ struct fs_layers *l = NULL;
        int r = fs_layers_load(c->workspace.state, &l, err);

        if (r < 0)
                return r;
        for (unsigned i = 1; i < 1000; i++) {
                char *cand = NULL;
                if ((i == 1 ? asprintf(&cand, "fork-%.55s", name)
                            : asprintf(&cand, "fork-%.55s.%u", name, i)) < 0)
                        return -ENOMEM;
                if (!fs_layers_checkpoint(l, cand)) {
                        *ret = cand;
                        return 0;
                }
                free(cand);
        }
        return -EEXIST;
}

static int fork_run(int argc, char **argv)
{
        static const struct option opts[] = {
                {"from", required_argument, NULL, 'f'},  {"name", required_argument, NULL, 'n'},
                {"state", required_argument, NULL, 's'}, {"json", no_argument, NULL, 'j'},
                {"help", no_argument, NULL, 'h'},        {},
        };
        _cleanup_config_ struct config *c = NULL;
        _cleanup_free_ char *err = NULL, *name = NULL, *state = NULL, *cp = NULL, *out = NULL,
                            *comment = NULL;
        const char *from = NULL;
        struct fs_layers_report rep = {0}, crep = {0};
        bool json = false;
        struct stat st;
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
        out = absolute(argv[optind + 1]);
        if (!out || (!name && !(name = name_from_path(out))))
                return command_fail(&command_fork, 1, "out of memory");
        if (!value_name_is_valid(name, 64, false))
                return command_fail(&command_fork, EXIT_USAGE,
                                    "'%s' is not a workspace name (1 to 64 of A-Z a-z 0-9 . _ "
                                    "-, not starting with . or -): give one with --name",
                                    name);
        if (streq(name, c->workspace.name))
                return command_fail(&command_fork, EXIT_USAGE,
                                    "the fork needs a name of its own, not '%s' (--name)", name);
        if (lstat(out, &st) == 0)
                return command_fail(&command_fork, EXIT_USAGE, "'%s' exists already", out);
        if (!state) {
                _cleanup_free_ char *copy = strdup(c->workspace.state);
                if (!copy || asprintf(&state, "%s/%s", dirname(copy), name) < 0)
                        return command_fail(&command_fork, 1, "out of memory");
        } else {
                char *abs = absolute(state);
                free(state);
                state = abs;
                if (!state)
                        return command_fail(&command_fork, 1, "out of memory");
        }
        if (!value_path_is_clean_absolute(state))
                return command_fail(&command_fork, EXIT_USAGE,
                                    "--state '%s': not a clean absolute path", state);
        if (startswith(state, c->workspace.state) &&
            (state[strlen(c->workspace.state)] == '/' || !state[strlen(c->workspace.state)]))
                return command_fail(&command_fork, EXIT_USAGE,
                                    "--state '%s' is inside the parent's state", state);
        if (!from) {
                r = auto_checkpoint(c, name, &cp, &err);
                if (r == 0)
                        r = fs_checkpoint(c->workspace.state, cp, &crep, &err);
                if (r < 0)
                        return command_fail(&command_fork, 1, "checkpoint of %s: %s",
                                            c->workspace.name, err ? err : strerror(-r));
                fs_layers_report_clear(&crep);
                from = cp;
        }
        r = fs_fork_state(c->workspace.state, c->workspace.name, from, state, &rep, &err);
        if (r < 0)
                return command_fail(&command_fork, 1, "%s", err ? err : strerror(-r));
        r = mkdir_parents(out, 0755);
        if (r < 0)
                return command_fail(&command_fork, 1, "cannot make the directory of '%s': %s", out,
                                    strerror(-r));
        if (asprintf(&comment, "A fork of %s at checkpoint %s, made by cloister fork.",
                     c->workspace.name, from) < 0)
                comment = NULL;
        r = config_fork_write(
                c,
                &(struct config_fork_edits){
                        .name = name, .state = state, .rev = rep.base, .comment = comment},
                out, &err);
        if (r < 0) {
                fs_layers_report_clear(&rep);
                return command_fail(&command_fork, 1, "%s", err ? err : strerror(-r));
        }
        if (json) {
                json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:s?}", "name", name, "config", out,
                                      "state", state, "parent", c->workspace.name, "checkpoint",
                                      from, "depth", (json_int_t)rep.depth, "base", rep.base);
                _cleanup_free_ char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
                json_decref(o);
                if (s)
                        puts(s);
        } else {
                printf("fork %s of %s at checkpoint %s: %s (state %s)\n", name, c->workspace.name,
                       from, out, state);
        }
        fs_layers_report_clear(&rep);
        return fflush(stdout) == 0 ? 0 : 1;
}

const struct command command_fork = {
        .name = "fork",
        .run = fork_run,
};
