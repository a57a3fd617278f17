/* SPDX-License-Identifier: MIT */
/*
 * sandbox.h: start one command inside a bubblewrap sandbox built from a
 * workspace config, hold it to its limits, and tear it down.
 *
 * Trust boundary: everything in this module runs with the invoking user's
 * privileges (possibly root) on the host side. It never enters the sandbox
 * itself: bubblewrap builds the namespaces (as root, in a user namespace
 * sandbox-identity.c makes, under an unprivileged host uid), a libseccomp
 * filter and resource limits are applied before the agent's first
 * instruction, and afterwards the only channels in are the FUSE mount, the
 * broker socket and stdio.
 *
 * Library code does not print: failures come back as a negative errno and a
 * malloc'd one-line message (ret_error) that the CLI prints.
 */
#pragma once

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct config;

/* Fixed identity of the agent inside the sandbox; the name comes from [run] user. */
#define SANDBOX_AGENT_UID 1000
#define SANDBOX_AGENT_GID 1000
/* Where the broker socket appears inside, and the variable that says so. */
#define SANDBOX_BROKER_SOCKET "/run/cloister/broker.sock"
/* Where the broker clients (cloister, git-credential-cloister) appear inside. */
#define SANDBOX_CLIENT_DIR "/run/cloister/bin"
/*
 * The shared module with the commands the `cloister` binary does not hold
 * (mounts/cli/main.c): the one beside this binary if there is one (the
 * build tree, the sandbox's SANDBOX_CLIENT_DIR), else the installed one.
 * Fills path (PATH_MAX bytes); true if that file exists.
 */
#define SANDBOX_COMMANDS_MODULE "cloister-commands.so"
bool sandbox_commands_module(char path[static PATH_MAX]);
/*
 * The sandbox's first program (cloister-exec.c), found the same way: it
 * executes the command and exits 127 or 126 if it can't, as sh does. It
 * appears inside at SANDBOX_EXEC, read-only.
 */
#define SANDBOX_EXEC_HELPER "cloister-exec"
#define SANDBOX_EXEC        "/run/cloister/exec"
/* Seconds between SIGTERM and SIGKILL when the sandbox is stopped. */
#define SANDBOX_GRACE_SECONDS 5
/* The egress proxy, as the agent sees it ([network] mode = proxy). */
#define SANDBOX_PROXY_URL "http://127.0.0.1:3128"
/* Largest host file copied into the synthesized /etc (resolv.conf). */
#define SANDBOX_ETC_FILE_MAX (64 * 1024)

struct sandbox_options {
        const struct config *config;
        char *const *argv;         /* the command; argv[0] is looked up in the sandbox's PATH */
        const char *root;          /* host directory holding the layout (the FUSE mountpoint) */
        const char *broker_socket; /* host path of the broker socket, or NULL */
        const char *proxy_socket;  /* the egress proxy's control socket ([network] mode = proxy) */
        bool host_network;         /* share the host's network namespace (explicitly allowed) */
        bool interactive;          /* a shell: keep the terminal, pass TERM, ignore SIGINT */
        char *const *env;          /* for sandbox_run: from sandbox_env_build() */
        char *const *extra_env;    /* NAME=VALUE a tool caller adds (cloister mcp), or NULL */
        /* The command's standard output and error instead of ours: descriptors
         * above 2 (cloister run's relay, [logs] stdout = json); 0: ours. */
        int stdout_fd, stderr_fd;
        /* As root: the agent's unprivileged host identity (hostid.h); 0 when not root. */
        uid_t host_uid;
        gid_t host_gid;
        /* [image]: the image's root in the store and its digest (image_workspace_resolve());
         * NULL: the host's /usr, /bin, /lib* */
        const char *image_root;
        const char *image_digest;
};

/*
 * The seccomp filter, as classic BPF in a sealed memfd positioned at 0,
 * ready for `bwrap --seccomp FD`. Never returns a filter it could not build
 * completely.
 */
int sandbox_seccomp_export(int *ret_fd);

/*
 * The sandbox's environment: a clean one plus what [run] env allows.
 * *ret_refused lists (NULL-terminated, maybe empty) the allowed names that
 * were refused because they or their values look like secrets.
 */
int sandbox_env_build(const struct sandbox_options *o, char *const *host_env, char ***ret_env,
                      char ***ret_refused);
/* True if a variable name or value looks like it carries a secret. */
bool sandbox_env_is_secret(const char *name, const char *value);
/*
 * May a caller set this variable (cloister mcp's run_command env)? Not a
 * name the sandbox sets itself (PATH, HOME, ...), LD_*, CLOISTER_*,
 * BASH_FUNC_*, nor a proxy variable; [A-Za-z_][A-Za-z0-9_]*, at most 255.
 */
