/* Checkpoints over REST, with Flink's JSON (CheckpointingStatistics,
 * CheckpointConfigInfo, CheckpointStatistics, the manual checkpoint's
 * TriggerResponse and AsynchronousOperationResult): the JobMaster's
 * CheckpointCoordinator through the Dispatcher. libmicrohttpd's thread. */
#include <stdlib.h>
#include <string.h>

#include "checkpoint/checkpoint_storage.h"
#include "core/alloc.h"
#include "core/util.h"
#include "rest/rest_int.h"

/* Asks for the job's statistics (checkpoint_id > 0: that one only). */
static struct rpc_future *
rest_stats(struct rest_request *rq, int64_t checkpoint_id, enum MHD_Result *ret)
{
    Ckstats__StatsRequest req = CKSTATS__STATS_REQUEST__INIT;
    spate_id job;

    if (!rest_job_id(rq, &job, ret))
        return NULL;
    req.job_id = gw_id_bytes(&job);
    req.checkpoint_id = checkpoint_id;
    return rest_ask(
        rq->c, dispatcher_request_checkpoint_stats(rq->rs->dispatcher, &req, REST_ASK_MS), ret);
}

/* Flink answers 404 for a job that does not checkpoint. */
static bool
rest_checkpointing(const Ckstats__CheckpointingStats *s)
{
    return s->enabled || (s->checkpoints_dir != NULL && *s->checkpoints_dir);
}

static const char *
rest_class_name(const char *status)
{
    return strcmp(status, "COMPLETED") == 0 ? "completed"
           : strcmp(status, "FAILED") == 0  ? "failed"
                                            : "in_progress";
}

/* TaskCheckpointStatistics of each vertex, by vertex id. */
static json_t *
rest_tasks_json(const Ckstats__CheckpointStats *c)
{
    json_t *tasks = json_object();

    for (size_t v = 0; v < c->n_vertices; v++) {
        const Ckstats__VertexStats *vs = c->vertices[v];
        int64_t duration =
            vs->latest_ack_timestamp > 0 ? vs->latest_ack_timestamp - c->trigger_timestamp : 0;
        spate_id id;

        if (!gw_id_get(&vs->vertex_id, &id))
            continue;
        json_object_set_new(
            tasks, id_str(&id).s,
            json_pack("{s:I, s:s, s:I, s:I, s:I, s:I, s:i, s:i, s:i, s:i, s:i}", "id",
                      (json_int_t)c->id, "status", c->status, "latest_ack_timestamp",
                      (json_int_t)vs->latest_ack_timestamp, "checkpointed_size",
                      (json_int_t)vs->state_size, "state_size", (json_int_t)vs->state_size,
                      "end_to_end_duration", (json_int_t)duration, "alignment_buffered", 0,
                      "processed_data", 0, "persisted_data", 0, "num_subtasks", vs->num_subtasks,
                      "num_acknowledged_subtasks", vs->num_acknowledged));
    }
    return tasks;
}

/* CheckpointStatistics (completed, failed or in progress); the per-task
 * map only in a checkpoint's details, as Flink's. */
static json_t *
rest_checkpoint_json(const Ckstats__CheckpointStats *c, bool tasks)
{
    json_t *j;

    if (c == NULL)
        return json_null();
    j = json_pack("{s:s, s:I, s:s, s:b, s:n, s:I, s:I, s:I, s:I, s:I, s:i, s:i, s:i, s:i, s:i, "
                  "s:s, s:o}",
                  "className", rest_class_name(c->status), "id", (json_int_t)c->id, "status",
                  c->status, "is_savepoint", c->is_savepoint, "savepointFormat",
                  "trigger_timestamp", (json_int_t)c->trigger_timestamp, "latest_ack_timestamp",
                  (json_int_t)c->latest_ack_timestamp, "checkpointed_size",
                  (json_int_t)c->state_size, "state_size", (json_int_t)c->state_size,
                  "end_to_end_duration", (json_int_t)c->end_to_end_duration, "alignment_buffered",
                  0, "processed_data", 0, "persisted_data", 0, "num_subtasks", c->num_subtasks,
                  "num_acknowledged_subtasks", c->num_acknowledged, "checkpoint_type",
                  c->is_savepoint ? "SAVEPOINT" : "CHECKPOINT", "tasks",
                  tasks ? rest_tasks_json(c) : json_object());
    if (strcmp(c->status, "COMPLETED") == 0) {
        json_object_set_new(j, "external_path", json_string(c->external_path));
        json_object_set_new(j, "discarded", json_boolean(c->discarded));
    } else if (strcmp(c->status, "FAILED") == 0) {
        json_object_set_new(j, "failure_timestamp", json_integer(c->failure_timestamp));
        json_object_set_new(j, "failure_message", json_string(c->failure_message));
    }
    return j;
}

