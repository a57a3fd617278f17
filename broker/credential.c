/* SPDX-License-Identifier: MIT */
/*
 * credential.c: git-credential-cloister, a git credential helper backed by
 * the broker (gitcredentials(7), "custom helpers").
 *
 *     git config credential.helper /path/to/git-credential-cloister
 *     git config credential.https://host.example.useHttpPath false
 *
 * `get` asks the broker on $CLOISTER_BROKER (or --socket) for a token for
 * the request's host (or --scope SCOPE) and answers username, password (the
 * short-lived token) and password_expiry_utc, so git drops it when it
 * expires. When the broker refuses or cannot be reached it answers quit=1:
 * git must not fall back to other helpers that may hold real credentials.
 * `store` has nothing to keep: tokens are never stored. `erase` (git says
 * the server rejected the password) revokes the token, if it is one of ours.
 */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "broker.h"
#include "client.h"
#include "paseto.h"
#include "lib/util.h"

#define ATTR_MAX 4096

static void usage(void)
{
        fprintf(stderr, "usage: git-credential-cloister [--socket PATH] [--scope SCOPE] "
                        "get|store|erase\n");
}

/* The jti of a v4.public token, read without verifying: the broker checks. */
static char *token_jti(const char *token)
{
        const char *body = startswith(token, BROKER_PASETO_PUBLIC_HEADER), *dot;
        unsigned char *raw = NULL;
        size_t len = 0;
        json_t *claims, *jti;
        char *ret = NULL;

        if (!body)
                return NULL;
        dot = strchr(body, '.');
        if (broker_b64_decode(body, dot ? (size_t)(dot - body) : strlen(body), &raw, &len) < 0)
                return NULL;
        if (len > 64) {
                claims = json_loadb((char *)raw, len - 64, 0, NULL);
                jti = json_object_get(claims, "jti");
                if (json_is_string(jti))
                        ret = strdup(json_string_value(jti));
                json_decref(claims);
        }
        free(raw);
        return ret;
}

/*
 * Read git's key=value lines up to a blank line or EOF; keep host and
 * password. A line longer than ATTR_MAX is skipped whole: read in pieces,
 * its tail would parse as a line of its own, and a URL path the agent
 * chose could then smuggle in "host=..." and get another host's token.
 */
static int attrs_read(char **ret_host, char **ret_jti)
{
        char line[ATTR_MAX];
        char *host = NULL;
        bool skipping = false;

        while (fgets(line, sizeof(line), stdin)) {
                size_t len = strlen(line);
                bool whole = len > 0 && line[len - 1] == '\n';
                const char *v;

                if (skipping || (!whole && !feof(stdin))) {
                        skipping = !whole; /* until the end of the overlong line */
                        sodium_memzero(line, sizeof(line));
                        continue;
                }
                line[strcspn(line, "\r\n")] = '\0';
                if (!*line)
                        break;
                if ((v = startswith(line, "host="))) {
                        free(host);
                        host = strdup(v);
                        if (!host)
                                return -ENOMEM;
                } else if ((v = startswith(line, "password="))) {
                        free(*ret_jti);
                        *ret_jti = token_jti(v);
                }
                sodium_memzero(line, sizeof(line)); /* may have held a password */
        }
        *ret_host = host;
        return 0;
}

static int quit(const char *what, const char *why)
{
        fprintf(stderr, "git-credential-cloister: %s%s\n", what, why);
        printf("quit=1\n");
        return fflush(stdout) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
        const char *socket = broker_client_default_socket(), *scope = NULL, *op = NULL;
        _cleanup_free_ char *host = NULL, *error = NULL, *jti = NULL;
        json_t *req, *resp = NULL;
        const char *token;
        int r;

        for (int i = 1; i < argc; i++) {
                if (streq(argv[i], "--socket") && i + 1 < argc)
                        socket = argv[++i];
                else if (streq(argv[i], "--scope") && i + 1 < argc)
                        scope = argv[++i];
                else if (!op && argv[i][0] != '-')
                        op = argv[i];
                else {
                        usage();
                        return 2;
                }
        }
        if (!op) {
                usage();
                return 2;
        }
        if (sodium_init() < 0)
                return 1;
        (void)broker_harden_process();
        broker_json_wipe_on_free();
        if (attrs_read(&host, &jti) < 0)
                return 1;
        if (streq(op, "erase") && jti && socket) {
                /* Best effort: the token expires soon anyway. */
                req = json_pack("{s:s, s:s}", "op", "revoke", "jti", jti);
                if (req && broker_client_request(socket, req, &resp, &error) == 0)
                        json_decref(resp);
                json_decref(req);
                return 0;
        }
        if (!streq(op, "get"))
                return 0; /* store, and any future verb: nothing to do */
        if (!socket || !*socket)
                return quit("no broker: ",
                            "CLOISTER_BROKER is not set and there is no " BROKER_SANDBOX_SOCKET);
        if (!scope && !host)
                return quit("git gave no host", "");
        req = json_pack("{s:s, s:s}", "op", "issue", scope ? "scope" : "host",
                        scope ? scope : host);
        if (!req)
                return 1;
        r = broker_client_request(socket, req, &resp, &error);
        json_decref(req);
        if (r < 0)
                return quit("", error ? error : "cannot reach the broker");
        token = json_string_value(json_object_get(resp, "token"));
        if (!json_is_true(json_object_get(resp, "ok")) || !token) {
                r = quit("broker refused: ",
                         json_string_value(json_object_get(resp, "message")) ?: "no token");
                json_decref(resp);
                return r;
        }
        printf("username=%s\npassword=%s\npassword_expiry_utc=%lld\n",
               json_string_value(json_object_get(resp, "username")) ?: "cloister", token,
               (long long)json_integer_value(json_object_get(resp, "exp")));
        json_decref(resp);
        return fflush(stdout) == 0 ? 0 : 1;
}
