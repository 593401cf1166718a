/* Result partitions (Flink's PipelinedResultPartition): one subpartition per
 * consumer, each a queue of finished buffers for its one reader (a local
 * channel, or the I/O thread for a remote consumer), a mutex each. Registered
 * in the partition manager until consumed or failed; reference counted, so it
 * outlives its producer task until its consumers are done. */
#ifndef SPATE_NETWORK_RESULT_PARTITION_H
#define SPATE_NETWORK_RESULT_PARTITION_H

#include <stdint.h>

#include <spate/error.h>

#include "core/notifier.h"
#include "metrics/task_metrics.h"
#include "network/net_env.h"
#include "network/partition_id.h"

struct result_partition;

/* Registers a partition of num_subpartitions with env's partition manager.
 * Its local pool takes num_subpartitions + 1 buffers at once and up to
 * buffers-per-channel × num_subpartitions + floating-per-gate (Flink's
 * sizes). producer (the producing task's notifier) is poked when a buffer
 * comes back after the pool ran dry, and when the partition fails. metrics
 * (may be NULL) gets outPoolUsage. Producer task thread. */
int result_partition_new(struct net_env *env, const struct result_partition_id *id,
                         uint32_t num_subpartitions, struct notifier *producer,
                         struct task_io_metrics *metrics, struct result_partition **out,
                         spate_error *err);
/* The producer is done with rp: after record_writer_finish (cause NULL), or
 * failing or cancelled (cause says why; its consumers fail with it). The
 * partition stays readable until its consumers are done. */
void result_partition_release(struct result_partition *rp, const spate_error *cause);
/* 0, or the error that failed the partition (a consumer that went away). */
int result_partition_check(struct result_partition *rp, spate_error *err);
const struct result_partition_id *result_partition_id(const struct result_partition *rp);
uint32_t result_partition_num_subpartitions(const struct result_partition *rp);

#endif
