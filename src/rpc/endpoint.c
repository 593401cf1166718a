/* Endpoints (endpoint.h): registration, request dispatch with fencing,
 * serving calls, run_async, timers, blocking work, and stopping. Loop thread
 * only, except rpc_endpoint_init/bind before start and run_async. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/log.h"
#include "core/util.h"
#include "rpc/rpc_int.h"

/* A request being served. The decoded message lives in the call's arena,
 * whose first block is inline, so a small request costs one allocation. */
struct rpc_call {
    struct rpc_conn *conn;
    struct rpc_endpoint *ep;
    const struct rpc_method *method;
    uint64_t call_id;
    bool tell;
    struct list_node ep_node;
    struct arena arena;
    char arena_first[512];
};

int
rpc_endpoint_init(struct rpc_endpoint *ep, struct rpc_service *svc, const char *name,
                  const struct rpc_endpoint_ops *ops, spate_error *err)
{
    static const struct rpc_endpoint_ops no_ops;
    size_t len = strlen(name);

    if (len == 0 || len > FRAME_TARGET_MAX)
        return spate_error_set(err, SPATE_EINVAL, "endpoint name '%s' must have 1 to %d bytes",
                               name, FRAME_TARGET_MAX);
    for (size_t i = 0; i < len; i++) {
        char ch = name[i];

        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '-' || ch == '.'))
            return spate_error_set(err, SPATE_EINVAL,
                                   "endpoint name '%s' has a character other than [A-Za-z0-9_.-]",
                                   name);
    }
    memset(ep, 0, sizeof *ep);
    ep->svc = svc;
    ep->name = xstrdup(name);
    ep->ops = ops ? ops : &no_ops;
    ep->state = RPC_EP_NEW;
    atomic_init(&ep->refs, 0);
    list_init(&ep->calls);
    list_init(&ep->asks);
    list_init(&ep->timers);
    return 0;
}

void
rpc_endpoint_bind(struct rpc_endpoint *ep, const struct rpc_protocol *protocol,
                  const void *handlers)
{
    SPATE_ASSERT(ep->binding_count < RPC_MAX_PROTOCOLS);
    for (int i = 0; i < ep->binding_count; i++)
        SPATE_ASSERT(ep->bindings[i].protocol->id != protocol->id);
    ep->bindings[ep->binding_count].protocol = protocol;
    ep->bindings[ep->binding_count].handlers = handlers;
    ep->binding_count++;
}

void
rpc_endpoint_set_log_fields(struct rpc_endpoint *ep, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    if (vsnprintf(ep->log_fields, sizeof ep->log_fields, fmt, ap) < 0)
        ep->log_fields[0] = '\0';
    va_end(ap);
}

void
rpc_endpoint_set_fencing_token(struct rpc_endpoint *ep, const spate_id *token)
{
    ep->fenced = token != NULL;
    if (token != NULL)
        ep->fencing_token = *token;
}

int
rpc_endpoint_start(struct rpc_endpoint *ep, spate_error *err)
{
    struct rpc_service *svc = ep->svc;
    struct rpc_endpoint *prev;

    SPATE_ASSERT(rpc_service_in_loop(svc));
    if (ep->state != RPC_EP_NEW)
        return spate_error_set(err, SPATE_ESTATE, "endpoint '%s' was already started", ep->name);
    if (rpc_service_find_endpoint(svc, ep->name, strlen(ep->name)) != NULL)
        return spate_error_set(err, SPATE_EEXIST, "an endpoint named '%s' is already running",
                               ep->name);
    hmap_insert(&svc->endpoints, &ep->name_node, hmap_hash_string(ep->name));
    ep->state = RPC_EP_RUNNING;
    rpc_endpoint_ref(ep); /* the running reference, dropped at stop */
    SPATE_LOG_DEBUG("rpc", "endpoint '%s' started", ep->name);
    if (ep->ops->on_start != NULL) {
        prev = rpc_enter(ep);
        ep->ops->on_start(ep);
        rpc_leave(prev);
    }
    return 0;
}

bool
rpc_endpoint_is_running(const struct rpc_endpoint *ep)
{
    return ep->state == RPC_EP_RUNNING;
}

void
rpc_endpoint_ref(struct rpc_endpoint *ep)
{
    atomic_fetch_add_explicit(&ep->refs, 1, memory_order_relaxed);
}

void
rpc_endpoint_unref(struct rpc_endpoint *ep)
{
    if (ep == NULL)
        return;
    /* acq_rel: the last dropper sees every write made under other refs. */
    if (atomic_fetch_sub_explicit(&ep->refs, 1, memory_order_acq_rel) != 1)
        return;
    rpc_future_unref(ep->termination);
    free(ep->name);
    if (ep->ops->destroy != NULL)
        ep->ops->destroy(ep);
}

