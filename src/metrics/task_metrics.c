/* A task's I/O metric group (task_metrics.h). */
#include <stdio.h>
#include <stdlib.h>

#include "core/clock.h"
#include "metrics/task_metrics.h"

void
task_io_metrics_init(struct task_io_metrics *m)
{
    memset(m, 0, sizeof *m);
    metric_gauge_set(&m->input_watermark, INT64_MIN);
    metric_gauge_set(&m->output_watermark, INT64_MIN);
}

void
task_io_metrics_register(struct task_io_metrics *m, struct metric_registry *r, const char *scope,
                         const char *const *labels, unsigned flags)
{
    struct metric_group *g = metric_group_new_scoped(r, scope, "taskmanager_job_task", labels);

    m->start_ns = clock_mono_ns();
    metric_group_counter(g, "numRecordsIn", &m->num_records_in);
    metric_group_counter(g, "numRecordsOut", &m->num_records_out);
    metric_group_counter(g, "numBytesIn", &m->num_bytes_in);
    metric_group_counter(g, "numBytesOut", &m->num_bytes_out);
    metric_group_meter(g, "numRecordsInPerSecond", &m->num_records_in);
    metric_group_meter(g, "numRecordsOutPerSecond", &m->num_records_out);
    metric_group_meter(g, "numBytesInPerSecond", &m->num_bytes_in);
    metric_group_meter(g, "numBytesOutPerSecond", &m->num_bytes_out);
    metric_group_time_rest(g, "busyTimeMsPerSecond", &m->idle, &m->back_pressured);
    metric_group_time_rate(g, "idleTimeMsPerSecond", &m->idle);
    metric_group_time_rate(g, "backPressuredTimeMsPerSecond", &m->back_pressured);
    metric_group_time_total_rest(g, "accumulatedBusyTimeMs", &m->idle, &m->back_pressured,
                                 m->start_ns);
    metric_group_time_total(g, "accumulatedIdleTimeMs", &m->idle);
    metric_group_time_total(g, "accumulatedBackPressuredTimeMs", &m->back_pressured);
    metric_group_ratio(g, "buffers.inPoolUsage", &m->in_pool_used, &m->in_pool_capacity);
    metric_group_ratio(g, "buffers.outPoolUsage", &m->out_pool_used, &m->out_pool_capacity);
    if (flags & TASK_IO_INPUT_WATERMARK)
        metric_group_gauge(g, "currentInputWatermark", &m->input_watermark);
    if (flags & TASK_IO_OUTPUT_WATERMARK)
        metric_group_gauge(g, "currentOutputWatermark", &m->output_watermark);
    m->group = g;
}

void
task_io_metrics_release(struct task_io_metrics *m)
{
    metric_group_free(m->group);
    m->group = NULL;
}

void
task_io_metrics_totals(struct task_io_metrics *m, uint64_t now_ns, struct task_io_totals *t)
{
    uint64_t idle = metric_timer_read(&m->idle, now_ns);
    uint64_t bp = metric_timer_read(&m->back_pressured, now_ns);
    uint64_t all = m->start_ns != 0 && now_ns > m->start_ns ? now_ns - m->start_ns : 0;

    t->records_in = metric_counter_get(&m->num_records_in);
    t->records_out = metric_counter_get(&m->num_records_out);
    t->bytes_in = metric_counter_get(&m->num_bytes_in);
    t->bytes_out = metric_counter_get(&m->num_bytes_out);
    t->idle_ms = idle / 1000000u;
    t->back_pressured_ms = bp / 1000000u;
    t->busy_ms = all > idle + bp ? (all - idle - bp) / 1000000u : 0;
}

void
task_io_scope_format(char *buf, size_t cap, const spate_id *job, const spate_id *vertex,
                     int subtask, int attempt)
{
    snprintf(buf, cap, "%s.%s.%d.%d", id_str(job).s, id_str(vertex).s, subtask, attempt);
}

bool
task_io_scope_parse(const char *scope, spate_id *job, spate_id *vertex, int *subtask, int *attempt)
{
    char j[ID_HEX_LEN + 1], v[ID_HEX_LEN + 1];
    int used = 0;

    if (sscanf(scope, "%32[0-9a-f].%32[0-9a-f].%d.%d%n", j, v, subtask, attempt, &used) != 4 ||
        scope[used] != '\0' || *subtask < 0 || *attempt < 0)
        return false;
    return id_parse(j, job, NULL) == 0 && id_parse(v, vertex, NULL) == 0;
}
