/* SPDX-License-Identifier: MIT */
/*
 * gitdir-tool.c: test driver for fs/gitdir, so the TAP tests can prepare a
 * workspace `.git` in a plain directory (no FUSE) and check it with the
 * real git binary.
 *
 *   gitdir-tool prepare --source S --rev R --dest DIR [--alternates A |
 *                       --repo-path P] [--name N] [--mtime T]
 *   gitdir-tool commit-time SOURCE REV
 *   gitdir-tool objects SOURCE
 *   gitdir-tool alternates REPO_PATH
 *
 * prepare opens DIR (which must exist and be empty) and hands its fd to
 * gitdir_prepare_msg(); without --mtime it uses gitdir_base_commit_time().
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gitdir.h"
#include "lib/util.h"

static int cmd_prepare(int argc, char **argv)
{
        static const struct option opts[] = {
                {"source", required_argument, NULL, 's'},
                {"rev", required_argument, NULL, 'r'},
                {"dest", required_argument, NULL, 'd'},
                {"alternates", required_argument, NULL, 'a'},
                {"repo-path", required_argument, NULL, 'p'},
                {"name", required_argument, NULL, 'n'},
                {"mtime", required_argument, NULL, 'm'},
                {},
        };
        struct gitdir_params p = {.rev = "HEAD", .uid = getuid(), .gid = getgid()};
        _cleanup_free_ char *alt = NULL, *err = NULL;
        _cleanup_close_ int fd = -1;
        const char *dest = NULL, *repo_path = "/workspace";
        bool have_mtime = false;
        int c, r;

        while ((c = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
                switch (c) {
                case 's':
                        p.source = optarg;
                        break;
                case 'r':
                        p.rev = optarg;
                        break;
                case 'd':
                        dest = optarg;
                        break;
                case 'a':
                        p.alternates = optarg;
                        break;
                case 'p':
                        repo_path = optarg;
                        break;
                case 'n':
                        p.name = optarg;
                        break;
                case 'm':
                        p.lower_mtime = strtoll(optarg, NULL, 10);
                        have_mtime = true;
                        break;
                default:
                        return 2;
                }
        }
        if (!p.source || !dest) {
                fprintf(stderr, "gitdir-tool prepare: --source and --dest are required\n");
                return 2;
        }
        if (!p.alternates) {
                r = gitdir_alternates_path(repo_path, &alt);
                if (r < 0) {
                        fprintf(stderr, "gitdir-tool: bad repo path %s: %s\n", repo_path,
                                strerror(-r));
                        return 1;
                }
                p.alternates = alt;
        }
        if (!have_mtime) {
                r = gitdir_base_commit_time(p.source, p.rev, &p.lower_mtime);
                if (r < 0) {
                        fprintf(stderr, "gitdir-tool: commit time of %s in %s: %s\n", p.rev,
                                p.source, strerror(-r));
                        return 1;
                }
        }
        fd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
                fprintf(stderr, "gitdir-tool: open %s: %m\n", dest);
                return 1;
        }
        r = gitdir_prepare_msg(&p, fd, &err);
        if (r < 0) {
                fprintf(stderr, "gitdir-tool: prepare %s: %s (%s)\n", dest, err ? err : "?",
                        strerror(-r));
                return 1;
        }
        return 0;
}

int main(int argc, char **argv)
{
        _cleanup_free_ char *s = NULL;
        int64_t t;
        int r;

        if (argc >= 2 && streq(argv[1], "prepare"))
                return cmd_prepare(argc - 1, argv + 1);
        if (argc == 4 && streq(argv[1], "commit-time")) {
                r = gitdir_base_commit_time(argv[2], argv[3], &t);
                if (r < 0) {
                        fprintf(stderr, "gitdir-tool: %s\n", strerror(-r));
                        return 1;
                }
                printf("%" PRId64 "\n", t);
                return 0;
        }
        if (argc == 3 && (streq(argv[1], "objects") || streq(argv[1], "alternates"))) {
                r = streq(argv[1], "objects") ? gitdir_source_objects(argv[2], &s)
                                              : gitdir_alternates_path(argv[2], &s);
                if (r < 0) {
                        fprintf(stderr, "gitdir-tool: %s\n", strerror(-r));
                        return 1;
                }
                printf("%s\n", s);
                return 0;
        }
        fprintf(stderr, "usage: gitdir-tool prepare|commit-time|objects|alternates ...\n");
        return 2;
}
