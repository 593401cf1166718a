/* The JobMaster as the CheckpointCoordinator's owner (timers, blocking
 * work, triggers and notifications to the TaskExecutors) and the job's
 * start from its stores: the latest completed checkpoint of a recovered job,
 * or the savepoint it was submitted with. Loop thread. */
#include <stdio.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/util.h"
#include "ha/leader_election.h"
#include "jobmanager/job_master_int.h"
#include "jobmanager/state_assignment.h"
#include "rpc/gateways.h"

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
        SPATE_LOG_WARN(JM_LOG, "no worker thread; checkpoint I/O on the loop");
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
        SPATE_LOG_WARN(JM_LOG, "cannot trigger checkpoint %lld: %s", (long long)m->checkpoint_id,
                       err.message);
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

static int
jmc_confirm_leadership(void *owner, spate_error *err)
{
    struct job_master *jm = owner;

    if (jm->o.leader_election == NULL)
        return 0;
    return leader_election_verify(jm->o.leader_election, &jm->o.job_master_id, err);
}

static const struct checkpoint_coordinator_ops jm_cc_ops = {
    jmc_schedule, jmc_cancel, jmc_run_blocking, jmc_now,
    jmc_trigger,  jmc_notify, jmc_fail_job,     jmc_confirm_leadership,
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
    SPATE_LOG_INFO(JM_LOG, "resuming from savepoint '%s' (%s)", jm->sp_path, jm->sp_md->job_name);
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
        SPATE_LOG_INFO(JM_LOG, "recovered; resuming from '%s'", path);
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
    if (jm->o.cluster_conf != NULL) {
        int64_t history = 0;

        if (config_get_int(jm->o.cluster_conf, CFG(WEB_CHECKPOINTS_HISTORY), &history, NULL) == 0)
            o.history_size = (int)history;
    }
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

void
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
