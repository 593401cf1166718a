/* The REST API's metric routes (Flink's metric handlers): the JobManager's,
 * a TaskManager's, a vertex's (by subtask, aggregated over subtasks, one
 * subtask's), its watermarks and its back pressure, from the metric
 * fetcher's store; and the routing of /jobs/:jobid/vertices/... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/util.h"
#include "metrics/process_metrics.h"
#include "rest/rest_int.h"
#include "rpc/gateways.h"

#define REST_MAX_SEGMENTS 8

/* GET /jobmanager/metrics: Flink's JobManager gauges, from the Dispatcher's
 * overview, and the process's figures. */
static enum MHD_Result
rest_jobmanager_metrics(struct rest_server *rs, struct MHD_Connection *c)
{
    Cluster__Ack req = CLUSTER__ACK__INIT;
    struct metric_component jm = { 0 };
    const Cluster__ClusterOverview *o;
    struct process_metrics pm;
    enum MHD_Result ret;
    struct rpc_future *f;
    json_t *out;

    f = rest_ask(c, dispatcher_request_cluster_overview(rs->dispatcher, &req, REST_ASK_MS), &ret);
    if (f == NULL)
        return ret;
    o = rpc_future_value(f);
    metric_component_put_int(&jm, "numRegisteredTaskManagers", o->taskmanagers);
    metric_component_put_int(&jm, "numRunningJobs", o->jobs_running);
    metric_component_put_int(&jm, "taskSlotsAvailable", o->slots_free);
    metric_component_put_int(&jm, "taskSlotsTotal", o->slots_total);
    if (process_metrics_read(&pm) == 0) {
        metric_component_put_int(&jm, "Status.Process.CPU.Time", pm.cpu_time_ms);
        metric_component_put_int(&jm, "Status.Process.Memory.RSS", pm.rss_bytes);
        metric_component_put_int(&jm, "Status.Process.Threads.Count", pm.threads);
    }
    rpc_future_unref(f);
    out = metric_json_values(&jm, rest_query(c, "get"));
    metric_component_release(&jm);
    return rest_send(c, MHD_HTTP_OK, out);
}

/* GET /taskmanagers/:id/metrics */
static enum MHD_Result
rest_taskmanager_metrics(struct rest_server *rs, struct MHD_Connection *c, const char *idtext)
{
    const struct metric_store *store;
    spate_id id;
    json_t *out;

    if (id_parse(idtext, &id, NULL) != 0)
        return rest_error(c, MHD_HTTP_NOT_FOUND, "Could not find TaskManager %s.", idtext);
    store = metric_fetcher_acquire(rs->metrics, NULL);
    out = metric_json_values(metric_store_taskmanager(store, &id), rest_query(c, "get"));
    metric_fetcher_release(rs->metrics);
    return rest_send(c, MHD_HTTP_OK, out);
}

/* The vertex's parallelism from the Dispatcher; false after an error answer
 * went into *ret (404 for an unknown job or vertex). */
static bool
rest_vertex_parallelism(struct rest_server *rs, struct MHD_Connection *c, const spate_id *job,
                        const spate_id *vertex, int *parallelism, enum MHD_Result *ret)
{
    Cluster__JobVertexQuery q = CLUSTER__JOB_VERTEX_QUERY__INIT;
    const Cluster__JobVertices *v;
    struct rpc_future *f;

    q.job_id = gw_id_bytes(job);
    q.vertex_id = gw_id_bytes(vertex);
    f = rest_ask(c, dispatcher_request_job_vertices(rs->dispatcher, &q, REST_ASK_MS), ret);
    if (f == NULL)
        return false;
    v = rpc_future_value(f);
    *parallelism = v->n_vertices == 1 ? v->vertices[0]->parallelism : 0;
    rpc_future_unref(f);
    return true;
}

/* GET /jobs/:jobid/vertices/:vertexid/subtasks/metrics[?get=&agg=&subtasks=]:
 * the answer, or NULL after a 400 went into *ret. Under the fetcher's lock. */
static json_t *
rest_subtasks_metrics(const struct metric_store *store, struct MHD_Connection *c,
                      const spate_id *job, const spate_id *vertex, enum MHD_Result *ret)
{
    int limit = metric_store_subtask_limit(store, job, vertex);
    const struct metric_component **cs = xcalloc((size_t)limit + 1, sizeof *cs);
    bool *selected = xcalloc((size_t)limit + 1, sizeof *selected);
    spate_error err = { 0 };
    json_t *out = NULL;
    unsigned aggs;
    size_t n = 0;

    if (metric_parse_aggregations(rest_query(c, "agg"), &aggs, &err) != 0 ||
        metric_parse_subtasks(rest_query(c, "subtasks"), selected, limit, &err) != 0) {
        *ret = rest_error(c, MHD_HTTP_BAD_REQUEST, "Bad request: %s", err.message);
        goto out;
    }
    for (int i = 0; i < limit; i++)
        if (selected[i])
            cs[n++] = metric_store_subtask(store, job, vertex, i);
    out = metric_json_aggregate(cs, n, rest_query(c, "get"), aggs);
out:
    free(cs);
    free(selected);
    return out;
}

enum vertex_view { VIEW_METRICS, VIEW_SUBTASKS, VIEW_SUBTASK, VIEW_WATERMARKS, VIEW_BACKPRESSURE };

