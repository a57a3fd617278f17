/* SPDX-License-Identifier: MIT */
/*
 * config-lint.c: a config can be valid and still undermine the boundary,
 * e.g. by mirroring ~/.ssh into the sandbox. These findings are warnings for
 * `cloister check` and errors under `--strict`. The checks of the config
 * against the broker policy and the host are in blueprint.c.
 *
 * Which allow wildcards are too broad is the Public Suffix List's call,
 * through libpsl: a name under a public suffix ("co.uk", "github.io") can
 * be registered by anyone, so "*.github.io" lets the agent reach every
 * site anyone hosts there. The parser already refuses "*" and "*.TLD".
 */
#include <errno.h>
#include <fnmatch.h>
#include <libpsl.h>
#include <stdarg.h>
#include <string.h>

#include "config.h"
#include "lint.h"
#include "lib/util.h"

/* Host paths whose exposure hands the agent credentials or host control. */
static const char *const sensitive_home[] = {
        ".ssh",
        ".aws",
        ".config/gh",
        ".netrc",
        ".git-credentials",
        ".gnupg",
        ".kube",
        ".docker",
        ".config/gcloud",
        ".azure",
        ".npmrc",
        ".pypirc",
        /* cargo's registry tokens, beside the toolchain that `cloister init` mirrors */
        ".cargo/credentials",
        ".cargo/credentials.toml",
};
static const char *const sensitive_host[] = {
        "/var/run/docker.sock",
        "/run/docker.sock",
        "/proc",
        "/sys",
        "/dev",
        "/root",
        "/etc/shadow",
        "/etc/sudoers",
        "/run/user",
        "/var/run/dbus",
        "/run/dbus",
};
/* Variable names that usually carry credentials. */
static const char *const secret_env_globs[] = {
        "*TOKEN*",   "*SECRET*", "*PASSWORD*",    "*PASSWD*",       "*CREDENTIAL*", "*_KEY",
        "*API_KEY*", "AWS_*",    "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "*COOKIE*",
};

static bool path_within(const char *a, const char *b)
{
        size_t n = strlen(b);

        if (streq(b, "/"))
                return true;
        return strncmp(a, b, n) == 0 && (a[n] == '\0' || a[n] == '/');
}

/*
 * Does exposing host path p (a mirror or seed source) expose something
 * sensitive? section and key say where p was set, line on which line.
 */
/* Whether a mirror's exclude globs hide sensitive path s, inside its source p. */
static bool excluded(const char *s, const char *p, char *const *exclude)
{
        const char *base = strrchr(s, '/') ? strrchr(s, '/') + 1 : s;

        if (!exclude || streq(s, p) || !path_within(s, p))
                return false;
        for (char *const *g = exclude; *g; g++)
                if (fnmatch(*g, base, 0) == 0)
                        return true;
        return false;
}

static int lint_exposure(const struct config *c, const char *p, char *const *exclude,
                         const char *host_home, const char *section, const char *key, unsigned line,
                         struct lint *out)
{
        char buf[4096];
        /* The user's own home is judged by what is in it (sensitive_home),
         * root's too: /root below is someone else's, when it is not ours. */
        bool in_own_home = host_home && *host_home && !streq(host_home, "/") &&
                           path_within(p, host_home) && !streq(p, host_home);

#define EXPOSES(...) lint_add(out, LINT_WARNING, c->file, line, section, key, __VA_ARGS__)
        if (host_home && *host_home && !streq(host_home, "/") &&
            (path_within(host_home, p) || streq(p, host_home)))
                return EXPOSES("'%s' exposes the user's home '%s'", p, host_home);
        for (size_t i = 0; host_home && i < ELEMENTSOF(sensitive_home); i++) {
                snprintf(buf, sizeof(buf), "%s/%s", host_home, sensitive_home[i]);
                if ((path_within(p, buf) || path_within(buf, p)) && !excluded(buf, p, exclude))
                        return EXPOSES("'%s' exposes credentials in '%s'", p, buf);
        }
        for (size_t i = 0; i < ELEMENTSOF(sensitive_host); i++)
                if ((path_within(p, sensitive_host[i]) || path_within(sensitive_host[i], p)) &&
                    !(in_own_home && streq(sensitive_host[i], host_home)))
                        return EXPOSES("'%s' exposes '%s' to the agent", p, sensitive_host[i]);
        /* A dotfile directory under any /home/<user> is almost always a credential store. */
        const char *h = startswith(p, "/home/");
        if (h && strchr(h, '/')) {
                const char *rest = strchr(h, '/') + 1;
                for (size_t i = 0; i < ELEMENTSOF(sensitive_home); i++) {
                        size_t l = strlen(sensitive_home[i]);
                        if (strncmp(rest, sensitive_home[i], l) == 0 &&
                            (rest[l] == '\0' || rest[l] == '/'))
                                return EXPOSES("'%s' exposes credentials in a home directory", p);
                }
        }
#undef EXPOSES
        return 0;
}

static void psl_freep(psl_ctx_t **p)
{
        if (*p && *p != psl_builtin())
                psl_free(*p);
}

