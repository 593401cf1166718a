/* The jobs resources of the REST API (rest_int.h): submission of a JobGraph
 * with its library (POST /jobs, as the CLI submits), the lists, a job's
 * details, plan, config, exceptions, accumulators and execution result,
 * and cancellation; all in Flink's JSON. The Dispatcher answers for running
 * and archived jobs alike. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint/checkpoint_storage.h"
#include "core/alloc.h"
#include "core/clock.h"
#include "core/execution_state.h"
#include "core/job_status.h"
#include "core/log.h"
#include "core/util.h"
#include "proto/jobgraph.pb-c.h"
#include "rest/rest_int.h"

/* A job status name that is globally terminal (FINISHED, FAILED, CANCELED). */
static bool
rest_status_terminal(const char *name)
{
    int s = job_status_parse(name);

    return s >= 0 && job_status_is_terminal((enum job_status)s);
}

/* Flink's JobDetails (the rows of /jobs/overview). */
static json_t *
rest_job_json(const Cluster__JobInfo *info)
{
    spate_id id;
    int64_t now = clock_wall_ms();
    int64_t end = info->end_time;
    uint32_t known = info->tasks_created + info->tasks_scheduled + info->tasks_deploying +
                     info->tasks_initializing + info->tasks_running + info->tasks_finished +
                     info->tasks_canceling + info->tasks_canceled + info->tasks_failed;
    /* The test-only stand-in job counts only some states: the rest ended. */
    uint32_t canceled =
        info->tasks_canceled + (info->tasks_total > known ? info->tasks_total - known : 0);

    gw_id_get(&info->job_id, &id);
    return json_pack("{s:s, s:s, s:I, s:I, s:I, s:s, s:I, s:{s:i, s:i, s:i, s:i, s:i, s:i, s:i, "
                     "s:i, s:i, s:i, s:i}}",
                     "jid", id_str(&id).s, "name", info->name, "start-time",
                     (json_int_t)info->start_time, "end-time", (json_int_t)end, "duration",
                     (json_int_t)((end >= 0 ? end : now) - info->start_time), "state", info->state,
                     "last-modification", (json_int_t)info->last_modification, "tasks", "total",
                     (int)info->tasks_total, "created", (int)info->tasks_created, "scheduled",
                     (int)info->tasks_scheduled, "deploying", (int)info->tasks_deploying, "running",
                     (int)info->tasks_running, "finished", (int)info->tasks_finished, "canceling",
                     (int)info->tasks_canceling, "canceled", (int)canceled, "failed",
                     (int)info->tasks_failed, "reconciling", 0, "initializing",
                     (int)info->tasks_initializing);
}

static enum MHD_Result
rest_jobs_list(struct rest_request *rq, bool overview)
{
    Cluster__Ack req = CLUSTER__ACK__INIT;
    Cluster__JobsOverview *o;
    enum MHD_Result ret;
    struct rpc_future *f;
    json_t *arr = json_array();

    f = rest_ask(rq->c, dispatcher_request_jobs(rq->rs->dispatcher, &req, REST_ASK_MS), &ret);
    if (f == NULL) {
        json_decref(arr);
        return ret;
    }
    o = rpc_future_value(f);
    for (size_t i = 0; i < o->n_jobs; i++) {
        spate_id id;

        gw_id_get(&o->jobs[i]->job_id, &id);
        json_array_append_new(arr, overview ? rest_job_json(o->jobs[i])
                                            : json_pack("{s:s, s:s}", "id", id_str(&id).s, "status",
                                                        o->jobs[i]->state));
    }
    rpc_future_unref(f);
    return rest_send(rq->c, MHD_HTTP_OK, json_pack("{s:o}", "jobs", arr));
}

static enum MHD_Result
rest_jobs_overview(struct rest_request *rq)
{
    return rest_jobs_list(rq, true);
}

/* GET /jobs: Flink's JobIdsWithStatusOverview. */
static enum MHD_Result
rest_jobs(struct rest_request *rq)
{
    return rest_jobs_list(rq, false);
}

