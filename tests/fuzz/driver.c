/* SPDX-License-Identifier: MIT */
/*
 * driver.c: a main() for a fuzz harness when libFuzzer is not there (gcc,
 * or clang without -Dfuzz=true), so `meson test` runs every harness in
 * every build, under ASan too.
 *
 * It takes libFuzzer's command line (files or directories of inputs,
 * -runs=N, -seed=N, -max_len=N, -dict=FILE; other flags are ignored) and
 * feeds LLVMFuzzerTestOneInput each input once, then N inputs made by
 * stacking a few of libFuzzer's kinds of mutation on a random input: byte
 * and bit changes, inserts, erases, copies, dictionary tokens, numbers
 * and splices of another input. There is no coverage feedback: this is a
 * smoke run that repeats exactly for a given seed, not a fuzzer.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "lib/util.h"

struct blob {
        uint8_t *data;
        size_t size;
};

struct blobs {
        struct blob *v;
        size_t n;
};

static uint64_t rng_state;

/* splitmix64: small, and the same sequence on every machine for a seed. */
static uint64_t rng(void)
{
        uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
}

static size_t below(size_t n)
{
        return n ? (size_t)(rng() % n) : 0;
}

static void blobs_add(struct blobs *b, const uint8_t *data, size_t size)
{
        struct blob *v = realloc(b->v, (b->n + 1) * sizeof(*v));

        if (!v || !(v[b->n].data = malloc(size ? size : 1))) {
                fprintf(stderr, "driver: out of memory\n");
                exit(1);
        }
        memcpy(v[b->n].data, data, size);
        v[b->n].size = size;
        b->v = v;
        b->n++;
}

static int file_add(struct blobs *b, const char *path, size_t max_len)
{
        FILE *f = fopen(path, "rb");
        uint8_t *buf;
        size_t n;

        if (!f)
                return -errno;
        buf = malloc(max_len + 1);
        if (!buf) {
                fclose(f);
                return -ENOMEM;
        }
        n = fread(buf, 1, max_len, f);
        fclose(f);
        blobs_add(b, buf, n);
        free(buf);
        return 0;
}

static int path_add(struct blobs *b, const char *path, size_t max_len)
{
        struct stat sb;
        struct dirent **names = NULL;
        int n;

        if (stat(path, &sb) < 0)
                return -errno;
        if (!S_ISDIR(sb.st_mode))
                return file_add(b, path, max_len);
        n = scandir(path, &names, NULL, alphasort); /* sorted: the same order everywhere */
        if (n < 0)
                return -errno;
        for (int i = 0; i < n; i++) {
                char sub[4096];
                if (names[i]->d_name[0] != '.') {
                        snprintf(sub, sizeof(sub), "%s/%s", path, names[i]->d_name);
                        if (stat(sub, &sb) == 0 && S_ISREG(sb.st_mode))
                                file_add(b, sub, max_len);
                }
                free(names[i]);
        }
        free(names);
        return 0;
}

/* libFuzzer's dictionary format: [name=]"value", with \\, \" and \xNN escapes. */
static int dict_load(struct blobs *d, const char *path)
{
        FILE *f = fopen(path, "r");
        char line[1024];

        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f)) {
                char *q = strchr(line, '"'), *end = strrchr(line, '"');
                uint8_t tok[512];
                size_t n = 0;

                if (line[0] == '#' || !q || end == q)
                        continue;
                for (char *c = q + 1; c < end && n < sizeof(tok); c++) {
                        if (c[0] == '\\' && c + 1 < end && (c[1] == '\\' || c[1] == '"')) {
                                tok[n++] = (uint8_t) * ++c;
                        } else if (c[0] == '\\' && c + 3 < end && c[1] == 'x') {
                                char hex[3] = {c[2], c[3], 0};
                                tok[n++] = (uint8_t)strtoul(hex, NULL, 16);
                                c += 3;
                        } else {
                                tok[n++] = (uint8_t)*c;
                        }
                }
                if (n)
                        blobs_add(d, tok, n);
        }
        fclose(f);
        return 0;
}

/* Insert len bytes at pos, within cap. */
static size_t insert(uint8_t *buf, size_t size, size_t cap, size_t pos, const uint8_t *src,
                     size_t len)
{
        if (size + len > cap)
                len = cap - size;
        memmove(buf + pos + len, buf + pos, size - pos);
        memmove(buf + pos, src, len);
        return size + len;
}

static const uint8_t special[] = {'\n', '[', ']', '=', '"', '%', ' ', '\t', ',',  '#',  ';',
                                  ':',  '/', '.', '-', '0', '9', 0,   0xff, 0xc3, '\r', '\\'};

