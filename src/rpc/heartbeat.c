/* Heartbeat managers (heartbeat.h). One periodic timer per manager sends the
 * requests (sender) and checks the deadlines (both); one peer watch per peer
 * address turns a broken connection into lost targets at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/util.h"
#include "rpc/heartbeat.h"
#include "rpc/rpc_int.h"

RPC_PROTOCOL_DEFINE(heartbeat, 2, HEARTBEAT_METHODS)

struct hb_peer {
    struct hmap_node node;
    struct heartbeat_manager *hm;
    struct rpc_peer_watch *watch;
    int targets;
    char peer[128];
};

struct hb_target {
    struct hmap_node node;
    spate_id id;
    struct rpc_gateway *gw;
    struct hb_peer *peer;
    uint64_t last_heard_ms;
};

struct heartbeat_manager {
    struct list_node ep_node; /* the endpoint's managers */
    struct rpc_endpoint *ep;
    struct heartbeat_options o;
    struct heartbeat_listener l;
    void *arg;
    struct hmap targets;
    struct hmap peers;
    struct rpc_timer *timer;
    uint64_t tick_ms;
    uint64_t last_sent_ms; /* sender: when the last round of requests went */
};

int
heartbeat_options_from_config(const struct config *conf, struct heartbeat_options *o,
                              spate_error *err)
{
    int rc;

    if ((rc = config_get_duration_ms(conf, CFG(HEARTBEAT_INTERVAL), &o->interval_ms, err)) != 0 ||
        (rc = config_get_duration_ms(conf, CFG(HEARTBEAT_TIMEOUT), &o->timeout_ms, err)) != 0)
        return rc;
    if (o->timeout_ms <= o->interval_ms)
        return spate_error_set(err, SPATE_ECONFIG,
                               "heartbeat.timeout (%lld ms) must be longer than "
                               "heartbeat.interval (%lld ms)",
                               (long long)o->timeout_ms, (long long)o->interval_ms);
    return 0;
}

static struct hb_target *
hb_find(const struct heartbeat_manager *hm, const spate_id *id)
{
    struct hmap_node *n;

    HMAP_FOR_EACH_WITH_HASH(n, id_hash(id), &hm->targets)
    {
        struct hb_target *t = container_of(n, struct hb_target, node);

        if (id_equal(&t->id, id))
            return t;
    }
    return NULL;
}

static struct heartbeat_manager *
hb_manager_for(struct rpc_endpoint *ep, uint32_t channel)
{
    struct list_node *head = ep->hb_managers, *p;

    if (head == NULL)
        return NULL;
    list_for_each(p, head)
    {
        struct heartbeat_manager *hm = container_of(p, struct heartbeat_manager, ep_node);

        if (hm->o.channel == channel)
            return hm;
    }
    return NULL;
}

static void
hb_target_free(struct heartbeat_manager *hm, struct hb_target *t)
{
    hmap_remove(&hm->targets, &t->node);
    if (--t->peer->targets == 0) {
        hmap_remove(&hm->peers, &t->peer->node);
        rpc_service_unwatch_peer(t->peer->watch);
        free(t->peer);
    }
    rpc_gateway_free(t->gw);
    free(t);
}

static void
hb_lose(struct heartbeat_manager *hm, struct hb_target *t, int reason, const char *msg)
{
    spate_id id = t->id;

    hb_target_free(hm, t);
    hm->l.target_lost(hm->arg, &id, reason, msg);
}

static void
hb_on_peer_lost(void *arg, const char *peer, const char *reason)
{
    struct hb_peer *p = arg;
    struct heartbeat_manager *hm = p->hm;
    spate_id *ids;
    size_t n = 0, cap = (size_t)p->targets;
    struct hmap_node *node;
    char msg[SPATE_ERROR_MESSAGE_MAX];

    /* Collect first: each callback may (un)monitor anything. */
    ids = xmalloc(cap * sizeof *ids);
    HMAP_FOR_EACH(node, &hm->targets)
    {
        struct hb_target *t = container_of(node, struct hb_target, node);

        if (t->peer == p && n < cap)
            ids[n++] = t->id;
    }
    /* The connection's reason names the peer already. */
    UNUSED(peer);
    snprintf(msg, sizeof msg, "%s", reason);
    for (size_t i = 0; i < n; i++) {
        struct hb_target *t = hb_find(hm, &ids[i]);

        if (t != NULL)
            hb_lose(hm, t, SPATE_ECONNLOST, msg);
    }
    free(ids);
}

