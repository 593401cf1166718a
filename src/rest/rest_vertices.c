/* A job's vertices in the REST API: GET /jobs/:jobid/vertices/:vertexid
 * (Flink's JobVertexDetailsHandler) and the "vertices" of GET /jobs/:jobid
 * (JobDetailsVertexInfo), from the Dispatcher's request_job_vertices; the
 * I/O of running subtasks from the metric fetcher, of ended ones from what
 * they reported (Flink's MutableIOMetrics). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/execution_state.h"
#include "rest/rest_int.h"
#include "rpc/gateways.h"

/* What status-duration reports, in Flink's order. */
static const enum execution_state duration_states[] = { EXEC_CREATED, EXEC_SCHEDULED,
                                                        EXEC_INITIALIZING, EXEC_DEPLOYING,
                                                        EXEC_RUNNING };
#define NDURATIONS 5

static bool
state_is_terminal(const char *name)
{
    int k = execution_state_parse(name);

    return k >= 0 && execution_state_is_terminal((enum execution_state)k);
}

/* A subtask's state timestamps by execution state (0: never entered). */
static void
subtask_timestamps(const Cluster__SubtaskInfo *s, int64_t ts[EXEC_STATE_COUNT])
{
    memset(ts, 0, EXEC_STATE_COUNT * sizeof *ts);
    for (size_t i = 0; i < s->n_timestamps; i++) {
        int k = execution_state_parse(s->timestamps[i]->state);

        if (k >= 0)
            ts[k] = s->timestamps[i]->time;
    }
}

/* Flink's IOMetricsInfo, with its "-complete" flags. */
struct io_info {
    int64_t read_bytes, write_bytes, read_records, write_records;
    bool read_bytes_complete, write_bytes_complete, read_records_complete, write_records_complete;
    int64_t backpressured_ms, idle_ms;
    double busy_ms;
};

static void
io_init(struct io_info *io)
{
    memset(io, 0, sizeof *io);
    io->read_bytes_complete = io->write_bytes_complete = true;
    io->read_records_complete = io->write_records_complete = true;
}

/* Adds a metric of a running subtask; false when it is missing. */
static bool
io_add_metric(const struct metric_component *c, const char *name, int64_t *sum)
{
    const char *v = metric_component_get(c, name);

    if (v == NULL)
        return false;
    *sum += strtoll(v, NULL, 10);
    return true;
}

/* MutableIOMetrics.addIOMetrics: an ended subtask's reported totals, a
 * running one's current metrics. */
static void
io_add_subtask(struct io_info *io, const Cluster__SubtaskInfo *s, const struct metric_store *store,
               const spate_id *job, const spate_id *vertex)
{
    const struct metric_component *c;
    int64_t busy = 0;

    if (state_is_terminal(s->state)) {
        if (s->io != NULL) {
            io->read_bytes += (int64_t)s->io->bytes_in;
            io->write_bytes += (int64_t)s->io->bytes_out;
            io->read_records += (int64_t)s->io->records_in;
            io->write_records += (int64_t)s->io->records_out;
            io->backpressured_ms += (int64_t)s->io->back_pressured_ms;
            io->idle_ms += (int64_t)s->io->idle_ms;
            io->busy_ms += (double)s->io->busy_ms;
        }
        return;
    }
    c = store != NULL ? metric_store_subtask(store, job, vertex, s->subtask) : NULL;
    io->read_bytes_complete &= io_add_metric(c, "numBytesIn", &io->read_bytes);
    io->write_bytes_complete &= io_add_metric(c, "numBytesOut", &io->write_bytes);
    io->read_records_complete &= io_add_metric(c, "numRecordsIn", &io->read_records);
    io->write_records_complete &= io_add_metric(c, "numRecordsOut", &io->write_records);
    io_add_metric(c, "accumulatedBackPressuredTimeMs", &io->backpressured_ms);
    io_add_metric(c, "accumulatedIdleTimeMs", &io->idle_ms);
    io_add_metric(c, "accumulatedBusyTimeMs", &busy);
    io->busy_ms += (double)busy;
}

