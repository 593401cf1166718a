/* Gateways: a typed client's handle on a remote (or in-process) endpoint,
 * "host:port/name" plus the fencing token its calls carry. Immutable once
 * made: any thread may ask and tell through it. The typed functions are
 * generated per protocol (protocol.h); these are what they call. */
#ifndef SPATE_RPC_GATEWAY_H
#define SPATE_RPC_GATEWAY_H

#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include <spate/error.h>

#include "core/id.h"
#include "rpc/endpoint.h"
#include "rpc/future.h"

struct rpc_gateway {
    struct rpc_service *svc;
    char peer[128]; /* "host:port" */
    char endpoint[256];
    char address[400]; /* "host:port/endpoint" */
    spate_id token;    /* all zero: none */
};

int rpc_gateway_new(struct rpc_service *svc, const char *address, const spate_id *token,
                    struct rpc_gateway **out, spate_error *err);
void rpc_gateway_free(struct rpc_gateway *gw);
/* A copy with another fencing token. */
struct rpc_gateway *rpc_gateway_with_token(const struct rpc_gateway *gw, const spate_id *token);

/* Sends req and returns a future for the reply (a new reference; the value is
 * the response message, unpacked into the future's arena). timeout_ms 0 means
 * rpc.ask.timeout. Any thread; an ask made as an endpoint is failed with
 * SPATE_ECANCELED if that endpoint stops first. A failed future says which:
 * SPATE_ETIMEDOUT, SPATE_ECONNLOST, SPATE_EFENCED, SPATE_ENOENDPOINT,
 * SPATE_ENOMETHOD, SPATE_EREMOTE or the remote handler's own code, with a
 * message. */
struct rpc_future *rpc_ask(const struct rpc_gateway *gw, const struct rpc_method *m,
                           const ProtobufCMessage *req, int64_t timeout_ms);
/* One-way; fails only for a message that cannot be sent (too large). */
int rpc_tell(const struct rpc_gateway *gw, const struct rpc_method *m, const ProtobufCMessage *req,
             spate_error *err);

#endif
