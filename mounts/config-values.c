/* SPDX-License-Identifier: MIT */
/*
 * config-values.c: parsers for the value types a config (or a broker
 * policy) may hold: booleans, sizes, durations and clean absolute paths.
 * Strict on purpose: "10 MB", "-1" or "1e9" are errors, not guesses.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "config.h"
#include "util.h"

int config_parse_bool(const char *v, bool *ret)
{
        static const char *const yes[] = {"true", "yes", "on", "1"};
        static const char *const no[] = {"false", "no", "off", "0"};

        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                if (strcasecmp(v, yes[i]) == 0) {
                        *ret = true;
                        return 0;
                }
                if (strcasecmp(v, no[i]) == 0) {
                        *ret = false;
                        return 0;
                }
        }
        return -EINVAL;
}

/* Digits, then an optional one-letter unit from units[] with its multiplier. */
static int parse_scaled(const char *v, const char *units, const uint64_t *mult, uint64_t *ret)
{
        uint64_t n = 0;
        const char *p = v;

        if (!isdigit((unsigned char)*p))
                return -EINVAL;
        for (; isdigit((unsigned char)*p); p++) {
                unsigned d = (unsigned)(*p - '0');
                if (n > (UINT64_MAX - d) / 10)
                        return -ERANGE;
                n = n * 10 + d;
        }
        if (*p) {
                const char *u = strchr(units, *p);
                if (!u || p[1] != '\0')
                        return -EINVAL;
                uint64_t m = mult[u - units];
                if (n && m > UINT64_MAX / n)
                        return -ERANGE;
                n *= m;
        }
        *ret = n;
        return 0;
}

int config_parse_size(const char *v, uint64_t *ret)
{
        static const uint64_t mult[] = {1, 1ULL << 10, 1ULL << 20, 1ULL << 30, 1ULL << 40};
        return parse_scaled(v, "BKMGT", mult, ret);
}

int config_parse_duration(const char *v, uint64_t *ret)
{
        static const uint64_t mult[] = {1, 60, 3600, 86400};
        return parse_scaled(v, "smhd", mult, ret);
}

bool config_path_is_clean_absolute(const char *p)
{
        size_t len = strlen(p);

        if (len == 0 || p[0] != '/' || len >= PATH_MAX)
                return false;
        if (len == 1)
                return true;
        if (p[len - 1] == '/')
                return false;
        for (const char *c = p; *c;) {
                const char *next;
                size_t n;

                c++; /* skip the '/' */
                next = strchrnul(c, '/');
                n = (size_t)(next - c);
                if (n == 0 || n > NAME_MAX)
                        return false;
                if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
                        return false;
                c = next;
        }
        for (const char *c = p; *c; c++)
                if (iscntrl((unsigned char)*c))
                        return false;
        return true;
}