/* A wildcard allow entry whose suffix is a public suffix: anyone's site. */
static int lint_allow_broad(const struct config *c, struct lint *out)
{
        __attribute__((cleanup(psl_freep))) psl_ctx_t *psl = NULL;
        int r = 0;

        for (size_t i = 0; r >= 0 && i < c->network.n_allow; i++) {
                const struct proxy_host_pattern *p = &c->network.allow[i];

                if (!p->wildcard)
                        continue;
                /* The newest of the system's list and libpsl's built-in copy. */
                if (!psl && !(psl = psl_latest(NULL)) && !(psl = (psl_ctx_t *)psl_builtin()))
                        return lint_add(out, LINT_WARNING, c->file, p->line, "network", "allow",
                                        "cannot load the Public Suffix List to check '*.%s'",
                                        p->host);
                if (!psl_is_public_suffix2(psl, p->host, PSL_TYPE_ANY | PSL_TYPE_NO_STAR_RULE))
                        continue;
                r = lint_add(
                        out, LINT_WARNING, c->file, p->line, "network", "allow",
                        "'*.%s' is too broad: '%s' is a public suffix (%s), so the entry "
                        "allows every site anyone registers under it; list the hosts",
                        p->host, p->host,
                        psl_is_public_suffix2(psl, p->host, PSL_TYPE_ICANN | PSL_TYPE_NO_STAR_RULE)
                                ? "a registry's, on the Public Suffix List"
                                : "a hosting service's, on the Public Suffix List");
        }
        return r;
}

int config_lint(const struct config *c, const char *host_home, struct lint *out)
{
        int r = 0;

        for (size_t i = 0; r >= 0 && i < c->n_mirrors; i++) {
                char section[128];
                snprintf(section, sizeof(section), "mirror \"%s\"", c->mirrors[i].name);
                r = lint_exposure(c, c->mirrors[i].source, c->mirrors[i].exclude, host_home,
                                  section, "source", c->mirrors[i].line, out);
        }
        for (size_t i = 0; r >= 0 && i < c->home.n_seeds; i++)
                r = lint_exposure(c, c->home.seeds[i].source, NULL, host_home, "home", "seed",
                                  c->home.seeds[i].line, out);
        if (r >= 0 && (path_within(c->repo.source, "/proc") || path_within(c->repo.source, "/sys")))
                r = lint_add(out, LINT_WARNING, c->file, 0, "repo", "source",
                             "'%s' is a kernel filesystem", c->repo.source);
        if (r >= 0 && host_home && streq(c->repo.source, host_home))
                r = lint_add(out, LINT_WARNING, c->file, 0, "repo", "source",
                             "'%s' is the user's home", c->repo.source);
        if (r >= 0 && c->network.mode == CONFIG_NETWORK_HOST)
                r = lint_add(out, LINT_WARNING, c->file, 0, "network", "mode",
                             "'host': the agent can reach the whole network");
        for (size_t i = 0; r >= 0 && i < c->network.n_resolve; i++)
                r = lint_add(out, LINT_WARNING, c->file, c->network.resolve[i].line, "network",
                             "resolve",
                             "test only: '%s' is sent to a fixed address, without DNS and "
                             "without the deny set",
                             c->network.resolve[i].host);
        if (r >= 0 && c->network.test_ca)
                r = lint_add(out, LINT_WARNING, c->file, 0, "network", "test_ca",
                             "test only: the proxy trusts '%s' to vouch for every host",
                             c->network.test_ca);
        if (r >= 0 && c->network.mode == CONFIG_NETWORK_PROXY && !c->network.set_bytes_out)
                r = lint_add(out, LINT_WARNING, c->file, 0, "network", "bytes_out",
                             "not set; the default %llu applies",
                             (unsigned long long)c->network.bytes_out);
        if (r >= 0 && c->network.mode == CONFIG_NETWORK_PROXY && !c->network.n_allow &&
            !c->n_injects)
                r = lint_add(out, LINT_WARNING, c->file, 0, "network", "mode",
                             "'proxy' with no allow entries and no [inject] rules: nothing is "
                             "reachable");

        if (r >= 0)
                r = lint_allow_broad(c, out);
        if (r >= 0 && c->image.source && !c->image.digest)
                r = lint_add(out, LINT_WARNING, c->file, 0, "image", "digest",
                             "not set: the sandbox runs on whatever '%s' holds when it is "
                             "imported",
                             c->image.source);
        if (r >= 0 && c->image.allow_setuid)
                r = lint_add(out, LINT_WARNING, c->file, 0, "image", "allow_setuid",
                             "true: the image's setuid and setgid files are taken (without the "
                             "bits) instead of refused");

        struct {
                const char *key;
                bool set;
                uint64_t value, large;
        } lim[] = {
                {"bytes", c->limits.set_bytes, c->limits.bytes, 64ULL << 30},
                {"files", c->limits.set_files, c->limits.files, 1000000},
                {"timeout", c->limits.set_timeout, c->limits.timeout, 86400},
                {"memory", c->limits.set_memory, c->limits.memory, 64ULL << 30},
                {"processes", c->limits.set_processes, c->limits.processes, 4096},
        };
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(lim); i++) {
                if (!lim[i].set)
                        r = lint_add(out, LINT_WARNING, c->file, 0, "limits", lim[i].key,
                                     "not set; the default %llu applies",
                                     (unsigned long long)lim[i].value);
                else if (lim[i].value > lim[i].large)
                        r = lint_add(out, LINT_WARNING, c->file, 0, "limits", lim[i].key,
                                     "%llu is very large (above %llu)",
                                     (unsigned long long)lim[i].value,
                                     (unsigned long long)lim[i].large);
        }
        for (char **e = c->run.env; r >= 0 && e && *e; e++)
                for (size_t i = 0; i < ELEMENTSOF(secret_env_globs); i++)
                        if (fnmatch(secret_env_globs[i], *e, 0) == 0) {
                                r = lint_add(out, LINT_WARNING, c->file, 0, "run", "env",
                                             "'%s' looks like a secret; use the broker instead",
                                             *e);
                                break;
                        }
        return r < 0 ? r : 0;
}
