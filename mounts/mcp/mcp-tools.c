/* SPDX-License-Identifier: MIT */
/*
 * mcp-tools.c: the tools of `cloister mcp`: their schemas (tools/list),
 * the check of a call's arguments against them, and the tools that answer
 * at once (on a worker thread each; the runs are mcp-runs.c's).
 *
 * Every argument is a model's choice. The check here is the first fence
 * (names, types, bounds, a served workspace); the second is mounts/ops,
 * which resolves each path inside the workspace's view and writes only
 * where the agent itself may.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "config.h"
#include "mcp-private.h"
#include "lib/errorf.h"
#include "lib/quote.h"
#include "lib/util.h"
#include "lib/values.h"

/*
 * The schemas, in JSON (2020-12 draft, the MCP default). The workspace
 * argument is added by tools_list(), with the served names. Only what
 * arg_check() enforces is used: type, properties, required,
 * additionalProperties, minimum, maximum, maxLength, enum.
 */
#define S_STR(d)  "{\"type\":\"string\",\"description\":\"" d "\"}"
#define S_INT(d)  "{\"type\":\"integer\",\"description\":\"" d "\"}"
#define S_BOOL(d) "{\"type\":\"boolean\",\"description\":\"" d "\"}"
#define S_PATH_READ                                                                                \
        "{\"type\":\"string\",\"maxLength\":4095,\"description\":\"the file: relative to "         \
        "/workspace, or absolute in the sandbox (the repository, the home, the mirrors)\"}"
#define S_PATH_WRITE                                                                               \
        "{\"type\":\"string\",\"maxLength\":4095,\"description\":\"the file: relative to "         \
        "/workspace, or absolute below it (the home and the mirrors are read-only to the file "    \
        "tools)\"}"

#define OUT_RUN                                                                                    \
        "{\"type\":\"object\",\"properties\":{"                                                    \
        "\"run_id\":{\"type\":\"string\"},"                                                        \
        "\"running\":{\"type\":\"boolean\"},"                                                      \
        "\"exit_code\":{\"type\":[\"integer\",\"null\"]},"                                         \
        "\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"                       \
        "\"duration_ms\":{\"type\":\"integer\"},"                                                  \
        "\"truncated\":{\"type\":\"boolean\"},"                                                    \
        "\"stdout_bytes\":{\"type\":\"integer\"},\"stderr_bytes\":{\"type\":\"integer\"},"         \
        "\"timed_out\":{\"type\":\"boolean\"},"                                                    \
        "\"stopped\":{\"type\":[\"string\",\"null\"]},"                                            \
        "\"limits_hit\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"                     \
        "\"dropped\":{\"type\":\"integer\"},"                                                      \
        "\"error\":{\"type\":\"string\"}},"                                                        \
        "\"required\":[\"run_id\",\"running\"]}"

/*
 * The paths the review could not take (ops_left_out_json): diff's and
 * export's. A reason is a token a client may branch on; detail is for a
 * person.
 */
#define OUT_LEFT_OUT                                                                               \
        "\"left_out\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"         \
        "\"path\":{\"type\":\"string\"},"                                                          \
        "\"reason\":{\"type\":\"string\",\"enum\":[\"too_large\",\"total_too_large\",\"special\"," \
        "\"unreadable\",\"too_deep\",\"name_too_long\"]},"                                         \
        "\"detail\":{\"type\":\"string\"},"                                                        \
        "\"size\":{\"type\":[\"integer\",\"null\"]}},"                                             \
        "\"required\":[\"path\",\"reason\",\"detail\",\"size\"]}},"                                \
        "\"left_out_more\":{\"type\":\"integer\"}"

/*
 * diff's result (ops_review_json): the patch, or with stat the files; both
 * with the home's changes (names and sizes only: never in the patch) and
 * the count of paths the ignore rules left out. One property a line: a new
 * one is a line here (tests/mcp checks that every key a tool returns is
 * declared).
 */
#define OUT_DIFF                                                                                   \
        "{\"type\":\"object\",\"properties\":{"                                                    \
        "\"patch\":{\"type\":\"string\"},"                                                         \
        "\"bytes\":{\"type\":\"integer\"},"                                                        \
        "\"files\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"            \
        "\"path\":{\"type\":\"string\"},\"from\":{\"type\":\"string\"},"                           \
        "\"status\":{\"type\":\"string\"},\"added\":{\"type\":\"integer\"},"                       \
        "\"removed\":{\"type\":\"integer\"},\"binary\":{\"type\":\"boolean\"}},"                   \
        "\"required\":[\"path\",\"status\"]}},"                                                    \
        "\"changed\":{\"type\":\"integer\"},"                                                      \
        "\"insertions\":{\"type\":\"integer\"},"                                                   \
        "\"deletions\":{\"type\":\"integer\"},"                                                    \
        "\"home\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"             \
        "\"path\":{\"type\":\"string\"},"                                                          \
        "\"type\":{\"type\":\"string\",\"enum\":[\"file\",\"dir\",\"symlink\",\"deleted\","        \
        "\"other\"]},"                                                                             \
        "\"size\":{\"type\":[\"integer\",\"null\"]}},"                                             \
        "\"required\":[\"path\",\"type\",\"size\"]}},"                                             \
        "\"ignored\":{\"type\":\"integer\"}," OUT_LEFT_OUT ","                                     \
        "\"warning\":{\"type\":\"string\"}},"                                                      \
        "\"required\":[\"home\",\"ignored\",\"left_out\"]}"

/*
 * export's result (ops_export_review): the same object `cloister export
 * --json` prints, so the same keys, one a line.
 */