/* The Dispatcher's details of :jobid; NULL after answering an error. */
static struct rpc_future *
rest_details(struct rest_request *rq, enum MHD_Result *ret)
{
    Cluster__JobId req = CLUSTER__JOB_ID__INIT;
    spate_id id;

    if (!rest_job_id(rq, &id, ret))
        return NULL;
    req.job_id = gw_id_bytes(&id);
    return rest_ask(rq->c, dispatcher_request_job_details(rq->rs->dispatcher, &req, REST_ASK_MS),
                    ret);
}

static json_t *
rest_plan(const Cluster__JobDetails *d)
{
    json_t *plan = d->plan != NULL && *d->plan ? json_loads(d->plan, 0, NULL) : NULL;

    return plan != NULL ? plan : json_object();
}

static json_t *
rest_vertex_json(const Cluster__VertexInfo *v, int64_t now, uint32_t *per_state)
{
    json_t *tasks = json_object();
    spate_id id;
    int64_t duration = -1;
    int state;

    for (size_t s = 0; s < EXEC_STATE_COUNT; s++)
        json_object_set_new(tasks, execution_state_name((enum execution_state)s),
                            json_integer(s < v->n_task_counts ? v->task_counts[s] : 0));
    json_object_set_new(tasks, "RECONCILING", json_integer(0));
    if ((state = execution_state_parse(v->state)) >= 0)
        per_state[state]++;
    if (v->start_time > 0)
        duration = (v->end_time > 0 ? v->end_time : now) - v->start_time;
    gw_id_get(&v->id, &id);
    return json_pack(
        "{s:s, s:s, s:i, s:i, s:s, s:I, s:I, s:I, s:o, s:{s:i, s:b, s:i, s:b, s:i, s:b, s:i, "
        "s:b, s:i, s:i, s:f}}",
        "id", id_str(&id).s, "name", v->name, "maxParallelism", v->max_parallelism, "parallelism",
        v->parallelism, "status", v->state, "start-time", (json_int_t)v->start_time, "end-time",
        (json_int_t)v->end_time, "duration", (json_int_t)duration, "tasks", tasks, "metrics",
        "read-bytes", 0, "read-bytes-complete", 0, "write-bytes", 0, "write-bytes-complete", 0,
        "read-records", 0, "read-records-complete", 0, "write-records", 0, "write-records-complete",
        0, "accumulated-backpressured-time", 0, "accumulated-idle-time", 0, "accumulated-busy-time",
        0.0);
}

/* The vertices' I/O ("metrics": read/write bytes and records, busy and
 * back-pressured time) as the metric store and the tasks' final reports
 * have them (rest_vertices.c), into the details' vertices, by id. */
static void
rest_vertices_add_metrics(struct rest_request *rq, json_t *vertices)
{
    json_t *measured, *mv, *v;
    enum MHD_Result ret;
    size_t i, k;
    spate_id id;

    if (!rest_job_id(rq, &id, &ret))
        return;
    measured = rest_job_vertices(rq->rs, &id);
    json_array_foreach(vertices, i, v)
    {
        json_array_foreach(measured, k, mv)
        {
            if (json_equal(json_object_get(v, "id"), json_object_get(mv, "id")))
                json_object_set(v, "metrics", json_object_get(mv, "metrics"));
        }
    }
    json_decref(measured);
}

