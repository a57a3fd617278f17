/* SPDX-License-Identifier: MIT */
/*
 * review-since.c: the tree of a checkpoint, for `cloister diff --since`
 * (docs/cloister-diff.md). The checkpoint is mounted apart (cmd-diff.c);
 * its tree is built exactly as the workspace's is (review-tree.c), from
 * its own view and changes list, into the same in-memory objects, and
 * then stands where the base tree stood for the diff. Only the view
 * changes between the two builds: the source, the base and its rules of
 * how to show a change stay. The agent's rule files (.gitignore) are the
 * view's, so they are read again for each.
 */
#include <fcntl.h>

#include "review-private.h"

int review_since(review *r, const struct review_options *old)
{
        struct review_options keep = r->o;
        int vfd = r->viewfd, hfd = r->homefd, ufd = r->upperfd, k;

        if (r->built)
                return review_fail(r, -EINVAL, "the workspace's tree is built already");
        r->o.view = old->view;
        r->o.changes = old->changes;
        r->o.upper = old->upper;
        r->o.home_view = NULL;
        r->o.state = NULL;
        r->o.progress = NULL;
        r->viewfd = open(old->view, O_PATH | O_DIRECTORY | O_CLOEXEC);
        r->homefd = -1;
        r->upperfd =
                old->upper ? open(old->upper, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
        if (r->viewfd < 0)
                k = review_fail(r, negative_errno(), "checkpoint view '%s': %m", old->view);
        else
                k = review_build(r);
        if (k == 0) {
                r->since = r->tree;
                r->has_since = true;
        }
        safe_close(r->viewfd);
        safe_close(r->upperfd);
        r->viewfd = vfd;
        r->homefd = hfd;
        r->upperfd = ufd;
        r->o = keep;
        /* What the first build learnt of its view: none of it is the workspace's. */
        review_rules_free(r->rules);
        r->rules = NULL;
        for (size_t i = 0; i < r->n_home_paths; i++)
                free(r->home_paths[i]);
        free(r->home_paths);
        r->home_paths = NULL;
        r->n_home_paths = r->cap_home_paths = 0;
        r->changes_read = false;
        r->built = false;
        r->files_read = 0;
        r->bytes_read = 0;
        r->ignored = 0;
        return k;
}
