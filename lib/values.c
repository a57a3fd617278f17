/* SPDX-License-Identifier: MIT */
/*
 * values.c: the value types of cloister's INI files (see values.h).
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "lib/util.h"
#include "values.h"

int value_parse_bool(const char *v, bool *ret)
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
                const char *u = units ? strchr(units, *p) : NULL;
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

int value_parse_uint(const char *v, uint64_t *ret)
{
        return parse_scaled(v, NULL, NULL, ret);
}

int value_parse_size(const char *v, uint64_t *ret)
{
        static const uint64_t mult[] = {1, 1ULL << 10, 1ULL << 20, 1ULL << 30, 1ULL << 40};
        return parse_scaled(v, "BKMGT", mult, ret);
}

int value_parse_duration(const char *v, uint64_t *ret)
{
        static const uint64_t mult[] = {1, 60, 3600, 86400};
        return parse_scaled(v, "smhd", mult, ret);
}

bool value_name_is_valid(const char *v, size_t max, bool allow_dash_first)
{
        size_t n = strlen(v);

        if (n == 0 || n > max || v[0] == '.' || (v[0] == '-' && !allow_dash_first))
                return false;
        for (const char *c = v; *c; c++)
                if (!isalnum((unsigned char)*c) && !strchr("._-", *c))
                        return false;
        return true;
}

bool value_path_is_clean_absolute(const char *p)
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

bool value_path_is_clean_relative(const char *p)
{
        char buf[PATH_MAX];
        size_t n = strlen(p);

        if (n == 0 || p[0] == '/' || n + 2 > sizeof(buf))
                return false;
        buf[0] = '/';
        memcpy(buf + 1, p, n + 1);
        return value_path_is_clean_absolute(buf);
}
