/* SPDX-License-Identifier: MIT */
/*
 * ops-layers.c: checkpoint, its list and delete, restore and fork, as
 * operations that return data (operations.h). The CLI prints them
 * (cmd-checkpoint.c, cmd-fork.c); `cloister mcp` serves them as the
 * checkpoint, restore and fork tools. The layer stack itself is fs/'s
 * (layers.h, docs/fs-design.md).
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "claims.h"
#include "config.h"
#include "layers.h"
#include "lib/errorf.h"
#include "lib/mkdir.h"
#include "lib/util.h"
#include "lib/values.h"
#include "operations.h"

static void time_utc(int64_t t, char buf[static 32])
{
        time_t tt = (time_t)t;
        struct tm tm;

        gmtime_r(&tt, &tm);
        strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* A layers report's error: fs's message, or the errno's. */
static int fail(int r, char *err, char **ret_error)
{
        if (ret_error) {
                *ret_error = err ? err : strdup(strerror(-r));
                err = NULL;
        }
        free(err);
        return r;
}

static int checkpoint_name_check(const char *name, char **ret_error)
{
        if (!name || !value_name_is_valid(name, FS_CHECKPOINT_MAX, false))
                return errorf(ret_error, -EINVAL,
                              "'%.80s' is not a checkpoint name (1 to %d of A-Z a-z 0-9 . _ -, "
                              "not starting with . or -)",
                              name ? name : "", FS_CHECKPOINT_MAX);
        return 0;
}

int ops_checkpoint(const struct config *c, const char *name, json_t **ret, char **ret_error)
{
        struct fs_layers_report rep = {0};
        char *err = NULL;
        int r = checkpoint_name_check(name, ret_error);

        if (r < 0)
                return r;
        r = fs_checkpoint(c->workspace.state, name, &rep, &err);
        if (r < 0)
                return fail(r, err, ret_error);
        *ret = json_pack("{s:s, s:s, s:I, s:I, s:b, s:I, s:s*}", "workspace", c->workspace.name,
                         "name", name, "depth", (json_int_t)rep.depth, "max_depth",
                         (json_int_t)FS_STACK_MAX, "squash_due", rep.squash_due, "not_carried",
                         (json_int_t)rep.not_carried, "not_carried_first", rep.not_carried_first);
        fs_layers_report_clear(&rep);
        return *ret ? 0 : errorf(ret_error, -ENOMEM, "out of memory");
}

int ops_checkpoint_list(const struct config *c, json_t **ret, char **ret_error)
{
        _cleanup_layers_ struct fs_layers *l = NULL;
        char *err = NULL;
        json_t *o, *a;
        int r = fs_layers_load(c->workspace.state, &l, &err);

        if (r < 0)
                return fail(r, err, ret_error);
        o = json_pack("{s:s, s:I, s:I, s:b, s:n, s:[]}", "workspace", c->workspace.name, "depth",
                      (json_int_t)l->n_stack, "max_depth", (json_int_t)FS_STACK_MAX, "squash_due",
                      l->n_stack >= FS_STACK_SQUASH_DUE, "parent", "checkpoints");
        a = o ? json_object_get(o, "checkpoints") : NULL;
        if (o && l->parent_name)
                json_object_set_new(o, "parent",
                                    json_pack("{s:s, s:s, s:s}", "name", l->parent_name, "state",
                                              l->parent_state, "checkpoint", l->parent_checkpoint));
        for (size_t i = 0; a && i < l->n_cps; i++) {
                const struct fs_checkpoint *cp = &l->cps[i];
                char when[32];

                time_utc(cp->time, when);
                json_array_append_new(a,
                                      json_pack("{s:s, s:I, s:s, s:I, s:s?}", "name", cp->name,
                                                "depth", (json_int_t)cp->n_stack, "created", when,
                                                "created_unix", (json_int_t)cp->time, "layer",
                                                cp->n_stack ? cp->stack[cp->n_stack - 1] : NULL));
        }
        if (!o)
                return errorf(ret_error, -ENOMEM, "out of memory");
        *ret = o;
        return 0;
}