/* GET /jobs/:jobid: Flink's JobDetailsInfo. */
static enum MHD_Result
rest_job(struct rest_request *rq)
{
    uint32_t per_state[EXEC_STATE_COUNT] = { 0 };
    const Cluster__JobDetails *d;
    enum MHD_Result ret;
    struct rpc_future *f;
    json_t *j, *vertices = json_array(), *counts = json_object(), *times = json_object();
    int64_t now = clock_wall_ms();

    if ((f = rest_details(rq, &ret)) == NULL) {
        json_decref(vertices);
        json_decref(counts);
        json_decref(times);
        return ret;
    }
    d = rpc_future_value(f);
    for (size_t i = 0; i < d->n_vertices; i++)
        json_array_append_new(vertices, rest_vertex_json(d->vertices[i], now, per_state));
    rest_vertices_add_metrics(rq, vertices);
    for (size_t s = 0; s < EXEC_STATE_COUNT; s++)
        json_object_set_new(counts, execution_state_name((enum execution_state)s),
                            json_integer(per_state[s]));
    json_object_set_new(counts, "RECONCILING", json_integer(0));
    for (size_t s = 0; s < JOB_STATUS_COUNT; s++)
        json_object_set_new(times, job_status_name((enum job_status)s),
                            json_integer(s < d->n_status_timestamps ? d->status_timestamps[s] : 0));
    /* JobDetails' fields, "tasks" (per state, all subtasks) included, and
     * JobDetailsInfo's. */
    j = rest_job_json(d->info);
    json_object_set_new(j, "isStoppable", json_false());
    json_object_set_new(j, "job-type", json_string("STREAMING"));
    json_object_set_new(j, "maxParallelism", json_integer(d->max_parallelism));
    json_object_set_new(j, "now", json_integer(now));
    json_object_set_new(j, "timestamps", times);
    json_object_set_new(j, "vertices", vertices);
    json_object_set_new(j, "status-counts", counts);
    json_object_set_new(j, "plan", rest_plan(d));
    if (d->info->failure != NULL && d->info->failure[0] != '\0')
        json_object_set_new(j, "failure", json_string(d->info->failure));
    rpc_future_unref(f);
    return rest_send(rq->c, MHD_HTTP_OK, j);
}

/* GET /jobs/:jobid/plan */
static enum MHD_Result
rest_job_plan(struct rest_request *rq)
{
    enum MHD_Result ret;
    struct rpc_future *f;
    json_t *plan;

    if ((f = rest_details(rq, &ret)) == NULL)
        return ret;
    plan = rest_plan(rpc_future_value(f));
    rpc_future_unref(f);
    return rest_send(rq->c, MHD_HTTP_OK, json_pack("{s:o}", "plan", plan));
}

/* GET /jobs/:jobid/config: Flink's JobConfigInfo. */
static enum MHD_Result
rest_job_config(struct rest_request *rq)
{
    const Cluster__JobDetails *d;
    enum MHD_Result ret;
    struct rpc_future *f;
    json_t *j;
    spate_id id;

    if ((f = rest_details(rq, &ret)) == NULL)
        return ret;
    d = rpc_future_value(f);
    gw_id_get(&d->info->job_id, &id);
    j = json_pack("{s:s, s:s, s:{s:s, s:s, s:i, s:b, s:{}}}", "jid", id_str(&id).s, "name",
                  d->info->name, "execution-config", "execution-mode", "PIPELINED",
                  "restart-strategy",
                  d->restart_strategy != NULL && *d->restart_strategy ? d->restart_strategy
                                                                      : "Restart deactivated.",
                  "job-parallelism", d->parallelism, "object-reuse-mode", 0, "user-config");
    rpc_future_unref(f);
    return rest_send(rq->c, MHD_HTTP_OK, j);
}

/* GET /jobs/:jobid/exceptions: Flink's JobExceptionsInfoWithHistory; the
 * first failure is the root. */
static enum MHD_Result
rest_job_exceptions(struct rest_request *rq)
{
    const Cluster__JobDetails *d;
    enum MHD_Result ret;
    struct rpc_future *f;
    json_t *all = json_array(), *entries = json_array(), *j;
    const char *root = NULL;
    int64_t root_time = 0;

    if ((f = rest_details(rq, &ret)) == NULL) {
        json_decref(all);
        json_decref(entries);
        return ret;
    }
    d = rpc_future_value(f);
    for (size_t i = 0; i < d->n_exceptions; i++) {
        const Cluster__ExceptionInfo *x = d->exceptions[i];

        if (root == NULL) {
            root = x->exception;
            root_time = x->timestamp;
        }
        json_array_append_new(all, json_pack("{s:s, s:s, s:s, s:I, s:s}", "exception", x->exception,
                                             "task", x->task, "location", x->location, "timestamp",
                                             (json_int_t)x->timestamp, "taskManagerId",
                                             x->task_manager_id));
        json_array_append_new(
            entries, json_pack("{s:s, s:s, s:I, s:s*, s:s*, s:s*, s:{}, s:[]}", "exceptionName",
                               "JobException", "stacktrace", x->exception, "timestamp",
                               (json_int_t)x->timestamp, "taskName", *x->task ? x->task : NULL,
                               "location", *x->location ? x->location : NULL, "taskManagerId",
                               *x->task_manager_id ? x->task_manager_id : NULL, "failureLabels",
                               "concurrentExceptions"));
    }
    if (root == NULL && d->info->failure != NULL && *d->info->failure) {
        root = d->info->failure;
        root_time = d->info->end_time;
    }
    j = json_pack("{s:s?, s:I, s:o, s:b, s:{s:o, s:b}}", "root-exception", root, "timestamp",
                  (json_int_t)root_time, "all-exceptions", all, "truncated",
                  d->exceptions_truncated, "exceptionHistory", "entries", entries, "truncated",
                  d->exceptions_truncated);
    rpc_future_unref(f);
    return rest_send(rq->c, MHD_HTTP_OK, j);
}

