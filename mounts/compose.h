/* SPDX-License-Identifier: MIT */
/*
 * compose.h: the workspace config, handed down to the layers below.
 *
 * fs/ and broker/ know nothing of the workspace config: each takes its own
 * options struct. This is the one place that fills them in, so the arrows
 * run one way (lib <- fs, broker <- mounts).
 */
#pragma once

#include "broker.h"
#include "config.h"
#include "fs.h"
#include "proxy/proxy.h"

/* Options that borrow c's strings; arrays are owned (compose_fs_options_free). */
struct compose_fs {
        struct fs_options options;
        struct fs_seed *seeds;
        struct fs_mirror_options *mirrors;
        char *git_config_extra;
};

int compose_fs_options(const struct config *c, struct compose_fs *ret);
void compose_fs_options_free(struct compose_fs *f);

/*
 * git config text for a [network] mode = proxy workspace with [inject]
 * rules: url.<http://HOST/>.insteadOf = https://HOST/ for every injected
 * host, and git-credential-cloister as the credential helper. It goes into
 * the workspace's .git/config and the sandbox's /etc/gitconfig. *ret is
 * NULL when there is nothing to say. malloc'd.
 */
int compose_git_proxy_config(const struct config *c, char **ret);

/* Options that borrow c's strings; nothing to free. */
void compose_broker_options(const struct config *c, struct broker_workspace_options *ret);

/*
 * The proxy's options: borrows c's strings and arrays; nothing to free.
 * The control socket is <state>/proxy.sock.
 */
int compose_proxy_options(const struct config *c, struct proxy_options *ret, char **ret_control);