static void
hb_send_request(struct heartbeat_manager *hm, struct hb_target *t)
{
    Rpcmsg__HeartbeatRequest req = RPCMSG__HEARTBEAT_REQUEST__INIT;
    uint8_t *payload = NULL;
    size_t len = 0;

    if (hm->l.payload_for != NULL)
        payload = hm->l.payload_for(hm->arg, &t->id, &len);
    req.channel = hm->o.channel;
    req.sender_id.data = hm->o.own_id.bytes;
    req.sender_id.len = ID_BYTES;
    req.payload.data = payload;
    req.payload.len = len;
    heartbeat_request(t->gw, &req, NULL);
    free(payload);
}

static void hb_tick(void *arg);

static void
hb_schedule(struct heartbeat_manager *hm)
{
    hm->timer = rpc_endpoint_schedule(hm->ep, hm->tick_ms, hb_tick, hm);
}

static void
hb_tick(void *arg)
{
    struct heartbeat_manager *hm = arg;
    uint64_t now = clock_mono_ms();
    struct hmap_node *node;
    spate_id *late = NULL;
    size_t nlate = 0, cap = 0;
    /* A sender asks every interval: on the tick nearest to it. */
    bool send =
        hm->o.sender && now - hm->last_sent_ms + hm->tick_ms / 2 >= (uint64_t)hm->o.interval_ms;

    hm->timer = NULL;
    if (send)
        hm->last_sent_ms = now;
    HMAP_FOR_EACH(node, &hm->targets)
    {
        struct hb_target *t = container_of(node, struct hb_target, node);

        if (now - t->last_heard_ms > (uint64_t)hm->o.timeout_ms) {
            xgrow((void **)&late, &cap, nlate + 1, sizeof *late);
            late[nlate++] = t->id;
        } else if (send) {
            hb_send_request(hm, t);
        }
    }
    hb_schedule(hm);
    for (size_t i = 0; i < nlate; i++) {
        struct hb_target *t = hb_find(hm, &late[i]);
        char msg[SPATE_ERROR_MESSAGE_MAX];

        if (t == NULL)
            continue;
        snprintf(msg, sizeof msg,
                 "heartbeat of %s at %s timed out: not heard from for %llu ms (heartbeat.timeout "
                 "%lld ms)",
                 id_str(&t->id).s, t->gw->address, (unsigned long long)(now - t->last_heard_ms),
                 (long long)hm->o.timeout_ms);
        hb_lose(hm, t, SPATE_ETIMEDOUT, msg);
    }
    free(late);
}

struct heartbeat_manager *
heartbeat_manager_new(struct rpc_endpoint *ep, const struct heartbeat_options *o,
                      const struct heartbeat_listener *l, void *arg)
{
    struct heartbeat_manager *hm = xcalloc(1, sizeof *hm);
    struct list_node *head = ep->hb_managers;

    SPATE_ASSERT(hb_manager_for(ep, o->channel) == NULL);
    hm->ep = ep;
    hm->o = *o;
    hm->l = *l;
    hm->arg = arg;
    hmap_init(&hm->targets);
    hmap_init(&hm->peers);
    if (head == NULL) {
        head = xmalloc(sizeof *head);
        list_init(head);
        ep->hb_managers = head;
    }
    list_push_back(head, &hm->ep_node);
    /* Deadlines are checked ten times per timeout (a hung peer is found
     * within a tenth of heartbeat.timeout of it); a sender asks every
     * interval, on the tick nearest to it. */
    hm->tick_ms = (uint64_t)MIN(o->interval_ms, o->timeout_ms / 10);
    if (hm->tick_ms == 0)
        hm->tick_ms = 1;
    return hm;
}

void
heartbeat_manager_free(struct heartbeat_manager *hm)
{
    struct hmap_node *n;
    struct list_node *head;

    if (hm == NULL)
        return;
    while ((n = hmap_first(&hm->targets)) != NULL)
        hb_target_free(hm, container_of(n, struct hb_target, node));
    rpc_timer_cancel(hm->timer);
    list_remove(&hm->ep_node);
    head = hm->ep->hb_managers;
    if (list_empty(head)) {
        free(head);
        hm->ep->hb_managers = NULL;
    }
    hmap_release(&hm->targets);
    hmap_release(&hm->peers);
    free(hm);
}

