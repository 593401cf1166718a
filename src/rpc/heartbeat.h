/* Heartbeat managers (Flink's HeartbeatManagerImpl and its sender): a sender
 * asks its targets every heartbeat.interval, a receiver answers, payloads go
 * both ways; a target is lost after heartbeat.timeout of silence
 * (SPATE_ETIMEDOUT) or at once when its connection breaks (SPATE_ECONNLOST).
 * Loop thread, as the owning endpoint, which binds heartbeat_protocol with
 * heartbeat_default_handlers, makes its manager with heartbeat_manager_new
 * and then calls heartbeat_monitor for each target. */
#ifndef SPATE_RPC_HEARTBEAT_H
#define SPATE_RPC_HEARTBEAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/id.h"
#include "proto/rpc.pb-c.h"
#include "rpc/protocol.h"

#define HEARTBEAT_METHODS(X, P)                                                                    \
    X(P, request, 1, TELL, UNFENCED, Rpcmsg__HeartbeatRequest, rpcmsg__heartbeat_request, void,    \
      none)                                                                                        \
    X(P, response, 2, TELL, UNFENCED, Rpcmsg__HeartbeatResponse, rpcmsg__heartbeat_response, void, \
      none)
RPC_PROTOCOL_DECLARE(heartbeat, HEARTBEAT_METHODS)

/* The handlers that route heartbeats to the endpoint's managers by channel. */
extern const struct heartbeat_handlers heartbeat_default_handlers;

/* Channels: which manager of an endpoint a heartbeat is for. */
enum heartbeat_channel {
    HEARTBEAT_RM_TM = 1, /* ResourceManager (sender) <-> TaskExecutor */
    HEARTBEAT_JM_TM = 2, /* JobMaster (sender) <-> TaskExecutor */
    HEARTBEAT_RM_JM = 3, /* ResourceManager (sender) <-> JobMaster */
    HEARTBEAT_TEST = 100,
};

struct heartbeat_listener {
    /* The target is no longer monitored when this runs. reason is
     * SPATE_ETIMEDOUT or SPATE_ECONNLOST; message says what happened. */
    void (*target_lost)(void *arg, const spate_id *target, int reason, const char *message);
    /* A heartbeat (request or response) from target arrived; may be NULL. */
    void (*payload_received)(void *arg, const spate_id *target, const uint8_t *data, size_t len);
    /* The payload to send target (malloc'ed, freed by the manager); may be NULL. */
    uint8_t *(*payload_for)(void *arg, const spate_id *target, size_t *len);
};

struct heartbeat_options {
    uint32_t channel;
    bool sender;
    int64_t interval_ms;
    int64_t timeout_ms;
    spate_id own_id;
};

/* heartbeat.interval and heartbeat.timeout. */
int heartbeat_options_from_config(const struct config *conf, struct heartbeat_options *o,
                                  spate_error *err);

struct heartbeat_manager;

struct heartbeat_manager *heartbeat_manager_new(struct rpc_endpoint *ep,
                                                const struct heartbeat_options *o,
                                                const struct heartbeat_listener *l, void *arg);
/* Stops monitoring everything; no callbacks after. NULL is fine. */
void heartbeat_manager_free(struct heartbeat_manager *hm);
/* Starts monitoring target at address ("host:port/endpoint"); its clock
 * starts now. Monitoring a target again replaces its address. */
int heartbeat_monitor(struct heartbeat_manager *hm, const spate_id *target, const char *address,
                      spate_error *err);
void heartbeat_unmonitor(struct heartbeat_manager *hm, const spate_id *target);
bool heartbeat_is_monitored(const struct heartbeat_manager *hm, const spate_id *target);
size_t heartbeat_target_count(const struct heartbeat_manager *hm);
/* Sender: asks every target now instead of at the next interval. */
void heartbeat_request_now(struct heartbeat_manager *hm);

#endif
