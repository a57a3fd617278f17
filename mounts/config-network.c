/* SPDX-License-Identifier: MIT */
/*
 * config-network.c: the egress keys of a workspace config: the [network]
 * lists (allow, deny, resolve) and the [inject "NAME"] sections.
 *
 * Each value is parsed by proxy/rules.h, the same functions `cloister
 * check` and the proxy use, so a pattern means one thing everywhere; this
 * file only adds the file, line and key to their reasons. `*` and `*.tld`
 * allow entries, IP literals in the fixed deny set, and rules the proxy
 * could not apply are errors here, not warnings: a config is refused before
 * anything runs.
 */
#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "config-private.h"
#include "lib/util.h"
#include "lib/values.h"

enum {
        IK_HOST,
        IK_PORT,
        IK_METHODS,
        IK_PATHS,
        IK_SCOPE,
        IK_SECRET,
        IK_SCHEME,
        IK_USERNAME,
        IK_HEADER,
        IK_PUSH_REFS,
        IK_PUSH_DELETE,
        IK_MAX,
};

static const char *const inject_keys[IK_MAX] = {
        [IK_HOST] = "host",
        [IK_PORT] = "port",
        [IK_METHODS] = "methods",
        [IK_PATHS] = "paths",
        [IK_SCOPE] = "scope",
        [IK_SECRET] = "secret",
        [IK_SCHEME] = "scheme",
        [IK_USERNAME] = "username",
        [IK_HEADER] = "header",
        [IK_PUSH_REFS] = "push_refs",
        [IK_PUSH_DELETE] = "push_delete",
};

_Static_assert(IK_MAX <= 16, "raise inject_lines");

static int config_words_append(char ***vec, const char *value, size_t max, size_t *ret_n)
{
        size_t n = 0;

        if (!*vec && !(*vec = calloc(1, sizeof(char *))))
                return -ENOMEM;
        while ((*vec)[n])
                n++;
        for (const char *s = value; *s;) {
                while (*s == ',' || isspace((unsigned char)*s))
                        s++;
                if (!*s)
                        break;
                size_t l = strcspn(s, ", \t");
                if (n >= max)
                        return -E2BIG;
                char **nv = realloc(*vec, (n + 2) * sizeof(char *));
                if (!nv)
                        return -ENOMEM;
                *vec = nv;
                nv[n] = strndup(s, l);
                if (!nv[n])
                        return -ENOMEM;
                nv[++n] = NULL;
                s += l;
        }
        if (ret_n)
                *ret_n = n;
        return 0;
}

bool config_network_key_is_list(const char *name)
{
        return streq(name, "allow") || streq(name, "deny") || streq(name, "resolve");
}

static void proxy_key_seen(struct parse_state *st)
{
        if (!st->cfg->network.first_proxy_key_line)
                st->cfg->network.first_proxy_key_line = config_reader_line(st);
}

int config_network_list_add(struct parse_state *st, const char *name, const char *value)
{
        struct config *c = st->cfg;
        unsigned line = config_reader_line(st);
        _cleanup_strv_free_ char **words = NULL;
        int r;

        proxy_key_seen(st);
        r = config_words_append(&words, value, CONFIG_MAX_HOSTS, NULL);
        if (r < 0)
                return config_error(st, r == -E2BIG ? line : 0, "key '%s' in [network]: %s", name,
                                    r == -E2BIG ? "too many entries" : "out of memory");
        if (!words[0])
                return config_error(st, line, "key '%s' in [network]: empty value", name);
        for (char **w = words; *w; w++) {
                const char *why = NULL;

                if (streq(name, "resolve")) {
                        struct proxy_resolve rv;
                        if (c->network.n_resolve >= CONFIG_MAX_RESOLVE)
                                return config_error(st, line,
                                                    "key 'resolve' in [network]: more than %d "
                                                    "entries",
                                                    CONFIG_MAX_RESOLVE);
                        if (proxy_resolve_parse(*w, &rv, &why) < 0)
                                return config_error(st, line,
                                                    "key 'resolve' in [network]: '%s': %s", *w,
                                                    why ? why : "out of memory");
                        for (size_t i = 0; i < c->network.n_resolve; i++)
                                if (streq(c->network.resolve[i].host, rv.host)) {
                                        unsigned first = c->network.resolve[i].line;
                                        proxy_resolve_done(&rv);
                                        return config_error(st, line,
                                                            "key 'resolve' in [network]: '%s' "
                                                            "already resolved on line %u",
                                                            *w, first);
                                }
                        struct proxy_resolve *nv = realloc(
                                c->network.resolve, (c->network.n_resolve + 1) * sizeof(*nv));
                        if (!nv) {
                                proxy_resolve_done(&rv);
                                return config_error(st, 0, "out of memory");
                        }
                        rv.line = line;
                        c->network.resolve = nv;
                        nv[c->network.n_resolve++] = rv;
                        continue;
                }
                bool allow = streq(name, "allow");
                struct proxy_host_pattern **v = allow ? &c->network.allow : &c->network.deny;
                size_t *n = allow ? &c->network.n_allow : &c->network.n_deny;
                struct proxy_host_pattern p;

                if (*n >= CONFIG_MAX_HOSTS)
                        return config_error(st, line, "key '%s' in [network]: more than %d entries",
                                            name, CONFIG_MAX_HOSTS);
                if (proxy_host_pattern_parse(*w, &p, &why) < 0)
                        return config_error(st, line, "key '%s' in [network]: '%s': %s", name, *w,
                                            why ? why : "out of memory");
                struct proxy_host_pattern *nv = realloc(*v, (*n + 1) * sizeof(*nv));
                if (!nv) {
                        proxy_host_pattern_done(&p);
                        return config_error(st, 0, "out of memory");
                }
                p.line = line;
                *v = nv;
                nv[(*n)++] = p;
        }
        return 1;
}

