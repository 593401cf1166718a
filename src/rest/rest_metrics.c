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

#define REST_MAX_SEGMENTS 10

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

/* The components to aggregate, chosen by a comma-separated list of ids
 * in query parameter `param` (none: all); SPATE_EINVAL for a bad id. */
static int
rest_chosen(const char *param, const spate_id *id, bool *chosen, spate_error *err)
{
    char word[80];

    *chosen = param == NULL || *param == '\0';
    for (const char *p = param; p != NULL && *p != '\0';) {
        size_t n = strcspn(p, ",");
        spate_id want;

        snprintf(word, sizeof word, "%.*s", (int)MIN(n, sizeof word - 1), p);
        if (id_parse(word, &want, err) != 0)
            return SPATE_EINVAL;
        *chosen |= id_equal(&want, id);
        p += n + (p[n] == ',');
    }
    return 0;
}

/* GET /taskmanagers/metrics (AggregatingTaskManagersMetricsHandler):
 * ?get=, ?agg=, ?taskmanagers=id,id. */
static enum MHD_Result
rest_taskmanagers_metrics(struct rest_server *rs, struct MHD_Connection *c)
{
    const struct metric_store *store = metric_fetcher_acquire(rs->metrics, NULL);
    size_t n = metric_store_taskmanager_count(store), k = 0;
    const struct metric_component **cs = xcalloc(n + 1, sizeof *cs);
    spate_error err = { 0 };
    json_t *out = NULL;
    unsigned aggs;

    if (metric_parse_aggregations(rest_query(c, "agg"), &aggs, &err) == 0) {
        for (size_t i = 0; i < n && err.code == 0; i++) {
            spate_id id;
            const struct metric_component *m = metric_store_taskmanager_at(store, i, &id);
            bool chosen;

            if (rest_chosen(rest_query(c, "taskmanagers"), &id, &chosen, &err) == 0 && chosen)
                cs[k++] = m;
        }
    }
    if (err.code == 0)
        out = metric_json_aggregate(cs, k, rest_query(c, "get"), aggs);
    metric_fetcher_release(rs->metrics);
    free(cs);
    if (out == NULL)
        return rest_error(c, MHD_HTTP_BAD_REQUEST, "Bad request: %s", err.message);
    return rest_send(c, MHD_HTTP_OK, out);
}

/* The jobs' metric groups of the JobManager's registry ("job.<id>"), as
 * components; ids[i] is component i's job. */
static size_t
rest_job_components(struct rest_server *rs, struct metric_component **out, spate_id **ids)
{
    struct metric_sample *s = NULL;
    size_t n = rs->registry != NULL ? metric_registry_snapshot(rs->registry, &s) : 0, k = 0;

    *out = xcalloc(n + 1, sizeof **out);
    *ids = xcalloc(n + 1, sizeof **ids);
    for (size_t i = 0; i < n; i++) {
        char value[64];
        spate_id id;
        size_t j;

        if (!(s[i].audience & METRIC_FOR_SCOPE) || strncmp(s[i].scope, "job.", 4) != 0 ||
            id_parse(s[i].scope + 4, &id, NULL) != 0)
            continue;
        for (j = 0; j < k && !id_equal(&(*ids)[j], &id); j++)
            ;
        if (j == k)
            (*ids)[k++] = id;
        metric_sample_format(&s[i], value, sizeof value);
        metric_component_put(&(*out)[j], s[i].name, value);
    }
    metric_samples_free(s, n);
    return k;
}

/* GET /jobs/:jobid/metrics (JobMetricsHandler) and /jobs/metrics
 * (AggregatingJobsMetricsHandler: ?get=, ?agg=, ?jobs=id,id). */
static enum MHD_Result
rest_jobs_metrics(struct rest_server *rs, struct MHD_Connection *c, const char *jobtext)
{
    struct metric_component *cs;
    const struct metric_component **chosen;
    spate_error err = { 0 };
    spate_id *ids, job;
    json_t *out = NULL;
    size_t n, k = 0;
    unsigned aggs;

    if (jobtext != NULL && id_parse(jobtext, &job, &err) != 0)
        return rest_error(c, MHD_HTTP_BAD_REQUEST, "Bad request: %s", err.message);
    n = rest_job_components(rs, &cs, &ids);
    chosen = xcalloc(n + 1, sizeof *chosen);
    if (jobtext != NULL) {
        for (size_t i = 0; i < n; i++)
            if (id_equal(&ids[i], &job))
                chosen[k++] = &cs[i];
        out = metric_json_values(k > 0 ? chosen[0] : NULL, rest_query(c, "get"));
    } else if (metric_parse_aggregations(rest_query(c, "agg"), &aggs, &err) == 0) {
        for (size_t i = 0; i < n && err.code == 0; i++) {
            bool pick;

            if (rest_chosen(rest_query(c, "jobs"), &ids[i], &pick, &err) == 0 && pick)
                chosen[k++] = &cs[i];
        }
        if (err.code == 0)
            out = metric_json_aggregate(chosen, k, rest_query(c, "get"), aggs);
    }
    for (size_t i = 0; i < n; i++)
        metric_component_release(&cs[i]);
    free(cs);
    free(ids);
    free(chosen);
    if (out == NULL)
        return rest_error(c, MHD_HTTP_BAD_REQUEST, "Bad request: %s", err.message);
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

    UNUSED(path);
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
        return rest_vertex_view(rs, c, &job, &vertex, parts + 3, n - 3);
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
    if (n == 2 && strcmp(parts[1], "metrics") == 0 &&
        (strcmp(parts[0], "taskmanagers") == 0 || strcmp(parts[0], "jobs") == 0)) {
        *ret = !get ? rest_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "Method %s is not allowed for %s.",
                                 method, path)
               : parts[0][0] == 't' ? rest_taskmanagers_metrics(rs, c)
                                    : rest_jobs_metrics(rs, c, NULL);
        return true;
    }
    if (n == 3 && strcmp(parts[0], "jobs") == 0 && strcmp(parts[2], "metrics") == 0) {
        *ret = get ? rest_jobs_metrics(rs, c, parts[1])
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
