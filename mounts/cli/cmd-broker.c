/* SPDX-License-Identifier: MIT */
/*
 * cmd-broker.c: `cloister broker CONFIG...` runs the credential broker in the
 * foreground for one or more workspaces; `cloister broker rotate-key CONFIG`
 * replaces the signing key (old public keys keep verifying until the
 * tokens they signed expire) and tells a running broker to reload.
 */
#include <fcntl.h>
#include <getopt.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "broker.h"
#include "client.h"
#include "command.h"
#include "compose.h"
#include "config.h"
#include "keys.h"
#include "policy.h"
#include "lib/lifetime.h"
#include "cli-logsink.h"
#include "lib/logsink.h"
#include "lib/mkdir.h"
#include "lib/pidfile.h"
#include "lib/util.h"

static int rotate_key(int argc, char **argv)
{
        _cleanup_config_ struct config *c = NULL;
        _cleanup_free_ char *error = NULL, *admin = NULL;
        struct broker_policy *p = NULL;
        _cleanup_close_ int dirfd = -1;
        broker_keyring *kr = NULL;
        json_t *resp = NULL, *req;
        int64_t keep;
        int r;

        if (argc != 2)
                return command_fail(&command_broker, EXIT_USAGE,
                                    "usage: cloister broker rotate-key CONFIG");
        if (config_load(argv[1], &c, &error) < 0)
                return command_fail(&command_broker, EXIT_USAGE, "%s", error);
        if (!c->broker.policy)
                return command_fail(&command_broker, EXIT_USAGE, "%s: no [broker] policy", argv[1]);
        if (broker_policy_load(c->broker.policy, &p, &error) < 0)
                return command_fail(&command_broker, EXIT_USAGE, "%s", error);
        /* Keep retired public keys as long as the longest token may live, plus skew. */
        keep = broker_policy_max_ttl(p) + 60;
        broker_policy_free(p);
        dirfd = open(c->broker.dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dirfd < 0)
                return command_fail(&command_broker, 1, "%s: cannot open: %m", c->broker.dir);
        r = broker_keyring_rotate(dirfd, c->broker.dir, time(NULL), keep, &error);
        if (r < 0)
                return command_fail(&command_broker, 1, "%s", error ? error : strerror(-r));
        r = broker_keyring_load(dirfd, c->broker.dir, false, &kr, &error);
        if (r < 0)
                return command_fail(&command_broker, 1, "%s", error ? error : strerror(-r));
        printf("%s\n", broker_keyring_current(kr)->kid);
        broker_keyring_free(kr);

        if (asprintf(&admin, "%s/%s", c->broker.dir, BROKER_ADMIN_SOCKET) < 0)
                return command_fail(&command_broker, 1, "out of memory");
        if (access(admin, F_OK) < 0)
                return 0; /* no broker running: it loads the new key when it starts */
        free(error);
        error = NULL;
        req = json_pack("{s:s}", "op", "reload-keys");
        r = broker_client_request(admin, req, &resp, &error);
        json_decref(req);
        if (r < 0) {
                fprintf(stderr,
                        "cloister broker: warning: %s; a running broker signs with the old key "
                        "until restarted\n",
                        error ? error : strerror(-r));
                return 0;
        }
        if (!json_is_true(json_object_get(resp, "ok")))
                fprintf(stderr, "cloister broker: warning: broker did not reload: %s\n",
                        json_string_value(json_object_get(resp, "message")) ?: "?");
        json_decref(resp);
        return 0;
}

/*
 * `cloister broker public-key CONFIG [--json]`: the public keys that verify
 * this workspace's tokens, as PASERK (k4.public.…), one per line, the
 * current signing key last, as in <dir>/public.paserk; what a verifier on
 * another host configures to check tokens offline. Before the broker's
 * first start there is no key yet: this makes it, as the broker would.
 */