/* StatsSummaryDto. */
static json_t *
rest_summary_json(const Ckstats__Summary *s)
{
    Ckstats__Summary zero = CKSTATS__SUMMARY__INIT;

    if (s == NULL)
        s = &zero;
    return json_pack("{s:I, s:I, s:I, s:f, s:f, s:f, s:f, s:f}", "min", (json_int_t)s->min, "max",
                     (json_int_t)s->max, "avg", (json_int_t)s->avg, "p50", s->p50, "p90", s->p90,
                     "p95", s->p95, "p99", s->p99, "p999", s->p999);
}

/* GET /jobs/:jobid/checkpoints: CheckpointingStatistics. */
static enum MHD_Result
rest_checkpoints(struct rest_request *rq)
{
    const Ckstats__CheckpointingStats *s;
    const Ckstats__RestoredStats *r;
    enum MHD_Result ret;
    struct rpc_future *f;
    json_t *history, *restored, *j;

    if ((f = rest_stats(rq, 0, &ret)) == NULL)
        return ret;
    s = rpc_future_value(f);
    if (!rest_checkpointing(s)) {
        rpc_future_unref(f);
        return rest_error(rq->c, MHD_HTTP_NOT_FOUND, "Checkpointing has not been enabled.");
    }
    history = json_array();
    for (size_t i = 0; i < s->n_history; i++)
        json_array_append_new(history, rest_checkpoint_json(s->history[i], false));
    r = s->latest_restored;
    restored = r == NULL
                   ? json_null()
                   : json_pack("{s:I, s:I, s:b, s:s}", "id", (json_int_t)r->id, "restore_timestamp",
                               (json_int_t)r->restore_timestamp, "is_savepoint", r->is_savepoint,
                               "external_path", r->external_path);
    j = json_pack(
        "{s:{s:I, s:I, s:i, s:I, s:I}, s:{s:o, s:o, s:o, s:o, s:o, s:o}, "
        "s:{s:o, s:o, s:o, s:o}, s:o}",
        "counts", "restored", (json_int_t)s->restored, "total", (json_int_t)s->total, "in_progress",
        s->in_progress, "completed", (json_int_t)s->completed, "failed", (json_int_t)s->failed,
        "summary", "checkpointed_size", rest_summary_json(s->state_size), "state_size",
        rest_summary_json(s->state_size), "end_to_end_duration",
        rest_summary_json(s->end_to_end_duration), "alignment_buffered", rest_summary_json(NULL),
        "processed_data", rest_summary_json(NULL), "persisted_data", rest_summary_json(NULL),
        "latest", "completed", rest_checkpoint_json(s->latest_completed, false), "savepoint",
        rest_checkpoint_json(s->latest_savepoint, false), "failed",
        rest_checkpoint_json(s->latest_failed, false), "restored", restored, "history", history);
    rpc_future_unref(f);
    return rest_send(rq->c, MHD_HTTP_OK, j);
}

