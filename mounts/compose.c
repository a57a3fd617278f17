/* SPDX-License-Identifier: MIT */
/*
 * compose.c: fill in the options of fs/ and broker/ from a workspace config.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compose.h"

int compose_fs_options(const struct config *c, struct compose_fs *ret)
{
        struct compose_fs f = {0};

        f.seeds = calloc(c->home.n_seeds + 1, sizeof(*f.seeds));
        f.mirrors = calloc(c->n_mirrors + 1, sizeof(*f.mirrors));
        if (!f.seeds || !f.mirrors) {
                compose_fs_options_free(&f);
                return -ENOMEM;
        }
        for (size_t i = 0; i < c->home.n_seeds; i++)
                f.seeds[i] = (struct fs_seed){
                        .source = c->home.seeds[i].source,
                        .dest = c->home.seeds[i].dest,
                        .line = c->home.seeds[i].line,
                };
        for (size_t i = 0; i < c->n_mirrors; i++)
                f.mirrors[i] = (struct fs_mirror_options){
                        .name = c->mirrors[i].name,
                        .source = c->mirrors[i].source,
                        .path = c->mirrors[i].path,
                        .exclude = c->mirrors[i].exclude,
                        .line = c->mirrors[i].line,
                };
        f.options = (struct fs_options){
                .origin = c->file,
                .name = c->workspace.name,
                .state = c->workspace.state,
                .mountpoint = c->workspace.mountpoint,
                .repo = {.source = c->repo.source, .rev = c->repo.rev, .path = c->repo.path},
                .home = {.path = c->home.path,
                         .seeds = f.seeds,
                         .n_seeds = c->home.n_seeds,
                         .persist = c->home.persist},
                .mirrors = f.mirrors,
                .n_mirrors = c->n_mirrors,
                .max_bytes = c->limits.bytes,
                .max_files = c->limits.files,
                .max_journal = c->limits.journal,
        };
        *ret = f;
        return 0;
}

void compose_fs_options_free(struct compose_fs *f)
{
        free(f->seeds);
        free(f->mirrors);
        *f = (struct compose_fs){0};
}

void compose_broker_options(const struct config *c, struct broker_workspace_options *ret)
{
        *ret = (struct broker_workspace_options){
                .origin = c->file,
                .name = c->workspace.name,
                .policy = c->broker.policy,
                .dir = c->broker.dir,
                .socket = c->broker.socket,
                .audit_max = c->limits.audit,
        };
        /* As root, the agent is a sandbox identity from [run] host_uids (hostid.h). */
        if (geteuid() == 0) {
                ret->agent_uids.first = c->run.host_uids.first;
                ret->agent_uids.last = c->run.host_uids.last;
        }
}