#define OUT_EXPORT                                                                                 \
        "{\"type\":\"object\",\"properties\":{"                                                    \
        "\"ref\":{\"type\":\"string\"},"                                                           \
        "\"commit\":{\"type\":\"string\"},"                                                        \
        "\"commits\":{\"type\":\"integer\"},"                                                      \
        "\"replaced\":{\"type\":[\"string\",\"null\"]},"                                           \
        "\"ignored\":{\"type\":\"integer\"}," OUT_LEFT_OUT ","                                     \
        "\"warning\":{\"type\":\"string\"}},"                                                      \
        "\"required\":[\"ref\",\"commit\",\"commits\",\"replaced\",\"ignored\",\"left_out\"]}"

struct tool {
        const char *name, *title, *description;
        const char *input;  /* properties and required, as a JSON schema */
        const char *output; /* the outputSchema */
        bool read_only, destructive, idempotent;
        bool in_loop; /* a run's: mcp-runs.c */
};

static const struct tool tools[] = {
        {
                "workspace_list",
                "List workspaces",
                "The workspaces this server serves: name, source repository and revision, "
                "whether it is mounted, bytes and files used, runs live, and the data path "
                "its daemon negotiated.",
                "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
                "{\"type\":\"object\",\"properties\":{\"workspaces\":{\"type\":\"array\",\"items\":"
                "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
                "\"config\":{\"type\":\"string\"},\"repo\":{\"type\":\"string\"},"
                "\"rev\":{\"type\":\"string\"},\"repo_path\":{\"type\":\"string\"},"
                "\"mounted\":{\"type\":\"boolean\"},"
                "\"bytes_used\":{\"type\":[\"integer\",\"null\"]},"
                "\"files_used\":{\"type\":[\"integer\",\"null\"]},"
                "\"runs_live\":{\"type\":\"integer\"},"
                "\"datapath\":{\"type\":[\"object\",\"null\"],\"properties\":{"
                "\"transport\":{\"type\":\"string\"},\"io_uring\":{\"type\":\"boolean\"},"
                "\"io_uring_why\":{\"type\":\"string\"},"
                "\"killpriv_v2\":{\"type\":\"boolean\"},"
                "\"passthrough\":{\"type\":\"boolean\"},"
                "\"zero_message_opens\":{\"type\":\"boolean\"},"
                "\"zero_message_opens_why\":{\"type\":\"string\"}}}},"
                "\"required\":[\"name\",\"repo\",\"rev\",\"mounted\",\"runs_live\"]}}},"
                "\"required\":[\"workspaces\"]}",
                true,
                false,
                true,
                false,
        },
        {
                "run_command",
                "Run a command",
                "Run a shell command (/bin/sh -c) in the workspace's sandbox, as `cloister run` "
                "would: the repository at /workspace (the default cwd), the agent's home "
                "(empty at first; it and the build outputs last from one command to the next "
                "while this server runs), the config's limits, network and broker. Returns the "
                "exit code, stdout, stderr "
                "(each kept to its first and last bytes when long: truncated says so) and the "
                "duration. With background, returns a run_id at once: read the output with "
                "run_output, stop it with run_kill.",
                "{\"type\":\"object\",\"properties\":{"
                "\"command\":{\"type\":\"string\",\"maxLength\":262144,\"description\":"
                "\"the command line, run by /bin/sh -c\"},"
                "\"cwd\":" S_STR(
                        "the directory to run in: relative to /workspace, or absolute "
                        "in the sandbox (default /workspace)") ","
                                                               "\"env\":{\"type\":\"object\","
                                                               "\"additionalProperties\":{\"type\":"
                                                               "\"string\"},"
                                                               "\"description\":\"variables to "
                                                               "set, NAME: VALUE (not PATH, HOME, "
                                                               "LD_*, "
                                                               "CLOISTER_* or proxy variables)\"},"
                                                               "\"timeout_s\":{\"type\":"
                                                               "\"integer\",\"minimum\":1,"
                                                               "\"maximum\":2592000,"
                                                               "\"description\":\"seconds before "
                                                               "it is stopped (never more than the "
                                                               "config's "
                                                               "[limits] timeout)\"},"
                                                               "\"stdin\":{\"type\":\"string\","
                                                               "\"maxLength\":1048576,"
                                                               "\"description\":\"fed to "
                                                               "the command's standard input "
                                                               "(default: none)\"},"
                                                               "\"background\":" S_BOOL(
                                                                       "return at once with a "
                                                                       "run_id (a server, a "
                                                                       "watcher)") "},\"required\":"
                                                                                   "[\"command\"],"
                                                                                   "\"additionalPro"
                                                                                   "perties\":"
                                                                                   "false}",
                OUT_RUN,
                false,
                false,
                false,
                true,
        },
        {
                "run_output",
                "Read a background run's output",
                "The output of a background run since the last run_output, and whether it still "
                "runs (with its exit code once it has ended).",
                "{\"type\":\"object\",\"properties\":{\"run_id\":" S_STR(
                        "from run_command") "},"
                                            "\"required\":[\"run_id\"],\"additionalProperties\":"
                                            "false}",
                OUT_RUN,
                true,
                false,
                false,
                true,
        },
        {
                "run_kill",
                "Stop a background run",
                "Stop a background run and every process it started (SIGTERM, then SIGKILL); "
                "returns the rest of its output and its exit code.",
                "{\"type\":\"object\",\"properties\":{\"run_id\":" S_STR(
                        "from run_command") "},"
                                            "\"required\":[\"run_id\"],\"additionalProperties\":"
                                            "false}",
                OUT_RUN,
                false,
                true,
                true,
                true,
        },
        {
                "file_read",
                "Read a file",
                "Read a file as the sandbox sees it: a path relative to /workspace, or absolute "
                "in the sandbox (the repository, the home, the mirrors). Text comes as text "
                "(lines offset+1 to offset+limit, numbered when asked), anything else as "
                "base64.",
                "{\"type\":\"object\",\"properties\":{"
                "\"path\":" S_PATH_READ ","
                /* At most 2^53 - 1, the largest whole number every JSON
                 * reader holds exactly: offset + 1 never overflows. */
                "\"offset\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":9007199254740991,"
                "\"description\":\"lines to skip\"},"
                "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":9007199254740991,"
                "\"description\":\"lines to return (default: all, up to 256 KiB)\"},"
                "\"numbered\":" S_BOOL(
                        "prefix each line with its number, as cat -n does") "},\"required\":["
                                                                            "\"path\"],"
                                                                            "\"additionalProperties"
                                                                            "\":false}",
                "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
                "\"encoding\":{\"type\":\"string\",\"enum\":[\"utf-8\",\"base64\"]},"
                "\"content\":{\"type\":\"string\"},\"size\":{\"type\":\"integer\"},"
                "\"first_line\":{\"type\":\"integer\"},\"lines\":{\"type\":\"integer\"},"
                "\"truncated\":{\"type\":\"boolean\"},"
                "\"line_cut\":{\"type\":\"object\",\"properties\":{"
                "\"line\":{\"type\":\"integer\"},\"bytes_left_out\":{\"type\":\"integer\"},"
                "\"at_byte\":{\"type\":\"integer\"}},"
                "\"required\":[\"line\",\"bytes_left_out\",\"at_byte\"]}},"
                "\"required\":[\"path\",\"encoding\",\"content\",\"size\",\"truncated\"]}",
                true,
                false,
                true,
                false,
        },
        {
                "file_write",
                "Write a file",
                "Create or replace a file in the repository (/workspace), with the directories "
                "it needs. The home and the mirrors are read-only to the file tools.",
                "{\"type\":\"object\",\"properties\":{"
                "\"path\":" S_PATH_WRITE ","
                "\"content\":{\"type\":\"string\",\"maxLength\":11184812,\"description\":"
                "\"the file's whole new content (at most 8 MiB once decoded)\"},"
                "\"encoding\":{\"type\":\"string\",\"enum\":[\"utf-8\",\"base64\"],"
                "\"description\":\"utf-8 (the default): content is the text; base64: content "
                "is the bytes in base64, for a binary file (as file_read returns one)\"}},"
                "\"required\":[\"path\",\"content\"],\"additionalProperties\":false}",
                "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
                "\"bytes\":{\"type\":\"integer\"},\"created\":{\"type\":\"boolean\"}},"
                "\"required\":[\"path\",\"bytes\",\"created\"]}",
                false,
                true,
                true,
                false,
        },
        {
                "file_edit",
                "Edit a file",
                "Replace old_string by new_string in a file of the repository. old_string must "
                "match exactly (whitespace included) and, unless replace_all, exactly once.",
                "{\"type\":\"object\",\"properties\":{"
                "\"path\":" S_PATH_WRITE ","
                "\"old_string\":{\"type\":\"string\",\"maxLength\":8388608,\"description\":"
                "\"the text to replace, exactly as in the file (whitespace and line ends "
                "included)\"},"
                "\"new_string\":{\"type\":\"string\",\"maxLength\":8388608,\"description\":"
                "\"the text to put in its place\"},"
                "\"replace_all\":" S_BOOL(
                        "replace every occurrence") "},\"required\":[\"path\",\"old_string\",\"new_"
                                                    "string\"],"
                                                    "\"additionalProperties\":false}",
                "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
                "\"replacements\":{\"type\":\"integer\"},\"bytes\":{\"type\":\"integer\"}},"
                "\"required\":[\"path\",\"replacements\",\"bytes\"]}",
                false,
                true,
                false,
                false,
        },
        {
                "file_list",
                "List files",
                "The entries of a directory as the sandbox sees it (default /workspace), with "
                "type and size; recursive descends (not into .git); pattern is a glob matched "
                "against each entry's name and its path below the directory.",
                "{\"type\":\"object\",\"properties\":{"
                "\"path\":{\"type\":\"string\",\"maxLength\":4095,\"description\":"
                "\"the directory: relative to /workspace, or absolute in the sandbox (default "
                "/workspace)\"},"
                "\"pattern\":{\"type\":\"string\",\"maxLength\":1024,\"description\":"
                "\"a glob (fnmatch: * ? [...]) that an entry's name or its path below the "
                "directory must match\"},"
                "\"recursive\":" S_BOOL(
                        "list subdirectories too") "},\"additionalProperties\":false}",
                "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
                "\"entries\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
                "\"path\":{\"type\":\"string\"},\"type\":{\"type\":\"string\",\"enum\":[\"file\","
                "\"dir\",\"symlink\",\"other\"]},\"size\":{\"type\":\"integer\"}},"
                "\"required\":[\"path\",\"type\",\"size\"]}},"
                "\"truncated\":{\"type\":\"boolean\"}},"
                "\"required\":[\"path\",\"entries\",\"truncated\"]}",
                true,
                false,
                true,
                false,
        },
        {
                "file_delete",
                "Delete a file",
                "Remove a file, a symlink or an empty directory of the repository.",
                "{\"type\":\"object\",\"properties\":{"
                "\"path\":" S_PATH_WRITE "},"
                "\"required\":[\"path\"],\"additionalProperties\":false}",
                "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
                "\"deleted\":{\"type\":\"string\"}},\"required\":[\"path\",\"deleted\"]}",
                false,
                true,
                false,
                false,
        },
        {
                "diff",
                "The patch for review",
                "The workspace's changes against its base revision, as the git patch a reviewer "
                "gets (`cloister diff`), or with stat the changed files and their counts.",
                "{\"type\":\"object\",\"properties\":{\"stat\":" S_BOOL(
                        "per-file counts instead of the patch") "},"
                                                                "\"additionalProperties\":false}",
                OUT_DIFF,
                true,
                false,
                true,
                false,
        },
        {
                "export",
                "Export for review",
                "Commit the workspace's changes on its base revision and set refs/cloister/NAME "
                "in the source repository (`cloister export --commit`), for a person to review "
                "and merge. Nothing else in the source repository changes.",
                "{\"type\":\"object\",\"properties\":{\"ref\":" S_STR(
                        "refs/cloister/NAME (the default) or refs/cloister/NAME+LABEL, NAME "
                        "being the workspace's") "},"
                                                 "\"additionalProperties\":false}",
                OUT_EXPORT,
                false,
                false,
                false,
                false,
        },
        // clang-format off
        {
                "checkpoint",
                "Checkpoint the workspace",
                "Freeze the workspace's current state as the checkpoint NAME (`cloister "
                "checkpoint`), mounted or not, runs and all: later writes go on top, and "
                "restore or fork can come back to it. With list, the checkpoints; with delete, "
                "delete NAME (its layer stays while a fork or a later checkpoint uses it).",
                "{\"type\":\"object\",\"properties\":{"
                "\"name\":{\"type\":\"string\",\"maxLength\":64,\"description\":"
                "\"the checkpoint's name: 1 to 64 of A-Z a-z 0-9 . _ -\"},"
                "\"list\":" S_BOOL("list the checkpoints instead") ","
                "\"delete\":" S_BOOL("delete the checkpoint name instead") "},"
                "\"additionalProperties\":false}",
                "{\"type\":\"object\",\"properties\":{\"workspace\":{\"type\":\"string\"},"
                "\"name\":{\"type\":\"string\"},\"depth\":{\"type\":\"integer\"},"
                "\"max_depth\":{\"type\":\"integer\"},\"squash_due\":{\"type\":\"boolean\"},"
                "\"not_carried\":{\"type\":\"integer\"},\"not_carried_first\":{\"type\":\"string\"},"
                "\"parent\":{\"type\":[\"object\",\"null\"]},"
                "\"checkpoints\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
                "\"properties\":{\"name\":{\"type\":\"string\"},\"depth\":{\"type\":\"integer\"},"
                "\"created\":{\"type\":\"string\"},\"created_unix\":{\"type\":\"integer\"},"
                "\"layer\":{\"type\":\"string\"}},\"required\":[\"name\",\"depth\",\"created\"]}},"
                "\"deleted\":{\"type\":\"string\"},\"removed\":{\"type\":\"integer\"},"
                "\"kept_by\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}},"
                "\"required\":[\"workspace\"]}",
                false,
                false,
                false,
                false,
        },
        {
                "restore",
                "Restore a checkpoint",
                "Roll the workspace back to the checkpoint (`cloister restore`): every change "
                "since it is dropped. Refused while a command runs in the workspace or another "
                "process keeps it mounted; the next tool that needs the mount (run_command, a "
                "file tool, diff, export) mounts it again.",
                "{\"type\":\"object\",\"properties\":{"
                "\"checkpoint\":{\"type\":\"string\",\"maxLength\":64,\"description\":"
                "\"the checkpoint to go back to\"}},"
                "\"required\":[\"checkpoint\"],\"additionalProperties\":false}",
                "{\"type\":\"object\",\"properties\":{\"workspace\":{\"type\":\"string\"},"
                "\"checkpoint\":{\"type\":\"string\"},\"depth\":{\"type\":\"integer\"},"
                "\"removed\":{\"type\":\"integer\"}},"
                "\"required\":[\"workspace\",\"checkpoint\",\"depth\"]}",
                false,
                true,
                false,
                false,
        },
        {
                "fork",
                "Fork the workspace",
                "A new workspace that shares this one's state at a checkpoint (`cloister "
                "fork`; made first, named fork-NAME, unless from is given) under a writable "
                "layer of its own: a second attempt from the same point. Its config is "
                "new_config, a file name written beside this workspace's config; this server "
                "does not serve it: run it with `cloister run`, or serve it with `cloister mcp`.",
                "{\"type\":\"object\",\"properties\":{"
                "\"new_config\":{\"type\":\"string\",\"maxLength\":128,\"description\":"
                "\"the fork's config file name (NAME.ini), beside this workspace's config\"},"
                "\"from\":{\"type\":\"string\",\"maxLength\":64,\"description\":"
                "\"an existing checkpoint (default: a new one)\"},"
                "\"name\":{\"type\":\"string\",\"maxLength\":64,\"description\":"
                "\"the fork's workspace name (default: new_config without .ini)\"}},"
                "\"required\":[\"new_config\"],\"additionalProperties\":false}",
                "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},"
                "\"config\":{\"type\":\"string\"},\"state\":{\"type\":\"string\"},"
                "\"parent\":{\"type\":\"string\"},\"checkpoint\":{\"type\":\"string\"},"
                "\"depth\":{\"type\":\"integer\"},\"base\":{\"type\":\"string\"}},"
                "\"required\":[\"name\",\"config\",\"state\",\"parent\",\"checkpoint\"]}",
                false,
                false,
                false,
                false,
        },
        // clang-format on
};