/* GET /jobs/:jobid/checkpoints/config: CheckpointConfigInfo. */
static enum MHD_Result
rest_checkpoints_config(struct rest_request *rq)
{
    const Ckstats__CheckpointingStats *s;
    enum MHD_Result ret;
    struct rpc_future *f;
    json_t *j;

    if ((f = rest_stats(rq, 0, &ret)) == NULL)
        return ret;
    s = rpc_future_value(f);
    if (!rest_checkpointing(s)) {
        rpc_future_unref(f);
        return rest_error(rq->c, MHD_HTTP_NOT_FOUND,
                          "Checkpointing is not enabled for this job (%s).", rq->params[0]);
    }
    j = json_pack(
        "{s:s, s:I, s:I, s:I, s:I, s:{s:b, s:b}, s:s, s:s, s:b, s:i, s:i, s:b, s:b, "
        "s:i, s:s}",
        "mode", s->exactly_once ? "exactly_once" : "at_least_once", "interval",
        (json_int_t)(s->enabled ? s->interval_ms : INT64_MAX), "timeout", (json_int_t)s->timeout_ms,
        "min_pause", (json_int_t)s->min_pause_ms, "max_concurrent", (json_int_t)s->max_concurrent,
        "externalization", "enabled", s->externalized, "delete_on_cancellation",
        s->delete_on_cancellation, "state_backend", "HashMapStateBackend", "checkpoint_storage",
        "FileSystemCheckpointStorage", "unaligned_checkpoints", 0, "tolerable_failed_checkpoints",
        s->tolerable_failures, "aligned_checkpoint_timeout", 0, "checkpoints_after_tasks_finish", 0,
        "state_changelog_enabled", 0, "changelog_periodic_materialization_interval", 0,
        "changelog_storage", "memory");
    rpc_future_unref(f);
    return rest_send(rq->c, MHD_HTTP_OK, j);
}

/* GET /jobs/:jobid/checkpoints/details/:checkpointid: CheckpointStatistics
 * with its tasks. */
static enum MHD_Result
rest_checkpoint_details(struct rest_request *rq)
{
    const Ckstats__CheckpointingStats *s;
    enum MHD_Result ret;
    struct rpc_future *f;
    char *end;
    long long id = strtoll(rq->params[1], &end, 10);

    if (*end != '\0' || id <= 0)
        return rest_error(rq->c, MHD_HTTP_BAD_REQUEST,
                          "Bad request: '%s' is no checkpoint id (a positive number)",
                          rq->params[1]);
    if ((f = rest_stats(rq, id, &ret)) == NULL)
        return ret;
    s = rpc_future_value(f);
    if (s->n_history == 0) {
        rpc_future_unref(f);
        return rest_error(rq->c, MHD_HTTP_NOT_FOUND,
                          "Could not find checkpointing statistics for checkpoint %lld.", id);
    }
    ret = rest_send(rq->c, MHD_HTTP_OK, rest_checkpoint_json(s->history[0], true));
    rpc_future_unref(f);
    return ret;
}

static int
rest_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

/* Flink's StatsSummaryDto of n values (sorted here): min, max, avg and the
 * nearest-rank percentiles. */
static json_t *
rest_min_max_avg(int64_t *v, size_t n)
{
    static const struct {
        const char *name;
        double q;
    } ps[] = {
        { "p50", 0.5 }, { "p90", 0.9 }, { "p95", 0.95 }, { "p99", 0.99 }, { "p999", 0.999 }
    };
    int64_t sum = 0;
    json_t *j;

    if (n > 1)
        qsort(v, n, sizeof *v, rest_cmp_i64);
    for (size_t i = 0; i < n; i++)
        sum += v[i];
    j = json_pack("{s:I, s:I, s:I}", "min", (json_int_t)(n > 0 ? v[0] : 0), "max",
                  (json_int_t)(n > 0 ? v[n - 1] : 0), "avg",
                  (json_int_t)(n > 0 ? sum / (int64_t)n : 0));
    for (size_t k = 0; k < sizeof ps / sizeof ps[0]; k++) {
        size_t rank = n > 0 ? (size_t)(ps[k].q * (double)n + 0.999999) : 0;

        json_object_set_new(j, ps[k].name,
                            json_real(n > 0 ? (double)v[rank > 0 ? rank - 1 : 0] : 0.0));
    }
    return j;
}

/* GET /jobs/:jobid/checkpoints/details/:checkpointid/subtasks/:vertexid:
 * TaskCheckpointStatisticsWithSubtaskDetails, each subtask "completed"
 * (acknowledged: its time, size and duration since the trigger, the
 * task's synchronous and asynchronous parts and its barriers' alignment)
 * or "pending_or_failed". spate measures no start delay and buffers
 * nothing in alignment: those are 0. */
