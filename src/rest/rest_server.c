/* The REST server (rest_server.h): the route table, request bodies (JSON
 * in memory, multipart parts streamed to disk, rest.server.max-content-length
 * enforced), Flink's error body, and the cluster-wide handlers. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <gnutls/gnutls.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/tls.h"
#include "core/util.h"
#include "rest/rest_auth.h"
#include "rest/rest_int.h"
#include "rest/rest_server.h"

#define REST_MAX_PARTS       16
#define REST_MAX_FIELD_BYTES (1 << 20)
/* The longest a metric fetch waits for the TaskManagers' answers. */
#define REST_METRICS_FETCH_MS 2000

/* ---- responses -------------------------------------------------------------------- */

enum MHD_Result
rest_send(struct MHD_Connection *c, unsigned status, json_t *body)
{
    char *text = json_dumps(body, JSON_COMPACT);
    struct MHD_Response *r;
    enum MHD_Result ret;

    json_decref(body);
    if (text == NULL)
        text = xstrdup("{}");
    r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(r, "Content-Type", "application/json; charset=UTF-8");
    ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

enum MHD_Result
rest_error(struct MHD_Connection *c, unsigned status, const char *fmt, ...)
{
    char msg[600];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return rest_send(c, status, json_pack("{s:[s]}", "errors", msg));
}

struct rpc_future *
rest_ask(struct MHD_Connection *c, struct rpc_future *f, enum MHD_Result *ret)
{
    spate_error err = { 0 };

    if (rpc_future_wait(f, REST_ASK_MS + 1000, &err) != 0) {
        if (err.code == SPATE_ENOENT)
            *ret = rest_error(c, MHD_HTTP_NOT_FOUND, "%s", err.message);
        else if (err.code == SPATE_EINVAL || err.code == SPATE_EEXIST)
            *ret = rest_error(c, MHD_HTTP_BAD_REQUEST, "%s", err.message);
        else
            *ret = rest_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "%s", err.message);
        rpc_future_unref(f);
        return NULL;
    }
    return f;
}

bool
rest_job_id(struct rest_request *req, spate_id *id, enum MHD_Result *ret)
{
    spate_error err = { 0 };

    if (id_parse(req->params[0], id, &err) == 0)
        return true;
    *ret = rest_error(req->c, MHD_HTTP_BAD_REQUEST, "Bad request: %s", err.message);
    return false;
}

const struct rest_part *
rest_part_find(const struct rest_request *req, const char *name, bool file)
{
    for (size_t i = 0; i < req->nparts; i++)
        if (strcmp(req->parts[i].name, name) == 0 && (!file || req->parts[i].path != NULL))
            return &req->parts[i];
    return NULL;
}

const char *
rest_query(struct MHD_Connection *c, const char *name)
{
    return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

/* ---- handlers -------------------------------------------------------------------------- */

static enum MHD_Result
rest_overview(struct rest_request *rq)
{
    struct rest_server *rs = rq->rs;
    struct MHD_Connection *c = rq->c;
    Cluster__Ack req = CLUSTER__ACK__INIT;
    Cluster__ClusterOverview *o;
    enum MHD_Result ret;
    struct rpc_future *f;
    json_t *j;

    f = rest_ask(c, dispatcher_request_cluster_overview(rs->dispatcher, &req, REST_ASK_MS), &ret);
    if (f == NULL)
        return ret;
    o = rpc_future_value(f);
    j = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:s, s:s}", "taskmanagers",
                  (int)o->taskmanagers, "slots-total", (int)o->slots_total, "slots-available",
                  (int)o->slots_free, "slots-free-and-blocked", 0, "jobs-running",
                  (int)o->jobs_running, "jobs-finished", (int)o->jobs_finished, "jobs-cancelled",
                  (int)o->jobs_cancelled, "jobs-failed", (int)o->jobs_failed,
                  "taskmanagers-blocked", 0, "flink-version", SPATE_VERSION, "flink-commit", "");
    rpc_future_unref(f);
    return rest_send(c, MHD_HTTP_OK, j);
}

static enum MHD_Result
rest_config(struct rest_request *rq)
{
    const struct rest_server *rs = rq->rs;

    return rest_send(rq->c, MHD_HTTP_OK,
                     json_pack("{s:I, s:s, s:i, s:s, s:s, s:{s:b, s:b, s:b, s:b}}",
                               "refresh-interval", (json_int_t)rs->refresh_ms, "timezone-name",
                               "Coordinated Universal Time", "timezone-offset", 0, "flink-version",
                               SPATE_VERSION, "flink-revision", "", "features", "web-submit",
                               rs->submit_enabled, "web-cancel", rs->cancel_enabled, "web-rescale",
                               0, "web-history", 0));
}