static json_t *
io_json(const struct io_info *io)
{
    return json_pack("{s:I, s:b, s:I, s:b, s:I, s:b, s:I, s:b, s:I, s:I, s:f}", "read-bytes",
                     (json_int_t)io->read_bytes, "read-bytes-complete", io->read_bytes_complete,
                     "write-bytes", (json_int_t)io->write_bytes, "write-bytes-complete",
                     io->write_bytes_complete, "read-records", (json_int_t)io->read_records,
                     "read-records-complete", io->read_records_complete, "write-records",
                     (json_int_t)io->write_records, "write-records-complete",
                     io->write_records_complete, "accumulated-backpressured-time",
                     (json_int_t)io->backpressured_ms, "accumulated-idle-time",
                     (json_int_t)io->idle_ms, "accumulated-busy-time", io->busy_ms);
}

/* StatusDurationUtils: ms spent in each of duration_states; -1 for a state
 * never entered or left without a record of when. */
static void
status_durations(const Cluster__SubtaskInfo *s, int64_t now, int64_t out[NDURATIONS])
{
    int64_t ts[EXEC_STATE_COUNT];
    int current = execution_state_parse(s->state);

    subtask_timestamps(s, ts);
    for (int d = 0; d < NDURATIONS; d++) {
        int k = (int)duration_states[d];
        int64_t end = 0;

        /* It ended when the next state it went to began. */
        if (k == current)
            end = now;
        for (int j = k + 1; end == 0 && j < EXEC_STATE_COUNT; j++)
            end = ts[j];
        out[d] = ts[k] == 0 || end == 0 ? -1 : end - ts[k];
    }
}

/* SubtaskExecutionAttemptDetailsInfo; io gets the subtask's I/O. */
static json_t *
subtask_json(const Cluster__SubtaskInfo *s, const struct metric_store *store, const spate_id *job,
             const spate_id *vertex, int64_t now, struct io_info *io, int64_t durations[NDURATIONS])
{
    int64_t ts[EXEC_STATE_COUNT], start, end;
    int current = execution_state_parse(s->state);
    char endpoint[160], tm[ID_HEX_LEN + 1] = "(unassigned)";
    bool assigned = s->resource_id.len == ID_BYTES;
    json_t *sd = json_object(), *j;
    spate_id rid;

    subtask_timestamps(s, ts);
    start = ts[EXEC_DEPLOYING] > 0 ? ts[EXEC_DEPLOYING] : -1;
    end = state_is_terminal(s->state) && current >= 0 && ts[current] > 0 ? ts[current] : -1;
    io_init(io);
    io_add_subtask(io, s, store, job, vertex);
    status_durations(s, now, durations);
    for (int d = 0; d < NDURATIONS; d++)
        json_object_set_new(sd, execution_state_name(duration_states[d]),
                            json_integer(durations[d]));
    if (assigned && gw_id_get(&s->resource_id, &rid))
        id_format(&rid, tm);
    snprintf(endpoint, sizeof endpoint, "%s:%d", s->host, s->data_port);
    j = json_pack(
        "{s:i, s:s, s:i, s:s, s:s, s:I, s:I, s:I, s:o, s:s, s:o}", "subtask", s->subtask, "status",
        s->state, "attempt", s->attempt, "host", assigned ? s->host : "(unassigned)", "endpoint",
        assigned ? endpoint : "(unassigned)", "start-time", (json_int_t)start, "end-time",
        (json_int_t)end, "duration", (json_int_t)(start > 0 ? (end > 0 ? end : now) - start : -1),
        "metrics", io_json(io), "taskmanager-id", tm, "status-duration", sd);
    return j;
}

/* ---- aggregated (AggregatedTaskDetailsInfo) ---------------------------------------------- */

static int
compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* commons-math's Percentile (its default, legacy estimation) on sorted. */
static double
percentile(const double *sorted, size_t n, double p)
{
    double pos, fpos;
    int k;

    if (n == 0)
        return 0; /* Flink: (long) NaN */
    if (n == 1)
        return sorted[0];
    pos = p * (double)(n + 1) / 100.0;
    fpos = floor(pos);
    k = (int)fpos;
    if (pos < 1)
        return sorted[0];
    if (pos >= (double)n)
        return sorted[n - 1];
    return sorted[k - 1] + (pos - fpos) * (sorted[k] - sorted[k - 1]);
}