static const struct tool *tool_find(const char *name)
{
        for (size_t i = 0; i < ELEMENTSOF(tools); i++)
                if (streq(tools[i].name, name))
                        return &tools[i];
        return NULL;
}

bool mcp_tool_known(const char *name)
{
        return tool_find(name) != NULL;
}

bool mcp_tool_in_loop(const char *name)
{
        const struct tool *t = tool_find(name);

        return t && t->in_loop;
}

/* The input schema with the workspace argument: required when there is a choice. */
static json_t *input_schema(const struct mcp_server *s, const struct tool *t)
{
        json_t *schema = json_loads(t->input, 0, NULL), *names = json_array(), *req;

        if (!schema)
                abort(); /* a typo in the table above: tests/mcp catch it first */
        for (size_t i = 0; i < s->n_ws; i++)
                json_array_append_new(names, json_string(s->ws[i].c->workspace.name));
        json_object_set_new(json_object_get(schema, "properties"), "workspace",
                            json_pack("{s:s, s:o, s:s}", "type", "string", "enum", names,
                                      "description",
                                      s->n_ws > 1 ? "the workspace, by name (workspace_list)"
                                                  : "the workspace, by name (the only one "
                                                    "served is the default)"));
        if (s->n_ws > 1) {
                req = json_object_get(schema, "required");
                if (!req)
                        json_object_set_new(schema, "required", req = json_array());
                json_array_insert_new(req, 0, json_string("workspace"));
        }
        return schema;
}

