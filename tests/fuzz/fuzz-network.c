/* SPDX-License-Identifier: MIT */
/*
 * fuzz-network.c: the egress proxy's rules: the [network] and [inject
 * "NAME"] keys of a workspace config (mounts/config-network.c through
 * config_load), and each value parser of proxy/rules.h they use, which the
 * proxy also runs on every request's host and path.
 *
 * The input is a config file; each of its lines is also fed to every value
 * parser on its own. Any input: no crash, no leak, and
 *  - an accepted config's allow and deny entries are clean (a valid name or
 *    a canonical address, no wildcard over an address or a TLD) and parse
 *    back to themselves from their printed form; its rules pass the whole
 *    rule check and know the lines of their keys; the lint's and the
 *    cross-checks' findings are one line each;
 *  - a host the proxy normalizes is a valid name or a canonical address,
 *    and normalizing it again changes nothing;
 *  - a normalized path is a fixed point: its encoded form normalizes to
 *    the same decoded and encoded paths;
 *  - a valid path or ref pattern matches itself (as a path, as a ref).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blueprint.h"
#include "config.h"
#include "fuzz.h"
#include "lint.h"
#include "proxy/rules.h"

static void pattern_format(const struct proxy_host_pattern *p, char *buf, size_t size)
{
        bool v6 = p->literal && strchr(p->host, ':');
        char port[8] = "";

        if (p->port)
                snprintf(port, sizeof(port), ":%u", (unsigned)p->port);
        snprintf(buf, size, "%s%s%s%s%s", p->wildcard ? "*." : "", v6 ? "[" : "", p->host,
                 v6 ? "]" : "", port);
}

static void pattern_invariants(const struct proxy_host_pattern *p, const char *what)
{
        struct proxy_host_pattern q;
        const char *why = NULL;
        char buf[PROXY_HOST_MAX + 16];

        if (!p->host || !*p->host)
                fuzz_fail("%s entry with no host", what);
        if (p->wildcard && (p->literal || !strchr(p->host, '.')))
                fuzz_fail("%s entry '*.%s' covers an address or a TLD", what, p->host);
        if (!p->literal && !proxy_host_name_is_valid(p->host))
                fuzz_fail("%s entry '%s' is not a valid name", what, p->host);
        pattern_format(p, buf, sizeof(buf));
        if (proxy_host_pattern_parse(buf, &q, &why) < 0)
                fuzz_fail("%s entry prints as '%s', which does not parse: %s", what, buf,
                          why ? why : "out of memory");
        if (strcmp(q.host, p->host) != 0 || q.wildcard != p->wildcard || q.literal != p->literal ||
            q.port != p->port)
                fuzz_fail("%s entry '%s' parses back as another", what, buf);
        proxy_host_pattern_done(&q);
}

static void config_invariants(const struct config *c)
{
        struct blueprint bp = {.config = c, .broker_dirfd = -1, .broker_dir_error = -ENOENT};
        struct lint l = {0};

        if ((c->network.n_allow || c->network.n_deny || c->network.n_resolve || c->n_injects) &&
            c->network.mode != CONFIG_NETWORK_PROXY)
                fuzz_fail("proxy keys accepted without mode = proxy");
        if (c->network.n_allow > CONFIG_MAX_HOSTS || c->network.n_deny > CONFIG_MAX_HOSTS ||
            c->network.n_resolve > CONFIG_MAX_RESOLVE || c->n_injects > CONFIG_MAX_INJECTS)
                fuzz_fail("accepted config has too many egress entries");
        for (size_t i = 0; i < c->network.n_allow; i++)
                pattern_invariants(&c->network.allow[i], "allow");
        for (size_t i = 0; i < c->network.n_deny; i++)
                pattern_invariants(&c->network.deny[i], "deny");
        for (size_t i = 0; i < c->network.n_resolve; i++)
                if (!proxy_host_name_is_valid(c->network.resolve[i].host))
                        fuzz_fail("resolve of '%s'", c->network.resolve[i].host);
        for (size_t i = 0; i < c->n_injects; i++) {
                const struct proxy_inject_rule *r = &c->injects[i];
                const char *why = NULL;

                if (proxy_inject_rule_check(r, &why) < 0)
                        fuzz_fail("accepted rule '%s' fails the rule check: %s", r->name, why);
                if (!c->broker.policy)
                        fuzz_fail("accepted rule '%s' without a broker policy", r->name);
                if (r->line_host <= r->line || r->line_scope <= r->line ||
                    r->line_secret <= r->line)
                        fuzz_fail("rule '%s' (line %u) has key lines %u, %u, %u", r->name, r->line,
                                  r->line_host, r->line_scope, r->line_secret);
        }
        if (config_lint(c, "/home/fuzz", &l) < 0)
                fuzz_fail("config_lint failed");
        fuzz_lint_check(&l, "lint");
        if (blueprint_network_check(&bp, &l) < 0)
                fuzz_fail("blueprint_network_check failed");
        fuzz_lint_check(&l, "network cross-check");
}

static void host_invariants(const char *s, size_t len)
{
        char buf[PROXY_HOST_MAX + 3], again[PROXY_HOST_MAX + 3], canon[PROXY_LITERAL_MAX];
        const char *host, *why = NULL;
        struct sockaddr_storage ss;
        socklen_t sl;
        size_t hl;
        uint16_t port;
        bool lit, exact, lit2, exact2;

        if (proxy_authority_split(s, len, &host, &hl, &port, &why) < 0 ||
            proxy_host_normalize(host, hl, buf, sizeof(buf), &lit, &exact, &why) < 0)
                return;
        if (lit) {
                if (proxy_literal_parse(buf, &ss, &sl, canon, sizeof(canon)) < 0 ||
                    strcmp(canon, buf) != 0)
                        fuzz_fail("address '%s' is not canonical", buf);
        } else if (!proxy_host_name_is_valid(buf)) {
                fuzz_fail("host '%s' normalized to an invalid name", buf);
        }
        /* A canonical address is written bare; an IPv6 one needs its brackets to split. */
        if (proxy_host_normalize(buf, strlen(buf), again, sizeof(again), &lit2, &exact2, &why) <
                    0 ||
            strcmp(again, buf) != 0 || lit2 != lit || !exact2)
                fuzz_fail("host '%s' does not normalize to itself", buf);
}

