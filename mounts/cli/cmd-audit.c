/* SPDX-License-Identifier: MIT */
/*
 * cmd-audit.c: `cloister audit verify CONFIG|--file PATH` checks the broker's
 * hash-chained audit log and names the first edited, deleted or reordered
 * line.
 */
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "audit.h"
#include "command.h"
#include "config.h"
#include "lib/util.h"

static int audit_run(int argc, char **argv)
{
        _cleanup_config_ struct config *c = NULL;
        _cleanup_free_ char *error = NULL, *path = NULL, *reason = NULL;
        unsigned lines = 0, line = 0;
        int r;

        if (argc >= 2 && (streq(argv[1], "--help") || streq(argv[1], "-h"))) {
                command_usage(&command_audit);
                return 0;
        }
        if (argc == 4 && streq(argv[1], "verify") && streq(argv[2], "--file")) {
                path = strdup(argv[3]);
        } else if (argc == 3 && streq(argv[1], "verify")) {
                if (config_load(argv[2], &c, &error) < 0)
                        return command_fail(&command_audit, EXIT_USAGE, "%s", error);
                if (asprintf(&path, "%s/%s", c->broker.dir, BROKER_AUDIT_FILE) < 0)
                        path = NULL;
        } else {
                return command_fail(&command_audit, EXIT_USAGE,
                                    "usage: cloister audit verify CONFIG|--file PATH");
        }
        if (!path)
                return command_fail(&command_audit, 1, "out of memory");
        if (sodium_init() < 0)
                return command_fail(&command_audit, 1, "libsodium failed to initialize");
        r = broker_audit_verify(path, &lines, &line, &reason);
        if (r == -EBADMSG)
                return command_fail(&command_audit, 1, "%s: %s", path,
                                    reason ? reason : "tampered");
        if (r < 0)
                return command_fail(&command_audit, 1, "%s: cannot read: %s", path, strerror(-r));
        printf("%s: %u entries, chain intact\n", path, lines);
        return 0;
}

const struct command command_audit = {
        .name = "audit",
        .run = audit_run,
};