static json_t *
rest_resource(double cpu)
{
    return json_pack("{s:f, s:i, s:i, s:i, s:i, s:{}}", "cpuCores", cpu, "taskHeapMemory", 0,
                     "taskOffHeapMemory", 0, "managedMemory", 0, "networkMemory", 0,
                     "extendedResources");
}

/* A TaskManager's metric as a number from the store (0: not there). */
static json_int_t
rest_tm_metric(const struct metric_component *m, const char *name)
{
    const char *v = m != NULL ? metric_component_get(m, name) : NULL;

    return v != NULL ? (json_int_t)strtoll(v, NULL, 10) : 0;
}

/* Flink's TaskExecutorMemoryConfiguration. spate has no JVM: its one
 * configured memory is the network buffers (taskmanager.memory.segment-size
 * times their number), which is all of its "Flink memory"; the heap and
 * JVM parts are 0. */
static json_t *
rest_tm_memory_configuration(const struct metric_component *m)
{
    json_int_t network = rest_tm_metric(m, "Status.Shuffle.Netty.TotalMemory");

    return json_pack("{s:i, s:i, s:i, s:i, s:I, s:i, s:i, s:i, s:I, s:I}", "frameworkHeap", 0,
                     "taskHeap", 0, "frameworkOffHeap", 0, "taskOffHeap", 0, "networkMemory",
                     network, "managedMemory", 0, "jvmMetaspace", 0, "jvmOverhead", 0,
                     "totalFlinkMemory", network, "totalProcessMemory", network);
}

/* Flink's TaskManagerMetricsInfo from the TaskManager's metrics: the
 * process's resident memory where Flink reports its heap, the network
 * buffers (segments and bytes); no direct or mapped JVM buffers, no GC. */
static json_t *
rest_tm_metrics(const struct metric_component *m)
{
    json_int_t rss = rest_tm_metric(m, "Status.Process.Memory.RSS");
    json_int_t seg_total = rest_tm_metric(m, "Status.Shuffle.Netty.TotalMemorySegments");
    json_int_t seg_avail = rest_tm_metric(m, "Status.Shuffle.Netty.AvailableMemorySegments");

    return json_pack(
        "{s:I, s:I, s:I, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:I, s:I, s:I, "
        "s:I, s:I, s:I, s:I, s:I, s:[]}",
        "heapUsed", rss, "heapCommitted", rss, "heapMax", rss, "nonHeapUsed", 0, "nonHeapCommitted",
        0, "nonHeapMax", 0, "directCount", 0, "directUsed", 0, "directMax", 0, "mappedCount", 0,
        "mappedUsed", 0, "mappedMax", 0, "memorySegmentsAvailable", seg_avail,
        "memorySegmentsTotal", seg_total, "nettyShuffleMemorySegmentsAvailable", seg_avail,
        "nettyShuffleMemorySegmentsUsed",
        rest_tm_metric(m, "Status.Shuffle.Netty.UsedMemorySegments"),
        "nettyShuffleMemorySegmentsTotal", seg_total, "nettyShuffleMemoryAvailable",
        rest_tm_metric(m, "Status.Shuffle.Netty.AvailableMemory"), "nettyShuffleMemoryUsed",
        rest_tm_metric(m, "Status.Shuffle.Netty.UsedMemory"), "nettyShuffleMemoryTotal",
        rest_tm_metric(m, "Status.Shuffle.Netty.TotalMemory"), "garbageCollectors");
}

/* m: the TaskManager's metrics from the store (NULL: none yet). */
static json_t *
rest_tm_json(const Cluster__TaskManagerInfo *t, bool details, const struct metric_component *m)
{
    spate_id id;
    Cluster__Hardware *hw = t->hardware;
    json_t *j;

    gw_id_get(&t->resource_id, &id);
    j = json_pack("{s:s, s:s, s:i, s:i, s:I, s:i, s:i, s:o, s:o, s:{s:I, s:I, s:I, s:I}, s:o, "
                  "s:b}",
                  "id", id_str(&id).s, "path", t->address, "dataPort", t->data_port, "jmxPort", -1,
                  "timeSinceLastHeartbeat", (json_int_t)t->last_heartbeat_ms, "slotsNumber",
                  (int)t->slots, "freeSlots", (int)t->free_slots, "totalResource",
                  rest_resource((double)t->slots), "freeResource",
                  rest_resource((double)t->free_slots), "hardware", "cpuCores",
                  (json_int_t)(hw ? hw->cpu_cores : 0), "physicalMemory",
                  (json_int_t)(hw ? hw->physical_memory : 0), "freeMemory",
                  (json_int_t)(hw ? hw->free_memory : 0), "managedMemory", (json_int_t)0,
                  "memoryConfiguration", rest_tm_memory_configuration(m), "blocked", 0);
    if (details) {
        json_t *slots = json_array();

        for (size_t i = 0; i < t->n_allocated; i++) {
            spate_id job;

            gw_id_get(&t->allocated[i]->job_id, &job);
            json_array_append_new(slots, json_pack("{s:s, s:o}", "jobId", id_str(&job).s,
                                                   "resource", rest_resource(1.0)));
        }
        json_object_set_new(j, "allocatedSlots", slots);
        json_object_set_new(j, "metrics", rest_tm_metrics(m));
    }
    return j;
}

