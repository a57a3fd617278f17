/* SPDX-License-Identifier: MIT */
/*
 * crashpoint.h: deterministic SIGKILLs for the crash tests.
 *
 * A multi-step change of the state directory (a checkpoint, a fork, a
 * restore, a squash: fs/layers*.c) calls crashpoint(op) between its steps,
 * and so does the start of a sandbox (op "run", mounts/sandbox/sandbox.c).
 * With CLOISTER_TEST_CRASH_AT=OP:N in the environment, the Nth call for OP
 * kills the process with SIGKILL, exactly as `kill -9` at that moment
 * would. tests/fs/layers-crash.sh runs each command with N = 1, 2, ...
 * until it completes without being killed, so every step is covered
 * without the test having to know how many there are. Unset (always, but
 * in those tests), it costs one secure_getenv per call; secure_getenv
 * ignores it in a set-id process.
 */
#pragma once

void crashpoint(const char *op);
