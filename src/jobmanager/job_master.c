/* The JobMaster (job_master.h): its ResourceManager connection, its
 * SlotPool, the TaskExecutors that registered with it, the job's
 * CheckpointCoordinator and failover (restart strategy, pipelined regions,
 * restore from the latest checkpoint). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/sha256.h"
#include "core/util.h"
#include "jobmanager/checkpoint_coordinator.h"
#include "jobmanager/execution_graph.h"
#include "jobmanager/job_master.h"
#include "jobmanager/restart_strategy.h"
#include "jobmanager/slot_pool.h"
#include "jobmanager/state_assignment.h"
#include "rpc/gateways.h"
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

static const char *const job_status_names[] = {
    "INITIALIZING", "CREATED",  "RUNNING",  "FAILING",    "FAILED",
    "CANCELLING",   "CANCELED", "FINISHED", "RESTARTING", "SUSPENDED",
};

const char *
job_status_name(enum job_status s)
{
    return (unsigned)s < ARRAY_SIZE(job_status_names) ? job_status_names[s] : "UNKNOWN";
}

bool
job_status_is_terminal(enum job_status s)
{
    return s == JOB_FAILED || s == JOB_CANCELED || s == JOB_FINISHED;
}

/* The endpoint's state, from its handlers: only its own context may touch it. */
static struct job_master *
jm_of(struct rpc_endpoint *ep)
{
    RPC_ASSERT_IN(ep);
    return container_of(ep, struct job_master, ep);
}

static struct jm_worker *
jm_find_worker(struct job_master *jm, const spate_id *id)
{
    struct hmap_node *n;

    HMAP_FOR_EACH_WITH_HASH(n, id_hash(id), &jm->workers)
    {
        struct jm_worker *w = container_of(n, struct jm_worker, node);

        if (id_equal(&w->resource_id, id))
            return w;
    }
    return NULL;
}

static void
jm_set_status(struct job_master *jm, enum job_status s)
{
    jm->status = s;
    jm->last_modification = clock_wall_ms();
    jm->status_times[s] = jm->last_modification;
    SPATE_LOG_INFO(JM_LOG, "job %s (%s) switched to %s", id_str(&jm->o.job_id).s, jm->name,
                   job_status_name(s));
}

/* ---- ending the job ------------------------------------------------------------------- */

static void
jm_worker_free(struct job_master *jm, struct jm_worker *w)
{
    hmap_remove(&jm->workers, &w->node);
    heartbeat_unmonitor(jm->hb_tm, &w->resource_id);
    rpc_gateway_free(w->gw);
    free(w->address);
    free(w);
}

/* Flink's freeSlot: a slot goes back to its TaskExecutor (the SlotPool's
 * idle slots, every slot at the job's end). */
static void
jm_free_slot(void *arg, const struct pool_slot *s, const char *cause)
{
    struct job_master *jm = arg;
    Cluster__FreeSlot fs = CLUSTER__FREE_SLOT__INIT;
    struct jm_worker *w = jm_find_worker(jm, &s->resource_id);

    if (w == NULL)
        return;
    fs.cause = (char *)cause;
    fs.allocation_id = gw_id_bytes(&s->allocation_id);
    rpc_future_unref(te_free_slot(w->gw, &fs, 0));
}

/* Frees the job's slots at their TaskExecutors, withdraws what is still
 * requested, says goodbye to the ResourceManager. */
static void
jm_release_resources(struct job_master *jm, const char *cause)
{
    struct list_node *n;
    struct hmap_node *h;

    list_for_each(n, &jm->pool.allocated)
        jm_free_slot(jm, container_of(n, struct pool_slot, node), cause);
    list_for_each(n, &jm->pool.available)
        jm_free_slot(jm, container_of(n, struct pool_slot, node), cause);
    if (jm->rm_connected) {
        Cluster__CancelSlotRequest c = CLUSTER__CANCEL_SLOT_REQUEST__INIT;
        Cluster__Disconnect d = CLUSTER__DISCONNECT__INIT;

        list_for_each(n, &jm->pool.pending)
        {
            c.allocation_id =
                gw_id_bytes(&container_of(n, struct pool_request, node)->allocation_id);
            rm_cancel_slot_request(jm->rm, &c, NULL);
        }
        d.id = gw_id_bytes(&jm->o.job_id);
        d.cause = (char *)cause;
        rm_disconnect_job_manager(jm->rm, &d, NULL);
    }
    slot_pool_release(&jm->pool);
    while ((h = hmap_first(&jm->workers)) != NULL)
        jm_worker_free(jm, container_of(h, struct jm_worker, node));
}

static void
jm_terminate(struct job_master *jm, enum job_status s, const char *failure)
{
    if (job_status_is_terminal(jm->status))
        return;
    if (failure != NULL) {
        free(jm->failure);
        jm->failure = xstrdup(failure);
        SPATE_LOG_ERROR(JM_LOG, "job %s (%s) failed: %s", id_str(&jm->o.job_id).s, jm->name,
                        failure);
    }
    rpc_timer_cancel(jm->restart_timer);
    jm->restart_timer = NULL;
    jm->restarting = false;
    if (jm->cc != NULL)
        checkpoint_coordinator_shutdown(jm->cc, s == JOB_FINISHED ? CC_JOB_FINISHED
                                                : s == JOB_FAILED ? CC_JOB_FAILED
                                                                  : CC_JOB_CANCELED);
    jm_release_resources(jm, s == JOB_FINISHED ? "job finished" : failure ? failure : "job ended");
    jm->end_time = clock_wall_ms();
    jm_set_status(jm, s);
    if (jm->o.on_terminal != NULL)
        jm->o.on_terminal(jm->o.arg, jm);
}

/* ---- the ExecutionGraph's end ------------------------------------------------------------ */

static void jm_check_end(struct job_master *jm);
static void jm_try_restart(struct job_master *jm);
static void jm_request_slots(struct job_master *jm);
static bool jm_restart_ready(const struct job_master *jm);
static void jm_try_deploy(struct job_master *jm);
static void jm_slot_apply(struct job_master *jm, struct execution *e, const struct jm_slot *slot);

/* The job ended when every execution has: FINISHED when all finished. A
 * restart in progress waits for its executions instead. */
static void
jm_check_end(struct job_master *jm)
{
    struct execution_graph *eg = jm->eg;

    if (job_status_is_terminal(jm->status))
        return;
    if (jm->restarting) {
        jm_try_restart(jm);
        return;
    }
    if (eg->terminal < eg->total)
        return;
    if (jm->status == JOB_FAILING)
        jm_terminate(jm, JOB_FAILED, NULL);
    else if (jm->status == JOB_CANCELLING)
        jm_terminate(jm, JOB_CANCELED, NULL);
    else if (eg->finished == eg->total)
        jm_terminate(jm, jm->cancel_after_stop ? JOB_CANCELED : JOB_FINISHED, NULL);
    else
        jm_terminate(jm, JOB_FAILED, NULL);
}

static void
jm_cancel_sent(struct rpc_future *f, void *arg)
{
    struct job_master *jm = arg;

    if (rpc_future_code(f) != 0 && rpc_endpoint_is_running(&jm->ep))
        SPATE_LOG_WARN(JM_LOG, "job %s: a cancel did not reach its task: %s",
                       id_str(&jm->o.job_id).s, rpc_future_message(f));
}

/* Cancels every execution still alive (regions NULL), or those of the
 * regions set: those not deployed end at once, the others when their
 * TaskExecutor reports them CANCELED (or is lost). */
static void
jm_cancel_executions(struct job_master *jm, const bool *regions)
{
    struct execution_graph *eg = jm->eg;

    for (int v = 0; v < eg->graph->nvertices; v++) {
        for (int i = 0; i < eg->graph->vertices[v].parallelism; i++) {
            struct execution *e = &eg->executions[v][i];
            struct jm_worker *w;

            if (execution_state_is_terminal(e->state) ||
                (regions != NULL && !regions[eg->region[v][i]]))
                continue;
            w = e->assigned ? jm_find_worker(jm, &e->slot.resource_id) : NULL;
            if (e->state < EXEC_DEPLOYING || w == NULL) {
                execution_set_state(eg, e, EXEC_CANCELED, NULL);
            } else if (e->state != EXEC_CANCELING) {
                Cluster__TaskId t = CLUSTER__TASK_ID__INIT;
                struct rpc_future *f;

                execution_set_state(eg, e, EXEC_CANCELING, NULL);
                t.job_id = gw_id_bytes(&jm->o.job_id);
                t.attempt_id = gw_id_bytes(&e->attempt_id);
                f = te_cancel_task(w->gw, &t, 0);
                rpc_future_then(f, &jm->ep, jm_cancel_sent, jm);
                rpc_future_unref(f);
            }
        }
    }
}

#define JM_MAX_EXCEPTIONS 16

/* Keeps a failure for GET /jobs/:jobid/exceptions (task NULL: the job's). */
static void
jm_record_exception(struct job_master *jm, const char *failure, const struct execution *e)
{
    Cluster__ExceptionInfo *x;

    if (jm->nexceptions == JM_MAX_EXCEPTIONS) {
        jm->exceptions_truncated = true;
        return;
    }
    jm->exceptions = xrealloc(jm->exceptions, (jm->nexceptions + 1) * sizeof *jm->exceptions);
    x = &jm->exceptions[jm->nexceptions++];
    cluster__exception_info__init(x);
    x->exception = xstrdup(failure);
    x->timestamp = clock_wall_ms();
    if (e != NULL) {
        const struct jg_vertex *v = &jm->eg->graph->vertices[e->vertex];

        x->task = xasprintf("%s (%d/%d)", v->name, e->subtask + 1, v->parallelism);
        x->location = xasprintf("%s:%d", e->slot.host, e->slot.data_port);
        x->task_manager_id = xstrdup(id_str(&e->slot.resource_id).s);
    } else {
        x->task = xstrdup("");
        x->location = xstrdup("");
        x->task_manager_id = xstrdup("");
    }
}

