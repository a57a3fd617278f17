/* SPDX-License-Identifier: MIT */
/*
 * bench-broker.c: a load client for the broker's JSON-lines socket.
 *
 * N client threads each connect to the socket and send the same one-line
 * JSON request again and again, for a fixed time, timing each round trip.
 * A reply counts as a success only if it parses as a JSON object holding
 * the field named by --expect (e.g. "token") and no "error" field; anything
 * else is counted as an error, so a broker that answers quickly with
 * refusals does not look fast. With --get FIELD it sends the request once
 * and prints that field of the reply (how the bench gets a token to verify).
 *
 * usage:
 *   bench-broker --socket PATH --request JSON (--expect FIELD | --expect-error CODE)
 *                [--clients N] [--seconds S] [--reconnect]
 *   bench-broker --socket PATH --request JSON --get FIELD
 * prints: requests=N errors=N seconds=S per_s=R p50_us=X p99_us=Y
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#define MAX_CLIENTS    256
#define MAX_REPLY      (1024 * 1024) /* a reply longer than this is an error */
#define ERROR_EXAMPLES 1

struct options {
        const char *socket;
        const char *request; /* one JSON object, sent with a trailing '\n' */
        const char *expect;
        const char *expect_error;
        const char *get;
        int clients;
        double seconds;
        bool reconnect;
};

struct client {
        pthread_t thread;
        const struct options *o;
        double deadline;
        double *lat_us; /* one entry per successful request */
        size_t n, cap;
        unsigned long errors;
        char *first_error; /* the first bad reply or failure, for the report */
};

static double now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int connect_to(const char *path)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int fd;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        return fd;
}

static int write_all(int fd, const char *p, size_t len)
{
        while (len > 0) {
                ssize_t w = send(fd, p, len, MSG_NOSIGNAL);
                if (w < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                p += w;
                len -= (size_t)w;
        }
        return 0;
}

/*
 * Reads one '\n'-terminated line into *buf (grown as needed). Bytes after
 * the newline are not expected: the protocol is strictly request/reply.
 */
static int read_line(int fd, char **buf, size_t *cap)
{
        size_t len = 0;

        for (;;) {
                ssize_t n;
                char *nl;

                if (len + 4096 + 1 > *cap) {
                        size_t ncap = *cap ? *cap * 2 : 8192;
                        char *nb;
                        if (ncap > MAX_REPLY)
                                return -EMSGSIZE;
                        nb = realloc(*buf, ncap);
                        if (!nb)
                                return -ENOMEM;
                        *buf = nb;
                        *cap = ncap;
                }
                n = read(fd, *buf + len, *cap - len - 1);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        return -ECONNRESET;
                len += (size_t)n;
                (*buf)[len] = '\0';
                nl = memchr(*buf + len - (size_t)n, '\n', (size_t)n);
                if (nl) {
                        *nl = '\0';
                        return 0;
                }
        }
}

/*
 * Returns the reply object if it holds `field`, not false or null, and no
 * "error" (an introspection that says "active": false is not a success).
 */
static json_t *reply_ok(const char *line, const char *field, const char *error)
{
        json_t *j = json_loads(line, 0, NULL), *v = j ? json_object_get(j, field) : NULL;

        if (error) {
                v = j ? json_object_get(j, "error") : NULL;
                if (!json_is_string(v) || strcmp(json_string_value(v), error) != 0) {
                        json_decref(j);
                        return NULL;
                }
                return j;
        }

        if (!j || !json_is_object(j) || json_object_get(j, "error") || !v || json_is_false(v) ||
            json_is_null(v)) {
                json_decref(j);
                return NULL;
        }
        return j;
}

static void note_error(struct client *c, const char *what)
{
        c->errors++;
        if (!c->first_error) {
                c->first_error = strdup(what);
                if (c->first_error && strlen(c->first_error) > 300)
                        c->first_error[300] = '\0'; /* enough to say what went wrong */
        }
}

static int record(struct client *c, double us)
{
        if (c->n == c->cap) {
                size_t ncap = c->cap ? c->cap * 2 : 4096;
                double *nl = realloc(c->lat_us, ncap * sizeof(double));
                if (!nl)
                        return -ENOMEM;
                c->lat_us = nl;
                c->cap = ncap;
        }
        c->lat_us[c->n++] = us;
        return 0;
}

static void *client_main(void *arg)
{
        struct client *c = arg;
        const struct options *o = c->o;
        size_t req_len = strlen(o->request);
        char *req = malloc(req_len + 2), *buf = NULL;
        size_t cap = 0;
        int fd = -1;

        if (!req) {
                note_error(c, "out of memory");
                return NULL;
        }
        memcpy(req, o->request, req_len);
        req[req_len++] = '\n';

        while (now_s() < c->deadline) {
                double t0 = now_s();
                json_t *j;
                int r;

                if (fd < 0) {
                        fd = connect_to(o->socket);
                        if (fd < 0) {
                                note_error(c, strerror(-fd));
                                usleep(10000); /* do not spin on a dead socket */
                                continue;
                        }
                }
                r = write_all(fd, req, req_len);
                if (r >= 0)
                        r = read_line(fd, &buf, &cap);
                if (r < 0) {
                        note_error(c, strerror(-r));
                        close(fd);
                        fd = -1;
                        continue;
                }
                j = reply_ok(buf, o->expect, o->expect_error);
                if (!j)
                        note_error(c, buf);
                else if (record(c, (now_s() - t0) * 1e6) < 0)
                        note_error(c, "out of memory");
                json_decref(j);
                if (o->reconnect) {
                        close(fd);
                        fd = -1;
                }
        }
        if (fd >= 0)
                close(fd);
        free(buf);
        free(req);
        return NULL;
}

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;
        return (x > y) - (x < y);
}

