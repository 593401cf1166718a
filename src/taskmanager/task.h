/* A Task (Flink's org.apache.flink.runtime.taskmanager.Task): one deployed
 * subtask on its own thread. It loads the job's library through the
 * TaskManager's cache, decodes the TaskDeploymentDescriptor's JobGraph with
 * it, runs the StreamTask (stream_task_run) over the data plane with its I/O
 * metrics registered in the TaskExecutor's registry, and reports each
 * ExecutionState (INITIALIZING, RUNNING, then FINISHED with the accumulators
 * and I/O totals, FAILED with the reason, or CANCELED) to its JobMaster,
 * which also hands it input splits. The TaskExecutor creates and cancels
 * tasks from its endpoint; the task thread owns everything else and says when
 * it is done through on_done (from the task thread). */
#ifndef SPATE_TASKMANAGER_TASK_H
#define SPATE_TASKMANAGER_TASK_H

#include <stdbool.h>

#include "core/id.h"
#include "metrics/task_metrics.h"
#include "network/net_env.h"
#include "proto/jobgraph.pb-c.h"
#include "rpc/service.h"

struct state_backend_options;
#include "taskmanager/library_cache.h"

struct task;

/* What a task needs from its TaskManager. */
struct task_host {
    struct rpc_service *svc; /* for the JobMaster gateway */
    struct net_env *net;
    struct library_cache *libraries;
    spate_id resource_id; /* this TaskManager's: producers here are local */
    FILE *print_out;      /* where print sinks write */
    /* Task thread: the task has ended and reported; free it from elsewhere. */
    void (*on_done)(void *arg, struct task *t);
    void *arg;
    /* Where the task's I/O metrics are registered (NULL: nowhere). */
    struct metric_registry *metrics;
    const char *host; /* the metrics' host variable */
    /* The task's thread runs as SCHED_BATCH (task_main). */
    bool batch_scheduling;
    /* Which keyed state backend the task's operators get (NULL: the heap). */
    const struct state_backend_options *state_backend;
    /* Latency tracking (NULL: off). */
    const struct latency_tracking *latency;
};

/* Copies the deployment descriptor and starts the task's thread. Errors: a
 * descriptor with malformed ids. */
int task_start(const struct task_host *host, const Jobgraph__TaskDeployment *tdd, struct task **out,
               spate_error *err);
/* Any thread: the task stops as soon as it next looks (at once when it
 * waits), and reports CANCELED. */
void task_cancel(struct task *t);
/* Any thread: a checkpoint to take (a source task), or one that completed
 * or was aborted; the task runs them between records. */
void task_trigger_checkpoint(struct task *t, const Checkpoint__TriggerCheckpoint *req);
void task_notify_checkpoint(struct task *t, int64_t checkpoint_id, bool complete);
/* Joins the thread (after on_done) and frees the task. */
void task_free(struct task *t);

const spate_id *task_attempt_id(const struct task *t);
const spate_id *task_job_id(const struct task *t);
/* Any thread: the running task's vertex, subtask and thread id (for
 * samples of its stack); false before its operators run or once it ended. */
bool task_thread(const struct task *t, spate_id *vertex, int *subtask, int *tid);
bool task_is_done(const struct task *t);

#endif
