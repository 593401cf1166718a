/* The REST side's copy of the cluster's metrics (Flink's MetricStore): each
 * TaskManager's own and each running task's, as the TaskManagers' metric
 * dumps had them, and the JSON views Flink's metric handlers build from it:
 * a component's list or chosen values, values aggregated over subtasks, a
 * vertex's watermarks and back pressure. Plain data; the REST thread owns
 * it. */
#ifndef SPATE_REST_METRIC_STORE_H
#define SPATE_REST_METRIC_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/id.h"
#include "proto/cluster.pb-c.h"

/* The metrics of one component (a TaskManager, a subtask): name → text. */
struct metric_component {
    char **names, **values;
    size_t n, cap;
};

void metric_component_put(struct metric_component *c, const char *name, const char *value);
void metric_component_put_int(struct metric_component *c, const char *name, int64_t value);
/* The value of name, or NULL. */
const char *metric_component_get(const struct metric_component *c, const char *name);
void metric_component_release(struct metric_component *c);

struct metric_store;

struct metric_store *metric_store_new(void);
void metric_store_free(struct metric_store *s);
/* Adds a TaskManager's dump. Tasks whose ids are not 16 bytes are skipped
 * and counted in the result (a dump is outside input). */
size_t metric_store_add(struct metric_store *s, const Cluster__MetricDump *dump);

/* A TaskManager's own metrics, or NULL. */
const struct metric_component *metric_store_taskmanager(const struct metric_store *s,
                                                        const spate_id *tm);
/* How many TaskManagers the store has, and the i-th's id and metrics. */
size_t metric_store_taskmanager_count(const struct metric_store *s);
const struct metric_component *metric_store_taskmanager_at(const struct metric_store *s, size_t i,
                                                           spate_id *id);
/* The metrics of subtask of a vertex (its latest attempt), or NULL. */
const struct metric_component *metric_store_subtask(const struct metric_store *s,
                                                    const spate_id *job, const spate_id *vertex,
                                                    int subtask);
/* One more than the largest subtask index of the vertex in the store (0:
 * none of its subtasks is there). */
int metric_store_subtask_limit(const struct metric_store *s, const spate_id *job,
                               const spate_id *vertex);
/* A vertex's metrics as Flink's task metric store names them:
 * "<subtask>.<name>". Release with metric_component_release. */
void metric_store_vertex(const struct metric_store *s, const spate_id *job, const spate_id *vertex,
                         struct metric_component *out);

/* ---- the handlers' JSON (Flink's bare arrays) ---------------------------- */

/* A metric handler's answer: without get, every metric as [{"id": name}];
 * with get (comma-separated names), [{"id": name, "value": text}] for those
 * that exist. c may be NULL (nothing known): []. */
json_t *metric_json_values(const struct metric_component *c, const char *get);

/* Aggregations of AggregatingSubtasksMetricsHandler. */
enum {
    METRIC_AGG_MIN = 1,
    METRIC_AGG_MAX = 2,
    METRIC_AGG_AVG = 4,
    METRIC_AGG_SUM = 8,
    METRIC_AGG_ALL = 15,
};
/* "min,max" -> METRIC_AGG_MIN | METRIC_AGG_MAX (any case; NULL or empty:
 * all); SPATE_EINVAL with a message naming the bad word. */
int metric_parse_aggregations(const char *text, unsigned *aggs, spate_error *err);
/* Flink's subtask ranges, "1,3,5-9", into selected[0..limit) (NULL or
 * empty: all). SPATE_EINVAL with a message naming the bad range. */
int metric_parse_subtasks(const char *text, bool *selected, int limit, spate_error *err);
/* Without get: the union of the components' metric names as
 * [{"id": name}]; with get: per name that at least one component has and
 * whose values are numbers, {"id": name, "min": .., "max": .., "avg": ..,
 * "sum": ..} with the aggregations asked for. NULL components are skipped. */
json_t *metric_json_aggregate(const struct metric_component *const *cs, size_t n, const char *get,
                              unsigned aggs);

/* JobVertexWatermarksHandler: [{"id": "<i>.currentInputWatermark", "value":
 * ..}] for the subtasks 0..parallelism-1 that have one. */
json_t *metric_json_watermarks(const struct metric_store *s, const spate_id *job,
                               const spate_id *vertex, int parallelism);
/* JobVertexBackPressureHandler from backPressuredTimeMsPerSecond,
 * idleTimeMsPerSecond and busyTimeMsPerSecond: {"status": "ok",
 * "backpressureLevel": ok|low|high (of the largest ratio), "end-timestamp":
 * fetched_ms, "subtasks": [...]}; {"status": "deprecated"} when the store
 * has none of the vertex's subtasks. */
json_t *metric_json_backpressure(const struct metric_store *s, const spate_id *job,
                                 const spate_id *vertex, int64_t fetched_ms);
/* Flink's levels: ratio <= 0.10 ok, <= 0.5 low, else high. */
const char *metric_backpressure_level(double ratio);

#endif