/* One request; prints the string (or JSON) value of o->get. */
static int get_once(const struct options *o)
{
        char *buf = NULL, *line = NULL;
        size_t cap = 0;
        json_t *j = NULL, *v;
        int fd, r;

        fd = connect_to(o->socket);
        if (fd < 0) {
                fprintf(stderr, "bench-broker: connect %s: %s\n", o->socket, strerror(-fd));
                return 1;
        }
        if (asprintf(&line, "%s\n", o->request) < 0) {
                close(fd);
                return 1;
        }
        r = write_all(fd, line, strlen(line));
        if (r >= 0)
                r = read_line(fd, &buf, &cap);
        close(fd);
        free(line);
        if (r < 0) {
                fprintf(stderr, "bench-broker: %s\n", strerror(-r));
                free(buf);
                return 1;
        }
        j = reply_ok(buf, o->get, NULL);
        if (!j) {
                fprintf(stderr, "bench-broker: reply has no '%s': %.300s\n", o->get, buf);
                free(buf);
                return 1;
        }
        v = json_object_get(j, o->get);
        if (json_is_string(v)) {
                puts(json_string_value(v));
        } else {
                char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
                puts(s ? s : "");
                free(s);
        }
        json_decref(j);
        free(buf);
        return 0;
}

static void usage(void)
{
        fprintf(stderr,
                "usage: bench-broker --socket PATH --request JSON "
                "(--expect FIELD|--expect-error CODE [--clients N] [--seconds S] [--reconnect] | "
                "--get FIELD)\n");
}

int main(int argc, char **argv)
{
        static const struct option longopts[] = {
                {"socket", required_argument, NULL, 's'},
                {"request", required_argument, NULL, 'r'},
                {"expect", required_argument, NULL, 'e'},
                {"expect-error", required_argument, NULL, 'E'},
                {"get", required_argument, NULL, 'g'},
                {"clients", required_argument, NULL, 'c'},
                {"seconds", required_argument, NULL, 't'},
                {"reconnect", no_argument, NULL, 'R'},
                {},
        };
        struct options o = {.clients = 1, .seconds = 3};
        struct client *cl;
        double *all, start, elapsed;
        size_t total = 0, k = 0;
        unsigned long errors = 0;
        const char *first_error = NULL;
        int opt;

        while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
                switch (opt) {
                case 's':
                        o.socket = optarg;
                        break;
                case 'r':
                        o.request = optarg;
                        break;
                case 'e':
                        o.expect = optarg;
                        break;
                case 'E':
                        o.expect = "error";
                        o.expect_error = optarg;
                        break;
                case 'g':
                        o.get = optarg;
                        break;
                case 'c':
                        o.clients = atoi(optarg);
                        break;
                case 't':
                        o.seconds = strtod(optarg, NULL);
                        break;
                case 'R':
                        o.reconnect = true;
                        break;
                default:
                        usage();
                        return 2;
                }
        }
        if (!o.socket || !o.request || (!o.expect == !o.get) || o.clients < 1 ||
            o.clients > MAX_CLIENTS || o.seconds <= 0 || o.seconds > 600) {
                usage();
                return 2;
        }
        if (o.get)
                return get_once(&o);

        cl = calloc((size_t)o.clients, sizeof(*cl));
        if (!cl)
                return 1;
        start = now_s();
        for (int i = 0; i < o.clients; i++) {
                cl[i].o = &o;
                cl[i].deadline = start + o.seconds;
                if (pthread_create(&cl[i].thread, NULL, client_main, &cl[i]) != 0) {
                        fprintf(stderr, "bench-broker: cannot start client %d\n", i);
                        return 1;
                }
        }
        for (int i = 0; i < o.clients; i++) {
                pthread_join(cl[i].thread, NULL);
                total += cl[i].n;
                errors += cl[i].errors;
                if (!first_error && cl[i].first_error)
                        first_error = cl[i].first_error;
        }
        elapsed = now_s() - start;

        all = malloc((total ? total : 1) * sizeof(double));
        if (!all)
                return 1;
        for (int i = 0; i < o.clients; i++) {
                memcpy(all + k, cl[i].lat_us, cl[i].n * sizeof(double));
                k += cl[i].n;
        }
        qsort(all, total, sizeof(double), cmp_double);
        printf("requests=%zu errors=%lu seconds=%.2f per_s=%.0f p50_us=%.0f p99_us=%.0f\n", total,
               errors, elapsed, (double)total / elapsed, total ? all[total / 2] : 0.0,
               total ? all[(total * 99) / 100] : 0.0);
        if (first_error)
                fprintf(stderr, "bench-broker: first error: %s\n", first_error);
        for (int i = 0; i < o.clients; i++) {
                free(cl[i].lat_us);
                free(cl[i].first_error);
        }
        free(cl);
        free(all);
        return total > 0 ? 0 : 1;
}