static void
jm_restart_stop(struct job_master *jm)
{
    rpc_timer_cancel(jm->restart_timer);
    jm->restart_timer = NULL;
    jm->restarting = false;
}

/* The job fails for good: every task is cancelled, then FAILED. */
static void
jm_fail(struct job_master *jm, const char *failure)
{
    if (job_status_is_terminal(jm->status) || jm->status == JOB_FAILING)
        return;
    free(jm->failure);
    jm->failure = xstrdup(failure);
    if (jm->nexceptions == 0)
        jm_record_exception(jm, failure, NULL);
    SPATE_LOG_ERROR(JM_LOG, "job %s (%s) is failing: %s", id_str(&jm->o.job_id).s, jm->name,
                    failure);
    jm_restart_stop(jm);
    if (jm->cc != NULL)
        checkpoint_coordinator_suspend(jm->cc, "the job is failing");
    jm_set_status(jm, JOB_FAILING);
    jm_cancel_executions(jm, NULL);
    jm_check_end(jm);
}

/* ---- failover (Flink's DefaultScheduler with RestartPipelinedRegionFailoverStrategy) --- */

static void
jm_restart_pause_over(void *arg)
{
    struct job_master *jm = arg;

    jm->restart_timer = NULL;
    jm->restart_pause_over = true;
    jm_try_restart(jm);
}

/* A failure of the executions of the regions set (NULL: a global failure,
 * every region). The restart strategy decides: the regions restart after
 * its pause, from the latest completed checkpoint, or the job fails. */
static void
jm_failover(struct job_master *jm, const char *failure, const bool *regions)
{
    struct execution_graph *eg = jm->eg;
    int64_t now = (int64_t)clock_mono_ms();
    bool news = false;
    char strategy[300];
    int nrestart = 0;

    if (job_status_is_terminal(jm->status) || jm->status == JOB_FAILING ||
        jm->status == JOB_CANCELLING)
        return;
    for (int r = 0; r < eg->nregions; r++)
        news |= (regions == NULL || regions[r]) && !(jm->restarting && jm->restart_regions[r]);
    if (!news)
        return; /* a consequence of the restart in progress */
    restart_strategy_notify_failure(&jm->restart, now);
    if (!restart_strategy_can_restart(&jm->restart, now)) {
        restart_strategy_describe(&jm->restart, strategy, sizeof strategy);
        SPATE_LOG_INFO(JM_LOG, "job %s: recovery is suppressed by the restart strategy %s",
                       id_str(&jm->o.job_id).s, strategy);
        jm_fail(jm, failure);
        return;
    }
    if (!jm->restarting) {
        memset(jm->restart_regions, 0, (size_t)eg->nregions * sizeof *jm->restart_regions);
        jm->restart_pause_over = false;
    }
    for (int r = 0; r < eg->nregions; r++) {
        jm->restart_regions[r] |= regions == NULL || regions[r];
        nrestart += jm->restart_regions[r];
    }
    jm->restarting = true;
    free(jm->failure);
    jm->failure = xstrdup(failure);
    if (jm->cc != NULL)
        checkpoint_coordinator_suspend(jm->cc, "a task failed; the job restarts");
    if (jm->status != JOB_RESTARTING)
        jm_set_status(jm, JOB_RESTARTING);
    SPATE_LOG_WARN(JM_LOG, "job %s: %d of %d pipelined regions restart in %lld ms: %s",
                   id_str(&jm->o.job_id).s, nrestart, eg->nregions,
                   (long long)restart_strategy_backoff_ms(&jm->restart, now), failure);
    jm_cancel_executions(jm, jm->restart_regions);
    rpc_timer_cancel(jm->restart_timer);
    jm->restart_pause_over = false;
    jm->restart_timer =
        rpc_endpoint_schedule(&jm->ep, (uint64_t)restart_strategy_backoff_ms(&jm->restart, now),
                              jm_restart_pause_over, jm);
}

/* A failure of one execution (its region restarts). */
static void
jm_fail_execution(struct job_master *jm, const struct execution *e, const char *failure)
{
    bool *regions = xcalloc((size_t)jm->eg->nregions, sizeof *regions);

    regions[jm->eg->region[e->vertex][e->subtask]] = true;
    jm_failover(jm, failure, regions);
    free(regions);
}

/* The shared slot an execution runs in: group g's slots after those of the
 * groups before it. */
static int
jm_shared_slot(const struct execution_graph *eg, const struct execution *e)
{
    int group, index, k = 0;

    execution_graph_slot_of(eg, e, &group, &index);
    for (int g = 0; g < group; g++)
        k += eg->group_slots[g];
    return k + index;
}

/* A file source's assigner takes back what its restarting readers held
 * since the checkpoint they restore (md; NULL: a fresh start). */
static void
jm_restore_splits(struct job_master *jm, const Checkpoint__CheckpointMetadata *md, bool everything)
{
    struct execution_graph *eg = jm->eg;

    for (int v = 0; v < eg->graph->nvertices; v++) {
        const struct jg_vertex *vx = &eg->graph->vertices[v];
        bool *restarting = xcalloc((size_t)vx->parallelism, sizeof *restarting);
        bool all = true;

        for (int s = 0; s < vx->parallelism; s++) {
            restarting[s] = everything || jm->restart_regions[eg->region[v][s]];
            all &= restarting[s];
        }
        for (int o = 0; o < vx->nops; o++) {
            const Checkpoint__SplitAssignerState *st = NULL;

            for (size_t k = 0; md != NULL && k < md->n_operators; k++)
                if (md->operators[k]->operator_id.len == ID_BYTES &&
                    memcmp(md->operators[k]->operator_id.data, vx->ops[o].operator_id.bytes,
                           ID_BYTES) == 0)
                    st = md->operators[k]->split_assigner;
            execution_graph_restore_splits(eg, v, o, st, all ? NULL : restarting);
        }
        free(restarting);
    }
}

static void
jm_restore_clear(struct job_master *jm)
{
    checkpoint_metadata_free(jm->restore_md);
    free(jm->restore_path);
    jm->restore_md = NULL;
    jm->restore_path = NULL;
}

/* Whether md can be restored by this job; a clear error names its file. */
static int
jm_restore_check(struct job_master *jm, const Checkpoint__CheckpointMetadata *md, const char *path,
                 spate_error *err)
{
    spate_id job;

    if (!gw_id_get(&md->job_id, &job) || !id_equal(&job, &jm->o.job_id))
        return spate_error_set(err, SPATE_ESTATE,
                               "checkpoint '%s' belongs to job %s, not to job %s", path,
                               id_str(&job).s, id_str(&jm->o.job_id).s);
    return state_assignment_check(md, jm->eg->graph, false, path, err);
}

/* The executions of the restarting regions start over: new attempts, their
 * splits back to the assigners, new slots where their TaskManager is gone;
 * they are deployed (with md's state) once every one has a slot. */
static void
jm_redeploy(struct job_master *jm)
{
    struct execution_graph *eg = jm->eg;
    int n = 0;

    jm_restore_splits(jm, jm->restore_md, false);
    for (int v = 0; v < eg->graph->nvertices; v++)
        for (int s = 0; s < eg->graph->vertices[v].parallelism; s++) {
            struct execution *e = &eg->executions[v][s];
            struct jm_slot *slot = &jm->slots[jm_shared_slot(eg, e)];

            if (!jm->restart_regions[eg->region[v][s]])
                continue;
            execution_graph_reset_execution(eg, e, false);
            n++;
            if (slot->have) {
                jm_slot_apply(jm, e, slot);
            } else if (!slot->pending) {
                /* Its TaskManager is gone, or the request timed out. */
                slot->pending = true;
                slot_pool_request_slot(&jm->pool, (uint32_t)jm_shared_slot(eg, e));
            }
        }
    jm->restarting = false;
    free(jm->failure); /* it is in the job's exceptions */
    jm->failure = NULL;
    if (jm->restore_md != NULL && jm->cc != NULL)
        checkpoint_coordinator_restored(jm->cc, jm->restore_md, jm->restore_path);
    SPATE_LOG_INFO(JM_LOG, "job %s: restarting %d tasks from %s", id_str(&jm->o.job_id).s, n,
                   jm->restore_path ? jm->restore_path : "their initial state");
    jm_set_status(jm, JOB_RUNNING);
    jm_try_deploy(jm);
}

/* A checkpoint that cannot be read does not get better with another
 * attempt: the job fails, saying which file. */
static void
jm_fail_restore(struct job_master *jm, const spate_error *err)
{
    char msg[SPATE_ERROR_MESSAGE_MAX + 80];

    snprintf(msg, sizeof msg, "cannot restore from the latest checkpoint: %s", err->message);
    jm_record_exception(jm, msg, NULL);
    jm_fail(jm, msg);
}

