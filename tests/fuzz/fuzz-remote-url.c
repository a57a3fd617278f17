/* SPDX-License-Identifier: MIT */
/*
 * fuzz-remote-url.c: the credential host `cloister check` takes from a git
 * remote's URL (blueprint_url_credential_host), for the `hosts` check.
 *
 * Any input: no crash, no leak; a host only for git's curl schemes, never
 * longer than the URL, and a host put back into a URL between user info
 * and a path comes out again unchanged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blueprint.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *url = strndup((const char *)data, size), *host = NULL, *again = NULL, *back = NULL;

        if (!url)
                return 0;
        if (blueprint_url_credential_host(url, &host) < 0)
                fuzz_fail("blueprint_url_credential_host failed");
        if (host) {
                if (strncmp(url, "http", 4) != 0 && strncmp(url, "ftp", 3) != 0)
                        fuzz_fail("host '%s' from a URL that is not http(s) or ftp(s)", host);
                if (strlen(host) > strlen(url) || strchr(host, '\n'))
                        fuzz_fail("host '%s' from '%s'", host, url);
                /* Without the bytes that end or escape it, a host reads back as itself. */
                if (!strpbrk(host, "/?#@%") &&
                    asprintf(&again, "https://user@%s/path?q#f", host) >= 0) {
                        if (blueprint_url_credential_host(again, &back) < 0 || !back ||
                            strcmp(back, host) != 0)
                                fuzz_fail("host '%s' reads back as '%s'", host,
                                          back ? back : "(null)");
                }
        }
        free(back);
        free(again);
        free(host);
        free(url);
        return 0;
}
