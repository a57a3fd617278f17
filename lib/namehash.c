/* SPDX-License-Identifier: MIT */
/* namehash.c: see namehash.h. */
#include <stdint.h>
#include <stdio.h>

#include "namehash.h"
#include "util.h"

void namehash(const char *a, const char *b, const char *c, char out[static NAMEHASH_LEN])
{
        uint64_t h[2] = {0xcbf29ce484222325ULL, 0x84222325cbf29ce4ULL};
        const char *parts[] = {a, b, c};

        for (size_t i = 0; i < ELEMENTSOF(parts); i++)
                for (const unsigned char *p = (const unsigned char *)parts[i];; p++) {
                        for (size_t l = 0; l < 2; l++) {
                                h[l] ^= *p;
                                h[l] *= 0x100000001b3ULL;
                        }
                        h[1] = (h[1] << 7) | (h[1] >> 57); /* the lanes apart */
                        if (!*p)
                                break;
                }
        snprintf(out, NAMEHASH_LEN, "%016llx%016llx", (unsigned long long)h[0],
                 (unsigned long long)h[1]);
}