static int public_key(int argc, char **argv)
{
        _cleanup_config_ struct config *c = NULL;
        _cleanup_free_ char *error = NULL, *text = NULL, *public = NULL;
        struct broker_policy *p = NULL;
        _cleanup_close_ int dirfd = -1;
        broker_keyring *kr = NULL;
        const char *cfg = NULL;
        bool json = false;
        int64_t keep;
        int r;

        for (int i = 1; i < argc; i++) {
                if (streq(argv[i], "--json"))
                        json = true;
                else if (argv[i][0] == '-' || cfg)
                        return command_fail(&command_broker, EXIT_USAGE,
                                            "usage: cloister broker public-key CONFIG [--json]");
                else
                        cfg = argv[i];
        }
        if (!cfg)
                return command_fail(&command_broker, EXIT_USAGE,
                                    "usage: cloister broker public-key CONFIG [--json]");
        if (config_load(cfg, &c, &error) < 0)
                return command_fail(&command_broker, EXIT_USAGE, "%s", error);
        /* Without a policy the key signs only the log heads of [logs] stdout = json. */
        if (!c->broker.policy && !c->logs.stdout_json)
                return command_fail(&command_broker, EXIT_USAGE,
                                    "%s: no [broker] policy and no [logs] stdout = json: no key "
                                    "signs anything",
                                    cfg);
        keep = 60;
        if (c->broker.policy) {
                if (broker_policy_load(c->broker.policy, &p, &error) < 0)
                        return command_fail(&command_broker, EXIT_USAGE, "%s", error);
                keep = broker_policy_max_ttl(p) + 60;
                broker_policy_free(p);
        }
        r = mkdir_p(c->broker.dir, 0700, 0700);
        if (r < 0)
                return command_fail(&command_broker, 1, "%s: cannot create: %s", c->broker.dir,
                                    strerror(-r));
        dirfd = open(c->broker.dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dirfd < 0)
                return command_fail(&command_broker, 1, "%s: cannot open: %m", c->broker.dir);
        r = broker_keyring_load(dirfd, c->broker.dir, true, &kr, &error);
        if (r < 0)
                return command_fail(&command_broker, 1, "%s", error ? error : strerror(-r));
        /* A key made just now is published as the broker would; an existing
         * public file is the broker's and stays as it is. */
        if (faccessat(dirfd, BROKER_PUBLIC_FILE, F_OK, 0) < 0)
                (void)broker_keyring_publish(kr, dirfd, time(NULL), keep);
        broker_keyring_free(kr);
        kr = NULL;
        free(error);
        error = NULL;
        if (asprintf(&public, "%s/%s", c->broker.dir, BROKER_PUBLIC_FILE) < 0)
                return command_fail(&command_broker, 1, "out of memory");
        r = broker_keyring_load_public(public, &kr, &error);
        if (r < 0)
                return command_fail(&command_broker, 1, "%s", error ? error : strerror(-r));
        if (json) {
                json_t *keys = json_array(), *o;
                for (size_t i = 0; i < broker_keyring_count(kr); i++) {
                        const struct broker_key *k = broker_keyring_at(kr, i);
                        _cleanup_free_ char *paserk = NULL;
                        if (broker_key_paserk_public(k->pk, &paserk) < 0)
                                continue;
                        json_array_append_new(
                                keys, json_pack("{s:s,s:s}", "paserk", paserk, "kid", k->kid));
                }
                o = json_pack("{s:s,s:s,s:o}", "workspace", c->workspace.name, "public_file",
                              public, "keys", keys);
                r = o ? json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER) : -1;
                json_decref(o);
                putchar('\n');
        } else {
                r = broker_keyring_public_text(kr, &text);
                if (r == 0)
                        fputs(text, stdout);
        }
        broker_keyring_free(kr);
        if (r < 0 || fflush(stdout) != 0)
                return command_fail(&command_broker, 1, "cannot print the keys");
        return 0;
}

static void log_line(const char *line)
{
        fprintf(stderr, "cloister broker: %s\n", line);
}

