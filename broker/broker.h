/* SPDX-License-Identifier: MIT */
/*
 * broker.h: the broker daemon (`cloister broker CONFIG...`).
 *
 * One process serves one or more workspaces. Each has its agent socket
 * ([broker] socket, bind-mounted into the sandbox) and an admin socket
 * (<dir>/admin.sock, mode 0600, never in a sandbox) for redeemers,
 * revocation and key reloads. The peer is whoever SO_PEERCRED says came
 * through which socket; nothing a request claims about itself is trusted.
 * docs/broker-protocol.md documents the requests.
 */
#pragma once

#include <stdint.h>

#define BROKER_REQUEST_MAX  (16 * 1024) /* bytes per request line */
#define BROKER_CONNS_MAX    2048        /* all sockets together */
#define BROKER_ADMIN_SOCKET "admin.sock"

typedef struct broker broker;

int broker_new(broker **ret);
/*
 * What the broker needs to know of one workspace; mounts/ fills it in from
 * the workspace config. Every string is copied.
 */
struct broker_workspace_options {
        const char *origin; /* the file these came from, for error messages */
        const char *name;   /* the workspace name: the tokens' sub claim */
        const char *policy; /* the policy file; re-read on SIGHUP */
        const char *dir;    /* keys, sealed secrets, revocations, audit log, admin socket */
        const char *socket; /* the agent-facing socket */
        uint64_t audit_max; /* bytes the audit log may hold; 0: BROKER_AUDIT_MAX_DEFAULT */
        /*
         * Host uids the agent may have (a root-run sandbox's identity), or
         * 0-0: the agent is the broker's own user. When set, the agent
         * socket is 0666 and SO_PEERCRED admits only these uids, the
         * broker's own and root.
         */
        struct {
                uint32_t first, last;
        } agent_uids;
};

/*
 * Take a workspace: load its policy, keys (made on first start) and audit
 * log, and bind its sockets. ret_error is a malloc'd one-line message.
 */
int broker_add_workspace(broker *b, const struct broker_workspace_options *o, char **ret_error);
/* Where one-line notices go while serving (SIGHUP policy reloads). */
void broker_set_log(broker *b, void (*log)(const char *line));
/*
 * Serve only while runs of the workspace live (lib/lifetime.h): fd is
 * lifetime_open()'s, taken by the broker. When no run holds it, broker_run
 * stops as on SIGTERM (every token revoked) and returns 0; the lock stays
 * held until broker_free, after the sockets are gone.
 */
void broker_set_lifetime(broker *b, int fd);
/*
 * Serve until SIGTERM or SIGINT; then revoke every workspace's tokens.
 * SIGHUP re-reads the policies (a broken one is not applied).
 */
int broker_run(broker *b, char **ret_error);
void broker_free(broker *b);

/* Disable core dumps and ptrace-style access; fails closed. */
int broker_harden_process(void);
/* Make jansson wipe every block it frees (tokens and secrets pass through it). */
void broker_json_wipe_on_free(void);