/* The vertex routes of path: parts are its segments after "jobs". */
static enum MHD_Result
rest_vertex_route(struct rest_server *rs, struct MHD_Connection *c, const char *path, char **parts,
                  int n)
{
    const struct metric_store *store;
    struct metric_component vc;
    enum vertex_view view;
    spate_id job, vertex;
    spate_error err = { 0 };
    enum MHD_Result ret = MHD_NO;
    int parallelism = 0;
    int64_t fetched;
    long subtask = 0;
    json_t *out = NULL;

    if (id_parse(parts[0], &job, &err) != 0 || id_parse(parts[2], &vertex, &err) != 0)
        return rest_error(c, MHD_HTTP_BAD_REQUEST, "Bad request: %s", err.message);
    if (n == 3)
        return rest_vertex_details(rs, c, &job, &vertex);
    if (n == 4 && strcmp(parts[3], "metrics") == 0) {
        view = VIEW_METRICS;
    } else if (n == 4 && strcmp(parts[3], "watermarks") == 0) {
        view = VIEW_WATERMARKS;
        if (!rest_vertex_parallelism(rs, c, &job, &vertex, &parallelism, &ret))
            return ret;
    } else if (n == 4 && strcmp(parts[3], "backpressure") == 0) {
        view = VIEW_BACKPRESSURE;
    } else if (n == 5 && strcmp(parts[3], "subtasks") == 0 && strcmp(parts[4], "metrics") == 0) {
        view = VIEW_SUBTASKS;
    } else if (n == 6 && strcmp(parts[3], "subtasks") == 0 && strcmp(parts[5], "metrics") == 0) {
        char *end;

        view = VIEW_SUBTASK;
        subtask = strtol(parts[4], &end, 10);
        if (*end != '\0' || end == parts[4] || subtask < 0 || subtask > 1000000)
            return rest_error(c, MHD_HTTP_BAD_REQUEST,
                              "Bad request: subtask index '%s' is not a non-negative integer",
                              parts[4]);
    } else {
        return rest_error(c, MHD_HTTP_NOT_FOUND, "Not found: %s", path);
    }
    store = metric_fetcher_acquire(rs->metrics, &fetched);
    switch (view) {
    case VIEW_METRICS:
        metric_store_vertex(store, &job, &vertex, &vc);
        out = metric_json_values(&vc, rest_query(c, "get"));
        metric_component_release(&vc);
        break;
    case VIEW_SUBTASKS:
        out = rest_subtasks_metrics(store, c, &job, &vertex, &ret);
        break;
    case VIEW_SUBTASK:
        out = metric_json_values(metric_store_subtask(store, &job, &vertex, (int)subtask),
                                 rest_query(c, "get"));
        break;
    case VIEW_WATERMARKS:
        out = metric_json_watermarks(store, &job, &vertex, parallelism);
        break;
    case VIEW_BACKPRESSURE:
        out = metric_json_backpressure(store, &job, &vertex, fetched);
        break;
    }
    metric_fetcher_release(rs->metrics);
    return out != NULL ? rest_send(c, MHD_HTTP_OK, out) : ret;
}

/* Splits path (after its leading '/') into at most max segments of buf;
 * SPATE_EINVAL when there are more, or an empty one. */
static int
split_path(const char *path, char *buf, size_t cap, char **parts, int max)
{
    int n = 0;

    snprintf(buf, cap, "%s", path[0] == '/' ? path + 1 : path);
    for (char *p = buf; n <= max;) {
        char *slash = strchr(p, '/');

        if (n == max || *p == '/' || *p == '\0')
            return SPATE_EINVAL;
        parts[n++] = p;
        if (slash == NULL)
            return n;
        *slash = '\0';
        p = slash + 1;
    }
    return SPATE_EINVAL;
}

bool
rest_metrics_route(struct rest_server *rs, struct MHD_Connection *c, const char *path,
                   const char *method, enum MHD_Result *ret)
{
    char buf[512], *parts[REST_MAX_SEGMENTS];
    bool get = strcmp(method, MHD_HTTP_METHOD_GET) == 0;
    int n;

    if (strlen(path) >= sizeof buf ||
        (n = split_path(path, buf, sizeof buf, parts, REST_MAX_SEGMENTS)) < 0)
        return false;
    if (n == 2 && strcmp(parts[0], "jobmanager") == 0 && strcmp(parts[1], "metrics") == 0) {
        *ret = get ? rest_jobmanager_metrics(rs, c)
                   : rest_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "Method %s is not allowed for %s.",
                                method, path);
        return true;
    }
    if (n == 3 && strcmp(parts[0], "taskmanagers") == 0 && strcmp(parts[2], "metrics") == 0) {
        *ret = get ? rest_taskmanager_metrics(rs, c, parts[1])
                   : rest_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "Method %s is not allowed for %s.",
                                method, path);
        return true;
    }
    if (n >= 4 && strcmp(parts[0], "jobs") == 0 && strcmp(parts[2], "vertices") == 0) {
        *ret = get ? rest_vertex_route(rs, c, path, parts + 1, n - 1)
                   : rest_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "Method %s is not allowed for %s.",
                                method, path);
        return true;
    }
    return false;
}