json_t *mcp_tools_list(const struct mcp_server *s)
{
        json_t *list = json_array();

        for (size_t i = 0; i < ELEMENTSOF(tools); i++) {
                const struct tool *t = &tools[i];
                json_t *out = json_loads(t->output, 0, NULL);
                if (!out)
                        abort();
                json_array_append_new(
                        list,
                        json_pack("{s:s, s:s, s:s, s:o, s:o, s:{s:s, s:b, s:b, s:b, s:b}}", "name",
                                  t->name, "title", t->title, "description", t->description,
                                  "inputSchema", input_schema(s, t), "outputSchema", out,
                                  "annotations", "title", t->title, "readOnlyHint", t->read_only,
                                  "destructiveHint", t->destructive, "idempotentHint",
                                  t->idempotent, "openWorldHint", streq(t->name, "run_command")));
        }
        return json_pack("{s:o}", "tools", list);
}

/* --- the check of the arguments ------------------------------------------------------- */

static const char *type_name(json_t *v)
{
        switch (json_typeof(v)) {
        case JSON_OBJECT:
                return "an object";
        case JSON_ARRAY:
                return "an array";
        case JSON_STRING:
                return "a string";
        case JSON_INTEGER:
                return "an integer";
        case JSON_REAL:
                return "a number";
        case JSON_TRUE:
        case JSON_FALSE:
                return "a boolean";
        default:
                return "null";
        }
}