static void path_invariants(const char *s, size_t len)
{
        char *dec = NULL, *enc = NULL, *dec2 = NULL, *enc2 = NULL;
        const char *why = NULL;

        if (proxy_path_normalize(s, len, &dec, &enc, &why) == 0) {
                if (dec[0] != '/' || strlen(dec) > len)
                        fuzz_fail("path normalized to '%s'", dec);
                if (proxy_path_normalize(enc, strlen(enc), &dec2, &enc2, &why) < 0)
                        fuzz_fail("encoded path '%s' is refused: %s", enc, why);
                if (strcmp(dec, dec2) != 0 || strcmp(enc, enc2) != 0)
                        fuzz_fail("path '%s' is not a fixed point ('%s')", enc, enc2);
        }
        free(dec);
        free(enc);
        free(dec2);
        free(enc2);
        dec = enc = NULL;
        /* A pattern matches the path it spells (its '*' matches itself). */
        if (proxy_path_pattern_check(s, &why) == 0 &&
            proxy_path_normalize(s, len, &dec, &enc, &why) == 0 &&
            !proxy_path_pattern_match(s, dec))
                fuzz_fail("path pattern '%s' does not match itself", s);
        free(dec);
        free(enc);
}

static void ref_invariants(const char *s)
{
        const char *why = NULL;

        if (proxy_ref_pattern_check(s, &why) < 0)
                return;
        if (!proxy_ref_pattern_match(s, s))
                fuzz_fail("ref pattern '%s' does not match itself", s);
        if (!strchr(s, '*') && !proxy_ref_name_is_valid(s))
                fuzz_fail("ref pattern '%s' without '*' is not a valid ref", s);
}

static void line_invariants(const char *s)
{
        struct proxy_host_pattern p;
        struct proxy_resolve rv;
        const char *why = NULL;

        if (proxy_host_pattern_parse(s, &p, &why) == 0) {
                pattern_invariants(&p, "parsed");
                proxy_host_pattern_done(&p);
        }
        if (proxy_resolve_parse(s, &rv, &why) == 0) {
                if (!proxy_host_name_is_valid(rv.host) || !rv.addr_len)
                        fuzz_fail("resolve '%s' parsed to '%s'", s, rv.host);
                proxy_resolve_done(&rv);
        }
        host_invariants(s, strlen(s));
        path_invariants(s, strlen(s));
        ref_invariants(s);
        (void)proxy_method_is_injectable(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        const char *path = fuzz_file(data, size);
        struct config *c = NULL;
        char *err = NULL, *text, *save = NULL;

        if (config_load(path, &c, &err) < 0) {
                if (c)
                        fuzz_fail("config_load failed but returned a config");
                fuzz_error_check(path, data, size, err);
        } else {
                if (err)
                        fuzz_fail("config_load succeeded with an error: %s", err);
                config_invariants(c);
        }
        free(err);
        config_free(c);

        /* Each line alone, and its value if it is "key = value", to every value parser. */
        text = strndup((const char *)data, size);
        if (!text)
                return 0;
        for (char *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
                char *eq = strstr(l, " = ");

                line_invariants(l);
                if (eq)
                        line_invariants(eq + 3);
        }
        free(text);
        return 0;
}
