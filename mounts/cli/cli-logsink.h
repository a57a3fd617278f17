/* SPDX-License-Identifier: MIT */
/*
 * cli-logsink.h: [logs] stdout = json for the daemons (mount, broker,
 * proxy): the copy of their log lines on standard output (lib/logsink.h),
 * its chains' heads signed with the workspace's broker key.
 */
#pragma once

struct config;

/*
 * Open the sink on standard output if c asks for it, and give it the
 * signing key of c's workspace: the current key of <broker dir>/signing.keys
 * (made if there is none yet; the broker, or `cloister broker public-key`,
 * writes its public file). 0, or a negative errno with a one-line
 * ret_error naming the config; nothing is open then.
 */
int cli_logsink_open(const struct config *c, char **ret_error);
/* The sink's key for one more workspace of this process (a broker serves several). */
int cli_logsink_add(const struct config *c, char **ret_error);