int ops_checkpoint_delete(const struct config *c, const char *name, json_t **ret, char **ret_error)
{
        struct fs_layers_report rep = {0};
        char *err = NULL;
        json_t *kept;
        int r = checkpoint_name_check(name, ret_error);

        if (r < 0)
                return r;
        r = fs_checkpoint_delete(c->workspace.state, name, &rep, &err);
        if (r < 0)
                return fail(r, err, ret_error);
        kept = json_array();
        for (char **k = rep.kept_by; kept && k && *k; k++)
                json_array_append_new(kept, json_string(*k));
        *ret = json_pack("{s:s, s:s, s:I, s:o*}", "workspace", c->workspace.name, "deleted", name,
                         "removed", (json_int_t)rep.removed, "kept_by", kept);
        fs_layers_report_clear(&rep);
        return *ret ? 0 : errorf(ret_error, -ENOMEM, "out of memory");
}

int ops_restore(const struct config *c, const char *name, json_t **ret, char **ret_error)
{
        struct fs_layers_report rep = {0};
        char *err = NULL;
        int r = checkpoint_name_check(name, ret_error);

        if (r < 0)
                return r;
        r = fs_restore(c->workspace.state, name, &rep, &err);
        if (r < 0)
                return fail(r, err, ret_error);
        *ret = json_pack("{s:s, s:s, s:I, s:I}", "workspace", c->workspace.name, "checkpoint", name,
                         "depth", (json_int_t)rep.depth, "removed", (json_int_t)rep.removed);
        fs_layers_report_clear(&rep);
        return *ret ? 0 : errorf(ret_error, -ENOMEM, "out of memory");
}

/* A checkpoint name for the fork's own: fork-NAME, or fork-NAME.2, ... if taken. */
static int auto_checkpoint(const struct config *c, const char *name, char **ret, char **ret_error)
{
        _cleanup_layers_ struct fs_layers *l = NULL;
        char *err = NULL;
        int r = fs_layers_load(c->workspace.state, &l, &err);

        if (r < 0)
                return fail(r, err, ret_error);
        for (unsigned i = 1; i < 1000; i++) {
                char *cand = NULL;
                if ((i == 1 ? asprintf(&cand, "fork-%.55s", name)
                            : asprintf(&cand, "fork-%.55s.%u", name, i)) < 0)
                        return errorf(ret_error, -ENOMEM, "out of memory");
                if (!fs_layers_checkpoint(l, cand)) {
                        *ret = cand;
                        return 0;
                }
                free(cand);
        }
        return errorf(ret_error, -EEXIST, "no free checkpoint name for the fork '%s'", name);
}

int ops_path_absolute(const char *p, char **ret)
{
        _cleanup_free_ char *cwd = NULL;
        char *out;

        if (p[0] == '/')
                out = strdup(p);
        else if (!(cwd = getcwd(NULL, 0)))
                return negative_errno();
        else if (asprintf(&out, "%s/%s", cwd, p) < 0)
                out = NULL;
        if (!out)
                return -ENOMEM;
        *ret = out;
        return 0;
}

