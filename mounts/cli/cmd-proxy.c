/* SPDX-License-Identifier: MIT */
/*
 * cmd-proxy.c: `cloister proxy [--listen ADDR:PORT] CONFIG` runs the egress
 * proxy of one workspace in the foreground: `cloister run` starts it for a
 * [network] mode = proxy workspace and hands it each sandbox's listening
 * socket; run alone, it also serves a loopback TCP port on the host with
 * --listen (for debugging and tests).
 */
#include <fcntl.h>
#include <getopt.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "broker.h"
#include "command.h"
#include "compose.h"
#include "config.h"
#include "lib/lifetime.h"
#include "cli-logsink.h"
#include "lib/logsink.h"
#include "lib/pidfile.h"
#include "lib/util.h"
#include "proxy/proxy.h"

static void log_line(const char *line)
{
        fprintf(stderr, "cloister proxy: %s\n", line);
}

static int proxy_cmd_run(int argc, char **argv)
{
        static const struct option opts[] = {
                {"listen", required_argument, NULL, 'l'},
                {"quiet", no_argument, NULL, 'q'},
                {"for-runs", no_argument, NULL, 'R'},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        _cleanup_config_ struct config *c = NULL;
        _cleanup_free_ char *error = NULL, *control = NULL, *bound = NULL, *pidfile = NULL;
        const char *listen = NULL;
        bool quiet = false;    /* no start note: `cloister run` starts us so */
        bool for_runs = false; /* serve while runs of the workspace live (lib/lifetime.h) */
        struct proxy_options o;
        proxy *px = NULL;
        int opt, r;

        optind = 1;
        while ((opt = getopt_long(argc, argv, "hq", opts, NULL)) >= 0) {
                switch (opt) {
                case 'l':
                        listen = optarg;
                        break;
                case 'q':
                        quiet = true;
                        break;
                case 'R':
                        for_runs = true;
                        break;
                case 'h':
                        fputs(command_proxy.usage, stdout);
                        return 0;
                default:
                        return command_fail(&command_proxy, EXIT_USAGE,
                                            "unknown option; see 'cloister help proxy'");
                }
        }
        if (optind != argc - 1)
                return command_fail(&command_proxy, EXIT_USAGE,
                                    "expected one CONFIG; see 'cloister help proxy'");
        if (sodium_init() < 0)
                return command_fail(&command_proxy, 1, "libsodium failed to initialize");
        /* Fail closed: tokens and injected secrets pass through this process. */
        r = broker_harden_process();
        if (r < 0)
                return command_fail(&command_proxy, 1,
                                    "cannot disable core dumps (RLIMIT_CORE, PR_SET_DUMPABLE): %s",
                                    strerror(-r));
        r = proxy_wipe_allocations();
        if (r < 0)
                return command_fail(&command_proxy, 1,
                                    "cannot make OpenSSL and libevent wipe what they free");
        broker_json_wipe_on_free();
        r = config_load(argv[optind], &c, &error);
        if (r < 0)
                return command_fail(&command_proxy, EXIT_USAGE, "%s", error);
        if (c->network.mode != CONFIG_NETWORK_PROXY)
                return command_fail(&command_proxy, EXIT_USAGE,
                                    "%s: [network] mode is not 'proxy': this workspace has no "
                                    "egress proxy",
                                    c->file);
        if ((r = cli_logsink_open(c, &error)) < 0)
                return command_fail(&command_proxy, 1, "%s", error ? error : strerror(-r));
        if (compose_proxy_options(c, &o, &control) < 0)
                return command_fail(&command_proxy, 1, "out of memory");
        r = proxy_new(&o, &px, &error);
        if (r < 0)
                return command_fail(&command_proxy, 1, "%s", error ? error : strerror(-r));
        proxy_set_log(px, log_line);
        if (listen) {
                free(error);
                error = NULL;
                r = proxy_listen_tcp(px, listen, &bound, &error);
                if (r < 0) {
                        proxy_free(px);
                        return command_fail(&command_proxy, r == -EINVAL ? EXIT_USAGE : 1, "%s",
                                            error ? error : strerror(-r));
                }
                /* The address, alone on stdout, for whoever started us. */
                printf("%s\n", bound);
                fflush(stdout);
        }
        if (for_runs) {
                /* Started by a run: stop with the last one, which finds us by
                 * <state>/proxy.for-runs (lib/pidfile.h). */
                _cleanup_close_ int state =
                        open(c->workspace.state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                int lt = lifetime_open(c->workspace.state);
                r = lt < 0      ? lt
                    : state < 0 ? negative_errno()
                                : pidfile_write(state, "proxy.for-runs");
                if (r < 0) {
                        safe_close(lt);
                        proxy_free(px);
                        return command_fail(&command_proxy, 1,
                                            "%s: cannot set up serving for its runs: %s",
                                            c->workspace.state, strerror(-r));
                }
                proxy_set_lifetime(px, lt);
        }
        /* <state>/proxy.pid: which process to signal, for people and tests. */
        if (asprintf(&pidfile, "%s/proxy.pid", c->workspace.state) >= 0) {
                _cleanup_fclose_ FILE *pf = fopen(pidfile, "we");
                if (pf)
                        fprintf(pf, "%d\n", (int)getpid());
        }
        if (!quiet)
                fprintf(stderr, "cloister proxy: serving workspace '%s' (control: %s%s%s)\n",
                        c->workspace.name, control, bound ? ", listening on " : "",
                        bound ? bound : "");
        free(error);
        error = NULL;
        r = proxy_run(px, &error);
        if (for_runs) { /* gone before the lock is (proxy_free): a new run starts a new one */
                _cleanup_free_ char *pf = NULL;
                if (asprintf(&pf, "%s/proxy.for-runs", c->workspace.state) >= 0)
                        (void)unlink(pf);
        }
        proxy_free(px);
        logsink_close(); /* the net chain's final head, after its last line */
        if (pidfile)
                unlink(pidfile);
        if (r < 0)
                return command_fail(&command_proxy, 1, "%s", error ? error : strerror(-r));
        return 0;
}

const struct command command_proxy = {
        .name = "proxy",
        .summary = "run the egress proxy of a workspace",
        .usage = "usage: cloister proxy [--listen ADDR:PORT] [--quiet] [--for-runs] CONFIG\n"
                 "\n"
                 "Serves the workspace's [network] allow list and [inject] rules until\n"
                 "SIGTERM or SIGINT. `cloister run` starts it (mode = proxy) and hands it\n"
                 "each sandbox's listening socket on <state>/proxy.sock. Every request and\n"
                 "tunnel is a line in <[broker] dir>/net.jsonl (cloister log --net).\n"
                 "\n"
                 "  --listen ADDR:PORT  also listen on the host, on a loopback address\n"
                 "                      (port 0: any free port; the address is printed)\n"
                 "  --quiet             no note on stderr when it starts\n",
        .run = proxy_cmd_run,
};
