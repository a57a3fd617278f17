/* SPDX-License-Identifier: MIT */
/*
 * blueprint-network.c: the cross-checks of `cloister check` for the egress
 * proxy's rules (blueprint.h): each [inject "NAME"] rule against the
 * [network] allow and deny lists, the broker policy and the sealed-secret
 * store.
 *
 * What the proxy does decides what is checked (proxy/conn.c): a plain HTTP
 * request to a host with [inject] rules is judged by those rules alone,
 * after the deny list and before the allow list, so an injected host needs
 * no allow entry, a deny entry silences its rules, and an allow entry for
 * it only adds CONNECT tunnels, which carry no secret and are held to none
 * of the rule's methods, paths and push_refs.
 *
 * Like the rest of blueprint.c these are warnings, errors under --strict:
 * the config parses and runs, but a rule does nothing or does more than
 * it says.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "blueprint.h"
#include "lib/util.h"

static void inject_section(const struct proxy_inject_rule *r, char *buf, size_t size)
{
        snprintf(buf, size, "inject \"%s\"", r->name);
}

/* An allow or deny entry as it was written (lower case): "*.example.com:8443". */
static void pattern_format(const struct proxy_host_pattern *p, char *buf, size_t size)
{
        bool v6 = p->literal && strchr(p->host, ':');
        char port[8] = "";

        if (p->port)
                snprintf(port, sizeof(port), ":%u", (unsigned)p->port);
        snprintf(buf, size, "%s%s%s%s%s", p->wildcard ? "*." : "", v6 ? "[" : "", p->host,
                 v6 ? "]" : "", port);
}

/* Is r the first rule of its host? Findings about the host are made once. */
static bool first_of_host(const struct config *c, size_t i)
{
        for (size_t j = 0; j < i; j++)
                if (streq(c->injects[j].host, c->injects[i].host))
                        return false;
        return true;
}

/*
 * The proxy checks deny entries before it looks for [inject] rules, on the
 * port the client named: 80, the only port an injected host is reached on.
 */
static int check_inject_denied(const struct blueprint *bp, struct lint *out)
{
        const struct config *c = bp->config;
        int r = 0;

        for (size_t i = 0; r >= 0 && i < c->n_injects; i++) {
                const struct proxy_inject_rule *rule = &c->injects[i];
                char sec[96], pat[PROXY_HOST_MAX + 16];

                for (size_t d = 0; r >= 0 && d < c->network.n_deny; d++) {
                        const struct proxy_host_pattern *p = &c->network.deny[d];

                        if (!proxy_host_pattern_denies(p, rule->host, false, 80))
                                continue;
                        inject_section(rule, sec, sizeof(sec));
                        pattern_format(p, pat, sizeof(pat));
                        r = lint_add(out, LINT_WARNING, c->file, rule->line_host ?: rule->line, sec,
                                     "host",
                                     "'%s' is denied by [network] deny entry '%s' (line %u): the "
                                     "proxy refuses every request to it, so the rule never "
                                     "applies",
                                     rule->host, pat, p->line);
                        break;
                }
        }
        return r;
}

/*
 * An allow entry that also covers an injected host does nothing for its
 * plain HTTP (the rules take every such request) and opens CONNECT tunnels
 * to it, which no rule sees.
 */