const char *
rpc_endpoint_address(struct rpc_endpoint *ep, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s", ep->svc->address, ep->name);
    return buf;
}

/* ---- serving --------------------------------------------------------------- */

static void
call_free(struct rpc_call *call)
{
    list_remove(&call->ep_node);
    conn_unref(call->conn);
    arena_release(&call->arena);
    free(call);
}

static void
send_error(struct rpc_conn *c, uint16_t method, uint64_t call_id, int code, const char *msg)
{
    uint8_t *p;
    size_t n;

    if (!conn_usable(c))
        return;
    p = conn_reserve(c, FRAME_HEADER_BYTES + 4 + FRAME_ERROR_TEXT_MAX);
    n = frame_encode_error(p + FRAME_HEADER_BYTES, code, msg);
    frame_encode_header(p, FRAME_ERROR, method, call_id, NULL, NULL, 0, n);
    conn_commit(c, FRAME_HEADER_BYTES + n);
}

void
rpc_call_reply(struct rpc_call *call, const ProtobufCMessage *resp)
{
    struct rpc_conn *c = call->conn;
    size_t size, total;
    uint8_t *p;

    if (call->tell)
        return;
    SPATE_ASSERT(resp->descriptor == call->method->response);
    if (conn_usable(c)) {
        size = protobuf_c_message_get_packed_size(resp);
        total = FRAME_HEADER_BYTES + size;
        if (total > c->svc->max_frame_bytes) {
            char msg[200];

            snprintf(msg, sizeof msg,
                     "reply to %s of %zu bytes exceeds rpc.max-frame-size (%zu bytes)",
                     call->method->name, total, c->svc->max_frame_bytes);
            SPATE_LOG_WARN("rpc", "%s", msg);
            send_error(c, call->method->id, call->call_id, SPATE_EMSGSIZE, msg);
        } else {
            p = conn_reserve(c, total);
            frame_encode_header(p, FRAME_REPLY, call->method->id, call->call_id, NULL, NULL, 0,
                                size);
            protobuf_c_message_pack(resp, p + FRAME_HEADER_BYTES);
            conn_commit(c, total);
        }
    }
    call_free(call);
}

void
rpc_call_fail(struct rpc_call *call, int code, const char *fmt, ...)
{
    char msg[FRAME_ERROR_TEXT_MAX + 1];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (call->tell) {
        SPATE_LOG_DEBUG("rpc", "tell %s failed: %s", call->method->name, msg);
        return;
    }
    send_error(call->conn, call->method->id, call->call_id, code < 0 ? code : SPATE_EREMOTE, msg);
    call_free(call);
}

const char *
rpc_call_peer(const struct rpc_call *call)
{
    return call->conn->peer;
}

const struct rpc_method *
rpc_call_method(const struct rpc_call *call)
{
    return call->method;
}

static const struct rpc_method *
endpoint_find_method(struct rpc_endpoint *ep, uint16_t id, const void **handlers)
{
    unsigned proto = id >> 8, num = id & 0xff;

    for (int i = 0; i < ep->binding_count; i++) {
        const struct rpc_protocol *p = ep->bindings[i].protocol;

        if (p->id != proto)
            continue;
        if (num == 0 || num > p->method_count)
            return NULL;
        *handlers = ep->bindings[i].handlers;
        return &p->methods[num - 1];
    }
    return NULL;
}