static void
jm_restart_loaded(void *arg, int rc, Checkpoint__CheckpointMetadata *md, const char *path,
                  const spate_error *err)
{
    struct job_master *jm = arg;
    spate_error cerr = { 0 };

    jm->restore_loading = false;
    if (jm->status != JOB_RESTARTING) {
        checkpoint_metadata_free(md);
        return; /* cancelled or failed meanwhile */
    }
    if (!jm_restart_ready(jm)) {
        /* Another failure joined the restart while the checkpoint was
         * read: its executions end first, then it is read again. */
        checkpoint_metadata_free(md);
        jm_try_restart(jm);
        return;
    }
    jm_restore_clear(jm);
    if (rc == 0 && jm_restore_check(jm, md, path, &cerr) != 0) {
        checkpoint_metadata_free(md);
        err = &cerr;
        rc = cerr.code;
    }
    if (rc == SPATE_ENOENT && jm->sp_md != NULL) {
        /* No checkpoint since the job resumed: its savepoint again. */
        jm->restore_md = checkpoint_metadata_copy(jm->sp_md);
        jm->restore_path = xstrdup(jm->sp_path);
        jm_redeploy(jm);
        return;
    }
    if (rc != 0 && rc != SPATE_ENOENT) {
        jm_fail_restore(jm, err);
        return;
    }
    if (rc == 0) {
        jm->restore_md = md;
        jm->restore_path = xstrdup(path);
    }
    jm_redeploy(jm);
}

/* Whether the restart may deploy: its pause is over and every execution of
 * its regions has ended. */
static bool
jm_restart_ready(const struct job_master *jm)
{
    const struct execution_graph *eg = jm->eg;

    if (!jm->restarting || !jm->restart_pause_over)
        return false;
    for (int v = 0; v < eg->graph->nvertices; v++)
        for (int s = 0; s < eg->graph->vertices[v].parallelism; s++)
            if (jm->restart_regions[eg->region[v][s]] &&
                !execution_state_is_terminal(eg->executions[v][s].state))
                return false;
    return true;
}

/* The restart runs once it is ready: from the latest completed checkpoint. */
static void
jm_try_restart(struct job_master *jm)
{
    if (jm->restore_loading || !jm_restart_ready(jm))
        return;
    if (jm->cc != NULL) {
        jm->restore_loading = true;
        checkpoint_coordinator_load_latest(jm->cc, jm_restart_loaded, jm);
        return;
    }
    jm_restore_clear(jm);
    jm_redeploy(jm);
}

/* ---- deployment ------------------------------------------------------------------------ */

static void
jm_deployed(struct rpc_future *f, void *arg)
{
    struct job_master *jm = arg;
    char msg[600];

    if (rpc_future_code(f) == 0 || !rpc_endpoint_is_running(&jm->ep))
        return;
    snprintf(msg, sizeof msg, "could not deploy a task: %s", rpc_future_message(f));
    jm_failover(jm, msg, NULL);
}

/* Deploys the executions waiting to run (all at the start, those of the
 * restarted regions after a failover) once every one of them has its slot
 * and the checkpoint they restore is known (Flink's eager scheduling). */
static void
jm_try_deploy(struct job_master *jm)
{
    struct execution_graph *eg = jm->eg;
    spate_error err = { 0 };
    int n = 0;

    if (!jm->prepared || jm->restarting || jm->status != JOB_RUNNING)
        return;
    for (int v = 0; v < eg->graph->nvertices; v++)
        for (int i = 0; i < eg->graph->vertices[v].parallelism; i++) {
            const struct execution *e = &eg->executions[v][i];

            if (e->state == EXEC_CREATED || e->state == EXEC_SCHEDULED) {
                if (!e->assigned)
                    return; /* when its slot comes */
                n++;
            }
        }
    if (n == 0)
        return;
    SPATE_LOG_INFO(JM_LOG, "job %s: deploying %d tasks%s%s", id_str(&jm->o.job_id).s, n,
                   jm->restore_path ? ", restoring " : "",
                   jm->restore_path ? jm->restore_path : "");
    for (int v = 0; v < eg->graph->nvertices; v++) {
        for (int i = 0; i < eg->graph->vertices[v].parallelism; i++) {
            struct execution *e = &eg->executions[v][i];
            struct jm_worker *w;
            Jobgraph__TaskDeployment *tdd;
            struct rpc_future *f;

            if (e->state != EXEC_CREATED && e->state != EXEC_SCHEDULED)
                continue;
            w = jm_find_worker(jm, &e->slot.resource_id);
            if (w == NULL ||
                execution_graph_deployment(eg, e, jm->address, &jm->jm_id, &tdd, &err) != 0) {
                jm_failover(jm, w == NULL ? "the TaskManager of a slot is gone" : err.message,
                            NULL);
                return;
            }
            if (jm->restore_md != NULL)
                tdd->restore = state_assignment_subtask(jm->restore_md, eg->graph, v, i);
            execution_set_state(eg, e, EXEC_DEPLOYING, NULL);
            f = te_submit_task(w->gw, tdd, 0);
            execution_graph_deployment_free(tdd);
            rpc_future_then(f, &jm->ep, jm_deployed, jm);
            rpc_future_unref(f);
        }
    }
    jm_restore_clear(jm);
    if (jm->cc != NULL)
        checkpoint_coordinator_start(jm->cc);
}

/* An execution runs in the job's shared slot (SCHEDULED). */
static void
jm_slot_apply(struct job_master *jm, struct execution *e, const struct jm_slot *slot)
{
    struct jm_worker *w = jm_find_worker(jm, &slot->resource_id);

    e->assigned = true;
    e->slot.allocation_id = slot->allocation_id;
    e->slot.resource_id = slot->resource_id;
    snprintf(e->slot.host, sizeof e->slot.host, "%.63s", w ? w->host : "127.0.0.1");
    e->slot.data_port = w ? w->data_port : 0;
    snprintf(e->slot.address, sizeof e->slot.address, "%s", w ? w->address : "");
    execution_set_state(jm->eg, e, EXEC_SCHEDULED, NULL);
}

/* A slot came for shared slot k = (group, index): the job holds it, and the
 * executions of the group's vertices at that index that wait take it (those
 * of a restart in its pause take it when they are deployed again). */
static void
jm_assign_slot(struct job_master *jm, const struct pool_slot *s)
{
    struct execution_graph *eg = jm->eg;
    struct jm_slot *slot = &jm->slots[s->task];

    slot->have = true;
    slot->pending = false;
    slot->allocation_id = s->allocation_id;
    slot->resource_id = s->resource_id;
    for (int v = 0; v < eg->graph->nvertices; v++) {
        for (int i = 0; i < eg->graph->vertices[v].parallelism; i++) {
            struct execution *e = &eg->executions[v][i];

            if (jm_shared_slot(eg, e) == (int)s->task && e->state == EXEC_CREATED)
                jm_slot_apply(jm, e, slot);
        }
    }
    jm_try_deploy(jm);
}

/* ---- the SlotPool's listener -------------------------------------------------------- */

static void
jm_request_sent(struct rpc_future *f, void *arg)
{
    struct job_master *jm = arg;

    if (rpc_future_code(f) != 0 && rpc_endpoint_is_running(&jm->ep))
        SPATE_LOG_WARN(JM_LOG, "job %s: slot request not taken by the ResourceManager: %s",
                       id_str(&jm->o.job_id).s, rpc_future_message(f));
}

static void
jm_send_request(void *arg, const struct pool_request *r)
{
    struct job_master *jm = arg;
    Cluster__SlotRequest req = CLUSTER__SLOT_REQUEST__INIT;
    struct rpc_future *f;

    if (!jm->rm_connected)
        return; /* sent when the connection is made */
    req.job_id = gw_id_bytes(&jm->o.job_id);
    req.allocation_id = gw_id_bytes(&r->allocation_id);
    req.target_address = jm->address;
    f = rm_request_slot(jm->rm, &req, 0);
    rpc_future_then(f, &jm->ep, jm_request_sent, jm);
    rpc_future_unref(f);
}

static void
jm_cancel_request(void *arg, const spate_id *allocation)
{
    struct job_master *jm = arg;
    Cluster__CancelSlotRequest c = CLUSTER__CANCEL_SLOT_REQUEST__INIT;

    if (!jm->rm_connected)
        return;
    c.allocation_id = gw_id_bytes(allocation);
    rm_cancel_slot_request(jm->rm, &c, NULL);
}

static void
jm_fulfilled(void *arg, const struct pool_slot *s)
{
    jm_assign_slot(arg, s);
}

static void
jm_timed_out(void *arg, uint32_t task, uint64_t waited_ms)
{
    struct job_master *jm = arg;
    char msg[400];

    snprintf(msg, sizeof msg,
             "could not allocate a slot for task %u within slot.request.timeout (%lld ms, waited "
             "%llu ms): %zu of %d slots allocated, no free slot in the cluster",
             task, (long long)jm->o.slot_request_timeout_ms, (unsigned long long)waited_ms,
             slot_pool_allocated_count(&jm->pool), jm->slots_needed);
    jm->slots[task].pending = false; /* asked again at the restart */
    jm_record_exception(jm, msg, NULL);
    jm_failover(jm, msg, NULL);
}

/* ---- TaskExecutors ------------------------------------------------------------------- */

/* A TaskExecutor is gone: its slots too; their tasks ask for slots again. */
static void
jm_lose_worker(struct job_master *jm, const spate_id *id, const char *cause)
{
    struct execution_graph *eg = jm->eg;
    bool *regions = xcalloc((size_t)eg->nregions, sizeof *regions);
    uint32_t *lost = xcalloc((size_t)jm->slots_needed + 1, sizeof *lost);
    struct jm_worker *w = jm_find_worker(jm, id);
    const struct execution *first = NULL;
    size_t nlost;
    char msg[600];

    snprintf(msg, sizeof msg, "TaskManager %s was lost: %s", id_str(id).s, cause);
    /* Its slots are gone: the restart asks for new ones. */
    nlost = slot_pool_release_task_manager(&jm->pool, id, lost, (size_t)jm->slots_needed);
    for (size_t i = 0; i < nlost && i < (size_t)jm->slots_needed; i++)
        jm->slots[lost[i]].have = false;
    for (int v = 0; v < eg->graph->nvertices; v++)
        for (int i = 0; i < eg->graph->vertices[v].parallelism; i++) {
            struct execution *e = &eg->executions[v][i];

            if (!e->assigned || !id_equal(&e->slot.resource_id, id))
                continue;
            if (!execution_state_is_terminal(e->state)) {
                execution_set_state(eg, e, EXEC_FAILED, msg);
                regions[eg->region[v][i]] = true;
                first = first ? first : e;
            }
            e->assigned = false;
        }
    if (w != NULL)
        jm_worker_free(jm, w);
    if (first != NULL) {
        jm_record_exception(jm, msg, first);
        jm_failover(jm, msg, regions);
    }
    free(regions);
    free(lost);
    jm_check_end(jm);
}

