/* SPDX-License-Identifier: MIT */
/*
 * values.h: parsers for the value types that cloister's INI files hold:
 * the workspace config (mounts/), the broker policy (broker/) and the
 * egress rules. One definition each, so that "10M" or "/a/../b" means the
 * same in every file a user writes. Strict on purpose: "10 MB", "-1" or
 * "1e9" are errors, not guesses.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* "true/yes/on/1", "false/no/off/0" (any case). -EINVAL otherwise. */
int value_parse_bool(const char *v, bool *ret);
/* Decimal digits only. -EINVAL, or -ERANGE past UINT64_MAX. */
int value_parse_uint(const char *v, uint64_t *ret);
/* "512", "4K", "10M", "4G", "1T" (binary units, optional "B") → bytes. */
int value_parse_size(const char *v, uint64_t *ret);
/* "90", "90s", "15m", "2h", "1d" → seconds. */
int value_parse_duration(const char *v, uint64_t *ret);

/*
 * A name: 1..max of [A-Za-z0-9._-], not starting with '.' (nor with '-'
 * unless allow_dash_first). Workspace, scope, secret and mirror names.
 */
bool value_name_is_valid(const char *v, size_t max, bool allow_dash_first);
/* Absolute, normalized: no "//", no trailing "/", no "." or "..", no control bytes. */
bool value_path_is_clean_absolute(const char *p);
/* The same rules for a relative path: non-empty, no leading "/". */
bool value_path_is_clean_relative(const char *p);
