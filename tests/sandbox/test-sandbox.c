/* SPDX-License-Identifier: MIT */
/*
 * test-sandbox.c: the sandbox library's parts that need no sandbox: the
 * environment filter, the seccomp export and the bubblewrap command line.
 * run.sh and tests/escape prove the whole thing against a real bwrap.
 */
#include <check.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cloister-config.h"
#include "config.h"
#include "sandbox-private.h"
#include "lib/pidfile.h"
#include "lib/util.h"

static char tmpdir[] = "/tmp/cloister-test-sandbox.XXXXXX";
static struct config *cfg;

static void setup(void)
{
        char path[PATH_MAX], ini[2 * PATH_MAX];
        FILE *f;
        char *err = NULL;

        ck_assert_ptr_nonnull(mkdtemp(tmpdir));
        snprintf(path, sizeof(path), "%s/ws.ini", tmpdir);
        snprintf(ini, sizeof(ini),
                 "[workspace]\nname = unit\nstate = %s/state\nmountpoint = %s/mnt\n"
                 "[repo]\nsource = /usr/share/doc\n"
                 "[run]\nenv = FOO, GITHUB_TOKEN, LD_PRELOAD, HOME\n",
                 tmpdir, tmpdir);
        f = fopen(path, "we");
        ck_assert_ptr_nonnull(f);
        fputs(ini, f);
        fclose(f);
        ck_assert_int_eq(config_load(path, &cfg, &err), 0);
        free(err);
}

static void teardown(void)
{
        char cmd[PATH_MAX];

        config_free(cfg);
        cfg = NULL;
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
        ck_assert_int_eq(system(cmd), 0);
        strcpy(tmpdir, "/tmp/cloister-test-sandbox.XXXXXX");
}

static bool strv_has(char **v, const char *s)
{
        for (; v && *v; v++)
                if (streq(*v, s))
                        return true;
        return false;
}

static bool strv_has_prefix(char **v, const char *prefix)
{
        for (; v && *v; v++)
                if (startswith(*v, prefix))
                        return true;
        return false;
}

START_TEST(secret_looking_names_are_secrets)
{
        static const char *const names[] = {"GITHUB_TOKEN",          "AWS_SECRET_ACCESS_KEY",
                                            "npm_config__authToken", "DB_PASSWORD",
                                            "SSH_AUTH_SOCK",         "MY_PRIVATE_THING"};
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                ck_assert_msg(sandbox_env_is_secret(names[i], "x"), "%s", names[i]);
        ck_assert(!sandbox_env_is_secret("LANG", "C.UTF-8"));
        ck_assert(!sandbox_env_is_secret("EDITOR", "vi"));
}
END_TEST

START_TEST(credential_looking_values_are_secrets)
{
        ck_assert(sandbox_env_is_secret("FOO", "ghp_abcdef"));
        ck_assert(sandbox_env_is_secret("FOO", "-----BEGIN OPENSSH PRIVATE KEY-----"));
        ck_assert(sandbox_env_is_secret("FOO", "AKIAIOSFODNN7EXAMPLE"));
        ck_assert(!sandbox_env_is_secret("FOO", "hello"));
}
END_TEST

START_TEST(environment_passes_only_allowed_harmless_variables)
{
        char *host[] = {"HOME=/root",          "PATH=/evil", "FOO=1", "GITHUB_TOKEN=ghp_x",
                        "LD_PRELOAD=/evil.so", "TERM=xterm", "BAR=2", NULL};
        struct sandbox_options o = {.config = cfg};
        _cleanup_strv_free_ char **env = NULL, **refused = NULL;

        ck_assert_int_eq(sandbox_env_build(&o, host, &env, &refused), 0);
        ck_assert(strv_has(env, "FOO=1"));
        ck_assert(strv_has(env, "HOME=/home/agent"));
        ck_assert(strv_has(env, "USER=agent"));
        ck_assert(!strv_has_prefix(env, "PATH=/evil"));
        ck_assert(!strv_has_prefix(env, "GITHUB_TOKEN="));
        ck_assert(!strv_has_prefix(env, "LD_PRELOAD="));
        ck_assert(!strv_has_prefix(env, "BAR="));
        ck_assert(!strv_has_prefix(env, "TERM="));
        ck_assert(!strv_has_prefix(env, "CLOISTER_BROKER="));
        ck_assert(strv_has(refused, "GITHUB_TOKEN"));
        ck_assert(strv_has(refused, "LD_PRELOAD"));
        ck_assert(strv_has(refused, "HOME"));
        ck_assert(!strv_has(refused, "FOO"));
}
END_TEST