/* MetricsStatistics.toMap of n values. */
static json_t *
statistics_json(const int64_t *values, size_t n)
{
    double *sorted = xcalloc(n + 1, sizeof *sorted);
    int64_t min = 0, max = 0, sum = 0;
    json_t *j;

    for (size_t i = 0; i < n; i++) {
        min = i == 0 || values[i] < min ? values[i] : min;
        max = i == 0 || values[i] > max ? values[i] : max;
        sum += values[i];
        sorted[i] = (double)values[i];
    }
    qsort(sorted, n, sizeof *sorted, compare_double);
    j = json_pack(
        "{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "min", (json_int_t)min, "max", (json_int_t)max,
        "avg", (json_int_t)(n > 0 ? sum / (int64_t)n : 0), "sum", (json_int_t)sum, "median",
        (json_int_t)percentile(sorted, n, 50), "p25", (json_int_t)percentile(sorted, n, 25), "p75",
        (json_int_t)percentile(sorted, n, 75), "p95", (json_int_t)percentile(sorted, n, 95));
    free(sorted);
    return j;
}

static json_t *
aggregated_json(const struct io_info *ios, int64_t (*durations)[NDURATIONS], size_t n)
{
    static const char *const names[] = { "read-bytes",
                                         "write-bytes",
                                         "read-records",
                                         "write-records",
                                         "accumulated-backpressured-time",
                                         "accumulated-busy-time",
                                         "accumulated-idle-time" };
    int64_t *values = xcalloc(n + 1, sizeof *values);
    json_t *metrics = json_object(), *sd = json_object();

    for (size_t m = 0; m < sizeof names / sizeof names[0]; m++) {
        for (size_t i = 0; i < n; i++) {
            const struct io_info *io = &ios[i];
            int64_t v[] = { io->read_bytes,    io->write_bytes,      io->read_records,
                            io->write_records, io->backpressured_ms, (int64_t)io->busy_ms,
                            io->idle_ms };

            values[i] = v[m];
        }
        json_object_set_new(metrics, names[m], statistics_json(values, n));
    }
    for (int d = 0; d < NDURATIONS; d++) {
        for (size_t i = 0; i < n; i++)
            values[i] = durations[i][d];
        json_object_set_new(sd, execution_state_name(duration_states[d]),
                            statistics_json(values, n));
    }
    free(values);
    return json_pack("{s:o, s:o}", "metrics", metrics, "status-duration", sd);
}

/* ---- handlers ------------------------------------------------------------------------------ */

/* Asks the Dispatcher for one vertex of a job; NULL after answering (404
 * for an unknown job or vertex) into *ret. */
static struct rpc_future *
ask_vertex(struct rest_server *rs, struct MHD_Connection *c, const spate_id *job,
           const spate_id *vertex, const Cluster__JobVertexInfo **v, enum MHD_Result *ret)
{
    Cluster__JobVertexQuery q = CLUSTER__JOB_VERTEX_QUERY__INIT;
    const Cluster__JobVertices *vs;
    struct rpc_future *f;

    q.job_id = gw_id_bytes(job);
    q.vertex_id = gw_id_bytes(vertex);
    f = rest_ask(c, dispatcher_request_job_vertices(rs->dispatcher, &q, REST_ASK_MS), ret);
    if (f == NULL)
        return NULL;
    vs = rpc_future_value(f);
    if (vs->n_vertices != 1) {
        rpc_future_unref(f);
        *ret = rest_error(c, MHD_HTTP_NOT_FOUND, "vertex %s of job %s not found", id_str(vertex).s,
                          id_str(job).s);
        return NULL;
    }
    *v = vs->vertices[0];
    return f;
}

