/* SPDX-License-Identifier: MIT */
/*
 * mcp.h: `cloister mcp CONFIG...`, an MCP (Model Context Protocol) server
 * on stdin and stdout for the workspaces of the configs given: JSON-RPC
 * 2.0, one message per line (docs/mcp.md).
 *
 * The caller is a model, and may be hostile: every argument is checked,
 * every path stays in the workspace's view (mounts/ops), and no tool can
 * do more than `cloister run` under the same config does. A workspace the
 * server was not started with does not exist for it.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct config;

struct mcp_options {
        struct config **configs; /* the served workspaces, by [workspace] name */
        const char *const *config_paths;
        size_t n;
        size_t output_max;  /* bytes of each stream kept per run */
        size_t request_max; /* the longest message line */
        unsigned runs_max;  /* commands running at once (background ones included) */
        unsigned background_max;
        unsigned requests_max;         /* tool calls in flight at once */
        const char *version;           /* serverInfo.version */
        void (*log)(const char *line); /* to stderr: stdout is the protocol's */
};

#define MCP_OUTPUT_MAX_DEFAULT     (64 * 1024)
#define MCP_REQUEST_MAX_DEFAULT    (16 * 1024 * 1024) /* a file_write of 8 MiB as JSON, and more */
#define MCP_RUNS_MAX_DEFAULT       8
#define MCP_RUNS_MAX               64 /* the most --runs takes */
#define MCP_BACKGROUND_MAX_DEFAULT 4
#define MCP_REQUESTS_MAX_DEFAULT   32

/* Serve until stdin ends. Returns 0, or a negative errno if it could not start. */
int mcp_serve(const struct mcp_options *o, int in_fd, int out_fd);
