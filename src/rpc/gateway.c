/* Gateways, asks and tells (gateway.h), and the asks in flight: matched to
 * replies by call id, failed by deadline, by a lost connection or by their
 * endpoint's stop. Asks from other threads are encoded on the calling thread
 * and handed to the loop through the service's mailbox. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/log.h"
#include "core/util.h"
#include "rpc/rpc_int.h"

int
rpc_gateway_new(struct rpc_service *svc, const char *address, const spate_id *token,
                struct rpc_gateway **out, spate_error *err)
{
    struct rpc_gateway *gw = xcalloc(1, sizeof *gw);
    int rc;

    rc = rpc_address_parse(address, gw->peer, sizeof gw->peer, gw->endpoint, sizeof gw->endpoint,
                           err);
    if (rc == 0 && strlen(gw->endpoint) > FRAME_TARGET_MAX)
        rc = spate_error_set(err, SPATE_EINVAL, "endpoint name in '%s' is too long", address);
    if (rc != 0) {
        free(gw);
        return rc;
    }
    gw->svc = svc;
    snprintf(gw->address, sizeof gw->address, "%s/%s", gw->peer, gw->endpoint);
    if (token != NULL)
        gw->token = *token;
    *out = gw;
    return 0;
}

void
rpc_gateway_free(struct rpc_gateway *gw)
{
    free(gw);
}

struct rpc_gateway *
rpc_gateway_with_token(const struct rpc_gateway *gw, const spate_id *token)
{
    struct rpc_gateway *c = xmalloc(sizeof *c);

    *c = *gw;
    memset(&c->token, 0, sizeof c->token);
    if (token != NULL)
        c->token = *token;
    return c;
}

/* ---- pending asks ------------------------------------------------------------- */

static void
pending_remove(struct rpc_service *svc, struct rpc_pending *p)
{
    hmap_remove(&svc->calls, &p->call_node);
    list_remove(&p->deadline_node);
    list_remove(&p->conn_node);
    list_remove(&p->ep_node);
    p->call_id = 0;
}

static struct rpc_future *
pending_future(struct rpc_pending *p)
{
    return container_of(p, struct rpc_future, pending);
}

static void
pending_arm_timer(struct rpc_service *svc)
{
    struct rpc_pending *head;
    uint64_t now = uv_now(&svc->loop);

    if (list_empty(&svc->deadlines))
        return;
    head = container_of(svc->deadlines.next, struct rpc_pending, deadline_node);
    uv_timer_start(&svc->call_timer, gateway_on_timer,
                   head->deadline_ms > now ? head->deadline_ms - now : 0, 0);
}

/* Registers an ask about to be written on c; returns its call id. */
static uint64_t
pending_add(struct rpc_service *svc, struct rpc_future *f, struct rpc_conn *c)
{
    struct rpc_pending *p = &f->pending;
    struct list_node *pos;
    struct rpc_endpoint *caller = rpc_current_endpoint;

    p->call_id = svc->next_call_id++;
    p->conn = c;
    p->deadline_ms = uv_now(&svc->loop) + (uint64_t)p->timeout_ms;
    hmap_insert(&svc->calls, &p->call_node, hmap_hash_u64(p->call_id));
    list_push_back(&c->calls, &p->conn_node);
    if (caller != NULL && caller->svc == svc && caller->state == RPC_EP_RUNNING) {
        p->caller = caller;
        list_push_back(&caller->asks, &p->ep_node);
    }
    /* Sorted by deadline; with one timeout for most asks, the tail is the spot. */
    for (pos = svc->deadlines.prev; pos != &svc->deadlines; pos = pos->prev)
        if (container_of(pos, struct rpc_pending, deadline_node)->deadline_ms <= p->deadline_ms)
            break;
    list_insert_before(pos->next, &p->deadline_node);
    /* A new earliest deadline re-arms; otherwise the armed timer fires first
     * and re-arms itself, which saves a timer update per ask. */
    if (svc->deadlines.next == &p->deadline_node)
        pending_arm_timer(svc);
    return p->call_id;
}

/* Fails with "ask <method> to <target> <what>". */
static void
pending_fail(struct rpc_service *svc, struct rpc_pending *p, int code, const char *what)
{
    struct rpc_future *f = pending_future(p);

    pending_remove(svc, p);
    rpc_future_fail(f, code, "ask %s to %s %s", p->method->name, p->target, what);
    rpc_future_unref(f); /* the pending reference */
}

void
gateway_on_timer(uv_timer_t *t)
{
    struct rpc_service *svc = t->data;
    uint64_t now = uv_now(&svc->loop);

    while (!list_empty(&svc->deadlines)) {
        struct rpc_pending *p =
            container_of(svc->deadlines.next, struct rpc_pending, deadline_node);
        char what[64];

        if (p->deadline_ms > now)
            break;
        snprintf(what, sizeof what, "timed out after %lld ms", (long long)p->timeout_ms);
        pending_fail(svc, p, SPATE_ETIMEDOUT, what);
    }
    pending_arm_timer(svc);
}

