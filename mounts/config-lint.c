/* SPDX-License-Identifier: MIT */
/*
 * config-lint.c: a config can be valid and still undermine the boundary,
 * e.g. by mirroring ~/.ssh into the sandbox. These findings are warnings for
 * `cloister check` and errors under `--strict`.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <string.h>

#include "config.h"
#include "lib/util.h"

/* Host paths whose exposure hands the agent credentials or host control. */
static const char *const sensitive_home[] = {
        ".ssh",  ".aws",    ".config/gh",     ".netrc", ".git-credentials", ".gnupg",
        ".kube", ".docker", ".config/gcloud", ".azure", ".npmrc",           ".pypirc",
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

static int add(char ***lines, size_t *n, const char *fmt, ...) _printf_(3, 4);
static int add(char ***lines, size_t *n, const char *fmt, ...)
{
        va_list ap;
        char *s = NULL;
        char **nv;

        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        if (!s)
                return -ENOMEM;
        nv = realloc(*lines, (*n + 2) * sizeof(char *));
        if (!nv) {
                free(s);
                return -ENOMEM;
        }
        *lines = nv;
        nv[(*n)++] = s;
        nv[*n] = NULL;
        return 0;
}

/* Does exposing host path p (a mirror or seed source) expose something sensitive? */
static int lint_exposure(const char *p, const char *host_home, const char *where, unsigned line,
                         const char *file, char ***lines, size_t *n)
{
        char buf[4096];

        if (host_home && *host_home && !streq(host_home, "/") &&
            (path_within(host_home, p) || streq(p, host_home)))
                return add(lines, n, "%s:%u: %s: '%s' exposes the user's home '%s'", file, line,
                           where, p, host_home);
        for (size_t i = 0; host_home && i < ELEMENTSOF(sensitive_home); i++) {
                snprintf(buf, sizeof(buf), "%s/%s", host_home, sensitive_home[i]);
                if (path_within(p, buf) || path_within(buf, p))
                        return add(lines, n, "%s:%u: %s: '%s' exposes credentials in '%s'", file,
                                   line, where, p, buf);
        }
        for (size_t i = 0; i < ELEMENTSOF(sensitive_host); i++)
                if (path_within(p, sensitive_host[i]) || path_within(sensitive_host[i], p))
                        return add(lines, n, "%s:%u: %s: '%s' exposes '%s' to the agent", file,
                                   line, where, p, sensitive_host[i]);
        /* A dotfile directory under any /home/<user> is almost always a credential store. */
        const char *h = startswith(p, "/home/");
        if (h && strchr(h, '/')) {
                const char *rest = strchr(h, '/') + 1;
                for (size_t i = 0; i < ELEMENTSOF(sensitive_home); i++) {
                        size_t l = strlen(sensitive_home[i]);
                        if (strncmp(rest, sensitive_home[i], l) == 0 &&
                            (rest[l] == '\0' || rest[l] == '/'))
                                return add(lines, n,
                                           "%s:%u: %s: '%s' exposes credentials in a home "
                                           "directory",
                                           file, line, where, p);
                }
        }
        return 0;
}

int config_lint(const struct config *c, const char *host_home, char ***ret_lines)
{
        char **lines = NULL;
        size_t n = 0;
        int r = 0;

        for (size_t i = 0; r >= 0 && i < c->n_mirrors; i++) {
                char where[128];
                snprintf(where, sizeof(where), "key 'source' in [mirror \"%s\"]",
                         c->mirrors[i].name);
                r = lint_exposure(c->mirrors[i].source, host_home, where, c->mirrors[i].line,
                                  c->file, &lines, &n);
        }
        for (size_t i = 0; r >= 0 && i < c->home.n_seeds; i++)
                r = lint_exposure(c->home.seeds[i].source, host_home, "key 'seed' in [home]",
                                  c->home.seeds[i].line, c->file, &lines, &n);
        if (r >= 0 && (path_within(c->repo.source, "/proc") || path_within(c->repo.source, "/sys")))
                r = add(&lines, &n, "%s: key 'source' in [repo]: '%s' is a kernel filesystem",
                        c->file, c->repo.source);
        if (r >= 0 && host_home && streq(c->repo.source, host_home))
                r = add(&lines, &n, "%s: key 'source' in [repo]: '%s' is the user's home", c->file,
                        c->repo.source);
        if (r >= 0 && c->network.mode == CONFIG_NETWORK_HOST)
                r = add(&lines, &n,
                        "%s: key 'mode' in [network]: 'host': the agent can reach the whole "
                        "network",
                        c->file);
        for (size_t i = 0; r >= 0 && i < c->network.n_resolve; i++)
                r = add(&lines, &n,
                        "%s:%u: key 'resolve' in [network]: test only: '%s' is sent to a fixed "
                        "address, without DNS and without the deny set",
                        c->file, c->network.resolve[i].line, c->network.resolve[i].host);
        if (r >= 0 && c->network.test_ca)
                r = add(&lines, &n,
                        "%s: key 'test_ca' in [network]: test only: the proxy trusts '%s' to vouch "
                        "for every host",
                        c->file, c->network.test_ca);
        if (r >= 0 && c->network.mode == CONFIG_NETWORK_PROXY && !c->network.set_bytes_out)
                r = add(&lines, &n,
                        "%s: key 'bytes_out' in [network]: not set; the default %llu applies",
                        c->file, (unsigned long long)c->network.bytes_out);
        if (r >= 0 && c->network.mode == CONFIG_NETWORK_PROXY && !c->network.n_allow &&
            !c->n_injects)
                r = add(&lines, &n,
                        "%s: key 'mode' in [network]: 'proxy' with no allow entries and no "
                        "[inject] rules: nothing is reachable",
                        c->file);

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
                        r = add(&lines, &n,
                                "%s: key '%s' in [limits]: not set; the default %llu applies",
                                c->file, lim[i].key, (unsigned long long)lim[i].value);
                else if (lim[i].value > lim[i].large)
                        r = add(&lines, &n,
                                "%s: key '%s' in [limits]: %llu is very large (above %llu)",
                                c->file, lim[i].key, (unsigned long long)lim[i].value,
                                (unsigned long long)lim[i].large);
        }
        for (char **e = c->run.env; r >= 0 && e && *e; e++)
                for (size_t i = 0; i < ELEMENTSOF(secret_env_globs); i++)
                        if (fnmatch(secret_env_globs[i], *e, 0) == 0) {
                                r = add(&lines, &n,
                                        "%s: key 'env' in [run]: '%s' looks like a secret; "
                                        "use the broker instead",
                                        c->file, *e);
                                break;
                        }
        if (r < 0) {
                strv_free(lines);
                return r;
        }
        *ret_lines = lines;
        return (int)n;
}