static enum MHD_Result
rest_taskmanagers_of(struct rest_server *rs, struct MHD_Connection *c, const char *idtext)
{
    Cluster__TaskManagerQuery q = CLUSTER__TASK_MANAGER_QUERY__INIT;
    const struct metric_store *store;
    Cluster__TaskManagerInfos *infos;
    enum MHD_Result ret;
    struct rpc_future *f;
    spate_id id;
    json_t *arr;

    if (idtext != NULL) {
        if (id_parse(idtext, &id, NULL) != 0)
            return rest_error(c, MHD_HTTP_NOT_FOUND, "Could not find TaskManager %s.", idtext);
        q.resource_id = gw_id_bytes(&id);
    }
    f = rest_ask(c, rm_request_task_managers(rs->rm, &q, REST_ASK_MS), &ret);
    if (f == NULL)
        return ret;
    infos = rpc_future_value(f);
    if (idtext != NULL && infos->n_taskmanagers == 0) {
        rpc_future_unref(f);
        return rest_error(c, MHD_HTTP_NOT_FOUND, "Could not find TaskManager %s.", idtext);
    }
    store = metric_fetcher_acquire(rs->metrics, NULL);
    arr = json_array();
    for (size_t i = 0; i < infos->n_taskmanagers; i++) {
        const Cluster__TaskManagerInfo *t = infos->taskmanagers[i];
        spate_id tm;

        gw_id_get(&t->resource_id, &tm);
        json_array_append_new(
            arr, rest_tm_json(t, idtext != NULL, metric_store_taskmanager(store, &tm)));
    }
    metric_fetcher_release(rs->metrics);
    rpc_future_unref(f);
    if (idtext != NULL) {
        json_t *one = json_incref(json_array_get(arr, 0));

        json_decref(arr);
        return rest_send(c, MHD_HTTP_OK, one);
    }
    return rest_send(c, MHD_HTTP_OK, json_pack("{s:o}", "taskmanagers", arr));
}

static enum MHD_Result
rest_taskmanagers(struct rest_request *rq)
{
    return rest_taskmanagers_of(rq->rs, rq->c, NULL);
}

static enum MHD_Result
rest_taskmanager(struct rest_request *rq)
{
    return rest_taskmanagers_of(rq->rs, rq->c, rq->params[0]);
}

static enum MHD_Result
rest_shutdown(struct rest_request *rq)
{
    struct rest_server *rs = rq->rs;
    struct MHD_Connection *c = rq->c;
    Cluster__StopCluster req = CLUSTER__STOP_CLUSTER__INIT;
    enum MHD_Result ret;
    struct rpc_future *f;

    req.reason = "DELETE /cluster";
    f = rest_ask(c, dispatcher_shutdown_cluster(rs->dispatcher, &req, REST_ASK_MS), &ret);
    if (f == NULL)
        return ret;
    rpc_future_unref(f);
    return rest_send(c, MHD_HTTP_OK, json_object());
}

/* ---- routing ------------------------------------------------------------------------- */

static const struct rest_route rest_server_routes[] = {
    { "GET", "/overview", rest_overview, REST_BODY_NONE, 0 },
    { "GET", "/config", rest_config, REST_BODY_NONE, 0 },
    { "GET", "/taskmanagers", rest_taskmanagers, REST_BODY_NONE, 0 },
    { "GET", "/taskmanagers/:taskmanagerid", rest_taskmanager, REST_BODY_NONE, 0 },
    { "DELETE", "/cluster", rest_shutdown, REST_BODY_NONE, 0 },
    { NULL, NULL, NULL, REST_BODY_NONE, 0 },
};

