/* SPDX-License-Identifier: MIT */
/*
 * broker-link.c: the proxy's connection to the broker's admin socket
 * (docs/broker-protocol.md), used for `introspect`, without blocking the
 * loop. One connection carries many requests; the broker answers them in
 * order, and each carries an "id" that the answer echoes, which is how an
 * answer finds its caller. If the connection drops, every waiting caller
 * gets an error (fail closed) and the next call reconnects.
 */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "broker/broker.h"
#include "broker/client.h"
#include "lib/util.h"
#include "proxy-private.h"

struct pending {
        uint64_t ticket;
        proxy_broker_cb cb; /* NULL: cancelled */
        void *userdata;
};

struct broker_link {
        struct proxy *px;
        struct bufferevent *bev;
        struct pending *q;
        size_t n, cap;
        uint64_t next_ticket;
};

static void link_fail(struct broker_link *l, const char *why)
{
        struct proxy *px = l->px;

        px->link = NULL;
        /* Callers may start new calls from their callbacks: those get a new link. */
        for (size_t i = 0; i < l->n; i++)
                if (l->q[i].cb)
                        l->q[i].cb(l->q[i].userdata, NULL, why);
        if (l->bev)
                bufferevent_free(l->bev);
        free(l->q);
        free(l);
}

void proxy_broker_link_free(struct proxy *px)
{
        struct broker_link *l = px->link;

        if (!l)
                return;
        px->link = NULL;
        if (l->bev)
                bufferevent_free(l->bev);
        free(l->q);
        free(l);
}

static void link_read_cb(struct bufferevent *bev, void *arg)
{
        struct broker_link *l = arg;
        struct evbuffer *in = bufferevent_get_input(bev);
        char *line;
        size_t n;

        while ((line = evbuffer_readln(in, &n, EVBUFFER_EOL_LF))) {
                json_t *resp = json_loadb(line, n, 0, NULL);
                json_t *id = resp ? json_object_get(resp, "id") : NULL;
                uint64_t t = json_is_integer(id) ? (uint64_t)json_integer_value(id) : 0;
                struct pending p = {0};
                bool found = false;

                sodium_memzero(line, n);
                free(line);
                for (size_t i = 0; i < l->n; i++)
                        if (l->q[i].ticket == t) {
                                p = l->q[i];
                                memmove(&l->q[i], &l->q[i + 1], (l->n - i - 1) * sizeof(*l->q));
                                l->n--;
                                found = true;
                                break;
                        }
                if (found && p.cb)
                        p.cb(p.userdata, resp, NULL);
                json_decref(resp);
                if (l->px->link != l)
                        return; /* a callback tore the link down */
        }
        if (evbuffer_get_length(in) > BROKER_RESPONSE_MAX)
                link_fail(l, "the broker's answer is too long");
}

static void link_event_cb(struct bufferevent *bev, short what, void *arg)
{
        struct broker_link *l = arg;

        if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR | BEV_EVENT_TIMEOUT))
                link_fail(l, what & BEV_EVENT_TIMEOUT ? "the broker did not answer in time"
                                                      : "the broker closed its admin socket");
}

static int link_open(struct proxy *px, const char **ret_error)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        struct broker_link *l;
        struct timeval tv = {10, 0};
        int fd;

        if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", px->broker_dir,
                     BROKER_ADMIN_SOCKET) >= (int)sizeof(sa.sun_path)) {
                *ret_error = "the admin socket path is too long";
                return -ENAMETOOLONG;
        }
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return negative_errno();
        /* A local connect either succeeds or fails at once. */
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                int r = negative_errno();
                close(fd);
                *ret_error = r == -ENOENT || r == -ECONNREFUSED ? "no broker is running"
                                                                : "cannot connect to it";
                return r;
        }
        evutil_make_socket_nonblocking(fd);
        l = calloc(1, sizeof(*l));
        if (!l) {
                close(fd);
                return -ENOMEM;
        }
        l->px = px;
        l->bev = bufferevent_socket_new(px->base, fd,
                                        BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
        if (!l->bev) {
                close(fd);
                free(l);
                return -ENOMEM;
        }
        bufferevent_setcb(l->bev, link_read_cb, NULL, link_event_cb, l);
        bufferevent_set_timeouts(l->bev, NULL, &tv);
        bufferevent_enable(l->bev, EV_READ | EV_WRITE);
        px->link = l;
        return 0;
}

int proxy_broker_call(struct proxy *px, json_t *req, proxy_broker_cb cb, void *userdata,
                      uint64_t *ret_ticket, const char **ret_error)
{
        struct broker_link *l;
        char *s;
        int r;

        *ret_error = NULL;
        if (!px->link) {
                r = link_open(px, ret_error);
                if (r < 0)
                        return r;
        }
        l = px->link;
        if (l->n == l->cap) {
                size_t cap = MAX(l->cap * 2, (size_t)16);
                struct pending *q = realloc(l->q, cap * sizeof(*q));
                if (!q)
                        return -ENOMEM;
                l->q = q;
                l->cap = cap;
        }
        uint64_t t = ++l->next_ticket;
        json_object_set_new(req, "id", json_integer((json_int_t)t));
        s = json_dumps(req, JSON_COMPACT);
        if (!s)
                return -ENOMEM;
        r = evbuffer_add(bufferevent_get_output(l->bev), s, strlen(s));
        r |= evbuffer_add(bufferevent_get_output(l->bev), "\n", 1);
        sodium_memzero(s, strlen(s)); /* it holds the agent's token */
        free(s);
        if (r < 0)
                return -ENOMEM;
        l->q[l->n++] = (struct pending){.ticket = t, .cb = cb, .userdata = userdata};
        *ret_ticket = t;
        return 0;
}

void proxy_broker_cancel(struct proxy *px, uint64_t ticket)
{
        struct broker_link *l = px->link;

        for (size_t i = 0; l && i < l->n; i++)
                if (l->q[i].ticket == ticket)
                        l->q[i].cb = NULL;
}
