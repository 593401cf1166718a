/* The echo protocol's definition and its server endpoint (echo.h). */
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/util.h"
#include "support/echo.h"

RPC_PROTOCOL_DEFINE(echo, 100, ECHO_METHODS)

struct delayed_reply {
    struct rpc_call *call;
    uint64_t seq;
    size_t len;
    uint8_t data[];
};

static void
echo_reply_later(void *arg)
{
    struct delayed_reply *d = arg;
    Echotest__EchoReply r = ECHOTEST__ECHO_REPLY__INIT;

    r.seq = d->seq;
    r.data.data = d->data;
    r.data.len = d->len;
    rpc_call_reply(d->call, &r.base);
    free(d);
}

static void
es_echo(struct rpc_endpoint *ep, const Echotest__EchoRequest *req, struct rpc_call *call)
{
    struct echo_server *es = container_of(ep, struct echo_server, ep);
    Echotest__EchoReply r = ECHOTEST__ECHO_REPLY__INIT;

    RPC_ASSERT_IN(ep);
    es->asks++;
    if (req->delay_ms > 0) {
        struct delayed_reply *d = malloc(sizeof *d + req->data.len);

        d->call = call;
        d->seq = req->seq;
        d->len = req->data.len;
        memcpy(d->data, req->data.data, req->data.len);
        rpc_endpoint_schedule(ep, req->delay_ms, echo_reply_later, d);
        return;
    }
    r.seq = req->seq;
    r.data = req->data;
    rpc_call_reply(call, &r.base);
}

static void
es_count(struct rpc_endpoint *ep, const Echotest__Count *req, struct rpc_call *call)
{
    struct echo_server *es = container_of(ep, struct echo_server, ep);

    UNUSED(call);
    es->tells += req->n;
}

static void
es_hold(struct rpc_endpoint *ep, const Echotest__Empty *req, struct rpc_call *call)
{
    struct echo_server *es = container_of(ep, struct echo_server, ep);

    /* Never answered: the call stays with the endpoint until it stops. */
    UNUSED(req);
    UNUSED(call);
    es->held++;
}

static void
es_stats(struct rpc_endpoint *ep, const Echotest__Empty *req, struct rpc_call *call)
{
    struct echo_server *es = container_of(ep, struct echo_server, ep);
    Echotest__Stats s = ECHOTEST__STATS__INIT;

    UNUSED(req);
    s.tells = es->tells;
    s.asks = es->asks;
    s.held = es->held;
    rpc_call_reply(call, &s.base);
}

static void
es_hb_lost(void *arg, const spate_id *target, int reason, const char *message)
{
    UNUSED(arg);
    SPATE_LOG_INFO("echo", "heartbeat target %s lost (%s): %s", id_str(target).s,
                   spate_err_name(reason), message);
}

static void
es_control(struct rpc_endpoint *ep, const Echotest__Control *req, struct rpc_call *call)
{
    struct echo_server *es = container_of(ep, struct echo_server, ep);
    Echotest__EchoReply r = ECHOTEST__ECHO_REPLY__INIT;
    spate_error err = { 0 };

    r.data.data = es->hb_id.bytes;
    r.data.len = ID_BYTES;
    if (strcmp(req->command, "stop-holder") == 0 && es->holder != NULL) {
        rpc_future_unref(rpc_endpoint_stop(&es->holder->ep));
    } else if (strcmp(req->command, "monitor") == 0 && req->id.len == ID_BYTES) {
        spate_id id;

        memcpy(id.bytes, req->id.data, ID_BYTES);
        if (heartbeat_monitor(es->hb, &id, req->arg, &err) != 0) {
            rpc_call_fail(call, err.code, "%s", err.message);
            return;
        }
    } else if (strcmp(req->command, "exit") == 0 && es->on_exit != NULL) {
        es->on_exit();
    } else {
        rpc_call_fail(call, SPATE_EINVAL, "unknown control command '%s'", req->command);
        return;
    }
    rpc_call_reply(call, &r.base);
}

static const struct echo_handlers es_handlers = {
    .echo = es_echo,
    .count = es_count,
    .hold = es_hold,
    .stats = es_stats,
    .fenced_echo = es_echo,
    .control = es_control,
};

static void
es_on_stop(struct rpc_endpoint *ep)
{
    struct echo_server *es = container_of(ep, struct echo_server, ep);

    heartbeat_manager_free(es->hb);
    es->hb = NULL;
}

static const struct rpc_endpoint_ops es_ops = { .on_stop = es_on_stop };

int
echo_server_start(struct echo_server *es, struct rpc_service *svc, const char *name,
                  const spate_id *token, spate_error *err)
{
    struct heartbeat_options ho = {
        .channel = HEARTBEAT_TEST, .sender = false, .interval_ms = 100, .timeout_ms = 1000
    };
    static const struct heartbeat_listener hl = { .target_lost = es_hb_lost };
    int rc;

    memset(es, 0, sizeof *es);
    if ((rc = rpc_endpoint_init(&es->ep, svc, name, &es_ops, err)) != 0)
        return rc;
    rpc_endpoint_bind(&es->ep, &echo_protocol, &es_handlers);
    rpc_endpoint_bind(&es->ep, &heartbeat_protocol, &heartbeat_default_handlers);
    if (token != NULL)
        rpc_endpoint_set_fencing_token(&es->ep, token);
    id_random(&ho.own_id);
    es->hb_id = ho.own_id;
    es->hb = heartbeat_manager_new(&es->ep, &ho, &hl, es);
    return rpc_endpoint_start(&es->ep, err);
}
