/* The RPC service: one per process. It owns one libuv loop thread on which
 * every endpoint of the process runs, a TCP listener, the outgoing connections
 * (pooled per peer), the in-process transport, and the asks in flight. Other
 * threads reach it through its mailbox. Created and freed by one thread; its
 * address getters are safe from any thread once it is started. */
#ifndef SPATE_RPC_SERVICE_H
#define SPATE_RPC_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <spate/error.h>

#include "core/config.h"
#include "core/tls.h"

struct rpc_service;
struct rpc_endpoint;

struct rpc_service_options {
    const char *bind_host;        /* NULL: no listener (a client-only process) */
    const char *port;             /* "0" (ephemeral), "6123" or a range "50100-50200" */
    const char *advertised_host;  /* what peers connect to; NULL: bind_host */
    const char *cluster_id;       /* handshake; NULL: "spate" */
    const char *secret;           /* security.rpc.secret; NULL: none */
    struct tls_context *tls;      /* security.ssl.internal (borrowed); NULL: plaintext */
    size_t max_frame_bytes;       /* 0: 10 MiB */
    int64_t ask_timeout_ms;       /* 0: 10 s */
    int64_t handshake_timeout_ms; /* an accepted connection's hello; 0: 10 s */
    const char *thread_name;      /* the loop thread's name in logs; NULL: "rpc" */
    /* Bounds on what peers may hold (docs/security.md); 0: the default. */
    int max_connections;          /* accepted and open at once; 1024 */
    int max_connections_per_peer; /* of those, from one IP address; 256 */
    int max_handshaking;          /* accepted, hello still due (the oldest goes); 128 */
    int64_t frame_timeout_ms;     /* a frame begun must be whole this soon; 60 s */
    size_t max_buffered_bytes;    /* incomplete incoming frames, all connections; 256 MiB */
};

/* Options from the configuration: rpc.max-frame-size, rpc.ask.timeout,
 * security.rpc.secret, cluster.connections.*, rpc.frame-timeout,
 * rpc.max-buffered. The caller fills in the address fields. */
int rpc_service_options_from_config(const struct config *conf, struct rpc_service_options *o,
                                    spate_error *err);

/* Binds the listener (trying each port of a range) and prepares the loop;
 * nothing runs until rpc_service_start. */
int rpc_service_new(const struct rpc_service_options *o, struct rpc_service **out,
                    spate_error *err);
/* Starts the loop thread. */
int rpc_service_start(struct rpc_service *svc, spate_error *err);
/* Any thread but the loop's: stops every endpoint, closes every connection
 * (pending asks fail), ends the loop thread and waits for it. */
void rpc_service_stop(struct rpc_service *svc);
/* Stops (if running) and frees. NULL is fine. */
void rpc_service_free(struct rpc_service *svc);

/* "host:port" peers reach this service at; "" without a listener. */
const char *rpc_service_address(const struct rpc_service *svc);
int rpc_service_port(const struct rpc_service *svc);
int64_t rpc_service_ask_timeout_ms(const struct rpc_service *svc);

/* Any thread but the loop's: runs fn(arg) on the loop with ep (may be NULL)
 * as the executing endpoint and waits for it to return. For set-up and tests. */
void rpc_service_run_sync(struct rpc_service *svc, struct rpc_endpoint *ep, void (*fn)(void *arg),
                          void *arg);

/* Peer watches: cb runs (on the loop, as ep) when the outgoing connection to
 * peer ("host:port") breaks or cannot be made. Creating a watch opens the
 * connection if there is none. Loop thread only. */
struct rpc_peer_watch;
typedef void (*rpc_peer_lost_cb)(void *arg, const char *peer, const char *reason);
struct rpc_peer_watch *rpc_service_watch_peer(struct rpc_service *svc, struct rpc_endpoint *ep,
                                              const char *peer, rpc_peer_lost_cb cb, void *arg);
void rpc_service_unwatch_peer(struct rpc_peer_watch *w);

/* Splits "host:port/endpoint" into peer "host:port" and endpoint name, with
 * "localhost" written as 127.0.0.1. */
int rpc_address_parse(const char *address, char *peer, size_t peer_size, char *endpoint,
                      size_t endpoint_size, spate_error *err);

#endif
