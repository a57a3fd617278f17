/* SPDX-License-Identifier: MIT */
/*
 * envname.c: see envname.h.
 */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "envname.h"
#include "util.h"

const char *const env_proxy_vars[6] = {
        "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "NO_PROXY", "no_proxy",
};

/* Names the sandbox owns: a value from outside would change what runs or where. */
static const char *const reserved_names[] = {
        "PATH",   "HOME", "USER", "LOGNAME",  "SHELL", "TMPDIR",         "PWD",
        "OLDPWD", "IFS",  "ENV",  "BASH_ENV", "PS4",   "PROMPT_COMMAND", "MAIL",
};

bool env_name_reserved(const char *name)
{
        if (startswith(name, "LD_") || startswith(name, "CLOISTER_") ||
            startswith(name, "BASH_FUNC_"))
                return true;
        for (size_t i = 0; i < ELEMENTSOF(reserved_names); i++)
                if (streq(name, reserved_names[i]))
                        return true;
        return false;
}

bool env_name_settable(const char *name, bool proxy)
{
        if (!*name || strlen(name) > 255 || env_name_reserved(name) ||
            strcasecmp(name, "all_proxy") == 0 || isdigit((unsigned char)name[0]))
                return false;
        for (const char *c = name; *c; c++)
                if (!isalnum((unsigned char)*c) && *c != '_')
                        return false;
        for (size_t i = 0; i < ELEMENTSOF(env_proxy_vars); i++)
                if (streq(name, env_proxy_vars[i]) ||
                    (proxy && strcasecmp(name, env_proxy_vars[i]) == 0))
                        return false;
        return true;
}