static bool type_is(json_t *v, const char *type)
{
        return (streq(type, "string") && json_is_string(v)) ||
               (streq(type, "integer") && json_is_integer(v)) ||
               (streq(type, "boolean") && json_is_boolean(v)) ||
               (streq(type, "object") && json_is_object(v));
}

/* One argument against its schema; NULL or a tool error. */
static json_t *arg_check(const char *key, json_t *v, json_t *schema)
{
        const char *type = json_string_value(json_object_get(schema, "type"));
        json_t *max = json_object_get(schema, "maximum"), *min = json_object_get(schema, "minimum");
        json_t *maxlen = json_object_get(schema, "maxLength"),
               *en = json_object_get(schema, "enum");
        json_t *each = json_object_get(schema, "additionalProperties");
        const char *k;
        json_t *x;
        size_t i;

        if (!type || !type_is(v, type))
                return mcp_result_error("argument '%s': must be %s %s, not %s", key,
                                        type && strchr("aeiou", type[0]) ? "an" : "a",
                                        type ? type : "?", type_name(v));
        if (json_is_integer(v) && ((min && json_integer_value(v) < json_integer_value(min)) ||
                                   (max && json_integer_value(v) > json_integer_value(max))))
                return mcp_result_error(
                        "argument '%s': %" JSON_INTEGER_FORMAT
                        " is out of range (%" JSON_INTEGER_FORMAT " to %" JSON_INTEGER_FORMAT ")",
                        key, json_integer_value(v), min ? json_integer_value(min) : 0,
                        max ? json_integer_value(max) : (json_int_t)INT64_MAX);
        if (json_is_string(v) && maxlen &&
            json_string_length(v) > (size_t)json_integer_value(maxlen))
                return mcp_result_error("argument '%s': longer than %" JSON_INTEGER_FORMAT " bytes",
                                        key, json_integer_value(maxlen));
        /* Bytes may hold a NUL (a file's content, stdin); names and paths never. */
        if (json_is_string(v) && !streq(key, "content") && !streq(key, "stdin") &&
            strlen(json_string_value(v)) != json_string_length(v))
                return mcp_result_error("argument '%s': holds a NUL character", key);
        if (en) {
                _cleanup_free_ char *allowed = NULL;
                size_t len = 0;
                bool found = false;
                FILE *f;
                json_array_foreach (en, i, x)
                        found = found || json_equal(x, v);
                if (found)
                        return NULL;
                /* Say which are (the served workspaces, for workspace). */
                f = open_memstream(&allowed, &len);
                json_array_foreach (en, i, x)
                        if (f)
                                fprintf(f, "%s'%s'", i ? ", " : "", json_string_value(x));
                if (f)
                        fclose(f);
                return mcp_result_error("argument '%s': '%.100s' is not one of %s%s", key,
                                        json_is_string(v) ? json_string_value(v) : "?",
                                        allowed ? allowed : "the allowed values",
                                        streq(key, "workspace")
                                                ? " (the workspaces this server serves: "
                                                  "workspace_list)"
                                                : "");
        }
        if (json_is_object(v) && json_is_object(each))
                json_object_foreach (v, k, x)
                        if (!type_is(x, "string") ||
                            strlen(json_string_value(x)) != json_string_length(x))
                                return mcp_result_error(
                                        "argument '%s': '%.64s' must be a string (with no NUL)",
                                        key, k);
        return NULL;
}

