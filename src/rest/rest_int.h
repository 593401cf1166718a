/* What the REST server's modules share (private to src/rest/): the server,
 * one request with its path parameters and body, the route table's types,
 * and the helpers that answer (Flink's JSON, its error body) and ask the
 * Dispatcher. Handlers run on the request's libmicrohttpd thread. */
#ifndef SPATE_REST_REST_INT_H
#define SPATE_REST_REST_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>
#include <microhttpd.h>

#include "blob/blob_server.h"
#include "core/config.h"
#include "core/log.h"
#include "core/tmp_dir.h"
#include "rest/metric_fetcher.h"
#include "rest/rest_conns.h"
#include "rest/rest_tls.h"
#include "rpc/gateways.h"
#include "rpc/service.h"

#define REST_LOG        "rest"
#define REST_ASK_MS     10000
#define REST_MAX_PARAMS 3 /* :params in one route's path */
/* A log file over REST: at most its last 16 MB. */
#define REST_LOG_MAX_BYTES (16u << 20)

struct web_asset;

struct rest_server {
    struct MHD_Daemon *daemon;
    int port;
    struct rpc_service *svc;
    const struct config *conf;
    struct blob_server *blobs;
    struct rpc_gateway *dispatcher;
    struct rpc_gateway *rm;
    bool submit_enabled;        /* web.submit.enable */
    bool cancel_enabled;        /* web.cancel.enable: the dashboard's button */
    int64_t refresh_ms;         /* web.refresh-interval: the dashboard's */
    int64_t max_body;           /* rest.server.max-content-length */
    int64_t plan_timeout_ms;    /* web.submit.timeout */
    int64_t max_conns;          /* rest.server.connection-limit */
    int64_t request_timeout_ms; /* rest.server.request-timeout */
    int64_t max_conns_per_ip;   /* rest.server.per-ip-connection-limit */
    int64_t idle_timeout_ms;    /* rest.server.connection-timeout */
    struct tmp_dir web_dir;     /* ours alone (tmp_dir.h): upload_dir, incoming_dir */
    char *upload_dir;           /* uploaded job libraries (/jars) */
    char *incoming_dir;         /* request bodies being received */
    char *self_exe;             /* the spate executable, for plan-only children */
    struct metric_fetcher *metrics;
    struct rest_auth *auth;        /* rest.authentication, NULL: off */
    struct rest_tls tls;           /* HTTPS (security.ssl.rest.*); off: plain HTTP */
    struct rest_conns conns;       /* open connections, pushed out when slow */
    int reserve_fd;                /* /dev/null, given up to answer 503 (rest_log) */
    struct log_ratelimit refusals; /* libmicrohttpd's errors, refused requests */
    struct log_ratelimit access;   /* the access log's lines */
    /* The JobManager's own registry (its jobs' groups; may be NULL). */
    struct metric_registry *registry;
    /* Requests between their first call and their completion; stop waits
     * for them, so that DELETE /cluster's answer leaves before the process. */
    _Atomic int inflight;
};

/* A multipart body's parts, files streamed to disk as they arrive. */
struct rest_part {
    char *name;     /* the form field */
    char *filename; /* NULL for a plain field */
    char *path;     /* files: where it is on disk (removed with the request) */
    int fd;
    char *value; /* plain fields: their bytes (NUL-terminated) */
    size_t len;
};

enum rest_body_kind { REST_BODY_NONE, REST_BODY_JSON, REST_BODY_MULTIPART };

struct rest_request {
    struct rest_server *rs;
    struct MHD_Connection *c;
    const struct rest_route *route;
    char params[REST_MAX_PARAMS][128]; /* :jobid, :jarid, ... in path order */
    enum rest_body_kind kind;
    int64_t received;
    bool too_large; /* the body passed max_body: the answer is 413 */
    char *error;    /* a body that could not be taken: the answer is 400 */
    /* REST_BODY_JSON: the raw body */
    char *json;
    size_t json_len;
    /* REST_BODY_MULTIPART */
    struct MHD_PostProcessor *pp;
    struct rest_part *parts;
    size_t nparts;
};

typedef enum MHD_Result (*rest_handler)(struct rest_request *req);

#define REST_SUBMIT 1u /* off with web.submit.enable: false */

struct rest_route {
    const char *method;
    const char *pattern; /* "/jobs/:jobid/plan": ":x" matches one segment */
    rest_handler fn;
    enum rest_body_kind body;
    unsigned flags;
};

