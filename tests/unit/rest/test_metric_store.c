/* Unit tests of src/rest/metric_store: TaskManagers' dumps into Flink's
 * metric store, and the JSON of Flink's metric handlers built from it
 * (lists, values, aggregations over subtasks, watermarks, back pressure),
 * with the query parameters' errors. */
#include <criterion/criterion.h>
#include <string.h>

#include "rest/metric_store.h"
#include "rpc/gateways.h"

/* A dump under construction: fixed room, enough for these tests. */
struct dump {
    Cluster__MetricDump d;
    Cluster__TaskMetrics tasks[8], *task_ptrs[8];
    Cluster__Metric ms[64], *m_ptrs[64];
    Cluster__Metric *tm_ptrs[8];
    size_t nm;
    spate_id tm;
};

static void
dump_init(struct dump *x)
{
    memset(x, 0, sizeof *x);
    cluster__metric_dump__init(&x->d);
    id_random(&x->tm);
    x->d.resource_id = gw_id_bytes(&x->tm);
    x->d.tasks = x->task_ptrs;
    x->d.taskmanager = x->tm_ptrs;
}

static Cluster__Metric *
metric(struct dump *x, const char *name, const char *value)
{
    Cluster__Metric *m = &x->ms[x->nm++];

    cluster__metric__init(m);
    m->name = (char *)name;
    m->value = (char *)value;
    return m;
}

static Cluster__TaskMetrics *
task(struct dump *x, const spate_id *job, const spate_id *vertex, int subtask, int attempt)
{
    Cluster__TaskMetrics *t = &x->tasks[x->d.n_tasks];

    cluster__task_metrics__init(t);
    t->job_id = gw_id_bytes(job);
    t->vertex_id = gw_id_bytes(vertex);
    t->subtask = subtask;
    t->attempt = attempt;
    t->metrics = &x->m_ptrs[x->nm];
    x->task_ptrs[x->d.n_tasks++] = t;
    return t;
}

/* Adds a metric to the last task added. */
static void
task_metric(struct dump *x, Cluster__TaskMetrics *t, const char *name, const char *value)
{
    size_t i = x->nm;
    Cluster__Metric *m = metric(x, name, value);

    x->m_ptrs[i] = m;
    t->n_metrics++;
}

static char *
dumps(json_t *j)
{
    static char text[4096];
    char *s = json_dumps(j, JSON_COMPACT);

    snprintf(text, sizeof text, "%s", s);
    free(s);
    json_decref(j);
    return text;
}

static spate_id job, vertex;

/* Two subtasks of a vertex on one TaskManager, subtask 1 in its second
 * attempt (the first still in the dump). */
static struct metric_store *
sample_store(void)
{
    struct metric_store *s = metric_store_new();
    struct dump x;
    Cluster__TaskMetrics *t;

    id_random(&job);
    id_random(&vertex);
    dump_init(&x);
    x.tm_ptrs[0] = metric(&x, "Status.Shuffle.Netty.UsedMemorySegments", "3");
    x.d.n_taskmanager = 1;
    t = task(&x, &job, &vertex, 0, 0);
    task_metric(&x, t, "numRecordsIn", "10");
    task_metric(&x, t, "busyTimeMsPerSecond", "250.5");
    task_metric(&x, t, "backPressuredTimeMsPerSecond", "100");
    task_metric(&x, t, "idleTimeMsPerSecond", "649.5");
    task_metric(&x, t, "currentInputWatermark", "1000");
    task_metric(&x, t, "name", "not a number");
    t = task(&x, &job, &vertex, 1, 0);
    task_metric(&x, t, "numRecordsIn", "999");
    t = task(&x, &job, &vertex, 1, 1);
    task_metric(&x, t, "numRecordsIn", "30");
    task_metric(&x, t, "backPressuredTimeMsPerSecond", "600");
    task_metric(&x, t, "currentInputWatermark", "-9223372036854775808");
    task_metric(&x, t, "name", "also text");
    cr_assert_eq(metric_store_add(s, &x.d), 0);
    return s;
}