static enum MHD_Result
rest_checkpoint_subtasks(struct rest_request *rq)
{
    const Ckstats__CheckpointingStats *s;
    const Ckstats__CheckpointStats *c;
    const Ckstats__VertexStats *vs = NULL;
    enum MHD_Result ret;
    struct rpc_future *f;
    json_t *subtasks, *j, *zero;
    int64_t *sizes, *durations, *syncs, *asyncs, *alignments;
    spate_id vid, id;
    size_t n = 0;
    char *end;
    long long cp = strtoll(rq->params[1], &end, 10);

    if (*end != '\0' || cp <= 0)
        return rest_error(rq->c, MHD_HTTP_BAD_REQUEST,
                          "Bad request: '%s' is no checkpoint id (a positive number)",
                          rq->params[1]);
    if (id_parse(rq->params[2], &vid, NULL) != 0)
        return rest_error(rq->c, MHD_HTTP_BAD_REQUEST, "Bad request: '%s' is no vertex id",
                          rq->params[2]);
    if ((f = rest_stats(rq, cp, &ret)) == NULL)
        return ret;
    s = rpc_future_value(f);
    c = s->n_history > 0 ? s->history[0] : NULL;
    for (size_t v = 0; c != NULL && v < c->n_vertices; v++)
        if (gw_id_get(&c->vertices[v]->vertex_id, &id) && id_equal(&id, &vid))
            vs = c->vertices[v];
    if (vs == NULL) {
        rpc_future_unref(f);
        return rest_error(rq->c, MHD_HTTP_NOT_FOUND,
                          "Could not find checkpointing statistics for checkpoint %lld and "
                          "vertex %s.",
                          cp, rq->params[2]);
    }
    subtasks = json_array();
    sizes = xcalloc(vs->n_subtasks + 1, sizeof *sizes);
    durations = xcalloc(vs->n_subtasks + 1, sizeof *durations);
    syncs = xcalloc(vs->n_subtasks + 1, sizeof *syncs);
    asyncs = xcalloc(vs->n_subtasks + 1, sizeof *asyncs);
    alignments = xcalloc(vs->n_subtasks + 1, sizeof *alignments);
    for (size_t i = 0; i < vs->n_subtasks; i++) {
        const Ckstats__SubtaskStats *st = vs->subtasks[i];

        if (st->ack_timestamp <= 0) {
            json_array_append_new(subtasks, json_pack("{s:i, s:s}", "index", st->index, "status",
                                                      "pending_or_failed"));
            continue;
        }
        sizes[n] = (int64_t)st->state_size;
        durations[n] = st->ack_timestamp - c->trigger_timestamp;
        syncs[n] = st->sync_duration;
        asyncs[n] = st->async_duration;
        alignments[n] = st->alignment_duration;
        json_array_append_new(
            subtasks,
            json_pack("{s:i, s:s, s:I, s:I, s:I, s:I, s:{s:I, s:I}, s:{s:i, s:i, s:i, s:I}, s:i, "
                      "s:b, s:b}",
                      "index", st->index, "status", "completed", "ack_timestamp",
                      (json_int_t)st->ack_timestamp, "end_to_end_duration",
                      (json_int_t)durations[n], "state_size", (json_int_t)st->state_size,
                      "checkpointed_size", (json_int_t)st->state_size, "checkpoint", "sync",
                      (json_int_t)syncs[n], "async", (json_int_t)asyncs[n], "alignment", "buffered",
                      0, "processed", 0, "persisted", 0, "duration", (json_int_t)alignments[n],
                      "start_delay", 0, "unaligned_checkpoint", 0, "aborted", 0));
        n++;
    }
    zero = rest_min_max_avg(NULL, 0);
    j = json_pack(
        "{s:I, s:s, s:I, s:I, s:I, s:I, s:i, s:i, s:i, s:i, s:i, s:{s:o, s:o, s:o, s:{s:o, s:o}, "
        "s:{s:O, s:O, s:O, s:o}, s:O}, s:o}",
        "id", (json_int_t)c->id, "status", c->status, "latest_ack_timestamp",
        (json_int_t)vs->latest_ack_timestamp, "checkpointed_size", (json_int_t)vs->state_size,
        "state_size", (json_int_t)vs->state_size, "end_to_end_duration",
        (json_int_t)(vs->latest_ack_timestamp > 0 ? vs->latest_ack_timestamp - c->trigger_timestamp
                                                  : 0),
        "alignment_buffered", 0, "processed_data", 0, "persisted_data", 0, "num_subtasks",
        vs->num_subtasks, "num_acknowledged_subtasks", vs->num_acknowledged, "summary",
        "checkpointed_size", rest_min_max_avg(sizes, n), "state_size", rest_min_max_avg(sizes, n),
        "end_to_end_duration", rest_min_max_avg(durations, n), "checkpoint_duration", "sync",
        rest_min_max_avg(syncs, n), "async", rest_min_max_avg(asyncs, n), "alignment", "buffered",
        zero, "processed", zero, "persisted", zero, "duration", rest_min_max_avg(alignments, n),
        "start_delay", zero, "subtasks", subtasks);
    json_decref(zero);
    free(sizes);
    free(durations);
    free(syncs);
    free(asyncs);
    free(alignments);
    rpc_future_unref(f);
    return rest_send(rq->c, MHD_HTTP_OK, j);
}

