/* The REST server (rest_server.h): routing, Flink's JSON, error bodies. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <microhttpd.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/util.h"
#include "rest/rest_server.h"
#include "rpc/gateways.h"

#define REST_LOG    "rest"
#define REST_ASK_MS 10000

struct rest_server {
    struct MHD_Daemon *daemon;
    int port;
    struct rpc_service *svc;
    const struct config *conf;
    struct rpc_gateway *dispatcher;
    struct rpc_gateway *rm;
    /* Requests between their first call and their completion; stop waits
     * for them, so that DELETE /cluster's answer leaves before the process. */
    _Atomic int inflight;
};

/* ---- responses -------------------------------------------------------------------- */

static enum MHD_Result
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

/* Flink's error body: {"errors": ["..."]}. */
static enum MHD_Result rest_error(struct MHD_Connection *c, unsigned status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static enum MHD_Result
rest_error(struct MHD_Connection *c, unsigned status, const char *fmt, ...)
{
    char msg[600];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return rest_send(c, status, json_pack("{s:[s]}", "errors", msg));
}

/* Asks and waits (on this, libmicrohttpd's, thread). NULL after sending an
 * error response into *ret. */
static struct rpc_future *
rest_ask(struct MHD_Connection *c, struct rpc_future *f, enum MHD_Result *ret)
{
    spate_error err = { 0 };

    if (rpc_future_wait(f, REST_ASK_MS + 1000, &err) != 0) {
        if (err.code == SPATE_ENOENT)
            *ret = rest_error(c, MHD_HTTP_NOT_FOUND, "%s", err.message);
        else
            *ret = rest_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "%s", err.message);
        rpc_future_unref(f);
        return NULL;
    }
    return f;
}

/* ---- handlers -------------------------------------------------------------------------- */

static enum MHD_Result
rest_overview(struct rest_server *rs, struct MHD_Connection *c)
{
    Cluster__Ack req = CLUSTER__ACK__INIT;
    Cluster__ClusterOverview *o;
    enum MHD_Result ret;
    struct rpc_future *f;
    json_t *j;

    f = rest_ask(c, dispatcher_request_cluster_overview(rs->dispatcher, &req, REST_ASK_MS), &ret);
    if (f == NULL)
        return ret;
    o = rpc_future_value(f);
    j = json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:i, s:s, s:s}", "taskmanagers",
                  (int)o->taskmanagers, "slots-total", (int)o->slots_total, "slots-available",
                  (int)o->slots_free, "slots-free-and-blocked", 0, "jobs-running",
                  (int)o->jobs_running, "jobs-finished", (int)o->jobs_finished, "jobs-cancelled",
                  (int)o->jobs_cancelled, "jobs-failed", (int)o->jobs_failed, "flink-version",
                  SPATE_VERSION, "flink-commit", "");
    rpc_future_unref(f);
    return rest_send(c, MHD_HTTP_OK, j);
}

static enum MHD_Result
rest_config(struct rest_server *rs, struct MHD_Connection *c)
{
    bool submit = true;

    config_get_bool(rs->conf, CFG(WEB_SUBMIT_ENABLE), &submit, NULL);
    return rest_send(c, MHD_HTTP_OK,
                     json_pack("{s:i, s:s, s:i, s:s, s:s, s:{s:b, s:b, s:b, s:b}}",
                               "refresh-interval", 3000, "timezone-name",
                               "Coordinated Universal Time", "timezone-offset", 0, "flink-version",
                               SPATE_VERSION, "flink-revision", "", "features", "web-submit",
                               submit, "web-cancel", 1, "web-rescale", 0, "web-history", 0));
}

static json_t *
rest_resource(double cpu)
{
    return json_pack("{s:f, s:i, s:i, s:i, s:i, s:{}}", "cpuCores", cpu, "taskHeapMemory", 0,
                     "taskOffHeapMemory", 0, "managedMemory", 0, "networkMemory", 0,
                     "extendedResources");
}

static json_t *
rest_tm_json(const Cluster__TaskManagerInfo *t, bool details)
{
    spate_id id;
    Cluster__Hardware *hw = t->hardware;
    json_t *j;

    gw_id_get(&t->resource_id, &id);
    j = json_pack("{s:s, s:s, s:i, s:i, s:I, s:i, s:i, s:o, s:o, s:{s:I, s:I, s:I, s:I}, s:{}, "
                  "s:b}",
                  "id", id_str(&id).s, "path", t->address, "dataPort", t->data_port, "jmxPort", -1,
                  "timeSinceLastHeartbeat", (json_int_t)t->last_heartbeat_ms, "slotsNumber",
                  (int)t->slots, "freeSlots", (int)t->free_slots, "totalResource",
                  rest_resource((double)t->slots), "freeResource",
                  rest_resource((double)t->free_slots), "hardware", "cpuCores",
                  (json_int_t)(hw ? hw->cpu_cores : 0), "physicalMemory",
                  (json_int_t)(hw ? hw->physical_memory : 0), "freeMemory",
                  (json_int_t)(hw ? hw->free_memory : 0), "managedMemory", (json_int_t)0,
                  "memoryConfiguration", "blocked", 0);
    if (details) {
        json_t *slots = json_array();

        for (size_t i = 0; i < t->n_allocated; i++) {
            spate_id job;

            gw_id_get(&t->allocated[i]->job_id, &job);
            json_array_append_new(slots, json_pack("{s:s, s:o}", "jobId", id_str(&job).s,
                                                   "resource", rest_resource(1.0)));
        }
        json_object_set_new(j, "allocatedSlots", slots);
        json_object_set_new(j, "metrics",
                            json_pack("{s:i, s:i, s:i, s:i, s:i, s:i, s:[]}", "heapUsed", 0,
                                      "heapCommitted", 0, "heapMax", 0, "nonHeapUsed", 0,
                                      "memorySegmentsAvailable", 0, "memorySegmentsTotal", 0,
                                      "garbageCollectors"));
    }
    return j;
}