/* Every module's table; literal paths win over parameters. */
static const struct rest_route *const rest_tables[] = {
    rest_server_routes,      rest_jobs_routes,       rest_jars_routes,
    rest_checkpoints_routes, rest_jobmanager_routes, rest_diagnostics_routes
};

/* Whether path matches pattern; fills params (at most REST_MAX_PARAMS,
 * each < 128). */
static bool
rest_path_matches(const char *pattern, const char *path, char params[REST_MAX_PARAMS][128],
                  int *nparams)
{
    int np = 0;

    while (*pattern == '/' && *path == '/') {
        const char *pe = strchrnul(pattern + 1, '/'), *se = strchrnul(path + 1, '/');
        size_t plen = (size_t)(pe - pattern - 1), slen = (size_t)(se - path - 1);

        if (pattern[1] == ':') {
            if (slen == 0 || slen >= 128 || np == REST_MAX_PARAMS)
                return false;
            memcpy(params[np], path + 1, slen);
            params[np++][slen] = '\0';
        } else if (plen != slen || strncmp(pattern + 1, path + 1, plen) != 0) {
            return false;
        }
        pattern = pe;
        path = se;
    }
    *nparams = np;
    return *pattern == '\0' && *path == '\0';
}

/* The route for method and path; NULL with *known set when only the
 * method is wrong. */
static const struct rest_route *
rest_match(const char *method, const char *path, char params[REST_MAX_PARAMS][128], bool *known)
{
    *known = false;
    for (int want = 0; want <= REST_MAX_PARAMS; want++) {
        for (size_t t = 0; t < ARRAY_SIZE(rest_tables); t++) {
            for (const struct rest_route *r = rest_tables[t]; r->pattern != NULL; r++) {
                int np;

                if (!rest_path_matches(r->pattern, path, params, &np) || np != want)
                    continue;
                if (strcmp(r->method, method) == 0)
                    return r;
                *known = true;
            }
        }
    }
    return NULL;
}

/* Multipart parts as libmicrohttpd's post processor hands them over: a
 * part starts at offset 0; files go to disk, fields to memory. */
static enum MHD_Result
rest_post_part(void *cls, enum MHD_ValueKind kind, const char *key, const char *filename,
               const char *content_type, const char *transfer_encoding, const char *data,
               uint64_t off, size_t size)
{
    struct rest_request *rq = cls;
    struct rest_part *p;

    UNUSED(kind);
    UNUSED(content_type);
    UNUSED(transfer_encoding);
    if (rq->error != NULL)
        return MHD_NO;
    if (off == 0 || rq->nparts == 0 || strcmp(rq->parts[rq->nparts - 1].name, key) != 0) {
        if (rq->nparts == REST_MAX_PARTS) {
            rq->error = xasprintf("more than %d parts in a multipart body", REST_MAX_PARTS);
            return MHD_NO;
        }
        rq->parts = xrealloc(rq->parts, (rq->nparts + 1) * sizeof *rq->parts);
        p = &rq->parts[rq->nparts++];
        memset(p, 0, sizeof *p);
        p->fd = -1;
        p->name = xstrdup(key != NULL ? key : "");
        if (filename != NULL) {
            spate_id unique;

            p->filename = xstrdup(filename);
            id_random(&unique);
            p->path = xasprintf("%s/part-%s", rq->rs->incoming_dir, id_str(&unique).s);
            p->fd = open(p->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
            if (p->fd < 0) {
                rq->error =
                    xasprintf("cannot store the upload '%s': %s", filename, spate_strerror(-errno));
                SPATE_LOG_ERROR(REST_LOG, "%s", rq->error);
                free(p->path);
                p->path = NULL;
                return MHD_NO;
            }
        } else {
            p->value = xstrdup("");
        }
    }
    p = &rq->parts[rq->nparts - 1];
    if (size == 0)
        return MHD_YES;
    if (p->fd >= 0) {
        for (size_t done = 0; done < size;) {
            ssize_t n = write(p->fd, data + done, size - done);

            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0) {
                rq->error = xasprintf("cannot store the upload '%s': %s", p->filename,
                                      spate_strerror(-errno));
                return MHD_NO;
            }
            done += (size_t)n;
        }
        p->len += size;
        return MHD_YES;
    }
    if (p->value == NULL || p->len + size > REST_MAX_FIELD_BYTES) {
        rq->error =
            xasprintf("form field '%s' is larger than %d bytes", p->name, REST_MAX_FIELD_BYTES);
        return MHD_NO;
    }
    p->value = xrealloc(p->value, p->len + size + 1);
    memcpy(p->value + p->len, data, size);
    p->len += size;
    p->value[p->len] = '\0';
    return MHD_YES;
}