Test(metric_store, subtasks_taskmanagers_and_flinks_vertex_names)
{
    struct metric_store *s = sample_store();
    struct metric_component v;
    spate_id other;

    cr_assert_eq(metric_store_subtask_limit(s, &job, &vertex), 2);
    cr_assert_str_eq(
        metric_component_get(metric_store_subtask(s, &job, &vertex, 1), "numRecordsIn"), "30",
        "the latest attempt");
    cr_assert_null(metric_store_subtask(s, &job, &vertex, 2));
    id_random(&other);
    cr_assert_null(metric_store_subtask(s, &other, &vertex, 0));
    cr_assert_eq(metric_store_subtask_limit(s, &job, &other), 0);
    metric_store_vertex(s, &job, &vertex, &v);
    cr_assert_str_eq(metric_component_get(&v, "0.numRecordsIn"), "10");
    cr_assert_str_eq(metric_component_get(&v, "1.numRecordsIn"), "30");
    cr_assert_null(metric_component_get(&v, "numRecordsIn"));
    metric_component_release(&v);
    metric_store_free(s);
}

Test(metric_store, a_dump_with_malformed_ids_is_skipped_where_it_is_wrong)
{
    struct metric_store *s = metric_store_new();
    struct dump x;
    Cluster__TaskMetrics *t;

    dump_init(&x);
    x.d.resource_id.len = 3;
    t = task(&x, &job, &vertex, 0, 0);
    t->vertex_id.len = 15;
    task(&x, &job, &vertex, -1, 0);
    t = task(&x, &job, &vertex, 2, 0);
    task_metric(&x, t, "numRecordsIn", "1");
    cr_assert_eq(metric_store_add(s, &x.d), 3, "the TaskManager's id and two tasks");
    cr_assert_eq(metric_store_subtask_limit(s, &job, &vertex), 3);
    metric_store_free(s);
}

Test(metric_store, values_without_and_with_get)
{
    struct metric_component c = { 0 };

    cr_assert_str_eq(dumps(metric_json_values(NULL, "a")), "[]");
    metric_component_put(&c, "a", "1");
    metric_component_put(&c, "b.c", "x y");
    metric_component_put(&c, "a", "2"); /* replaced */
    cr_assert_str_eq(dumps(metric_json_values(&c, NULL)), "[{\"id\":\"a\"},{\"id\":\"b.c\"}]");
    cr_assert_str_eq(dumps(metric_json_values(&c, "")), "[{\"id\":\"a\"},{\"id\":\"b.c\"}]");
    cr_assert_str_eq(dumps(metric_json_values(&c, "b.c, nosuch,,a,a")),
                     "[{\"id\":\"b.c\",\"value\":\"x y\"},{\"id\":\"a\",\"value\":\"2\"}]");
    metric_component_release(&c);
}

Test(metric_store, aggregation_and_subtask_parameters)
{
    spate_error err = { 0 };
    bool sel[6];
    unsigned aggs;

    cr_assert_eq(metric_parse_aggregations(NULL, &aggs, &err), 0);
    cr_assert_eq(aggs, METRIC_AGG_ALL);
    cr_assert_eq(metric_parse_aggregations("MIN, sum", &aggs, &err), 0);
    cr_assert_eq(aggs, METRIC_AGG_MIN | METRIC_AGG_SUM);
    cr_assert_eq(metric_parse_aggregations("min,p99", &aggs, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "agg: 'p99' is not an aggregation") != NULL, "%s", err.message);
    cr_assert_eq(metric_parse_subtasks("0,2-3,9", sel, 6, &err), 0);
    cr_assert(sel[0] && !sel[1] && sel[2] && sel[3] && !sel[4] && !sel[5]);
    cr_assert_eq(metric_parse_subtasks(NULL, sel, 6, &err), 0);
    cr_assert(sel[0] && sel[1] && sel[5]);
    for (const char *const *bad = (const char *const[]){ "1-x", "-1", "a", "3-", "1.5", NULL };
         *bad != NULL; bad++) {
        cr_assert_eq(metric_parse_subtasks(*bad, sel, 6, &err), SPATE_EINVAL, "%s", *bad);
        cr_assert(strstr(err.message, *bad) != NULL, "%s", err.message);
    }
}