static enum MHD_Result
rest_taskmanagers(struct rest_server *rs, struct MHD_Connection *c, const char *idtext)
{
    Cluster__TaskManagerQuery q = CLUSTER__TASK_MANAGER_QUERY__INIT;
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
    if (idtext != NULL) {
        if (infos->n_taskmanagers == 0) {
            rpc_future_unref(f);
            return rest_error(c, MHD_HTTP_NOT_FOUND, "Could not find TaskManager %s.", idtext);
        }
        ret = rest_send(c, MHD_HTTP_OK, rest_tm_json(infos->taskmanagers[0], true));
        rpc_future_unref(f);
        return ret;
    }
    arr = json_array();
    for (size_t i = 0; i < infos->n_taskmanagers; i++)
        json_array_append_new(arr, rest_tm_json(infos->taskmanagers[i], false));
    rpc_future_unref(f);
    return rest_send(c, MHD_HTTP_OK, json_pack("{s:o}", "taskmanagers", arr));
}

static json_t *
rest_job_json(const Cluster__JobInfo *info)
{
    spate_id id;
    int64_t now = clock_wall_ms();
    int64_t end = info->end_time;
    uint32_t canceled =
        info->tasks_total - info->tasks_scheduled - info->tasks_running - info->tasks_finished;

    gw_id_get(&info->job_id, &id);
    return json_pack("{s:s, s:s, s:I, s:I, s:I, s:s, s:I, s:{s:i, s:i, s:i, s:i, s:i, s:i, s:i, "
                     "s:i, s:i, s:i, s:i}}",
                     "jid", id_str(&id).s, "name", info->name, "start-time",
                     (json_int_t)info->start_time, "end-time", (json_int_t)end, "duration",
                     (json_int_t)((end >= 0 ? end : now) - info->start_time), "state", info->state,
                     "last-modification", (json_int_t)info->last_modification, "tasks", "total",
                     (int)info->tasks_total, "created", 0, "scheduled", (int)info->tasks_scheduled,
                     "deploying", 0, "running", (int)info->tasks_running, "finished",
                     (int)info->tasks_finished, "canceling", 0, "canceled", (int)canceled, "failed",
                     0, "reconciling", 0, "initializing", 0);
}

static enum MHD_Result
rest_jobs_overview(struct rest_server *rs, struct MHD_Connection *c)
{
    Cluster__Ack req = CLUSTER__ACK__INIT;
    Cluster__JobsOverview *o;
    enum MHD_Result ret;
    struct rpc_future *f;
    json_t *arr;

    f = rest_ask(c, dispatcher_request_jobs(rs->dispatcher, &req, REST_ASK_MS), &ret);
    if (f == NULL)
        return ret;
    o = rpc_future_value(f);
    arr = json_array();
    for (size_t i = 0; i < o->n_jobs; i++)
        json_array_append_new(arr, rest_job_json(o->jobs[i]));
    rpc_future_unref(f);
    return rest_send(c, MHD_HTTP_OK, json_pack("{s:o}", "jobs", arr));
}

static enum MHD_Result
rest_job(struct rest_server *rs, struct MHD_Connection *c, const char *idtext)
{
    Cluster__JobId req = CLUSTER__JOB_ID__INIT;
    Cluster__JobInfo *info;
    spate_error err = { 0 };
    enum MHD_Result ret;
    struct rpc_future *f;
    spate_id id;
    json_t *j;

    if (id_parse(idtext, &id, &err) != 0)
        return rest_error(c, MHD_HTTP_BAD_REQUEST, "Bad request: %s", err.message);
    req.job_id = gw_id_bytes(&id);
    f = rest_ask(c, dispatcher_request_job(rs->dispatcher, &req, REST_ASK_MS), &ret);
    if (f == NULL)
        return ret;
    info = rpc_future_value(f);
    j = rest_job_json(info);
    json_object_set_new(j, "isStoppable", json_false());
    json_object_set_new(j, "maxParallelism", json_integer(-1));
    json_object_set_new(j, "now", json_integer(clock_wall_ms()));
    json_object_set_new(j, "vertices", json_array());
    json_object_set_new(j, "status-counts", json_deep_copy(json_object_get(j, "tasks")));
    if (info->failure != NULL && info->failure[0] != '\0')
        json_object_set_new(j, "failure", json_string(info->failure));
    rpc_future_unref(f);
    return rest_send(c, MHD_HTTP_OK, j);
}