/* security.ssl.rest.authentication-enabled: the client's certificate chains
 * to the truststore (libmicrohttpd asks for it; GnuTLS checks it here). */
static bool
rest_client_certified(struct rest_server *rs, struct MHD_Connection *c, const char *method,
                      const char *url)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
    unsigned int status = 0;
    int rc;

    if (info == NULL)
        return false;
    rc = gnutls_certificate_verify_peers2((gnutls_session_t)info->tls_session, &status);
    if (rc == 0 && status == 0)
        return true;
    SPATE_LOG_LIMITED(&rs->refusals, LOG_LEVEL_WARN, REST_LOG,
                      "refused %s %s: %s (security.ssl.rest.authentication-enabled)", method, url,
                      rc != 0 ? gnutls_strerror(rc) : "the client's certificate is not trusted");
    return false;
}

/* The first call of a request: its route and how its body is taken. */
static enum MHD_Result
rest_begin(struct rest_request *rq, const char *url, const char *method)
{
    struct MHD_Connection *c = rq->c;
    const char *path = strncmp(url, "/v1/", 4) == 0 ? url + 3 : url;
    const char *length;
    enum MHD_Result denied;
    bool known;

    if (rq->rs->tls.client_auth && !rest_client_certified(rq->rs, c, method, url))
        return rest_error(c, MHD_HTTP_UNAUTHORIZED,
                          "Unauthorized: this server needs a client certificate its truststore "
                          "trusts (security.ssl.rest.authentication-enabled)");
    if (!rest_auth_check(rq->rs->auth, &rq->rs->refusals, c, method, url, &denied))
        return denied;
    {
        enum MHD_Result ret;

        /* The metric and vertex paths route themselves (rest_metrics.c),
         * before the tables: /jobs/metrics is no :jobid. */
        if (rest_metrics_route(rq->rs, c, path, method, &ret))
            return ret;
    }
    rq->route = rest_match(method, path, rq->params, &known);
    if (rq->route == NULL && known)
        return rest_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "Method %s is not allowed for %s.",
                          method, url);
    if (rq->route == NULL) {
        enum MHD_Result ret;

        /* The dashboard's files: whatever no REST route takes. */
        if (rest_web_route(c, url, method, &ret))
            return ret;
        return rest_error(c, MHD_HTTP_NOT_FOUND, "Not found: %s", url);
    }
    if ((rq->route->flags & REST_SUBMIT) && !rq->rs->submit_enabled) {
        char peer[64];

        rq->route = NULL;
        rest_peer(c, peer, sizeof peer);
        SPATE_LOG_LIMITED(&rq->rs->refusals, LOG_LEVEL_WARN, REST_LOG,
                          "refused %s %s from %s: job submission over REST is off "
                          "(web.submit.enable is false)",
                          method, url, peer);
        return rest_error(c, MHD_HTTP_NOT_FOUND,
                          "Not found: %s (job submission over REST is off: web.submit.enable "
                          "is false)",
                          url);
    }
    length = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (length != NULL && strtoll(length, NULL, 10) > rq->rs->max_body) {
        rq->route = NULL;
        SPATE_LOG_WARN(REST_LOG, "refused %s %s: %s bytes is more than %lld", method, url, length,
                       (long long)rq->rs->max_body);
        return rest_error(c, MHD_HTTP_CONTENT_TOO_LARGE,
                          "the request body has %s bytes, more than rest.server.max-content-length "
                          "allows (%lld bytes)",
                          length, (long long)rq->rs->max_body);
    }
    rq->kind = rq->route->body;
    if (rq->kind == REST_BODY_MULTIPART) {
        rq->pp = MHD_create_post_processor(c, 64 * 1024, rest_post_part, rq);
        if (rq->pp == NULL) {
            rq->route = NULL;
            return rest_error(c, MHD_HTTP_BAD_REQUEST,
                              "%s %s expects a multipart/form-data body (for example curl -F "
                              "\"jarfile=@job.so\")",
                              method, url);
        }
    }
    return MHD_YES;
}

/* A piece of the body. Past the size cap the rest is read and dropped, so
 * that the client gets its 413; far past it the connection is closed. */