START_TEST(interactive_environment_has_term_and_broker)
{
        char *host[] = {"TERM=xterm-256color", NULL};
        struct sandbox_options o = {
                .config = cfg, .interactive = true, .broker_socket = "/x/broker.sock"};
        _cleanup_strv_free_ char **env = NULL, **refused = NULL;

        ck_assert_int_eq(sandbox_env_build(&o, host, &env, &refused), 0);
        ck_assert(strv_has(env, "TERM=xterm-256color"));
        ck_assert(strv_has(env, "CLOISTER_BROKER=" SANDBOX_BROKER_SOCKET));
        ck_assert_ptr_null(refused[0]);
}
END_TEST

START_TEST(seccomp_filter_is_whole_bpf_under_pipe_buf)
{
        _cleanup_close_ int fd = -1;
        struct stat st;

        ck_assert_int_eq(sandbox_seccomp_export(&fd), 0);
        ck_assert_int_eq(fstat(fd, &st), 0);
        ck_assert_int_gt(st.st_size, 0);
        ck_assert_int_eq(st.st_size % 8, 0);
        ck_assert_int_lt(st.st_size, PIPE_BUF);
        ck_assert_int_eq(lseek(fd, 0, SEEK_CUR), 0);
}
END_TEST

static void layout_make(void)
{
        char p[PATH_MAX];

        snprintf(p, sizeof(p), "mkdir -p '%s/mnt/workspace' '%s/mnt/home/agent' '%s/state'", tmpdir,
                 tmpdir, tmpdir);
        ck_assert_int_eq(system(p), 0);
}

START_TEST(bwrap_command_line_holds_the_hardening)
{
        char *argv[] = {"true", NULL}, root[PATH_MAX], bind[PATH_MAX];
        struct sandbox_options o = {.config = cfg, .argv = argv, .root = root};
        struct sandbox_tmpfs tmpfs;
        struct sandbox_etc etc = {0};
        struct sandbox_fds fds = {.seccomp = 5, .status_w = 6, .tmpfs = &tmpfs, .etc = &etc};
        _cleanup_strv_free_ char **v = NULL;
        _cleanup_free_ char *err = NULL;
        char stage_tmp[PATH_MAX];

        layout_make();
        snprintf(root, sizeof(root), "%s/mnt", tmpdir);
        snprintf(bind, sizeof(bind), "%s/mnt/workspace", tmpdir);
        snprintf(stage_tmp, sizeof(stage_tmp), "%s/state/sandbox-tmpfs/tmp", tmpdir);
        ck_assert_int_eq(sandbox_tmpfs_prepare(cfg, false, &tmpfs, &err), 0);
        ck_assert_int_eq(sandbox_bwrap_argv(&o, &fds, &v, &err), 0);
        static const char *const need[] = {"--unshare-user",   "--unshare-pid",     "--unshare-net",
                                           "--disable-userns", "--die-with-parent", "--new-session",
                                           "--seccomp",        "--remount-ro"};
        for (size_t i = 0; i < ELEMENTSOF(need); i++)
                ck_assert_msg(strv_has(v, need[i]), "%s missing", need[i]);
        ck_assert(strv_has(v, "ALL"));
        ck_assert(strv_has(v, bind));
        ck_assert(strv_has(v, "/proc/sys"));
        ck_assert(!strv_has(v, "/root"));
        ck_assert(!strv_has(v, "/sys"));
        ck_assert_str_eq(v[0], CLOISTER_BWRAP);
        /* /tmp comes from the prepared tmpfs, never from bwrap's unlimited --tmpfs. */
        ck_assert(strv_has(v, stage_tmp));
        ck_assert(!strv_has(v, "--tmpfs"));
        ck_assert_uint_eq(tmpfs.nr_inodes, 32768);
        ck_assert_str_eq(tmpfs.options, "size=536870912,nr_inodes=32768,mode=1777");
        /* /etc is one read-only bind of the prepared tmpfs, not a mount per file. */
        snprintf(stage_tmp, sizeof(stage_tmp), "%s/state/sandbox-tmpfs/etc", tmpdir);
        ck_assert_str_eq(etc.dir, stage_tmp);
        ck_assert(!strv_has(v, "--ro-bind-data"));
        ck_assert(!strv_has(v, "/etc/ssl/certs"));
        ck_assert(!strv_has(v, "/etc/passwd"));
        for (size_t i = 0; v[i]; i++)
                if (streq(v[i], "/etc"))
                        ck_assert(i >= 2 && streq(v[i - 1], stage_tmp) &&
                                  streq(v[i - 2], "--ro-bind"));
        ck_assert(strv_has(v, "/etc"));
        bool passwd = false, resolv = false;
        for (size_t i = 0; i < etc.n_files; i++) {
                ck_assert_uint_eq(etc.files[i].len, strlen(etc.files[i].data));
                if (streq(etc.files[i].name, "passwd")) {
                        passwd = true;
                        ck_assert_ptr_nonnull(strstr(etc.files[i].data, ":x:1000:1000:"));
                }
                if (streq(etc.files[i].name, "resolv.conf")) {
                        resolv = true; /* no host name servers without the host's network */
                        ck_assert_ptr_null(strstr(etc.files[i].data, "nameserver"));
                }
        }
        ck_assert(passwd && resolv);
        snprintf(stage_tmp, sizeof(stage_tmp), "%s/state/sandbox-tmpfs/etc/ssl/certs", tmpdir);
        ck_assert_str_eq(etc.host_dest[0], stage_tmp);
        sandbox_etc_clear(&etc);
        sandbox_tmpfs_clear(&tmpfs);
}
END_TEST

