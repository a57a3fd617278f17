/* SPDX-License-Identifier: MIT */
/*
 * policy.h: the broker's policy, an INI file (docs/broker-policy.md).
 *
 * A scope is what an agent may ask for. It names the audience its tokens
 * are for, their default and maximum lifetime, how often one token may be
 * used, which workspaces may have it, and optionally the stored secret a
 * redeemer gets for one of its tokens. Anything not granted is refused.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define BROKER_POLICY_MAX_SCOPES 256
#define BROKER_TTL_CEILING       86400 /* no token lives longer than a day, whatever the policy */
#define BROKER_NAME_MAX          64

struct broker_scope {
        char *name;
        char *audience;
        int64_t ttl;       /* default lifetime, seconds */
        int64_t max_ttl;   /* hard cap; longer requests are clamped */
        uint64_t max_uses; /* online uses (introspect on the admin socket, redeem); 0: no limit */
        char **workspaces; /* NULL-terminated; "*" allows any */
        char **hosts;      /* NULL-terminated; git hosts this scope answers for */
        char *username;    /* username git gets with the token; default "cloister" */
        char *secret;      /* stored secret a redeemer gets; NULL: none */
        unsigned line;     /* of the [scope "NAME"] header */
        /* Lines of the keys that `cloister check` cross-checks; 0: not set. */
        unsigned line_max_ttl, line_workspaces, line_hosts, line_secret;
};

/* [limits] idle_timeout and request_timeout, in seconds (docs/broker-policy.md). */
#define BROKER_IDLE_TIMEOUT_DEFAULT    30
#define BROKER_REQUEST_TIMEOUT_DEFAULT 10

struct broker_policy {
        char *file;
        char *issuer;     /* iss claim; default "cloister" */
        uid_t *redeemers; /* uids allowed to redeem on the admin socket */
        size_t n_redeemers;
        uint64_t connections; /* concurrent connections per agent socket */
        uint64_t rate;        /* requests per second per workspace (burst: 2x) */
        uint64_t issue_rate;  /* tokens per minute per workspace */
        uint64_t issue_total; /* tokens per workspace over the audit log's life */
        /* Seconds an agent connection may sit idle between requests, and
         * one request (or its response) may take to cross the socket. */
        uint64_t idle_timeout;
        uint64_t request_timeout;
        struct broker_scope *scopes;
        size_t n_scopes;
};

/*
 * Load a policy. On failure returns a negative errno and a malloc'd one-line
 * message "FILE:LINE: key 'x' in [section]: reason".
 */
int broker_policy_load(const char *path, struct broker_policy **ret, char **ret_error);
void broker_policy_free(struct broker_policy *p);

const struct broker_scope *broker_policy_scope(const struct broker_policy *p, const char *name);
/* The first scope that lists host and allows workspace. */
const struct broker_scope *broker_policy_scope_for_host(const struct broker_policy *p,
                                                        const char *host, const char *workspace);
bool broker_scope_allows(const struct broker_scope *s, const char *workspace);
bool broker_policy_is_redeemer(const struct broker_policy *p, uid_t uid);
/* The longest max_ttl of any scope: how long a retired key must keep verifying. */
int64_t broker_policy_max_ttl(const struct broker_policy *p);
/* [A-Za-z0-9._-]{1,64}, not starting with '.': scope, secret and workspace names. */
bool broker_name_is_valid(const char *s);
