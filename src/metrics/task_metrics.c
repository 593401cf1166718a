/* A task's I/O metric group (task_metrics.h). */
#include "metrics/task_metrics.h"

void
task_io_metrics_init(struct task_io_metrics *m)
{
    memset(m, 0, sizeof *m);
}

void
task_io_metrics_register(struct task_io_metrics *m, struct metric_registry *r, const char *scope)
{
    struct metric_group *g = metric_group_new(r, scope);

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
    metric_group_ratio(g, "buffers.inPoolUsage", &m->in_pool_used, &m->in_pool_capacity);
    metric_group_ratio(g, "buffers.outPoolUsage", &m->out_pool_used, &m->out_pool_capacity);
    m->group = g;
}

void
task_io_metrics_release(struct task_io_metrics *m)
{
    metric_group_free(m->group);
    m->group = NULL;
}
