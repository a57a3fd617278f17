/* SPDX-License-Identifier: MIT */
/*
 * netlog.c: one audit line per request or tunnel, allowed or refused, in
 * <broker dir>/net.jsonl. The log is the broker's format (broker/audit.h):
 * hash-chained, with a head file, so `cloister audit verify` checks it the
 * same way. Refusals by a limit (connections, rate) are coalesced: an agent
 * hammering the proxy gets one line per second saying how many were
 * refused, not one line each, so it cannot grow the log at its own pace.
 *
 * What a line never holds: a token, a secret, a query string or a body.
 * The path is logged for injected requests only (it is what the rule
 * matched); hosts are the normalized ones, or, for a request too malformed
 * to have one, nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "lib/util.h"
#include "proxy-private.h"

void proxy_record_start(struct client *c, const char *kind)
{
        free(c->rec.path);
        c->rec = (struct record){.kind = kind, .start_ms = proxy_now_ms()};
}

static void append(struct proxy *px, json_t *e)
{
        int r;

        if (!e)
                return;
        json_object_set_new(e, "event", json_string("net"));
        json_object_set_new(e, "workspace", json_string(px->workspace));
        r = broker_audit_append(px->audit, e, time(NULL));
        json_decref(e);
        if (r < 0 && !px->audit_broken) {
                px->audit_broken = true; /* fail closed: conn.c refuses from now on */
                if (px->log)
                        px->log(r == -EDQUOT ? "net.jsonl reached its bound ([limits] netlog): "
                                               "refusing all traffic"
                                             : "the audit log cannot be written: refusing all "
                                               "traffic");
        }
        proxy_schedule_head_sync(px);
}

void proxy_record_write(struct client *c)
{
        struct record *rc = &c->rec;
        json_t *e;

        if (rc->written || !rc->kind)
                return;
        rc->written = true;
        e = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I}", "kind", rc->kind, "decision",
                      rc->decision ? rc->decision : "refuse", "run", (json_int_t)c->ls->run_pid,
                      "status", (json_int_t)rc->status, "bytes_out", (json_int_t)rc->bytes_out,
                      "bytes_in", (json_int_t)rc->bytes_in, "ms",
                      (json_int_t)(proxy_now_ms() - rc->start_ms));
        if (!e)
                return;
        if (c->ls->sandbox_pid)
                json_object_set_new(e, "sandbox", json_integer(c->ls->sandbox_pid));
        if (rc->method[0])
                json_object_set_new(e, "method", json_string(rc->method));
        if (rc->host[0])
                json_object_set_new(e, "host", json_stringn(rc->host, strnlen(rc->host, 256)));
        if (rc->port)
                json_object_set_new(e, "port", json_integer(rc->port));
        if (rc->path)
                json_object_set_new(e, "path", json_stringn(rc->path, strnlen(rc->path, 1024)));
        if (rc->rule)
                json_object_set_new(e, "rule", json_string(rc->rule));
        if (rc->jti[0])
                json_object_set_new(e, "jti", json_string(rc->jti));
        if (rc->reason[0])
                json_object_set_new(e, "reason", json_string(rc->reason));
        if (rc->addr[0])
                json_object_set_new(e, "addr", json_string(rc->addr));
        /* json_string refuses invalid UTF-8; names and reasons here are ASCII by construction */
        append(c->px, e);
}

void proxy_record_limit(struct listener *ls, const char *why)
{
        int64_t now = proxy_now_ms();

        ls->refused_count++;
        if (ls->refused_since_ms && now - ls->refused_since_ms < REFUSALS_AUDIT_MS &&
            ls->refused_why == why)
                return;
        append(ls->px, json_pack("{s:s, s:s, s:s, s:I, s:I}", "kind", "limit", "decision", "refuse",
                                 "reason", why, "refused", (json_int_t)ls->refused_count, "run",
                                 (json_int_t)ls->run_pid));
        ls->refused_since_ms = now;
        ls->refused_why = why;
        ls->refused_count = 0;
}
