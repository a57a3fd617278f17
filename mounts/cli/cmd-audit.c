/* SPDX-License-Identifier: MIT */
/*
 * cmd-audit.c: `cloister audit verify CONFIG|--file PATH` checks the broker's
 * hash-chained audit log, the egress proxy's and the run record
 * (<state>/runs.jsonl), and names the first edited, deleted or reordered line.
 *
 * With CONFIG the broker's log may be absent only when the workspace has no
 * broker ([broker] policy unset: a proxy-only workspace), and the proxy's
 * when no proxy has run; either only if its head is absent too: a log is
 * made with its head, so a head without its log is a deleted log. At least
 * one log must be there.
 */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "command.h"
#include "config.h"
#include "operations.h"
#include "lib/util.h"
#include "proxy/proxy.h"

static int audit_run(int argc, char **argv)
{
        _cleanup_config_ struct config *c = NULL;
        _cleanup_free_ char *error = NULL, *path = NULL, *reason = NULL, *net = NULL, *runs = NULL;
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
                /* And so is the run record, in the state directory. */
                if (asprintf(&runs, "%s/%s", c->workspace.state, OPS_RUNLOG_FILE) < 0)
                        runs = NULL;
                if (!net || !runs)
                        return command_fail(&command_audit, 1, "out of memory");
        } else {
                return command_fail(&command_audit, EXIT_USAGE,
                                    "usage: cloister audit verify CONFIG|--file PATH");
        }
        if (!path)
                return command_fail(&command_audit, 1, "out of memory");
        if (sodium_init() < 0)
                return command_fail(&command_audit, 1, "libsodium failed to initialize");
        int ret = 0, checked = 0;
        for (int i = 0; i < 3; i++) {
                const char *p = i == 0 ? path : i == 1 ? net : runs;
                _cleanup_free_ char *head = NULL;

                if (!p)
                        continue;
                /* A workspace with a broker has its log: absent, it fails below. */
                if (c && (i >= 1 || !c->broker.policy) && access(p, F_OK) < 0 && errno == ENOENT) {
                        /* No log: fine if it was never made, which its head says. */
                        if (asprintf(&head, "%s/%s", i == 2 ? c->workspace.state : c->broker.dir,
                                     i == 0   ? BROKER_AUDIT_HEAD
                                     : i == 1 ? PROXY_AUDIT_HEAD
                                              : OPS_RUNLOG_HEAD) < 0)
                                return command_fail(&command_audit, 1, "out of memory");
                        if (access(head, F_OK) == 0) {
                                ret = command_fail(&command_audit, 1,
                                                   "%s: missing, but its head %s is there: the "
                                                   "log was deleted",
                                                   p, head);
                                continue;
                        }
                        printf("%s: none (%s), nothing to check\n", p,
                               i == 0   ? "the workspace has no broker"
                               : i == 1 ? "no proxy has run"
                                        : "nothing has run");
                        continue;
                }
                free(reason);
                reason = NULL;
                r = broker_audit_verify(p, &lines, &line, &reason);
                checked++;
                if (r == -EBADMSG)
                        ret = command_fail(&command_audit, 1, "%s: %s", p,
                                           reason ? reason : "tampered");
                else if (r < 0)
                        ret = command_fail(&command_audit, 1, "%s: cannot read: %s", p,
                                           strerror(-r));
                else
                        printf("%s: %u entries, chain intact\n", p, lines);
        }
        /* The run record alone is no audit log: the broker's or the proxy's must be there. */
        if (checked == (runs && access(runs, F_OK) == 0) && ret == 0)
                ret = command_fail(&command_audit, 1,
                                   "no audit log in %s: neither the broker nor the proxy has run "
                                   "for this workspace",
                                   c->broker.dir);
        return ret;
}

const struct command command_audit = {
        .name = "audit",
        .run = audit_run,
};
