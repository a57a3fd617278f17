/* SPDX-License-Identifier: MIT */
/*
 * cmd-token.c: `cloister token issue|verify|revoke|introspect`.
 *
 * `issue` is the one client agents need: inside the sandbox it talks to the
 * socket in $CLOISTER_BROKER and prints a token. `verify` is offline, with
 * the broker's public keys. `revoke` and `introspect` are online; with
 * --config they use the workspace's admin socket (outside the sandbox).
 */
#include <getopt.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "broker.h"
#include "client.h"
#include "command.h"
#include "config.h"
#include "keys.h"
#include "paseto.h"
#include "lib/quote.h"
#include "lib/util.h"
#include "verify.h"

#define FAIL(code, ...) command_fail(&command_token, code, __VA_ARGS__)

enum {
        OPT_TTL = 256,
        OPT_JSON,
        OPT_SOCKET,
        OPT_CONFIG,
        OPT_HOST,
        OPT_AUD,
        OPT_SCOPE,
        OPT_KEYS,
        OPT_WORKSPACE,
        OPT_SKEW,
        OPT_NOW,
};

struct args {
        const char *socket, *config, *host, *aud, *scope, *keys, *workspace;
        int64_t ttl, skew, now;
        bool json, have_now;
        int argc;
        char **argv; /* positional arguments */
};

static int int_arg(const char *s, int64_t min, int64_t *ret)
{
        char *end;
        long long v;

        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno || end == s || *end || v < min)
                return -EINVAL;
        *ret = v;
        return 0;
}

static int args_parse(int argc, char **argv, struct args *a)
{
        static const struct option opts[] = {
                {"ttl", required_argument, NULL, OPT_TTL},
                {"json", no_argument, NULL, OPT_JSON},
                {"socket", required_argument, NULL, OPT_SOCKET},
                {"config", required_argument, NULL, OPT_CONFIG},
                {"host", required_argument, NULL, OPT_HOST},
                {"aud", required_argument, NULL, OPT_AUD},
                {"scope", required_argument, NULL, OPT_SCOPE},
                {"keys", required_argument, NULL, OPT_KEYS},
                {"workspace", required_argument, NULL, OPT_WORKSPACE},
                {"skew", required_argument, NULL, OPT_SKEW},
                {"now", required_argument, NULL, OPT_NOW},
                {},
        };
        int opt;

        *a = (struct args){.skew = BROKER_SKEW_DEFAULT};
        optind = 1;
        opterr = 0;
        while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                switch (opt) {
                case OPT_TTL:
                        if (int_arg(optarg, 1, &a->ttl) < 0)
                                return FAIL(EXIT_USAGE,
                                            "--ttl: '%s' is not a positive number "
                                            "of seconds",
                                            optarg);
                        break;
                case OPT_SKEW:
                        if (int_arg(optarg, 0, &a->skew) < 0 || a->skew > 3600)
                                return FAIL(EXIT_USAGE, "--skew: '%s' is not 0..3600 seconds",
                                            optarg);
                        break;
                case OPT_NOW:
                        if (int_arg(optarg, 0, &a->now) < 0 &&
                            broker_time_parse(optarg, &a->now) < 0)
                                return FAIL(EXIT_USAGE,
                                            "--now: '%s' is neither Unix seconds "
                                            "nor an RFC 3339 time",
                                            optarg);
                        a->have_now = true;
                        break;
                case OPT_JSON:
                        a->json = true;
                        break;
                case OPT_SOCKET:
                        a->socket = optarg;
                        break;
                case OPT_CONFIG:
                        a->config = optarg;
                        break;
                case OPT_HOST:
                        a->host = optarg;
                        break;
                case OPT_AUD:
                        a->aud = optarg;
                        break;
                case OPT_SCOPE:
                        a->scope = optarg;
                        break;
                case OPT_KEYS:
                        a->keys = optarg;
                        break;
                case OPT_WORKSPACE:
                        a->workspace = optarg;
                        break;
                default:
                        return FAIL(EXIT_USAGE, "unknown option '%s'; see 'cloister help token'",
                                    argv[optind - 1]);
                }
        }
        a->argc = argc - optind;
        a->argv = argv + optind;
        return 0;
}