/* Sends body (taken) with status. */
enum MHD_Result rest_send(struct MHD_Connection *c, unsigned status, json_t *body);
/* Sends text (taken, len bytes) as text/plain with status. */
enum MHD_Result rest_send_text(struct MHD_Connection *c, unsigned status, char *text, size_t len);
/* Flink's error body: {"errors": ["..."]}. */
enum MHD_Result rest_error(struct MHD_Connection *c, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Waits for f on this thread; NULL after answering the failure into *ret
 * (404 for an unknown id, 400 for bad input, else 503). */
struct rpc_future *rest_ask(struct MHD_Connection *c, struct rpc_future *f, enum MHD_Result *ret);
/* Parses the :jobid parameter; false after answering 400 into *ret. */
bool rest_job_id(struct rest_request *req, spate_id *id, enum MHD_Result *ret);
/* The part named name (and with a file when file is set), or NULL. */
const struct rest_part *rest_part_find(const struct rest_request *req, const char *name, bool file);

/* Route tables of the modules. */
extern const struct rest_route rest_jobs_routes[];
extern const struct rest_route rest_jars_routes[];
extern const struct rest_route rest_checkpoints_routes[];
extern const struct rest_route rest_jobmanager_routes[];
extern const struct rest_route rest_diagnostics_routes[];

/* rest_jars.c: the upload folder (made at start, removed at stop). */
int rest_jars_start(struct rest_server *rs, spate_error *err);
void rest_jars_stop(struct rest_server *rs);

/* How a submitted job resumes (savepointPath, allowNonRestoredState):
 * path NULL keeps what the JobGraph says. */
struct rest_resume {
    const char *path;
    bool allow_non_restored;
};
/* Reads savepointPath and allowNonRestoredState of a request body (a
 * "file:" URI is its path; the path must be absolute). */
int rest_resume_parse(json_t *body, struct rest_resume *r, spate_error *err);

/* rest_jobs.c: submits an encoded JobGraph whose library is the stored
 * blob key (the caller keeps its own reference; NULL: none, a job of
 * built-in operators only), resuming as resume says
 * (NULL: as the graph says); the job id or an error. */
int rest_submit_graph(struct rest_server *rs, const uint8_t *graph, size_t len,
                      const uint8_t key[SHA256_BYTES], const struct rest_resume *resume,
                      spate_id *job, spate_error *err);
/* The JSON object of a request's body ({} without one); NULL after
 * answering 400 into *ret. */
json_t *rest_body_object(struct rest_request *rq, enum MHD_Result *ret);
/* A query parameter (URL-decoded), or NULL. */
const char *rest_query(struct MHD_Connection *c, const char *name);

/* The metric and vertex routes (rest_metrics.c, rest_vertices.c): true when
 * path is theirs, with the answer queued into *ret. */
bool rest_metrics_route(struct rest_server *rs, struct MHD_Connection *c, const char *path,
                        const char *method, enum MHD_Result *ret);
/* GET /jobs/:jobid/vertices/:vertexid (JobVertexDetailsInfo). */
enum MHD_Result rest_vertex_details(struct rest_server *rs, struct MHD_Connection *c,
                                    const spate_id *job, const spate_id *vertex);
/* GET /jobs/:jobid/vertices/:vertexid/ + parts: accumulators,
 * subtasks/accumulators, subtasks/:i, subtasks/:i/attempts/:a (and
 * /accumulators), subtasktimes, taskmanagers; 404 for other parts. */
enum MHD_Result rest_vertex_view(struct rest_server *rs, struct MHD_Connection *c,
                                 const spate_id *job, const spate_id *vertex, char **parts, int n);
/* The "vertices" of GET /jobs/:jobid (JobDetailsVertexInfo each); an empty
 * array when they cannot be had. */
json_t *rest_job_vertices(struct rest_server *rs, const spate_id *job);

/* rest_web.c: the dashboard's files (web/) for GET and HEAD of url; true
 * with the answer queued into *ret when url is one of them, or a path that
 * would leave the web root (404 saying so). */
bool rest_web_route(struct MHD_Connection *c, const char *url, const char *method,
                    enum MHD_Result *ret);
/* The file of path ("/" is "/index.html"), or NULL: also for any path with
 * a "." or ".." segment or a backslash. */
const struct web_asset *rest_web_find(const char *path);
/* Whether an Accept-Encoding header (may be NULL) takes gzip. */
bool rest_web_takes_gzip(const char *accept_encoding);

#endif