bool sandbox_env_name_allowed(const char *name, bool proxy);

/*
 * Run the command and wait for it. Blocks SIGINT/SIGTERM/SIGHUP while it
 * runs; on one of them (or when [limits] timeout expires) the sandbox gets
 * SIGTERM, then SIGKILL after SANDBOX_GRACE_SECONDS. *ret_status is the
 * command's exit status or 128+signal. *ret_signal is the signal that asked
 * us to stop (0 if none), *ret_timed_out whether the timeout fired.
 * Returns < 0 (and ret_error) if the sandbox could not be set up; then the
 * command has not run.
 */
struct sandbox_result {
        int status;
        int signal;
        bool timed_out;
        bool memory_hit;    /* [limits] memory killed a process (known as root: its cgroup) */
        bool processes_hit; /* [limits] processes refused a fork (likewise) */
        /*
         * A stop was due (timeout or signal) and a kill(2) of it failed:
         * its negative errno, and the sandbox ended on its own. 0: it was
         * stopped (or no stop was due).
         */
        int stop_error;
        /*
         * As the host sees them, for the run record (ops_runlog): bwrap, the
         * sandbox's monitor; its child, the first process of the sandbox's
         * PID namespace (every process of the command descends from it);
         * the process group (bwrap's; 0 for a shell, which keeps ours).
         */
        pid_t bwrap_pid, pid, pgid;
        /*
         * The name of the sandbox's own pids cgroup (cloister-PID-SEQ, the
         * last component of its path), "" if it had none (not root-run, or
         * [limits] cgroup = container). Every process of the command is in
         * it, and the journal names it in each entry ("run_cgroup"): the
         * run record's end keeps it ("cgroup"), so the report joins the two.
         */
        char cgroup[32];
};
int sandbox_run(const struct sandbox_options *o, struct sandbox_result *ret, char **ret_error);

/*
 * Is this a container whose root is the host's root (no user namespace of
 * its own; sandbox-hostroot.c says how it is told)? 1 with *ret_why (malloc'd,
 * what shows it), 0 if not, or < 0 (and *ret_why, if it could be made) if
 * it can't be told. A root-run sandbox refuses to start there unless [run]
 * allow_host_root is set.
 */
int sandbox_host_root_detect(char **ret_why);

/* Does the kernel let this user create a user namespace? "" if yes, else why not. */
int sandbox_check_userns(char **ret_error);

/*
 * A whole `cloister run`: mount the workspace unless it is mounted, start
 * the broker if [broker] policy is set, run the command, and tear down what
 * this run started (the broker; the mount, once no other run of the same
 * workspace is left). The state directory is left as it is. warn() gets
 * one-line warnings (refused variables, failed teardown) for the CLI to
 * print.
 */
struct sandbox_session_options {
        const char *config_path;
        const struct config *config;
        char *const *argv;
        char *const *host_env;
        bool interactive;
        bool allow_host_network;
        bool no_mount;            /* use the mountpoint as it is (a prepared layout); for tests */
        bool verbose;             /* the broker and the proxy say when they start and stop */
        char *const *extra_env;   /* NAME=VALUE set for the command (sandbox_env_name_allowed) */
        int stdout_fd, stderr_fd; /* as in sandbox_options: above 2, or 0 for ours */
        void (*warn)(const char *msg);
};
/* Seconds to wait for the broker's (or the proxy's) socket and for it to exit. */
#define SANDBOX_BROKER_WAIT_SECONDS 10
int sandbox_session_run(const struct sandbox_session_options *o, struct sandbox_result *ret,
                        char **ret_error);

/*
 * Hold the workspace as a run does, with nothing run: mounted (by this
 * call if it was not, with the marker that makes the last run's end
 * unmount it), and kept so, since no run ends as the last one while it is
 * held. For a front end that works on the files between runs (cloister
 * mcp). sandbox_hold_release() ends it as a run ends. Only config_path,
 * config and warn of o are used.
 */
typedef struct sandbox_hold sandbox_hold;
/* Whether a daemon answers on the unix socket at path (a connect works). */
bool sandbox_socket_live(const char *path);
int sandbox_hold_take(const struct sandbox_session_options *o, sandbox_hold **ret,
                      char **ret_error);
void sandbox_hold_release(sandbox_hold *h);

/*
 * With CLOISTER_TRACE_STARTUP set in the environment, print to stderr
 * "cloister: trace MS STEP": CLOCK_MONOTONIC in ms (the same clock in the
 * sandbox, which has no time namespace) as each step of the start-up ends;
 * tests/bench/startup reads these. Otherwise nothing.
 */
void sandbox_trace(const char *step);