static enum MHD_Result
rest_body(struct rest_request *rq, const char *data, size_t size)
{
    rq->received += (int64_t)size;
    if (rq->received > rq->rs->max_body) {
        if (!rq->too_large)
            SPATE_LOG_WARN(REST_LOG, "a request body passed %lld bytes: dropping it",
                           (long long)rq->rs->max_body);
        rq->too_large = true;
        return rq->received > 4 * rq->rs->max_body ? MHD_NO : MHD_YES;
    }
    if (rq->error != NULL)
        return MHD_YES;
    if (rq->kind == REST_BODY_MULTIPART) {
        if (MHD_post_process(rq->pp, data, size) != MHD_YES && rq->error == NULL)
            rq->error = xstrdup("the multipart/form-data body is malformed");
    } else if (rq->kind == REST_BODY_JSON) {
        rq->json = xrealloc(rq->json, rq->json_len + size + 1);
        memcpy(rq->json + rq->json_len, data, size);
        rq->json_len += size;
        rq->json[rq->json_len] = '\0';
    }
    return MHD_YES;
}

static enum MHD_Result
rest_dispatch(void *cls, struct MHD_Connection *c, const char *url, const char *method,
              const char *version, const char *upload_data, size_t *upload_size, void **con_cls)
{
    struct rest_server *rs = cls;
    struct rest_request *rq = *con_cls;
    enum MHD_Result ret;

    UNUSED(version);
    if (rq == NULL) {
        /* First call: headers only; answer once the body (if any) is read. */
        rq = xcalloc(1, sizeof *rq);
        rq->rs = rs;
        rq->c = c;
        *con_cls = rq;
        atomic_fetch_add(&rs->inflight, 1);
        rest_conns_serving(c, true);
        return rest_begin(rq, url, method);
    }
    if (rq->route == NULL) {
        *upload_size = 0; /* answered already */
        return MHD_YES;
    }
    if (*upload_size > 0) {
        ret = rest_body(rq, upload_data, *upload_size);
        *upload_size = 0;
        return ret;
    }
    if (rq->too_large)
        return rest_error(c, MHD_HTTP_CONTENT_TOO_LARGE,
                          "the request body is larger than rest.server.max-content-length "
                          "allows (%lld bytes)",
                          (long long)rs->max_body);
    if (rq->pp != NULL && rq->error == NULL)
        MHD_destroy_post_processor(rq->pp); /* flushes the last part */
    rq->pp = NULL;
    for (size_t i = 0; i < rq->nparts; i++) {
        if (rq->parts[i].fd >= 0 && close(rq->parts[i].fd) != 0 && rq->error == NULL)
            rq->error = xasprintf("cannot store the upload '%s': %s", rq->parts[i].filename,
                                  spate_strerror(-errno));
        rq->parts[i].fd = -1;
    }
    if (rq->error != NULL)
        return rest_error(c, MHD_HTTP_BAD_REQUEST, "%s", rq->error);
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        char peer[64];

        /* The access log of changes (rate-limited: without authentication
         * anyone may make us write it). */
        rest_peer(c, peer, sizeof peer);
        SPATE_LOG_LIMITED(&rs->access, LOG_LEVEL_INFO, REST_LOG, "access: %s %s from %s%s", method,
                          url, peer, rs->auth != NULL ? " (authenticated)" : "");
    }
    return rq->route->fn(rq);
}

static void
rest_request_free(struct rest_request *rq)
{
    if (rq->pp != NULL)
        MHD_destroy_post_processor(rq->pp);
    for (size_t i = 0; i < rq->nparts; i++) {
        struct rest_part *p = &rq->parts[i];

        if (p->fd >= 0)
            close(p->fd);
        if (p->path != NULL)
            unlink(p->path); /* what a handler kept, it moved away */
        free(p->path);
        free(p->name);
        free(p->filename);
        free(p->value);
    }
    free(rq->parts);
    free(rq->json);
    free(rq->error);
    free(rq);
}

static void
rest_completed(void *cls, struct MHD_Connection *c, void **con_cls,
               enum MHD_RequestTerminationCode toe)
{
    struct rest_server *rs = cls;

    UNUSED(toe);
    rest_conns_serving(c, false);
    if (*con_cls != NULL) {
        rest_request_free(*con_cls);
        atomic_fetch_sub(&rs->inflight, 1);
        *con_cls = NULL;
    }
}

static const char rest_no_fds[] =
    "HTTP/1.1 503 Service Unavailable\r\n"
    "Content-Type: application/json; charset=UTF-8\r\n"
    "Content-Length: 96\r\n"
    "Connection: close\r\n"
    "\r\n"
    "{\"errors\":[\"Service Unavailable: the JobManager has no file descriptor left; try again "
    "later\"]}\n";

/* libmicrohttpd could not accept for want of a descriptor (it says so
 * through rest_log, on its listening thread): the reserve goes to the
 * waiting client, which hears 503, and is taken again. Its request is read
 * before the close, so that the close does not reset the answer away. */
