/* SPDX-License-Identifier: MIT */
/*
 * cmd-checkpoint.c: `cloister checkpoint CONFIG NAME`, `--list CONFIG`
 * and `--delete CONFIG NAME`, `cloister restore CONFIG CHECKPOINT` and
 * `cloister squash CONFIG`: the workspace's frozen layers
 * (docs/cloister-checkpoint.md, docs/cloister-restore.md,
 * docs/cloister-squash.md, docs/fs-design.md).
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "command.h"
#include "config.h"
#include "layers.h"
#include "operations.h"
#include "lib/util.h"

static int load(const struct command *cmd, const char *path, struct config **ret)
{
        _cleanup_free_ char *err = NULL;
        int r = config_load(path, ret, &err);

        if (r < 0)
                return command_fail(cmd, EXIT_USAGE, "%s", err ? err : strerror(-r));
        return 0;
}

/* One JSON object on a line, for --json. */
static int print_json(const struct command *cmd, json_t *o)
{
        _cleanup_free_ char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;

        if (!s)
                return command_fail(cmd, 1, "out of memory");
        puts(s);
        return 0;
}

static int list(const struct config *c, bool json)
{
        _cleanup_(json_decrefp) json_t *o = NULL;
        _cleanup_free_ char *err = NULL;
        json_t *parent, *cp;
        json_int_t depth;
        size_t i;
        int r = ops_checkpoint_list(c, &o, &err);

        if (r < 0)
                return command_fail(&command_checkpoint, 1, "%s", err ? err : strerror(-r));
        if (json)
                r = print_json(&command_checkpoint, o);
        else {
                depth = json_integer_value(json_object_get(o, "depth"));
                printf("workspace %s: %" JSON_INTEGER_FORMAT " frozen layer%s (at most %d)",
                       c->workspace.name, depth, depth == 1 ? "" : "s", FS_STACK_MAX);
                parent = json_object_get(o, "parent");
                if (json_is_object(parent))
                        printf(", a fork of %s at checkpoint %s",
                               json_string_value(json_object_get(parent, "name")),
                               json_string_value(json_object_get(parent, "checkpoint")));
                putchar('\n');
                if (json_array_size(json_object_get(o, "checkpoints")))
                        printf("%-32s %5s  %s\n", "NAME", "DEPTH", "CREATED");
                json_array_foreach (json_object_get(o, "checkpoints"), i, cp)
                        printf("%-32s %5" JSON_INTEGER_FORMAT "  %s\n",
                               json_string_value(json_object_get(cp, "name")),
                               json_integer_value(json_object_get(cp, "depth")),
                               json_string_value(json_object_get(cp, "created")));
        }
        return r ? r : fflush(stdout) == 0 ? 0 : 1;
}

static void report_due(const struct command *cmd, const struct config *c, size_t depth)
{
        if (depth >= FS_STACK_SQUASH_DUE)
                fprintf(stderr,
                        "cloister %s: %zu frozen layers, of %d at most: a squash is due "
                        "(cloister squash %s, unmounted)\n",
                        cmd->name, depth, FS_STACK_MAX, c->file);
}