int
heartbeat_monitor(struct heartbeat_manager *hm, const spate_id *target, const char *address,
                  spate_error *err)
{
    struct hb_target *t = hb_find(hm, target);
    struct rpc_gateway *gw;
    struct hmap_node *n;
    struct hb_peer *p = NULL;
    uint64_t h;
    int rc;

    if ((rc = rpc_gateway_new(hm->ep->svc, address, NULL, &gw, err)) != 0)
        return rc;
    if (t != NULL)
        hb_target_free(hm, t);
    h = hmap_hash_string(gw->peer);
    HMAP_FOR_EACH_WITH_HASH(n, h, &hm->peers)
    {
        struct hb_peer *q = container_of(n, struct hb_peer, node);

        if (strcmp(q->peer, gw->peer) == 0) {
            p = q;
            break;
        }
    }
    if (p == NULL) {
        p = xcalloc(1, sizeof *p);
        p->hm = hm;
        snprintf(p->peer, sizeof p->peer, "%s", gw->peer);
        hmap_insert(&hm->peers, &p->node, h);
        p->watch = rpc_service_watch_peer(hm->ep->svc, hm->ep, p->peer, hb_on_peer_lost, p);
    }
    p->targets++;
    t = xcalloc(1, sizeof *t);
    t->id = *target;
    t->gw = gw;
    t->peer = p;
    t->last_heard_ms = clock_mono_ms();
    hmap_insert(&hm->targets, &t->node, id_hash(target));
    if (hm->timer == NULL) {
        hm->last_sent_ms = t->last_heard_ms;
        hb_schedule(hm);
    }
    if (hm->o.sender)
        hb_send_request(hm, t);
    return 0;
}

void
heartbeat_unmonitor(struct heartbeat_manager *hm, const spate_id *target)
{
    struct hb_target *t = hb_find(hm, target);

    if (t != NULL)
        hb_target_free(hm, t);
}

bool
heartbeat_is_monitored(const struct heartbeat_manager *hm, const spate_id *target)
{
    return hb_find(hm, target) != NULL;
}

size_t
heartbeat_target_count(const struct heartbeat_manager *hm)
{
    return hmap_count(&hm->targets);
}

void
heartbeat_request_now(struct heartbeat_manager *hm)
{
    struct hmap_node *n;

    HMAP_FOR_EACH(n, &hm->targets)
    hb_send_request(hm, container_of(n, struct hb_target, node));
}

/* ---- the protocol's handlers --------------------------------------------------- */

static struct hb_target *
hb_heard(struct rpc_endpoint *ep, uint32_t channel, const ProtobufCBinaryData *sender,
         const ProtobufCBinaryData *payload, struct heartbeat_manager **out)
{
    struct heartbeat_manager *hm = hb_manager_for(ep, channel);
    struct hb_target *t;
    spate_id id;

    if (hm == NULL || sender->len != ID_BYTES)
        return NULL;
    memcpy(id.bytes, sender->data, ID_BYTES);
    if ((t = hb_find(hm, &id)) == NULL)
        return NULL; /* not (or no longer) monitored: Flink ignores these too */
    t->last_heard_ms = clock_mono_ms();
    *out = hm;
    if (hm->l.payload_received != NULL)
        hm->l.payload_received(hm->arg, &id, payload->data, payload->len);
    return hb_find(hm, &id); /* the callback may have unmonitored it */
}

static void
hb_on_request(struct rpc_endpoint *ep, const Rpcmsg__HeartbeatRequest *req, struct rpc_call *call)
{
    struct heartbeat_manager *hm = NULL;
    struct hb_target *t = hb_heard(ep, req->channel, &req->sender_id, &req->payload, &hm);
    Rpcmsg__HeartbeatResponse resp = RPCMSG__HEARTBEAT_RESPONSE__INIT;
    uint8_t *payload = NULL;
    size_t len = 0;

    UNUSED(call);
    if (t == NULL || hm->o.sender)
        return;
    if (hm->l.payload_for != NULL)
        payload = hm->l.payload_for(hm->arg, &t->id, &len);
    resp.channel = hm->o.channel;
    resp.sender_id.data = hm->o.own_id.bytes;
    resp.sender_id.len = ID_BYTES;
    resp.payload.data = payload;
    resp.payload.len = len;
    heartbeat_response(t->gw, &resp, NULL);
    free(payload);
}

static void
hb_on_response(struct rpc_endpoint *ep, const Rpcmsg__HeartbeatResponse *resp,
               struct rpc_call *call)
{
    struct heartbeat_manager *hm = NULL;

    UNUSED(call);
    hb_heard(ep, resp->channel, &resp->sender_id, &resp->payload, &hm);
}

const struct heartbeat_handlers heartbeat_default_handlers = {
    .request = hb_on_request,
    .response = hb_on_response,
};
