/* SPDX-License-Identifier: MIT */
/*
 * http.c: strict HTTP/1.1 heads and bodies on top of llhttp (http.h).
 */
#include <errno.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http.h"
#include "lib/util.h"
#include "rules.h"

/* Header values may be tokens: wipe them. */
static void wipe_str(char *s)
{
        if (s) {
                sodium_memzero(s, strlen(s));
                free(s);
        }
}

void proxy_http_head_done(struct proxy_http_head *h)
{
        if (!h)
                return;
        free(h->method);
        wipe_str(h->target);
        wipe_str(h->reason);
        for (size_t i = 0; i < h->n_headers; i++) {
                free(h->headers[i].name);
                wipe_str(h->headers[i].value);
        }
        free(h->headers);
        *h = (struct proxy_http_head){0};
}

int proxy_http_head_scan(const char *buf, size_t len, size_t *ret_len, const char **ret_reason)
{
        size_t line_start = 0;

        for (size_t i = 0; i < len; i++) {
                char c = buf[i];
                if (i == PROXY_HEAD_MAX) {
                        *ret_reason = "request or response head longer than 32 KiB";
                        return -EBADMSG;
                }
                if (c == '\0') {
                        *ret_reason = "NUL byte in the head";
                        return -EBADMSG;
                }
                if (c == '\n') {
                        *ret_reason = "bare LF in the head (lines end with CRLF)";
                        return -EBADMSG;
                }
                if (c != '\r')
                        continue;
                if (i + 1 == len)
                        return 0; /* is a LF next? */
                if (buf[i + 1] != '\n') {
                        *ret_reason = "CR without LF in the head";
                        return -EBADMSG;
                }
                if (i == line_start) {
                        if (i == 0) {
                                *ret_reason = "empty line before the start line";
                                return -EBADMSG;
                        }
                        *ret_len = i + 2;
                        return 1;
                }
                i++;
                line_start = i + 1;
                if (line_start < len && (buf[line_start] == ' ' || buf[line_start] == '\t')) {
                        *ret_reason = "obs-fold: a header line continued on the next line";
                        return -EBADMSG;
                }
        }
        if (len >= PROXY_HEAD_MAX) {
                *ret_reason = "request or response head longer than 32 KiB";
                return -EBADMSG;
        }
        return 0;
}

static struct proxy_http *self(llhttp_t *p)
{
        return (struct proxy_http *)p;
}

static int append(char **s, const char *at, size_t len)
{
        size_t old = *s ? strlen(*s) : 0;
        char *n = malloc(old + len + 1);

        if (!n)
                return -1;
        if (old)
                memcpy(n, *s, old);
        memcpy(n + old, at, len);
        n[old + len] = '\0';
        wipe_str(*s);
        *s = n;
        return 0;
}

static int on_method(llhttp_t *p, const char *at, size_t len)
{
        return append(&self(p)->head->method, at, len);
}

static int on_url(llhttp_t *p, const char *at, size_t len)
{
        return append(&self(p)->head->target, at, len);
}

static int on_status(llhttp_t *p, const char *at, size_t len)
{
        return append(&self(p)->head->reason, at, len);
}

static int on_header_field(llhttp_t *p, const char *at, size_t len)
{
        struct proxy_http *h = self(p);
        struct proxy_http_head *hd = h->head;

        if (h->in_body)
                return 0; /* a trailer field: dropped, its bytes counted by proxy_http_body() */
        if (h->in_value || hd->n_headers == 0) {
                if (hd->n_headers >= PROXY_HEADERS_MAX) {
                        h->too_many = true;
                        return -1;
                }
                struct proxy_header *n =
                        realloc(hd->headers, (hd->n_headers + 1) * sizeof(*hd->headers));
                if (!n)
                        return -1;
                hd->headers = n;
                hd->headers[hd->n_headers++] = (struct proxy_header){0};
                h->in_value = false;
        }
        return append(&hd->headers[hd->n_headers - 1].name, at, len);
}

static int on_header_value(llhttp_t *p, const char *at, size_t len)
{
        struct proxy_http *h = self(p);
        struct proxy_header *x;

        if (h->in_body)
                return 0;
        x = &h->head->headers[h->head->n_headers - 1];
        h->in_value = true;
        return append(&x->value, at, len);
}

static int on_header_value_complete(llhttp_t *p)
{
        struct proxy_http *h = self(p);
        struct proxy_header *x;

        if (h->in_body)
                return 0;
        x = &h->head->headers[h->head->n_headers - 1];
        h->in_value = true;
        if (!x->value && append(&x->value, "", 0) < 0)
                return -1;
        /* llhttp keeps trailing white space of a value; it is not part of it. */
        for (size_t n = strlen(x->value);
             n > 0 && (x->value[n - 1] == ' ' || x->value[n - 1] == '\t');)
                x->value[--n] = '\0';
        return 0;
}

static int on_headers_complete(llhttp_t *p)
{
        return HPE_PAUSED;
}