enum MHD_Result
rest_vertex_details(struct rest_server *rs, struct MHD_Connection *c, const spate_id *job,
                    const spate_id *vertex)
{
    const struct metric_store *store;
    const Cluster__JobVertexInfo *v;
    int64_t now = clock_wall_ms();
    int64_t(*durations)[NDURATIONS];
    struct io_info *ios;
    enum MHD_Result ret;
    struct rpc_future *f;
    json_t *subtasks, *j;

    if ((f = ask_vertex(rs, c, job, vertex, &v, &ret)) == NULL)
        return ret;
    store = metric_fetcher_acquire(rs->metrics, NULL);
    ios = xcalloc(v->n_subtasks + 1, sizeof *ios);
    durations = xcalloc(v->n_subtasks + 1, sizeof *durations);
    subtasks = json_array();
    for (size_t i = 0; i < v->n_subtasks; i++)
        json_array_append_new(
            subtasks, subtask_json(v->subtasks[i], store, job, vertex, now, &ios[i], durations[i]));
    metric_fetcher_release(rs->metrics);
    j = json_pack("{s:s, s:s, s:i, s:i, s:I, s:o, s:o}", "id", id_str(vertex).s, "name",
                  v->name ? v->name : "", "maxParallelism", v->max_parallelism, "parallelism",
                  v->parallelism, "now", (json_int_t)now, "subtasks", subtasks, "aggregated",
                  aggregated_json(ios, durations, v->n_subtasks));
    free(ios);
    free(durations);
    rpc_future_unref(f);
    return rest_send(c, MHD_HTTP_OK, j);
}

/* ExecutionJobVertex.getAggregateJobVertexState. */
static const char *
vertex_state(const int *per_state, int parallelism)
{
    enum execution_state st = EXEC_CREATED;

    if (per_state[EXEC_FAILED] > 0)
        st = EXEC_FAILED;
    else if (per_state[EXEC_CANCELING] > 0)
        st = EXEC_CANCELING;
    else if (per_state[EXEC_CANCELED] > 0)
        st = EXEC_CANCELED;
    else if (per_state[EXEC_INITIALIZING] > 0)
        st = EXEC_INITIALIZING;
    else if (per_state[EXEC_RUNNING] > 0)
        st = EXEC_RUNNING;
    else if (per_state[EXEC_FINISHED] > 0)
        st = per_state[EXEC_FINISHED] == parallelism ? EXEC_FINISHED : EXEC_RUNNING;
    return execution_state_name(st);
}

/* JobDetailsVertexInfo of one vertex (JobDetailsHandler). */
static json_t *
job_vertex_json(const Cluster__JobVertexInfo *v, const struct metric_store *store,
                const spate_id *job, int64_t now)
{
    int per_state[EXEC_STATE_COUNT] = { 0 };
    int64_t start = INT64_MAX, end = 0, duration;
    bool all_ended = true;
    struct io_info io, one;
    json_t *tasks = json_object();
    spate_id vid;

    gw_id_get(&v->vertex_id, &vid);
    io_init(&io);
    for (size_t i = 0; i < v->n_subtasks; i++) {
        const Cluster__SubtaskInfo *s = v->subtasks[i];
        int k = execution_state_parse(s->state);
        int64_t ts[EXEC_STATE_COUNT];

        subtask_timestamps(s, ts);
        if (k >= 0) {
            per_state[k]++;
            end = ts[k] > end ? ts[k] : end;
        }
        if (ts[EXEC_DEPLOYING] > 0 && ts[EXEC_DEPLOYING] < start)
            start = ts[EXEC_DEPLOYING];
        all_ended &= state_is_terminal(s->state);
        io_init(&one);
        io_add_subtask(&one, s, store, job, &vid);
        io.read_bytes += one.read_bytes;
        io.write_bytes += one.write_bytes;
        io.read_records += one.read_records;
        io.write_records += one.write_records;
        io.read_bytes_complete &= one.read_bytes_complete;
        io.write_bytes_complete &= one.write_bytes_complete;
        io.read_records_complete &= one.read_records_complete;
        io.write_records_complete &= one.write_records_complete;
        io.backpressured_ms += one.backpressured_ms;
        io.idle_ms += one.idle_ms;
        io.busy_ms += one.busy_ms;
    }
    if (start == INT64_MAX) {
        start = end = duration = -1;
    } else if (all_ended) {
        duration = end - start;
    } else {
        end = -1;
        duration = now - start;
    }
    for (int k = 0; k < EXEC_STATE_COUNT; k++)
        json_object_set_new(tasks, execution_state_name((enum execution_state)k),
                            json_integer(per_state[k]));
    /* Flink's ExecutionState has RECONCILING too; spate never enters it. */
    json_object_set_new(tasks, "RECONCILING", json_integer(0));
    return json_pack("{s:s, s:s, s:i, s:i, s:s, s:I, s:I, s:I, s:o, s:o}", "id", id_str(&vid).s,
                     "name", v->name ? v->name : "", "maxParallelism", v->max_parallelism,
                     "parallelism", v->parallelism, "status",
                     vertex_state(per_state, v->parallelism), "start-time", (json_int_t)start,
                     "end-time", (json_int_t)end, "duration", (json_int_t)duration, "tasks", tasks,
                     "metrics", io_json(&io));
}