START_TEST(bwrap_command_line_for_a_shell_with_host_network)
{
        char *argv[] = {"sh", NULL}, root[PATH_MAX];
        struct sandbox_options o = {.config = cfg,
                                    .argv = argv,
                                    .root = root,
                                    .interactive = true,
                                    .host_network = true};
        struct sandbox_tmpfs tmpfs;
        struct sandbox_etc etc = {0};
        struct sandbox_fds fds = {.seccomp = 5, .status_w = 6, .tmpfs = &tmpfs, .etc = &etc};
        _cleanup_strv_free_ char **v = NULL;
        _cleanup_free_ char *err = NULL;

        layout_make();
        snprintf(root, sizeof(root), "%s/mnt", tmpdir);
        ck_assert_int_eq(sandbox_tmpfs_prepare(cfg, false, &tmpfs, &err), 0);
        ck_assert_int_eq(sandbox_bwrap_argv(&o, &fds, &v, &err), 0);
        ck_assert(!strv_has(v, "--unshare-net"));
        ck_assert(!strv_has(v, "--new-session"));
        ck_assert(strv_has(v, "--unshare-user"));
        sandbox_etc_clear(&etc);
        sandbox_tmpfs_clear(&tmpfs);
}
END_TEST

/*
 * The sandbox's environment is neither bubblewrap's (sandbox.c executes it
 * with PATH alone) nor on its command line, which any host user reads: it
 * is in a sealed memfd, for cloister-exec --env-fd or bwrap's --args.
 */
START_TEST(bwrap_command_line_holds_no_variable_of_the_sandbox)
{
        char *argv[] = {"true", NULL}, root[PATH_MAX];
        char *env[] = {"GCONV_PATH=/tmp/value-of-gconv", "PATH=/usr/bin", NULL};
        struct sandbox_options o = {.config = cfg, .argv = argv, .root = root, .env = env};
        struct sandbox_tmpfs tmpfs;
        struct sandbox_etc etc = {0};
        struct sandbox_fds fds = {.seccomp = 5, .status_w = 6, .tmpfs = &tmpfs, .etc = &etc};
        _cleanup_strv_free_ char **v = NULL;
        _cleanup_free_ char *err = NULL;
        char buf[256];
        ssize_t n;

        layout_make();
        snprintf(root, sizeof(root), "%s/mnt", tmpdir);
        ck_assert_int_eq(sandbox_tmpfs_prepare(cfg, false, &tmpfs, &err), 0);
        ck_assert_int_eq(sandbox_bwrap_argv(&o, &fds, &v, &err), 0);
        for (size_t i = 0; v[i]; i++) {
                ck_assert_msg(!strstr(v[i], "GCONV_PATH"), "argv[%zu] = %s", i, v[i]);
                ck_assert_msg(!strstr(v[i], "value-of-gconv"), "argv[%zu] = %s", i, v[i]);
        }
        ck_assert_int_ge(fds.env, 0);
        ck_assert_int_eq(fcntl(fds.env, F_GET_SEALS) & F_SEAL_WRITE, F_SEAL_WRITE);
        n = read(fds.env, buf, sizeof(buf));
        if (fds.env_args) {
                static const char want[] = "--clearenv\0--setenv\0GCONV_PATH\0/tmp/value-of-gconv\0"
                                           "--setenv\0PATH\0/usr/bin";
                ck_assert(strv_has(v, "--args"));
                ck_assert_int_eq(n, (ssize_t)sizeof(want));
                ck_assert_int_eq(memcmp(buf, want, sizeof(want)), 0);
        } else {
                static const char want[] = "GCONV_PATH=/tmp/value-of-gconv\0PATH=/usr/bin";
                ck_assert(strv_has_prefix(v, "--env-fd="));
                ck_assert_int_eq(n, (ssize_t)sizeof(want));
                ck_assert_int_eq(memcmp(buf, want, sizeof(want)), 0);
        }
        close(fds.env);
        sandbox_etc_clear(&etc);
        sandbox_tmpfs_clear(&tmpfs);
}
END_TEST

