/* The CheckpointCoordinator (Flink's), owned by a JobMaster:
 * triggers checkpoints periodically (interval, timeout, min pause, max
 * concurrent) while every execution runs or has finished (FLIP-147), with
 * ids from the HA checkpoint id counter. A checkpoint's plan (Flink's
 * CheckpointPlanCalculator): it triggers the running executions none of
 * whose upstream executions runs (sources, and tasks whose inputs all
 * ended), waits for every running one and records the finished ones in
 * `_metadata` as finished. It collects every running execution's
 * acknowledgement (or a decline); writes `_metadata` under
 * <checkpoints dir>/<job id>/chk-<n>/ once all have acknowledged, adds it to
 * the HA completed checkpoint store (older ones beyond num-retained are
 * subsumed, their folders deleted) and notifies every execution. Timeouts,
 * declines and failed writes abort a checkpoint (its folder is deleted, the
 * executions notified) and count toward the tolerable failures; one more
 * fails the job. Once every source finished, each task that finishes asks
 * for a checkpoint at once (the final checkpoint that two-phase-commit sinks
 * wait for before they finish). It also loads the latest completed checkpoint for a
 * restore, takes manual checkpoints, and reports to the statistics REST shows
 * (checkpoint_stats_tracker.h).
 *
 * Loop thread (the JobMaster's endpoint); everything that blocks (the id
 * counter, folders, `_metadata`, the stores) runs through ops->run_blocking.
 * The coordinator reads the ExecutionGraph it is given and never changes it,
 * except for reading the file sources' split assigners at each trigger. */
#ifndef SPATE_JOBMANAGER_CHECKPOINT_COORDINATOR_H
#define SPATE_JOBMANAGER_CHECKPOINT_COORDINATOR_H

#include <stdbool.h>
#include <stdint.h>

#include <spate/error.h>

#include "core/id.h"
#include "ha/stores.h"
#include "jobmanager/execution_graph.h"
#include "proto/checkpoint.pb-c.h"
#include "proto/checkpoint_stats.pb-c.h"

struct checkpoint_coordinator;

/* What the coordinator needs of its owner; owner is the first argument. */
struct checkpoint_coordinator_ops {
    /* fn(arg) after delay_ms on the loop; the handle cancels it until then. */
    void *(*schedule)(void *owner, int64_t delay_ms, void (*fn)(void *arg), void *arg);
    void (*cancel)(void *owner, void *timer);
    /* work(arg) on a worker thread, then done(arg) on the loop. */
    void (*run_blocking)(void *owner, void (*work)(void *arg), void (*done)(void *arg), void *arg);
    int64_t (*now_ms)(void *owner); /* wall clock */
    /* TE.trigger_checkpoint and TE.notify_checkpoint_complete / _aborted to
     * one execution's TaskExecutor (messages are borrowed). */
    void (*trigger)(void *owner, const struct execution *e, const Checkpoint__TriggerCheckpoint *m);
    void (*notify)(void *owner, const struct execution *e, bool completed,
                   const Checkpoint__CheckpointNotification *m);
    /* More failed checkpoints in a row than tolerated: a global failure of
     * the job (its restart strategy decides what follows). */
    void (*fail_job)(void *owner, const char *reason);
    /* Blocking, on a worker thread: 0 while the owner still leads (its
     * leadership confirmed by the HA services), else an error saying why.
     * The job's checkpoints are deleted only when this confirms: a former
     * leader, paused or cut off until its job ended, would delete what the
     * new leader recovers from. NULL: the owner always leads. */
    int (*confirm_leadership)(void *owner, spate_error *err);
};

struct checkpoint_coordinator_options {
    struct execution_graph *eg; /* borrowed; its graph's checkpointing settings apply */
    /* Owned from here on; NULL when the job has no checkpoints folder. */
    struct completed_checkpoint_store *store;
    struct checkpoint_id_counter *counter;
    const struct checkpoint_coordinator_ops *ops;
    void *owner;
    int history_size; /* checkpoints REST shows; 0: 10 (web.checkpoints.history) */
};

struct checkpoint_coordinator *
checkpoint_coordinator_new(const struct checkpoint_coordinator_options *o);
/* Frees everything; blocking work still in flight finds the coordinator
 * shut down (the owner keeps it alive until that work is done: the JobMaster
 * frees it when its endpoint's last reference goes). */
void checkpoint_coordinator_free(struct checkpoint_coordinator *cc);

/* Periodic checkpoints start (first after one interval): the owner calls
 * start when the job is RUNNING again; a tick triggers one when every
 * execution runs or has finished. */
void checkpoint_coordinator_start(struct checkpoint_coordinator *cc);
/* A failover: the periodic trigger stops, checkpoints in progress are
 * aborted without counting as failures (their acknowledgements would come
 * from attempts that are gone). One whose `_metadata` is being written
 * completes. */
void checkpoint_coordinator_suspend(struct checkpoint_coordinator *cc, const char *reason);
/* An execution finished: checkpoints in progress that it has not
 * acknowledged are aborted, not counted; later ones record it finished.
 * When every source has finished, a checkpoint is triggered at once (within
 * max concurrent and min pause) for the tasks still running. */
void checkpoint_coordinator_task_finished(struct checkpoint_coordinator *cc,
                                          const struct execution *e);

enum checkpoint_job_end { CC_JOB_FINISHED, CC_JOB_CANCELED, CC_JOB_FAILED, CC_JOB_SUSPENDED };
/* The job ended: checkpoints in progress are aborted; the stores are shut
 * down (globally unless suspended) and, unless the job's retention keeps
 * them, the completed checkpoints' folders deleted (blocking work). */