static enum MHD_Result
rest_shutdown(struct rest_server *rs, struct MHD_Connection *c)
{
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

static enum MHD_Result
rest_route(void *cls, struct MHD_Connection *c, const char *url, const char *method,
           const char *version, const char *upload_data, size_t *upload_size, void **con_cls)
{
    struct rest_server *rs = cls;
    const char *path = url;
    bool get = strcmp(method, MHD_HTTP_METHOD_GET) == 0;
    bool del = strcmp(method, MHD_HTTP_METHOD_DELETE) == 0;
    char seg[128];

    UNUSED(version);
    UNUSED(upload_data);
    if (*con_cls == NULL) {
        /* First call: headers only; answer once the body (if any) is read. */
        *con_cls = rs;
        atomic_fetch_add(&rs->inflight, 1);
        return MHD_YES;
    }
    if (*upload_size > 0) {
        *upload_size = 0; /* no handler takes a body yet */
        return MHD_YES;
    }
    if (strncmp(path, "/v1/", 4) == 0)
        path += 3;
    if (strcmp(path, "/overview") == 0 && get)
        return rest_overview(rs, c);
    if (strcmp(path, "/config") == 0 && get)
        return rest_config(rs, c);
    if (strcmp(path, "/taskmanagers") == 0 && get)
        return rest_taskmanagers(rs, c, NULL);
    if (strcmp(path, "/jobs/overview") == 0 && get)
        return rest_jobs_overview(rs, c);
    if (strcmp(path, "/cluster") == 0 && del)
        return rest_shutdown(rs, c);
    if (sscanf(path, "/taskmanagers/%127[^/]", seg) == 1 &&
        strlen(path) == strlen("/taskmanagers/") + strlen(seg) && get)
        return rest_taskmanagers(rs, c, seg);
    if (sscanf(path, "/jobs/%127[^/]", seg) == 1 &&
        strlen(path) == strlen("/jobs/") + strlen(seg) && get)
        return rest_job(rs, c, seg);
    if (strcmp(path, "/overview") == 0 || strcmp(path, "/config") == 0 ||
        strcmp(path, "/taskmanagers") == 0 || strcmp(path, "/jobs/overview") == 0 ||
        strcmp(path, "/cluster") == 0)
        return rest_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "Method %s is not allowed for %s.",
                          method, url);
    return rest_error(c, MHD_HTTP_NOT_FOUND, "Not found: %s", url);
}

static void
rest_completed(void *cls, struct MHD_Connection *c, void **con_cls,
               enum MHD_RequestTerminationCode toe)
{
    struct rest_server *rs = cls;

    UNUSED(c);
    UNUSED(toe);
    if (*con_cls != NULL) {
        atomic_fetch_sub(&rs->inflight, 1);
        *con_cls = NULL;
    }
}

static void rest_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

static void
rest_log(void *cls, const char *fmt, va_list ap)
{
    char msg[512];

    UNUSED(cls);
    vsnprintf(msg, sizeof msg, fmt, ap);
    msg[strcspn(msg, "\n")] = '\0';
    SPATE_LOG_WARN(REST_LOG, "%s", msg);
}

int
rest_server_start(const struct rest_server_options *o, struct rest_server **out, spate_error *err)
{
    struct rest_server *rs = xcalloc(1, sizeof *rs);
    struct sockaddr_in sa = { .sin_family = AF_INET };
    const union MHD_DaemonInfo *info;
    char addr[300];
    int lo, hi, rc;

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
    snprintf(addr, sizeof addr, "%s/%s", rpc_service_address(o->svc), RPC_ENDPOINT_DISPATCHER);
    rpc_gateway_new(o->svc, addr, NULL, &rs->dispatcher, NULL);
    snprintf(addr, sizeof addr, "%s/%s", rpc_service_address(o->svc),
             RPC_ENDPOINT_RESOURCE_MANAGER);
    rpc_gateway_new(o->svc, addr, NULL, &rs->rm, NULL);
    for (int port = lo; port <= hi && rs->daemon == NULL; port++) {
        sa.sin_port = htons((uint16_t)port);
        rs->daemon = MHD_start_daemon(
            MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG, (uint16_t)port,
            NULL, NULL, rest_route, rs, MHD_OPTION_EXTERNAL_LOGGER, rest_log, NULL,
            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_NOTIFY_COMPLETED,
            rest_completed, rs, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_END);
    }
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
    rpc_gateway_free(rs->dispatcher);
    rpc_gateway_free(rs->rm);
    free(rs);
    return rc;
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
    rpc_gateway_free(rs->dispatcher);
    rpc_gateway_free(rs->rm);
    free(rs);
}
