/* SPDX-License-Identifier: MIT */
/*
 * fuzz-policy.c: the broker policy parser (broker_policy_load) and the
 * cross-checks `cloister check` runs on what it accepts.
 *
 * Any input: no crash, no leak, and either a policy the broker can serve
 * (at least one scope, each with an audience and workspaces, 1 <= ttl <=
 * max_ttl <= the ceiling, limits in range) or one error line that names
 * the file and a line in it.
 */
#include <errno.h>
#include <string.h>

#include "blueprint.h"
#include "config.h"
#include "fuzz.h"
#include "lint.h"
#include "policy.h"

static void policy_invariants(const struct broker_policy *p)
{
        if (p->n_scopes == 0 || p->n_scopes > BROKER_POLICY_MAX_SCOPES)
                fuzz_fail("accepted policy has %zu scopes", p->n_scopes);
        if (!p->issuer || p->n_redeemers == 0 || !p->redeemers)
                fuzz_fail("accepted policy lacks an issuer or a redeemer");
        if (p->connections < 1 || p->connections > 1000 || p->rate < 1 || p->issue_rate < 1 ||
            p->issue_total < 1)
                fuzz_fail("accepted policy has a limit out of range");
        for (size_t i = 0; i < p->n_scopes; i++) {
                const struct broker_scope *s = &p->scopes[i];

                if (!broker_name_is_valid(s->name) || !s->audience || !s->workspaces ||
                    !s->username)
                        fuzz_fail("accepted scope '%s' lacks a required key", s->name);
                if (s->ttl < 1 || s->ttl > s->max_ttl || s->max_ttl > BROKER_TTL_CEILING)
                        fuzz_fail("accepted scope '%s' has ttl %lld, max_ttl %lld", s->name,
                                  (long long)s->ttl, (long long)s->max_ttl);
                if (s->secret && !broker_name_is_valid(s->secret))
                        fuzz_fail("accepted scope '%s' has secret '%s'", s->name, s->secret);
                if (broker_policy_scope(p, s->name) != s)
                        fuzz_fail("scope '%s' is not found by name", s->name);
                for (char **h = s->hosts; h && *h; h++)
                        if (!broker_policy_scope_for_host(p, *h, "*") &&
                            broker_scope_allows(s, "*"))
                                fuzz_fail("host '%s' of scope '%s' is not found", *h, s->name);
        }
}

/* The cross-checks, against a fixed workspace that has no repo and no broker dir. */
static void blueprint_run(const struct broker_policy *p)
{
        struct config c = {
                .file = (char *)"ws.ini",
                .workspace = {.name = (char *)"ws"},
                .repo = {.source = (char *)"/nonexistent"},
                .broker = {.dir = (char *)"/nonexistent/broker"},
        };
        struct blueprint bp = {
                .config = &c, .policy = p, .broker_dirfd = -1, .broker_dir_error = -ENOENT};
        struct lint l = {0};

        if (blueprint_check(&bp, &l) < 0)
                fuzz_fail("blueprint_check failed");
        fuzz_lint_check(&l, "cross-check");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *path = fuzz_file(data, size);
        struct broker_policy *p = NULL;
        char *err = NULL;

        if (broker_policy_load(path, &p, &err) < 0) {
                if (p)
                        fuzz_fail("broker_policy_load failed but returned a policy");
                fuzz_error_check(path, data, size, err);
        } else {
                if (err)
                        fuzz_fail("broker_policy_load succeeded with an error: %s", err);
                policy_invariants(p);
                blueprint_run(p);
        }
        free(err);
        broker_policy_free(p);
        return 0;
}