void
gateway_fail_conn_calls(struct rpc_conn *c, int code, const char *reason)
{
    struct list_node *n;
    char what[SPATE_ERROR_MESSAGE_MAX];

    snprintf(what, sizeof what, "failed: connection lost (%s)", reason);
    while ((n = c->calls.next) != &c->calls)
        pending_fail(c->svc, container_of(n, struct rpc_pending, conn_node), code, what);
}

void
gateway_fail_endpoint_asks(struct rpc_endpoint *ep)
{
    struct list_node *n;
    char what[300];

    snprintf(what, sizeof what, "cancelled: endpoint '%s' stopped", ep->name);
    while ((n = ep->asks.next) != &ep->asks)
        pending_fail(ep->svc, container_of(n, struct rpc_pending, ep_node), SPATE_ECANCELED, what);
}

void
gateway_on_reply(struct rpc_conn *c, const struct frame *fr)
{
    struct rpc_service *svc = c->svc;
    uint64_t h = hmap_hash_u64(fr->call_id);
    struct rpc_pending *p = NULL;
    struct rpc_future *f;
    struct hmap_node *n;

    HMAP_FOR_EACH_WITH_HASH(n, h, &svc->calls)
    {
        struct rpc_pending *q = container_of(n, struct rpc_pending, call_node);

        if (q->call_id == fr->call_id) {
            p = q;
            break;
        }
    }
    if (p == NULL || p->conn != c) {
        /* Its ask timed out or was cancelled: the answer came too late. */
        SPATE_LOG_DEBUG("rpc", "dropping a late %s for call %llu from %s",
                        frame_type_name(fr->type), (unsigned long long)fr->call_id, c->peer);
        return;
    }
    f = pending_future(p);
    if (fr->type == FRAME_ERROR) {
        char msg[FRAME_ERROR_TEXT_MAX + 1];
        spate_error err = { 0 };
        int code;

        if (frame_decode_error(fr->payload, fr->payload_len, &code, msg, sizeof msg, &err) != 0) {
            conn_close(c, LOG_LEVEL_WARN, "closing rpc connection to %s: %s", c->peer, err.message);
            return;
        }
        pending_remove(svc, p);
        rpc_future_fail(f, code, "%s", msg);
        rpc_future_unref(f);
        return;
    }
    {
        ProtobufCMessage *msg;

        arena_init(&f->arena, f->arena_first, sizeof f->arena_first);
        f->has_arena = true;
        msg = arena_unpack(&f->arena, p->method->response, fr->payload, fr->payload_len);
        if (msg == NULL) {
            conn_close(c, LOG_LEVEL_WARN,
                       "closing rpc connection to %s: undecodable reply to %s (%zu bytes)", c->peer,
                       p->method->name, fr->payload_len);
            return;
        }
        pending_remove(svc, p);
        rpc_future_complete(f, msg, NULL);
        rpc_future_unref(f);
    }
}

/* ---- sending ---------------------------------------------------------------------- */

static size_t
frame_size_of(const struct rpc_gateway *gw, const ProtobufCMessage *req, size_t *payload)
{
    *payload = protobuf_c_message_get_packed_size(req);
    return FRAME_HEADER_BYTES + strlen(gw->endpoint) + *payload;
}

static void
encode_frame(uint8_t *p, const struct rpc_gateway *gw, const struct rpc_method *m, uint64_t call_id,
             const ProtobufCMessage *req, size_t payload)
{
    size_t tlen = strlen(gw->endpoint);

    frame_encode_header(p, m->tell ? FRAME_TELL : FRAME_ASK, m->id, call_id, &gw->token,
                        gw->endpoint, tlen, payload);
    protobuf_c_message_pack(req, p + FRAME_HEADER_BYTES + tlen);
}

/* An ask or tell encoded on another thread, on its way to the loop. */
struct cross_send {
    struct rpc_runnable r;
    struct rpc_service *svc;
    struct rpc_future *f; /* NULL for a tell */
    size_t too_big;       /* an ask's frame size over the limit: fail it */
    char peer[128];
    size_t len;
    uint8_t bytes[];
};

