/* SPDX-License-Identifier: MIT */
/*
 * test-config.c: the workspace config parser, key by key and error by error.
 * Every error test asserts the exact line number and reason, because a
 * vague error in a security boundary's config is a bug in its own right.
 */
#include <check.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "lint.h"
#include "lib/util.h"

static char tmpdir[] = "/tmp/cloister-config-test-XXXXXX";
static char cfgpath[4096];

static void setup(void)
{
        ck_assert_ptr_nonnull(mkdtemp(tmpdir));
        snprintf(cfgpath, sizeof(cfgpath), "%s/ws.ini", tmpdir);
}

static void teardown(void)
{
        unlink(cfgpath);
        rmdir(tmpdir);
        strcpy(tmpdir, "/tmp/cloister-config-test-XXXXXX");
}

static void write_file(const char *text, size_t len)
{
        int fd = open(cfgpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
        close(fd);
}

/* A minimal valid head, three lines, so error lines below are predictable. */
#define HEAD "[workspace]\nname = ws\nstate = /srv/state\n[repo]\nsource = /srv/src\n"

static struct config *load_ok(const char *text)
{
        struct config *c = NULL;
        _cleanup_free_ char *err = NULL;

        write_file(text, strlen(text));
        int r = config_load(cfgpath, &c, &err);
        ck_assert_msg(r == 0, "unexpected error: %s", err ? err : "(none)");
        ck_assert_ptr_nonnull(c);
        return c;
}

/* Assert that loading fails with exactly "<file>:<expected>". */
static void load_fails(const char *text, size_t len, const char *expected)
{
        struct config *c = NULL;
        _cleanup_free_ char *err = NULL;
        char want[8192];

        write_file(text, len);
        int r = config_load(cfgpath, &c, &err);
        ck_assert_int_lt(r, 0);
        ck_assert_ptr_null(c);
        ck_assert_ptr_nonnull(err);
        snprintf(want, sizeof(want), "%s%s", cfgpath, expected);
        ck_assert_str_eq(err, want);
        ck_assert_ptr_null(strchr(err, '\n'));
}
#define FAILS(text, expected) load_fails(text, strlen(text), expected)

#define PROXY_HEAD HEAD "[broker]\npolicy = /srv/p.ini\n[network]\nmode = proxy\n"

START_TEST(proxy_mode_keys_and_rules_are_parsed)
{
        _cleanup_config_ struct config *c =
                load_ok(PROXY_HEAD "allow = github.com, *.githubusercontent.com:443\n"
                                   "allow = registry.npmjs.org 93.184.216.34:8443\n"
                                   "deny = gist.github.com\nresolve = git.test:127.0.0.1\n"
                                   "test_ca = /srv/ca.pem\nconnections = 8\nrate = 5\n"
                                   "bytes_out = 10M\n"
                                   "[inject \"gh\"]\nhost = GitHub.com\nmethods = get, POST\n"
                                   "paths = /org/repo.git/**\npaths = /org/other.git/info/refs\n"
                                   "scope = git\nsecret = gh-token\nscheme = basic\n"
                                   "username = x-access-token\n"
                                   "push_refs = refs/heads/cloister/ws/*\npush_delete = no\n"
                                   "[inject \"model\"]\nhost = api.example-model.com\n"
                                   "methods = POST\npaths = /v1/messages\nscope = model\n"
                                   "secret = model-key\nscheme = header\nheader = X-Api-Key\n");

        ck_assert_int_eq(c->network.mode, CONFIG_NETWORK_PROXY);
        ck_assert_uint_eq(c->network.n_allow, 4);
        ck_assert_str_eq(c->network.allow[1].host, "githubusercontent.com");
        ck_assert(c->network.allow[1].wildcard);
        ck_assert(c->network.allow[3].literal);
        ck_assert_uint_eq(c->network.allow[3].port, 8443);
        ck_assert_uint_eq(c->network.n_deny, 1);
        ck_assert_uint_eq(c->network.n_resolve, 1);
        ck_assert_str_eq(c->network.test_ca, "/srv/ca.pem");
        ck_assert_uint_eq(c->network.connections, 8);
        ck_assert_uint_eq(c->network.rate, 5);
        ck_assert_uint_eq(c->network.bytes_out, 10ULL << 20);
        ck_assert_uint_eq(c->n_injects, 2);
        ck_assert_str_eq(c->injects[0].host, "github.com");
        ck_assert_str_eq(c->injects[0].methods[0], "GET");
        ck_assert_str_eq(c->injects[0].paths[1], "/org/other.git/info/refs");
        ck_assert_int_eq(c->injects[0].scheme, PROXY_SCHEME_BASIC);
        ck_assert_uint_eq(c->injects[0].port, 443);
        ck_assert_str_eq(c->injects[1].header, "x-api-key");
}
END_TEST

START_TEST(proxy_mode_errors_name_line_and_key)
{
        FAILS(PROXY_HEAD "allow = *\n",
              ":10: key 'allow' in [network]: '*': '*' would allow every host; list the hosts");
        FAILS(PROXY_HEAD "allow = *.com\n",
              ":10: key 'allow' in [network]: '*.com': '*.TLD' would allow a whole top-level "
              "domain");
        FAILS(PROXY_HEAD "allow = 169.254.169.254\n",
              ":10: key 'allow' in [network]: '169.254.169.254': this address is in the fixed "
              "deny set (loopback, private, link-local, ...): the proxy never connects to it");
        FAILS(PROXY_HEAD "resolve = git.test\n",
              ":10: key 'resolve' in [network]: 'git.test': expected NAME:ADDRESS (e.g. "
              "git.test:127.0.0.1)");
        FAILS(HEAD "[network]\nallow = github.com\n", ":7: [network] allow, deny, resolve, test_ca "
                                                      "and [inject] rules need [network] mode = "
                                                      "proxy");
        FAILS(PROXY_HEAD "[inject \"x\"]\nhost = a.test\nmethods = GET\nscope = s\nsecret = k\n",
              ":10: section [inject \"x\"]: key 'paths': required (e.g. /org/repo.git/**)");
        FAILS(PROXY_HEAD "[inject \"x\"]\nhost = a.test\nmethods = TRACE\n",
              ":12: key 'methods' in [inject \"x\"]: 'TRACE': not one of GET, HEAD, POST, PUT, "
              "PATCH, DELETE, OPTIONS");
        FAILS(PROXY_HEAD "[inject \"x\"]\nhost = a.test\npaths = /a/../b\n",
              ":12: key 'paths' in [inject \"x\"]: '/a/../b': '.' or '..' in the pattern");
        FAILS(PROXY_HEAD "[inject \"x\"]\nhost = 10.0.0.1\n",
              ":11: key 'host' in [inject \"x\"]: '10.0.0.1': one exact host name, not an "
              "address or a wildcard");
        FAILS(PROXY_HEAD "[inject \"x\"]\nhost = a.test\nhost = b.test\n",
              ":12: key 'host' in [inject \"x\"]: duplicate key (first set on line 11)");
        FAILS(PROXY_HEAD "[inject \"x\"]\nhost = a.test\ncolour = red\n",
              ":12: key 'colour' in [inject \"x\"]: unknown key (expected host, port, methods, "
              "paths, scope, secret, scheme, username, header, push_refs or push_delete)");
        FAILS(HEAD "[network]\nmode = proxy\n[inject \"x\"]\nhost = a.test\nmethods = GET\n"
                   "paths = /x\nscope = s\nsecret = k\n",
              ":8: section [inject \"x\"]: needs a broker ([broker] policy): it checks the "
              "agent's tokens and holds the secret");
        FAILS(PROXY_HEAD "[inject \"x\"]\n[inject \"x\"]\n",
              ":11: section [inject \"x\"]: duplicate rule (first on line 10)");
}
END_TEST

START_TEST(proxy_mode_lint_warns_about_test_only_keys)
{
        _cleanup_config_ struct config *c =
                load_ok(PROXY_HEAD "allow = git.test\nresolve = git.test:127.0.0.1\n"
                                   "test_ca = /srv/ca.pem\n");
        struct lint l = {0};
        bool resolve = false, ca = false, budget = false, mode = false;

        ck_assert_int_ge(config_lint(c, NULL, &l), 0);
        for (size_t i = 0; i < l.n; i++) {
                const struct lint_finding *f = &l.findings[i];
                bool net = f->section && streq(f->section, "network") && f->key;

                resolve |= net && streq(f->key, "resolve") && strstr(f->message, "test only");
                ca |= net && streq(f->key, "test_ca") && strstr(f->message, "test only");
                budget |= net && streq(f->key, "bytes_out") && strstr(f->message, "not set");
                mode |= net && streq(f->key, "mode");
        }
        lint_done(&l);
        ck_assert(resolve && ca && budget);
        ck_assert(!mode); /* proxy mode itself is the safe way to give the agent a network */
}
END_TEST

START_TEST(defaults_apply_when_keys_are_absent)
{
        _cleanup_config_ struct config *c = load_ok(HEAD);

        ck_assert_str_eq(c->workspace.name, "ws");
        ck_assert_str_eq(c->workspace.state, "/srv/state");
        ck_assert_str_eq(c->workspace.mountpoint, "/srv/state/mnt");
        ck_assert_str_eq(c->repo.source, "/srv/src");
        ck_assert_str_eq(c->repo.rev, "HEAD");
        ck_assert_str_eq(c->repo.path, "/workspace");
        ck_assert_str_eq(c->home.path, "/home/agent");
        ck_assert(!c->home.persist);
        ck_assert_uint_eq(c->home.n_seeds, 0);
        ck_assert_uint_eq(c->n_mirrors, 0);
        ck_assert_str_eq(c->broker.socket, "/srv/state/broker.sock");
        ck_assert_str_eq(c->broker.dir, "/srv/state/broker");
        ck_assert_ptr_null(c->broker.policy);
        ck_assert_uint_eq(c->limits.bytes, 4ULL << 30);
        ck_assert_uint_eq(c->limits.files, 100000);
        ck_assert_uint_eq(c->limits.timeout, 3600);
        ck_assert_uint_eq(c->limits.memory, 4ULL << 30);
        ck_assert_uint_eq(c->limits.processes, 512);
        ck_assert_uint_eq(c->limits.cpu, 3600);
        ck_assert_uint_eq(c->limits.tmp, 512ULL << 20);
        ck_assert_uint_eq(c->limits.tmp_files, 32768); /* one per 16 KiB of tmp */
        ck_assert(!c->limits.set_bytes);
        ck_assert_int_eq(c->network.mode, CONFIG_NETWORK_NONE);
        ck_assert_ptr_nonnull(c->run.env);
        ck_assert_ptr_null(c->run.env[0]);
        ck_assert_str_eq(c->run.user, "agent");
        ck_assert_uint_eq(c->run.host_uids.first, CONFIG_HOST_UID_MIN);
        ck_assert_uint_eq(c->run.host_uids.last, CONFIG_HOST_UID_MAX);
}
END_TEST

START_TEST(host_uid_range_is_parsed)
{
        _cleanup_config_ struct config *c = load_ok(HEAD "[run]\nhost_uids = 600000 - 699999\n");
        ck_assert_uint_eq(c->run.host_uids.first, 600000);
        ck_assert_uint_eq(c->run.host_uids.last, 699999);
        config_free(TAKE_PTR(c));
        c = load_ok(HEAD "[run]\nhost_uids = 2147483647-2147483647\n");
        ck_assert_uint_eq(c->run.host_uids.first, 2147483647U);
        ck_assert_uint_eq(c->run.host_uids.last, 2147483647U);
}
END_TEST

START_TEST(container_settings_are_parsed)
{
        /* In a container the ids are its user namespace's: a Pod's are 0-65535. */
        _cleanup_config_ struct config *c =
                load_ok(HEAD "[limits]\ncgroup = container\n[run]\nhost_uids = "
                             "60000-60255\n[logs]\nstdout = json\n");
        ck_assert_int_eq(c->limits.cgroup, CONFIG_CGROUP_CONTAINER);
        ck_assert_uint_eq(c->run.host_uids.first, 60000);
        ck_assert(c->logs.stdout_json);
        config_free(TAKE_PTR(c));
        c = load_ok(HEAD);
        ck_assert_int_eq(c->limits.cgroup, CONFIG_CGROUP_SANDBOX);
        ck_assert(!c->logs.stdout_json);
}
END_TEST

START_TEST(bad_host_uid_ranges_are_refused)
{
        /* Below the floor: system ids, users, nobody (a container's own ids
         * only with [limits] cgroup = container); above: negative as an int. */
        FAILS(HEAD "[run]\nhost_uids = 1000-70000\n",
              ":7: key 'host_uids' in [run]: ids below 65536 are for a container's own user "
              "namespace: only with [limits] cgroup = container");
        FAILS(HEAD "[run]\nhost_uids = 0-0\n",
              ":7: key 'host_uids' in [run]: 0-0 is out of range (FIRST <= LAST, both 65536 to "
              "2147483647, or from 1000 with [limits] cgroup = container)");
        FAILS(HEAD "[run]\nhost_uids = 3000000000-3000000001\n",
              ":7: key 'host_uids' in [run]: 3000000000-3000000001 is out of range (FIRST <= "
              "LAST, both 65536 to 2147483647, or from 1000 with [limits] cgroup = container)");
        FAILS(HEAD "[run]\nhost_uids = 700000-600000\n",
              ":7: key 'host_uids' in [run]: 700000-600000 is out of range (FIRST <= LAST, both "
              "65536 to 2147483647, or from 1000 with [limits] cgroup = container)");
        FAILS(HEAD "[run]\nhost_uids = 600000\n",
              ":7: key 'host_uids' in [run]: '600000' is not a range FIRST-LAST");
        FAILS(HEAD "[run]\nhost_uids = 600000-x\n",
              ":7: key 'host_uids' in [run]: '600000-x' is not a range of two whole numbers");
        FAILS(HEAD "[run]\nhost_uids = -5-10\n",
              ":7: key 'host_uids' in [run]: '-5-10' is not a range of two whole numbers");
        FAILS(HEAD "[run]\nhost_uids = 600000-700000\nhost_uids = 600000-700000\n",
              ":8: key 'host_uids' in [run]: duplicate key (first set on line 7)");
        FAILS(HEAD "[limits]\ncgroup = pod\n",
              ":7: key 'cgroup' in [limits]: 'pod' is not 'sandbox' or 'container'");
        FAILS(HEAD "[logs]\nstdout = yes\n",
              ":7: key 'stdout' in [logs]: 'yes' is not 'none' or 'json'");
        FAILS(HEAD "[fs]\nio_uring = on\n",
              ":7: key 'io_uring' in [fs]: 'on' is not 'auto' or 'off'");
}
END_TEST

START_TEST(fs_io_uring_is_auto_unless_off)
{
        _cleanup_config_ struct config *c = load_ok(HEAD);
        _cleanup_config_ struct config *a = load_ok(HEAD "[fs]\nio_uring = auto\n");
        _cleanup_config_ struct config *o = load_ok(HEAD "[fs]\nio_uring = off\n");

        ck_assert(!c->fs.io_uring_off);
        ck_assert(!a->fs.io_uring_off);
        ck_assert(o->fs.io_uring_off);
}
END_TEST

START_TEST(every_key_is_parsed)
{
        _cleanup_config_ struct config *c =
                load_ok("; a comment\n"
                        "[workspace]\nname = my-ws.1\nstate = /srv/st\nmountpoint = /srv/mnt\n"
                        "[repo]\nsource = /srv/src\nrev = v1.2^{commit}\npath = /src\n"
                        "[home]\npath = /home/bot\npersist = yes\n"
                        "seed = /etc/skel/.bashrc\nseed = /srv/gitconfig -> .config/git/config\n"
                        "[mirror \"cache\"]\nsource = /var/cache/apt\npath = /var/cache/apt\n"
                        "exclude = *.lock, partial\nexclude = lock\n"
                        "[mirror \"docs\"]\nsource = /usr/share/doc\npath = /opt/doc\n"
                        "[broker]\nsocket = /run/b.sock\npolicy = /srv/policy.ini\ndir = /srv/b\n"
                        "[limits]\nbytes = 10G\nfiles = 2000\ntimeout = 15m\nmemory = 512M\n"
                        "processes = 64\ncpu = 2h\ntmp = 64M\n"
                        "[network]\nmode = host\n"
                        "[run]\nenv = TERM, LANG\nenv = TZ\nuser = bot\n");

        ck_assert_str_eq(c->workspace.name, "my-ws.1");
        ck_assert_str_eq(c->workspace.mountpoint, "/srv/mnt");
        ck_assert_str_eq(c->repo.rev, "v1.2^{commit}");
        ck_assert_str_eq(c->repo.path, "/src");
        ck_assert_str_eq(c->home.path, "/home/bot");
        ck_assert(c->home.persist);
        ck_assert_uint_eq(c->home.n_seeds, 2);
        ck_assert_str_eq(c->home.seeds[0].source, "/etc/skel/.bashrc");
        ck_assert_str_eq(c->home.seeds[0].dest, ".bashrc");
        ck_assert_str_eq(c->home.seeds[1].dest, ".config/git/config");
        ck_assert_uint_eq(c->home.seeds[1].line, 14);
        ck_assert_uint_eq(c->n_mirrors, 2);
        ck_assert_str_eq(c->mirrors[0].name, "cache");
        ck_assert_uint_eq(c->mirrors[0].line, 15);
        ck_assert_uint_eq(c->mirrors[0].path_line, 17);
        ck_assert_str_eq(c->mirrors[0].exclude[0], "*.lock");
        ck_assert_str_eq(c->mirrors[0].exclude[1], "partial");
        ck_assert_str_eq(c->mirrors[0].exclude[2], "lock");
        ck_assert_ptr_null(c->mirrors[0].exclude[3]);
        ck_assert_ptr_null(c->mirrors[1].exclude[0]);
        ck_assert_str_eq(c->mirrors[1].path, "/opt/doc");
        ck_assert_str_eq(c->broker.socket, "/run/b.sock");
        ck_assert_str_eq(c->broker.policy, "/srv/policy.ini");
        ck_assert_str_eq(c->broker.dir, "/srv/b");
        ck_assert_uint_eq(c->limits.bytes, 10ULL << 30);
        ck_assert_uint_eq(c->limits.files, 2000);
        ck_assert_uint_eq(c->limits.timeout, 900);
        ck_assert_uint_eq(c->limits.memory, 512ULL << 20);
        ck_assert_uint_eq(c->limits.processes, 64);
        ck_assert_uint_eq(c->limits.cpu, 7200);
        ck_assert_uint_eq(c->limits.tmp, 64ULL << 20);
        ck_assert_uint_eq(c->limits.tmp_files, 4096); /* derived from tmp */
        ck_assert(c->limits.set_bytes && c->limits.set_processes);
        ck_assert_int_eq(c->network.mode, CONFIG_NETWORK_HOST);
        ck_assert_str_eq(c->run.env[0], "TERM");
        ck_assert_str_eq(c->run.env[1], "LANG");
        ck_assert_str_eq(c->run.env[2], "TZ");
        ck_assert_ptr_null(c->run.env[3]);
        ck_assert_str_eq(c->run.user, "bot");
}
END_TEST

START_TEST(config_dir_specifier_expands)
{
        char want[4200];
        _cleanup_config_ struct config *c =
                load_ok("[workspace]\nname = ws\nstate = %C/state\n[repo]\nsource = /srv/src\n"
                        "[broker]\npolicy = %C/p%%.ini\n");
        _cleanup_free_ char *dir = realpath(tmpdir, NULL);

        snprintf(want, sizeof(want), "%s/state", dir);
        ck_assert_str_eq(c->workspace.state, want);
        snprintf(want, sizeof(want), "%s/p%%.ini", dir);
        ck_assert_str_eq(c->broker.policy, want);
}
END_TEST

START_TEST(unknown_specifier_is_refused)
{
        FAILS(HEAD "[broker]\npolicy = %x/p\n",
              ":7: key 'policy' in [broker]: unknown specifier '%x' (use %C, %R or %%)");
}
END_TEST

START_TEST(worktree_specifier_outside_git_is_refused)
{
        FAILS("[workspace]\nname = ws\nstate = /srv/s\n[repo]\nsource = %R\n",
              ":5: key 'source' in [repo]: %R used, but the config is not inside a git work "
              "tree");
}
END_TEST

START_TEST(unknown_key_is_an_error)
{
        FAILS(HEAD "[limits]\nbytez = 1G\n", ":7: key 'bytez' in [limits]: unknown key");
}
END_TEST

START_TEST(unknown_section_is_an_error)
{
        FAILS(HEAD "\n[netwrok]\nmode = none\n", ":7: unknown section [netwrok]");
}
END_TEST

START_TEST(key_outside_section_is_an_error)
{
        FAILS("name = x\n", ":1: key 'name' outside of any section");
}
END_TEST

START_TEST(malformed_line_is_an_error)
{
        FAILS(HEAD "[limits]\njust some words\n",
              ":7: malformed line: expected 'key = value' or '[section]'");
}
END_TEST

START_TEST(unterminated_section_is_an_error)
{
        FAILS("[workspace\nname = x\n",
              ":1: malformed line: expected 'key = value' or '[section]'");
}
END_TEST

START_TEST(relative_path_is_refused)
{
        FAILS("[workspace]\nname = ws\nstate = srv/state\n",
              ":3: key 'state' in [workspace]: 'srv/state' must be a clean absolute path (no "
              "'..', '.', '//' or trailing '/')");
}
END_TEST

START_TEST(dotdot_is_refused)
{
        FAILS("[workspace]\nname = ws\nstate = /srv/../etc\n",
              ":3: key 'state' in [workspace]: '/srv/../etc' must be a clean absolute path (no "
              "'..', '.', '//' or trailing '/')");
        FAILS(HEAD "[home]\npath = /home/./agent\n",
              ":7: key 'path' in [home]: '/home/./agent' must be a clean absolute path (no "
              "'..', '.', '//' or trailing '/')");
        FAILS(HEAD "[home]\nseed = /etc/skel/.bashrc -> ../.bashrc\n",
              ":7: key 'seed' in [home]: destination '../.bashrc' must be a clean relative path "
              "inside the home");
}
END_TEST

START_TEST(trailing_slash_and_double_slash_are_refused)
{
        FAILS(HEAD "[repo]\npath = /work/\n",
              ":7: key 'path' in [repo]: '/work/' must be a clean absolute path (no '..', '.', "
              "'//' or trailing '/')");
        FAILS(HEAD "[mirror \"m\"]\nsource = /usr//share\n",
              ":7: key 'source' in [mirror]: '/usr//share' must be a clean absolute path (no "
              "'..', '.', '//' or trailing '/')");
}
END_TEST

START_TEST(duplicate_key_is_refused)
{
        FAILS(HEAD "[limits]\nbytes = 1G\n\nbytes = 2G\n",
              ":9: key 'bytes' in [limits]: duplicate key (first set on line 7)");
}
END_TEST

START_TEST(bad_types_are_refused)
{
        FAILS(HEAD "[home]\npersist = maybe\n",
              ":7: key 'persist' in [home]: 'maybe' is not a boolean (true/false)");
        FAILS(HEAD "[limits]\nbytes = 10 MB\n",
              ":7: key 'bytes' in [limits]: '10 MB' is not a size (e.g. 512M, 4G)");
        FAILS(HEAD "[limits]\nfiles = 1e6\n",
              ":7: key 'files' in [limits]: '1e6' is not a whole number");
        FAILS(HEAD "[limits]\nfiles = -5\n",
              ":7: key 'files' in [limits]: '-5' is not a whole number");
        FAILS(HEAD "[limits]\ntimeout = 5w\n",
              ":7: key 'timeout' in [limits]: '5w' is not a duration (e.g. 90s, 15m, 2h)");
        FAILS(HEAD "[network]\nmode = bridge\n",
              ":7: key 'mode' in [network]: 'bridge' is not 'none', 'proxy' or 'host'");
        FAILS(HEAD "[run]\nenv = TERM, 1BAD\n",
              ":7: key 'env' in [run]: '1BAD' is not a variable name");
        FAILS(HEAD "[run]\nuser = Root!\n", ":7: key 'user' in [run]: 'Root!' is not a valid "
                                            "user name");
        FAILS("[workspace]\nname = ../x\n",
              ":2: key 'name' in [workspace]: '../x' must be 1-64 letters, digits, '.', '_' or "
              "'-', not starting with '.' or '-'");
}
END_TEST

START_TEST(out_of_range_values_are_refused)
{
        FAILS(HEAD "[limits]\nprocesses = 0\n",
              ":7: key 'processes' in [limits]: 0 is out of range (1 to 1000000)");
        FAILS(HEAD "[limits]\nbytes = 1K\n",
              ":7: key 'bytes' in [limits]: 1K is out of range (1048576 to 17592186044416)");
        FAILS(HEAD "[limits]\nmemory = 99999999999999999999999\n",
              ":7: key 'memory' in [limits]: '99999999999999999999999' is too large");
        FAILS(HEAD "[limits]\nbytes = 20000000T\n",
              ":7: key 'bytes' in [limits]: '20000000T' is too large");
        FAILS(HEAD "[limits]\ntmp_files = 8\n",
              ":7: key 'tmp_files' in [limits]: 8 is out of range (16 to 100000000)");
}
END_TEST

START_TEST(tmp_files_given_overrides_the_derived_count)
{
        _cleanup_config_ struct config *c = load_ok(HEAD "[limits]\ntmp = 1M\ntmp_files = 100\n");

        ck_assert_uint_eq(c->limits.tmp_files, 100);
        config_free(c);
        c = load_ok(HEAD "[limits]\ntmp = 1M\n");
        ck_assert_uint_eq(c->limits.tmp_files, 64);
}
END_TEST

START_TEST(empty_value_is_refused)
{
        FAILS(HEAD "[repo]\nrev =\n", ":7: key 'rev' in [repo]: empty value");
}
END_TEST

START_TEST(bad_revision_is_refused)
{
        FAILS(HEAD "[repo]\nrev = --upload-pack=evil\n",
              ":7: key 'rev' in [repo]: '--upload-pack=evil' is not a revision");
}
END_TEST

START_TEST(missing_required_keys_are_named)
{
        FAILS("[workspace]\nname = ws\n", ": key 'state' in [workspace]: required");
        FAILS("[workspace]\nstate = /s\n[repo]\nsource = /r\n",
              ": key 'name' in [workspace]: required");
        FAILS("[workspace]\nname = ws\nstate = /s\n", ": key 'source' in [repo]: required");
        FAILS(HEAD "[mirror \"m\"]\nsource = /usr/share\n",
              ":6: key 'path' in [mirror \"m\"]: required");
        FAILS(HEAD "[mirror \"m\"]\n", ":6: key 'source' in [mirror \"m\"]: required");
}
END_TEST

START_TEST(duplicate_inside_paths_are_refused)
{
        FAILS(HEAD "[home]\npath = /workspace\n",
              ":7: key 'path' in [home]: '/workspace' duplicates the key 'path' in [repo]");
        FAILS(HEAD "[mirror \"a\"]\nsource = /usr/share\npath = /opt/a\n"
                   "[mirror \"b\"]\nsource = /usr/lib\npath = /opt/a\n",
              ":11: key 'path' in [mirror \"b\"]: '/opt/a' duplicates the key 'path' in "
              "[mirror \"a\"]");
}
END_TEST

START_TEST(overlapping_mirrors_are_refused)
{
        FAILS(HEAD "[mirror \"a\"]\nsource = /usr/share\npath = /opt/a\n"
                   "[mirror \"b\"]\nsource = /usr/lib\npath = /opt/a/b\n",
              ":11: key 'path' in [mirror \"b\"]: '/opt/a/b' overlaps the key 'path' in "
              "[mirror \"a\"]");
        FAILS(HEAD "[mirror \"a\"]\nsource = /usr/share\npath = /workspace/vendor\n",
              ":8: key 'path' in [mirror \"a\"]: '/workspace/vendor' overlaps the key 'path' in "
              "[repo]");
}
END_TEST

START_TEST(duplicate_mirror_section_is_refused)
{
        FAILS(HEAD "[mirror \"a\"]\nsource = /usr/share\npath = /opt/a\n[mirror \"a\"]\n",
              ":9: section [mirror \"a\"]: duplicate mirror (first on line 6)");
        FAILS(HEAD "[mirror a]\n", ":6: section [mirror a]: expected [mirror \"NAME\"]");
        FAILS(HEAD "[mirror \"a/b\"]\n",
              ":6: section [mirror \"a/b\"]: mirror name may hold only letters, digits, '.', "
              "'_' and '-'");
}
END_TEST

START_TEST(system_paths_inside_are_refused)
{
        FAILS(HEAD "[repo]\npath = /usr/src\n",
              ":7: key 'path' in [repo]: '/usr/src' overlaps '/usr', which the sandbox "
              "provides itself");
        FAILS(HEAD "[mirror \"p\"]\nsource = /usr/share\npath = /proc\n",
              ":8: key 'path' in [mirror \"p\"]: '/proc' overlaps '/proc', which the sandbox "
              "provides itself");
        FAILS(HEAD "[home]\npath = /.cloister/x\n",
              ":7: key 'path' in [home]: '/.cloister/x' overlaps '/.cloister', which the "
              "sandbox provides itself");
        FAILS(HEAD "[repo]\npath = /\n",
              ":7: key 'path' in [repo]: '/' is the synthetic root and cannot be a part");
}
END_TEST

START_TEST(state_inside_source_is_refused)
{
        FAILS("[workspace]\nname = ws\nstate = /srv/src/.state\n[repo]\nsource = /srv/src\n",
              ":3: key 'state' in [workspace]: '/srv/src/.state' overlaps [repo] source "
              "'/srv/src'");
        FAILS("[workspace]\nname = ws\nstate = /srv/st\nmountpoint = /srv/src/mnt\n[repo]\n"
              "source = /srv/src\n",
              ":4: key 'mountpoint' in [workspace]: '/srv/src/mnt' is inside [repo] source");
        FAILS(HEAD "[mirror \"m\"]\nsource = /srv\npath = /opt/m\n",
              ":6: key 'source' in [mirror \"m\"]: '/srv' overlaps the workspace state or "
              "mountpoint");
}
END_TEST

START_TEST(missing_file_is_reported)
{
        struct config *c = NULL;
        _cleanup_free_ char *err = NULL;
        char want[4200];

        snprintf(want, sizeof(want), "%s/absent.ini: cannot open: No such file or directory",
                 tmpdir);
        char path[4200];
        snprintf(path, sizeof(path), "%s/absent.ini", tmpdir);
        ck_assert_int_eq(config_load(path, &c, &err), -ENOENT);
        ck_assert_str_eq(err, want);
}
END_TEST

START_TEST(empty_file_reports_the_first_missing_key)
{
        load_fails("", 0, ": key 'name' in [workspace]: required");
}
END_TEST

START_TEST(huge_file_is_refused_before_parsing)
{
        size_t len = 10 * 1024 * 1024;
        char *big = malloc(len);
        ck_assert_ptr_nonnull(big);
        memset(big, '#', len);
        load_fails(big, len, ": file too large (10485760 bytes, at most 1048576)");
        free(big);
}
END_TEST

START_TEST(embedded_nul_is_refused_with_its_line)
{
        static const char text[] = "[workspace]\nname = ws\nstate = /s\0/x\n";
        load_fails(text, sizeof(text) - 1, ":3: NUL byte in config");
}
END_TEST

START_TEST(overlong_line_is_refused_not_split)
{
        char text[1024];
        char value[400];

        memset(value, 'a', sizeof(value) - 1);
        value[sizeof(value) - 1] = '\0';
        snprintf(text, sizeof(text), "[workspace]\nname = ws\nstate = /%s\n", value);
        FAILS(text, ":3: line longer than 199 bytes");
}
END_TEST

START_TEST(too_many_mirrors_are_refused)
{
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);

        fputs(HEAD, f);
        for (int i = 0; i <= CONFIG_MAX_MIRRORS; i++)
                fprintf(f, "[mirror \"m%d\"]\nsource = /usr/share/m%d\npath = /opt/m%d\n", i, i, i);
        fclose(f);
        FAILS(text, ":198: too many mirrors (at most 64)");
        free(text);
}
END_TEST