void
endpoint_on_request(struct rpc_conn *c, const struct frame *fr)
{
    struct rpc_service *svc = c->svc;
    struct rpc_endpoint *ep, *prev;
    const struct rpc_method *m;
    const void *handlers = NULL;
    const ProtobufCMessage *msg;
    struct rpc_call *call;
    char reason[400];
    bool ask = fr->type == FRAME_ASK;

    ep = rpc_service_find_endpoint(svc, fr->target, fr->target_len);
    if (ep == NULL) {
        if (rpc_service_is_tombstone(svc, fr->target, fr->target_len)) {
            /* A peer that has not heard yet: normal in a cluster, not an attack. */
            snprintf(reason, sizeof reason, "endpoint '%.*s' at %s has stopped",
                     (int)fr->target_len, fr->target, svc->address);
            if (ask)
                send_error(c, fr->method, fr->call_id, SPATE_ENOENDPOINT, reason);
            return;
        }
        snprintf(reason, sizeof reason, "no endpoint '%.*s' at %s", (int)fr->target_len, fr->target,
                 svc->address);
        if (ask)
            send_error(c, fr->method, fr->call_id, SPATE_ENOENDPOINT, reason);
        conn_close_after_flush(c,
                               "closing rpc connection from %s: %s frame for unknown endpoint "
                               "'%.*s'",
                               c->peer, frame_type_name(fr->type), (int)fr->target_len, fr->target);
        return;
    }
    m = endpoint_find_method(ep, fr->method, &handlers);
    if (m == NULL || m->tell != !ask) {
        snprintf(reason, sizeof reason, "endpoint '%s' has no %s method 0x%04x", ep->name,
                 ask ? "ask" : "tell", fr->method);
        if (ask)
            send_error(c, fr->method, fr->call_id, SPATE_ENOMETHOD, reason);
        conn_close_after_flush(c, "closing rpc connection from %s: %s", c->peer, reason);
        return;
    }
    if (m->fence == RPC_FENCE_LOCAL && !c->local) {
        /* A control of the cluster from another process: never served. */
        snprintf(reason, sizeof reason,
                 "refused %s from %s: only the process of '%s' may call it (use the REST API)",
                 m->name, c->peer, ep->name);
        SPATE_LOG_LIMITED(&c->svc->refusals, LOG_LEVEL_WARN, "rpc", "%s", reason);
        if (ask)
            send_error(c, fr->method, fr->call_id, SPATE_EPERM, reason);
        return;
    }
    if (m->fence == RPC_FENCE_TOKEN && ep->fenced && !id_equal(&fr->token, &ep->fencing_token)) {
        snprintf(reason, sizeof reason,
                 "fencing token %s rejected by '%s' for %s (its token is %s)", id_str(&fr->token).s,
                 ep->name, m->name, id_str(&ep->fencing_token).s);
        SPATE_LOG_DEBUG("rpc", "%s", reason);
        if (ask)
            send_error(c, fr->method, fr->call_id, SPATE_EFENCED, reason);
        return;
    }
    if (m->control)
        /* The access log of the cluster's controls (for LOCAL ones REST's
         * line before it names the client that asked). */
        SPATE_LOG_LIMITED(conn_access_limit(c), LOG_LEVEL_INFO, "rpc", "access: %s from %s",
                          m->name, c->peer);
    call = xmalloc(sizeof *call);
    call->conn = c;
    call->ep = ep;
    call->method = m;
    call->call_id = fr->call_id;
    call->tell = !ask;
    list_init(&call->ep_node);
    arena_init(&call->arena, call->arena_first, sizeof call->arena_first);
    msg = arena_unpack(&call->arena, m->request, fr->payload, fr->payload_len);
    if (msg == NULL) {
        arena_release(&call->arena);
        free(call);
        snprintf(reason, sizeof reason, "undecodable %s request for %s (%zu bytes)", m->name,
                 ep->name, fr->payload_len);
        if (ask)
            send_error(c, fr->method, fr->call_id, SPATE_EPROTO, reason);
        conn_close_after_flush(c, "closing rpc connection from %s: %s", c->peer, reason);
        return;
    }
    conn_ref(c);
    if (ask)
        list_push_back(&ep->calls, &call->ep_node);
    prev = rpc_enter(ep);
    m->dispatch(ep, handlers, msg, call);
    rpc_leave(prev);
    if (!ask)
        call_free(call);
}

/* ---- stopping ---------------------------------------------------------------- */

struct rpc_timer {
    uv_timer_t t;
    struct rpc_endpoint *ep;
    void (*fn)(void *arg);
    void *arg;
    struct list_node ep_node;
};

struct rpc_future *
rpc_endpoint_stop(struct rpc_endpoint *ep)
{
    struct rpc_service *svc = ep->svc;
    struct rpc_endpoint *prev;
    struct list_node *n;

    SPATE_ASSERT(rpc_service_in_loop(svc));
    if (ep->termination == NULL)
        ep->termination = rpc_future_new(svc);
    if (ep->state == RPC_EP_STOPPED) {
        rpc_future_ref(ep->termination);
        return ep->termination;
    }
    if (ep->state == RPC_EP_NEW) {
        struct rpc_future *f = ep->termination;

        ep->state = RPC_EP_STOPPED;
        rpc_future_complete(f, NULL, NULL);
        rpc_future_ref(f);
        rpc_endpoint_ref(ep);
        rpc_endpoint_unref(ep); /* never started: released now */
        return f;
    }
    SPATE_LOG_DEBUG("rpc", "stopping endpoint '%s'", ep->name);
    if (ep->ops->on_stop != NULL) {
        prev = rpc_enter(ep);
        ep->ops->on_stop(ep);
        rpc_leave(prev);
    }
    ep->state = RPC_EP_STOPPED;
    hmap_remove(&svc->endpoints, &ep->name_node);
    rpc_service_add_tombstone(svc, ep->name);
    while ((n = list_pop_front(&ep->calls)) != NULL) {
        struct rpc_call *call = container_of(n, struct rpc_call, ep_node);

        list_init(&call->ep_node);
        rpc_call_fail(call, SPATE_ENOENDPOINT, "endpoint '%s' stopped before answering %s",
                      ep->name, call->method->name);
    }
    gateway_fail_endpoint_asks(ep);
    while ((n = ep->timers.next) != &ep->timers)
        rpc_timer_cancel(container_of(n, struct rpc_timer, ep_node));
    {
        struct rpc_future *f = ep->termination;

        rpc_future_complete(f, NULL, NULL);
        rpc_future_ref(f);
        rpc_endpoint_unref(ep); /* the running reference: may release ep */
        return f;
    }
}

