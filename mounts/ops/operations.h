/* SPDX-License-Identifier: MIT */
/*
 * operations.h: the operations a user (a person at the CLI, or an agent platform
 * through `cloister mcp`) asks of a workspace, each a library function that
 * returns a structured result and prints nothing. Both front ends call
 * these: mounts/cli prints the result for a person or as JSON (--json),
 * mounts/mcp hands it to an MCP client as structuredContent.
 *
 * Trust: every argument may come from a model (through MCP). Paths are
 * resolved inside the workspace's view (ops-files.c), never joined onto a
 * host path; sizes and counts are bounded; nothing here widens what the
 * config grants (the same sandbox, limits, network and broker as
 * `cloister run`).
 *
 * Errors: a negative errno and a malloc'd one-line message (*ret_error)
 * that a model can act on ("'x' is not in the workspace: ...").
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct config;

/* --- workspaces ------------------------------------------------------------ */

/* One workspace's summary: name, config, repo, rev, mounted, usage, runs live. */
int ops_workspace_summary(const struct config *c, json_t **ret, char **ret_error);
/* The state of one workspace: the summary, the limits and what is used of
 * them, the broker and the proxy, the last export. */
int ops_status(const struct config *c, json_t **ret, char **ret_error);
struct review_workspace;
/*
 * The patch a reviewer gets (`cloister diff`), or with stat the per-file
 * counts: {"patch": TEXT, "bytes"} or {"files": [{"path", "status",
 * "added", "removed", "binary", "from"?}], "changed", "insertions",
 * "deletions"}; both with "home" (the hidden home's changes, names and
 * sizes only), "ignored" (how many paths the ignore rules left out),
 * "left_out" (below) and "warning"?. mounts/mcp declares each key in
 * diff's outputSchema. ops_review_json() is the same of a review the
 * caller opened.
 */
int ops_diff(const struct config *c, const char *config_path, bool stat, json_t **ret,
             char **ret_error);
typedef struct review review;
int ops_review_json(review *r, bool stat, json_t **ret);
/* The same, with hunks: each stat file also has "hunks" (hunks_json(), ops-workspace.c). */
int ops_review_json_full(review *r, bool stat, bool hunks, json_t **ret);
/*
 * The paths whose change the review left out (review_left_out()), set on o:
 * "left_out": [{"path", "reason", "detail", "size"}] (always, maybe empty;
 * reason a token such as "too_large", detail one line for a person, size
 * an integer for the size reasons, else null) and "left_out_more" (how many
 * more, not listed; only when some are).
 */
void ops_left_out_json(const review *r, json_t *o);
/*
 * The review of a workspace, mounted for the caller if nobody serves it,
 * until ops_review_close() (which unmounts only what the open mounted, and
 * returns < 0 if that unmount failed). Every review the front ends make
 * opens here: diff, export, mbox and discard. x is set even when the open
 * fails (what it got so far): ops_review_close() it either way. Closing a
 * zeroed x that was never opened does nothing.
 */
struct ops_review {
        struct review_workspace *w;
        review *r;
        bool opened; /* ops_review_open() ran (and took a libgit2 reference) */
};
struct ops_review_options {
        bool in_memory;       /* never write the source (diff, mbox, discard) */
        bool include_ignored; /* take what git's ignore rules leave out too */
        void (*progress)(const char *stage, size_t done, size_t total, void *userdata);
        void *userdata;
};
int ops_review_open(const struct config *c, const char *config_path,
                    const struct ops_review_options *o, struct ops_review *x, char **ret_error);
int ops_review_close(struct ops_review *x);

/*
 * The changes since a checkpoint: its tree mounted apart (a temporary state
 * and config in TMPDIR), for review_since(). ops_since_open() fills sv even
 * when it fails; ops_since_close() it either way (a zeroed sv does nothing);
 * it returns < 0 if the view's unmount failed. `cloister diff A B` fills c
 * and x with workspace A instead.
 */
struct ops_since {
        char *dir, *config;
        struct config *c;
        struct ops_review x;
};
int ops_since_open(const struct config *c, const char *checkpoint, struct ops_since *sv,
                   char **ret_error);