/* Which socket: --socket, else --config (admin socket if admin), else $CLOISTER_BROKER. */
static int socket_pick(const struct args *a, bool admin, char **ret)
{
        _cleanup_config_ struct config *c = NULL;
        _cleanup_free_ char *error = NULL;
        const char *env = broker_client_default_socket();

        if (a->socket)
                return (*ret = strdup(a->socket)) ? 0 : FAIL(1, "out of memory");
        if (a->config) {
                if (config_load(a->config, &c, &error) < 0)
                        return FAIL(EXIT_USAGE, "%s", error);
                if (admin ? asprintf(ret, "%s/%s", c->broker.dir, BROKER_ADMIN_SOCKET) < 0
                          : !(*ret = strdup(c->broker.socket)))
                        return FAIL(1, "out of memory");
                return 0;
        }
        if (env)
                return (*ret = strdup(env)) ? 0 : FAIL(1, "out of memory");
        return FAIL(EXIT_USAGE, "no broker: set CLOISTER_BROKER or give --socket or --config "
                                "(inside the sandbox it is " BROKER_SANDBOX_SOCKET ")");
}

/* Send req; print the broker's error and return 1 if it refused. */
static int call(const char *path, json_t *req, json_t **ret)
{
        _cleanup_free_ char *error = NULL;
        json_t *resp = NULL;
        int r;

        r = broker_client_request(path, req, &resp, &error);
        json_decref(req);
        if (r < 0)
                return FAIL(1, "%s", error ? error : strerror(-r));
        if (!json_is_true(json_object_get(resp, "ok"))) {
                FAIL(1, "refused (%s): %s",
                     json_string_value(json_object_get(resp, "error")) ?: "error",
                     json_string_value(json_object_get(resp, "message")) ?: "");
                json_decref(resp);
                return 1;
        }
        *ret = resp;
        return 0;
}

