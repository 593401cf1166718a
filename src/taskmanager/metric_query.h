/* A TaskManager's metric dump (Flink's MetricQueryService): its own metrics
 * (network buffers: Status.Shuffle.Netty.*MemorySegments; the process:
 * Status.Process.*) and those of each task registered in its registry,
 * grouped by job, vertex, subtask and attempt, values as text. The
 * TaskExecutor answers request_metric_dump with it. Loop thread (the registry
 * has its own lock). */
#ifndef SPATE_TASKMANAGER_METRIC_QUERY_H
#define SPATE_TASKMANAGER_METRIC_QUERY_H

#include "core/id.h"
#include "metrics/metrics.h"
#include "network/net_env.h"
#include "proto/cluster.pb-c.h"

/* Fills out (net may be NULL: no network metrics). Release with
 * metric_query_dump_release. */
void metric_query_dump(struct metric_registry *r, struct net_env *net, const spate_id *resource_id,
                       Cluster__MetricDump *out);
void metric_query_dump_release(Cluster__MetricDump *out);

#endif
