/* SPDX-License-Identifier: MIT */
/*
 * run-common.h: what `cloister run` and `cloister shell` share.
 */
#pragma once

#include <stdbool.h>

#include "command.h"

/* Exit status when the sandbox could not be set up (nothing ran); as env(1). */
#define RUN_EXIT_SETUP 125

int run_common(const struct command *cmd, int argc, char **argv, bool interactive);
