/* A task's I/O metrics with Flink's names (TaskIOMetricGroup): records and
 * bytes in and out, idle, back-pressured and busy time, the usage of its
 * buffer pools, its input and output watermarks; its scope
 * (<job>.<vertex>.<subtask>.<attempt>, which a TaskManager's metric dump
 * parses back) and its totals when it ends (Flink's IOMetrics). The task
 * thread owns the counters, timers and gauges; pool levels take adds from the
 * threads that request and recycle buffers; the registry's reader reads them
 * all. */
#ifndef SPATE_METRICS_TASK_METRICS_H
#define SPATE_METRICS_TASK_METRICS_H

#include "core/id.h"
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
    /* Event time: the minimum over the input gates, and the least of what
     * the outputs last sent (INT64_MIN before the first watermark). */
    struct metric_gauge input_watermark, output_watermark;
    /* The streaming task counts records itself, since not every element a
     * reader or writer moves is a record (watermarks are not): the network
     * layer then leaves num_records_in and num_records_out alone. */
    bool task_counts_records;
    uint64_t start_ns; /* when registered: busy time counts from here */
    struct metric_group *group;
};

/* What task_io_metrics_register adds besides the I/O group. */
enum {
    TASK_IO_INPUT_WATERMARK = 1,  /* currentInputWatermark: the task has inputs */
    TASK_IO_OUTPUT_WATERMARK = 2, /* currentOutputWatermark: the task has outputs */
};

/* Zeroes m; watermarks start at INT64_MIN. */
void task_io_metrics_init(struct task_io_metrics *m);
/* Registers m's metrics under scope (a reporter's kind
 * "taskmanager_job_task" with labels, key, value, ..., NULL; may be NULL):
 * numRecordsIn, numRecordsOut, numBytesIn,
 * numBytesOut, their ...PerSecond meters, busyTimeMsPerSecond,
 * idleTimeMsPerSecond, backPressuredTimeMsPerSecond, accumulatedBusyTimeMs,
 * accumulatedIdleTimeMs, accumulatedBackPressuredTimeMs, buffers.inPoolUsage,
 * buffers.outPoolUsage, and the watermarks flags asks for. */
void task_io_metrics_register(struct task_io_metrics *m, struct metric_registry *r,
                              const char *scope, const char *const *labels, unsigned flags);
/* Unregisters (if registered). */
void task_io_metrics_release(struct task_io_metrics *m);

/* A task's totals when it ends (Flink's IOMetrics, kept by the JobMaster). */
struct task_io_totals {
    uint64_t records_in, records_out, bytes_in, bytes_out;
    uint64_t idle_ms, back_pressured_ms, busy_ms;
};
void task_io_metrics_totals(struct task_io_metrics *m, uint64_t now_ns, struct task_io_totals *t);

/* The scope of a task's group, which a TaskManager's metric dump names it
 * by: "<job id>.<vertex id>.<subtask>.<attempt>". */
#define TASK_IO_SCOPE_MAX 96
void task_io_scope_format(char *buf, size_t cap, const spate_id *job, const spate_id *vertex,
                          int subtask, int attempt);
/* false: not a task's scope. */
bool task_io_scope_parse(const char *scope, spate_id *job, spate_id *vertex, int *subtask,
                         int *attempt);

#endif
