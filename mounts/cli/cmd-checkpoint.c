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
#include "lib/util.h"

static int load(const struct command *cmd, const char *path, struct config **ret)
{
        _cleanup_free_ char *err = NULL;
        int r = config_load(path, ret, &err);

        if (r < 0)
                return command_fail(cmd, EXIT_USAGE, "%s", err ? err : strerror(-r));
        return 0;
}

static void time_utc(int64_t t, char buf[static 32])
{
        time_t tt = (time_t)t;
        struct tm tm;

        gmtime_r(&tt, &tm);
        strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int list(const struct config *c, bool json)
{
        _cleanup_layers_ struct fs_layers *l = NULL;
        _cleanup_free_ char *err = NULL;
        int r = fs_layers_load(c->workspace.state, &l, &err);

        if (r < 0)
                return command_fail(&command_checkpoint, 1, "%s", err ? err : strerror(-r));
        if (json) {
                json_t *o = json_pack("{s:s,s:I,s:I,s:b,s:n,s:[]}", "workspace", c->workspace.name,
                                      "depth", (json_int_t)l->n_stack, "max_depth",
                                      (json_int_t)FS_STACK_MAX, "squash_due",
                                      l->n_stack >= FS_STACK_SQUASH_DUE, "parent", "checkpoints");
                json_t *a = o ? json_object_get(o, "checkpoints") : NULL;
                _cleanup_free_ char *s = NULL;

                if (o && l->parent_name)
                        json_object_set_new(o, "parent",
                                            json_pack("{s:s,s:s,s:s}", "name", l->parent_name,
                                                      "state", l->parent_state, "checkpoint",
                                                      l->parent_checkpoint));
                for (size_t i = 0; a && i < l->n_cps; i++) {
                        const struct fs_checkpoint *cp = &l->cps[i];
                        char when[32];
                        time_utc(cp->time, when);
                        json_array_append_new(
                                a, json_pack("{s:s,s:I,s:s,s:I,s:s?}", "name", cp->name, "depth",
                                             (json_int_t)cp->n_stack, "created", when,
                                             "created_unix", (json_int_t)cp->time, "layer",
                                             cp->n_stack ? cp->stack[cp->n_stack - 1] : NULL));
                }
                s = o ? json_dumps(o, JSON_COMPACT) : NULL;
                json_decref(o);
                if (!s)
                        return command_fail(&command_checkpoint, 1, "out of memory");
                puts(s);
        } else {
                printf("workspace %s: %zu frozen layer%s (at most %d)", c->workspace.name,
                       l->n_stack, l->n_stack == 1 ? "" : "s", FS_STACK_MAX);
                if (l->parent_name)
                        printf(", a fork of %s at checkpoint %s", l->parent_name,
                               l->parent_checkpoint);
                putchar('\n');
                if (l->n_cps)
                        printf("%-32s %5s  %s\n", "NAME", "DEPTH", "CREATED");
                for (size_t i = 0; i < l->n_cps; i++) {
                        char when[32];
                        time_utc(l->cps[i].time, when);
                        printf("%-32s %5zu  %s\n", l->cps[i].name, l->cps[i].n_stack, when);
                }
        }
        return fflush(stdout) == 0 ? 0 : 1;
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
        struct fs_layers_report rep = {0};
        bool do_list = false, do_delete = false, json = false;
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
                r = fs_checkpoint_delete(c->workspace.state, argv[optind + 1], &rep, &err);
                if (r < 0)
                        return command_fail(&command_checkpoint, 1, "%s", err ? err : strerror(-r));
                for (char **k = rep.kept_by; k && *k; k++)
                        fprintf(stderr,
                                "cloister checkpoint: its layer stays, in use by %s; it goes "
                                "with its last user\n",
                                *k);
                fs_layers_report_clear(&rep);
                return 0;
        }
        r = fs_checkpoint(c->workspace.state, argv[optind + 1], &rep, &err);
        if (r < 0)
                return command_fail(&command_checkpoint, 1, "%s", err ? err : strerror(-r));
        if (json)
                printf("{\"name\":\"%s\",\"depth\":%zu,\"squash_due\":%s}\n", argv[optind + 1],
                       rep.depth, rep.squash_due ? "true" : "false");
        else
                printf("checkpoint %s: %zu frozen layer%s\n", argv[optind + 1], rep.depth,
                       rep.depth == 1 ? "" : "s");
        report_due(&command_checkpoint, c, rep.depth);
        fs_layers_report_clear(&rep);
        return fflush(stdout) == 0 ? 0 : 1;
}

const struct command command_checkpoint = {
        .name = "checkpoint",
        .run = checkpoint_run,
};

static int restore_run(int argc, char **argv)
{
        _cleanup_config_ struct config *c = NULL;
        _cleanup_free_ char *err = NULL;
        struct fs_layers_report rep = {0};
        int r;

        if (argc != 3 || argv[1][0] == '-' || argv[2][0] == '-')
                return command_fail(&command_restore, EXIT_USAGE,
                                    "usage: cloister restore CONFIG CHECKPOINT");
        r = load(&command_restore, argv[1], &c);
        if (r)
                return r;
        r = fs_restore(c->workspace.state, argv[2], &rep, &err);
        if (r < 0)
                return command_fail(&command_restore, 1, "%s", err ? err : strerror(-r));
        printf("restored %s to checkpoint %s: %zu frozen layer%s", c->workspace.name, argv[2],
               rep.depth, rep.depth == 1 ? "" : "s");
        if (rep.removed)
                printf(", %zu unused layer%s removed", rep.removed, rep.removed == 1 ? "" : "s");
        putchar('\n');
        fs_layers_report_clear(&rep);
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