static void
jm_tm_lost(void *arg, const spate_id *target, int reason, const char *message)
{
    UNUSED(reason);
    jm_lose_worker(arg, target, message);
}

static void
jmh_register_task_manager(struct rpc_endpoint *ep, const Cluster__TaskManagerRegistration *req,
                          struct rpc_call *call)
{
    struct job_master *jm = jm_of(ep);
    Cluster__RegistrationReply reply = CLUSTER__REGISTRATION_REPLY__INIT;
    spate_error err = { 0 };
    struct jm_worker *w;
    spate_id id;

    if (!gw_id_get(&req->resource_id, &id)) {
        rpc_call_fail(call, SPATE_EINVAL, "TaskManager registration with a malformed id");
        return;
    }
    if (job_status_is_terminal(jm->status)) {
        reply.accepted = false;
        reply.reason = "the job has ended";
        rpc_call_reply(call, &reply.base);
        return;
    }
    if ((w = jm_find_worker(jm, &id)) == NULL) {
        w = xcalloc(1, sizeof *w);
        if (rpc_gateway_new(ep->svc, req->address, NULL, &w->gw, &err) != 0) {
            free(w);
            rpc_call_fail(call, SPATE_EINVAL, "bad TaskExecutor address: %s", err.message);
            return;
        }
        w->resource_id = id;
        w->address = xstrdup(req->address);
        w->data_port = req->data_port;
        snprintf(w->host, sizeof w->host, "%s", w->gw->peer);
        if (strchr(w->host, ':') != NULL)
            *strrchr(w->host, ':') = '\0';
        hmap_insert(&jm->workers, &w->node, id_hash(&id));
        if (heartbeat_monitor(jm->hb_tm, &id, w->address, &err) != 0)
            SPATE_LOG_WARN(JM_LOG, "cannot monitor TaskManager %s: %s", id_str(&id).s, err.message);
    }
    reply.accepted = true;
    reply.leader_id = gw_id_bytes(&jm->jm_id);
    reply.leader_resource_id = gw_id_bytes(&jm->resource_id);
    reply.registration_id = gw_id_bytes(&jm->o.job_id);
    rpc_call_reply(call, &reply.base);
}

/* Seed 004 §2.5: offerSlots: the SlotPool takes what fulfils its requests. */
static void
jmh_offer_slots(struct rpc_endpoint *ep, const Cluster__SlotOffers *req, struct rpc_call *call)
{
    struct job_master *jm = jm_of(ep);
    Cluster__AcceptedSlots out = CLUSTER__ACCEPTED_SLOTS__INIT;
    ProtobufCBinaryData *ids = xcalloc(req->n_offers ? req->n_offers : 1, sizeof *ids);
    spate_id *allocs = xcalloc(req->n_offers ? req->n_offers : 1, sizeof *allocs);
    spate_id rid;

    if (!gw_id_get(&req->resource_id, &rid) || jm_find_worker(jm, &rid) == NULL) {
        free(ids);
        free(allocs);
        rpc_call_fail(call, SPATE_ESTATE, "slots offered by a TaskManager not registered here");
        return;
    }
    for (size_t i = 0; i < req->n_offers; i++) {
        if (!gw_id_get(&req->offers[i]->allocation_id, &allocs[i]))
            continue;
        if (!job_status_is_terminal(jm->status) &&
            slot_pool_offer(&jm->pool, &rid, &allocs[i], req->offers[i]->index))
            ids[out.n_allocation_ids++] = gw_id_bytes(&allocs[i]);
    }
    out.allocation_ids = ids;
    rpc_call_reply(call, &out.base);
    free(ids);
    free(allocs);
}

static void
jmh_disconnect_task_manager(struct rpc_endpoint *ep, const Cluster__Disconnect *req,
                            struct rpc_call *call)
{
    spate_id id;

    UNUSED(call);
    if (gw_id_get(&req->id, &id))
        jm_lose_worker(jm_of(ep), &id, req->cause);
}

static void jm_reconnect_rm(struct job_master *jm, const char *why);

static void
jmh_disconnect_resource_manager(struct rpc_endpoint *ep, const Cluster__Disconnect *req,
                                struct rpc_call *call)
{
    UNUSED(call);
    jm_reconnect_rm(jm_of(ep), req->cause);
}

/* The seeds' UpdateTaskExecutionState. */
static void
jmh_update_task_execution_state(struct rpc_endpoint *ep, const Cluster__TaskExecutionState *req,
                                struct rpc_call *call)
{
    struct job_master *jm = jm_of(ep);
    Cluster__Ack ack = CLUSTER__ACK__INIT;
    struct execution *e;
    spate_id attempt;
    bool was_canceling;
    int state;

    if (!gw_id_get(&req->attempt_id, &attempt) || req->state == NULL ||
        (state = execution_state_parse(req->state)) < 0) {
        rpc_call_fail(call, SPATE_EINVAL, "malformed task execution state");
        return;
    }
    /* req lives until the reply: answer once it has been read. */
    e = execution_graph_find(jm->eg, &attempt);
    if (e == NULL || execution_state_is_terminal(e->state)) {
        rpc_call_reply(call, &ack.base); /* an older attempt's news */
        return;
    }
    SPATE_LOG_DEBUG(JM_LOG, "job %s: %s (%d/%d) %s -> %s", id_str(&jm->o.job_id).s,
                    jm->eg->graph->vertices[e->vertex].name, e->subtask + 1,
                    jm->eg->graph->vertices[e->vertex].parallelism, execution_state_name(e->state),
                    req->state);
    if (execution_state_is_terminal((enum execution_state)state) && req->io != NULL) {
        e->io = (struct execution_io){ true,
                                       req->io->records_in,
                                       req->io->records_out,
                                       req->io->bytes_in,
                                       req->io->bytes_out,
                                       req->io->idle_ms,
                                       req->io->back_pressured_ms,
                                       req->io->busy_ms };
    }
    was_canceling = e->state == EXEC_CANCELING;
    if (state == EXEC_FINISHED) {
        for (size_t i = 0; i < req->n_accumulators; i++) {
            const char *name = req->accumulators[i]->name;

            if (name != NULL && *name)
                accumulators_counter(&jm->accumulators, name)->value += req->accumulators[i]->value;
        }
    }
    execution_set_state(jm->eg, e, (enum execution_state)state,
                        req->failure && *req->failure ? req->failure : NULL);
    if (state == EXEC_FINISHED && jm->cc != NULL)
        checkpoint_coordinator_task_finished(jm->cc, e);
    if (state == EXEC_FAILED && !was_canceling) {
        char msg[1200];

        snprintf(msg, sizeof msg, "%s (%d/%d) failed: %s", jm->eg->graph->vertices[e->vertex].name,
                 e->subtask + 1, jm->eg->graph->vertices[e->vertex].parallelism,
                 req->failure && *req->failure ? req->failure : "no reason given");
        jm_record_exception(jm, req->failure && *req->failure ? req->failure : "no reason given",
                            e);
        rpc_call_reply(call, &ack.base);
        jm_fail_execution(jm, e, msg);
        jm_check_end(jm);
        return;
    }
    rpc_call_reply(call, &ack.base);
    jm_check_end(jm);
}

/* The seeds' RequestNextInputSplit. */
static void
jmh_request_next_input_split(struct rpc_endpoint *ep, const Cluster__SplitRequest *req,
                             struct rpc_call *call)
{
    struct job_master *jm = jm_of(ep);
    Cluster__InputSplit out = CLUSTER__INPUT_SPLIT__INIT;
    const struct file_split *split = NULL;
    spate_error err = { 0 };
    struct execution *e;
    spate_id attempt;
    int rc, subtask;

    /* A split handed to an attempt that is being replaced would be lost. */
    if (!gw_id_get(&req->attempt_id, &attempt) ||
        (e = execution_graph_find(jm->eg, &attempt)) == NULL || e->vertex != req->vertex ||
        execution_state_is_terminal(e->state) || e->state == EXEC_CANCELING) {
        rpc_call_fail(call, SPATE_ESTATE, "no input splits for an attempt that is not running");
        return;
    }
    subtask = e->subtask;
    rc = execution_graph_next_split(jm->eg, req->vertex, req->operator_, subtask, &split, &err);
    if (rc < 0) {
        rpc_call_fail(call, rc, "%s", err.message);
        return;
    }
    if (rc == 0) {
        out.present = true;
        out.path = split->path;
        out.start = split->start;
        out.length = split->length;
    }
    rpc_call_reply(call, &out.base);
}

/* TaskExecutor -> JobMaster: checkpoint acknowledgements and declines. */
static void
jmh_acknowledge_checkpoint(struct rpc_endpoint *ep, const Checkpoint__AcknowledgeCheckpoint *req,
                           struct rpc_call *call)
{
    struct job_master *jm = jm_of(ep);

    UNUSED(call);
    if (jm->cc != NULL)
        checkpoint_coordinator_acknowledge(jm->cc, req);
}

static void
jmh_decline_checkpoint(struct rpc_endpoint *ep, const Checkpoint__DeclineCheckpoint *req,
                       struct rpc_call *call)
{
    struct job_master *jm = jm_of(ep);