int ops_since_close(struct ops_since *sv);
/*
 * ops_diff()'s stat and patch both, from one review: from checkpoint's tree
 * instead of the base, or with checkpoint NULL from the base. With hunks,
 * the stat's files have "hunks" (ops_review_json_full()).
 */
int ops_diff_since(const struct config *c, const char *config_path, const char *checkpoint,
                   bool hunks, json_t **ret_stat, json_t **ret_patch, char **ret_error);

/*
 * `export --commit` (or with commits, `--commits`: the agent's own commits):
 * {"ref", "commit", "commits", "replaced", "ignored", "left_out",
 * "left_out_more"?, "warning"?}. The ref is refs/cloister/NAME, or with a
 * label refs/cloister/NAME+LABEL (one export per attempt, say); never
 * another workspace's. commit is the ref's new commit, commits how many the
 * export made (1 for the workspace as one commit), replaced the commit the
 * ref pointed at before or null, ignored and left_out as in ops_diff().
 * ops_export_review() is the same of a review the caller opened (not
 * in_memory); ops_export_label_check() refuses a label before anything
 * is mounted.
 */
struct ops_export_options {
        const char *label;   /* NULL: refs/cloister/NAME */
        bool commits;        /* the agent's own commits, not one of the workspace */
        const char *message; /* the commit's; NULL: review_commit()'s default */
        const char *author;  /* "Name <email>"; NULL: review_commit()'s default */
};
int ops_export_label_check(const char *label, char **ret_error);
int ops_export_review(review *r, const struct config *c, const struct ops_export_options *o,
                      json_t **ret, char **ret_error);
int ops_export(const struct config *c, const char *config_path, const char *label, json_t **ret,
               char **ret_error);

/*
 * Every workspace this user's configs know, mounted or not: the configs in
 * $XDG_CONFIG_HOME/cloister (`cloister init` writes there), then those
 * `cloister mount` mounted once; {"workspaces": [summary, or {"config",
 * "error"} for one that does not load]}.
 */
int ops_list(json_t **ret, char **ret_error);
/* Remember a config for ops_list() ($XDG_STATE_HOME/cloister/configs). */
int ops_config_remember(const char *config_path);
/* $XDG_CONFIG_HOME/cloister or $XDG_STATE_HOME/cloister (kind "config" or "state"), or the
 * ~/.config and ~/.local/state defaults. */
int ops_xdg_dir(const char *kind, char **ret);
/* --- checkpoints and forks (ops-layers.c; docs/fs-design.md) ------------------------ */

/*
 * `cloister checkpoint CONFIG NAME`: freeze the workspace's state as the
 * checkpoint NAME, mounted or not: {"workspace", "name", "depth",
 * "max_depth", "squash_due"}.
 */
int ops_checkpoint(const struct config *c, const char *name, json_t **ret, char **ret_error);
/* `checkpoint --list`: {"workspace", "depth", "max_depth", "squash_due", "parent",
 * "checkpoints": [{"name", "depth", "created", "created_unix", "layer"}]}. */
int ops_checkpoint_list(const struct config *c, json_t **ret, char **ret_error);
/* `checkpoint --delete`: {"workspace", "deleted", "removed", "kept_by": [who still uses
 * its layer]}. */
int ops_checkpoint_delete(const struct config *c, const char *name, json_t **ret, char **ret_error);
/* `cloister restore`, unmounted only: {"workspace", "checkpoint", "depth", "removed"}. */
int ops_restore(const struct config *c, const char *name, json_t **ret, char **ret_error);

struct ops_fork_options {
        const char *new_config; /* absolute: the fork's config, written last; must not exist */
        const char *name;       /* the fork's workspace name */
        const char *from;       /* a checkpoint, or NULL: one is made (fork-NAME) */
        const char *state;      /* absolute, or NULL: beside the parent's state, named NAME */
};
/* `cloister fork`: {"name", "config", "state", "parent", "checkpoint", "depth", "base"?}.
 * Both front ends call it with the same fields; its checks are the only ones, and
 * -EINVAL is a refusal of what the caller named (a name, a path, a config that exists). */