static int token_issue(struct args *a)
{
        _cleanup_free_ char *path = NULL;
        json_t *req, *resp = NULL;
        const char *note;
        int r;

        if (a->argc != (a->host ? 0 : 1))
                return FAIL(EXIT_USAGE, "usage: cloister token issue SCOPE [--ttl SECONDS] "
                                        "[--json] [--socket PATH | --config CONFIG]");
        r = socket_pick(a, false, &path);
        if (r)
                return r;
        req = json_pack("{s:s}", "op", "issue");
        if (!req)
                return FAIL(1, "out of memory");
        json_object_set_new(req, a->host ? "host" : "scope",
                            json_string(a->host ? a->host : a->argv[0]));
        if (a->ttl)
                json_object_set_new(req, "ttl", json_integer(a->ttl));
        r = call(path, req, &resp);
        if (r)
                return r;
        note = json_string_value(json_object_get(resp, "note"));
        if (note)
                fprintf(stderr, "cloister token: note: %s\n", note);
        if (a->json) {
                json_object_del(resp, "ok");
                char *s = json_dumps(resp, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
                if (s) {
                        printf("%s\n", s);
                        sodium_memzero(s, strlen(s)); /* it holds the token */
                }
                free(s);
        } else {
                printf("%s\n", json_string_value(json_object_get(resp, "token")));
        }
        json_decref(resp);
        return fflush(stdout) == 0 ? 0 : 1;
}

static void token_freep(char **p)
{
        sodium_free(*p); /* wipes; NULL is a no-op */
}
#define _cleanup_token_ __attribute__((cleanup(token_freep)))

/*
 * The token, in sodium_malloc'd memory that every exit path wipes; read
 * from stdin when the argument is "-" (keeps it out of argv). stdin is read
 * with read(2), not stdio, so no copy stays behind in a FILE buffer.
 */
static int token_arg(const char *arg, char **ret)
{
        char *buf = sodium_malloc(BROKER_PASETO_MAX_TOKEN + 2);
        size_t n = 0;

        if (!buf)
                return -ENOMEM;
        if (!streq(arg, "-")) {
                n = strlen(arg);
                if (n > BROKER_PASETO_MAX_TOKEN) {
                        sodium_free(buf);
                        return -E2BIG;
                }
                memcpy(buf, arg, n);
        } else {
                while (n < BROKER_PASETO_MAX_TOKEN + 1) {
                        ssize_t k = read(STDIN_FILENO, buf + n, BROKER_PASETO_MAX_TOKEN + 1 - n);
                        if (k < 0 && errno == EINTR)
                                continue;
                        if (k < 0) {
                                int r = negative_errno();
                                sodium_free(buf);
                                return r;
                        }
                        if (k == 0)
                                break;
                        n += (size_t)k;
                }
                buf[n] = '\0';
                n = strcspn(buf, "\r\n");
                if (n > BROKER_PASETO_MAX_TOKEN) {
                        sodium_free(buf);
                        return -E2BIG;
                }
        }
        buf[n] = '\0';
        *ret = buf;
        return 0;
}

static int token_arg_fail(int r)
{
        return r == -E2BIG ? FAIL(3, "token longer than %d bytes", BROKER_PASETO_MAX_TOKEN)
                           : FAIL(1, "cannot read the token: %s", strerror(-r));
}

static int token_verify(struct args *a)
{
        _cleanup_free_ char *error = NULL, *ws_owned = NULL, *path = NULL;
        _cleanup_token_ char *token = NULL;
        char reason[256];
        struct broker_verify_opts o = {.audience = a->aud, .scope = a->scope, .skew = a->skew};
        struct broker_claims claims = {0};
        broker_keyring *kr = NULL;
        int r;

        if (a->argc != 1)
                return FAIL(EXIT_USAGE, "usage: cloister token verify TOKEN|- [--aud A] "
                                        "[--scope S] [--keys FILE --workspace NAME | --config "
                                        "CONFIG | --socket PATH]");
        r = token_arg(a->argv[0], &token);
        if (r < 0)
                return token_arg_fail(r);
        if (a->keys) {
                if (!a->workspace)
                        return FAIL(EXIT_USAGE, "--keys needs --workspace (tokens are bound to "
                                                "their workspace)");
                if (broker_keyring_load_public(a->keys, &kr, &error) < 0)
                        return FAIL(EXIT_USAGE, "%s", error);
                o.workspace = a->workspace;
        } else if (a->config && !a->socket) {
                _cleanup_config_ struct config *c = NULL;
                _cleanup_free_ char *pub = NULL;

                if (config_load(a->config, &c, &error) < 0)
                        return FAIL(EXIT_USAGE, "%s", error);
                if (asprintf(&pub, "%s/%s", c->broker.dir, BROKER_PUBLIC_FILE) < 0 ||
                    !(ws_owned = strdup(c->workspace.name)))
                        return FAIL(1, "out of memory");
                if (broker_keyring_load_public(pub, &kr, &error) < 0)
                        return FAIL(1, "%s", error);
                o.workspace = a->workspace ? a->workspace : ws_owned;
        } else {
                json_t *resp = NULL;

                r = socket_pick(a, false, &path);
                if (r)
                        return r;
                r = call(path, json_pack("{s:s}", "op", "pubkey"), &resp);
                if (r)
                        return r;
                _cleanup_free_ char *text = NULL;
                size_t tl = 0, i;
                json_t *k;
                FILE *f = open_memstream(&text, &tl);
                if (!f)
                        return FAIL(1, "out of memory");
                json_array_foreach (json_object_get(resp, "keys"), i, k)
                        fprintf(f, "%s\n", json_string_value(k) ?: "");
                fclose(f);
                if (!text || broker_keyring_parse_public(text, &kr, &error) < 0 ||
                    !(ws_owned = strdup(json_string_value(json_object_get(resp, "workspace"))
                                                ?: ""))) {
                        json_decref(resp);
                        return FAIL(1, "bad pubkey response: %s", error ? error : "?");
                }
                json_decref(resp);
                o.workspace = a->workspace ? a->workspace : ws_owned;
        }
        o.now = a->have_now ? a->now : (int64_t)time(NULL);
        r = broker_token_verify(kr, token, &o, &claims, reason, sizeof(reason));
        broker_keyring_free(kr);
        if (r < 0)
                return FAIL(1, "%s", strerror(-r));
        if (a->json) {
                json_t *j =
                        json_pack("{s:b, s:i, s:s}", "valid", r == 0, "code", r, "reason", reason);
                if (j && r == 0)
                        json_object_update_new(
                                j,
                                json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I}", "iss",
                                          claims.iss, "sub", claims.sub, "aud", claims.aud, "scope",
                                          claims.scope, "jti", claims.jti, "kid", claims.kid, "iat",
                                          (json_int_t)claims.iat, "nbf", (json_int_t)claims.nbf,
                                          "exp", (json_int_t)claims.exp));
                char *s = j ? json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_ENSURE_ASCII)
                            : NULL;
                if (s)
                        printf("%s\n", s);
                free(s);
                json_decref(j);
        } else if (r == 0) {
                _cleanup_free_ char *line = NULL;

                if (asprintf(&line,
                             "valid: scope %s, audience %s, workspace %s, jti %s, expires %lld",
                             claims.scope, claims.aud, claims.sub, claims.jti,
                             (long long)claims.exp) < 0)
                        line = NULL;
                quote_fputs(stdout, line ? line : "valid", QUOTE_UTF8 | QUOTE_BARE);
                putchar('\n');
        }
        broker_claims_done(&claims);
        if (r != 0) {
                /* The reason may quote the token's unverified footer (its kid). */
                fputs("cloister token: invalid: ", stderr);
                quote_fputs(stderr, reason, QUOTE_UTF8 | QUOTE_BARE);
                fputc('\n', stderr);
        }
        return r;
}

