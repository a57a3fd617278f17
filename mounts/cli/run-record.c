/* SPDX-License-Identifier: MIT */
/*
 * run-record.c: the module's side of run-record.h: the run record's two
 * calls, exported for the binary's `cloister run` and `cloister shell`.
 */
#include "run-record.h"

__attribute__((visibility("default"))) int
cloister_commands_runlog_begin(const struct config *c, const struct ops_runlog_start *s,
                               char ret_id[OPS_RUNLOG_ID_LEN + 1], char **ret_error);
__attribute__((visibility("default"))) int
cloister_commands_runlog_end(const struct config *c, const char *id,
                             const struct ops_runlog_finish *f, char **ret_error);

int cloister_commands_runlog_begin(const struct config *c, const struct ops_runlog_start *s,
                                   char ret_id[OPS_RUNLOG_ID_LEN + 1], char **ret_error)
{
        return ops_runlog_begin(c, s, ret_id, ret_error);
}

int cloister_commands_runlog_end(const struct config *c, const char *id,
                                 const struct ops_runlog_finish *f, char **ret_error)
{
        return ops_runlog_end(c, id, f, ret_error);
}