int config_inject_begin(struct parse_state *st, const char *name, size_t len)
{
        struct config *c = st->cfg;
        struct proxy_inject_rule *r;

        for (size_t i = 0; i < c->n_injects; i++)
                if (strlen(c->injects[i].name) == len &&
                    strncmp(c->injects[i].name, name, len) == 0)
                        return config_error(st, config_reader_line(st),
                                            "section [inject \"%.*s\"]: duplicate rule (first on "
                                            "line %u)",
                                            (int)len, name, c->injects[i].line);
        if (c->n_injects >= CONFIG_MAX_INJECTS)
                return config_error(st, config_reader_line(st),
                                    "too many [inject] rules (at most %d)", CONFIG_MAX_INJECTS);
        r = realloc(c->injects, (c->n_injects + 1) * sizeof(*r));
        if (!r)
                return config_error(st, 0, "out of memory");
        c->injects = r;
        r = &c->injects[c->n_injects++];
        *r = (struct proxy_inject_rule){.line = config_reader_line(st), .port = 443};
        r->name = strndup(name, len);
        if (!r->name)
                return config_error(st, 0, "out of memory");
        memset(st->inject_lines, 0, sizeof(st->inject_lines));
        st->inject = r;
        st->section = SECTION_INJECT;
        if (!c->network.first_proxy_key_line)
                c->network.first_proxy_key_line = r->line;
        return 1;
}

static int list_key(struct parse_state *st, struct proxy_inject_rule *r, const char *key,
                    char ***vec, const char *value)
{
        unsigned line = config_reader_line(st);
        size_t before = 0, n = 0;
        int k;

        while (*vec && (*vec)[before])
                before++;
        k = config_words_append(vec, value, CONFIG_MAX_PATTERNS, &n);
        if (k < 0)
                return config_error(st, k == -E2BIG ? line : 0, "key '%s' in [inject \"%s\"]: %s",
                                    key, r->name,
                                    k == -E2BIG ? "too many entries" : "out of memory");
        if (n == before)
                return config_error(st, line, "key '%s' in [inject \"%s\"]: empty value", key,
                                    r->name);
        for (size_t i = before; i < n; i++) {
                const char *why = NULL;
                char *w = (*vec)[i];

                if (streq(key, "methods")) {
                        for (char *p = w; *p; p++)
                                *p = (char)toupper((unsigned char)*p);
                        if (!proxy_method_is_injectable(w))
                                why = "not one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS";
                } else if (streq(key, "paths")) {
                        (void)proxy_path_pattern_check(w, &why);
                } else {
                        (void)proxy_ref_pattern_check(w, &why);
                }
                if (why)
                        return config_error(st, line, "key '%s' in [inject \"%s\"]: '%s': %s", key,
                                            r->name, w, why);
        }
        return 1;
}