static int on_body(llhttp_t *p, const char *at, size_t len)
{
        struct proxy_http *h = self(p);

        return h->on_body ? h->on_body(h->userdata, at, len) : 0;
}

enum { CHUNK_HEADER = 1, CHUNK_END };
enum { FRAME_LINE = 1, FRAME_TRAILER };

/* Pause at both ends of a chunk-size line: proxy_http_body() measures it. */
static int on_chunk_header(llhttp_t *p)
{
        self(p)->chunk_event = CHUNK_HEADER;
        return HPE_PAUSED;
}

static int on_chunk_complete(llhttp_t *p)
{
        self(p)->chunk_event = CHUNK_END;
        return HPE_PAUSED;
}

static int on_message_complete(llhttp_t *p)
{
        self(p)->complete = true;
        return HPE_PAUSED;
}

const char *proxy_http_header(const struct proxy_http_head *h, const char *name, int *dup)
{
        const char *v = NULL;

        if (dup)
                *dup = 0;
        for (size_t i = 0; i < h->n_headers; i++) {
                if (strcasecmp(h->headers[i].name, name) != 0)
                        continue;
                if (v && dup)
                        *dup = -1;
                if (!v)
                        v = h->headers[i].value;
        }
        return v;
}

const char *proxy_http_connection_unknown(const struct proxy_http_head *h, char *buf, size_t size)
{
        static const char *const known[] = {"close", "keep-alive", "te", "upgrade",
                                            "http2-settings"};

        for (size_t i = 0; i < h->n_headers; i++) {
                if (strcasecmp(h->headers[i].name, "connection") != 0)
                        continue;
                for (const char *s = h->headers[i].value; *s;) {
                        while (*s == ' ' || *s == '\t' || *s == ',')
                                s++;
                        size_t n = strcspn(s, ","), t = n;
                        while (t > 0 && (s[t - 1] == ' ' || s[t - 1] == '\t'))
                                t--;
                        bool ok = t == 0;
                        for (size_t k = 0; k < ELEMENTSOF(known) && !ok; k++)
                                ok = strlen(known[k]) == t && strncasecmp(s, known[k], t) == 0;
                        if (!ok) {
                                snprintf(buf, size, "%.*s", (int)MIN(t, (size_t)60), s);
                                return buf;
                        }
                        s += n;
                }
        }
        return NULL;
}

int proxy_http_parse_head(struct proxy_http *p, bool request, bool skip_body, const char *buf,
                          size_t len, struct proxy_http_head *ret, const char **ret_reason)
{
        llhttp_errno_t e;
        int dup;

        *p = (struct proxy_http){.on_body = p->on_body, .userdata = p->userdata};
        *ret = (struct proxy_http_head){0};
        llhttp_settings_init(&p->settings);
        p->settings.on_method = on_method;
        p->settings.on_url = on_url;
        p->settings.on_status = on_status;
        p->settings.on_header_field = on_header_field;
        p->settings.on_header_value = on_header_value;
        p->settings.on_header_value_complete = on_header_value_complete;
        p->settings.on_headers_complete = on_headers_complete;
        p->settings.on_body = on_body;
        p->settings.on_message_complete = on_message_complete;
        p->settings.on_chunk_header = on_chunk_header;
        p->settings.on_chunk_complete = on_chunk_complete;
        llhttp_init(&p->parser, request ? HTTP_REQUEST : HTTP_RESPONSE, &p->settings);
        p->head = ret;
        e = llhttp_execute(&p->parser, buf, len);
        if (e != HPE_PAUSED || llhttp_get_error_pos(&p->parser) != buf + len) {
                *ret_reason = p->too_many ? "more than 128 header fields"
                              : e == HPE_OK ? "incomplete head"
                              : e == HPE_PAUSED
                                      ? "head parsed shorter than its blank line"
                                      : llhttp_get_error_reason(&p->parser)
                                                ?: llhttp_errno_name(e);
                goto fail;
        }
        ret->major = llhttp_get_http_major(&p->parser);
        ret->minor = llhttp_get_http_minor(&p->parser);
        if (ret->major != 1 || ret->minor > 1) {
                *ret_reason = "only HTTP/1.0 and HTTP/1.1";
                goto fail;
        }
        for (size_t i = 0; i < ret->n_headers; i++) {
                const char *n = ret->headers[i].name;
                if (!n || !proxy_token_is_valid(n, strlen(n))) {
                        *ret_reason = "a header name that is not a token (white space?)";
                        goto fail;
                }
        }
        if (request) {
                if (!ret->method || !ret->target) {
                        *ret_reason = "no request line";
                        goto fail;
                }
                /* llhttp, built as Debian ships it (not LLHTTP_STRICT_MODE),
                 * takes a tab and a form feed inside the request-target; a
                 * server that splits its request line at any white space
                 * would read another target than the one judged here. */
                for (const char *s = ret->target; *s; s++)
                        if ((unsigned char)*s <= ' ' || (unsigned char)*s == 0x7f) {
                                *ret_reason = "a control byte (tab, form feed) in the request "
                                              "target";
                                goto fail;
                        }
                (void)proxy_http_header(ret, "host", &dup);
                if (dup) {
                        *ret_reason = "more than one Host header";
                        goto fail;
                }
                /* llhttp's own rule (RFC 9112 6.3), which it applies only after the pause. */
                if ((p->parser.flags & F_TRANSFER_ENCODING) && !(p->parser.flags & F_CHUNKED)) {
                        *ret_reason = "a Transfer-Encoding that does not end in chunked";
                        goto fail;
                }
                /* One plain "chunked", the only coding the proxy frames anew; a
                 * list or a repeat ("gzip, chunked", "chunked, chunked") is what
                 * two parsers read two ways. */
                const char *te = proxy_http_header(ret, "transfer-encoding", &dup);
                if (te && (dup || strcasecmp(te, "chunked") != 0)) {
                        *ret_reason = "a Transfer-Encoding other than one plain 'chunked'";
                        goto fail;
                }
                if (te && ret->minor == 0) {
                        *ret_reason = "Transfer-Encoding in an HTTP/1.0 request (RFC 9112 6.1)";
                        goto fail;
                }
        } else {
                ret->status = llhttp_get_status_code(&p->parser);
                if (ret->status < 100 || ret->status > 599) {
                        *ret_reason = "status code out of range";
                        goto fail;
                }
        }
        ret->upgrade =
                llhttp_get_upgrade(&p->parser) || proxy_http_header(ret, "upgrade", NULL) != NULL;
        ret->keep_alive = llhttp_should_keep_alive(&p->parser);
        {
                uint64_t flags = p->parser.flags;
                bool chunked = flags & F_CHUNKED;
                bool length = (flags & F_CONTENT_LENGTH) && p->parser.content_length > 0;
                bool no_body = skip_body || (!request && (ret->status < 200 || ret->status == 204 ||
                                                          ret->status == 304));
                ret->has_body = !no_body &&
                                (chunked || length || (!request && !(flags & F_CONTENT_LENGTH)));
                ret->chunked = chunked;
                ret->has_length = flags & F_CONTENT_LENGTH;
                ret->content_length = ret->has_length ? p->parser.content_length : 0;
                if (skip_body)
                        p->parser.flags |= F_SKIPBODY;
        }
        ret->head_len = len;
        p->in_body = true;
        p->framing = ret->chunked && ret->has_body ? FRAME_LINE : 0;
        llhttp_resume(&p->parser);
        if (!ret->has_body)
                p->complete = true;
        return 0;
fail:
        proxy_http_head_done(ret);
        p->head = NULL;
        return -EBADMSG;
}