json_t *mcp_tool_check(const struct mcp_server *s, const char *name, json_t *args, size_t *ret_ws)
{
        const struct tool *t = tool_find(name);
        _cleanup_(json_decrefp) json_t *schema = input_schema(s, t);
        json_t *props = json_object_get(schema, "properties"),
               *req = json_object_get(schema, "required");
        json_t *v, *ws;
        const char *key;
        size_t i;

        json_object_foreach (args, key, v) {
                json_t *p = json_object_get(props, key), *e;
                if (!p)
                        return mcp_result_error("unknown argument '%.64s' (%s takes: see its "
                                                "inputSchema)",
                                                key, name);
                /* null is "not given", as many clients send it for an unset option. */
                if (json_is_null(v))
                        continue;
                e = arg_check(key, v, p);
                if (e)
                        return e;
        }
        json_array_foreach (req, i, v) {
                json_t *a = json_object_get(args, json_string_value(v));
                if (!a || json_is_null(a))
                        return mcp_result_error("argument '%s' is required", json_string_value(v));
        }
        ws = json_object_get(args, "workspace");
        *ret_ws = 0;
        if (json_is_string(ws)) {
                for (i = 0; i < s->n_ws; i++)
                        if (streq(s->ws[i].c->workspace.name, json_string_value(ws))) {
                                *ret_ws = i;
                                return NULL;
                        }
                /* Not reached: the enum check refused it, naming the served ones. */
                return mcp_result_error("no workspace '%.64s' here", json_string_value(ws));
        }
        if (s->n_ws == 0)
                return mcp_result_error("this server serves no workspace");
        return NULL;
}

/* --- results --------------------------------------------------------------------------- */

json_t *mcp_result(json_t *structured, const char *text)
{
        _cleanup_free_ char *dumped = NULL;

        if (!structured)
                return mcp_result_error("out of memory");
        if (!text)
                text = dumped = json_dumps(structured, JSON_INDENT(1) | JSON_SORT_KEYS);
        return json_pack("{s:[{s:s, s:o}], s:o, s:b}", "content", "type", "text", "text",
                         ops_json_text(text ? text : "", text ? strlen(text) : 0),
                         "structuredContent", structured, "isError", 0);
}

json_t *mcp_result_error(const char *fmt, ...)
{
        _cleanup_free_ char *m = NULL;
        va_list ap;

        va_start(ap, fmt);
        m = mcp_vformat(fmt, ap);
        va_end(ap);
        return json_pack("{s:[{s:s, s:o}], s:b}", "content", "type", "text", "text",
                         ops_json_text(m ? m : "error", m ? strlen(m) : 5), "isError", 1);
}

static json_t *result_of(int r, json_t *structured, char *error)
{
        json_t *res = r < 0 ? mcp_result_error("%s", error ? error : strerror(-r))
                            : mcp_result(structured, NULL);

        free(error);
        return res;
}

/* --- the worker tools ------------------------------------------------------------------ */

int mcp_ws_hold(struct mcp_server *s, size_t i, bool wait, char **ret_error)
{
        struct mcp_ws *w = &s->ws[i];
        struct sandbox_session_options o = {.config_path = w->config_path, .config = w->c};
        int r = 0;

        if (!wait) {
                if (pthread_mutex_trylock(&w->lock) != 0)
                        return 0;
        } else {
                pthread_mutex_lock(&w->lock);
        }
        if (!w->hold) {
                r = sandbox_hold_take(&o, &w->hold, ret_error);
                if (r == 0)
                        mcp_logf(s, "cloister mcp: workspace '%s' is mounted at %s",
                                 w->c->workspace.name, w->c->workspace.mountpoint);
        }
        pthread_mutex_unlock(&w->lock);
        return r;
}

static const char *str(json_t *args, const char *key)
{
        return json_string_value(json_object_get(args, key));
}

static bool flag(json_t *args, const char *key)
{
        return json_is_true(json_object_get(args, key));
}

static json_int_t num(json_t *args, const char *key, json_int_t dflt)
{
        json_t *v = json_object_get(args, key);

        return json_is_integer(v) ? json_integer_value(v) : dflt;
}

static json_t *file_read_result(json_t *o)
{
        const char *content = str(o, "content");
        _cleanup_free_ char *text = NULL;

        if (!o)
                return mcp_result_error("out of memory");
        /* For a client that reads only text: the file itself, not JSON around it. */
        if (streq(str(o, "encoding"), "base64")) {
                if (asprintf(&text, "(binary, %" JSON_INTEGER_FORMAT " bytes, base64%s)\n%s",
                             num(o, "size", 0), flag(o, "truncated") ? ", truncated" : "",
                             content) < 0)
                        text = NULL;
                return mcp_result(o, text ? text : "");
        }
        if (json_is_object(json_object_get(o, "line_cut"))) {
                json_t *cut = json_object_get(o, "line_cut");
                if (asprintf(&text,
                             "%s\n[... line %" JSON_INTEGER_FORMAT
                             " is longer than a read (256 KiB): %" JSON_INTEGER_FORMAT
                             " bytes of it were left out, from byte %" JSON_INTEGER_FORMAT
                             " of the file on (run_command can show them: tail -c "
                             "+%" JSON_INTEGER_FORMAT
                             " FILE | head -c 262144); read on with offset %" JSON_INTEGER_FORMAT
                             "]\n",
                             content, num(cut, "line", 0), num(cut, "bytes_left_out", 0),
                             num(cut, "at_byte", 0), num(cut, "at_byte", 0) + 1,
                             num(o, "first_line", 1) - 1 + num(o, "lines", 0)) < 0)
                        text = NULL;
        } else if (flag(o, "truncated") &&
                   asprintf(&text,
                            "%s\n[... more lines: read on with offset %" JSON_INTEGER_FORMAT "]\n",
                            content, num(o, "first_line", 1) - 1 + num(o, "lines", 0)) < 0) {
                text = NULL;
        }
        return mcp_result(o, text ? text : content);
}