/* GET /jobs/:jobid/accumulators: Flink's JobAccumulatorsInfo (values as
 * strings, like Flink's toString of a counter). */
static enum MHD_Result
rest_job_accumulators(struct rest_request *rq)
{
    const Cluster__JobDetails *d;
    enum MHD_Result ret;
    struct rpc_future *f;
    json_t *user = json_array();

    if ((f = rest_details(rq, &ret)) == NULL) {
        json_decref(user);
        return ret;
    }
    d = rpc_future_value(f);
    for (size_t i = 0; i < d->info->n_accumulators; i++) {
        char value[32];

        snprintf(value, sizeof value, "%lld", (long long)d->info->accumulators[i]->value);
        json_array_append_new(user,
                              json_pack("{s:s, s:s, s:s}", "name", d->info->accumulators[i]->name,
                                        "type", "LongCounter", "value", value));
    }
    rpc_future_unref(f);
    return rest_send(rq->c, MHD_HTTP_OK,
                     json_pack("{s:[], s:o, s:{}}", "job-accumulators", "user-task-accumulators",
                               user, "serialized-user-task-accumulators"));
}

/* GET /jobs/:jobid/execution-result: IN_PROGRESS, or COMPLETED with
 * Flink's JobResult (accumulator values as plain numbers, not Java's
 * serialized form). */
static enum MHD_Result
rest_job_execution_result(struct rest_request *rq)
{
    const Cluster__JobDetails *d;
    const Cluster__JobInfo *info;
    enum MHD_Result ret;
    struct rpc_future *f;
    json_t *accs, *result;
    const char *app;
    spate_id id;

    if ((f = rest_details(rq, &ret)) == NULL)
        return ret;
    d = rpc_future_value(f);
    info = d->info;
    if (!rest_status_terminal(info->state)) {
        rpc_future_unref(f);
        return rest_send(rq->c, MHD_HTTP_OK, json_pack("{s:{s:s}}", "status", "id", "IN_PROGRESS"));
    }
    accs = json_object();
    for (size_t i = 0; i < info->n_accumulators; i++)
        json_object_set_new(accs, info->accumulators[i]->name,
                            json_integer(info->accumulators[i]->value));
    app = strcmp(info->state, "FINISHED") == 0   ? "SUCCEEDED"
          : strcmp(info->state, "CANCELED") == 0 ? "CANCELED"
                                                 : "FAILED";
    gw_id_get(&info->job_id, &id);
    result = json_pack("{s:s, s:s, s:s, s:o, s:I, s:I, s:I}", "id", id_str(&id).s, "name",
                       info->name, "application-status", app, "accumulator-results", accs,
                       "net-runtime", (json_int_t)(info->end_time - info->start_time), "start-time",
                       (json_int_t)info->start_time, "end-time", (json_int_t)info->end_time);
    if (strcmp(app, "FAILED") == 0)
        json_object_set_new(result, "failure-cause",
                            json_pack("{s:s, s:s, s:s}", "class",
                                      "org.apache.flink.runtime.JobException", "stack-trace",
                                      info->failure ? info->failure : "", "serialized-throwable",
                                      ""));
    rpc_future_unref(f);
    return rest_send(
        rq->c, MHD_HTTP_OK,
        json_pack("{s:{s:s}, s:o}", "status", "id", "COMPLETED", "job-execution-result", result));
}