json_t *
rest_job_vertices(struct rest_server *rs, const spate_id *job)
{
    Cluster__JobVertexQuery q = CLUSTER__JOB_VERTEX_QUERY__INIT;
    const Cluster__JobVertices *vs;
    const struct metric_store *store = NULL;
    int64_t now = clock_wall_ms();
    spate_error err = { 0 };
    struct rpc_future *f;
    json_t *out = json_array();

    q.job_id = gw_id_bytes(job);
    f = dispatcher_request_job_vertices(rs->dispatcher, &q, REST_ASK_MS);
    if (rpc_future_wait(f, REST_ASK_MS + 1000, &err) != 0) {
        rpc_future_unref(f);
        return out;
    }
    vs = rpc_future_value(f);
    for (size_t i = 0; i < vs->n_vertices; i++) {
        bool running = false;

        for (size_t k = 0; k < vs->vertices[i]->n_subtasks && !running; k++)
            running = !state_is_terminal(vs->vertices[i]->subtasks[k]->state);
        /* Only a job with running subtasks needs the TaskManagers' metrics. */
        if (running && store == NULL)
            store = metric_fetcher_acquire(rs->metrics, NULL);
        json_array_append_new(out, job_vertex_json(vs->vertices[i], store, job, now));
    }
    if (store != NULL)
        metric_fetcher_release(rs->metrics);
    rpc_future_unref(f);
    return out;
}

/* ---- a vertex's subtasks, times, TaskManagers and accumulators -------------------------- */

/* UserAccumulator rows: spate's accumulators are the job's, summed over its
 * tasks (/jobs/:jobid/accumulators); a vertex's and a subtask's are empty. */
static json_t *
user_accumulators(void)
{
    return json_array();
}

/* The subtask s of v by its index (NULL: none). */
static const Cluster__SubtaskInfo *
find_subtask(const Cluster__JobVertexInfo *v, long index)
{
    for (size_t i = 0; i < v->n_subtasks; i++)
        if (v->subtasks[i]->subtask == index)
            return v->subtasks[i];
    return NULL;
}

/* SubtasksTimesInfo: each subtask's state timestamps. */
static json_t *
subtask_times_json(const Cluster__JobVertexInfo *v, const spate_id *vertex, int64_t now)
{
    json_t *subtasks = json_array();

    for (size_t i = 0; i < v->n_subtasks; i++) {
        const Cluster__SubtaskInfo *s = v->subtasks[i];
        int64_t ts[EXEC_STATE_COUNT], first = 0, last = 0;
        json_t *times = json_object();

        subtask_timestamps(s, ts);
        for (int k = 0; k < EXEC_STATE_COUNT; k++) {
            if (ts[k] <= 0)
                continue;
            json_object_set_new(times, execution_state_name((enum execution_state)k),
                                json_integer(ts[k]));
            first = first == 0 || ts[k] < first ? ts[k] : first;
            last = ts[k] > last ? ts[k] : last;
        }
        json_array_append_new(
            subtasks,
            json_pack(
                "{s:i, s:s, s:I, s:o}", "subtask", s->subtask, "host",
                s->resource_id.len == ID_BYTES ? s->host : "(unassigned)", "duration",
                (json_int_t)(first > 0 ? (state_is_terminal(s->state) ? last : now) - first : -1),
                "timestamps", times));
    }
    return json_pack("{s:s, s:s, s:I, s:o}", "id", id_str(vertex).s, "name", v->name ? v->name : "",
                     "now", (json_int_t)now, "subtasks", subtasks);
}