/* Count n more bytes of a chunk-size line or of the trailer section, if one is being read. */
static bool framing_add(struct proxy_http *p, size_t n)
{
        if (!p->framing)
                return true;
        p->framing_bytes += n;
        return p->framing_bytes <=
               (p->framing == FRAME_LINE ? PROXY_CHUNK_LINE_MAX : PROXY_HEAD_MAX);
}

int proxy_http_body(struct proxy_http *p, const char *data, size_t len, size_t *ret_used,
                    bool *ret_done, const char **ret_reason)
{
        const char *at = data, *end = data + len;
        llhttp_errno_t e;

        *ret_used = 0;
        *ret_done = p->complete;
        if (p->complete || len == 0)
                return 0;
        for (;;) {
                p->chunk_event = 0;
                e = llhttp_execute(&p->parser, at, (size_t)(end - at));
                if (e == HPE_OK) {
                        if (!framing_add(p, (size_t)(end - at)))
                                goto too_long;
                        *ret_used = len;
                        return 0;
                }
                if (e != HPE_PAUSED)
                        break;
                const char *pos = llhttp_get_error_pos(&p->parser);
                if (!framing_add(p, (size_t)(pos - at)))
                        goto too_long;
                if (p->complete) {
                        *ret_used = (size_t)(pos - data);
                        *ret_done = true;
                        return 0;
                }
                if (!p->chunk_event)
                        break;
                /* A chunk's header ends its size line and starts its data, or
                 * for the last chunk the trailer section; its end starts the
                 * next line. */
                if (p->chunk_event == CHUNK_END)
                        p->framing = FRAME_LINE;
                else
                        p->framing = p->parser.content_length == 0 ? FRAME_TRAILER : 0;
                p->framing_bytes = 0;
                at = pos;
                llhttp_resume(&p->parser);
                /* Run on even at the end of data: the pause may have held
                 * back the message's end (on_message_complete). */
        }
        *ret_reason = llhttp_get_error_reason(&p->parser) ?: llhttp_errno_name(e);
        return -EBADMSG;
too_long:
        *ret_reason = p->framing == FRAME_LINE
                              ? "a chunk-size line (size and extensions) longer than 4 KiB"
                              : "trailer fields longer than 32 KiB";
        return -EBADMSG;
}

bool proxy_http_eof_completes(struct proxy_http *p)
{
        if (p->complete)
                return true;
        if (llhttp_finish(&p->parser) == HPE_PAUSED || p->complete)
                return p->complete;
        return false;
}
