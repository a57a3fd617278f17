/* SPDX-License-Identifier: MIT */
/*
 * sandbox-env.c: the environment the agent's command starts with.
 *
 * It is built from nothing: PATH, HOME, USER, LOGNAME, SHELL, LANG, TMPDIR,
 * CLOISTER_WORKSPACE and, with a broker, CLOISTER_BROKER. A host variable
 * passes only if [run] env names it, and even then not if its name or value
 * looks like a credential: the broker is the one way credentials reach the
 * agent, so a token in the environment is always a mistake. Names that the
 * sandbox sets itself, and the dynamic loader's LD_* family, can't be
 * overridden from the host either.
 */
#include <ctype.h>
#include <errno.h>
#include <strings.h>

#include "config.h"
#include "sandbox-private.h"
#include "lib/util.h"

#define SANDBOX_PATH "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"

static const char *const secret_name_words[] = {
        "TOKEN", "SECRET", "PASSWORD", "PASSWD",  "PASS", "KEY",       "CREDENTIAL",
        "AUTH",  "COOKIE", "SESSION",  "PRIVATE", "CERT", "SIGNATURE", "SALT",
};

/* Prefixes of well-known credential formats. */
static const char *const secret_value_prefixes[] = {
        "ghp_",  "gho_",      "ghu_",       "ghs_",       "ghr_", "github_pat_", "glpat-",
        "xoxb-", "xoxp-",     "xoxa-",      "sk-",        "AKIA", "ASIA",        "AIza",
        "ya29.", "v4.local.", "v4.public.", "-----BEGIN", "eyJ",
};

/* Names the sandbox owns. */
static const char *const reserved_names[] = {
        "PATH",   "HOME", "USER", "LOGNAME",  "SHELL", "TMPDIR",         "PWD",
        "OLDPWD", "IFS",  "ENV",  "BASH_ENV", "PS4",   "PROMPT_COMMAND", "MAIL",
};

bool sandbox_env_is_secret(const char *name, const char *value)
{
        _cleanup_free_ char *upper = strdup(name);

        if (!upper)
                return true; /* fail closed */
        for (char *p = upper; *p; p++)
                *p = (char)toupper((unsigned char)*p);
        for (size_t i = 0; i < ELEMENTSOF(secret_name_words); i++)
                if (strstr(upper, secret_name_words[i]))
                        return true;
        if (value)
                for (size_t i = 0; i < ELEMENTSOF(secret_value_prefixes); i++)
                        if (startswith(value, secret_value_prefixes[i]))
                                return true;
        return false;
}

/* Set in proxy mode; the first four name the proxy, the last two what bypasses it. */
static const char *const proxy_vars[] = {
        "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "NO_PROXY", "no_proxy",
};

static bool env_is_reserved(const char *name)
{
        if (startswith(name, "LD_") || startswith(name, "CLOISTER_") ||
            startswith(name, "BASH_FUNC_"))
                return true;
        for (size_t i = 0; i < ELEMENTSOF(reserved_names); i++)
                if (streq(name, reserved_names[i]))
                        return true;
        return false;
}

bool sandbox_env_name_allowed(const char *name, bool proxy)
{
        if (!*name || strlen(name) > 255 || strchr(name, '=') || env_is_reserved(name) ||
            strcasecmp(name, "all_proxy") == 0)
                return false;
        for (const char *c = name; *c; c++)
                if (!isalnum((unsigned char)*c) && *c != '_')
                        return false;
        if (isdigit((unsigned char)name[0]))
                return false;
        for (size_t i = 0; i < ELEMENTSOF(proxy_vars); i++)
                if (streq(name, proxy_vars[i]) || (proxy && strcasecmp(name, proxy_vars[i]) == 0))
                        return false;
        return true;
}

static const char *env_lookup(char *const *env, const char *name)
{
        size_t l = strlen(name);

        for (char *const *e = env; e && *e; e++)
                if (strncmp(*e, name, l) == 0 && (*e)[l] == '=')
                        return *e + l + 1;
        return NULL;
}

