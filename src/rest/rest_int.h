/* What the REST server's handler files share (private to src/rest): the
 * server's state and the helpers that answer a request. Handlers run on
 * libmicrohttpd's thread(s). */
#ifndef SPATE_REST_REST_INT_H
#define SPATE_REST_REST_INT_H

#include <stdatomic.h>
#include <stdbool.h>

#include <jansson.h>
#include <microhttpd.h>

#include "core/config.h"
#include "rest/metric_fetcher.h"
#include "rpc/gateway.h"
#include "rpc/service.h"

#define REST_ASK_MS 10000

struct rest_server {
    struct MHD_Daemon *daemon;
    int port;
    struct rpc_service *svc;
    const struct config *conf;
    struct rpc_gateway *dispatcher;
    struct rpc_gateway *rm;
    struct metric_fetcher *metrics;
    /* Requests between their first call and their completion; stop waits
     * for them, so that DELETE /cluster's answer leaves before the process. */
    _Atomic int inflight;
};

/* Sends body (taken) with status. */
enum MHD_Result rest_send(struct MHD_Connection *c, unsigned status, json_t *body);
/* Flink's error body: {"errors": ["..."]}. */
enum MHD_Result rest_error(struct MHD_Connection *c, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Waits for an ask's answer (on this thread). NULL after sending an error
 * response into *ret: 404 for SPATE_ENOENT, 503 otherwise. */
struct rpc_future *rest_ask(struct MHD_Connection *c, struct rpc_future *f, enum MHD_Result *ret);
/* A query parameter (URL-decoded), or NULL. */
const char *rest_query(struct MHD_Connection *c, const char *name);

/* The metric and vertex routes (rest_metrics.c, rest_vertices.c): true when
 * path is theirs, with the answer queued into *ret. */
bool rest_metrics_route(struct rest_server *rs, struct MHD_Connection *c, const char *path,
                        const char *method, enum MHD_Result *ret);
/* GET /jobs/:jobid/vertices/:vertexid (JobVertexDetailsInfo). */
enum MHD_Result rest_vertex_details(struct rest_server *rs, struct MHD_Connection *c,
                                    const spate_id *job, const spate_id *vertex);
/* The "vertices" of GET /jobs/:jobid (JobDetailsVertexInfo each); an empty
 * array when they cannot be had. */
json_t *rest_job_vertices(struct rest_server *rs, const spate_id *job);

#endif