    UNUSED(call);
    if (jm->cc != NULL)
        checkpoint_coordinator_decline(jm->cc, req);
}

static const struct jm_handlers jm_handlers = {
    .acknowledge_checkpoint = jmh_acknowledge_checkpoint,
    .decline_checkpoint = jmh_decline_checkpoint,
    .update_task_execution_state = jmh_update_task_execution_state,
    .request_next_input_split = jmh_request_next_input_split,
    .register_task_manager = jmh_register_task_manager,
    .offer_slots = jmh_offer_slots,
    .disconnect_task_manager = jmh_disconnect_task_manager,
    .disconnect_resource_manager = jmh_disconnect_resource_manager,
};

/* ---- the ResourceManager connection ------------------------------------------------ */

static void
jm_close_rm(struct job_master *jm)
{
    registration_cancel(jm->rm_registration);
    jm->rm_registration = NULL;
    if (jm->rm_connected)
        heartbeat_unmonitor(jm->hb_rm, &jm->rm_resource_id);
    rpc_gateway_free(jm->rm);
    jm->rm = NULL;
    jm->rm_connected = false;
}

static struct rpc_future *
jm_reg_attempt(void *arg, int64_t timeout_ms)
{
    struct job_master *jm = arg;
    Cluster__JobMasterRegistration r = CLUSTER__JOB_MASTER_REGISTRATION__INIT;

    r.job_id = gw_id_bytes(&jm->o.job_id);
    r.address = jm->address;
    r.job_master_id = gw_id_bytes(&jm->jm_id);
    r.resource_id = gw_id_bytes(&jm->resource_id);
    return rm_register_job_master(jm->rm, &r, timeout_ms);
}

static int
jm_reg_check(void *arg, struct rpc_future *reply, spate_error *err)
{
    Cluster__RegistrationReply *r = rpc_future_value(reply);

    UNUSED(arg);
    if (!r->accepted)
        return spate_error_set(err, SPATE_EREMOTE, "%s", r->reason);
    if (r->leader_id.len != ID_BYTES)
        return spate_error_set(err, SPATE_EPROTO, "registration reply without a leader id");
    return 0;
}

static void
jm_reg_success(void *arg, struct rpc_future *reply)
{
    struct job_master *jm = arg;
    Cluster__RegistrationReply *r = rpc_future_value(reply);
    struct rpc_gateway *fenced;
    spate_id rm_id;
    spate_error err = { 0 };

    jm->rm_registration = NULL;
    gw_id_get(&r->leader_id, &rm_id);
    if (!gw_id_get(&r->leader_resource_id, &jm->rm_resource_id))
        jm->rm_resource_id = rm_id;
    fenced = rpc_gateway_with_token(jm->rm, &rm_id);
    rpc_gateway_free(jm->rm);
    jm->rm = fenced;
    jm->rm_connected = true;
    if (heartbeat_monitor(jm->hb_rm, &jm->rm_resource_id, jm->rm->address, &err) != 0)
        SPATE_LOG_WARN(JM_LOG, "cannot monitor the ResourceManager: %s", err.message);
    SPATE_LOG_INFO(JM_LOG, "job %s: connected to ResourceManager %s", id_str(&jm->o.job_id).s,
                   jm->rm_address);
    /* Requests made before (or lost with the previous leader) go now. */
    slot_pool_resend_pending(&jm->pool);
}

static void
jm_reg_failure(void *arg, int code, const char *message)
{
    UNUSED(arg);
    UNUSED(code);
    UNUSED(message);
}

static const struct registration_ops jm_reg_ops = { jm_reg_attempt, jm_reg_check, jm_reg_success,
                                                    jm_reg_failure, NULL };

static void
jm_reconnect_rm(struct job_master *jm, const char *why)
{
    spate_error err = { 0 };
    char target[400];

    jm_close_rm(jm);
    if (jm->rm_address == NULL || job_status_is_terminal(jm->status) ||
        !rpc_endpoint_is_running(&jm->ep))
        return;
    if (rpc_gateway_new(jm->ep.svc, jm->rm_address, NULL, &jm->rm, &err) != 0) {
        SPATE_LOG_ERROR(JM_LOG, "bad ResourceManager address: %s", err.message);
        return;
    }
    SPATE_LOG_INFO(JM_LOG, "job %s: connecting to ResourceManager %s (%s)", id_str(&jm->o.job_id).s,
                   jm->rm_address, why);
    snprintf(target, sizeof target, "resource manager %s", jm->rm_address);
    jm->rm_registration = registration_start(&jm->ep, target, &jm->o.registration, &jm_reg_ops, jm);
}

static void
jm_rm_lost(void *arg, const spate_id *target, int reason, const char *message)
{
    struct job_master *jm = arg;

    UNUSED(target);
    UNUSED(reason);
    jm->rm_connected = false; /* no longer monitored */
    SPATE_LOG_WARN(JM_LOG, "job %s: ResourceManager lost: %s", id_str(&jm->o.job_id).s, message);
    jm_reconnect_rm(jm, "the ResourceManager was lost");
}

struct jm_news {
    struct job_master *jm;
    char address[];
};

static void
jm_rm_leader(void *arg)
{
    struct jm_news *n = arg;

    if (rpc_endpoint_is_running(&n->jm->ep)) {
        free(n->jm->rm_address);
        n->jm->rm_address = xstrdup(n->address);
        jm_reconnect_rm(n->jm, "new ResourceManager leader");
    }
    free(n);
}

static void
jm_notify_rm_leader(void *arg, const char *address, const spate_id *session)
{
    struct job_master *jm = arg;
    struct jm_news *n;

    UNUSED(session);
    if (address == NULL)
        return;
    n = xmalloc(sizeof *n + strlen(address) + 1);
    n->jm = jm;
    strcpy(n->address, address);
    rpc_endpoint_run_async(&jm->ep, jm_rm_leader, n);
}

static void
jm_rm_error(void *arg, int code, const char *message)
{
    UNUSED(arg);
    SPATE_LOG_ERROR(JM_LOG, "ResourceManager leader retrieval failed (%s): %s",
                    spate_err_name(code), message);
}

static const struct leader_listener jm_rm_listener = { jm_notify_rm_leader, jm_rm_error };

/* ---- the CheckpointCoordinator's owner ------------------------------------------------ */

static void *
jmc_schedule(void *owner, int64_t delay_ms, void (*fn)(void *), void *arg)
{
    struct job_master *jm = owner;

    if (!rpc_endpoint_is_running(&jm->ep))
        return NULL; /* a stopped endpoint's timers are gone */
    return rpc_endpoint_schedule(&jm->ep, (uint64_t)(delay_ms > 0 ? delay_ms : 0), fn, arg);
}

static void
jmc_cancel(void *owner, void *timer)
{
    UNUSED(owner);
    rpc_timer_cancel(timer);
}

static void
jmc_run_blocking(void *owner, void (*work)(void *), void (*done)(void *), void *arg)
{
    struct job_master *jm = owner;

    if (rpc_endpoint_run_blocking(&jm->ep, work, done, arg) != 0) {
        SPATE_LOG_WARN(JM_LOG, "job %s: no worker thread; checkpoint I/O on the loop",
                       id_str(&jm->o.job_id).s);
        work(arg);
        done(arg);
    }
}

static int64_t
jmc_now(void *owner)
{
    UNUSED(owner);
    return clock_wall_ms();
}

static void
jmc_trigger(void *owner, const struct execution *e, const Checkpoint__TriggerCheckpoint *m)
{
    struct job_master *jm = owner;
    struct jm_worker *w = jm_find_worker(jm, &e->slot.resource_id);
    spate_error err = { 0 };

    if (w != NULL && te_trigger_checkpoint(w->gw, m, &err) != 0)
        SPATE_LOG_WARN(JM_LOG, "job %s: cannot trigger checkpoint %lld: %s",
                       id_str(&jm->o.job_id).s, (long long)m->checkpoint_id, err.message);
}

static void
jmc_notify(void *owner, const struct execution *e, bool completed,
           const Checkpoint__CheckpointNotification *m)
{
    struct job_master *jm = owner;
    struct jm_worker *w = jm_find_worker(jm, &e->slot.resource_id);

    if (w == NULL)
        return;
    if (completed)
        te_notify_checkpoint_complete(w->gw, m, NULL);
    else
        te_notify_checkpoint_aborted(w->gw, m, NULL);
}

static void
jmc_fail_job(void *owner, const char *reason)
{
    struct job_master *jm = owner;

    jm_record_exception(jm, reason, NULL);
    jm_failover(jm, reason, NULL);
}

static const struct checkpoint_coordinator_ops jm_cc_ops = {
    jmc_schedule, jmc_cancel, jmc_run_blocking, jmc_now, jmc_trigger, jmc_notify, jmc_fail_job,
};

/* The job's checkpoint stores (blocking: ZooKeeper), then its latest
 * completed checkpoint: a recovered job (a new leader) resumes from it. */
struct jm_prepare {
    struct job_master *jm;
    struct completed_checkpoint_store *store;
    struct checkpoint_id_counter *counter;
    int rc;
    spate_error err;
    /* the savepoint to resume from */
    const char *sp_path; /* the graph's */
    Checkpoint__CheckpointMetadata *sp_md;
    int sp_rc;
    spate_error sp_err;
};

/* Reads and checks the savepoint the job resumes from (its `_metadata` and
 * every state file it names); the id counter goes past its id, as the
 * tasks ignore barriers up to the id they restored. */