/* JobVertexTaskManagersInfo: the vertex's subtasks grouped by TaskManager. */
static json_t *
vertex_taskmanagers_json(const Cluster__JobVertexInfo *v, const struct metric_store *store,
                         const spate_id *job, const spate_id *vertex, int64_t now)
{
    json_t *tms = json_array();
    bool *done = xcalloc(v->n_subtasks + 1, sizeof *done);

    for (size_t i = 0; i < v->n_subtasks; i++) {
        const Cluster__SubtaskInfo *first = v->subtasks[i];
        int per_state[EXEC_STATE_COUNT] = { 0 }, n = 0;
        int64_t start = INT64_MAX, end = 0, (*durations)[NDURATIONS];
        struct io_info io, *ios;
        bool all_ended = true;
        json_t *counts = json_object();
        char tm[ID_HEX_LEN + 1] = "(unassigned)";
        spate_id rid;

        if (done[i])
            continue;
        ios = xcalloc(v->n_subtasks + 1, sizeof *ios);
        durations = xcalloc(v->n_subtasks + 1, sizeof *durations);
        io_init(&io);
        for (size_t k = i; k < v->n_subtasks; k++) {
            const Cluster__SubtaskInfo *s = v->subtasks[k];
            int64_t ts[EXEC_STATE_COUNT];
            int st = execution_state_parse(s->state);

            if (done[k] || s->resource_id.len != first->resource_id.len ||
                memcmp(s->resource_id.data, first->resource_id.data, s->resource_id.len) != 0)
                continue;
            done[k] = true;
            subtask_timestamps(s, ts);
            if (st >= 0) {
                per_state[st]++;
                end = ts[st] > end ? ts[st] : end;
            }
            if (ts[EXEC_DEPLOYING] > 0 && ts[EXEC_DEPLOYING] < start)
                start = ts[EXEC_DEPLOYING];
            all_ended &= state_is_terminal(s->state);
            io_add_subtask(&ios[n], s, store, job, vertex);
            status_durations(s, now, durations[n]);
            io.read_bytes += ios[n].read_bytes;
            io.write_bytes += ios[n].write_bytes;
            io.read_records += ios[n].read_records;
            io.write_records += ios[n].write_records;
            io.backpressured_ms += ios[n].backpressured_ms;
            io.idle_ms += ios[n].idle_ms;
            io.busy_ms += ios[n].busy_ms;
            n++;
        }
        for (int k = 0; k < EXEC_STATE_COUNT; k++)
            json_object_set_new(counts, execution_state_name((enum execution_state)k),
                                json_integer(per_state[k]));
        if (first->resource_id.len == ID_BYTES && gw_id_get(&first->resource_id, &rid))
            id_format(&rid, tm);
        if (start == INT64_MAX)
            start = -1;
        json_array_append_new(
            tms, json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:o, s:o, s:o}", "endpoint",
                           first->host, "host", first->host, "taskmanager-id", tm, "status",
                           vertex_state(per_state, n), "start-time", (json_int_t)start, "end-time",
                           (json_int_t)(all_ended ? end : -1), "duration",
                           (json_int_t)(start > 0 ? (all_ended ? end : now) - start : -1),
                           "metrics", io_json(&io), "status-counts", counts, "aggregated",
                           aggregated_json(ios, durations, (size_t)n)));
        free(ios);
        free(durations);
    }
    free(done);
    return json_pack("{s:s, s:s, s:I, s:o}", "id", id_str(vertex).s, "name", v->name ? v->name : "",
                     "now", (json_int_t)now, "taskmanagers", tms);
}

/* ---- flame graphs (Flink's VertexFlameGraph) ------------------------------------------------ */

#define FLAME_SAMPLES  50 /* per thread (Flink: rest.flamegraph.num-samples, 100) */
#define FLAME_DELAY_MS 10 /* between samples (Flink: 50 ms) */

/* Adds a sample's frames (outermost first) under node. */
static void
flame_add(json_t *node, char *const *frames, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        json_t *children = json_object_get(node, "children"), *child = NULL, *c;
        size_t k;

        json_array_foreach(children, k, c)
        {
            if (strcmp(json_string_value(json_object_get(c, "name")), frames[i]) == 0) {
                child = c;
                break;
            }
        }
        if (child == NULL) {
            child = json_pack("{s:s, s:I, s:[]}", "name", frames[i], "value", (json_int_t)0,
                              "children");
            json_array_append_new(children, child);
        }
        json_object_set_new(child, "value",
                            json_integer(json_integer_value(json_object_get(child, "value")) + 1));
        node = child;
    }
}

/* GET .../flamegraph?type=full|on_cpu|off_cpu: samples of the vertex's
 * running task threads from each TaskManager that runs some, merged into
 * one tree of frames whose values count the samples through them. */
