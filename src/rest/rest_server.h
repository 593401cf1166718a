/* The REST server of the JobManager: libmicrohttpd with its own epoll thread
 * and jansson, serving the paths and JSON of Flink's REST API v1 (with and
 * without the /v1 prefix) that exist so far. Handlers run on
 * libmicrohttpd's thread and reach the Dispatcher and ResourceManager only
 * through RPC gateways (the in-process transport), waiting with a timeout. */
#ifndef SPATE_REST_REST_SERVER_H
#define SPATE_REST_REST_SERVER_H

#include "blob/blob_server.h"
#include "metrics/metrics.h"
#include "core/config.h"
#include "rpc/service.h"

struct rest_server;

struct rest_server_options {
    const char *bind_address; /* rest.bind-address */
    const char *port;         /* rest.bind-port (a port or range), else rest.port */
    struct rpc_service *svc;  /* the JobManager's */
    const struct config *conf;
    struct blob_server *blobs; /* where submitted job libraries go */
    /* The JobManager's metric registry (the jobs' groups; may be NULL),
     * which outlives the server. */
    struct metric_registry *metrics;
};

int rest_server_start(const struct rest_server_options *o, struct rest_server **out,
                      spate_error *err);
int rest_server_port(const struct rest_server *rs);
/* Whether it speaks HTTPS (security.ssl.rest.enabled). */
bool rest_server_https(const struct rest_server *rs);
/* Stops the thread and frees; NULL is fine. */
void rest_server_stop(struct rest_server *rs);

#endif