static void
jm_read_savepoint(struct jm_prepare *p)
{
    uint64_t next = 0;

    if ((p->sp_rc = checkpoint_metadata_read(p->sp_path, &p->sp_md, &p->sp_err)) != 0)
        return;
    if ((p->sp_rc = checkpoint_metadata_check_files(p->sp_md, p->sp_path, &p->sp_err)) != 0) {
        checkpoint_metadata_free(p->sp_md);
        p->sp_md = NULL;
        return;
    }
    if (p->counter != NULL && p->counter->ops->get(p->counter, &next, NULL) == 0 &&
        next <= (uint64_t)p->sp_md->checkpoint_id)
        p->counter->ops->set(p->counter, (uint64_t)p->sp_md->checkpoint_id + 1, NULL);
}

static void
jm_prepare_work(void *arg)
{
    struct jm_prepare *p = arg;
    struct ha_services *ha = p->jm->o.ha;
    const struct checkpoint_settings *cfg = &p->jm->eg->graph->checkpointing;

    if (cfg->checkpoints_dir != NULL) {
        if ((p->rc = ha->ops->checkpoint_store(ha, &p->jm->o.job_id, (uint32_t)cfg->num_retained,
                                               &p->store, &p->err)) != 0)
            return;
        if ((p->rc = ha->ops->checkpoint_id_counter(ha, &p->jm->o.job_id, &p->counter, &p->err)) !=
            0)
            return;
    }
    if (p->sp_path != NULL)
        jm_read_savepoint(p);
}

/* The job starts from its savepoint (no checkpoint of its own yet): it
 * must be readable, and every operator with state in it must be in the
 * job unless non-restored state is allowed; else the job fails saying
 * why. Operators match by id (from the uid, or derived from the graph:
 * a warning, as such ids change with the graph). False when it failed. */
static bool
jm_resume_from_savepoint(struct job_master *jm)
{
    const struct job_graph *jg = jm->eg->graph;
    spate_error err = { 0 };
    char msg[SPATE_ERROR_MESSAGE_MAX + 200];

    if (jm->sp_rc != 0 || state_assignment_check(jm->sp_md, jg, jg->allow_non_restored_state,
                                                 jm->sp_path, &err) != 0) {
        snprintf(msg, sizeof msg, "cannot resume job %s from savepoint '%s': %s",
                 id_str(&jm->o.job_id).s, jg->savepoint_path,
                 jm->sp_rc != 0 ? jm->sp_err.message : err.message);
        jm_record_exception(jm, msg, NULL);
        jm_fail(jm, msg);
        return false;
    }
    for (int v = 0; v < jg->nvertices; v++)
        for (int o = 0; o < jg->vertices[v].nops; o++)
            if (!jg->vertices[v].ops[o].uid_given)
                SPATE_LOG_WARN(JM_LOG,
                               "job %s: operator '%s' has no uid: its id %s is derived from the "
                               "graph and changes when the graph changes, so that its state in "
                               "a savepoint may not be found; give it one with spate_uid()",
                               id_str(&jm->o.job_id).s, jg->vertices[v].ops[o].name,
                               id_str(&jg->vertices[v].ops[o].operator_id).s);
    SPATE_LOG_INFO(JM_LOG, "job %s: resuming from savepoint '%s' (%s)", id_str(&jm->o.job_id).s,
                   jm->sp_path, jm->sp_md->job_name);
    jm->restore_md = checkpoint_metadata_copy(jm->sp_md);
    jm->restore_path = xstrdup(jm->sp_path);
    jm_restore_splits(jm, jm->sp_md, true);
    checkpoint_coordinator_restored(jm->cc, jm->sp_md, jm->sp_path);
    return true;
}

static void
jm_start_loaded(void *arg, int rc, Checkpoint__CheckpointMetadata *md, const char *path,
                const spate_error *err)
{
    struct job_master *jm = arg;
    spate_error cerr = { 0 };

    jm->restore_loading = false;
    if (jm->status == JOB_RESTARTING) {
        /* A failure before the first deployment: the restart loads the
         * latest checkpoint itself. */
        checkpoint_metadata_free(md);
        jm->prepared = true;
        jm_request_slots(jm);
        jm_try_restart(jm);
        return;
    }
    if (jm->status != JOB_RUNNING) {
        checkpoint_metadata_free(md);
        return;
    }
    if (rc == 0 && jm_restore_check(jm, md, path, &cerr) != 0) {
        checkpoint_metadata_free(md);
        err = &cerr;
        rc = cerr.code;
    }
    if (rc != 0 && rc != SPATE_ENOENT) {
        jm_fail_restore(jm, err);
        return;
    }
    if (rc == SPATE_ENOENT && jm->eg->graph->savepoint_path != NULL &&
        !jm_resume_from_savepoint(jm))
        return;
    if (rc == 0) {
        SPATE_LOG_INFO(JM_LOG, "job %s: recovered; resuming from '%s'", id_str(&jm->o.job_id).s,
                       path);
        jm->restore_md = md;
        jm->restore_path = xstrdup(path);
        jm_restore_splits(jm, md, true);
        checkpoint_coordinator_restored(jm->cc, md, path);
    }
    jm->prepared = true;
    jm_request_slots(jm);
    jm_try_deploy(jm);
}

static void
jm_make_coordinator(struct job_master *jm, struct completed_checkpoint_store *store,
                    struct checkpoint_id_counter *counter)
{
    struct checkpoint_coordinator_options o = { 0 };

    o.eg = jm->eg;
    o.store = store;
    o.counter = counter;
    o.ops = &jm_cc_ops;
    o.owner = jm;
    jm->cc = checkpoint_coordinator_new(&o);
}

static void
jm_prepare_done(void *arg)
{
    struct jm_prepare *p = arg;
    struct job_master *jm = p->jm;

    if (job_status_is_terminal(jm->status) || !rpc_endpoint_is_running(&jm->ep)) {
        if (p->store != NULL)
            p->store->ops->free(p->store);
        if (p->counter != NULL)
            p->counter->ops->free(p->counter);
    } else if (p->rc != 0) {
        char msg[SPATE_ERROR_MESSAGE_MAX + 80];

        if (p->store != NULL)
            p->store->ops->free(p->store);
        snprintf(msg, sizeof msg, "cannot open the job's checkpoint store: %s", p->err.message);
        jm_record_exception(jm, msg, NULL);
        jm_fail(jm, msg);
    } else {
        jm->sp_md = p->sp_md;
        p->sp_md = NULL;
        jm->sp_rc = p->sp_rc;
        jm->sp_err = p->sp_err;
        if (p->sp_path != NULL)
            jm->sp_path = xstrdup(p->sp_path);
        jm_make_coordinator(jm, p->store, p->counter);
        if (p->store != NULL) {
            jm->restore_loading = true;
            checkpoint_coordinator_load_latest(jm->cc, jm_start_loaded, jm);
        } else if (jm->status == JOB_RUNNING && jm_resume_from_savepoint(jm)) {
            jm->prepared = true;
            jm_request_slots(jm);
            jm_try_deploy(jm);
        } else if (jm->status == JOB_RESTARTING) {
            jm->prepared = true;
            jm_request_slots(jm);
            jm_try_restart(jm);
        }
    }
    checkpoint_metadata_free(p->sp_md);
    free(p);
}

static void
jm_prepare(struct job_master *jm)
{
    struct jm_prepare *p;

    if (jm->eg->graph->checkpointing.checkpoints_dir == NULL &&
        jm->eg->graph->savepoint_path == NULL) {
        /* No folder: no checkpoints to take or recover (manual ones are
         * refused with that reason); savepoints take their ids from the
         * coordinator. */
        jm_make_coordinator(jm, NULL, NULL);
        jm->prepared = true;
        return;
    }
    p = xcalloc(1, sizeof *p);
    p->jm = jm;
    p->sp_path = jm->eg->graph->savepoint_path;
    if (rpc_endpoint_run_blocking(&jm->ep, jm_prepare_work, jm_prepare_done, p) != 0) {
        jm_prepare_work(p);
        jm_prepare_done(p);
    }
}

/* ---- life cycle ------------------------------------------------------------------------ */

/* One slot per subtask index of each slot sharing group. */
static void
jm_request_slots(struct job_master *jm)
{
    if (jm->slots_requested || job_status_is_terminal(jm->status))
        return;
    jm->slots_requested = true;
    for (int k = 0; k < jm->slots_needed; k++) {
        jm->slots[k].pending = true;
        slot_pool_request_slot(&jm->pool, (uint32_t)k);
    }
}

static void
jm_on_start(struct rpc_endpoint *ep)
{
    struct job_master *jm = jm_of(ep);
    spate_error err = { 0 };
    char strategy[300];

    jm->rm_retrieval = jm->o.ha->ops->resource_manager_retriever(jm->o.ha);
    if (leader_retrieval_start(jm->rm_retrieval, &jm_rm_listener, jm, &err) != 0)
        SPATE_LOG_ERROR(JM_LOG, "cannot retrieve the ResourceManager: %s", err.message);
    jm_set_status(jm, JOB_RUNNING);
    restart_strategy_describe(&jm->restart, strategy, sizeof strategy);
    SPATE_LOG_INFO(JM_LOG, "job %s: restart strategy %s; %s", id_str(&jm->o.job_id).s, strategy,
                   jm->eg->graph->checkpointing.interval_ms > 0 ? "checkpoints on"
                                                                : "no periodic checkpoints");
    jm_prepare(jm);
    if (jm->eg->graph->savepoint_path == NULL)
        jm_request_slots(jm);
}