static json_t *
flamegraph_json(struct rest_server *rs, struct MHD_Connection *c, const Cluster__JobVertexInfo *v,
                const spate_id *job, const spate_id *vertex, enum MHD_Result *ret)
{
    const char *type = rest_query(c, "type");
    int want = 0; /* 0 full, 1 on-CPU only, 2 off-CPU only */
    json_t *root;
    bool *asked = xcalloc(v->n_subtasks + 1, sizeof *asked);

    if (type != NULL && strcasecmp(type, "on_cpu") == 0)
        want = 1;
    else if (type != NULL && strcasecmp(type, "off_cpu") == 0)
        want = 2;
    else if (type != NULL && strcasecmp(type, "full") != 0) {
        free(asked);
        *ret = rest_error(c, MHD_HTTP_BAD_REQUEST,
                          "Bad request: type '%s' is none of full, on_cpu, off_cpu", type);
        return NULL;
    }
    root = json_pack("{s:s, s:I, s:[]}", "name", "root", "value", (json_int_t)0, "children");
    for (size_t i = 0; i < v->n_subtasks; i++) {
        Cluster__TaskManagerQuery q = CLUSTER__TASK_MANAGER_QUERY__INIT;
        Cluster__ThreadSamplesRequest req = CLUSTER__THREAD_SAMPLES_REQUEST__INIT;
        const Cluster__SubtaskInfo *s = v->subtasks[i];
        const Cluster__TaskManagerInfos *infos;
        struct rpc_gateway *gw = NULL;
        struct rpc_future *f;
        spate_error err = { 0 };

        if (asked[i] || s->resource_id.len != ID_BYTES || state_is_terminal(s->state))
            continue;
        /* One request per TaskManager: it samples all the vertex's threads. */
        for (size_t k = i; k < v->n_subtasks; k++)
            asked[k] |= v->subtasks[k]->resource_id.len == s->resource_id.len &&
                        memcmp(v->subtasks[k]->resource_id.data, s->resource_id.data,
                               s->resource_id.len) == 0;
        q.resource_id = s->resource_id;
        f = rm_request_task_managers(rs->rm, &q, REST_ASK_MS);
        if (rpc_future_wait(f, REST_ASK_MS + 1000, &err) != 0 ||
            (infos = rpc_future_value(f))->n_taskmanagers == 0 ||
            rpc_gateway_new(rs->svc, infos->taskmanagers[0]->address, NULL, &gw, &err) != 0) {
            rpc_future_unref(f);
            continue; /* a TaskManager gone meanwhile: the others' samples */
        }
        rpc_future_unref(f);
        req.job_id = gw_id_bytes(job);
        req.vertex_id = gw_id_bytes(vertex);
        req.num_samples = FLAME_SAMPLES;
        req.delay_ms = FLAME_DELAY_MS;
        f = te_request_thread_samples(gw, &req, REST_ASK_MS);
        if (rpc_future_wait(f, REST_ASK_MS + 1000, &err) == 0) {
            const Cluster__ThreadSamples *ts = rpc_future_value(f);

            for (size_t k = 0; k < ts->n_samples; k++) {
                if ((want == 1 && !ts->samples[k]->on_cpu) || (want == 2 && ts->samples[k]->on_cpu))
                    continue;
                json_object_set_new(
                    root, "value",
                    json_integer(json_integer_value(json_object_get(root, "value")) + 1));
                flame_add(root, ts->samples[k]->frames, ts->samples[k]->n_frames);
            }
        }
        rpc_future_unref(f);
        rpc_gateway_free(gw);
    }
    free(asked);
    return json_pack("{s:I, s:o}", "endTimestamp", (json_int_t)clock_wall_ms(), "data", root);
}

