/* The process's own figures for a TaskManager's and the JobManager's metrics
 * (where Flink reports its JVM's): CPU time, resident memory and threads,
 * read from /proc/self/stat, reported as Status.Process.CPU.Time (ms),
 * Status.Process.Memory.RSS (bytes) and Status.Process.Threads.Count. Any
 * thread. */
#ifndef SPATE_METRICS_PROCESS_METRICS_H
#define SPATE_METRICS_PROCESS_METRICS_H

#include <stdint.h>

#include "metrics/metrics.h"

struct process_metrics {
    int64_t cpu_time_ms; /* user + system */
    int64_t rss_bytes;
    int64_t threads;
};

/* 0, or SPATE_EIO when /proc/self/stat cannot be read (then pm is zeroed). */
int process_metrics_read(struct process_metrics *pm);

/* The same figures as gauges of a process's group (a TaskManager's, the
 * JobManager's), for reporters and metric dumps. One thread refreshes them
 * (the owner's), readers read the registry. */
struct process_metric_gauges {
    struct metric_gauge cpu_time_ms, rss_bytes, threads;
};

/* Adds Status.Process.CPU.Time, .Memory.RSS and .Threads.Count to g and
 * reads them a first time. */
void process_metric_gauges_register(struct process_metric_gauges *pg, struct metric_group *g);
void process_metric_gauges_refresh(struct process_metric_gauges *pg);

#endif