/*
 * A run SIGKILLed in the instant after it spawned bubblewrap, before the
 * sandbox's first process was known: its record names only bubblewrap's
 * process group, where bubblewrap's child may wait forever for a parent
 * that is gone. The next run's sweep kills that group, and nothing else.
 */
START_TEST(sweep_kills_the_process_group_of_a_dead_runs_bubblewrap)
{
        char state[] = "/tmp/cloister-registry.XXXXXX", path[PATH_MAX], line[160];
        pid_t group, bystander, dead;
        unsigned long long gstart;
        int status, fd, ready[2];
        char c;
        FILE *f;

        ck_assert_ptr_nonnull(mkdtemp(state));
        /* A process group like bubblewrap's, its leader already gone. The
         * leader says when its child exists: killed sooner, it would leave
         * an empty group (seen on a loaded machine). */
        ck_assert_int_eq(pipe(ready), 0);
        group = fork();
        if (group == 0) {
                close(ready[0]);
                setpgid(0, 0);
                if (fork() == 0) {
                        pause();
                        _exit(0);
                }
                (void)!write(ready[1], "1", 1);
                pause();
                _exit(0);
        }
        ck_assert_int_gt(group, 0);
        setpgid(group, group);
        close(ready[1]);
        ck_assert_int_eq(read(ready[0], &c, 1), 1);
        close(ready[0]);
        bystander = fork();
        if (bystander == 0) {
                pause();
                _exit(0);
        }
        /* A run that has died: a pid and start time that no process has. */
        dead = fork();
        if (dead == 0)
                _exit(0);
        waitpid(dead, NULL, 0);
        ck_assert_int_eq(pidfile_starttime(group, &gstart), 0);
        snprintf(path, sizeof(path), "%s/sandboxes", state);
        ck_assert_int_eq(mkdir(path, 0700), 0);
        snprintf(path, sizeof(path), "%s/sandboxes/%d", state, (int)dead);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
        ck_assert_int_ge(fd, 0);
        snprintf(line, sizeof(line), "1 0 0 %d %llu\n", (int)group, gstart);
        ck_assert_int_eq(write(fd, line, strlen(line)), (ssize_t)strlen(line));
        close(fd);
        /* Its leader dies first, as bubblewrap does with its run. */
        kill(group, SIGKILL);
        waitpid(group, &status, 0);
        ck_assert_int_eq(kill(-group, 0), 0); /* the child is still there */

        sandbox_registry_sweep(state);
        for (int i = 0; i < 1000 && kill(-group, 0) == 0; i++)
                usleep(10000); /* SIGKILL is delivered at once; reaping (by init) may lag */
        ck_assert_int_ne(kill(-group, 0), 0);
        ck_assert_int_eq(kill(bystander, 0), 0); /* nothing else was touched */
        f = fopen(path, "re");
        ck_assert_ptr_null(f); /* the record is gone */
        kill(bystander, SIGKILL);
        waitpid(bystander, NULL, 0);
        snprintf(path, sizeof(path), "%s/sandboxes", state);
        rmdir(path);
        rmdir(state);
}
END_TEST

static void record_read(const char *path, char *buf, size_t size)
{
        FILE *f = fopen(path, "re");

        ck_assert_ptr_nonnull(f);
        ck_assert_ptr_nonnull(fgets(buf, (int)size, f));
        fclose(f);
}

/*
 * The record's life: before the spawn it names nothing; the child claims its
 * own new process group in it; the run adds bwrap's child (rewritten in place,
 * so a shorter line leaves nothing of the longer); closing removes it.
 */