void checkpoint_coordinator_shutdown(struct checkpoint_coordinator *cc,
                                     enum checkpoint_job_end end);

/* TaskExecutor -> JobMaster (the handlers pass the messages on). Messages
 * of unknown or older checkpoints and attempts are ignored with a log
 * line. */
void checkpoint_coordinator_acknowledge(struct checkpoint_coordinator *cc,
                                        const Checkpoint__AcknowledgeCheckpoint *m);
void checkpoint_coordinator_decline(struct checkpoint_coordinator *cc,
                                    const Checkpoint__DeclineCheckpoint *m);

/* The latest completed checkpoint in the store, for a restore: its
 * `_metadata` read and checked, every state file present. cb(arg, rc, md,
 * path, err) runs once on the loop: rc 0 with md (the callee's: free with
 * checkpoint_metadata_free) and its `_metadata` path (valid during cb);
 * SPATE_ENOENT with md NULL when there is none; another error (a corrupt or
 * truncated `_metadata`, a missing state file) naming the file. Waits for a
 * checkpoint whose `_metadata` is being written. */
typedef void (*checkpoint_restore_cb)(void *arg, int rc, Checkpoint__CheckpointMetadata *md,
                                      const char *path, const spate_error *err);
void checkpoint_coordinator_load_latest(struct checkpoint_coordinator *cc, checkpoint_restore_cb cb,
                                        void *arg);
/* A restore from checkpoint md happened (statistics). */
void checkpoint_coordinator_restored(struct checkpoint_coordinator *cc,
                                     const Checkpoint__CheckpointMetadata *md, const char *path);

/* A manual checkpoint (POST /jobs/:jobid/checkpoints), under trigger_id
 * (the caller's or a random one). It waits for max-concurrent but not for
 * min-pause. One that cannot start (the job has no checkpoint folder, a task
 * is neither running nor finished, every task finished) is done at once,
 * its status saying why.
 * Error: a trigger id used before (SPATE_EEXIST). */
int checkpoint_coordinator_trigger_manual(struct checkpoint_coordinator *cc,
                                          const spate_id *trigger_id, spate_error *err);
/* A savepoint (Flink's triggerSavepoint / stopWithSavepoint), under
 * trigger_id like a manual checkpoint: its state files and `_metadata` go
 * to a folder of its own, target_dir/savepoint-<6 hex of the job id>-<12
 * random hex>, whose `_metadata` names them relative to it (the folder can
 * move). A savepoint is neither in the completed checkpoint store nor ever
 * deleted by the coordinator, and its failure does not count toward the
 * tolerable checkpoint failures. It waits for no max-concurrent. type is
 * SAVEPOINT, or SAVEPOINT_TERMINATE / _SUSPEND for a stop (the sources stop
 * after it; drain: event time ends first): no other checkpoint is triggered
 * while a stop's savepoint is in progress, and periodic checkpoints go on
 * if it fails. done (may be NULL) runs once on the loop when it ends
 * (location NULL when it failed, failure then says why), never inside this
 * call nor after the coordinator is freed. One that cannot start is done at
 * once with its reason, as a manual checkpoint, without calling done. Error:
 * a trigger id used before (SPATE_EEXIST). */
typedef void (*checkpoint_savepoint_done_fn)(void *arg, const spate_id *trigger_id,
                                             const char *location, const char *failure);
struct checkpoint_savepoint_request {
    const char *target_dir; /* absolute */
    Checkpoint__CheckpointType type;
    bool drain;
    checkpoint_savepoint_done_fn done;
    void *arg;
};
int checkpoint_coordinator_trigger_savepoint(struct checkpoint_coordinator *cc,
                                             const spate_id *trigger_id,
                                             const struct checkpoint_savepoint_request *r,
                                             spate_error *err);
/* Its status (manual checkpoints and savepoints alike; out->location is the
 * savepoint's folder, out->trigger_id and the strings point into cc): */
/* SPATE_ENOENT for an unknown trigger id. */
int checkpoint_coordinator_trigger_status(struct checkpoint_coordinator *cc,
                                          const spate_id *trigger_id, Ckstats__TriggerStatus *out,
                                          spate_error *err);

/* The status of every trigger remembered (for the Dispatcher's archive
 * of an ended job). Allocated for ckstats__trigger_statuses__free_unpacked. */
Ckstats__TriggerStatuses *
checkpoint_coordinator_trigger_statuses(struct checkpoint_coordinator *cc);

/* The statistics and settings (checkpoint_id > 0: only that checkpoint in
 * the history, when it is there). Allocated for
 * ckstats__checkpointing_stats__free_unpacked(s, NULL). */
Ckstats__CheckpointingStats *checkpoint_coordinator_stats(const struct checkpoint_coordinator *cc,
                                                          int64_t checkpoint_id);

/* The job's checkpoint metrics (numberOfCompletedCheckpoints, ...). */
struct checkpoint_stats_counts;
void checkpoint_coordinator_stats_counts(const struct checkpoint_coordinator *cc,
                                         struct checkpoint_stats_counts *c);

/* For tests and logs: checkpoints in progress, completed since start. */
int checkpoint_coordinator_pending_count(const struct checkpoint_coordinator *cc);
int64_t checkpoint_coordinator_completed_count(const struct checkpoint_coordinator *cc);

#endif