/* POST /jobs/:jobid/checkpoints: a manual checkpoint; the body's triggerId
 * (optional) names it, checkpointType is taken as it comes (full snapshots
 * only). 202 with {"request-id"}. */
static enum MHD_Result
rest_checkpoint_trigger(struct rest_request *rq)
{
    Ckstats__TriggerRequest req = CKSTATS__TRIGGER_REQUEST__INIT;
    const Ckstats__TriggerReply *reply;
    spate_error err = { 0 };
    spate_id job, trigger;
    enum MHD_Result ret;
    struct rpc_future *f;

    if (!rest_job_id(rq, &job, &ret))
        return ret;
    req.job_id = gw_id_bytes(&job);
    if (rq->json != NULL && rq->json_len > 0) {
        json_error_t jerr;
        json_t *body = json_loadb(rq->json, rq->json_len, 0, &jerr);
        const char *tid = NULL;

        if (body == NULL || !json_is_object(body))
            ret = rest_error(rq->c, MHD_HTTP_BAD_REQUEST,
                             "Bad request: the body is no JSON object: %s", jerr.text);
        else if ((tid = json_string_value(json_object_get(body, "triggerId"))) != NULL &&
                 id_parse(tid, &trigger, &err) != 0)
            ret =
                rest_error(rq->c, MHD_HTTP_BAD_REQUEST, "Bad request: triggerId: %s", err.message);
        else
            ret = MHD_YES;
        if (ret == MHD_YES && tid != NULL)
            req.trigger_id = gw_id_bytes(&trigger);
        json_decref(body);
        if (ret != MHD_YES)
            return ret;
    }
    f = rest_ask(rq->c, dispatcher_trigger_checkpoint(rq->rs->dispatcher, &req, REST_ASK_MS), &ret);
    if (f == NULL)
        return ret;
    reply = rpc_future_value(f);
    gw_id_get(&reply->trigger_id, &trigger);
    rpc_future_unref(f);
    return rest_send(rq->c, MHD_HTTP_ACCEPTED,
                     json_pack("{s:s}", "request-id", id_str(&trigger).s));
}

/* The status of trigger :triggerid of job :jobid (a checkpoint's or a
 * savepoint's); NULL after answering the failure into *ret. */
static struct rpc_future *
rest_trigger_status(struct rest_request *rq, enum MHD_Result *ret)
{
    Ckstats__TriggerStatusRequest req = CKSTATS__TRIGGER_STATUS_REQUEST__INIT;
    spate_error err = { 0 };
    spate_id job, trigger;

    if (!rest_job_id(rq, &job, ret))
        return NULL;
    if (id_parse(rq->params[1], &trigger, &err) != 0) {
        *ret = rest_error(rq->c, MHD_HTTP_BAD_REQUEST, "Bad request: trigger id: %s", err.message);
        return NULL;
    }
    req.job_id = gw_id_bytes(&job);
    req.trigger_id = gw_id_bytes(&trigger);
    return rest_ask(
        rq->c, dispatcher_checkpoint_trigger_status(rq->rs->dispatcher, &req, REST_ASK_MS), ret);
}

