/* SPDX-License-Identifier: MIT */
/*
 * envname.h: which environment variables the sandbox owns, and so which a
 * config ([mirror] env) or a tool caller (cloister mcp's run_command env)
 * may not set. One rule for both, below mounts/ so that the config parser
 * and the sandbox agree.
 */
#pragma once

#include <stdbool.h>

/* Set by the sandbox in proxy mode: the first four name the proxy, the last two what bypasses it.
 */
extern const char *const env_proxy_vars[6];

/* PATH, HOME, USER, ... (the sandbox sets them), LD_*, CLOISTER_*, BASH_FUNC_*. */
bool env_name_reserved(const char *name);
/*
 * A name that may be set in the sandbox: [A-Za-z_][A-Za-z0-9_]*, at most 255
 * bytes, not reserved, not all_proxy, not a proxy variable (with proxy: in
 * any case of its letters, since clients read both).
 */
bool env_name_settable(const char *name, bool proxy);
