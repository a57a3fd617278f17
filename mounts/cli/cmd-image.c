/* SPDX-License-Identifier: MIT */
/*
 * cmd-image.c: `cloister image import|list|inspect|rm|gc|build`, the image
 * store that every workspace of this user shares (mounts/image/image.h,
 * docs/cloister-image.md). --json everywhere: one JSON document on stdout.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"
#include "config.h"
#include "image.h"
#include "lib/util.h"
#include "lib/values.h"

#define FAIL(code, ...) command_fail(&command_image, code, __VA_ARGS__)

static int store_get(char **ret)
{
        int r = image_store_path(ret);

        if (r < 0)
                return FAIL(1, "cannot tell where the image store is ($XDG_STATE_HOME, $HOME): %s",
                            strerror(-r));
        return 0;
}

static void print_json(const char *text)
{
        fputs(text, stdout);
        fputc('\n', stdout);
}

static int import_run(int argc, char **argv, bool json, const char *lock, bool update_lock,
                      const struct image_limits *l)
{
        _cleanup_free_ char *store = NULL, *digest = NULL, *error = NULL;
        bool is_new = false;
        int r;

        if (argc != 1)
                return FAIL(EXIT_USAGE, "import takes one SOURCE; see 'cloister help image'");
        if (lock && !startswith(argv[0], "dir:"))
                return FAIL(EXIT_USAGE, "--lock checks a Debian root: a dir: source, or build");
        if (store_get(&store))
                return 1;
        if (lock) {
                r = image_lock_apply(argv[0] + strlen("dir:"), lock, update_lock, &error);
                if (r < 0)
                        return FAIL(1, "import %s: %s", argv[0], error ? error : strerror(-r));
        }
        r = image_import(store, argv[0], l, &digest, &is_new, &error);
        if (r < 0)
                return FAIL(1, "import %s: %s", argv[0], error ? error : strerror(-r));
        if (json)
                printf("{\"digest\":\"%s\",\"new\":%s}\n", digest, is_new ? "true" : "false");
        else
                printf("%s%s\n", digest, is_new ? "" : " (stored already)");
        return 0;
}

static int list_run(int argc, bool json)
{
        _cleanup_free_ char *store = NULL, *text = NULL, *error = NULL;
        _cleanup_(json_decrefp) json_t *arr = NULL;
        json_t *rec;
        size_t i;
        int r;

        if (argc != 0)
                return FAIL(EXIT_USAGE, "list takes no argument");
        if (store_get(&store))
                return 1;
        r = image_list_json(store, &text, &error);
        if (r < 0)
                return FAIL(1, "%s", error ? error : strerror(-r));
        if (json) {
                print_json(text);
                return 0;
        }
        arr = json_loads(text, 0, NULL);
        json_array_foreach (arr, i, rec) {
                printf("%s  %6.1f MiB  %zu layer%s  %s\n",
                       json_string_value(json_object_get(rec, "digest")),
                       (double)json_integer_value(json_object_get(rec, "size")) / (1 << 20),
                       json_array_size(json_object_get(rec, "layers")),
                       json_array_size(json_object_get(rec, "layers")) == 1 ? " " : "s",
                       json_string_value(json_object_get(rec, "source")));
        }
        return 0;
}

static int inspect_run(int argc, char **argv, bool json)
{
        _cleanup_free_ char *store = NULL, *digest = NULL, *root = NULL, *text = NULL,
                            *error = NULL, *out = NULL;
        _cleanup_(json_decrefp) json_t *rec = NULL;
        int r;

        if (argc != 1)
                return FAIL(EXIT_USAGE, "inspect takes one DIGEST");
        if (store_get(&store))
                return 1;
        r = image_resolve(store, argv[0], &digest, &error);
        if (r >= 0)
                r = image_lookup(store, digest, &root, &text, &error);
        if (r < 0)
                return FAIL(1, "%s", error ? error : strerror(-r));
        rec = json_loads(text, 0, NULL);
        if (!rec || json_object_set_new(rec, "root", json_string(root)) < 0)
                return FAIL(1, "%s: a damaged record", digest);
        out = json_dumps(rec, JSON_SORT_KEYS | (json ? JSON_COMPACT : JSON_INDENT(2)));
        if (!out)
                return FAIL(1, "out of memory");
        print_json(out);
        return 0;
}

static int rm_run(int argc, char **argv, bool json)
{
        _cleanup_free_ char *store = NULL;
        _cleanup_(json_decrefp) json_t *removed = json_array();
        int ret = 0;

        if (argc < 1)
                return FAIL(EXIT_USAGE, "rm takes one or more DIGESTs");
        if (store_get(&store))
                return 1;
        for (int i = 0; i < argc; i++) {
                _cleanup_free_ char *digest = NULL, *error = NULL;
                int r = image_resolve(store, argv[i], &digest, &error);
                if (r >= 0)
                        r = image_remove(store, digest, &error);
                if (r < 0) {
                        ret = FAIL(1, "rm %s: %s", argv[i], error ? error : strerror(-r));
                        continue;
                }
                json_array_append_new(removed, json_string(digest));
                if (!json)
                        printf("removed %s\n", digest);
        }
        if (json) {
                _cleanup_free_ char *t = json_dumps(removed, JSON_COMPACT);
                if (t)
                        printf("{\"removed\":%s}\n", t);
        }
        return ret;
}

static int gc_run(int argc, bool json)
{
        _cleanup_free_ char *store = NULL, *text = NULL, *error = NULL;
        _cleanup_(json_decrefp) json_t *o = NULL;
        int r;

        if (argc != 0)
                return FAIL(EXIT_USAGE, "gc takes no argument");
        if (store_get(&store))
                return 1;
        r = image_gc(store, &text, &error);
        if (r < 0)
                return FAIL(1, "gc: %s", error ? error : strerror(-r));
        if (json) {
                print_json(text);
                return 0;
        }
        o = json_loads(text, 0, NULL);
        printf("removed %lld unused layers, %lld blobs, %lld unfinished imports\n",
               (long long)json_integer_value(json_object_get(o, "layers")),
               (long long)json_integer_value(json_object_get(o, "blobs")),
               (long long)json_integer_value(json_object_get(o, "tmp")));
        return 0;
}

static int build_run(int argc, const char *debian, const char *packages, const char *mirror,
                     uint64_t epoch, const char *lock, bool update_lock, bool json,
                     const struct image_limits *l)
{
        _cleanup_free_ char *store = NULL, *digest = NULL, *error = NULL;
        int r;

        if (argc != 0 || !debian)
                return FAIL(EXIT_USAGE, "build takes --debian SUITE [--packages A,B,...]");
        if (store_get(&store))
                return 1;
        r = image_build_debian(store, debian, packages, mirror, epoch, lock, update_lock, l,
                               &digest, &error);
        if (r < 0)
                return FAIL(r == -ENOENT ? 1 : 1, "build: %s", error ? error : strerror(-r));
        if (json)
                printf("{\"digest\":\"%s\"}\n", digest);
        else
                printf("%s\n", digest);
        return 0;
}

static int image_run(int argc, char **argv)
{
        static const struct option opts[] = {
                {"json", no_argument, NULL, 'j'},
                {"allow-setuid", no_argument, NULL, 'S'},
                {"max-file", required_argument, NULL, 'F'},
                {"max-size", required_argument, NULL, 'Z'},
                {"max-entries", required_argument, NULL, 'E'},
                {"debian", required_argument, NULL, 'D'},
                {"packages", required_argument, NULL, 'P'},
                {"mirror", required_argument, NULL, 'M'},
                {"source-date-epoch", required_argument, NULL, 'T'},
                {"lock", required_argument, NULL, 'L'},
                {"update-lock", no_argument, NULL, 'U'},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        struct image_limits l;
        const char *debian = NULL, *packages = NULL, *mirror = NULL, *lock = NULL, *verb;
        uint64_t epoch = 0;
        bool json = false, update_lock = false;
        int opt;

        image_limits_default(&l);
        if (argc < 2 || streq(argv[1], "--help") || streq(argv[1], "-h")) {
                command_usage(&command_image);
                return argc < 2 ? EXIT_USAGE : 0;
        }
        verb = argv[1];
        optind = 2;
        while ((opt = getopt_long(argc, argv, "h", opts, NULL)) >= 0) {
                switch (opt) {
                case 'j':
                        json = true;
                        break;
                case 'S':
                        l.allow_setuid = true;
                        break;
                case 'F':
                case 'Z':
                        if (value_parse_size(optarg, opt == 'F' ? &l.max_file : &l.max_size) < 0)
                                return FAIL(EXIT_USAGE, "--%s '%s': not a size",
                                            opt == 'F' ? "max-file" : "max-size", optarg);
                        break;
                case 'E':
                case 'T': {
                        char *end;
                        unsigned long long v;
                        errno = 0;
                        v = strtoull(optarg, &end, 10);
                        if (errno || end == optarg || *end)
                                return FAIL(EXIT_USAGE, "--%s '%s': not a number",
                                            opt == 'E' ? "max-entries" : "source-date-epoch",
                                            optarg);
                        *(opt == 'E' ? &l.max_entries : &epoch) = v;
                        break;
                }
                case 'D':
                        debian = optarg;
                        break;
                case 'P':
                        packages = optarg;
                        break;
                case 'M':
                        mirror = optarg;
                        break;
                case 'L':
                        lock = optarg;
                        break;
                case 'U':
                        update_lock = true;
                        break;
                case 'h':
                        command_usage(&command_image);
                        return 0;
                default:
                        return FAIL(EXIT_USAGE, "unknown option; see 'cloister help image'");
                }
        }
        argc -= optind;
        argv += optind;
        if (update_lock && !lock)
                return FAIL(EXIT_USAGE, "--update-lock names no lock: give --lock FILE too");
        if (streq(verb, "import"))
                return import_run(argc, argv, json, lock, update_lock, &l);
        if (streq(verb, "list") || streq(verb, "ls"))
                return list_run(argc, json);
        if (streq(verb, "inspect"))
                return inspect_run(argc, argv, json);
        if (streq(verb, "rm"))
                return rm_run(argc, argv, json);
        if (streq(verb, "gc"))
                return gc_run(argc, json);
        if (streq(verb, "build"))
                return build_run(argc, debian, packages, mirror, epoch, lock, update_lock, json,
                                 &l);
        return FAIL(EXIT_USAGE, "unknown verb '%s': import, list, inspect, rm, gc or build", verb);
}

const struct command command_image = {
        .name = "image",
        .run = image_run,
};
