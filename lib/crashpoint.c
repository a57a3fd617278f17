/* SPDX-License-Identifier: MIT */
/*
 * crashpoint.c: see crashpoint.h.
 */
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "crashpoint.h"

void crashpoint(const char *op)
{
        static _Atomic unsigned count;
        const char *at = secure_getenv("CLOISTER_TEST_CRASH_AT"), *colon;
        size_t n = strlen(op);
        char *end;
        unsigned long want;

        if (!at || !(colon = strchr(at, ':')) || (size_t)(colon - at) != n ||
            strncmp(at, op, n) != 0)
                return;
        want = strtoul(colon + 1, &end, 10);
        if (*end || want == 0)
                return;
        if (atomic_fetch_add(&count, 1) + 1 == want)
                (void)raise(SIGKILL);
}