enum MHD_Result
rest_vertex_view(struct rest_server *rs, struct MHD_Connection *c, const spate_id *job,
                 const spate_id *vertex, char **parts, int n)
{
    const Cluster__JobVertexInfo *v;
    const Cluster__SubtaskInfo *s = NULL;
    const struct metric_store *store;
    int64_t now = clock_wall_ms(), durations[NDURATIONS];
    struct io_info io;
    enum MHD_Result ret;
    struct rpc_future *f;
    json_t *out = NULL;
    long index = -1, attempt = -1;
    char *end;

    /* parts: what follows the vertex id. */
    if (n >= 2 && strcmp(parts[0], "subtasks") == 0 && strcmp(parts[1], "accumulators") != 0) {
        index = strtol(parts[1], &end, 10);
        if (*end != '\0' || end == parts[1] || index < 0)
            return rest_error(c, MHD_HTTP_BAD_REQUEST,
                              "Bad request: subtask index '%s' is not a non-negative integer",
                              parts[1]);
        if (n >= 4 && strcmp(parts[2], "attempts") == 0) {
            attempt = strtol(parts[3], &end, 10);
            if (*end != '\0' || end == parts[3] || attempt < 0)
                return rest_error(c, MHD_HTTP_BAD_REQUEST,
                                  "Bad request: attempt '%s' is not a non-negative integer",
                                  parts[3]);
        }
    }
    if ((f = ask_vertex(rs, c, job, vertex, &v, &ret)) == NULL)
        return ret;
    if (index >= 0 && (s = find_subtask(v, index)) == NULL) {
        rpc_future_unref(f);
        return rest_error(c, MHD_HTTP_NOT_FOUND, "Invalid subtask index %ld for vertex %s", index,
                          id_str(vertex).s);
    }
    /* spate keeps each subtask's current attempt: an earlier one is gone. */
    if (attempt >= 0 && attempt != s->attempt) {
        /* s lives in f's reply: answered before f goes. */
        ret = rest_error(c, MHD_HTTP_NOT_FOUND,
                         "Attempt %ld of subtask %ld is not known (the current one is %d).",
                         attempt, index, s->attempt);
        rpc_future_unref(f);
        return ret;
    }
    store = metric_fetcher_acquire(rs->metrics, NULL);
    if (n == 1 && strcmp(parts[0], "accumulators") == 0) {
        out = json_pack("{s:s, s:o}", "id", id_str(vertex).s, "user-accumulators",
                        user_accumulators());
    } else if (n == 2 && strcmp(parts[0], "subtasks") == 0 &&
               strcmp(parts[1], "accumulators") == 0) {
        json_t *subtasks = json_array();

        for (size_t i = 0; i < v->n_subtasks; i++)
            json_array_append_new(subtasks, json_pack("{s:i, s:i, s:s, s:o}", "subtask",
                                                      v->subtasks[i]->subtask, "attempt",
                                                      v->subtasks[i]->attempt, "host",
                                                      v->subtasks[i]->resource_id.len == ID_BYTES
                                                          ? v->subtasks[i]->host
                                                          : "(unassigned)",
                                                      "user-accumulators", user_accumulators()));
        out = json_pack("{s:s, s:i, s:o}", "id", id_str(vertex).s, "parallelism", v->parallelism,
                        "subtasks", subtasks);
    } else if ((n == 2 && s != NULL) || (n == 4 && s != NULL && attempt >= 0)) {
        out = subtask_json(s, store, job, vertex, now, &io, durations);
    } else if (n == 5 && s != NULL && attempt >= 0 && strcmp(parts[4], "accumulators") == 0) {
        out = json_pack("{s:i, s:i, s:s, s:o}", "subtask", s->subtask, "attempt", s->attempt, "id",
                        id_str(vertex).s, "user-accumulators", user_accumulators());
    } else if (n == 1 && strcmp(parts[0], "subtasktimes") == 0) {
        out = subtask_times_json(v, vertex, now);
    } else if (n == 1 && strcmp(parts[0], "taskmanagers") == 0) {
        out = vertex_taskmanagers_json(v, store, job, vertex, now);
    }
    metric_fetcher_release(rs->metrics);
    if (out == NULL && n == 1 && strcmp(parts[0], "flamegraph") == 0) {
        /* Not under the fetcher's lock: sampling takes a while. */
        ret = MHD_NO;
        out = flamegraph_json(rs, c, v, job, vertex, &ret);
        if (out == NULL) {
            rpc_future_unref(f);
            return ret;
        }
    }
    rpc_future_unref(f);
    if (out == NULL)
        return rest_error(c, MHD_HTTP_NOT_FOUND, "Not found: the vertex has no such resource");
    return rest_send(c, MHD_HTTP_OK, out);
}