int ops_fork(const struct config *c, const struct ops_fork_options *o, json_t **ret,
             char **ret_error);
/*
 * p as an absolute path: as it is if it is one, else joined onto the
 * working directory (not resolved: no symlink is followed, nothing need
 * exist). How the CLI and MCP both make a user's relative path absolute
 * (fork's NEW_CONFIG and --state, the served config's folder).
 */
int ops_path_absolute(const char *p, char **ret);

/* --- runs ------------------------------------------------------------------------- */

#define OPS_OUTPUT_MAX_DEFAULT (64 * 1024) /* bytes kept of stdout and of stderr, each */
#define OPS_STDIN_MAX          (1024 * 1024)

struct ops_run_options {
        const struct config *config;
        const char *config_path;
        const char *command;    /* run by /bin/sh -c in the sandbox */
        const char *cwd;        /* in the sandbox; NULL: [repo] path */
        char *const *env;       /* NAME=VALUE, checked by ops_run_check_env(); or NULL */
        const char *stdin_data; /* fed to the command, then closed; NULL: /dev/null */
        size_t stdin_len;
        uint64_t timeout_s; /* 0: the config's [limits] timeout; never more than it */
        size_t output_max;  /* 0: OPS_OUTPUT_MAX_DEFAULT */
        const char *source; /* for the run record: NULL "mcp", or "mcp_background" */
};

typedef struct ops_run ops_run;

/* Refuse what a caller may not set (see sandbox_env_name_allowed()). */
int ops_run_check_env(const struct config *c, char *const *env, char **ret_error);
/*
 * Start the command in a new sandbox, exactly as `cloister run` would (the
 * same code, in a child process of ours: no `cloister` binary is run for
 * it). Returns at once; output is collected by ops_run_pump(). Call it
 * from a thread that lives as long as the run may: the run is stopped
 * when the thread that started it ends (its parent-death signal).
 */
int ops_run_start(const struct ops_run_options *o, ops_run **ret, char **ret_error);
/*
 * The fds to poll (stdout, stderr, the result, and the child's pidfd), -1
 * when closed: until the run has ended, one of them, or the timeout of
 * ops_run_timeout_ms(), always wakes the caller for what comes next.
 */
#define OPS_RUN_FDS 4
void ops_run_fds(const ops_run *r, int fds[OPS_RUN_FDS]);
/* The longest the caller may sleep before ops_run_pump(), in ms, or -1:
 * until an fd is ready (-1 unless the kernel has no pidfd_open). */
int ops_run_timeout_ms(const ops_run *r);
/*
 * Read what is there (never blocks). Returns 1 when the run has ended and
 * everything is read, else 0; < 0 on error.
 */
int ops_run_pump(ops_run *r);
/* Stop the command and every process it started (the sandbox's teardown:
 * SIGTERM, SIGKILL 5 s later). why: "timeout", "cancelled", "killed". */
void ops_run_stop(ops_run *r, const char *why);
/* Milliseconds since the start; whether it was stopped, and why. */
int64_t ops_run_elapsed_ms(const ops_run *r);
/*
 * The result: {"exit_code", "stdout", "stderr", "duration_ms", "truncated",
 * "stdout_bytes", "stderr_bytes", "timed_out", "stopped", "limits_hit"};
 * only once ops_run_pump() returned 1. Output is text (invalid UTF-8
 * replaced); "truncated" says some was dropped (the byte counts are whole).
 */
json_t *ops_run_result(const ops_run *r);
/*
 * For a background run: the output since the last call (and how much of it
 * was dropped because it was not read in time), as {"stdout", "stderr",
 * "dropped", "running"}, and once it has ended, "exit_code",
 * "duration_ms", "timed_out", "stopped" and "limits_hit" as in
 * ops_run_result().
 */
json_t *ops_run_take_output(ops_run *r);
/* Stop it if it still runs, wait for its end and free it. NULL: no-op. */
void ops_run_free(ops_run *r);

