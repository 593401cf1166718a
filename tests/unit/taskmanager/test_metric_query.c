/* Unit tests of src/taskmanager/metric_query.c: a TaskManager's metric dump
 * groups its registry by task (the ids its scopes name) and carries its own
 * metrics, values as Flink's dumps write them. */
#include <criterion/criterion.h>
#include <string.h>

#include "metrics/task_metrics.h"
#include "rpc/gateways.h"
#include "taskmanager/metric_query.h"

static const char *
value_of(Cluster__Metric *const *ms, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(ms[i]->name, name) == 0)
            return ms[i]->value;
    return NULL;
}

Test(metric_query, a_dump_per_task_and_the_taskmanagers_own)
{
    struct metric_registry *r = metric_registry_new();
    struct task_io_metrics a, b;
    struct tm_metric_group own;
    struct metric_counter other = { 0 };
    struct metric_group *g = metric_group_new(r, "not a task");
    char scope[TASK_IO_SCOPE_MAX];
    Cluster__MetricDump d;
    spate_id job, vertex, tm, id;

    id_random(&job);
    id_random(&vertex);
    id_random(&tm);
    metric_group_counter(g, "somethingElse", &other);
    task_io_metrics_init(&a);
    task_io_metrics_init(&b);
    task_io_scope_format(scope, sizeof scope, &job, &vertex, 0, 0);
    task_io_metrics_register(&a, r, scope, NULL, TASK_IO_INPUT_WATERMARK);
    task_io_scope_format(scope, sizeof scope, &job, &vertex, 1, 2);
    task_io_metrics_register(&b, r, scope, NULL, 0);
    metric_counter_add(&a.num_records_in, 42);
    metric_gauge_set(&a.input_watermark, 77);

    tm_metric_group_register(&own, r, NULL, &tm, "localhost");
    metric_query_dump(r, &tm, &d);
    cr_assert(gw_id_get(&d.resource_id, &id) && id_equal(&id, &tm));
    cr_assert_eq(d.n_tasks, 2);
    for (size_t i = 0; i < d.n_tasks; i++) {
        const Cluster__TaskMetrics *t = d.tasks[i];

        cr_assert(gw_id_get(&t->job_id, &id) && id_equal(&id, &job));
        cr_assert(gw_id_get(&t->vertex_id, &id) && id_equal(&id, &vertex));
        if (t->subtask == 0) {
            cr_assert_eq(t->attempt, 0);
            cr_assert_str_eq(value_of(t->metrics, t->n_metrics, "numRecordsIn"), "42");
            cr_assert_str_eq(value_of(t->metrics, t->n_metrics, "currentInputWatermark"), "77");
        } else {
            cr_assert_eq(t->subtask, 1);
            cr_assert_eq(t->attempt, 2);
            cr_assert_null(value_of(t->metrics, t->n_metrics, "currentInputWatermark"));
            cr_assert_not_null(value_of(t->metrics, t->n_metrics, "busyTimeMsPerSecond"));
        }
    }
    /* Not a task's scope: the TaskManager's; and the process's figures. */
    cr_assert_str_eq(value_of(d.taskmanager, d.n_taskmanager, "somethingElse"), "0");
    cr_assert_not_null(value_of(d.taskmanager, d.n_taskmanager, "Status.Process.Memory.RSS"));
    cr_assert_null(
        value_of(d.taskmanager, d.n_taskmanager, "Status.Shuffle.Netty.TotalMemorySegments"),
        "no network environment, no network metrics");
    metric_query_dump_release(&d);
    task_io_metrics_release(&a);
    task_io_metrics_release(&b);
    tm_metric_group_release(&own);
    metric_group_free(g);
    metric_registry_free(r);
}