static void
cross_send_run(struct rpc_runnable *r)
{
    struct cross_send *cs = container_of(r, struct cross_send, r);
    struct rpc_service *svc = cs->svc;
    struct rpc_conn *c;

    if (cs->too_big) {
        rpc_future_fail(cs->f, SPATE_EMSGSIZE,
                        "ask %s to %s: request of %zu bytes exceeds rpc.max-frame-size (%zu bytes)",
                        cs->f->pending.method->name, cs->f->pending.target, cs->too_big,
                        svc->max_frame_bytes);
        rpc_future_unref(cs->f);
        free(cs);
        return;
    }
    if (svc->stopping) {
        if (cs->f != NULL) {
            rpc_future_fail(cs->f, SPATE_ECANCELED, "ask %s to %s cancelled: rpc service stopping",
                            cs->f->pending.method->name, cs->f->pending.target);
            rpc_future_unref(cs->f);
        }
        free(cs);
        return;
    }
    c = conn_get(svc, cs->peer);
    if (cs->f != NULL) {
        uint64_t id = pending_add(svc, cs->f, c);

        for (int i = 0; i < 8; i++)
            cs->bytes[8 + i] = (uint8_t)(id >> (56 - 8 * i));
    }
    memcpy(conn_reserve(c, cs->len), cs->bytes, cs->len);
    conn_commit(c, cs->len);
    free(cs);
}

static void
cross_send_post(const struct rpc_gateway *gw, const struct rpc_method *m,
                const ProtobufCMessage *req, size_t total, size_t payload, struct rpc_future *f)
{
    struct cross_send *cs = xmalloc(sizeof *cs + total);

    cs->svc = gw->svc;
    cs->f = f;
    cs->too_big = 0;
    snprintf(cs->peer, sizeof cs->peer, "%s", gw->peer);
    cs->len = total;
    encode_frame(cs->bytes, gw, m, 0, req, payload);
    cs->r.run = cross_send_run;
    rpc_service_post(gw->svc, &cs->r);
}

struct rpc_future *
rpc_ask(const struct rpc_gateway *gw, const struct rpc_method *m, const ProtobufCMessage *req,
        int64_t timeout_ms)
{
    struct rpc_service *svc = gw->svc;
    struct rpc_future *f = rpc_future_new(svc);
    struct rpc_pending *p = &f->pending;
    size_t payload, total;
    struct rpc_conn *c;

    SPATE_ASSERT(!m->tell && req->descriptor == m->request);
    p->method = m;
    p->timeout_ms = timeout_ms > 0 ? timeout_ms : svc->ask_timeout_ms;
    snprintf(p->target, sizeof p->target, "%s", gw->address);
    total = frame_size_of(gw, req, &payload);
    rpc_future_ref(f); /* the pending reference, dropped when it completes */
    if (!rpc_service_in_loop(svc)) {
        if (total > svc->max_frame_bytes) {
            /* Completing belongs to the loop: hand it the failure. */
            struct cross_send *cs = xcalloc(1, sizeof *cs);

            cs->svc = svc;
            cs->f = f;
            cs->too_big = total;
            cs->r.run = cross_send_run;
            rpc_service_post(svc, &cs->r);
            return f;
        }
        cross_send_post(gw, m, req, total, payload, f);
        return f;
    }
    if (total > svc->max_frame_bytes || svc->stopping) {
        if (svc->stopping)
            rpc_future_fail(f, SPATE_ECANCELED, "ask %s to %s cancelled: rpc service stopping",
                            m->name, gw->address);
        else
            rpc_future_fail(f, SPATE_EMSGSIZE,
                            "ask %s to %s: request of %zu bytes exceeds rpc.max-frame-size (%zu "
                            "bytes)",
                            m->name, gw->address, total, svc->max_frame_bytes);
        rpc_future_unref(f);
        return f;
    }
    c = conn_get(svc, gw->peer);
    encode_frame(conn_reserve(c, total), gw, m, pending_add(svc, f, c), req, payload);
    conn_commit(c, total);
    return f;
}

int
rpc_tell(const struct rpc_gateway *gw, const struct rpc_method *m, const ProtobufCMessage *req,
         spate_error *err)
{
    struct rpc_service *svc = gw->svc;
    size_t payload, total;
    struct rpc_conn *c;

    SPATE_ASSERT(m->tell && req->descriptor == m->request);
    total = frame_size_of(gw, req, &payload);
    if (total > svc->max_frame_bytes)
        return spate_error_set(err, SPATE_EMSGSIZE,
                               "tell %s to %s: message of %zu bytes exceeds rpc.max-frame-size "
                               "(%zu bytes)",
                               m->name, gw->address, total, svc->max_frame_bytes);
    if (!rpc_service_in_loop(svc)) {
        cross_send_post(gw, m, req, total, payload, NULL);
        return 0;
    }
    if (svc->stopping)
        return spate_error_set(err, SPATE_ECANCELED, "tell %s to %s: rpc service stopping", m->name,
                               gw->address);
    c = conn_get(svc, gw->peer);
    encode_frame(conn_reserve(c, total), gw, m, 0, req, payload);
    conn_commit(c, total);
    return 0;
}