/* --- the run record (ops-runlog.c) ------------------------------------------------- */

/*
 * <state>/runs.jsonl, chained and headed like the audit log (runs.head;
 * `cloister audit verify` checks it): for each command run in the
 * workspace a "run_start" line before its sandbox is built and a
 * "run_end" line after it is gone, joined by "run", a random id. Bounded
 * by [limits] runlog (OPS_RUNLOG_MAX_DEFAULT): past it one audit_full line,
 * then every append fails with -EDQUOT. docs/cloister-log.md has the fields.
 */
#define OPS_RUNLOG_FILE        "runs.jsonl"
#define OPS_RUNLOG_HEAD        "runs.head"
#define OPS_RUNLOG_MAX_DEFAULT (16ull * 1024 * 1024)
#define OPS_RUNLOG_ARGV_MAX    (16 * 1024) /* bytes of argv kept; "argv_cut" past it */
#define OPS_RUNLOG_NAMES_MAX   256         /* argv words and environment names kept */
#define OPS_RUNLOG_ID_LEN      16

struct ops_runlog_start {
        const char *source; /* "run", "shell", "mcp", "mcp_background" */
        char *const *argv;  /* as given; MCP: /bin/sh -c COMMAND */
        const char *cwd;    /* in the sandbox */
        char *const *env;   /* NAME=VALUE or NAME: only the names are kept */
        int64_t start_ms;   /* ops_runlog_now_ms() */
};
struct ops_runlog_finish {
        int64_t end_ms;
        int exit_code, signal;
        bool timed_out;
        const char *stopped;                /* "timeout", "cancelled", ... or NULL */
        int64_t stdout_bytes, stderr_bytes; /* -1: not seen (run and shell pass the terminal) */
        pid_t pid, bwrap_pid, pgid;         /* sandbox_result's, 0 if unknown */
        pid_t runner_pid; /* the process that ran the sandbox: the net log's "run" */
        /* sandbox_result's: the sandbox's own cgroup, which the journal's entries name; or NULL */
        const char *cgroup;
        const char *error; /* nothing ran: why */
};
/* Wall-clock ms since the epoch. */
int64_t ops_runlog_now_ms(void);
/* Append the start line; ret_id gets the run's id. A run that cannot be recorded must not run. */
int ops_runlog_begin(const struct config *c, const struct ops_runlog_start *s,
                     char ret_id[OPS_RUNLOG_ID_LEN + 1], char **ret_error);
int ops_runlog_end(const struct config *c, const char *id, const struct ops_runlog_finish *f,
                   char **ret_error);
/*
 * The runs, verified: {"runs": [{"run", "source", "argv", "argv_cut"?,
 * "cwd", "env", "start_ms", "ended", and once ended "end_ms", "exit_code",
 * "signal", "timed_out", "stopped"?, "stdout_bytes", "stderr_bytes",
 * "pid", "bwrap_pid", "pgid", "runner_pid", "cgroup"?, "error"?}], "verified", "lines", "error"?
 * (why the chain does not verify)}. No log yet: no runs, verified.
 */
int ops_runlog_read(const struct config *c, json_t **ret, char **ret_error);

/* --- the report (ops-report.c) --------------------------------------------------- */

#define OPS_REPORT_WRITES_MAX 20000 /* journal entries listed (the rest counted) */
#define OPS_REPORT_LINES_MAX  10000 /* network and audit lines listed (the rest counted) */
/*
 * `cloister report`: {"workspace", "config", "repo", "rev", "generated_unix",
 * "since": {"checkpoint", "time"} or null, "status" (ops_status), "verdicts":
 * {"audit_chain", "net_chain", "runs_chain": {"file", "present", "verified",
 * "lines", "error"?}, "requests_refused"}, "runs" (ops_runlog_read),
 * "changes": {"stat" (its files with "runs" and "hunks": ops_trace_annotate()), "patch"}
 * (ops_diff_since), "journal": {"present",
 * "complete", "detail", "writes": [{"time", "op", "path", "pid", "comm", "run_cgroup"?,
 * "run" (1-based in runs, null: none), "join"? ("cgroup" or "time")}],
 * "entries", "more"}, "net" and "tokens": {"lines", "more", "refused"} (the
 * net.jsonl and audit.jsonl lines), "checkpoints" (ops_checkpoint_list)}.
 * since: a checkpoint; runs, writes and lines before it are left out, and
 * the changes are those since it (its tree, not the base, is where the
 * diff starts: ops_diff_since).
 */