static int check_inject_allowed(const struct blueprint *bp, struct lint *out)
{
        const struct config *c = bp->config;
        int r = 0;

        for (size_t a = 0; r >= 0 && a < c->network.n_allow; a++) {
                const struct proxy_host_pattern *p = &c->network.allow[a];
                char pat[PROXY_HOST_MAX + 16];

                for (size_t i = 0; r >= 0 && i < c->n_injects; i++) {
                        const struct proxy_inject_rule *rule = &c->injects[i];

                        if (!first_of_host(c, i) ||
                            !proxy_host_pattern_match(p, rule->host, false, p->port ?: 443, true))
                                continue;
                        pattern_format(p, pat, sizeof(pat));
                        if (p->port == 80)
                                r = lint_add(out, LINT_WARNING, c->file, p->line, "network",
                                             "allow",
                                             "'%s' does nothing for '%s': plain HTTP to a host "
                                             "with [inject] rules (here [inject \"%s\"]) goes "
                                             "only through its rules",
                                             pat, rule->host, rule->name);
                        else
                                r = lint_add(
                                        out, LINT_WARNING, c->file, p->line, "network", "allow",
                                        "'%s' also covers '%s', the host of [inject \"%s\"]: "
                                        "it opens CONNECT tunnels to it (port %u) that "
                                        "bypass the rule's methods, paths and push_refs; an "
                                        "[inject] host needs no allow entry",
                                        pat, rule->host, rule->name, (unsigned)(p->port ?: 443));
                }
        }
        return r;
}

/* The proxy unseals the rule's secret from [broker] dir for each request it injects. */
static int check_inject_secrets(const struct blueprint *bp, struct lint *out)
{
        const struct config *c = bp->config;
        int r = 0;

        for (size_t i = 0; r >= 0 && i < c->n_injects; i++) {
                const struct proxy_inject_rule *rule = &c->injects[i];
                char sec[96];

                inject_section(rule, sec, sizeof(sec));
                r = blueprint_secret_check(bp, rule->secret, c->file,
                                           rule->line_secret ?: rule->line, sec, "secret", out);
        }
        return r;
}

/*
 * A request is injected only with a live token of the rule's scope, for
 * this workspace: a scope the policy lacks, or one this workspace may not
 * ask for, makes the rule refuse everything. git gets its token from
 * git-credential-cloister, which asks by host: the broker answers with the
 * first scope listing the host, and if that is another scope, git's
 * requests carry a token the rule refuses.
 */
static int check_inject_scopes(const struct blueprint *bp, struct lint *out)
{
        const struct config *c = bp->config;
        const struct broker_policy *p = bp->policy;
        const char *ws = c->workspace.name;
        int r = 0;

        for (size_t i = 0; r >= 0 && i < c->n_injects; i++) {
                const struct proxy_inject_rule *rule = &c->injects[i];
                const struct broker_scope *s = broker_policy_scope(p, rule->scope), *g;
                unsigned line = rule->line_scope ?: rule->line;
                char sec[96];

                inject_section(rule, sec, sizeof(sec));
                if (!s) {
                        r = lint_add(out, LINT_WARNING, c->file, line, sec, "scope",
                                     "scope '%s' is not in the broker policy '%s': no token "
                                     "carries it, so the proxy refuses every request the rule "
                                     "covers",
                                     rule->scope, p->file);
                        continue;
                }
                if (!broker_scope_allows(s, ws)) {
                        r = lint_add(out, LINT_WARNING, c->file, line, sec, "scope",
                                     "scope '%s' (%s:%u) does not name workspace '%s': its agent "
                                     "gets no token the rule accepts",
                                     rule->scope, p->file, s->line_workspaces ?: s->line, ws);
                        continue;
                }
                g = broker_policy_scope_for_host(p, rule->host, ws);
                if (g && g != s)
                        r = lint_add(out, LINT_WARNING, c->file, line, sec, "scope",
                                     "git-credential-cloister asks for host '%s' and gets a "
                                     "token of scope '%s' (%s:%u, the first scope whose hosts "
                                     "list it), which this rule refuses",
                                     rule->host, g->name, p->file, g->line_hosts ?: g->line);
        }
        return r;
}

int blueprint_network_check(const struct blueprint *bp, struct lint *out)
{
        int r;

        r = check_inject_denied(bp, out);
        if (r >= 0)
                r = check_inject_allowed(bp, out);
        if (r >= 0 && bp->policy)
                r = check_inject_scopes(bp, out);
        if (r >= 0)
                r = check_inject_secrets(bp, out);
        return r < 0 ? r : 0;
}