int ops_fork(const struct config *c, const struct ops_fork_options *o, json_t **ret,
             char **ret_error)
{
        _cleanup_free_ char *state = NULL, *cp = NULL, *comment = NULL;
        const char *name = o->name, *from = o->from;
        struct fs_layers_report rep = {0}, crep = {0};
        char *err = NULL;
        struct stat st;
        size_t n;
        int r;

        if (!o->new_config || o->new_config[0] != '/')
                return errorf(ret_error, -EINVAL,
                              "the fork's config '%.200s' is not an "
                              "absolute path",
                              o->new_config ? o->new_config : "");
        if (!value_name_is_valid(name, 64, false))
                return errorf(ret_error, -EINVAL,
                              "'%.80s' is not a workspace name (1 to 64 of A-Z a-z 0-9 . _ -, "
                              "not starting with . or -)",
                              name ? name : "");
        if (streq(name, c->workspace.name))
                return errorf(ret_error, -EINVAL, "the fork needs a name of its own, not '%s'",
                              name);
        if (from && (r = checkpoint_name_check(from, ret_error)) < 0)
                return r;
        /* -EINVAL, as every refusal of what the caller named (the CLI's usage status);
         * -EEXIST stays fs_fork_state()'s, for a state directory that exists. */
        if (lstat(o->new_config, &st) == 0)
                return errorf(ret_error, -EINVAL, "'%s' exists already", o->new_config);
        if (o->state) {
                state = strdup(o->state);
        } else {
                _cleanup_free_ char *copy = strdup(c->workspace.state);
                if (!copy || asprintf(&state, "%s/%s", dirname(copy), name) < 0)
                        state = NULL;
        }
        if (!state)
                return errorf(ret_error, -ENOMEM, "out of memory");
        if (!value_path_is_clean_absolute(state))
                return errorf(ret_error, -EINVAL, "state '%.200s': not a clean absolute path",
                              state);
        n = strlen(c->workspace.state);
        if (strncmp(state, c->workspace.state, n) == 0 && (state[n] == '/' || !state[n]))
                return errorf(ret_error, -EINVAL, "state '%s' is inside the parent's state", state);
        /* Before anything is written: the parent's checkpoint, the state, the config. */
        r = claims_check_fork(c, o->new_config, state, &err);
        if (r < 0) {
                r = errorf(ret_error, r == -ENOMEM ? r : -EINVAL, "the fork's %s", err);
                free(err);
                return r;
        }
        if (from) {
                /* The checkpoint must be there before the state is made. */
                _cleanup_layers_ struct fs_layers *l = NULL;
                r = fs_layers_load(c->workspace.state, &l, &err);
                if (r < 0)
                        return fail(r, err, ret_error);
                if (!fs_layers_checkpoint(l, from))
                        return errorf(ret_error, -ENOENT,
                                      "no checkpoint '%s' in '%s' (checkpoint --list)", from,
                                      c->workspace.state);
        }
        if (!from) {
                r = auto_checkpoint(c, name, &cp, ret_error);
                if (r < 0)
                        return r;
                r = fs_checkpoint(c->workspace.state, cp, &crep, &err);
                fs_layers_report_clear(&crep);
                if (r < 0) {
                        r = errorf(ret_error, r, "checkpoint of %s: %s", c->workspace.name,
                                   err ? err : strerror(-r));
                        free(err);
                        return r;
                }
                from = cp;
        }
        r = fs_fork_state(c->workspace.state, c->workspace.name, from, state, &rep, &err);
        if (r < 0)
                return fail(r, err, ret_error);
        r = mkdir_parents(o->new_config, 0755);
        if (r < 0) {
                fs_layers_report_clear(&rep);
                return errorf(ret_error, r, "cannot make the directory of '%s': %s", o->new_config,
                              strerror(-r));
        }
        if (asprintf(&comment, "A fork of %s at checkpoint %s, made by cloister fork.",
                     c->workspace.name, from) < 0)
                comment = NULL;
        /* Written last: until the config exists there is no fork, and the same
         * command, run again, makes it again (fs_fork_state). */
        r = config_fork_write(
                c,
                &(struct config_fork_edits){
                        .name = name, .state = state, .rev = rep.base, .comment = comment},
                o->new_config, &err);
        if (r < 0) {
                fs_layers_report_clear(&rep);
                return fail(r, err, ret_error);
        }
        *ret = json_pack("{s:s, s:s, s:s, s:s, s:s, s:I, s:s?}", "name", name, "config",
                         o->new_config, "state", state, "parent", c->workspace.name, "checkpoint",
                         from, "depth", (json_int_t)rep.depth, "base", rep.base);
        fs_layers_report_clear(&rep);
        return *ret ? 0 : errorf(ret_error, -ENOMEM, "out of memory");
}