int ops_report(const struct config *c, const char *config_path, const char *since, json_t **ret,
               char **ret_error);

/*
 * Which command wrote each hunk (ops-trace.c): the journal's writes
 * replayed into each file's byte ranges and the command of each. root is
 * the repository's path in the sandbox; runs the report's runs (borrowed,
 * numbered from 1 in their order). Feed it every journal record in the
 * reader's order, then ops_trace_annotate() sets on each file of a stat
 * with hunks (ops_review_json_full()) "runs" (every command that touched
 * it) and on each hunk "runs" and "traced": "bytes" (the commands whose
 * writes put its changed bytes there), "file" (not known to the byte: the
 * file's commands instead) or "none"; and on both, where they name a
 * command, "join": how the writes were joined to their commands, "cgroup"
 * (exactly: the run's own cgroup), "time" (the run whose span held the
 * write) or "mixed".
 */
struct journal_record;
typedef struct ops_trace ops_trace;
int ops_trace_new(const char *root, json_t *runs, ops_trace **ret);
void ops_trace_free(ops_trace *t);
static inline void ops_trace_freep(ops_trace **t)
{
        ops_trace_free(*t);
}
void ops_trace_feed(ops_trace *t, const struct journal_record *rec);
/*
 * The command (1-based in runs; 0: none) that made a journal entry, and
 * whether it was joined by the run's cgroup (*ret_exact) or by time.
 */
uint32_t ops_trace_run_of(ops_trace *t, const struct journal_record *rec, bool *ret_exact);
void ops_trace_annotate(ops_trace *t, json_t *stat);

/* n bytes as a JSON string: invalid UTF-8 as U+FFFD, NUL as a space. */
json_t *ops_json_text(const char *p, size_t n);

/* --- files, as the agent sees them ------------------------------------------------- */

#define OPS_FILE_READ_MAX  (256 * 1024)      /* bytes a file_read returns */
#define OPS_FILE_WRITE_MAX (8 * 1024 * 1024) /* bytes a file_write or file_edit writes */
#define OPS_LIST_MAX       10000             /* entries a file_list returns */
/* A file_read's offset and limit, in lines: 2^53 - 1, what a JSON number holds exactly. */
#define OPS_FILE_LINES_MAX INT64_C(9007199254740991)

/*
 * The file tools of `cloister mcp`. path is as the agent sees it in the
 * sandbox: relative to [repo] path, or absolute in the sandbox's view (the
 * repo, the home, the mirrors). Reads resolve in the mount like the
 * sandbox does (its symlinks, absolute or not, stay inside the view);
 * writes go only under [repo] path, and never through a symlink that
 * leaves it. Run as the agent's identity, so permissions, owners and the
 * journal are the agent's. A read of a line longer than
 * OPS_FILE_READ_MAX returns its first bytes and "line_cut": {"line",
 * "bytes_left_out", "at_byte"}; the next offset goes on after it.
 */
int ops_file_read(const struct config *c, const char *path, int64_t offset_line, int64_t limit,
                  bool numbered, json_t **ret, char **ret_error);
int ops_file_write(const struct config *c, const char *path, const char *content, size_t len,
                   json_t **ret, char **ret_error);
int ops_file_edit(const struct config *c, const char *path, const char *old_string,
                  const char *new_string, bool replace_all, json_t **ret, char **ret_error);
int ops_file_list(const struct config *c, const char *path, const char *pattern, bool recursive,
                  json_t **ret, char **ret_error);
int ops_file_delete(const struct config *c, const char *path, json_t **ret, char **ret_error);