Test(metric_store, aggregates_over_subtasks)
{
    struct metric_store *s = sample_store();
    const struct metric_component *cs[] = { metric_store_subtask(s, &job, &vertex, 0),
                                            metric_store_subtask(s, &job, &vertex, 1), NULL };

    cr_assert_str_eq(
        dumps(
            metric_json_aggregate(cs, 3, "numRecordsIn,busyTimeMsPerSecond,name", METRIC_AGG_ALL)),
        "[{\"id\":\"numRecordsIn\",\"min\":10.0,\"max\":30.0,\"avg\":20.0,\"sum\":40.0},"
        "{\"id\":\"busyTimeMsPerSecond\",\"min\":250.5,\"max\":250.5,\"avg\":250.5,\"sum\":250.5}"
        "]");
    cr_assert_str_eq(dumps(metric_json_aggregate(cs, 2, "numRecordsIn", METRIC_AGG_MAX)),
                     "[{\"id\":\"numRecordsIn\",\"max\":30.0}]");
    /* Without get: the union of the names, once each. */
    cr_assert_str_eq(dumps(metric_json_aggregate(cs + 1, 1, NULL, METRIC_AGG_ALL)),
                     "[{\"id\":\"numRecordsIn\"},{\"id\":\"backPressuredTimeMsPerSecond\"},"
                     "{\"id\":\"currentInputWatermark\"},{\"id\":\"name\"}]");
    metric_store_free(s);
}

Test(metric_store, watermarks_of_the_subtasks_that_have_one)
{
    struct metric_store *s = sample_store();

    cr_assert_str_eq(dumps(metric_json_watermarks(s, &job, &vertex, 3)),
                     "[{\"id\":\"0.currentInputWatermark\",\"value\":\"1000\"},"
                     "{\"id\":\"1.currentInputWatermark\",\"value\":\"-9223372036854775808\"}]");
    metric_store_free(s);
}

Test(metric_store, back_pressure_as_flinks_handler_computes_it)
{
    struct metric_store *s = sample_store();
    spate_id other;

    cr_assert_str_eq(metric_backpressure_level(0.0), "ok");
    cr_assert_str_eq(metric_backpressure_level(0.10), "ok");
    cr_assert_str_eq(metric_backpressure_level(0.1001), "low");
    cr_assert_str_eq(metric_backpressure_level(0.5), "low");
    cr_assert_str_eq(metric_backpressure_level(0.51), "high");
    /* The worst subtask sets the vertex's level; absent ratios are 0. */
    cr_assert_str_eq(
        dumps(metric_json_backpressure(s, &job, &vertex, 1234)),
        "{\"status\":\"ok\",\"backpressureLevel\":\"high\",\"end-timestamp\":1234,\"subtasks\":["
        "{\"subtask\":0,\"backpressureLevel\":\"ok\",\"ratio\":0.10000000000000001,"
        "\"idleRatio\":0.64949999999999997,\"busyRatio\":0.2505},"
        "{\"subtask\":1,\"backpressureLevel\":\"high\",\"ratio\":0.59999999999999998,"
        "\"idleRatio\":0.0,\"busyRatio\":0.0}]}");
    id_random(&other);
    cr_assert_str_eq(dumps(metric_json_backpressure(s, &job, &other, 1)),
                     "{\"status\":\"deprecated\"}");
    metric_store_free(s);
}
