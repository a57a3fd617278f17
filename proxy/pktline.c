/* SPDX-License-Identifier: MIT */
/*
 * pktline.c: push scoping for git smart HTTP.
 *
 * A push is POST .../git-receive-pack whose body starts with the ref
 * update commands in pkt-line framing (gitprotocol-pack(5)):
 *     [shallow <oid>]... <old> <new> <ref>\0<capabilities> <old> <new> <ref>... 0000
 * followed by the pack. The proxy holds the body until the flush packet,
 * checks every command against the rule's push_refs patterns (and refuses
 * deletions unless push_delete), and only then lets any byte of the push
 * through. A refusal is answered the way receive-pack answers a rejected
 * update, so git prints "! [remote rejected] REF (reason)": status "ng"
 * lines in report-status, inside side-band 1 when the client asked for it.
 *
 * This reads the framing git defines; a signed push (push-cert) is refused
 * rather than half-understood.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/util.h"
#include "proxy-private.h"

#define PUSH_CMDS_MAX 4096

struct push_cmd {
        char *ref;
        bool delete;
};

struct push_scan {
        char *buf;
        size_t len, cap;
        int state; /* 1 complete, 0 more, < 0 malformed */
        const char *error;
        struct push_cmd *cmds;
        size_t n_cmds;
        bool report_status, sideband;
};

struct push_scan *proxy_push_scan_new(void)
{
        return calloc(1, sizeof(struct push_scan));
}

void proxy_push_scan_free(struct push_scan *s)
{
        if (!s)
                return;
        for (size_t i = 0; i < s->n_cmds; i++)
                free(s->cmds[i].ref);
        free(s->cmds);
        free(s->buf);
        free(s);
}

int proxy_push_scan_state(const struct push_scan *s)
{
        return s->state;
}

static bool is_oid(const char *s, size_t n)
{
        if (n != 40 && n != 64)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
                        return false;
        return true;
}

static bool is_zero(const char *s, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (s[i] != '0')
                        return false;
        return true;
}

static int fail(struct push_scan *s, const char *why)
{
        s->state = -1;
        s->error = why;
        return -1;
}

/* One packet's payload (without the 4 length digits). */
static int command(struct push_scan *s, const char *p, size_t n)
{
        const char *nul = memchr(p, '\0', n);
        size_t line = nul ? (size_t)(nul - p) : n;

        if (line > 0 && p[line - 1] == '\n')
                line--;
        if (s->n_cmds == 0 && line >= 8 && strncmp(p, "shallow ", 8) == 0)
                return 0;
        if (line >= 9 && strncmp(p, "push-cert", 9) == 0)
                return fail(s, "signed pushes (push-cert) are not relayed");
        if (nul && s->n_cmds == 0) {
                /* the capabilities, space-separated, after the first command */
                const char *caps = nul + 1, *end = p + n;
                while (caps < end) {
                        const char *sp = memchr(caps, ' ', (size_t)(end - caps));
                        size_t l = sp ? (size_t)(sp - caps) : (size_t)(end - caps);
                        if (l > 0 && caps[l - 1] == '\n')
                                l--;
                        if ((l == 13 && !memcmp(caps, "report-status", 13)) ||
                            (l == 16 && !memcmp(caps, "report-status-v2", 16)))
                                s->report_status = true;
                        if ((l == 13 && !memcmp(caps, "side-band-64k", 13)) ||
                            (l == 9 && !memcmp(caps, "side-band", 9)))
                                s->sideband = true;
                        caps += l + 1;
                }
        }
        /* "<old> <new> <ref>" */
        const char *sp1 = memchr(p, ' ', line), *sp2;
        if (!sp1 || !(sp2 = memchr(sp1 + 1, ' ', line - (size_t)(sp1 + 1 - p))))
                return fail(s, "a malformed ref update command");
        size_t ol = (size_t)(sp1 - p), nl = (size_t)(sp2 - sp1 - 1);
        size_t rl = line - (size_t)(sp2 + 1 - p);
        if (!is_oid(p, ol) || ol != nl || !is_oid(sp1 + 1, nl) || rl == 0 || rl > PROXY_REF_MAX)
                return fail(s, "a malformed ref update command");
        if (s->n_cmds >= PUSH_CMDS_MAX)
                return fail(s, "more than 4096 ref updates in one push");
        struct push_cmd *nc = realloc(s->cmds, (s->n_cmds + 1) * sizeof(*nc));
        if (!nc)
                return fail(s, "out of memory");
        s->cmds = nc;
        nc[s->n_cmds].ref = strndup(sp2 + 1, rl);
        nc[s->n_cmds].delete = is_zero(sp1 + 1, nl);
        if (!nc[s->n_cmds].ref)
                return fail(s, "out of memory");
        s->n_cmds++;
        return 0;
}