int config_inject_key(struct parse_state *st, const char *name, const char *value)
{
        struct proxy_inject_rule *r = st->inject;
        unsigned line = config_reader_line(st);
        const char *why = NULL;
        size_t k;

        for (k = 0; k < IK_MAX; k++)
                if (streq(inject_keys[k], name))
                        break;
        if (k == IK_MAX)
                return config_error(
                        st, line,
                        "key '%s' in [inject \"%s\"]: unknown key (expected host, port, "
                        "methods, paths, scope, secret, scheme, username, header, "
                        "push_refs or push_delete)",
                        name, r->name);
        bool list = k == IK_METHODS || k == IK_PATHS || k == IK_PUSH_REFS;
        if (st->inject_lines[k] && !list)
                return config_error(st, line,
                                    "key '%s' in [inject \"%s\"]: duplicate key (first set on line "
                                    "%u)",
                                    name, r->name, st->inject_lines[k]);
        if (!st->inject_lines[k])
                st->inject_lines[k] = line;
        if (k == IK_HOST)
                r->line_host = line;
        else if (k == IK_SCOPE)
                r->line_scope = line;
        else if (k == IK_SECRET)
                r->line_secret = line;
        if (!*value)
                return config_error(st, line, "key '%s' in [inject \"%s\"]: empty value", name,
                                    r->name);
        switch (k) {
        case IK_HOST: {
                char buf[PROXY_HOST_MAX + 3];
                bool literal, exact;
                if (proxy_host_normalize(value, strlen(value), buf, sizeof(buf), &literal, &exact,
                                         &why) < 0 ||
                    literal || strchr(value, '*'))
                        return config_error(st, line, "key 'host' in [inject \"%s\"]: '%s': %s",
                                            r->name, value,
                                            why ? why
                                                : "one exact host name, not an address or "
                                                  "a wildcard");
                r->host = strdup(buf);
                break;
        }
        case IK_PORT: {
                uint64_t v;
                if (value_parse_uint(value, &v) < 0 || v < 1 || v > 65535)
                        return config_error(st, line,
                                            "key 'port' in [inject \"%s\"]: '%s' is not a port "
                                            "(1-65535)",
                                            r->name, value);
                r->port = (uint16_t)v;
                return 1;
        }
        case IK_METHODS:
                return list_key(st, r, name, &r->methods, value);
        case IK_PATHS:
                return list_key(st, r, name, &r->paths, value);
        case IK_PUSH_REFS:
                return list_key(st, r, name, &r->push_refs, value);
        case IK_SCOPE:
        case IK_SECRET:
                if (!value_name_is_valid(value, CONFIG_NAME_MAX, false))
                        return config_error(st, line,
                                            "key '%s' in [inject \"%s\"]: '%s' is not a name (1-64 "
                                            "of A-Z a-z 0-9 . _ -)",
                                            name, r->name, value);
                if (k == IK_SCOPE)
                        r->scope = strdup(value);
                else
                        r->secret = strdup(value);
                break;
        case IK_SCHEME:
                if (streq(value, "bearer"))
                        r->scheme = PROXY_SCHEME_BEARER;
                else if (streq(value, "basic"))
                        r->scheme = PROXY_SCHEME_BASIC;
                else if (streq(value, "header"))
                        r->scheme = PROXY_SCHEME_HEADER;
                else
                        return config_error(st, line,
                                            "key 'scheme' in [inject \"%s\"]: '%s' is not "
                                            "'bearer', 'basic' or 'header'",
                                            r->name, value);
                return 1;
        case IK_USERNAME:
                r->username = strdup(value);
                break;
        case IK_HEADER: {
                _cleanup_free_ char *low = strdup(value);
                if (!low)
                        return config_error(st, 0, "out of memory");
                for (char *p = low; *p; p++)
                        *p = (char)tolower((unsigned char)*p);
                r->header = TAKE_PTR(low);
                break;
        }
        case IK_PUSH_DELETE:
                if (value_parse_bool(value, &r->push_delete) < 0)
                        return config_error(st, line,
                                            "key 'push_delete' in [inject \"%s\"]: '%s' is not a "
                                            "boolean (true/false)",
                                            r->name, value);
                return 1;
        }
        if ((k == IK_HOST && !r->host) || (k == IK_SCOPE && !r->scope) ||
            (k == IK_SECRET && !r->secret) || (k == IK_USERNAME && !r->username) ||
            (k == IK_HEADER && !r->header))
                return config_error(st, 0, "out of memory");
        return 1;
}

void config_network_finish(struct parse_state *st)
{
        struct config *c = st->cfg;

        if (!c->network.connections)
                c->network.connections = 64;
        if (!c->network.rate)
                c->network.rate = 50;
        if (!c->network.set_bytes_out)
                c->network.bytes_out = 1ULL << 30;
        if (c->network.mode != CONFIG_NETWORK_PROXY && c->network.first_proxy_key_line) {
                config_error(st, c->network.first_proxy_key_line,
                             "[network] allow, deny, resolve, test_ca and [inject] rules need "
                             "[network] mode = proxy");
                return;
        }
        for (size_t i = 0; i < c->n_injects; i++) {
                const struct proxy_inject_rule *r = &c->injects[i];
                const char *why = NULL;

                if (proxy_inject_rule_check(r, &why) < 0) {
                        config_error(st, r->line, "section [inject \"%s\"]: %s", r->name, why);
                        return;
                }
                if (!c->broker.policy) {
                        config_error(st, r->line,
                                     "section [inject \"%s\"]: needs a broker ([broker] policy): "
                                     "it checks the agent's tokens and holds the secret",
                                     r->name);
                        return;
                }
        }
}

void config_network_free(struct config *c)
{
        for (size_t i = 0; i < c->network.n_allow; i++)
                proxy_host_pattern_done(&c->network.allow[i]);
        for (size_t i = 0; i < c->network.n_deny; i++)
                proxy_host_pattern_done(&c->network.deny[i]);
        for (size_t i = 0; i < c->network.n_resolve; i++)
                proxy_resolve_done(&c->network.resolve[i]);
        for (size_t i = 0; i < c->n_injects; i++)
                proxy_inject_rule_done(&c->injects[i]);
        free(c->network.allow);
        free(c->network.deny);
        free(c->network.resolve);
        free(c->network.test_ca);
        free(c->injects);
}
