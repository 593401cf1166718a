/* A job run as task threads over one network environment (local channels),
 * as a TaskManager would run it, for the streaming tests: each subtask a
 * StreamTask on its own thread, with its mailbox; a failed task cancels the
 * others, as the JobMaster would. With checkpoint_dir set, tasks take
 * checkpoints (exactly once) and their acknowledgements are kept. */
#ifndef SPATE_TESTS_LOCAL_JOB_H
#define SPATE_TESTS_LOCAL_JOB_H

#include <pthread.h>

#include "streaming/accumulators.h"
#include "streaming/job_graph.h"
#include "streaming/stream_task.h"

struct local_job;

struct task_thread {
    struct local_job *job;
    pthread_t thread;
    struct stream_task_params p;
    struct notifier notifier;
    struct task_mailbox mailbox;
    struct accumulators acc;
    spate_error err;
    int rc;
    /* checkpoints: the last acknowledgement (packed), or the last decline */
    pthread_mutex_t lock;
    uint8_t *ack;
    size_t ack_len;
    int64_t acked_id, declined_id;
    Checkpoint__TaskRestore *restore; /* what it started from */
};

struct local_job {
    struct job_graph *jg;
    struct net_env *net;
    struct task_thread **tasks;       /* [vertex][subtask] */
    struct result_partition_id **ids; /* [edge][producer subtask] */
    int ntasks;
    struct config *conf;
    bool checkpointing; /* mailboxes, acknowledgements, exactly-once sinks */
    /* restore: the acknowledgements of a previous run of the same graph */
    const struct local_job *restore_from;
};

/* Starts every subtask of env's job on its own thread. */
void local_start(struct local_job *lj, spate_env *env);
/* Joins every task; returns how many failed or were cancelled; *err is the
 * first failure, else the first cancellation. Keeps the acknowledgements
 * (local_free frees them). */
int local_join(struct local_job *lj, spate_error *err);
void local_cancel(struct local_job *lj);
void local_free(struct local_job *lj);

/* Checkpoints: makes dir/chk-<id>, triggers id at the sources (their
 * state goes there) and waits until every task acknowledged it (false: one declined, or 30 s).
 * local_savepoint: of type (checkpoint.proto's CheckpointType; a stop with
 * drain or not). */
bool local_checkpoint(struct local_job *lj, int64_t id, const char *dir);
bool local_savepoint(struct local_job *lj, int64_t id, const char *dir, int type, bool drain);
/* The trigger alone, with the state going to location, which the caller
 * made (or did not: the tasks then decline). */
bool local_trigger_at(struct local_job *lj, int64_t id, const char *location, int type, bool drain);
/* Tells every task that checkpoint id completed. */
void local_notify_complete(struct local_job *lj, int64_t id);

#endif
