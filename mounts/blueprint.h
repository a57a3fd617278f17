/* SPDX-License-Identifier: MIT */
/*
 * blueprint.h: the checks of a workspace's files against each other and
 * against the host, for `cloister check`: the broker policy against the
 * config that names it, against the broker's sealed-secret store, and
 * against the git remotes of the source repository; and the egress proxy's
 * [inject] rules against the allow and deny lists, the policy and the store.
 *
 * Each file has already been parsed by its own parser (config_load,
 * broker_policy_load); these checks only read the results. A check is one
 * function in the table in blueprint.c; one that needs another file of the
 * blueprint (the egress proxy's rules) gets a field here.
 */
#pragma once

#include <git2.h>
#include <stdbool.h>

#include "config.h"
#include "lint.h"
#include "policy.h"

/*
 * A scope whose max_ttl is longer than this hands out tokens that outlive
 * the task they were asked for: the lint warns (the parser's own ceiling is
 * BROKER_TTL_CEILING, one day).
 */
#define BLUEPRINT_LINT_MAX_TTL 3600

struct blueprint {
        const struct config *config;
        const struct broker_policy *policy; /* NULL: no [broker] policy, or it did not parse */
        git_repository *repo;               /* [repo] source; NULL: not a git repository */
        bool repo_broken;                   /* it is one, but it did not open: no remote checks */
        int broker_dirfd;                   /* [broker] dir; -1: see broker_dir_error */
        int broker_dir_error;               /* negative errno: why it is not open */
};

/* Run every cross-check; findings go to out. Returns 0, or -ENOMEM. */
int blueprint_check(const struct blueprint *bp, struct lint *out);

/*
 * The [inject] rules against [network] allow and deny, the policy (when
 * bp->policy is set) and the secret store (blueprint-network.c). 0 or
 * -ENOMEM.
 */
int blueprint_network_check(const struct blueprint *bp, struct lint *out);

/*
 * For checks that name a stored secret: add a warning at file:line, key in
 * [section], unless the secret is stored in [broker] dir. 0 or -ENOMEM.
 */
int blueprint_secret_check(const struct blueprint *bp, const char *secret, const char *file,
                           unsigned line, const char *section, const char *key, struct lint *out);

/*
 * The host that git names to a credential helper when it talks to url: the
 * part between "scheme://[userinfo@]" and the first '/', '?' or '#',
 * percent-decoded, port included, as git's credential_from_url() takes it.
 * Only git's curl transports (http, https, ftp, ftps) ask credential
 * helpers; for any other URL *ret is NULL. 0, or -ENOMEM.
 */
int blueprint_url_credential_host(const char *url, char **ret);
