/* Protocols as X-macros: one row per method generates the method table, the
 * server's handler struct and dispatch, and the typed client functions, so
 * that adding an RPC is one line. Header only; the example below shows a
 * protocol's header and its one .c line. */
#ifndef SPATE_RPC_PROTOCOL_H
#define SPATE_RPC_PROTOCOL_H

/* A protocol header says
 *
 *   #define ECHO_METHODS(X, P)                                              \
 *       X(P, echo, 1, ASK, UNFENCED, Echotest__EchoRequest,                 \
 *         echotest__echo_request, Echotest__EchoReply,                      \
 *         echotest__echo_reply)                                             \
 *       X(P, count, 2, TELL, UNFENCED, Echotest__Count,                     \
 *         echotest__count, void, none)
 *   RPC_PROTOCOL_DECLARE(echo, ECHO_METHODS)
 *
 * and one .c file says RPC_PROTOCOL_DEFINE(echo, 100, ECHO_METHODS). That
 * gives echo_protocol, echo_method_echo (the rpc_method), struct
 * echo_handlers { void (*echo)(ep, const Echotest__EchoRequest *, call); },
 * echo_echo(gw, req, timeout_ms) -> future, echo_count(gw, req, err) -> int. */

#include "rpc/endpoint.h"
#include "rpc/gateway.h"

#define RPC__FENCED_FENCED         RPC_FENCE_TOKEN
#define RPC__FENCED_UNFENCED       RPC_FENCE_NONE
#define RPC__FENCED_LOCAL          RPC_FENCE_LOCAL
#define RPC__FENCED_CONTROL        RPC_FENCE_NONE
#define RPC__FENCED_FENCED_CONTROL RPC_FENCE_TOKEN
/* Controls of the cluster (LOCAL, CONTROL, FENCED_CONTROL): the access log
 * names the peer of each call. */
#define RPC__CONTROL_FENCED         false
#define RPC__CONTROL_UNFENCED       false
#define RPC__CONTROL_LOCAL          true
#define RPC__CONTROL_CONTROL        true
#define RPC__CONTROL_FENCED_CONTROL true
#define RPC__TELL_ASK               0
#define RPC__TELL_TELL              1

/* ---- declarations (header) ---- */

#define RPC__DECL_METHOD(P, name, num, kind, fence, Req, req, Resp, resp) \
    extern const struct rpc_method *const P##_method_##name;

#define RPC__HANDLER_FIELD(P, name, num, kind, fence, Req, req, Resp, resp) \
    void (*name)(struct rpc_endpoint * ep, const Req *request, struct rpc_call *call);

#define RPC__CLIENT_ASK(P, name, Req)                                                         \
    static inline struct rpc_future *P##_##name(const struct rpc_gateway *gw, const Req *req, \
                                                int64_t timeout_ms)                           \
    {                                                                                         \
        return rpc_ask(gw, P##_method_##name, &req->base, timeout_ms);                        \
    }
#define RPC__CLIENT_TELL(P, name, Req)                                                           \
    static inline int P##_##name(const struct rpc_gateway *gw, const Req *req, spate_error *err) \
    {                                                                                            \
        return rpc_tell(gw, P##_method_##name, &req->base, err);                                 \
    }
#define RPC__CLIENT(P, name, num, kind, fence, Req, req, Resp, resp) \
    RPC__CLIENT_##kind(P, name, Req)

#define RPC_PROTOCOL_DECLARE(P, METHODS)           \
    extern const struct rpc_protocol P##_protocol; \
    METHODS(RPC__DECL_METHOD, P)                   \
    struct P##_handlers {                          \
        METHODS(RPC__HANDLER_FIELD, P)             \
    };                                             \
    METHODS(RPC__CLIENT, P)

/* ---- definitions (one .c file) ---- */

#define RPC__DESC_none            NULL
#define RPC__RESP_DESC_ASK(resp)  &resp##__descriptor
#define RPC__RESP_DESC_TELL(resp) NULL

#define RPC__DISPATCH(P, meth, num, kind, fence, Req, req, Resp, resp)                            \
    static void P##__dispatch_##meth(struct rpc_endpoint *ep, const void *handlers,               \
                                     const ProtobufCMessage *msg, struct rpc_call *call)          \
    {                                                                                             \
        const struct P##_handlers *h = handlers;                                                  \
                                                                                                  \
        if (h->meth == NULL) {                                                                    \
            rpc_call_fail(call, SPATE_ENOMETHOD, "endpoint '%s' does not implement %s", ep->name, \
                          #P "." #meth);                                                          \
            return;                                                                               \
        }                                                                                         \
        h->meth(ep, (const Req *)msg, call);                                                      \
    }

#define RPC__METHOD_ROW(P, name, num, kind, fence, Req, req, Resp, resp) \
    [(num)-1] = { #P "." #name,                                          \
                  (uint16_t)(P##__protocol_id << 8 | (num)),             \
                  RPC__TELL_##kind,                                      \
                  RPC__FENCED_##fence,                                   \
                  RPC__CONTROL_##fence,                                  \
                  &req##__descriptor,                                    \
                  RPC__RESP_DESC_##kind(resp),                           \
                  P##__dispatch_##name },

#define RPC__COUNT(P, name, num, kind, fence, Req, req, Resp, resp) +1

#define RPC__METHOD_PTR(P, name, num, kind, fence, Req, req, Resp, resp) \
    const struct rpc_method *const P##_method_##name = &P##__methods[(num)-1];

#define RPC_PROTOCOL_DEFINE(P, ID, METHODS)                                            \
    enum { P##__protocol_id = (ID) };                                                  \
    METHODS(RPC__DISPATCH, P)                                                          \
    static const struct rpc_method P##__methods[0 METHODS(RPC__COUNT, P)] = { METHODS( \
        RPC__METHOD_ROW, P) };                                                         \
    METHODS(RPC__METHOD_PTR, P)                                                        \
    const struct rpc_protocol P##_protocol = { #P, (ID), 0 METHODS(RPC__COUNT, P), P##__methods };

#endif