/*
 * The left-out paths, one line each after the patch or the counts: the
 * model (and whoever reads its transcript) must see that the review is not
 * whole, not only a client that reads structuredContent.
 */
static void left_out_lines(FILE *m, json_t *o)
{
        json_t *l;
        size_t i;

        json_array_foreach (json_object_get(o, "left_out"), i, l) {
                /* The agent named it: one line, quoted as git quotes paths. */
                fputs("left out of the patch: ", m);
                quote_fputs(m, str(l, "path") ? str(l, "path") : "", 0);
                fprintf(m, " (%s)\n", str(l, "detail") ? str(l, "detail") : "");
        }
        if (num(o, "left_out_more", 0) > 0)
                fprintf(m,
                        "left out of the patch: %" JSON_INTEGER_FORMAT " more paths, not listed\n",
                        num(o, "left_out_more", 0));
}

static json_t *diff_result(json_t *o)
{
        _cleanup_free_ char *text = NULL;
        const char *patch = str(o, "patch");
        bool left_out = json_array_size(json_object_get(o, "left_out")) > 0 ||
                        num(o, "left_out_more", 0) > 0;
        size_t len = 0, i;
        json_t *f;
        FILE *m;

        if (patch && !left_out)
                return mcp_result(o, patch[0] ? patch : "(no changes)");
        m = open_memstream(&text, &len);
        if (!m)
                return mcp_result(o, NULL);
        if (patch)
                fputs(patch[0] ? patch : "(no other changes)\n", m);
        else {
                json_array_foreach (json_object_get(o, "files"), i, f)
                        fprintf(m,
                                "%-10s +%-6" JSON_INTEGER_FORMAT " -%-6" JSON_INTEGER_FORMAT
                                " %s\n",
                                str(f, "status"), num(f, "added", 0), num(f, "removed", 0),
                                str(f, "path"));
                fprintf(m,
                        "%" JSON_INTEGER_FORMAT " files changed, %" JSON_INTEGER_FORMAT
                        " insertions(+), %" JSON_INTEGER_FORMAT " deletions(-)\n",
                        num(o, "changed", 0), num(o, "insertions", 0), num(o, "deletions", 0));
        }
        left_out_lines(m, o);
        if (fclose(m) != 0)
                return mcp_result(o, NULL);
        return mcp_result(o, text);
}

/* file_write of base64 content: the bytes it stands for (a binary file). */
static json_t *file_write_base64(const struct config *c, const char *path, json_t *content)
{
        size_t n = json_string_length(content), len = 0;
        _cleanup_free_ unsigned char *bytes = malloc(n / 4 * 3 + 3);
        const char *end = NULL;
        json_t *o = NULL;
        char *error = NULL;
        int r;

        if (!bytes)
                return mcp_result_error("out of memory");
        /* Line breaks and spaces, as base64 tools wrap it, are skipped; a NUL
         * is not base64 (and libsodium's strchr() of its ignore list would
         * skip it too). */
        if (memchr(json_string_value(content), '\0', n) ||
            sodium_base642bin(bytes, n / 4 * 3 + 3, json_string_value(content), n, " \t\r\n", &len,
                              &end, sodium_base64_VARIANT_ORIGINAL) != 0 ||
            end != json_string_value(content) + n)
                return mcp_result_error("content: not base64 (A-Z a-z 0-9 + /, padded with =), "
                                        "though encoding is base64");
        r = ops_file_write(c, path, (const char *)bytes, len, &o, &error);
        return result_of(r, o, error);
}

/*
 * The fork's config: a file name (NAME.ini) beside the served config, never
 * a path the model picks on the host.
 */
static int fork_config_path(const char *config_path, const char *file, char **ret, char **ret_error)
{
        _cleanup_free_ char *dir = NULL;
        size_t n = strlen(file);
        const char *slash;
        int r;

        if (n < 5 || !streq(file + n - 4, ".ini") || !value_name_is_valid(file, 128, false))
                return errorf(ret_error, -EINVAL,
                              "new_config: '%.128s' is not a config file name (NAME.ini, of "
                              "A-Z a-z 0-9 . _ -): it is written beside this workspace's config",
                              file);
        r = ops_path_absolute(config_path, &dir);
        if (r < 0)
                return errorf(ret_error, r, "the served config's folder: %s", strerror(-r));
        slash = strrchr(dir, '/');
        if (asprintf(ret, "%.*s/%s", (int)(slash - dir), dir, file) < 0)
                return errorf(ret_error, -ENOMEM, "out of memory");
        return 0;
}