static void
rest_refuse_no_fds(struct rest_server *rs)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(rs->daemon, MHD_DAEMON_INFO_LISTEN_FD);
    char drain[16384];
    int c;

    if (info == NULL || rs->reserve_fd < 0)
        return;
    close(rs->reserve_fd);
    c = accept4(info->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (c >= 0) {
        struct pollfd p = { .fd = c, .events = POLLIN };

        (void)!send(c, rest_no_fds, sizeof rest_no_fds - 1, MSG_NOSIGNAL);
        shutdown(c, SHUT_WR);
        if (poll(&p, 1, 50) > 0)
            (void)!recv(c, drain, sizeof drain, MSG_DONTWAIT);
        close(c);
    }
    rs->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static void rest_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

static void
rest_log(void *cls, const char *fmt, va_list ap)
{
    struct rest_server *rs = cls;
    char msg[512];

    vsnprintf(msg, sizeof msg, fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    if (strstr(msg, "accepting connection") != NULL && strstr(msg, strerror(EMFILE)) != NULL)
        rest_refuse_no_fds(rs);
    /* libmicrohttpd repeats itself when accept fails (no file descriptors
     * left): a few lines, not hundreds of megabytes. */
    SPATE_LOG_LIMITED(&rs->refusals, LOG_LEVEL_WARN, REST_LOG, "%s", msg);
}

/* The daemon on port, over HTTPS when rs has a certificate. */
static struct MHD_Daemon *
rest_daemon_start(struct rest_server *rs, const struct config *conf, int port,
                  struct sockaddr_in *sa)
{
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
                         MHD_USE_POLL | MHD_USE_ERROR_LOG;
    struct MHD_OptionItem tls[5] = { { MHD_OPTION_END, 0, NULL } };
    int proto = 0, n = 0;

    if (rest_tls_on(&rs->tls)) {
        flags |= MHD_USE_TLS;
        config_get_enum(conf, CFG(SECURITY_SSL_PROTOCOL), &proto, NULL);
        /* The certificate through a callback, so that SIGHUP can change it. */
        tls[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_CERT_CALLBACK, 0,
                                            (void *)rest_tls_certificate };
        tls[n++] =
            (struct MHD_OptionItem){ MHD_OPTION_HTTPS_PRIORITIES, 0,
                                     proto == 1 ? "NORMAL:-VERS-ALL:+VERS-TLS1.3"
                                                : "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2" };
        if (rs->tls.trust != NULL)
            tls[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_TRUST, 0, rs->tls.trust };
        tls[n] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
    }
    sa->sin_port = htons((uint16_t)port);
    /* A thread per connection: a handler may wait for a job's main in its
     * child process (web.submit.timeout) without holding up the other
     * requests. */
    return MHD_start_daemon(
        flags, (uint16_t)port, NULL, NULL, rest_dispatch, rs, MHD_OPTION_EXTERNAL_LOGGER, rest_log,
        rs, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)sa, MHD_OPTION_NOTIFY_COMPLETED,
        rest_completed, rs, MHD_OPTION_NOTIFY_CONNECTION, rest_conns_notify, rs,
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)((rs->idle_timeout_ms + 999) / 1000),
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)rs->max_conns + REST_CONNS_SPARE,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)rs->max_conns_per_ip, MHD_OPTION_ARRAY, tls,
        MHD_OPTION_END);
}