static void
jm_on_stop(struct rpc_endpoint *ep)
{
    struct job_master *jm = jm_of(ep);

    /* Stopped before the job ended (a new leader takes over, the process
     * exits): its checkpoints stay for whoever recovers it. */
    if (jm->cc != NULL && !job_status_is_terminal(jm->status))
        checkpoint_coordinator_shutdown(jm->cc, CC_JOB_SUSPENDED);
    if (!job_status_is_terminal(jm->status))
        jm_terminate(jm, JOB_CANCELED, "the JobMaster stopped");
    jm_close_rm(jm);
    if (jm->rm_retrieval != NULL) {
        leader_retrieval_stop(jm->rm_retrieval);
        leader_retrieval_free(jm->rm_retrieval);
        jm->rm_retrieval = NULL;
    }
    heartbeat_manager_free(jm->hb_tm);
    heartbeat_manager_free(jm->hb_rm);
    jm->hb_tm = jm->hb_rm = NULL;
}

static void
jm_destroy(struct rpc_endpoint *ep)
{
    struct job_master *jm =
        container_of(ep, struct job_master, ep); /* no context: last reference */

    hmap_release(&jm->workers);
    checkpoint_coordinator_free(jm->cc);
    restart_strategy_release(&jm->restart);
    checkpoint_metadata_free(jm->restore_md);
    free(jm->restore_path);
    checkpoint_metadata_free(jm->sp_md);
    free(jm->sp_path);
    free(jm->slots);
    free(jm->restart_regions);
    execution_graph_free(jm->eg);
    accumulators_release(&jm->accumulators);
    free(jm->acc_msgs);
    free(jm->acc_ptrs);
    free(jm->name);
    free(jm->failure);
    free(jm->plan_json);
    for (size_t i = 0; i < jm->nexceptions; i++) {
        free(jm->exceptions[i].exception);
        free(jm->exceptions[i].task);
        free(jm->exceptions[i].location);
        free(jm->exceptions[i].task_manager_id);
    }
    free(jm->exceptions);
    free(jm->rm_address);
    free(jm);
}

static const struct rpc_endpoint_ops jm_ops = { jm_on_start, jm_on_stop, jm_destroy };

/* The job's checkpointing and restart strategy: what the job set, the
 * cluster's configuration for the rest; the TaskManagers read the interval
 * and the mode from the graph they are deployed with, so it is re-encoded
 * with the resolved settings. */
static int
jm_resolve_settings(struct execution_graph *eg, const struct config *cluster, spate_error *err)
{
    struct job_graph *jg = eg->graph;
    uint8_t *bytes;
    size_t len;
    int rc;

    if ((rc = job_settings_complete(&jg->checkpointing, &jg->restart, cluster,
                                    id_str(&jg->job_id).s, err)) != 0 ||
        (rc = job_settings_reencode(eg->graph_bytes, eg->graph_len, &jg->checkpointing,
                                    &jg->restart, &bytes, &len, err)) != 0)
        return rc;
    free(eg->graph_bytes);
    eg->graph_bytes = bytes;
    eg->graph_len = len;
    return 0;
}

int
job_master_start(struct rpc_service *svc, const struct job_master_options *o,
                 struct job_master **out, spate_error *err)
{
    struct job_master *jm = xcalloc(1, sizeof *jm);
    static const struct slot_pool_listener pl = { jm_send_request, jm_cancel_request, jm_fulfilled,
                                                  jm_timed_out, jm_free_slot };
    int64_t idle_ms = 50000; /* slot.idle.timeout's default */
    static const struct heartbeat_listener tm_l = { jm_tm_lost, NULL, NULL };
    static const struct heartbeat_listener rm_l = { jm_rm_lost, NULL, NULL };
    struct heartbeat_options ho = o->heartbeat;
    json_t *plan;
    char name[64];
    int rc;