/* checkpoint, restore, fork: the layer stack's (mounts/ops/ops-layers.c). */
static json_t *layers_call(struct mcp_server *s, const char *name, size_t ws, json_t *args)
{
        struct mcp_ws *w = &s->ws[ws];
        _cleanup_free_ char *new_config = NULL, *fname = NULL;
        const char *cp = str(args, "name");
        json_t *o = NULL;
        char *error = NULL;
        int r;

        if (streq(name, "checkpoint")) {
                if (flag(args, "list") && flag(args, "delete"))
                        return mcp_result_error("give list or delete, not both");
                if (flag(args, "list"))
                        r = ops_checkpoint_list(w->c, &o, &error);
                else if (!cp)
                        return mcp_result_error("argument 'name' is required (or list: true)");
                else if (flag(args, "delete"))
                        r = ops_checkpoint_delete(w->c, cp, &o, &error);
                else
                        r = ops_checkpoint(w->c, cp, &o, &error);
                return result_of(r, o, error);
        }
        if (streq(name, "restore")) {
                /*
                 * Restore needs the workspace unmounted: let go of this
                 * server's mount (it unmounts if no run or other process
                 * holds it), and keep the file tools out until it is done.
                 */
                pthread_mutex_lock(&w->lock);
                if (w->hold) {
                        sandbox_hold_release(w->hold);
                        w->hold = NULL;
                }
                r = ops_restore(w->c, str(args, "checkpoint"), &o, &error);
                pthread_mutex_unlock(&w->lock);
                if (r == -EBUSY) {
                        free(error);
                        return mcp_result_error(
                                "workspace '%s' is still mounted (a command runs in it, or "
                                "another process mounted it): stop the runs (run_kill) and try "
                                "again",
                                w->c->workspace.name);
                }
                return result_of(r, o, error);
        }
        /* A slot is taken before the fork, so calls in parallel cannot pass
         * the limit together, and given back if no fork was made: a refused
         * fork (a bad name, a config that exists) writes no config. */
        pthread_mutex_lock(&s->lock);
        bool room = s->forks < MCP_FORKS_MAX;
        s->forks += room;
        pthread_mutex_unlock(&s->lock);
        if (!room)
                return mcp_result_error("this server has made %d forks, its most: remove some "
                                        "and restart it",
                                        MCP_FORKS_MAX);
        r = fork_config_path(w->config_path, str(args, "new_config"), &new_config, &error);
        if (r >= 0 && !cp && !(fname = strdup(str(args, "new_config")))) {
                r = -ENOMEM;
                error = strdup("out of memory");
        }
        if (r >= 0) {
                if (fname)
                        fname[strlen(fname) - 4] = '\0';
                r = ops_fork(w->c,
                             &(struct ops_fork_options){.new_config = new_config,
                                                        .name = cp ? cp : fname,
                                                        .from = str(args, "from")},
                             &o, &error);
        }
        if (r < 0) {
                pthread_mutex_lock(&s->lock);
                s->forks--;
                pthread_mutex_unlock(&s->lock);
                return result_of(r, NULL, error);
        }
        mcp_logf(s, "cloister mcp: workspace '%s' forked as '%s' (%s)", w->c->workspace.name,
                 cp ? cp : fname, new_config);
        return result_of(r, o, error);
}

json_t *mcp_tool_call(struct mcp_server *s, const char *name, size_t ws, json_t *args)
{
        const struct config *c = s->ws[ws].c;
        const char *path = s->ws[ws].config_path;
        json_t *o = NULL;
        char *error = NULL;
        int r;

        if (streq(name, "workspace_list")) {
                json_t *list = json_array();
                for (size_t i = 0; i < s->n_ws; i++) {
                        json_t *one = NULL;
                        if (ops_workspace_summary(s->ws[i].c, &one, NULL) == 0)
                                json_array_append_new(list, one);
                }
                return mcp_result(json_pack("{s:o}", "workspaces", list), NULL);
        }
        if (streq(name, "checkpoint") || streq(name, "restore") || streq(name, "fork"))
                return layers_call(s, name, ws, args);
        /* The rest work in the mount: it is made, and kept, on first use. */
        r = mcp_ws_hold(s, ws, true, &error);
        if (r < 0)
                return result_of(r, NULL, error);
        if (streq(name, "diff"))
                return (r = ops_diff(c, path, flag(args, "stat"), &o, &error)) < 0
                               ? result_of(r, NULL, error)
                               : diff_result(o);
        if (streq(name, "export")) {
                const char *ref = str(args, "ref"), *label = NULL;
                if (ref) {
                        const char *rest = startswith(ref, "refs/cloister/");
                        rest = startswith(rest ? rest : ref, c->workspace.name);
                        if (!rest || (*rest && *rest != '+'))
                                return mcp_result_error(
                                        "ref: '%.100s' is not this workspace's: give "
                                        "refs/cloister/%s or refs/cloister/%s+LABEL",
                                        ref, c->workspace.name, c->workspace.name);
                        label = *rest ? rest + 1 : NULL;
                }
                r = ops_export(c, path, label, &o, &error);
                return result_of(r, o, error);
        }
        if (streq(name, "file_read")) {
                r = ops_file_read(c, str(args, "path"), num(args, "offset", 0),
                                  num(args, "limit", 0), flag(args, "numbered"), &o, &error);
                return r < 0 ? result_of(r, NULL, error) : file_read_result(o);
        }
        if (streq(name, "file_write")) {
                json_t *content = json_object_get(args, "content");
                const char *enc = str(args, "encoding");
                if (enc && streq(enc, "base64"))
                        return file_write_base64(c, str(args, "path"), content);
                r = ops_file_write(c, str(args, "path"), json_string_value(content),
                                   json_string_length(content), &o, &error);
        } else if (streq(name, "file_edit")) {
                r = ops_file_edit(c, str(args, "path"), str(args, "old_string"),
                                  str(args, "new_string"), flag(args, "replace_all"), &o, &error);
        } else if (streq(name, "file_list")) {
                r = ops_file_list(c, str(args, "path"), str(args, "pattern"),
                                  flag(args, "recursive"), &o, &error);
        } else if (streq(name, "file_delete")) {
                r = ops_file_delete(c, str(args, "path"), &o, &error);
        } else {
                return mcp_result_error("%s: not a worker tool", name);
        }
        return result_of(r, o, error);
}