int
rest_server_start(const struct rest_server_options *o, struct rest_server **out, spate_error *err)
{
    struct rest_server *rs = xcalloc(1, sizeof *rs);
    struct sockaddr_in sa = { .sin_family = AF_INET };
    const union MHD_DaemonInfo *info;
    int64_t interval = 1000;
    char addr[300];
    uint64_t max;
    int lo, hi, rc;

    rest_conns_init(&rs->conns, 0, 0);
    rs->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if ((rc = config_parse_port_range(o->port, &lo, &hi, err)) != 0)
        goto fail;
    if (inet_pton(AF_INET,
                  strcmp(o->bind_address, "localhost") == 0 ? "127.0.0.1" : o->bind_address,
                  &sa.sin_addr) != 1) {
        rc = spate_error_set(err, SPATE_ECONFIG, "rest.bind-address '%s' is not an IPv4 address",
                             o->bind_address);
        goto fail;
    }
    rs->svc = o->svc;
    rs->conf = o->conf;
    rs->blobs = o->blobs;
    rs->registry = o->metrics;
    rs->submit_enabled = false;
    if ((rc = config_get_bool(o->conf, CFG(WEB_SUBMIT_ENABLE), &rs->submit_enabled, err)) != 0 ||
        (rc = config_get_bool(o->conf, CFG(WEB_CANCEL_ENABLE), &rs->cancel_enabled, err)) != 0 ||
        (rc = config_get_duration_ms(o->conf, CFG(WEB_REFRESH_INTERVAL), &rs->refresh_ms, err)) !=
            0 ||
        (rc = config_get_memory_bytes(o->conf, CFG(REST_SERVER_MAX_CONTENT_LENGTH), &max, err)) !=
            0 ||
        (rc = config_get_duration_ms(o->conf, CFG(WEB_SUBMIT_TIMEOUT), &rs->plan_timeout_ms,
                                     err)) != 0 ||
        (rc = config_get_int(o->conf, CFG(REST_SERVER_CONNECTION_LIMIT), &rs->max_conns, err)) !=
            0 ||
        (rc = config_get_int(o->conf, CFG(REST_SERVER_PER_IP_CONNECTION_LIMIT),
                             &rs->max_conns_per_ip, err)) != 0 ||
        (rc = config_get_duration_ms(o->conf, CFG(REST_SERVER_CONNECTION_TIMEOUT),
                                     &rs->idle_timeout_ms, err)) != 0 ||
        (rc = config_get_duration_ms(o->conf, CFG(REST_SERVER_REQUEST_TIMEOUT),
                                     &rs->request_timeout_ms, err)) != 0)
        goto fail;
    rs->conns.max = rs->max_conns;
    rs->conns.timeout_ms = rs->request_timeout_ms;
    rs->max_body = (int64_t)max;
    if ((rc = rest_auth_new(o->conf, &rs->auth, err)) != 0 || (rc = rest_jars_start(rs, err)) != 0)
        goto fail;
    snprintf(addr, sizeof addr, "%s/%s", rpc_service_address(o->svc), RPC_ENDPOINT_DISPATCHER);
    rpc_gateway_new(o->svc, addr, NULL, &rs->dispatcher, NULL);
    snprintf(addr, sizeof addr, "%s/%s", rpc_service_address(o->svc),
             RPC_ENDPOINT_RESOURCE_MANAGER);
    rpc_gateway_new(o->svc, addr, NULL, &rs->rm, NULL);
    if ((rc = config_get_duration_ms(o->conf, CFG(METRICS_FETCHER_UPDATE_INTERVAL), &interval,
                                     err)) != 0)
        goto fail;
    rs->metrics = metric_fetcher_new(o->svc, rs->rm, interval, REST_METRICS_FETCH_MS);
    if ((rc = rest_tls_init(&rs->tls, o->conf, err)) != 0)
        goto fail;
    for (int port = lo; port <= hi && rs->daemon == NULL; port++)
        rs->daemon = rest_daemon_start(rs, o->conf, port, &sa);
    if (rs->daemon == NULL) {
        rc = spate_error_set(err, SPATE_EADDRINUSE, "cannot start the REST server on %s:%s",
                             o->bind_address, o->port);
        goto fail;
    }
    info = MHD_get_daemon_info(rs->daemon, MHD_DAEMON_INFO_BIND_PORT);
    rs->port = info != NULL ? info->port : lo;
    *out = rs;
    return 0;
fail:
    if (rs->reserve_fd >= 0)
        close(rs->reserve_fd);
    rest_conns_destroy(&rs->conns);
    rest_tls_release(&rs->tls);
    rest_auth_free(rs->auth);
    rest_jars_stop(rs);
    metric_fetcher_free(rs->metrics);
    rpc_gateway_free(rs->dispatcher);
    rpc_gateway_free(rs->rm);
    free(rs);
    return rc;
}

bool
rest_server_https(const struct rest_server *rs)
{
    return rest_tls_on(&rs->tls);
}

int
rest_server_port(const struct rest_server *rs)
{
    return rs->port;
}

void
rest_server_stop(struct rest_server *rs)
{
    struct timespec ts = { 0, 5 * 1000000 };

    if (rs == NULL)
        return;
    /* Let answers being written finish (at most 2 s). */
    for (int i = 0; i < 400 && atomic_load(&rs->inflight) > 0; i++)
        nanosleep(&ts, NULL);
    MHD_stop_daemon(rs->daemon);
    if (rs->reserve_fd >= 0)
        close(rs->reserve_fd);
    rest_conns_destroy(&rs->conns);
    rest_tls_release(&rs->tls);
    rest_auth_free(rs->auth);
    rest_jars_stop(rs);
    metric_fetcher_free(rs->metrics);
    rpc_gateway_free(rs->dispatcher);
    rpc_gateway_free(rs->rm);
    free(rs);
}
