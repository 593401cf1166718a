/* The JobMaster's failover (Flink's DefaultScheduler with
 * RestartPipelinedRegionFailoverStrategy): a failed task or a lost
 * TaskManager restarts its pipelined regions as the restart strategy allows
 * (cancel, wait, new attempts from the latest completed checkpoint) or
 * fails the job; the job's end once every execution ended. Loop thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/log.h"
#include "jobmanager/job_master_int.h"
#include "jobmanager/state_assignment.h"
#include "rpc/gateways.h"

static bool jm_restart_ready(const struct job_master *jm);

/* ---- the ExecutionGraph's end ------------------------------------------------------------ */

/* The job ended when every execution has: FINISHED when all finished. A
 * restart in progress waits for its executions instead. */
void
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
        jm_terminate(jm, JOB_FAILED, "tasks ended without finishing, and no failure was reported");
}

static void
jm_cancel_sent(struct rpc_future *f, void *arg)
{
    struct job_master *jm = arg;

    if (rpc_future_code(f) != 0 && rpc_endpoint_is_running(&jm->ep))
        SPATE_LOG_WARN(JM_LOG, "a cancel did not reach its task: %s", rpc_future_message(f));
}

/* Cancels every execution still alive (regions NULL), or those of the
 * regions set: those not deployed end at once, the others when their
 * TaskExecutor reports them CANCELED (or is lost). */
void
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
void
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

void
jm_restart_stop(struct job_master *jm)
{
    rpc_timer_cancel(jm->restart_timer);
    jm->restart_timer = NULL;
    jm->restarting = false;
}

/* The job fails for good: every task is cancelled, then FAILED. */
void
jm_fail(struct job_master *jm, const char *failure)
{
    if (job_status_is_terminal(jm->status) || jm->status == JOB_FAILING)
        return;
    free(jm->failure);
    jm->failure = xstrdup(failure);
    if (jm->nexceptions == 0)
        jm_record_exception(jm, failure, NULL);
    SPATE_LOG_ERROR(JM_LOG, "job '%s' is failing: %s", jm->name, failure);
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
void
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
        SPATE_LOG_INFO(JM_LOG, "recovery is suppressed by the restart strategy %s", strategy);
        jm_fail(jm, failure);
        return;
    }
    if (!jm->restarting) {
        memset(jm->restart_regions, 0, (size_t)eg->nregions * sizeof *jm->restart_regions);
        jm->restart_pause_over = false;
        jm->num_restarts++;
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
    SPATE_LOG_WARN(JM_LOG, "%d of %d pipelined regions restart in %lld ms: %s", nrestart,
                   eg->nregions, (long long)restart_strategy_backoff_ms(&jm->restart, now),
                   failure);
    jm_cancel_executions(jm, jm->restart_regions);
    rpc_timer_cancel(jm->restart_timer);
    jm->restart_pause_over = false;
    jm->restart_timer =
        rpc_endpoint_schedule(&jm->ep, (uint64_t)restart_strategy_backoff_ms(&jm->restart, now),
                              jm_restart_pause_over, jm);
}

/* A failure of one execution (its region restarts). */
void
jm_fail_execution(struct job_master *jm, const struct execution *e, const char *failure)
{
    bool *regions = xcalloc((size_t)jm->eg->nregions, sizeof *regions);

    regions[jm->eg->region[e->vertex][e->subtask]] = true;
    jm_failover(jm, failure, regions);
    free(regions);
}

/* Each source's split enumerator takes back what its restarting readers
 * fetched since the checkpoint they restore (md; NULL: a fresh start), or
 * becomes that checkpoint's when all of them restart. An enumerator that
 * cannot be restored fails its readers' requests, which fails the job
 * through its restart strategy. */
void
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
            const Checkpoint__SourceCoordinatorState *st = NULL;
            struct source_coordinator *c = execution_graph_source(eg, v, o);
            spate_error err = { 0 };

            for (size_t k = 0; md != NULL && k < md->n_operators; k++)
                if (md->operators[k]->operator_id.len == ID_BYTES &&
                    memcmp(md->operators[k]->operator_id.data, vx->ops[o].operator_id.bytes,
                           ID_BYTES) == 0)
                    st = md->operators[k]->source_coordinator;
            if (c != NULL && source_coordinator_restore(c, st, all ? NULL : restarting, &err) != 0)
                SPATE_LOG_ERROR(JM_LOG, "job %s: cannot restore the split enumerator of '%s': %s",
                                id_str(&jm->o.job_id).s, vx->ops[o].name, err.message);
        }
        free(restarting);
    }
}

void
jm_restore_clear(struct job_master *jm)
{
    checkpoint_metadata_free(jm->restore_md);
    free(jm->restore_path);
    jm->restore_md = NULL;
    jm->restore_path = NULL;
}

/* Whether md can be restored by this job; a clear error names its file. */
int
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
    SPATE_LOG_INFO(JM_LOG, "restarting %d tasks from %s", n,
                   jm->restore_path ? jm->restore_path : "their initial state");
    jm_set_status(jm, JOB_RUNNING);
    jm_try_deploy(jm);
}

/* A checkpoint that cannot be read does not get better with another
 * attempt: the job fails, saying which file. */
void
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
void
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

/* A TaskExecutor is gone: its slots too; their tasks ask for slots again. */
void
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