/* PATCH /jobs/:jobid?mode=cancel */
static enum MHD_Result
rest_job_cancel(struct rest_request *rq)
{
    Cluster__JobId req = CLUSTER__JOB_ID__INIT;
    const char *mode = MHD_lookup_connection_value(rq->c, MHD_GET_ARGUMENT_KIND, "mode");
    enum MHD_Result ret;
    struct rpc_future *f;
    spate_id id;

    if (!rest_job_id(rq, &id, &ret))
        return ret;
    if (mode != NULL && strcmp(mode, "cancel") != 0)
        return rest_error(rq->c, MHD_HTTP_BAD_REQUEST,
                          "termination mode '%s' is not supported: the only mode is 'cancel' "
                          "(stop a job with POST /jobs/:jobid/stop)",
                          mode);
    req.job_id = gw_id_bytes(&id);
    f = rest_ask(rq->c, dispatcher_cancel_job(rq->rs->dispatcher, &req, REST_ASK_MS), &ret);
    if (f == NULL)
        return ret;
    rpc_future_unref(f);
    SPATE_LOG_INFO(REST_LOG, "job %s: cancel requested over REST", id_str(&id).s);
    return rest_send(rq->c, MHD_HTTP_ACCEPTED, json_object());
}

int
rest_resume_parse(json_t *body, struct rest_resume *r, spate_error *err)
{
    json_t *v = json_object_get(body, "savepointPath");
    json_t *a = json_object_get(body, "allowNonRestoredState");
    const char *p;
    char *path;

    r->path = NULL;
    r->allow_non_restored = false;
    if (a != NULL && !json_is_null(a)) {
        if (!json_is_boolean(a))
            return spate_error_set(err, SPATE_EINVAL,
                                   "allowNonRestoredState must be true or false");
        r->allow_non_restored = json_is_true(a);
    }
    if (v == NULL || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return spate_error_set(err, SPATE_EINVAL, "savepointPath must be a string");
    p = json_string_value(v);
    if (*p == '\0')
        return 0;
    /* The JobManager reads it: an absolute path or a file: URI. */
    if (checkpoint_storage_path(p, NULL, &path, err) != 0)
        return spate_error_wrap(err, "savepointPath");
    /* Kept in body, which r->path may point into as long as it lives. */
    json_object_set_new(body, "savepointPath", json_string_nocheck(path));
    free(path);
    r->path = json_string_value(json_object_get(body, "savepointPath"));
    return 0;
}

/* The graph's bytes with the resume settings written in (malloc'd). */
static int
rest_graph_resume(const uint8_t *graph, size_t len, const struct rest_resume *r, uint8_t **out,
                  size_t *out_len, spate_error *err)
{
    Jobgraph__JobGraph *g = jobgraph__job_graph__unpack(NULL, len, graph);
    char *old;

    if (g == NULL)
        return spate_error_set(err, SPATE_EINVAL, "malformed job graph: cannot decode %zu bytes",
                               len);
    old = g->savepoint_path;
    g->savepoint_path = (char *)r->path;
    g->allow_non_restored_state = r->allow_non_restored;
    *out_len = jobgraph__job_graph__get_packed_size(g);
    *out = xmalloc(*out_len + 1);
    jobgraph__job_graph__pack(g, *out);
    g->savepoint_path = old;
    jobgraph__job_graph__free_unpacked(g, NULL);
    return 0;
}

int
rest_submit_graph(struct rest_server *rs, const uint8_t *graph, size_t len,
                  const uint8_t key[SHA256_BYTES], const struct rest_resume *resume, spate_id *job,
                  spate_error *err)
{
    Cluster__JobSubmission sub = CLUSTER__JOB_SUBMISSION__INIT;
    struct rpc_future *f;
    uint8_t *rewritten = NULL;
    int rc;

    if (resume != NULL && resume->path != NULL) {
        if ((rc = rest_graph_resume(graph, len, resume, &rewritten, &len, err)) != 0)
            return rc;
        graph = rewritten;
    }
    sub.job_graph.data = (uint8_t *)graph;
    sub.job_graph.len = len;
    sub.library_key.data = (uint8_t *)key;
    sub.library_key.len = key != NULL ? SHA256_BYTES : 0; /* none: built-in operators only */
    f = dispatcher_submit_job(rs->dispatcher, &sub, REST_ASK_MS);
    if ((rc = rpc_future_wait(f, REST_ASK_MS + 1000, err)) == 0)
        gw_id_get(&((const Cluster__JobId *)rpc_future_value(f))->job_id, job);
    rpc_future_unref(f);
    free(rewritten);
    return rc;
}

/* Reads a whole uploaded file (already within the body's size cap). */
static int
rest_read_part(const struct rest_part *p, uint8_t **out, spate_error *err)
{
    int fd = open(p->path, O_RDONLY | O_CLOEXEC);
    uint8_t *buf = xmalloc(p->len ? p->len : 1);
    size_t got = 0;

    if (fd < 0) {
        free(buf);
        return spate_error_set(err, SPATE_EIO, "cannot read the upload '%s'", p->filename);
    }
    while (got < p->len) {
        ssize_t n = read(fd, buf + got, p->len - got);

        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    if (got != p->len) {
        free(buf);
        return spate_error_set(err, SPATE_EIO, "cannot read the upload '%s'", p->filename);
    }
    *out = buf;
    return 0;
}

static const struct rest_part *
rest_file_named(const struct rest_request *rq, const char *filename)
{
    for (size_t i = 0; i < rq->nparts; i++)
        if (rq->parts[i].path != NULL && strcmp(rq->parts[i].filename, filename) == 0)
            return &rq->parts[i];
    return NULL;
}

/* Whether the file starts like an ELF object; a clear refusal otherwise. */
static int
rest_check_elf(const struct rest_part *p, spate_error *err)
{
    unsigned char magic[4] = { 0 };
    int fd = open(p->path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, magic, sizeof magic) : -1;

    if (fd >= 0)
        close(fd);
    if (n != 4 || memcmp(magic, "\177ELF", 4) != 0)
        return spate_error_set(err, SPATE_EINVAL,
                               "'%s' is not a job library: not an ELF shared object", p->filename);
    return 0;
}

/* POST /jobs: what `spate run` sends, as Flink's CLI does: a multipart body
 * with the field "request" ({"jobGraphFileName", "jobJarFileNames"}) and
 * those files (the encoded JobGraph, the job library). 202 and the job's
 * URL. */
static enum MHD_Result
rest_job_submit(struct rest_request *rq)
{
    const struct rest_part *req = rest_part_find(rq, "request", false), *gp = NULL, *lp = NULL;
    const char *graph_name, *lib_name;
    struct rest_resume resume;
    json_t *body, *jars;
    json_error_t jerr;
    spate_error err = { 0 };
    uint8_t *graph = NULL, key[SHA256_BYTES];
    spate_id job;
    enum MHD_Result ret;

    if (req == NULL || req->value == NULL)
        return rest_error(rq->c, MHD_HTTP_BAD_REQUEST,
                          "a job submission needs the form field 'request' (JSON with "
                          "jobGraphFileName and jobJarFileNames)");
    if ((body = json_loads(req->value, 0, &jerr)) == NULL)
        return rest_error(rq->c, MHD_HTTP_BAD_REQUEST,
                          "the field 'request' is not JSON: %s (line %d, column %d)", jerr.text,
                          jerr.line, jerr.column);
    /* The names live in body: it goes last. */
    graph_name = json_string_value(json_object_get(body, "jobGraphFileName"));
    jars = json_object_get(body, "jobJarFileNames");
    lib_name = json_string_value(json_array_get(jars, 0));
    if (graph_name == NULL || !json_is_array(jars) || json_array_size(jars) > 1 ||
        (json_array_size(jars) == 1 && lib_name == NULL)) {
        ret = rest_error(rq->c, MHD_HTTP_BAD_REQUEST,
                         "'request' must name the JobGraph file (jobGraphFileName) and at most "
                         "one job library (jobJarFileNames; none for a job of built-in "
                         "operators only, as SQL's)");
    } else if ((gp = rest_file_named(rq, graph_name)) == NULL ||
               (lib_name != NULL && (lp = rest_file_named(rq, lib_name)) == NULL)) {
        ret = rest_error(rq->c, MHD_HTTP_BAD_REQUEST, "the body has no file named '%s'",
                         gp == NULL ? graph_name : lib_name);
    } else if (rest_resume_parse(body, &resume, &err) != 0 ||
               (lp != NULL && rest_check_elf(lp, &err) != 0) ||
               rest_read_part(gp, &graph, &err) != 0) {
        ret = rest_error(rq->c, MHD_HTTP_BAD_REQUEST, "%s", err.message);
    } else if (lp != NULL && blob_server_put_file(rq->rs->blobs, lp->path, true, key, &err) != 0) {
        ret = rest_error(rq->c,
                         err.code == SPATE_EMSGSIZE ? MHD_HTTP_CONTENT_TOO_LARGE
                                                    : MHD_HTTP_INTERNAL_SERVER_ERROR,
                         "%s", err.message);
    } else {
        if (rest_submit_graph(rq->rs, graph, gp->len, lp != NULL ? key : NULL, &resume, &job,
                              &err) != 0) {
            ret = rest_error(rq->c,
                             err.code == SPATE_ETIMEDOUT || err.code == SPATE_ESTATE
                                 ? MHD_HTTP_SERVICE_UNAVAILABLE
                                 : MHD_HTTP_BAD_REQUEST,
                             "job submission failed: %s", err.message);
        } else {
            SPATE_LOG_INFO(REST_LOG, "job %s submitted over REST (%s)", id_str(&job).s,
                           lib_name != NULL ? lib_name : "no library");
            ret = rest_send(rq->c, MHD_HTTP_ACCEPTED,
                            json_pack("{s:s+}", "jobUrl", "/jobs/", id_str(&job).s));
        }
        /* The job holds its own reference now (or none: it was refused). */
        if (lp != NULL)
            blob_server_unref(rq->rs->blobs, key);
    }
    free(graph);
    json_decref(body);
    return ret;
}

/* GET /jobs/:jobid/status (JobStatusInfo). */
static enum MHD_Result
rest_job_status(struct rest_request *rq)
{
    const Cluster__JobDetails *d;
    enum MHD_Result ret;
    struct rpc_future *f;
    json_t *j;

    if ((f = rest_details(rq, &ret)) == NULL)
        return ret;
    d = rpc_future_value(f);
    j = json_pack("{s:s}", "status", d->info->state);
    rpc_future_unref(f);
    return rest_send(rq->c, MHD_HTTP_OK, j);
}

/* PATCH /jobs/:jobid/clientHeartbeat {"expiredTimestamp"}: Flink's
 * attached clients keep a job alive with it (execution.attached with
 * client.heartbeat.*); spate's jobs do not end with their client, so it is
 * acknowledged for a known job. 202, no body. */
static enum MHD_Result
rest_job_client_heartbeat(struct rest_request *rq)
{
    enum MHD_Result ret;
    struct rpc_future *f;
    json_t *body, *ts;

    if ((body = rest_body_object(rq, &ret)) == NULL)
        return ret;
    ts = json_object_get(body, "expiredTimestamp");
    if (ts == NULL || !json_is_integer(ts)) {
        json_decref(body);
        return rest_error(rq->c, MHD_HTTP_BAD_REQUEST,
                          "Bad request: the body needs \"expiredTimestamp\", an integer");
    }
    json_decref(body);
    if ((f = rest_details(rq, &ret)) == NULL)
        return ret;
    rpc_future_unref(f);
    return rest_send(rq->c, MHD_HTTP_ACCEPTED, json_object());
}

/* PATCH /jobs/:jobid/rescaling and GET .../rescaling/:triggerid: Flink's
 * own answer since FLINK-12312. A job changes its parallelism through a
 * savepoint and a restart (stop with a savepoint, run with -s and -p). */
static enum MHD_Result
rest_job_rescaling(struct rest_request *rq)
{
    return rest_error(rq->c, MHD_HTTP_SERVICE_UNAVAILABLE,
                      "Rescaling is temporarily disabled. See FLINK-12312. (spate: stop the job "
                      "with a savepoint and run it from there with another parallelism)");
}

/* GET /jobs/:jobid/resource-requirements (JobResourceRequirementsBody):
 * per vertex, the parallelism bounds the scheduler works with (from 1 to
 * the vertex's parallelism, as Flink's default scheduler reports them). */
static enum MHD_Result
rest_job_resource_requirements(struct rest_request *rq)
{
    const Cluster__JobDetails *d;
    enum MHD_Result ret;
    struct rpc_future *f;
    json_t *j = json_object();

    if ((f = rest_details(rq, &ret)) == NULL) {
        json_decref(j);
        return ret;
    }
    d = rpc_future_value(f);
    for (size_t i = 0; i < d->n_vertices; i++) {
        spate_id vid;

        gw_id_get(&d->vertices[i]->id, &vid);
        json_object_set_new(j, id_str(&vid).s,
                            json_pack("{s:{s:i, s:i}}", "parallelism", "lowerBound", 1,
                                      "upperBound", (int)d->vertices[i]->parallelism));
    }
    rpc_future_unref(f);
    return rest_send(rq->c, MHD_HTTP_OK, j);
}

/* PUT /jobs/:jobid/resource-requirements: Flink's default scheduler
 * refuses it (only the adaptive scheduler changes a running job's
 * parallelism); spate's scheduler is that default one. */
static enum MHD_Result
rest_job_resource_requirements_update(struct rest_request *rq)
{
    enum MHD_Result ret;
    struct rpc_future *f;

    if ((f = rest_details(rq, &ret)) == NULL)
        return ret;
    rpc_future_unref(f);
    return rest_error(rq->c, MHD_HTTP_BAD_REQUEST,
                      "The scheduler does not support changing the parallelism without a job "
                      "restart (Flink: only the AdaptiveScheduler does). Stop the job with a "
                      "savepoint and run it from there with another parallelism.");
}

const struct rest_route rest_jobs_routes[] = {
    { "GET", "/jobs", rest_jobs, REST_BODY_NONE, 0 },
    { "POST", "/jobs", rest_job_submit, REST_BODY_MULTIPART, 0 },
    { "GET", "/jobs/overview", rest_jobs_overview, REST_BODY_NONE, 0 },
    { "GET", "/jobs/:jobid", rest_job, REST_BODY_NONE, 0 },
    { "PATCH", "/jobs/:jobid", rest_job_cancel, REST_BODY_NONE, 0 },
    { "GET", "/jobs/:jobid/plan", rest_job_plan, REST_BODY_NONE, 0 },
    { "GET", "/jobs/:jobid/config", rest_job_config, REST_BODY_NONE, 0 },
    { "GET", "/jobs/:jobid/exceptions", rest_job_exceptions, REST_BODY_NONE, 0 },
    { "GET", "/jobs/:jobid/execution-result", rest_job_execution_result, REST_BODY_NONE, 0 },
    { "GET", "/jobs/:jobid/accumulators", rest_job_accumulators, REST_BODY_NONE, 0 },
    { "GET", "/jobs/:jobid/status", rest_job_status, REST_BODY_NONE, 0 },
    { "PATCH", "/jobs/:jobid/clientHeartbeat", rest_job_client_heartbeat, REST_BODY_JSON, 0 },
    { "PATCH", "/jobs/:jobid/rescaling", rest_job_rescaling, REST_BODY_NONE, 0 },
    { "GET", "/jobs/:jobid/rescaling/:triggerid", rest_job_rescaling, REST_BODY_NONE, 0 },
    { "GET", "/jobs/:jobid/resource-requirements", rest_job_resource_requirements, REST_BODY_NONE,
      0 },
    { "PUT", "/jobs/:jobid/resource-requirements", rest_job_resource_requirements_update,
      REST_BODY_JSON, 0 },
    { NULL, NULL, NULL, REST_BODY_NONE, 0 },
};
