/* SPDX-License-Identifier: MIT */
/*
 * ops-since.c: the changes since a checkpoint (operations.h): the
 * checkpoint's tree, mounted apart from a temporary state and config in
 * TMPDIR, is where the diff starts instead of the base. `cloister diff
 * --since` and `cloister report --since` both take it from here.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "layers.h"
#include "operations.h"
#include "review-workspace.h"
#include "review.h"
#include "state.h"
#include "lib/util.h"

int ops_since_close(struct ops_since *sv)
{
        int k = ops_review_close(&sv->x);

        config_free(sv->c);
        if (sv->dir) {
                _cleanup_free_ char *parent = strdup(sv->dir);
                char *slash = parent ? strrchr(parent, '/') : NULL;
                _cleanup_close_ int pfd = -1;
                if (slash) {
                        *slash = 0;
                        pfd = open(*parent ? parent : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                        if (pfd >= 0)
                                (void)state_rm_rf_at(pfd, slash + 1, 0);
                }
        }
        free(sv->dir);
        free(sv->config);
        *sv = (struct ops_since){0};
        return k;
}

int ops_since_open(const struct config *c, const char *cp, struct ops_since *sv, char **ret_error)
{
        const char *tmp = secure_getenv("TMPDIR");
        _cleanup_free_ char *state = NULL, *base = NULL, *name = NULL, *comment = NULL;
        int k;

        if (asprintf(&sv->dir, "%s/cloister-since.XXXXXX", tmp && *tmp ? tmp : "/var/tmp") < 0)
                return -ENOMEM;
        if (!mkdtemp(sv->dir)) {
                k = -errno;
                free(sv->dir);
                sv->dir = NULL;
                return k;
        }
        if (asprintf(&state, "%s/state", sv->dir) < 0 ||
            asprintf(&sv->config, "%s/since.ini", sv->dir) < 0 ||
            asprintf(&name, "%.58s.since", c->workspace.name) < 0 ||
            asprintf(&comment, "checkpoint %s of %s, for cloister diff --since", cp,
                     c->workspace.name) < 0)
                return -ENOMEM;
        k = fs_checkpoint_view_state(c->workspace.state, cp, state, &base, ret_error);
        if (k < 0)
                return k;
        k = config_fork_write(
                c,
                &(struct config_fork_edits){
                        .name = name, .state = state, .rev = base, .comment = comment},
                sv->config, ret_error);
        if (k == 0)
                k = config_load(sv->config, &sv->c, ret_error);
        if (k == 0)
                k = ops_review_open(sv->c, sv->config,
                                    &(struct ops_review_options){.in_memory = true}, &sv->x,
                                    ret_error);
        return k;
}

int ops_diff_since(const struct config *c, const char *config_path, const char *checkpoint,
                   bool hunks, json_t **ret_stat, json_t **ret_patch, char **ret_error)
{
        _cleanup_(json_decrefp) json_t *stat = NULL, *patch = NULL;
        struct ops_review x = {0};
        struct ops_since since = {0};
        struct review_options so;
        int k, u;

        k = ops_review_open(c, config_path, &(struct ops_review_options){.in_memory = true}, &x,
                            ret_error);
        if (k == 0 && checkpoint)
                k = ops_since_open(c, checkpoint, &since, ret_error);
        if (k == 0 && checkpoint) {
                review_workspace_options(since.x.w, &so);
                k = review_since(x.r, &so);
        }
        if (k == 0)
                k = review_build(x.r);
        if (k == 0)
                k = ops_review_json_full(x.r, true, hunks, &stat);
        if (k == 0)
                k = ops_review_json(x.r, false, &patch);
        if (k < 0 && x.r && ret_error && !*ret_error)
                *ret_error = strdup(review_error(x.r));
        if (k < 0 && checkpoint && ret_error && *ret_error) {
                char *e = NULL;
                if (asprintf(&e, "checkpoint %s: %s", checkpoint, *ret_error) >= 0) {
                        free(*ret_error);
                        *ret_error = e;
                }
        }
        u = ops_since_close(&since);
        if (ops_review_close(&x) < 0 || u < 0) {
                if (k == 0 && ret_error && asprintf(ret_error, "unmounting a view failed") < 0)
                        *ret_error = NULL;
                if (k == 0)
                        k = -EIO;
        }
        if (k < 0)
                return k;
        *ret_stat = TAKE_PTR(stat);
        *ret_patch = TAKE_PTR(patch);
        return 0;
}
