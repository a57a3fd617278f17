/* SPDX-License-Identifier: MIT */
/*
 * cmd-log.h: the two logs `cloister log` prints: the journal (cmd-log.c)
 * and, with --net, the egress proxy's audit lines (cmd-log-net.c).
 */
#pragma once

#include <stdbool.h>

struct config;

/* Print <[broker] dir>/net.jsonl; returns the exit code. */
int log_net_print(const struct config *c, bool json, bool have_since, double since);
/* Print <state>/runs.jsonl, a line per run (cmd-log-runs.c); returns the exit code. */
int log_runs_print(const struct config *c, bool json, bool have_since, double since);
