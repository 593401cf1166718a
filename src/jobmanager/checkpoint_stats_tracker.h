/* The checkpoint statistics of one job (Flink's CheckpointStatsTracker):
 * counts (triggered, completed, failed, restored), a history of the latest
 * checkpoints (in progress, completed, failed) with their figures per
 * vertex, the latest completed, failed and restored ones, and summaries of
 * state size and end-to-end duration over the last 1000 completed. The
 * CheckpointCoordinator reports to it; REST reads it through
 * checkpoint_coordinator_stats. Loop thread (the coordinator's). */
#ifndef SPATE_JOBMANAGER_CHECKPOINT_STATS_TRACKER_H
#define SPATE_JOBMANAGER_CHECKPOINT_STATS_TRACKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jobmanager/execution_graph.h"
#include "proto/checkpoint.pb-c.h"
#include "proto/checkpoint_stats.pb-c.h"

struct checkpoint_stats_tracker;

/* jg is borrowed and outlives the tracker; history_size > 0 checkpoints
 * are kept in the history (never dropping one in progress). */
struct checkpoint_stats_tracker *checkpoint_stats_tracker_new(const struct job_graph *jg,
                                                              int history_size);
void checkpoint_stats_tracker_free(struct checkpoint_stats_tracker *t);

/* Checkpoint id (a savepoint when savepoint is set) was triggered at
 * trigger_ms, waiting for ntasks running tasks; the plan's finished tasks
 * count as acknowledged, as Flink shows them. */
void checkpoint_stats_tracker_report_pending(struct checkpoint_stats_tracker *t, uint64_t id,
                                             bool savepoint, int64_t trigger_ms, int ntasks,
                                             const struct execution *const *finished,
                                             int nfinished);
/* A subtask's acknowledgement: its state's bytes, and the durations (ms)
 * the task measured: on the task thread, on its snapshot thread, the
 * barriers' alignment. */
struct checkpoint_ack_stats {
    uint64_t state_size;
    int64_t sync_ms, async_ms, alignment_ms;
};

/* Subtask of vertex acknowledged id with a at now_ms. */
void checkpoint_stats_tracker_report_ack(struct checkpoint_stats_tracker *t, uint64_t id,
                                         int vertex, int subtask,
                                         const struct checkpoint_ack_stats *a, int64_t now_ms);
/* id completed in external_path; the checkpoints it subsumed are
 * discarded. */
void checkpoint_stats_tracker_report_completed(struct checkpoint_stats_tracker *t, uint64_t id,
                                               const char *external_path, const uint64_t *subsumed,
                                               size_t nsubsumed);
/* id failed (or was aborted) at now_ms for reason. */
void checkpoint_stats_tracker_report_failed(struct checkpoint_stats_tracker *t, uint64_t id,
                                            int64_t now_ms, const char *reason);
/* The job restored checkpoint md from path at now_ms. */
void checkpoint_stats_tracker_report_restored(struct checkpoint_stats_tracker *t,
                                              const Checkpoint__CheckpointMetadata *md,
                                              const char *path, int64_t now_ms);

/* The statistics with the job's settings (checkpoint_id > 0: only that
 * checkpoint in the history, when it is there). Allocated for
 * ckstats__checkpointing_stats__free_unpacked(s, NULL). */
Ckstats__CheckpointingStats *
checkpoint_stats_tracker_snapshot(const struct checkpoint_stats_tracker *t,
                                  const struct checkpoint_settings *cfg, int64_t checkpoint_id);
/* The job's checkpoint metrics (Flink's CheckpointStatsTracker gauges):
 * counts, and the latest completed one's duration and size (-1: none yet),
 * the latest restore's time (-1: none). */
struct checkpoint_stats_counts {
    int64_t total, in_progress, completed, failed, restored;
    int64_t last_id, last_duration_ms, last_size, last_restore_ms;
};
void checkpoint_stats_tracker_counts(const struct checkpoint_stats_tracker *t,
                                     struct checkpoint_stats_counts *c);

/* Checkpoints completed since the tracker was made. */
int64_t checkpoint_stats_tracker_completed(const struct checkpoint_stats_tracker *t);

#endif