void
endpoint_stop_all(struct rpc_service *svc)
{
    struct hmap_node *n;

    while ((n = hmap_first(&svc->endpoints)) != NULL) {
        struct rpc_endpoint *ep = container_of(n, struct rpc_endpoint, name_node);

        rpc_future_unref(rpc_endpoint_stop(ep));
    }
}

/* ---- run_async, timers, blocking work ------------------------------------------- */

struct async_task {
    struct rpc_runnable r;
    struct rpc_endpoint *ep;
    void (*fn)(void *arg);
    void *arg;
};

static void
async_task_run(struct rpc_runnable *r)
{
    struct async_task *t = container_of(r, struct async_task, r);
    struct rpc_endpoint *prev = rpc_enter(t->ep);

    t->fn(t->arg);
    rpc_leave(prev);
    rpc_endpoint_unref(t->ep);
    free(t);
}

void
rpc_endpoint_run_async(struct rpc_endpoint *ep, void (*fn)(void *arg), void *arg)
{
    struct async_task *t = xmalloc(sizeof *t);

    t->ep = ep;
    t->fn = fn;
    t->arg = arg;
    t->r.run = async_task_run;
    rpc_endpoint_ref(ep);
    if (rpc_service_in_loop(ep->svc)) {
        rpc_service_defer(ep->svc, &t->r);
        rpc_service_wake(ep->svc);
    } else {
        rpc_service_post(ep->svc, &t->r);
    }
}

static void
timer_on_closed(uv_handle_t *h)
{
    struct rpc_timer *t = h->data;

    rpc_endpoint_unref(t->ep);
    free(t);
}

static void
timer_on_fire(uv_timer_t *h)
{
    struct rpc_timer *t = h->data;
    struct rpc_endpoint *prev;

    list_remove(&t->ep_node);
    uv_close((uv_handle_t *)&t->t, timer_on_closed);
    prev = rpc_enter(t->ep);
    t->fn(t->arg);
    rpc_leave(prev);
}

struct rpc_timer *
rpc_endpoint_schedule(struct rpc_endpoint *ep, uint64_t delay_ms, void (*fn)(void *arg), void *arg)
{
    struct rpc_timer *t = xmalloc(sizeof *t);

    SPATE_ASSERT(rpc_service_in_loop(ep->svc));
    t->ep = ep;
    t->fn = fn;
    t->arg = arg;
    t->t.data = t;
    rpc_endpoint_ref(ep);
    uv_timer_init(&ep->svc->loop, &t->t);
    uv_timer_start(&t->t, timer_on_fire, delay_ms, 0);
    list_push_back(&ep->timers, &t->ep_node);
    return t;
}

void
rpc_timer_cancel(struct rpc_timer *t)
{
    if (t == NULL)
        return;
    list_remove(&t->ep_node);
    uv_timer_stop(&t->t);
    uv_close((uv_handle_t *)&t->t, timer_on_closed);
}

struct blocking_work {
    uv_work_t w;
    struct rpc_endpoint *ep;
    void (*work)(void *arg);
    void (*done)(void *arg);
    void *arg;
};

static void
blocking_work_run(uv_work_t *w)
{
    struct blocking_work *b = w->data;

    b->work(b->arg);
}

static void
blocking_work_after(uv_work_t *w, int status)
{
    struct blocking_work *b = w->data;
    struct rpc_endpoint *prev = rpc_enter(b->ep);

    UNUSED(status);
    b->done(b->arg);
    rpc_leave(prev);
    rpc_endpoint_unref(b->ep);
    free(b);
}

int
rpc_endpoint_run_blocking(struct rpc_endpoint *ep, void (*work)(void *arg), void (*done)(void *arg),
                          void *arg)
{
    struct blocking_work *b = xmalloc(sizeof *b);
    int rc;

    SPATE_ASSERT(rpc_service_in_loop(ep->svc));
    b->ep = ep;
    b->work = work;
    b->done = done;
    b->arg = arg;
    b->w.data = b;
    rpc_endpoint_ref(ep);
    rc = uv_queue_work(&ep->svc->loop, &b->w, blocking_work_run, blocking_work_after);
    if (rc != 0) {
        rpc_endpoint_unref(ep);
        free(b);
        return SPATE_EIO;
    }
    return 0;
}
