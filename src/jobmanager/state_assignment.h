/* Which state each subtask restores (Flink's StateAssignmentOperation): from
 * a completed checkpoint or a savepoint, decoded with absolute paths, to the
 * TaskRestore of one subtask of a job graph whose parallelism may differ
 * from the one the state was taken at. Operators match by operator id.
 * Keyed state goes by key group ranges: a subtask gets, per operator, every
 * KeyedStateHandle that overlaps its range, cut to the overlap. Operator
 * list state: at the same parallelism a subtask keeps its own (union state
 * goes to all); at another, SPLIT_DISTRIBUTE elements are split evenly in
 * order, UNION elements go to every subtask, and BROADCAST state of old
 * subtask i % old parallelism to new subtask i. Pure functions of their
 * arguments; the JobMaster calls them on its loop thread.
 *
 * Handle layout assumed when a keyed handle is cut (at another
 * parallelism only): offsets are absolute file positions, key group
 * start + i begins at offsets[i], the handle's data is the contiguous
 * [offsets[0], offsets[0] + length); so key group i ends where i + 1
 * begins, the last at offsets[0] + length. */
#ifndef SPATE_JOBMANAGER_STATE_ASSIGNMENT_H
#define SPATE_JOBMANAGER_STATE_ASSIGNMENT_H

#include <stdbool.h>

#include <spate/error.h>

#include "proto/checkpoint.pb-c.h"
#include "streaming/job_graph.h"

/* Before assigning: every operator of md that has state is in jg (unless
 * allow_non_restored: it is skipped with a log line), and an operator with
 * keyed state keeps its max parallelism. Errors name the operator (uid,
 * name, id) and what (the metadata file) in where. */
int state_assignment_check(const Checkpoint__CheckpointMetadata *md, const struct job_graph *jg,
                           bool allow_non_restored, const char *where, spate_error *err);

/* Whether subtask `subtask` of vertex `vertex` is restored finished
 * (FLIP-147): every operator of the vertex is in md, and either every
 * subtask of it had finished (at any parallelism) or, at the parallelism
 * md recorded, this subtask had. */
bool state_assignment_finished(const Checkpoint__CheckpointMetadata *md, const struct job_graph *jg,
                               int vertex, int subtask);

/* The TaskRestore of subtask `subtask` of vertex `vertex` of jg: the
 * checkpoint id and, per operator of the vertex that has state in md, its
 * handles; for a subtask restored finished, `finished` and no operators.
 * Always returned (operators may be empty: the subtask restores
 * from checkpoint md but has nothing to read). Allocated for
 * checkpoint__task_restore__free_unpacked(r, NULL). */
Checkpoint__TaskRestore *state_assignment_subtask(const Checkpoint__CheckpointMetadata *md,
                                                  const struct job_graph *jg, int vertex,
                                                  int subtask);

/* Whether an operator's state in md holds anything to restore. */
bool state_assignment_has_state(const Checkpoint__OperatorState *op);

#endif
