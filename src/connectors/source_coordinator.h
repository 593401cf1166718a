/* The source coordinator (Flink's SourceCoordinator with its
 * SplitAssignmentTracker): hosts one source operator's split enumerator
 * (include/spate/source.h) on the JobMaster, queues the splits it assigns
 * until their reader asks (jm.request_split), snapshots the enumerator and
 * the unfetched assignments at each checkpoint, and on a restore gives the
 * enumerator back the splits that restarting readers fetched after the
 * restored checkpoint (add_split_back). Owned by the JobMaster's endpoint;
 * no locks. */
#ifndef SPATE_JOBMANAGER_SOURCE_COORDINATOR_H
#define SPATE_JOBMANAGER_SOURCE_COORDINATOR_H

#include <stdbool.h>

#include <spate/source.h>

#include "proto/checkpoint.pb-c.h"
#include "proto/cluster.pb-c.h"

struct source_coordinator;

struct operator_settings;

/* The coordinator of the source of operator settings
 * (source_operator_source) with parallelism readers, its enumerator created
 * fresh or from state; settings must outlive it. Errors: not a source, the
 * enumerator's. */
int source_coordinator_new(const struct operator_settings *settings, int parallelism,
                           const Checkpoint__SourceCoordinatorState *state,
                           struct source_coordinator **out, spate_error *err);
void source_coordinator_free(struct source_coordinator *c);

/* A request of reader subtask, which took its state last in checkpoint
 * last_checkpoint (0: none): out gets the splits assigned to it since its
 * last request (borrowed until the next call on c) and whether no more
 * will come. Nothing while the reader has not yet taken its state in the
 * checkpoint of the last snapshot (Flink's closed event valve): a split it
 * got between the two would be both in the enumerator's state and in its
 * own. Errors: a coordinator whose enumerator a restore could not make. */
int source_coordinator_request(struct source_coordinator *c, int subtask, bool register_reader,
                               bool request_split, int64_t last_checkpoint,
                               Cluster__SplitAssignment *out, spate_error *err);

/* The enumerator and the unfetched assignments for checkpoint_id, just
 * before its barriers leave; free with
 * checkpoint__source_coordinator_state__free_unpacked(s, NULL). */
Checkpoint__SourceCoordinatorState *source_coordinator_snapshot(struct source_coordinator *c,
                                                                int64_t checkpoint_id);
/* Checkpoint checkpoint_id completed or was given up: readers that never
 * took their state in it get their splits again. */
void source_coordinator_checkpoint_ended(struct source_coordinator *c, int64_t checkpoint_id);

/* The readers with restarting[subtask] set (NULL: all) restart from state
 * (NULL: from nothing). When all restart from a state, the enumerator is
 * that state's; otherwise the splits the restarting readers fetched since
 * state's snapshot (all they fetched, without one) go back to it. Errors:
 * the enumerator's (the coordinator then has none and fails requests). */
int source_coordinator_restore(struct source_coordinator *c,
                               const Checkpoint__SourceCoordinatorState *state,
                               const bool *restarting, spate_error *err);

#endif