static int broker_cmd_run(int argc, char **argv)
{
        struct config **cfgs = NULL;
        _cleanup_free_ char *error = NULL;
        broker *b = NULL;
        bool quiet = false;     /* no start and stop notes: `cloister run` starts us so */
        bool for_runs = false;  /* serve while runs of the workspace live (lib/lifetime.h) */
        bool sink_open = false; /* [logs] stdout = json: one sink, a key per workspace */
        int r, ret = 1, n = 0;

        if (sodium_init() < 0)
                return command_fail(&command_broker, 1, "libsodium failed to initialize");
        if (argc >= 2 && streq(argv[1], "rotate-key"))
                return rotate_key(argc - 1, argv + 1);
        if (argc >= 2 && streq(argv[1], "public-key"))
                return public_key(argc - 1, argv + 1);
        while (argc >= 2 && (streq(argv[1], "--quiet") || streq(argv[1], "-q") ||
                             streq(argv[1], "--for-runs"))) {
                if (streq(argv[1], "--for-runs"))
                        for_runs = true;
                else
                        quiet = true;
                argc--, argv++;
        }
        if (for_runs && argc != 2)
                return command_fail(&command_broker, EXIT_USAGE,
                                    "--for-runs serves one CONFIG, the runs' workspace");
        if (argc < 2 || argv[1][0] == '-') {
                if (argc >= 2 && (streq(argv[1], "--help") || streq(argv[1], "-h"))) {
                        command_usage(&command_broker);
                        return 0;
                }
                return command_fail(&command_broker, EXIT_USAGE,
                                    "usage: cloister broker [--quiet] [--for-runs] CONFIG... | "
                                    "rotate-key CONFIG | "
                                    "public-key CONFIG [--json]");
        }
        /* Fail closed: a broker that could dump its keys to disk does not start. */
        r = broker_harden_process();
        if (r < 0)
                return command_fail(&command_broker, 1,
                                    "cannot disable core dumps (RLIMIT_CORE, PR_SET_DUMPABLE): %s",
                                    strerror(-r));
        broker_json_wipe_on_free();
        cfgs = calloc((size_t)argc, sizeof(*cfgs));
        if (!cfgs || broker_new(&b) < 0)
                goto oom;
        for (int i = 1; i < argc; i++) {
                r = config_load(argv[i], &cfgs[n], &error);
                if (r < 0) {
                        ret = command_fail(&command_broker, EXIT_USAGE, "%s", error);
                        goto out;
                }
                n++;
                /* [logs] stdout = json: its audit lines also on stdout, each tagged
                 * with its own workspace (one sink for all of this broker's). */
                if (cfgs[n - 1]->logs.stdout_json &&
                    (r = sink_open ? cli_logsink_add(cfgs[n - 1], &error)
                                   : cli_logsink_open(cfgs[n - 1], &error)) < 0) {
                        ret = command_fail(&command_broker, 1, "%s", error ? error : strerror(-r));
                        goto out;
                }
                sink_open |= cfgs[n - 1]->logs.stdout_json;
                struct broker_workspace_options o;
                compose_broker_options(cfgs[n - 1], &o);
                r = broker_add_workspace(b, &o, &error);
                if (r < 0) {
                        ret = command_fail(&command_broker, r == -EINVAL ? EXIT_USAGE : 1, "%s",
                                           error ? error : strerror(-r));
                        goto out;
                }
                if (!quiet)
                        fprintf(stderr,
                                "cloister broker: serving workspace '%s' on %s (admin: %s/%s)\n",
                                cfgs[n - 1]->workspace.name, cfgs[n - 1]->broker.socket,
                                cfgs[n - 1]->broker.dir, BROKER_ADMIN_SOCKET);
        }
        broker_set_log(b, log_line);
        if (for_runs) {
                /* Started by a run: stop with the last one; the last run finds us
                 * by <state>/broker.for-runs (lib/pidfile.h). */
                _cleanup_close_ int state =
                        open(cfgs[0]->workspace.state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                int lt = lifetime_open(cfgs[0]->workspace.state);
                r = lt < 0      ? lt
                    : state < 0 ? negative_errno()
                                : pidfile_write(state, "broker.for-runs");
                if (r < 0) {
                        safe_close(lt);
                        ret = command_fail(&command_broker, 1,
                                           "%s: cannot set up serving for its runs: %s",
                                           cfgs[0]->workspace.state, strerror(-r));
                        goto out;
                }
                broker_set_lifetime(b, lt);
        }
        r = broker_run(b, &error);
        if (for_runs) { /* gone before the lock is (broker_free): a new run starts a new one */
                _cleanup_free_ char *pf = NULL;
                if (asprintf(&pf, "%s/broker.for-runs", cfgs[0]->workspace.state) >= 0)
                        (void)unlink(pf);
        }
        if (r < 0) {
                ret = command_fail(&command_broker, 1, "%s", error ? error : strerror(-r));
                goto out;
        }
        if (!quiet)
                fprintf(stderr,
                        "cloister broker: stopped; every token of its workspaces is revoked\n");
        ret = 0;
        goto out;
oom:
        ret = command_fail(&command_broker, 1, "out of memory");
out:
        broker_free(b); /* its last audit lines, then the chains' final heads */
        logsink_close();
        for (int i = 0; i < n; i++)
                config_free(cfgs[i]);
        free(cfgs);
        return ret;
}

const struct command command_broker = {
        .name = "broker",
        .run = broker_cmd_run,
};
