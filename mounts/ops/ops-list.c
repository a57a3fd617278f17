/* SPDX-License-Identifier: MIT */
/*
 * ops-list.c: the workspaces this user's configs know (operations.h:
 * ops_list), as summaries. Which configs those are, and where a user's
 * cloister files go (XDG), is known.c's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "known.h"
#include "operations.h"
#include "lib/util.h"

int ops_xdg_dir(const char *kind, char **ret)
{
        return known_xdg_dir(kind, ret);
}

int ops_config_remember(const char *config_path)
{
        return known_config_remember(config_path);
}

int ops_list(json_t **ret, char **ret_error)
{
        json_t *list = json_array();
        char **paths = NULL;
        size_t n = 0;
        int r;

        (void)ret_error;
        if (!list)
                return -ENOMEM;
        r = known_configs(NULL, &paths, &n);
        if (r < 0) {
                json_decref(list);
                return r;
        }
        for (size_t i = 0; i < n; i++) {
                json_t *o = NULL;
                struct config *c = NULL;
                char *err = NULL;

                if (config_load(paths[i], &c, &err) < 0) {
                        json_array_append_new(list,
                                              json_pack("{s:s, s:s}", "config", paths[i], "error",
                                                        err ? err : "cannot load it"));
                } else if (ops_workspace_summary(c, &o, NULL) == 0) {
                        json_array_append_new(list, o);
                }
                free(err);
                config_free(c);
        }
        strv_free(paths);
        *ret = json_pack("{s:o}", "workspaces", list);
        return *ret ? 0 : -ENOMEM;
}
