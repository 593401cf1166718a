/* A TaskManager's metric dump (Flink's MetricQueryService): its own metrics
 * (its group: network buffers, Status.Shuffle.Netty.*MemorySegments, and
 * the process, Status.Process.*) and those of each task registered in its
 * registry, grouped by job, vertex, subtask and attempt, values as text. The
 * TaskExecutor answers request_metric_dump with it; reporters read the same
 * registry. Loop thread (the registry has its own lock). */
#ifndef SPATE_TASKMANAGER_METRIC_QUERY_H
#define SPATE_TASKMANAGER_METRIC_QUERY_H

#include "core/id.h"
#include "metrics/metrics.h"
#include "metrics/process_metrics.h"
#include "network/net_env.h"
#include "proto/cluster.pb-c.h"

/* The TaskManager's own group (Flink's TaskManagerMetricGroup: scope
 * "taskmanager", variables host and tm_id), gauges its owner refreshes. */
struct tm_metric_group {
    struct net_env *net; /* NULL: no network metrics */
    struct process_metric_gauges process;
    struct metric_gauge segments_total, segments_available, segments_used;
    struct metric_gauge memory_total, memory_available, memory_used; /* bytes */
    struct metric_group *group;
};

void tm_metric_group_register(struct tm_metric_group *m, struct metric_registry *r,
                              struct net_env *net, const spate_id *resource_id, const char *host);
/* Reads the figures anew (the owner's thread). */
void tm_metric_group_refresh(struct tm_metric_group *m);
void tm_metric_group_release(struct tm_metric_group *m);

/* Fills out from r: groups that are not a task's are the TaskManager's.
 * Release with metric_query_dump_release. */
void metric_query_dump(struct metric_registry *r, const spate_id *resource_id,
                       Cluster__MetricDump *out);
void metric_query_dump_release(Cluster__MetricDump *out);

#endif