static int token_revoke(struct args *a)
{
        _cleanup_free_ char *path = NULL;
        json_t *req, *resp = NULL;
        int r;

        if ((a->workspace ? 0 : 1) != a->argc)
                return FAIL(EXIT_USAGE, "usage: cloister token revoke JTI|--workspace NAME "
                                        "[--config CONFIG | --socket PATH]");
        r = socket_pick(a, true, &path);
        if (r)
                return r;
        req = a->workspace ? json_pack("{s:s, s:s}", "op", "revoke", "workspace", a->workspace)
                           : json_pack("{s:s, s:s}", "op", "revoke", "jti", a->argv[0]);
        r = call(path, req, &resp);
        if (r)
                return r;
        printf("revoked %lld token(s)\n",
               (long long)json_integer_value(json_object_get(resp, "revoked")));
        if (!json_is_true(json_object_get(resp, "audited")))
                fprintf(stderr, "cloister token: warning: the revocation could not be audited\n");
        json_decref(resp);
        return 0;
}

static int token_introspect(struct args *a)
{
        _cleanup_free_ char *path = NULL;
        _cleanup_token_ char *token = NULL;
        json_t *resp = NULL;
        char *s;
        int r;

        if (a->argc != 1)
                return FAIL(EXIT_USAGE, "usage: cloister token introspect TOKEN|- [--config "
                                        "CONFIG | --socket PATH]");
        r = socket_pick(a, true, &path);
        if (r)
                return r;
        r = token_arg(a->argv[0], &token);
        if (r < 0)
                return token_arg_fail(r);
        r = call(path, json_pack("{s:s, s:s}", "op", "introspect", "token", token), &resp);
        if (r)
                return r;
        json_object_del(resp, "ok");
        s = json_dumps(resp, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
        if (s)
                printf("%s\n", s);
        free(s);
        r = json_is_true(json_object_get(resp, "active")) ? 0 : 1;
        json_decref(resp);
        return r;
}

static int token_run(int argc, char **argv)
{
        struct args a;
        int r;

        if (argc < 2)
                return FAIL(EXIT_USAGE, "usage: cloister token issue|verify|revoke|introspect "
                                        "...; see 'cloister help token'");
        if (streq(argv[1], "--help") || streq(argv[1], "-h") || streq(argv[1], "help")) {
                command_usage(&command_token);
                return 0;
        }
        if (sodium_init() < 0)
                return FAIL(1, "libsodium failed to initialize");
        /* Tokens pass through this process: keep them out of core dumps, or refuse. */
        if (broker_harden_process() < 0)
                return FAIL(1, "cannot disable core dumps: %m");
        broker_json_wipe_on_free(); /* responses carry tokens */
        r = args_parse(argc - 1, argv + 1, &a);
        if (r)
                return r;
        if (streq(argv[1], "issue"))
                return token_issue(&a);
        if (streq(argv[1], "verify"))
                return token_verify(&a);
        if (streq(argv[1], "revoke"))
                return token_revoke(&a);
        if (streq(argv[1], "introspect"))
                return token_introspect(&a);
        return FAIL(EXIT_USAGE,
                    "unknown subcommand '%s' (expected issue, verify, revoke or "
                    "introspect)",
                    argv[1]);
}

const struct command command_token = {
        .name = "token",
        .run = token_run,
};
