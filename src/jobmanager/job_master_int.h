/* What the JobMaster's files share (job_master.c, job_master_deploy.c,
 * job_master_failover.c, job_master_checkpoint.c): the JobMaster's state
 * and the functions each calls in another. Private to this folder. Loop
 * thread. */
#ifndef SPATE_JOBMANAGER_JOB_MASTER_INT_H
#define SPATE_JOBMANAGER_JOB_MASTER_INT_H

#include "jobmanager/checkpoint_coordinator.h"
#include "jobmanager/execution_graph.h"
#include "jobmanager/job_master.h"
#include "jobmanager/restart_strategy.h"
#include "jobmanager/slot_pool.h"
#include "checkpoint/checkpoint_metadata.h"

#define JM_LOG "jobmaster"

/* A TaskExecutor registered with this JobMaster. */
struct jm_worker {
    struct hmap_node node;
    spate_id resource_id;
    char *address;
    char host[128]; /* its data address */
    int data_port;
    struct rpc_gateway *gw;
};

/* The job's metric group (job_master_metrics.c): gauges the JobMaster sets. */
struct jm_job_metrics {
    struct metric_group *group; /* NULL: no registry */
    struct rpc_timer *timer;
    struct metric_gauge uptime, downtime, restarting_time, num_restarts, full_restarts;
    struct metric_gauge total_checkpoints, in_progress_checkpoints, completed_checkpoints,
        failed_checkpoints;
    struct metric_gauge last_checkpoint_duration, last_checkpoint_size, last_checkpoint_restore,
        last_completed_checkpoint_id;
};

struct job_master {
    struct rpc_endpoint ep;
    struct job_master_options o;
    char *name;
    char address[300];
    spate_id jm_id;       /* JobMasterId: the fencing token */
    spate_id resource_id; /* its heartbeat id */
    enum job_status status;
    int64_t start_time, end_time, last_modification;
    int64_t status_times[JOB_SUSPENDED + 1]; /* wall ms each status was entered */
    char *failure;
    char *plan_json;                    /* the JobGraph's plan, for REST */
    Cluster__ExceptionInfo *exceptions; /* failures, oldest first */
    size_t nexceptions;
    bool exceptions_truncated;
    struct execution_graph *eg;
    int slots_needed;
    /* The shared slots the job holds or asked for, [slots_needed]. */
    struct jm_slot {
        bool have, pending;
        spate_id allocation_id, resource_id;
    } * slots;
    /* Checkpoints and failover. The coordinator exists once the
     * stores are made (prepared); deployments wait for it and for the
     * checkpoint they restore (restore_md, NULL: a fresh start). */
    struct checkpoint_coordinator *cc;
    struct restart_strategy restart;
    int64_t num_restarts; /* restarts begun (numRestarts) */
    struct jm_job_metrics metrics;
    bool prepared;
    bool restore_loading;
    Checkpoint__CheckpointMetadata *restore_md;
    char *restore_path;
    /* The savepoint the job was submitted to resume from (its graph's
     * savepoint_path): read while the stores open (sp_rc, sp_err), restored
     * when there is no checkpoint yet, also by a restart before the first
     * checkpoint completes. */
    Checkpoint__CheckpointMetadata *sp_md;
    char *sp_path;
    int sp_rc;
    spate_error sp_err;
    /* A cancel with a savepoint completed its stop: the job ends CANCELED
     * once its tasks have finished. */
    bool cancel_after_stop;
    /* The job's slots were asked for (a job resuming from a savepoint asks
     * once the savepoint is found good: one that fails holds none). */
    bool slots_requested;
    /* Stopped before the job ended (a new leader runs it, or the process
     * exits): the job's slots stay with it at their TaskExecutors, which
     * offer them to the next leader's JobMaster or free them once they
     * lose this one, as Flink's do; only a job that ended frees them. */
    bool suspended;
    /* A restart in progress: the executions of these regions are cancelled,
     * then, after the strategy's pause, deployed anew. */
    bool restarting;
    bool *restart_regions; /* [region] */
    bool restart_pause_over;
    struct rpc_timer *restart_timer;
    struct accumulators accumulators; /* summed over finished tasks */
    Cluster__Accumulator *acc_msgs;   /* job_master_info's view of them */
    Cluster__Accumulator **acc_ptrs;
    struct slot_pool pool;
    struct hmap workers;

    struct leader_retrieval *rm_retrieval;
    char *rm_address;
    struct rpc_gateway *rm; /* fenced once registered */
    struct registration *rm_registration;
    spate_id rm_resource_id;
    bool rm_connected;
    struct heartbeat_manager *hb_tm; /* sender */
    struct heartbeat_manager *hb_rm; /* receiver */
};

/* job_master.c */
struct jm_worker *jm_find_worker(struct job_master *jm, const spate_id *id);
void jm_set_status(struct job_master *jm, enum job_status s);
void jm_worker_free(struct job_master *jm, struct jm_worker *w);
void jm_terminate(struct job_master *jm, enum job_status s, const char *failure);

/* job_master_deploy.c */
int jm_shared_slot(const struct execution_graph *eg, const struct execution *e);
void jm_try_deploy(struct job_master *jm);
void jm_slot_apply(struct job_master *jm, struct execution *e, const struct jm_slot *slot);
void jm_send_request(void *arg, const struct pool_request *r);
void jm_cancel_request(void *arg, const spate_id *allocation);
void jm_fulfilled(void *arg, const struct pool_slot *s);
void jm_timed_out(void *arg, uint32_t task, uint64_t waited_ms);
void jm_request_slots(struct job_master *jm);

/* job_master_failover.c */
void jm_check_end(struct job_master *jm);
void jm_cancel_executions(struct job_master *jm, const bool *regions);
void jm_record_exception(struct job_master *jm, const char *failure, const struct execution *e);
void jm_restart_stop(struct job_master *jm);
void jm_fail(struct job_master *jm, const char *failure);
void jm_failover(struct job_master *jm, const char *failure, const bool *regions);
void jm_fail_execution(struct job_master *jm, const struct execution *e, const char *failure);
void jm_restore_splits(struct job_master *jm, const Checkpoint__CheckpointMetadata *md,
                       bool everything);
void jm_restore_clear(struct job_master *jm);
int jm_restore_check(struct job_master *jm, const Checkpoint__CheckpointMetadata *md,
                     const char *path, spate_error *err);
void jm_fail_restore(struct job_master *jm, const spate_error *err);
void jm_try_restart(struct job_master *jm);
void jm_lose_worker(struct job_master *jm, const spate_id *id, const char *cause);

/* job_master_checkpoint.c */
void jm_prepare(struct job_master *jm);

/* job_master_metrics.c */
void jm_metrics_start(struct job_master *jm);
void jm_metrics_refresh(struct job_master *jm);
void jm_metrics_stop(struct job_master *jm);

#endif