static Suite *config_suite(void)
{
        Suite *s = suite_create("config");
        TCase *tc = tcase_create("parse");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, defaults_apply_when_keys_are_absent);
        tcase_add_test(tc, every_key_is_parsed);
        tcase_add_test(tc, fs_io_uring_is_auto_unless_off);
        tcase_add_test(tc, config_dir_specifier_expands);
        tcase_add_test(tc, unknown_specifier_is_refused);
        tcase_add_test(tc, worktree_specifier_outside_git_is_refused);
        tcase_add_test(tc, unknown_key_is_an_error);
        tcase_add_test(tc, unknown_section_is_an_error);
        tcase_add_test(tc, key_outside_section_is_an_error);
        tcase_add_test(tc, malformed_line_is_an_error);
        tcase_add_test(tc, unterminated_section_is_an_error);
        tcase_add_test(tc, relative_path_is_refused);
        tcase_add_test(tc, dotdot_is_refused);
        tcase_add_test(tc, trailing_slash_and_double_slash_are_refused);
        tcase_add_test(tc, duplicate_key_is_refused);
        tcase_add_test(tc, bad_types_are_refused);
        tcase_add_test(tc, out_of_range_values_are_refused);
        tcase_add_test(tc, tmp_files_given_overrides_the_derived_count);
        tcase_add_test(tc, empty_value_is_refused);
        tcase_add_test(tc, bad_revision_is_refused);
        tcase_add_test(tc, missing_required_keys_are_named);
        tcase_add_test(tc, duplicate_inside_paths_are_refused);
        tcase_add_test(tc, overlapping_mirrors_are_refused);
        tcase_add_test(tc, duplicate_mirror_section_is_refused);
        tcase_add_test(tc, system_paths_inside_are_refused);
        tcase_add_test(tc, state_inside_source_is_refused);
        tcase_add_test(tc, missing_file_is_reported);
        tcase_add_test(tc, empty_file_reports_the_first_missing_key);
        tcase_add_test(tc, huge_file_is_refused_before_parsing);
        tcase_add_test(tc, embedded_nul_is_refused_with_its_line);
        tcase_add_test(tc, overlong_line_is_refused_not_split);
        tcase_add_test(tc, too_many_mirrors_are_refused);
        tcase_add_test(tc, host_uid_range_is_parsed);
        tcase_add_test(tc, bad_host_uid_ranges_are_refused);
        tcase_add_test(tc, container_settings_are_parsed);
        tcase_add_test(tc, proxy_mode_keys_and_rules_are_parsed);
        tcase_add_test(tc, proxy_mode_errors_name_line_and_key);
        tcase_add_test(tc, proxy_mode_lint_warns_about_test_only_keys);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        SRunner *sr = srunner_create(config_suite());
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