/* GET /jobs/:jobid/checkpoints/:triggerid: AsynchronousOperationResult. */
static enum MHD_Result
rest_checkpoint_status(struct rest_request *rq)
{
    const Ckstats__TriggerStatus *st;
    enum MHD_Result ret;
    struct rpc_future *f;
    json_t *j;

    if ((f = rest_trigger_status(rq, &ret)) == NULL)
        return ret;
    st = rpc_future_value(f);
    if (!st->done)
        j = json_pack("{s:{s:s}}", "status", "id", "IN_PROGRESS");
    else if (st->failure != NULL && *st->failure)
        j = json_pack("{s:{s:s}, s:{s:{s:s, s:s, s:s}}}", "status", "id", "COMPLETED", "operation",
                      "failureCause", "class",
                      "org.apache.flink.runtime.checkpoint.CheckpointException", "stack-trace",
                      st->failure, "serialized-throwable", "");
    else
        j = json_pack("{s:{s:s}, s:{s:I}}", "status", "id", "COMPLETED", "operation",
                      "checkpointId", (json_int_t)st->checkpoint_id);
    rpc_future_unref(f);
    return rest_send(rq->c, MHD_HTTP_OK, j);
}

/* ---- savepoints ------------------------------------------------------------------ */

/* A savepoint path of the body's field name (Flink's URI "file:///x" or
 * "file:/x", or the absolute path "/x") as the path the JobManager uses,
 * written back into body so that it lives as long as body; an empty or
 * missing one stays. False after answering 400 (another scheme, a relative
 * path) into *ret. */
static bool
rest_storage_path(struct rest_request *rq, json_t *body, const char *name, const char **value,
                  enum MHD_Result *ret)
{
    spate_error err = { 0 };
    char *path;

    if (*value == NULL || **value == '\0')
        return true;
    if (checkpoint_storage_path(*value, NULL, &path, &err) != 0) {
        *ret = rest_error(rq->c, MHD_HTTP_BAD_REQUEST, "Bad request: '%s': %s", name, err.message);
        return false;
    }
    json_object_set_new(body, name, json_string_nocheck(path));
    free(path);
    *value = json_string_value(json_object_get(body, name));
    return true;
}

json_t *
rest_body_object(struct rest_request *rq, enum MHD_Result *ret)
{
    json_error_t jerr;
    json_t *body;

    if (rq->json == NULL || rq->json_len == 0)
        return json_object();
    body = json_loadb(rq->json, rq->json_len, 0, &jerr);
    if (body == NULL || !json_is_object(body)) {
        json_decref(body);
        *ret =
            rest_error(rq->c, MHD_HTTP_BAD_REQUEST, "Bad request: the body is no JSON object%s%s",
                       body == NULL ? ": " : "", body == NULL ? jerr.text : "");
        return NULL;
    }
    return body;
}

/* Field `name` of body when it is a string, a boolean or absent (NULL, false);
 * false after answering 400 into *ret. */
static bool
rest_field_string(struct rest_request *rq, json_t *body, const char *name, const char **out,
                  enum MHD_Result *ret)
{
    json_t *v = json_object_get(body, name);

    *out = NULL;
    if (v == NULL || json_is_null(v))
        return true;
    if (!json_is_string(v)) {
        *ret = rest_error(rq->c, MHD_HTTP_BAD_REQUEST, "Bad request: '%s' must be a string", name);
        return false;
    }
    *out = json_string_value(v);
    return true;
}

static bool
rest_field_bool(struct rest_request *rq, json_t *body, const char *name, bool *out,
                enum MHD_Result *ret)
{
    json_t *v = json_object_get(body, name);

    *out = false;
    if (v == NULL || json_is_null(v))
        return true;
    if (!json_is_boolean(v)) {
        *ret = rest_error(rq->c, MHD_HTTP_BAD_REQUEST, "Bad request: '%s' must be true or false",
                          name);
        return false;
    }
    *out = json_is_true(v);
    return true;
}

/* POST /jobs/:jobid/savepoints ({"target-directory", "cancel-job",
 * "triggerId"}) and POST /jobs/:jobid/stop ({"targetDirectory", "drain",
 * "triggerId"}): 202 with {"request-id"}; the status at
 * GET /jobs/:jobid/savepoints/:triggerid. */
