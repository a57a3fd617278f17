/* SPDX-License-Identifier: MIT */
/*
 * config-private.h: the parser's state, shared by config.c (lexing, via
 * inih), config-keys.c (one entry per key) and config-validate.c (the
 * whole-file checks that need every key first).
 */
#pragma once

#include "config.h"
#include "lib/inifile.h"

enum section_kind {
        SECTION_WORKSPACE,
        SECTION_REPO,
        SECTION_HOME,
        SECTION_MIRROR,
        SECTION_BROKER,
        SECTION_LIMITS,
        SECTION_NETWORK,
        SECTION_RUN,
        SECTION_INJECT,
        SECTION_LOGS,
        SECTION_FS,
        SECTION_IMAGE,
        SECTION_MAX,
};

extern const char *const config_section_names[SECTION_MAX];

/* Line of each scalar key, 0 while unset: for "duplicate" and cross-key errors. */
#define CONFIG_KEYS_MAX 64
/* Indices into keys[] (config-keys.c) that cross-key checks report lines for. */
enum {
        KEY_LINE_STATE = 1,
        KEY_LINE_MOUNTPOINT = 2,
        KEY_LINE_REPO_PATH = 5,
        KEY_LINE_HOME_PATH = 6,
        KEY_LINE_MIRROR_FIRST = 9,
        KEY_LINE_BROKER_SOCKET = 14,
        KEY_LINE_BROKER_DIR = 16,
};

struct parse_state {
        const char *file;
        struct config *cfg;
        struct inifile_reader *reader;
        char *current_section;
        enum section_kind section;
        struct config_mirror *mirror;
        unsigned lines[CONFIG_KEYS_MAX];  /* scalar keys, by key index */
        unsigned mirror_lines[8];         /* per key of the current mirror */
        struct proxy_inject_rule *inject; /* the current [inject "NAME"] */
        unsigned inject_lines[16];        /* per key of the current [inject] */
        char *config_dir;                 /* canonical directory of the file, for %C and %R */
        char *error;
};

/* Expand %C, %R and %% in a host path; returns NULL and sets the error on failure. */
char *config_expand(struct parse_state *st, const char *key, const char *value);

int config_error(struct parse_state *st, unsigned line, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
int config_key_apply(struct parse_state *st, const char *section, const char *name,
                     const char *value);
void config_finish(struct parse_state *st);
/* The line a scalar key was set on (0: unset), found by its section and name. */
unsigned config_key_line(const struct parse_state *st, enum section_kind section, const char *name);

/* config-network.c: [network] lists and [inject "NAME"] sections. */
bool config_network_key_is_list(const char *name);
int config_network_list_add(struct parse_state *st, const char *name, const char *value);
int config_inject_begin(struct parse_state *st, const char *name, size_t len);
int config_inject_key(struct parse_state *st, const char *name, const char *value);
void config_network_finish(struct parse_state *st);
void config_network_free(struct config *c);
unsigned config_reader_line(const struct parse_state *st);