int proxy_push_scan_feed(struct push_scan *s, const char *data, size_t len)
{
        size_t off = 0;

        if (s->state != 0 || len == 0)
                return s->state;
        if (s->len + len > PUSH_COMMANDS_MAX)
                return fail(s, "a push's ref commands exceed 1 MiB");
        if (s->len + len > s->cap) {
                size_t cap = MAX(s->cap * 2, s->len + len);
                char *b = realloc(s->buf, cap);
                if (!b)
                        return fail(s, "out of memory");
                s->buf = b;
                s->cap = cap;
        }
        memcpy(s->buf + s->len, data, len);
        s->len += len;
        while (s->len - off >= 4) {
                unsigned v = 0;
                for (int i = 0; i < 4; i++) {
                        int h = s->buf[off + i];
                        int d = isdigit(h) ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10 : -1;
                        if (d < 0)
                                return fail(s, "not pkt-line framing");
                        v = v * 16 + (unsigned)d;
                }
                if (v == 0) {
                        s->state = 1; /* flush: the commands are complete */
                        return 1;
                }
                if (v < 4)
                        return fail(s, "not pkt-line framing");
                if (s->len - off < v)
                        break;
                if (command(s, s->buf + off + 4, v - 4) < 0)
                        return -1;
                off += v;
        }
        memmove(s->buf, s->buf + off, s->len - off);
        s->len -= off;
        return 0;
}

const char *proxy_push_scan_verdict(struct push_scan *s, const struct proxy_inject_rule *r,
                                    char *buf, size_t size)
{
        if (s->state < 0) {
                snprintf(buf, size, "push refused: %s", s->error);
                return buf;
        }
        if (s->state == 0) {
                snprintf(buf, size, "push refused: the request ended inside its ref commands");
                return buf;
        }
        for (size_t i = 0; i < s->n_cmds; i++) {
                const char *ref = s->cmds[i].ref;
                bool ok = false;

                if (!proxy_ref_name_is_valid(ref)) {
                        snprintf(buf, size, "push refused: '%.100s' is not a valid ref", ref);
                        return buf;
                }
                if (s->cmds[i].delete &&!r->push_delete) {
                        snprintf(buf, size, "push refused: deleting %.200s (push_delete = false)",
                                 ref);
                        return buf;
                }
                for (char **p = r->push_refs; !ok && p && *p; p++)
                        ok = proxy_ref_pattern_match(*p, ref);
                if (r->push_refs && !ok) {
                        snprintf(buf, size,
                                 "push refused: %.200s is outside the rule's push_refs (%.200s%s)",
                                 ref, r->push_refs[0], r->push_refs[1] ? ", ..." : "");
                        return buf;
                }
        }
        return NULL;
}

static void pkt(struct evbuffer *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void pkt(struct evbuffer *out, const char *fmt, ...)
{
        char line[1024];
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
        va_end(ap);
        if (n < 0)
                return;
        if ((size_t)n >= sizeof(line) - 1)
                n = (int)sizeof(line) - 2;
        for (int i = 0; i < n - 1; i++)
                if ((unsigned char)line[i] < 0x20)
                        line[i] = '?';
        evbuffer_add_printf(out, "%04x", n + 4);
        evbuffer_add(out, line, (size_t)n);
}

void proxy_push_refuse(struct client *c, const char *reason)
{
        struct push_scan *s = c->push;
        char why[300];

        snprintf(why, sizeof(why), "%s", reason);
        for (char *p = why; *p; p++)
                if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
                        *p = '?';
        struct evbuffer *report = evbuffer_new(), *body = evbuffer_new();
        struct evbuffer *out = bufferevent_get_output(c->bev);

        if (!report || !body || !s || s->state != 1 || !s->report_status) {
                /* Without report-status git only understands an error packet. */
                if (body)
                        pkt(body, "ERR %s\n", why);
        } else {
                pkt(report, "unpack ok\n");
                for (size_t i = 0; i < s->n_cmds; i++)
                        pkt(report, "ng %s %s\n", s->cmds[i].ref, why);
                evbuffer_add(report, "0000", 4);
                if (s->sideband) {
                        /* the report goes out on band 1, in packets of at most 65520 bytes */
                        while (evbuffer_get_length(report) > 0) {
                                char chunk[8192];
                                int k = evbuffer_remove(report, chunk, sizeof(chunk));
                                evbuffer_add_printf(body, "%04x\001", k + 5);
                                evbuffer_add(body, chunk, (size_t)k);
                        }
                        evbuffer_add(body, "0000", 4);
                } else {
                        evbuffer_add_buffer(body, report);
                }
        }
        c->rec.status = 200;
        proxy_record_write(c);
        proxy_upstream_free(c->up);
        c->up = NULL;
        evbuffer_add_printf(out,
                            "HTTP/1.1 200 OK\r\n"
                            "Content-Type: application/x-git-receive-pack-result\r\n"
                            "Cache-Control: no-cache\r\n"
                            "x-cloister-error: %s\r\n"
                            "Content-Length: %zu\r\n"
                            "Connection: close\r\n\r\n",
                            why, body ? evbuffer_get_length(body) : 0);
        if (body)
                evbuffer_add_buffer(out, body);
        if (report)
                evbuffer_free(report);
        if (body)
                evbuffer_free(body);
        if (c->held) {
                evbuffer_free(c->held);
                c->held = NULL;
        }
        c->reqp.on_body = NULL;
        if (!c->req_done && !c->client_eof) {
                c->state = CLIENT_DRAIN;
                c->deadline_ms = proxy_now_ms() + HEAD_TIMEOUT_S * 1000;
                bufferevent_enable(c->bev, EV_READ);
                bufferevent_trigger(c->bev, EV_READ,
                                    BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
                return;
        }
        proxy_client_close_soon(c);
}