static enum MHD_Result
rest_savepoint_trigger_as(struct rest_request *rq, bool stop)
{
    Ckstats__SavepointRequest req = CKSTATS__SAVEPOINT_REQUEST__INIT;
    const Ckstats__TriggerReply *reply;
    const char *dir = NULL, *tid = NULL;
    spate_error err = { 0 };
    spate_id job, trigger;
    enum MHD_Result ret = MHD_YES;
    struct rpc_future *f;
    bool flag = false;
    json_t *body;

    if (!rest_job_id(rq, &job, &ret))
        return ret;
    if ((body = rest_body_object(rq, &ret)) == NULL)
        return ret;
    if (!rest_field_string(rq, body, stop ? "targetDirectory" : "target-directory", &dir, &ret) ||
        !rest_storage_path(rq, body, stop ? "targetDirectory" : "target-directory", &dir, &ret) ||
        !rest_field_bool(rq, body, stop ? "drain" : "cancel-job", &flag, &ret) ||
        !rest_field_string(rq, body, "triggerId", &tid, &ret)) {
        json_decref(body);
        return ret;
    }
    if (tid != NULL && id_parse(tid, &trigger, &err) != 0) {
        json_decref(body);
        return rest_error(rq->c, MHD_HTTP_BAD_REQUEST, "Bad request: triggerId: %s", err.message);
    }
    req.job_id = gw_id_bytes(&job);
    if (tid != NULL)
        req.trigger_id = gw_id_bytes(&trigger);
    req.target_directory = (char *)(dir != NULL ? dir : "");
    req.mode = stop   ? CKSTATS__SAVEPOINT_MODE__SAVEPOINT_STOP
               : flag ? CKSTATS__SAVEPOINT_MODE__SAVEPOINT_CANCEL
                      : CKSTATS__SAVEPOINT_MODE__SAVEPOINT_ONLY;
    req.drain = stop && flag;
    f = rest_ask(rq->c, dispatcher_trigger_savepoint(rq->rs->dispatcher, &req, REST_ASK_MS), &ret);
    json_decref(body);
    if (f == NULL)
        return ret;
    reply = rpc_future_value(f);
    gw_id_get(&reply->trigger_id, &trigger);
    rpc_future_unref(f);
    SPATE_LOG_INFO(REST_LOG, "job %s: %s requested over REST (trigger %s)", id_str(&job).s,
                   stop ? "stop with a savepoint" : "savepoint", id_str(&trigger).s);
    return rest_send(rq->c, MHD_HTTP_ACCEPTED,
                     json_pack("{s:s}", "request-id", id_str(&trigger).s));
}

static enum MHD_Result
rest_savepoint_trigger(struct rest_request *rq)
{
    return rest_savepoint_trigger_as(rq, false);
}

static enum MHD_Result
rest_job_stop(struct rest_request *rq)
{
    return rest_savepoint_trigger_as(rq, true);
}

/* Flink's AsynchronousOperationResult of a savepoint or a disposal. */
static json_t *
rest_savepoint_result(const Ckstats__TriggerStatus *st, bool location)
{
    if (!st->done)
        return json_pack("{s:{s:s}}", "status", "id", "IN_PROGRESS");
    if (st->failure != NULL && *st->failure)
        return json_pack("{s:{s:s}, s:{s:{s:s, s:s, s:s}}}", "status", "id", "COMPLETED",
                         "operation", "failure-cause", "class",
                         "org.apache.flink.runtime.checkpoint.CheckpointException", "stack-trace",
                         st->failure, "serialized-throwable", "");
    if (!location)
        return json_pack("{s:{s:s}, s:{}}", "status", "id", "COMPLETED", "operation");
    return json_pack("{s:{s:s}, s:{s:s}}", "status", "id", "COMPLETED", "operation", "location",
                     st->location ? st->location : "");
}

/* GET /jobs/:jobid/savepoints/:triggerid (also a stop's). */
static enum MHD_Result
rest_savepoint_status(struct rest_request *rq)
{
    enum MHD_Result ret;
    struct rpc_future *f;
    json_t *j;

    if ((f = rest_trigger_status(rq, &ret)) == NULL)
        return ret;
    j = rest_savepoint_result(rpc_future_value(f), true);
    rpc_future_unref(f);
    return rest_send(rq->c, MHD_HTTP_OK, j);
}