static size_t mutate(uint8_t *buf, size_t size, size_t cap, const struct blobs *corpus,
                     const struct blobs *dict)
{
        size_t pos = below(size + 1), len;

        switch (below(10)) {
        case 0: /* erase */
                if (size == 0)
                        break;
                pos = below(size);
                len = 1 + below(MIN(size - pos, (size_t)16));
                memmove(buf + pos, buf + pos + len, size - pos - len);
                return size - len;
        case 1: /* insert a special byte */
                return insert(buf, size, cap, pos, &special[below(sizeof(special))], 1);
        case 2: /* insert a run of one byte */ {
                uint8_t run[64];
                len = 1 + below(sizeof(run));
                memset(run, below(2) ? special[below(sizeof(special))] : (int)below(256), len);
                return insert(buf, size, cap, pos, run, len);
        }
        case 3: /* change a byte */
                if (size)
                        buf[below(size)] = (uint8_t)rng();
                return size;
        case 4: /* flip a bit */
                if (size)
                        buf[below(size)] ^= (uint8_t)(1u << below(8));
                return size;
        case 5: /* a dictionary token */
        case 6:
                if (dict->n) {
                        const struct blob *t = &dict->v[below(dict->n)];
                        return insert(buf, size, cap, pos, t->data, t->size);
                }
                return size;
        case 7: /* copy a part of the input elsewhere in it */ {
                uint8_t part[256];
                if (size == 0)
                        break;
                size_t from = below(size);
                len = 1 + below(MIN(size - from, sizeof(part)));
                memcpy(part, buf + from, len);
                return insert(buf, size, cap, pos, part, len);
        }
        case 8: /* a number where digits were */ {
                static const char *const nums[] = {"0",
                                                   "1",
                                                   "4294967296",
                                                   "18446744073709551615",
                                                   "18446744073709551616",
                                                   "99999999999999999999",
                                                   "86401",
                                                   "-1",
                                                   "1d",
                                                   "17179869184T",
                                                   "3601"};
                const char *s = nums[below(ELEMENTSOF(nums))];
                for (size_t i = 0; i < size; i++)
                        if (buf[i] >= '0' && buf[i] <= '9' && below(4) == 0) {
                                size_t end = i;
                                while (end < size && buf[end] >= '0' && buf[end] <= '9')
                                        end++;
                                memmove(buf + i, buf + end, size - end);
                                size -= end - i;
                                return insert(buf, size, cap, i, (const uint8_t *)s, strlen(s));
                        }
                return size;
        }
        default: /* splice in a part of another input */ {
                const struct blob *o = &corpus->v[below(corpus->n)];
                if (o->size == 0)
                        break;
                size_t from = below(o->size);
                len = 1 + below(o->size - from);
                return insert(buf, size, cap, pos, o->data + from, len);
        }
        }
        return size;
}

int main(int argc, char **argv)
{
        struct blobs corpus = {0}, dict = {0};
        unsigned long long runs = 0, seed = 1;
        size_t max_len = 4096;
        uint8_t *buf;

        for (int i = 1; i < argc; i++) {
                const char *a = argv[i];
                if (strncmp(a, "-runs=", 6) == 0)
                        runs = strtoull(a + 6, NULL, 10);
                else if (strncmp(a, "-seed=", 6) == 0)
                        seed = strtoull(a + 6, NULL, 10);
                else if (strncmp(a, "-max_len=", 9) == 0)
                        max_len = (size_t)strtoull(a + 9, NULL, 10);
                else if (strncmp(a, "-dict=", 6) == 0) {
                        if (dict_load(&dict, a + 6) < 0) {
                                fprintf(stderr, "driver: %s: %s\n", a + 6, strerror(errno));
                                return 1;
                        }
                } else if (a[0] == '-')
                        fprintf(stderr, "driver: ignoring libFuzzer flag %s\n", a);
        }
        if (max_len == 0)
                max_len = 1;
        for (int i = 1; i < argc; i++) {
                int r;
                if (argv[i][0] == '-')
                        continue;
                r = path_add(&corpus, argv[i], max_len);
                if (r < 0) {
                        fprintf(stderr, "driver: %s: %s\n", argv[i], strerror(-r));
                        return 1;
                }
        }
        if (corpus.n == 0)
                blobs_add(&corpus, (const uint8_t *)"", 0);

        for (size_t i = 0; i < corpus.n; i++)
                LLVMFuzzerTestOneInput(corpus.v[i].data, corpus.v[i].size);

        rng_state = seed;
        buf = malloc(max_len);
        if (!buf)
                return 1;
        for (unsigned long long r = 0; r < runs; r++) {
                const struct blob *b = &corpus.v[below(corpus.n)];
                size_t size = MIN(b->size, max_len);
                uint8_t *in;

                memcpy(buf, b->data, size);
                for (size_t m = 1 + below(5); m > 0; m--)
                        size = mutate(buf, size, max_len, &corpus, &dict);
                /* A copy of exactly size bytes, so ASan sees a read past the end. */
                in = malloc(size ? size : 1);
                if (!in)
                        return 1;
                memcpy(in, buf, size);
                LLVMFuzzerTestOneInput(in, size);
                free(in);
        }
        printf("driver: %zu corpus inputs and %llu mutations (seed %llu): no broken promise\n",
               corpus.n, runs, seed);
        free(buf);
        for (size_t i = 0; i < corpus.n; i++)
                free(corpus.v[i].data);
        for (size_t i = 0; i < dict.n; i++)
                free(dict.v[i].data);
        free(corpus.v);
        free(dict.v);
        return 0;
}
