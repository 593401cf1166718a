/* A task's I/O metrics with Flink's names (TaskIOMetricGroup): records and
 * bytes in and out, idle and back-pressured time (busy is the rest), and the
 * usage of its input and output buffer pools. The task thread owns the
 * counters and timers; pool usage levels are added to by the threads that
 * request and recycle buffers; the registry's reader reads them all. */
#ifndef SPATE_METRICS_TASK_METRICS_H
#define SPATE_METRICS_TASK_METRICS_H

#include "metrics/metrics.h"

struct task_io_metrics {
    struct metric_counter num_records_in;
    struct metric_counter num_records_out;
    struct metric_counter num_bytes_in;
    struct metric_counter num_bytes_out;
    struct metric_timer idle;           /* waiting for input */
    struct metric_timer back_pressured; /* waiting for an output buffer */
    struct metric_level in_pool_used, in_pool_capacity;
    struct metric_level out_pool_used, out_pool_capacity;
    struct metric_group *group;
};

/* Zeroes m. */
void task_io_metrics_init(struct task_io_metrics *m);
/* Registers m's metrics under scope: numRecordsIn, numRecordsOut, numBytesIn,
 * numBytesOut, their ...PerSecond meters, busyTimeMsPerSecond,
 * idleTimeMsPerSecond, backPressuredTimeMsPerSecond, buffers.inPoolUsage,
 * buffers.outPoolUsage. */
void task_io_metrics_register(struct task_io_metrics *m, struct metric_registry *r,
                              const char *scope);
/* Unregisters (if registered). */
void task_io_metrics_release(struct task_io_metrics *m);

#endif