/* POST /savepoint-disposal ({"savepoint-path"}): 202 with {"request-id"}. */
static enum MHD_Result
rest_disposal_trigger(struct rest_request *rq)
{
    Ckstats__DisposeRequest req = CKSTATS__DISPOSE_REQUEST__INIT;
    const Ckstats__TriggerReply *reply;
    const char *path = NULL;
    enum MHD_Result ret = MHD_YES;
    struct rpc_future *f;
    spate_id trigger;
    json_t *body;

    if ((body = rest_body_object(rq, &ret)) == NULL)
        return ret;
    if (!rest_field_string(rq, body, "savepoint-path", &path, &ret) ||
        !rest_storage_path(rq, body, "savepoint-path", &path, &ret)) {
        json_decref(body);
        return ret;
    }
    if (path == NULL || *path == '\0') {
        json_decref(body);
        return rest_error(rq->c, MHD_HTTP_BAD_REQUEST,
                          "Bad request: 'savepoint-path' names the savepoint to dispose of");
    }
    req.path = (char *)path;
    f = rest_ask(rq->c, dispatcher_dispose_savepoint(rq->rs->dispatcher, &req, REST_ASK_MS), &ret);
    json_decref(body);
    if (f == NULL)
        return ret;
    reply = rpc_future_value(f);
    gw_id_get(&reply->trigger_id, &trigger);
    rpc_future_unref(f);
    return rest_send(rq->c, MHD_HTTP_ACCEPTED,
                     json_pack("{s:s}", "request-id", id_str(&trigger).s));
}

/* GET /savepoint-disposal/:triggerid. */
static enum MHD_Result
rest_disposal_status(struct rest_request *rq)
{
    Ckstats__DisposeStatusRequest req = CKSTATS__DISPOSE_STATUS_REQUEST__INIT;
    spate_error err = { 0 };
    enum MHD_Result ret;
    struct rpc_future *f;
    spate_id trigger;
    json_t *j;

    if (id_parse(rq->params[0], &trigger, &err) != 0)
        return rest_error(rq->c, MHD_HTTP_BAD_REQUEST, "Bad request: trigger id: %s", err.message);
    req.trigger_id = gw_id_bytes(&trigger);
    f = rest_ask(rq->c, dispatcher_dispose_status(rq->rs->dispatcher, &req, REST_ASK_MS), &ret);
    if (f == NULL)
        return ret;
    j = rest_savepoint_result(rpc_future_value(f), false);
    rpc_future_unref(f);
    return rest_send(rq->c, MHD_HTTP_OK, j);
}

const struct rest_route rest_checkpoints_routes[] = {
    { "POST", "/jobs/:jobid/savepoints", rest_savepoint_trigger, REST_BODY_JSON, 0 },
    { "GET", "/jobs/:jobid/savepoints/:triggerid", rest_savepoint_status, REST_BODY_NONE, 0 },
    { "POST", "/jobs/:jobid/stop", rest_job_stop, REST_BODY_JSON, 0 },
    { "POST", "/savepoint-disposal", rest_disposal_trigger, REST_BODY_JSON, 0 },
    { "GET", "/savepoint-disposal/:triggerid", rest_disposal_status, REST_BODY_NONE, 0 },
    { "GET", "/jobs/:jobid/checkpoints", rest_checkpoints, REST_BODY_NONE, 0 },
    { "POST", "/jobs/:jobid/checkpoints", rest_checkpoint_trigger, REST_BODY_JSON, 0 },
    { "GET", "/jobs/:jobid/checkpoints/config", rest_checkpoints_config, REST_BODY_NONE, 0 },
    { "GET", "/jobs/:jobid/checkpoints/details/:checkpointid/subtasks/:vertexid",
      rest_checkpoint_subtasks, REST_BODY_NONE, 0 },
    { "GET", "/jobs/:jobid/checkpoints/details/:checkpointid", rest_checkpoint_details,
      REST_BODY_NONE, 0 },
    { "GET", "/jobs/:jobid/checkpoints/:triggerid", rest_checkpoint_status, REST_BODY_NONE, 0 },
    { NULL, NULL, NULL, REST_BODY_NONE, 0 },
};
