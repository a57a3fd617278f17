/* SPDX-License-Identifier: MIT */
/*
 * client.h: talk to a broker socket: one JSON request line, one response.
 * Used by `cloister token`, `cloister broker rotate-key` and
 * git-credential-cloister.
 */
#pragma once

#include <jansson.h>

#define BROKER_RESPONSE_MAX (256 * 1024)
/* Where `cloister run` puts the agent socket inside the sandbox. */
#define BROKER_SANDBOX_SOCKET "/run/cloister/broker.sock"

/* $CLOISTER_BROKER, else BROKER_SANDBOX_SOCKET if it exists, else NULL. */
const char *broker_client_default_socket(void);

/* ret_error: malloc'd one line naming the socket. */
int broker_client_connect(const char *path, int *ret_fd, char **ret_error);
/* Send req (borrowed) and read one response object. */
int broker_client_call(int fd, json_t *req, json_t **ret_resp);
/* Connect, call, close. */
int broker_client_request(const char *path, json_t *req, json_t **ret_resp, char **ret_error);
