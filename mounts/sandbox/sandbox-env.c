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
 *
 * None of it is the environment of bubblewrap, which runs on the host (as
 * root, or as the agent's host uid before its sandbox exists): bwrap gets
 * a fixed one (sandbox.c), and this one travels in a sealed memfd that the
 * sandbox's first program, cloister-exec, reads and makes the command's
 * (or, without that program, bwrap's --args reads as --clearenv and
 * --setenv). So glibc's variables (GLIBC_TUNABLES, GCONV_PATH,
 * MALLOC_CHECK_, RES_OPTIONS, TMPDIR, ...) that a tool caller may set for
 * the command never reach a host process, and no value shows in bwrap's
 * command line, which every host user can read.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <strings.h>
#include <sys/mman.h>

#include "config.h"
#include "sandbox-private.h"
#include "lib/envname.h"
#include "lib/readall.h"
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

bool sandbox_env_name_allowed(const char *name, bool proxy)
{
        return env_name_settable(name, proxy);
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

        /*
         * With a broker, its clients are on PATH: `cloister token issue`,
         * git's helper. Then the mirrors' bin folders ([mirror] bin: a
         * toolchain from the user's home, ~/.cargo/bin say), in the
         * config's order, before the system's, as the user's own PATH has
         * them.
         */
        {
                _cleanup_free_ char *path = NULL;
                size_t len = 0;
                FILE *f = open_memstream(&path, &len);

                if (!f)
                        return -ENOMEM;
                fputs("PATH=", f);
                if (o->broker_socket)
                        fputs(SANDBOX_CLIENT_DIR ":", f);
                for (size_t i = 0; i < c->n_mirrors; i++)
                        if (c->mirrors[i].bin)
                                fprintf(f, "%s%s%s:", c->mirrors[i].path,
                                        streq(c->mirrors[i].bin, ".") ? "" : "/",
                                        streq(c->mirrors[i].bin, ".") ? "" : c->mirrors[i].bin);
                fputs(SANDBOX_PATH, f);
                if (fclose(f) != 0)
                        return -ENOMEM;
                sandbox_strv_add(&env, path);
        }
        /* [mirror] env: where a toolchain finds itself (RUSTUP_HOME, ...). */
        for (size_t i = 0; i < c->n_mirrors; i++)
                if (c->mirrors[i].env && env_name_settable(c->mirrors[i].env, o->proxy_socket))
                        sandbox_strv_addf(&env, "%s=%s", c->mirrors[i].env, c->mirrors[i].path);
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
        for (size_t i = 0; o->proxy_socket && i < ELEMENTSOF(env_proxy_vars); i++)
                sandbox_strv_addf(&env, "%s=%s", env_proxy_vars[i],
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
                for (size_t i = 0; o->proxy_socket && i < ELEMENTSOF(env_proxy_vars); i++)
                        proxy_var |=
                                streq(*n, env_proxy_vars[i]) || strcasecmp(*n, "all_proxy") == 0;
                if (proxy_var || env_name_reserved(*n) || sandbox_env_is_secret(*n, v)) {
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

int sandbox_env_memfd(char *const *env, bool as_args, int *ret_fd)
{
        _cleanup_close_ int fd = memfd_create("cloister-env", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        int r = 0;

        if (fd < 0)
                return negative_errno();
        if (as_args)
                r = fd_write_whole(fd, "--clearenv", sizeof("--clearenv"));
        for (char *const *e = env; r >= 0 && e && *e; e++) {
                const char *eq = strchr(*e, '=');

                if (!eq || eq == *e)
                        return -EINVAL; /* sandbox_env_build() makes none such */
                if (!as_args) {
                        r = fd_write_whole(fd, *e, strlen(*e) + 1);
                        continue;
                }
                /* --setenv NAME VALUE, each NUL-terminated */
                r = fd_write_whole(fd, "--setenv", sizeof("--setenv"));
                if (r >= 0)
                        r = fd_write_whole(fd, *e, (size_t)(eq - *e));
                if (r >= 0)
                        r = fd_write_whole(fd, "", 1);
                if (r >= 0)
                        r = fd_write_whole(fd, eq + 1, strlen(eq + 1) + 1);
        }
        if (r < 0)
                return r;
        /* Sealed: the content is what was built, whoever holds the fd later. */
        if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0 ||
            lseek(fd, 0, SEEK_SET) < 0)
                return negative_errno();
        *ret_fd = TAKE_FD(fd);
        return 0;
}