START_TEST(record_names_nothing_then_the_childs_group_then_its_first_process)
{
        char state[] = "/tmp/cloister-record.XXXXXX", line[160], want[160];
        struct sandbox_record rec = SANDBOX_RECORD_NULL;
        unsigned long long run_start, start;
        int pipefd[2], status;
        pid_t child;
        char c;

        ck_assert_ptr_nonnull(mkdtemp(state));
        ck_assert_int_eq(pidfile_starttime(getpid(), &run_start), 0);
        ck_assert_int_eq(sandbox_registry_open(state, &rec), 0);
        record_read(rec.path, line, sizeof(line));
        snprintf(want, sizeof(want), "%llu 0 0 0 0\n", run_start);
        ck_assert_str_eq(line, want);

        ck_assert_int_eq(pipe(pipefd), 0);
        child = fork();
        if (child == 0) {
                close(pipefd[1]);
                setpgid(0, 0);
                _exit(sandbox_registry_claim(&rec) < 0 || read(pipefd[0], &c, 1) < 0);
        }
        ck_assert_int_gt(child, 0);
        for (int i = 0; i < 1000; i++) { /* until the child has written it */
                record_read(rec.path, line, sizeof(line));
                if (strcmp(line, want) != 0)
                        break;
                usleep(10000);
        }
        ck_assert_int_eq(pidfile_starttime(child, &start), 0);
        snprintf(want, sizeof(want), "%llu 0 0 %d %llu\n", run_start, (int)child, start);
        ck_assert_str_eq(line, want);

        ck_assert_int_eq(sandbox_registry_update(&rec, 0, child), 0);
        record_read(rec.path, line, sizeof(line));
        snprintf(want, sizeof(want), "%llu %d %llu 0 0\n", run_start, (int)child, start);
        ck_assert_str_eq(line, want);
        ck_assert_int_eq(lseek(rec.fd, 0, SEEK_END), (off_t)strlen(want));

        close(pipefd[1]);
        ck_assert_int_eq(waitpid(child, &status, 0), child);
        ck_assert_int_eq(WEXITSTATUS(status), 0);
        close(pipefd[0]);
        snprintf(want, sizeof(want), "%s", rec.path);
        sandbox_registry_close(&rec);
        ck_assert_int_eq(access(want, F_OK), -1);
        ck_assert_int_eq(rec.fd, -1);
        sandbox_registry_close(&rec); /* closed: a no-op */
        snprintf(want, sizeof(want), "%s/sandboxes", state);
        rmdir(want);
        rmdir(state);
}
END_TEST

START_TEST(missing_layout_is_refused_with_the_path)
{
        char *argv[] = {"true", NULL}, root[PATH_MAX];
        struct sandbox_options o = {.config = cfg, .argv = argv, .root = root};
        struct sandbox_tmpfs tmpfs = {.stage = "/x", .dirs = {"/x/tmp", "/x/shm"}};
        struct sandbox_etc etc = {0};
        struct sandbox_fds fds = {.seccomp = 5, .status_w = 6, .tmpfs = &tmpfs, .etc = &etc};
        char **v = NULL;
        _cleanup_free_ char *err = NULL;

        snprintf(root, sizeof(root), "%s/nothing", tmpdir);
        ck_assert_int_eq(sandbox_bwrap_argv(&o, &fds, &v, &err), -ENOENT);
        ck_assert_ptr_null(v);
        ck_assert_ptr_nonnull(err);
        ck_assert_ptr_nonnull(strstr(err, "/nothing/workspace"));
        sandbox_etc_clear(&etc);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("sandbox");
        TCase *tc = tcase_create("sandbox");
        SRunner *sr;
        int failed;

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, secret_looking_names_are_secrets);
        tcase_add_test(tc, credential_looking_values_are_secrets);
        tcase_add_test(tc, environment_passes_only_allowed_harmless_variables);
        tcase_add_test(tc, interactive_environment_has_term_and_broker);
        tcase_add_test(tc, seccomp_filter_is_whole_bpf_under_pipe_buf);
        tcase_add_test(tc, bwrap_command_line_holds_the_hardening);
        tcase_add_test(tc, bwrap_command_line_for_a_shell_with_host_network);
        tcase_add_test(tc, bwrap_command_line_holds_no_variable_of_the_sandbox);
        tcase_add_test(tc, missing_layout_is_refused_with_the_path);
        tcase_add_test(tc, sweep_kills_the_process_group_of_a_dead_runs_bubblewrap);
        tcase_add_test(tc, record_names_nothing_then_the_childs_group_then_its_first_process);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? 1 : 0;
}
