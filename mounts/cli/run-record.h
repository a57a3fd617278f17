/* SPDX-License-Identifier: MIT */
/*
 * run-record.h: the run record of `cloister run` and `cloister shell`
 * (mounts/ops/ops-runlog.c), reached through cloister-commands.so: the
 * binary links neither libsodium (the record's chain) nor the ops layer,
 * so it loads the module for the two calls of a run (run-record.c, and
 * commands.map exports them).
 */
#pragma once

#include "operations.h"

typedef int (*run_record_begin_fn)(const struct config *c, const struct ops_runlog_start *s,
                                   char ret_id[OPS_RUNLOG_ID_LEN + 1], char **ret_error);
typedef int (*run_record_end_fn)(const struct config *c, const char *id,
                                 const struct ops_runlog_finish *f, char **ret_error);

#define RUN_RECORD_BEGIN "cloister_commands_runlog_begin"
#define RUN_RECORD_END   "cloister_commands_runlog_end"
