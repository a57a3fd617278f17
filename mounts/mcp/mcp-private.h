/* SPDX-License-Identifier: MIT */
/*
 * mcp-private.h: what mcp.c (the protocol and its loop), mcp-tools.c (the
 * tools that answer at once, on worker threads) and mcp-runs.c (the
 * commands, which live in the loop's thread) share.
 *
 * Threads: the loop (mcp_serve's thread) reads stdin, answers the
 * protocol's own requests, and owns every run: it starts them (a fork from
 * the one thread that lives as long as the server, so that a run's
 * parent-death signal only fires when the server dies), reads their output
 * and answers for them. Every other tool call gets a worker thread of its
 * own, at most requests_max at once, so a long diff never holds up a
 * file_read or a ping. Replies from all of them go through mcp_send(),
 * one whole line at a time.
 */
#pragma once

#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "mcp.h"
#include "operations.h"
#include "sandbox.h"

/* JSON-RPC 2.0's error codes. */
#define MCP_PARSE_ERROR      (-32700)
#define MCP_INVALID_REQUEST  (-32600)
#define MCP_METHOD_NOT_FOUND (-32601)
#define MCP_INVALID_PARAMS   (-32602)
#define MCP_INTERNAL_ERROR   (-32603)

/* Forks one server makes (each a config file and a state directory on the host). */
#define MCP_FORKS_MAX 64

/* One served workspace. */
struct mcp_ws {
        struct config *c;
        const char *config_path;
        pthread_mutex_t lock; /* hold */
        sandbox_hold *hold;   /* mounted and kept so, once a tool needs the mount */
};

/* A tool call in flight on a worker thread. */
struct mcp_call {
        struct mcp_call *next;
        json_t *id;
        bool cancelled; /* notifications/cancelled: no reply */
};

/* A command: run_command's, in the foreground or the background. */
struct mcp_run {
        struct mcp_run *next;
        unsigned long n; /* its run_id is "run-N" */
        size_t ws;
        ops_run *r;
        json_t *reply_id;  /* the request to answer when it ends, or NULL */
        bool reply_result; /* that answer is run_command's result (else run_kill's output) */
        json_t *progress_token;
        int64_t progress_next_ms;
        json_int_t progress;
        bool background;
        bool ended;
};

struct mcp_server {
        const struct mcp_options *o;
        struct mcp_ws *ws;
        size_t n_ws;
        int out_fd;
        pthread_mutex_t out_lock;
        bool out_broken; /* the client stopped reading: the server ends */

        pthread_mutex_t lock; /* calls and n_workers */
        pthread_cond_t idle;  /* n_workers went down */
        struct mcp_call *calls;
        unsigned n_workers;
        unsigned forks; /* made by the fork tool, at most MCP_FORKS_MAX */

        /* The loop's alone. */
        struct mcp_run *runs;
        unsigned long next_run;
        bool initialized;
        char version[16];
};

/* The loop's clock, in ms (CLOCK_MONOTONIC). */
int64_t mcp_now_ms(void);
void mcp_logf(const struct mcp_server *s, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
/* vasprintf's text, or NULL (out of memory). */
char *mcp_vformat(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/* Send one message (steals msg); false once the client is gone. */
bool mcp_send(struct mcp_server *s, json_t *msg);
void mcp_reply(struct mcp_server *s, json_t *id, json_t *result);

/* --- tools (mcp-tools.c) ------------------------------------------------------- */

/* The tools/list result. */
json_t *mcp_tools_list(const struct mcp_server *s);
/* Whether name is a tool of ours; whether the loop runs it (mcp-runs.c). */
bool mcp_tool_known(const char *name);
bool mcp_tool_in_loop(const char *name);
/*
 * Check args against the tool's arguments (names, types, bounds) and find
 * its workspace. Returns a tool error result (isError) to send as it is,
 * or NULL when they are good.
 */
json_t *mcp_tool_check(const struct mcp_server *s, const char *name, json_t *args, size_t *ret_ws);
/* Run a worker tool (not a loop one); the tools/call result. */
json_t *mcp_tool_call(struct mcp_server *s, const char *name, size_t ws, json_t *args);

/*
 * The workspace mounted (as `cloister run` mounts it), and kept so while
 * the server lives (sandbox_hold_take), from the first tool that needs the
 * mount on, run_command included: the agent's home and build outputs then
 * last across its commands, as between runs of `cloister run` on a mounted
 * workspace. Takes ws->lock, which restore holds while it works. Without
 * wait (the loop, which must not stall behind a restore), it returns 0 at
 * once if another thread has the lock: that one is mounting the workspace
 * or restoring it, and a run then mounts for itself, as `cloister run` does.
 */
int mcp_ws_hold(struct mcp_server *s, size_t ws, bool wait, char **ret_error);

/* A tool's results: structuredContent beside a text content, or an error for the model. */
json_t *mcp_result(json_t *structured, const char *text);
json_t *mcp_result_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* --- runs (mcp-runs.c), called by the loop only -------------------------------------- */

/* run_command, run_output, run_kill: a result to send now, or NULL if it
 * comes later (when the run ends), from mcp_runs_pump(). */
json_t *mcp_runs_call(struct mcp_server *s, const char *name, size_t ws, json_t *args, json_t *id,
                      json_t *progress_token);
/* The fds to poll: up to OPS_RUN_FDS per run; returns how many were set (at most max). */
size_t mcp_runs_fds(const struct mcp_server *s, int *fds, size_t max);
/* Read their output, send progress and the answers of runs that ended;
 * returns the ms until it wants to be called again (-1: only on output). */
int mcp_runs_pump(struct mcp_server *s);
/* notifications/cancelled of a run_command in the foreground: stop it, answer nothing. */
bool mcp_runs_cancel(struct mcp_server *s, json_t *id);
/* Stop every run and wait for their ends (the server is stopping). */
void mcp_runs_stop_all(struct mcp_server *s);
size_t mcp_runs_live(const struct mcp_server *s, size_t ws);