int sandbox_env_build(const struct sandbox_options *o, char *const *host_env, char ***ret_env,
                      char ***ret_refused)
{
        const struct config *c = o->config;
        struct strv_builder env = {0}, refused = {0};
        const char *term;
        int r;

        /* With a broker, its clients are on PATH: `cloister token issue`, git's helper. */
        sandbox_strv_add(&env, o->broker_socket ? "PATH=" SANDBOX_CLIENT_DIR ":" SANDBOX_PATH
                                                : "PATH=" SANDBOX_PATH);
        sandbox_strv_addf(&env, "HOME=%s", c->home.path);
        sandbox_strv_addf(&env, "USER=%s", c->run.user);
        sandbox_strv_addf(&env, "LOGNAME=%s", c->run.user);
        sandbox_strv_add(&env,
                         access("/usr/bin/bash", X_OK) == 0 ? "SHELL=/bin/bash" : "SHELL=/bin/sh");
        sandbox_strv_add(&env, "TMPDIR=/tmp");
        sandbox_strv_addf(&env, "CLOISTER_WORKSPACE=%s", c->workspace.name);
        if (o->broker_socket)
                sandbox_strv_add(&env, "CLOISTER_BROKER=" SANDBOX_BROKER_SOCKET);
        /* Every client that honours a proxy variable goes through the proxy; nothing else is out
         * there. */
        for (size_t i = 0; o->proxy_socket && i < ELEMENTSOF(proxy_vars); i++)
                sandbox_strv_addf(&env, "%s=%s", proxy_vars[i],
                                  i >= 4 ? "localhost,127.0.0.1,::1" : SANDBOX_PROXY_URL);
        /* A terminal needs to know what it is talking to; TERM is no secret. */
        term = env_lookup(host_env, "TERM");
        if (o->interactive && term && !sandbox_env_is_secret("TERM", term))
                sandbox_strv_addf(&env, "TERM=%s", term);

        bool have_lang = false;
        for (char **n = c->run.env; *n; n++) {
                const char *v = env_lookup(host_env, *n);

                if (!v)
                        continue;
                if (o->interactive && streq(*n, "TERM"))
                        continue; /* set above */
                bool proxy_var = false;
                for (size_t i = 0; o->proxy_socket && i < ELEMENTSOF(proxy_vars); i++)
                        proxy_var |= streq(*n, proxy_vars[i]) || strcasecmp(*n, "all_proxy") == 0;
                if (proxy_var || env_is_reserved(*n) || sandbox_env_is_secret(*n, v)) {
                        sandbox_strv_add(&refused, *n);
                        continue;
                }
                if (streq(*n, "LANG"))
                        have_lang = true;
                sandbox_strv_addf(&env, "%s=%s", *n, v);
        }
        /* A tool caller's own (cloister mcp): validated there, checked again. */
        for (char *const *e = o->extra_env; e && *e; e++) {
                const char *eq = strchr(*e, '=');
                _cleanup_free_ char *name = eq ? strndup(*e, (size_t)(eq - *e)) : NULL;
                if (!name || !sandbox_env_name_allowed(name, o->proxy_socket != NULL) ||
                    env_lookup(env.v, name)) {
                        if (name)
                                sandbox_strv_add(&refused, name);
                        continue;
                }
                have_lang |= streq(name, "LANG");
                sandbox_strv_add(&env, *e);
        }
        if (!have_lang)
                sandbox_strv_add(&env, "LANG=C.UTF-8");

        r = sandbox_strv_finish(&env, ret_env);
        if (r < 0) {
                sandbox_strv_clear(&refused);
                return r;
        }
        r = sandbox_strv_finish(&refused, ret_refused);
        if (r < 0)
                strv_free(TAKE_PTR(*ret_env));
        return r;
}
