/* SPDX-License-Identifier: MIT */
/*
 * proxy.h: the egress proxy (`cloister proxy CONFIG`, and part of
 * `cloister run` for [network] mode = proxy). docs/network.md explains it.
 *
 * The proxy runs outside the sandbox. Its listening sockets are made inside
 * each sandbox's own network namespace, at 127.0.0.1:3128, by `cloister run`
 * (mounts/sandbox), which hands them over on the proxy's control socket;
 * killing, replacing or tracing anything inside the sandbox cannot change
 * what the proxy lets through, only lose the connection to it.
 *
 * What it does with a request:
 *   CONNECT host:port    allowed only to listed host:port pairs; the TLS
 *                        ClientHello's SNI must name the same host (read,
 *                        never terminated); then bytes are relayed.
 *   http://host/...      for a host with [inject] rules: the request must
 *                        match a rule (method, normalized path) and carry a
 *                        live cloister token of the rule's scope; the proxy
 *                        removes it and every client credential, adds the
 *                        real secret, and sends the request over verified
 *                        TLS. For other listed hosts: plain HTTP, as is.
 * Every address it connects to is first checked against a fixed deny set
 * (rules.h) and is exactly the address checked. Refusals are HTTP answers
 * (400, 401, 403, 429, 502, 503) with an x-cloister-error header; every
 * request and tunnel is one line in <broker dir>/net.jsonl, a hash-chained
 * log in the broker's audit format.
 *
 * Library code: nothing here prints; notices go to the log callback.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "rules.h"

#define PROXY_PORT         3128 /* on 127.0.0.1 inside the sandbox */
#define PROXY_CONTROL_FILE "proxy.sock"
#define PROXY_AUDIT_FILE   "net.jsonl"
#define PROXY_AUDIT_HEAD   "net.head"
#define PROXY_CONNS_MAX    4096 /* all listeners together, whatever the config says */

typedef struct proxy proxy;

/*
 * What the proxy needs to know of one workspace; mounts/compose.c fills it
 * in from the workspace config. Everything is copied by proxy_new().
 */
struct proxy_options {
        const char *origin;         /* the file these came from, for messages */
        const char *workspace;      /* the tokens' workspace (implicit assertion) */
        const char *broker_dir;     /* public.paserk, secrets, admin.sock; net.jsonl goes here */
        const char *control_socket; /* where `cloister run` hands over listening sockets */
        const struct proxy_host_pattern *allow;
        size_t n_allow;
        const struct proxy_host_pattern *deny;
        size_t n_deny;
        const struct proxy_resolve *resolve; /* test only */
        size_t n_resolve;
        const struct proxy_inject_rule *rules;
        size_t n_rules;
        const char *test_ca;  /* test only: a CA file trusted besides the system store */
        uint64_t connections; /* concurrent connections per run */
        uint64_t rate;        /* requests per second per run (bursts of twice that) */
        uint64_t bytes_out;   /* bytes sent upstream per run */
        uint64_t log_max;     /* bytes net.jsonl may hold; 0: PROXY_NETLOG_MAX_DEFAULT */
};
/*
 * [limits] netlog: the bound on net.jsonl. Near it one audit_full line is
 * written and the proxy refuses all traffic from then on (fail closed: a
 * request it cannot record does not go out), until the log is moved aside.
 */
#define PROXY_NETLOG_MAX_DEFAULT (256ull * 1024 * 1024)

/*
 * Set up (no sockets are listening yet but the control socket): copy the
 * options, open the audit log (refusing a tampered one), bind the control
 * socket. ret_error is a malloc'd one-line message.
 */
int proxy_new(const struct proxy_options *o, proxy **ret, char **ret_error);
/* Also serve a TCP listener on the host (`cloister proxy --listen`); loopback only. */
int proxy_listen_tcp(proxy *p, const char *addr_port, char **ret_bound, char **ret_error);
void proxy_set_log(proxy *p, void (*log)(const char *line));
/*
 * Serve only while runs of the workspace live (lib/lifetime.h): fd is
 * lifetime_open()'s, taken by the proxy. When no run holds it, proxy_run
 * returns 0, as on SIGTERM; the lock is held until proxy_free, after the
 * control socket is gone.
 */
void proxy_set_lifetime(proxy *p, int fd);
/* Serve until SIGTERM or SIGINT. */
int proxy_run(proxy *p, char **ret_error);
void proxy_free(proxy *p);

/*
 * Wipe every block OpenSSL and libevent free (they carry tokens and the
 * injected secrets). Call before anything else uses either library.
 */
int proxy_wipe_allocations(void);

/*
 * `cloister run`'s side of the control socket: make a listening socket on
 * 127.0.0.1:PROXY_PORT inside the network namespace of process pid (the
 * sandbox's first process) and hand it to the proxy on control_socket.
 * *ret_fd is the control connection: keep it open for the sandbox's life;
 * when it closes, the proxy drops that listener and its connections.
 * sandbox_pid and run_pid go into the audit lines.
 */
int proxy_attach_sandbox(const char *control_socket, pid_t sandbox_pid, pid_t run_pid, int *ret_fd,
                         char **ret_error);