    if (o->graph == NULL) {
        free(jm);
        return spate_error_set(err, SPATE_EINVAL, "a JobMaster needs a JobGraph");
    }
    if ((rc = execution_graph_new(o->graph, o->graph_len, o->blob_server, &jm->eg, err)) != 0) {
        free(jm);
        return rc;
    }
    if (o->library_key != NULL && !sha256_equal(o->library_key, jm->eg->graph->library_sha256)) {
        char a[SHA256_HEX_LEN + 1], b[SHA256_HEX_LEN + 1];

        rc = spate_error_set(err, SPATE_EINVAL,
                             "the JobGraph was built from job library %s, but the library "
                             "submitted with it is %s",
                             sha256_hex(jm->eg->graph->library_sha256, a),
                             sha256_hex(o->library_key, b));
        execution_graph_free(jm->eg);
        free(jm);
        return rc;
    }
    if ((rc = jm_resolve_settings(jm->eg, o->cluster_conf, err)) != 0) {
        execution_graph_free(jm->eg);
        free(jm);
        return rc;
    }
    accumulators_init(&jm->accumulators);
    jm->o = *o;
    jm->slots_needed = execution_graph_slots_needed(jm->eg);
    jm->o.job_id = jm->eg->graph->job_id;
    jm->slots = xcalloc((size_t)jm->slots_needed + 1, sizeof *jm->slots);
    jm->restart_regions = xcalloc((size_t)jm->eg->nregions + 1, sizeof *jm->restart_regions);
    restart_strategy_init(&jm->restart, &jm->eg->graph->restart, 0);
    jm->o.graph = NULL; /* the ExecutionGraph keeps its own copy */
    jm->name = xstrdup(o->name && *o->name ? o->name : jm->eg->graph->name);
    jm->o.name = jm->name;
    jm->jm_id = o->job_master_id;
    if (id_is_zero(&jm->jm_id))
        id_random(&jm->jm_id);
    id_random(&jm->resource_id);
    jm->status = JOB_CREATED;
    jm->start_time = jm->last_modification = clock_wall_ms();
    jm->status_times[JOB_INITIALIZING] = jm->status_times[JOB_CREATED] = jm->start_time;
    plan = job_graph_plan_json(jm->eg->graph);
    jm->plan_json = json_dumps(plan, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(plan);
    jm->end_time = -1;
    hmap_init(&jm->workers);
    snprintf(name, sizeof name, "jobmaster_%s", id_str(&jm->o.job_id).s);
    if ((rc = rpc_endpoint_init(&jm->ep, svc, name, &jm_ops, err)) != 0) {
        execution_graph_free(jm->eg);
        free(jm->name);
        free(jm);
        return rc;
    }
    rpc_endpoint_bind(&jm->ep, &jm_protocol, &jm_handlers);
    rpc_endpoint_bind(&jm->ep, &heartbeat_protocol, &heartbeat_default_handlers);
    rpc_endpoint_set_fencing_token(&jm->ep, &jm->jm_id);
    rpc_endpoint_address(&jm->ep, jm->address, sizeof jm->address);
    if (o->cluster_conf != NULL &&
        config_get_duration_ms(o->cluster_conf, CFG(SLOT_IDLE_TIMEOUT), &idle_ms, NULL) != 0)
        idle_ms = 50000;
    slot_pool_init(&jm->pool, &jm->ep, o->slot_request_timeout_ms, idle_ms, &pl, jm);
    ho.own_id = jm->resource_id;
    ho.sender = true;
    ho.channel = HEARTBEAT_JM_TM;
    jm->hb_tm = heartbeat_manager_new(&jm->ep, &ho, &tm_l, jm);
    ho.sender = false;
    ho.channel = HEARTBEAT_RM_JM;
    jm->hb_rm = heartbeat_manager_new(&jm->ep, &ho, &rm_l, jm);
    if ((rc = rpc_endpoint_start(&jm->ep, err)) != 0) {
        heartbeat_manager_free(jm->hb_tm);
        heartbeat_manager_free(jm->hb_rm);
        rpc_future_unref(rpc_endpoint_stop(&jm->ep));
        return rc;
    }
    *out = jm;
    return 0;
}

void
job_master_cancel(struct job_master *jm, const char *why)
{
    SPATE_LOG_INFO(JM_LOG, "cancelling job %s: %s", id_str(&jm->o.job_id).s, why);
    if (job_status_is_terminal(jm->status) || jm->status == JOB_CANCELLING)
        return;
    jm_restart_stop(jm);
    if (jm->cc != NULL)
        checkpoint_coordinator_suspend(jm->cc, "the job is being cancelled");
    jm_set_status(jm, JOB_CANCELLING);
    jm_cancel_executions(jm, NULL);
    jm_check_end(jm);
}

struct rpc_future *
job_master_stop(struct job_master *jm)
{
    return rpc_endpoint_stop(&jm->ep);
}

const struct execution_graph *
job_master_execution_graph(const struct job_master *jm)
{
    return jm->eg;
}

Ckstats__CheckpointingStats *
job_master_checkpoint_stats(struct job_master *jm, int64_t checkpoint_id)
{
    const struct checkpoint_settings *cfg = &jm->eg->graph->checkpointing;
    Ckstats__CheckpointingStats *s;

    if (jm->cc != NULL)
        return checkpoint_coordinator_stats(jm->cc, checkpoint_id);
    /* A job whose stores are still being opened. */
    s = xmalloc(sizeof *s);
    ckstats__checkpointing_stats__init(s);
    s->enabled = cfg->interval_ms > 0;
    s->interval_ms = cfg->interval_ms;
    s->timeout_ms = cfg->timeout_ms;
    s->min_pause_ms = cfg->min_pause_ms;
    s->max_concurrent = cfg->max_concurrent;
    s->tolerable_failures = cfg->tolerable_failures;
    s->exactly_once = cfg->exactly_once;
    s->checkpoints_dir = xstrdup("");
    return s;
}

int
job_master_trigger_checkpoint(struct job_master *jm, const spate_id *trigger_id, spate_error *err)
{
    if (jm->cc == NULL)
        return spate_error_set(err, SPATE_ESTATE, "job %s takes no checkpoints yet: it is starting",
                               id_str(&jm->o.job_id).s);
    return checkpoint_coordinator_trigger_manual(jm->cc, trigger_id, err);
}

static void
jm_cancel_savepoint_done(void *arg, const spate_id *trigger_id, const char *location,
                         const char *failure)
{
    struct job_master *jm = arg;

    UNUSED(trigger_id);
    UNUSED(failure);
    /* Its tasks stopped after it and finish now: the job is cancelled. A
     * failed one leaves the job running. */
    if (location != NULL)
        jm->cancel_after_stop = true;
}

int
job_master_trigger_savepoint(struct job_master *jm, const spate_id *trigger_id,
                             const char *target_dir, enum job_savepoint_mode mode, bool drain,
                             spate_error *err)
{
    struct checkpoint_savepoint_request r = { 0 };
    const char *dir = target_dir;

    if (jm->cc == NULL)
        return spate_error_set(err, SPATE_ESTATE, "job %s takes no savepoints yet: it is starting",
                               id_str(&jm->o.job_id).s);
    if (dir == NULL || *dir == '\0')
        dir = jm->eg->graph->checkpointing.savepoints_dir;
    if (dir == NULL)
        return spate_error_set(err, SPATE_EINVAL,
                               "no folder for the savepoint of job %s: give a target directory or "
                               "set state.savepoints.dir",
                               id_str(&jm->o.job_id).s);
    if (dir[0] != '/')
        return spate_error_set(err, SPATE_EINVAL,
                               "the savepoint folder '%s' is not an absolute path", dir);
    r.target_dir = dir;
    r.type = mode == JOB_SAVEPOINT_ONLY ? CHECKPOINT__CHECKPOINT_TYPE__SAVEPOINT
             : mode == JOB_SAVEPOINT_STOP && drain
                 ? CHECKPOINT__CHECKPOINT_TYPE__SAVEPOINT_TERMINATE
                 : CHECKPOINT__CHECKPOINT_TYPE__SAVEPOINT_SUSPEND;
    r.drain = mode == JOB_SAVEPOINT_STOP && drain;
    if (mode == JOB_SAVEPOINT_CANCEL) {
        r.done = jm_cancel_savepoint_done;
        r.arg = jm;
    }
    return checkpoint_coordinator_trigger_savepoint(jm->cc, trigger_id, &r, err);
}

Ckstats__TriggerStatuses *
job_master_trigger_statuses(struct job_master *jm)
{
    Ckstats__TriggerStatuses *all;

    if (jm->cc != NULL)
        return checkpoint_coordinator_trigger_statuses(jm->cc);
    all = xmalloc(sizeof *all);
    ckstats__trigger_statuses__init(all);
    return all;
}

int
job_master_checkpoint_status(struct job_master *jm, const spate_id *trigger_id,
                             Ckstats__TriggerStatus *out, spate_error *err)
{
    if (jm->cc == NULL)
        return spate_error_set(err, SPATE_ENOENT, "no checkpoint was triggered with id %s",
                               id_str(trigger_id).s);
    return checkpoint_coordinator_trigger_status(jm->cc, trigger_id, out, err);
}

enum job_status
job_master_status(const struct job_master *jm)
{
    return jm->status;
}

spate_id
job_master_job_id(const struct job_master *jm)
{
    return jm->o.job_id;
}

const char *
job_master_name(const struct job_master *jm)
{
    return jm->name;
}

void
job_master_info(struct job_master *jm, Cluster__JobInfo *info)
{
    struct execution_graph *eg = jm->eg;
    size_t n = jm->accumulators.count;

    cluster__job_info__init(info);
    info->job_id = gw_id_bytes(&jm->o.job_id);
    info->name = jm->name;
    info->state = (char *)job_status_name(jm->status);
    info->start_time = jm->start_time;
    info->end_time = jm->end_time;
    info->last_modification = jm->last_modification;
    info->failure = jm->failure ? jm->failure : "";
    jm->acc_msgs = xrealloc(jm->acc_msgs, (n + 1) * sizeof *jm->acc_msgs);
    jm->acc_ptrs = xrealloc(jm->acc_ptrs, (n + 1) * sizeof *jm->acc_ptrs);
    for (size_t i = 0; i < n; i++) {
        cluster__accumulator__init(&jm->acc_msgs[i]);
        jm->acc_msgs[i].name = jm->accumulators.counters[i]->name;
        jm->acc_msgs[i].value = jm->accumulators.counters[i]->value;
        jm->acc_ptrs[i] = &jm->acc_msgs[i];
    }
    info->n_accumulators = n;
    info->accumulators = jm->acc_ptrs;
    info->tasks_total = (uint32_t)eg->total;
    for (int v = 0; v < eg->graph->nvertices; v++) {
        for (int i = 0; i < eg->graph->vertices[v].parallelism; i++) {
            switch (eg->executions[v][i].state) {
            case EXEC_CREATED:
                info->tasks_created++;
                break;
            case EXEC_SCHEDULED:
                info->tasks_scheduled++;
                break;
            case EXEC_DEPLOYING:
                info->tasks_deploying++;
                break;
            case EXEC_INITIALIZING:
                info->tasks_initializing++;
                break;
            case EXEC_RUNNING:
                info->tasks_running++;
                break;
            case EXEC_FINISHED:
                info->tasks_finished++;
                break;
            case EXEC_CANCELING:
                info->tasks_canceling++;
                break;
            case EXEC_CANCELED:
                info->tasks_canceled++;
                break;
            case EXEC_FAILED:
            case EXEC_STATE_COUNT:
                info->tasks_failed++;
                break;
            }
        }
    }
}

/* Flink's ExecutionJobVertex#getAggregateJobVertexState. */
static enum execution_state
jm_vertex_state(const uint32_t *counts, int parallelism)
{
    if (counts[EXEC_FAILED] > 0)
        return EXEC_FAILED;
    if (counts[EXEC_CANCELING] > 0)
        return EXEC_CANCELING;
    if (counts[EXEC_CANCELED] > 0)
        return EXEC_CANCELED;
    if (counts[EXEC_INITIALIZING] > 0)
        return EXEC_INITIALIZING;
    if (counts[EXEC_RUNNING] > 0)
        return EXEC_RUNNING;
    if (counts[EXEC_FINISHED] > 0)
        return counts[EXEC_FINISHED] == (uint32_t)parallelism ? EXEC_FINISHED : EXEC_RUNNING;
    if (counts[EXEC_DEPLOYING] > 0)
        return EXEC_DEPLOYING;
    if (counts[EXEC_SCHEDULED] > 0)
        return EXEC_SCHEDULED;
    return EXEC_CREATED;
}

int
job_master_details_pack(struct job_master *jm, uint8_t **out, size_t *len)
{
    Cluster__JobDetails d = CLUSTER__JOB_DETAILS__INIT;
    Cluster__JobInfo info;
    Cluster__VertexInfo *vs = NULL, **vps = NULL;
    Cluster__ExceptionInfo **xps = NULL;
    uint32_t *counts = NULL;
    int64_t times[JOB_SUSPENDED + 1];
    int nv = jm->eg->graph->nvertices;

    job_master_info(jm, &info);
    d.info = &info;
    d.plan = jm->plan_json != NULL ? jm->plan_json : "";
    memcpy(times, jm->status_times, sizeof times);
    d.n_status_timestamps = ARRAY_SIZE(times);
    d.status_timestamps = times;
    if (nv > 0) {
        vs = xcalloc((size_t)nv, sizeof *vs);
        vps = xcalloc((size_t)nv, sizeof *vps);
        counts = xcalloc((size_t)nv * EXEC_STATE_COUNT, sizeof *counts);
    }
    for (int v = 0; v < nv; v++) {
        const struct jg_vertex *jv = &jm->eg->graph->vertices[v];
        uint32_t *c = counts + (size_t)v * EXEC_STATE_COUNT;
        int64_t start = -1, end = -1;
        bool all_ended = true;

        cluster__vertex_info__init(&vs[v]);
        for (int i = 0; i < jv->parallelism; i++) {
            const struct execution *e = &jm->eg->executions[v][i];
            int64_t dep = e->timestamps[EXEC_DEPLOYING];

            c[e->state]++;
            if (dep > 0 && (start < 0 || dep < start))
                start = dep;
            if (execution_state_is_terminal(e->state)) {
                if (e->timestamps[e->state] > end)
                    end = e->timestamps[e->state];
            } else {
                all_ended = false;
            }
        }
        vs[v].id.data = (uint8_t *)jv->id.bytes;
        vs[v].id.len = ID_BYTES;
        vs[v].name = jv->name;
        vs[v].parallelism = jv->parallelism;
        vs[v].max_parallelism = jv->max_parallelism;
        vs[v].state = (char *)execution_state_name(jm_vertex_state(c, jv->parallelism));
        vs[v].start_time = start;
        vs[v].end_time = all_ended ? end : -1;
        vs[v].n_task_counts = EXEC_STATE_COUNT;
        vs[v].task_counts = c;
        vps[v] = &vs[v];
        d.parallelism = MAX(d.parallelism, jv->parallelism);
        d.max_parallelism = MAX(d.max_parallelism, jv->max_parallelism);
    }
    d.n_vertices = (size_t)nv;
    d.vertices = vps;
    if (jm->nexceptions > 0) {
        xps = xcalloc(jm->nexceptions, sizeof *xps);
        for (size_t i = 0; i < jm->nexceptions; i++)
            xps[i] = &jm->exceptions[i];
    }
    d.n_exceptions = jm->nexceptions;
    d.exceptions = xps;
    d.exceptions_truncated = jm->exceptions_truncated;
    *len = cluster__job_details__get_packed_size(&d);
    *out = xmalloc(*len ? *len : 1);
    cluster__job_details__pack(&d, *out);
    free(vs);
    free(vps);
    free(counts);
    free(xps);
    return 0;
}
