/* The echo protocol of the RPC tests and benchmark, and the peer endpoints
 * that serve it (rpc_peer, and in-process in tests). Loop thread. */
#ifndef SPATE_TESTS_ECHO_H
#define SPATE_TESTS_ECHO_H

#include "rpc/heartbeat.h"
#include "rpc/protocol.h"
#include "support/echo.pb-c.h"

#define ECHO_METHODS(X, P)                                                                     \
    X(P, echo, 1, ASK, UNFENCED, Echotest__EchoRequest, echotest__echo_request,                \
      Echotest__EchoReply, echotest__echo_reply)                                               \
    X(P, count, 2, TELL, UNFENCED, Echotest__Count, echotest__count, void, none)               \
    X(P, hold, 3, ASK, UNFENCED, Echotest__Empty, echotest__empty, Echotest__Empty,            \
      echotest__empty)                                                                         \
    X(P, stats, 4, ASK, UNFENCED, Echotest__Empty, echotest__empty, Echotest__Stats,           \
      echotest__stats)                                                                         \
    X(P, fenced_echo, 5, ASK, FENCED, Echotest__EchoRequest, echotest__echo_request,           \
      Echotest__EchoReply, echotest__echo_reply)                                               \
    X(P, control, 6, ASK, UNFENCED, Echotest__Control, echotest__control, Echotest__EchoReply, \
      echotest__echo_reply)
RPC_PROTOCOL_DECLARE(echo, ECHO_METHODS)

/* An endpoint serving the echo protocol (and heartbeats, as a receiver on
 * HEARTBEAT_TEST). */
struct echo_server {
    struct rpc_endpoint ep;
    uint64_t tells, asks, held;
    struct heartbeat_manager *hb;
    spate_id hb_id;             /* its heartbeat resource id, the reply to "monitor" */
    struct echo_server *holder; /* what "stop-holder" stops */
    void (*on_exit)(void);      /* what "exit" calls */
};

/* Starts an echo server named name on svc (loop thread, or before start). */
int echo_server_start(struct echo_server *es, struct rpc_service *svc, const char *name,
                      const spate_id *token, spate_error *err);

#endif