static int checkpoint_run(int argc, char **argv)
{
        static const struct option opts[] = {
                {"list", no_argument, NULL, 'l'},
                {"delete", no_argument, NULL, 'd'},
                {"json", no_argument, NULL, 'j'},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        _cleanup_config_ struct config *c = NULL;
        _cleanup_free_ char *err = NULL;
        _cleanup_(json_decrefp) json_t *o = NULL;
        bool do_list = false, do_delete = false, json = false;
        size_t i;
        json_t *k;
        int opt, r;

        while ((opt = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                switch (opt) {
                case 'l':
                        do_list = true;
                        break;
                case 'd':
                        do_delete = true;
                        break;
                case 'j':
                        json = true;
                        break;
                case 'h':
                        return command_usage(&command_checkpoint);
                default:
                        return EXIT_USAGE;
                }
        }
        if ((do_list && do_delete) || optind + (do_list ? 1 : 2) != argc)
                return command_fail(&command_checkpoint, EXIT_USAGE,
                                    "usage: cloister checkpoint CONFIG NAME | --list CONFIG "
                                    "[--json] | --delete CONFIG NAME; see 'cloister help "
                                    "checkpoint'");
        r = load(&command_checkpoint, argv[optind], &c);
        if (r)
                return r;
        if (do_list)
                return list(c, json);
        if (do_delete) {
                r = ops_checkpoint_delete(c, argv[optind + 1], &o, &err);
                if (r < 0)
                        return command_fail(&command_checkpoint, 1, "%s", err ? err : strerror(-r));
                json_array_foreach (json_object_get(o, "kept_by"), i, k)
                        fprintf(stderr,
                                "cloister checkpoint: its layer stays, in use by %s; it goes "
                                "with its last user\n",
                                json_string_value(k));
                if (json)
                        return print_json(&command_checkpoint, o) ?: fflush(stdout) == 0 ? 0 : 1;
                return 0;
        }
        r = ops_checkpoint(c, argv[optind + 1], &o, &err);
        if (r < 0)
                return command_fail(&command_checkpoint, 1, "%s", err ? err : strerror(-r));
        json_int_t depth = json_integer_value(json_object_get(o, "depth"));
        if (json)
                r = print_json(&command_checkpoint, o);
        else
                printf("checkpoint %s: %" JSON_INTEGER_FORMAT " frozen layer%s\n", argv[optind + 1],
                       depth, depth == 1 ? "" : "s");
        report_due(&command_checkpoint, c, (size_t)depth);
        if (json_integer_value(json_object_get(o, "not_carried")) > 0)
                fprintf(stderr,
                        "cloister checkpoint: %" JSON_INTEGER_FORMAT
                        " file(s) open for writing could not be carried into the new layer "
                        "(%s); writes through those open descriptors fail\n",
                        json_integer_value(json_object_get(o, "not_carried")),
                        json_string_value(json_object_get(o, "not_carried_first"))
                                ?: "its path is too long to show");
        return r ? r : fflush(stdout) == 0 ? 0 : 1;
}

const struct command command_checkpoint = {
        .name = "checkpoint",
        .run = checkpoint_run,
};

static int restore_run(int argc, char **argv)
{
        _cleanup_config_ struct config *c = NULL;
        _cleanup_free_ char *err = NULL;
        _cleanup_(json_decrefp) json_t *o = NULL;
        json_int_t depth, removed;
        bool json = argc == 4 && streq(argv[3], "--json");
        int r;

        if ((argc != 3 && !json) || argv[1][0] == '-' || argv[2][0] == '-')
                return command_fail(&command_restore, EXIT_USAGE,
                                    "usage: cloister restore CONFIG CHECKPOINT [--json]");
        r = load(&command_restore, argv[1], &c);
        if (r)
                return r;
        r = ops_restore(c, argv[2], &o, &err);
        if (r < 0)
                return command_fail(&command_restore, 1, "%s", err ? err : strerror(-r));
        if (json)
                return print_json(&command_restore, o) ?: fflush(stdout) == 0 ? 0 : 1;
        depth = json_integer_value(json_object_get(o, "depth"));
        removed = json_integer_value(json_object_get(o, "removed"));
        printf("restored %s to checkpoint %s: %" JSON_INTEGER_FORMAT " frozen layer%s",
               c->workspace.name, argv[2], depth, depth == 1 ? "" : "s");
        if (removed)
                printf(", %" JSON_INTEGER_FORMAT " unused layer%s removed", removed,
                       removed == 1 ? "" : "s");
        putchar('\n');
        return fflush(stdout) == 0 ? 0 : 1;
}

const struct command command_restore = {
        .name = "restore",
        .run = restore_run,
};

static int squash_run(int argc, char **argv)
{
        _cleanup_config_ struct config *c = NULL;
        _cleanup_free_ char *err = NULL;
        struct fs_layers_report rep = {0};
        int r;

        if (argc != 2 || argv[1][0] == '-')
                return command_fail(&command_squash, EXIT_USAGE, "usage: cloister squash CONFIG");
        r = load(&command_squash, argv[1], &c);
        if (r)
                return r;
        r = fs_squash(c->workspace.state, c->repo.source, &rep, &err);
        if (r < 0)
                return command_fail(&command_squash, 1, "%s", err ? err : strerror(-r));
        printf("%s: %zu frozen layer%s", c->workspace.name, rep.depth, rep.depth == 1 ? "" : "s");
        if (rep.removed)
                printf(", %zu unused layer%s removed", rep.removed, rep.removed == 1 ? "" : "s");
        putchar('\n');
        fs_layers_report_clear(&rep);
        return fflush(stdout) == 0 ? 0 : 1;
}

const struct command command_squash = {
        .name = "squash",
        .run = squash_run,
};
