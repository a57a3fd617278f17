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
#include "proxy/proxy.h"

static int audit_run(int argc, char **argv)
{
        _cleanup_config_ struct config *c = NULL;
        _cleanup_free_ char *error = NULL, *path = NULL, *reason = NULL, *net = NULL;
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
                /* The egress proxy's log is the same kind of chain. */
                if (asprintf(&net, "%s/%s", c->broker.dir, PROXY_AUDIT_FILE) < 0)
                        net = NULL;
                if (!net)
                        return command_fail(&command_audit, 1, "out of memory");
        } else {
                return command_fail(&command_audit, EXIT_USAGE,
                                    "usage: cloister audit verify CONFIG|--file PATH");
        }
        if (!path)
                return command_fail(&command_audit, 1, "out of memory");
        if (sodium_init() < 0)
                return command_fail(&command_audit, 1, "libsodium failed to initialize");
        int ret = 0;
        for (int i = 0; i < 2; i++) {
                const char *p = i == 0 ? path : net;

                if (!p || (i == 1 && access(p, F_OK) < 0))
                        continue; /* no proxy has run: no net log */
                free(reason);
                reason = NULL;
                r = broker_audit_verify(p, &lines, &line, &reason);
                if (r == -EBADMSG)
                        ret = command_fail(&command_audit, 1, "%s: %s", p,
                                           reason ? reason : "tampered");
                else if (r < 0)
                        ret = command_fail(&command_audit, 1, "%s: cannot read: %s", p,
                                           strerror(-r));
                else
                        printf("%s: %u entries, chain intact\n", p, lines);
        }
        return ret;
}

const struct command command_audit = {
        .name = "audit",
        .run = audit_run,
};
