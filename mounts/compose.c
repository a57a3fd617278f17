/* SPDX-License-Identifier: MIT */
/*
 * compose.c: fill in the options of fs/ and broker/ from a workspace config.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compose.h"
#include "lib/util.h"
#include "sandbox/sandbox.h"

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
                .tree_cache = c->limits.tree_cache,
                .io_uring_off = c->fs.io_uring_off,
                .zero_open_off = c->fs.zero_open_off,
                .index_uid = SANDBOX_AGENT_UID,
                .index_gid = SANDBOX_AGENT_GID,
        };
        if (compose_git_proxy_config(c, &f.git_config_extra) < 0) {
                compose_fs_options_free(&f);
                return -ENOMEM;
        }
        f.options.git_config_extra = f.git_config_extra;
        *ret = f;
        return 0;
}

void compose_fs_options_free(struct compose_fs *f)
{
        free(f->seeds);
        free(f->mirrors);
        free(f->git_config_extra);
        *f = (struct compose_fs){0};
}

int compose_git_proxy_config(const struct config *c, char **ret)
{
        char *text = NULL;
        size_t len = 0;
        FILE *f;

        *ret = NULL;
        if (c->network.mode != CONFIG_NETWORK_PROXY || c->n_injects == 0)
                return 0;
        f = open_memstream(&text, &len);
        if (!f)
                return -ENOMEM;
        fputs("# [network] mode = proxy: git reaches these hosts over plain HTTP through\n"
              "# the egress proxy, which swaps the token that git-credential-cloister\n"
              "# hands git for the real credential and talks TLS upstream (docs/network.md).\n",
              f);
        for (size_t i = 0; i < c->n_injects; i++) {
                bool seen = false;
                for (size_t j = 0; j < i && !seen; j++)
                        seen = streq(c->injects[j].host, c->injects[i].host);
                if (!seen)
                        fprintf(f, "[url \"http://%s/\"]\n\tinsteadOf = https://%s/\n",
                                c->injects[i].host, c->injects[i].host);
        }
        fputs("[credential]\n\thelper = " SANDBOX_CLIENT_DIR "/git-credential-cloister\n", f);
        if (fclose(f) != 0) {
                free(text);
                return -ENOMEM;
        }
        *ret = text;
        return 0;
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

int compose_proxy_options(const struct config *c, struct proxy_options *ret, char **ret_control)
{
        char *control = NULL;

        if (asprintf(&control, "%s/%s", c->workspace.state, PROXY_CONTROL_FILE) < 0)
                return -ENOMEM;
        *ret = (struct proxy_options){
                .origin = c->file,
                .workspace = c->workspace.name,
                .broker_dir = c->broker.dir,
                .control_socket = control,
                .allow = c->network.allow,
                .n_allow = c->network.n_allow,
                .deny = c->network.deny,
                .n_deny = c->network.n_deny,
                .resolve = c->network.resolve,
                .n_resolve = c->network.n_resolve,
                .rules = c->injects,
                .n_rules = c->n_injects,
                .test_ca = c->network.test_ca,
                .connections = c->network.connections,
                .rate = c->network.rate,
                .bytes_out = c->network.bytes_out,
                .log_max = c->limits.netlog,
        };
        *ret_control = control;
        return 0;
}
