/* The JobMaster (job_master.h): its life cycle, the gateway's handlers
 * (TaskExecutor registration, offers, task states, input splits,
 * checkpoint acknowledgements), its ResourceManager connection and what REST
 * shows of the job. Deployment is job_master_deploy.c, failover
 * job_master_failover.c, checkpoints and the start from them
 * job_master_checkpoint.c. Loop thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/sha256.h"
#include "core/util.h"
#include "jobmanager/job_master_int.h"
#include "rpc/gateways.h"

static void jm_reconnect_rm(struct job_master *jm, const char *why);

/* The endpoint's state, from its handlers: only its own context may touch it. */
static struct job_master *
jm_of(struct rpc_endpoint *ep)
{
    RPC_ASSERT_IN(ep);
    return container_of(ep, struct job_master, ep);
}

struct jm_worker *
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

void
jm_set_status(struct job_master *jm, enum job_status s)
{
    jm->status = s;
    jm->last_modification = clock_wall_ms();
    jm->status_times[s] = jm->last_modification;
    SPATE_LOG_INFO(JM_LOG, "job '%s' switched to %s", jm->name, job_status_name(s));
}

/* ---- ending the job ------------------------------------------------------------------- */

void
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
    fs.job_master_id = gw_id_bytes(&jm->jm_id);
    rpc_future_unref(te_free_slot(w->gw, &fs, 0));
}

/* Frees the job's slots at their TaskExecutors, withdraws what is still
 * requested, says goodbye to the ResourceManager. */
static void
jm_release_resources(struct job_master *jm, const char *cause)
{
    struct list_node *n;
    struct hmap_node *h;

    if (!jm->suspended) {
        list_for_each(n, &jm->pool.allocated)
            jm_free_slot(jm, container_of(n, struct pool_slot, node), cause);
        list_for_each(n, &jm->pool.available)
            jm_free_slot(jm, container_of(n, struct pool_slot, node), cause);
    }
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

void
jm_terminate(struct job_master *jm, enum job_status s, const char *failure)
{
    if (job_status_is_terminal(jm->status))
        return;
    if (failure != NULL) {
        free(jm->failure);
        jm->failure = xstrdup(failure);
        SPATE_LOG_ERROR(JM_LOG, "job '%s' failed: %s", jm->name, failure);
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

/* ---- TaskExecutors ------------------------------------------------------------------- */

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
    SPATE_LOG_DEBUG(JM_LOG, "%s (%d/%d) %s -> %s", jm->eg->graph->vertices[e->vertex].name,
                    e->subtask + 1, jm->eg->graph->vertices[e->vertex].parallelism,
                    execution_state_name(e->state), req->state);
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
    /* A task its TaskExecutor cancelled on its own (it freed the slot, or
     * its job left this JobMaster) is a failure of that task: the restart
     * strategy decides, as for FAILED. Only a cancel this JobMaster asked
     * for ends a task quietly. */
    if ((state == EXEC_FAILED || state == EXEC_CANCELED) && !was_canceling) {
        char msg[1200];

        snprintf(msg, sizeof msg, "%s (%d/%d) %s: %s", jm->eg->graph->vertices[e->vertex].name,
                 e->subtask + 1, jm->eg->graph->vertices[e->vertex].parallelism,
                 state == EXEC_FAILED ? "failed" : "was cancelled by its TaskExecutor",
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

/* A source reader's request to its split enumerator (the seeds'
 * RequestNextInputSplit, generalised). */
static void
jmh_request_split(struct rpc_endpoint *ep, const Cluster__SplitRequest *req, struct rpc_call *call)
{
    struct job_master *jm = jm_of(ep);
    Cluster__SplitAssignment out = CLUSTER__SPLIT_ASSIGNMENT__INIT;
    struct source_coordinator *c;
    spate_error err = { 0 };
    struct execution *e;
    spate_id attempt;

    /* A split handed to an attempt that is being replaced would be lost. */
    if (!gw_id_get(&req->attempt_id, &attempt) ||
        (e = execution_graph_find(jm->eg, &attempt)) == NULL || e->vertex != req->vertex ||
        execution_state_is_terminal(e->state) || e->state == EXEC_CANCELING) {
        rpc_call_fail(call, SPATE_ESTATE, "no source splits for an attempt that is not running");
        return;
    }
    if ((c = execution_graph_source(jm->eg, req->vertex, req->operator_)) == NULL) {
        rpc_call_fail(call, SPATE_EINVAL, "operator %d of vertex %d is not a source",
                      req->operator_, req->vertex);
        return;
    }
    if (source_coordinator_request(c, e->subtask, req->register_reader, req->request_split,
                                   req->checkpoint_id, &out, &err) != 0) {
        rpc_call_fail(call, err.code, "%s", err.message);
        return;
    }
    rpc_call_reply(call, &out.base);
    free(out.splits);
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
    .request_split = jmh_request_split,
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
    SPATE_LOG_INFO(JM_LOG, "connected to ResourceManager %s", jm->rm_address);
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
    SPATE_LOG_INFO(JM_LOG, "connecting to ResourceManager %s (%s)", jm->rm_address, why);
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
    SPATE_LOG_WARN(JM_LOG, "ResourceManager lost: %s", message);
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

/* ---- life cycle ------------------------------------------------------------------------ */

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
    SPATE_LOG_INFO(JM_LOG, "restart strategy %s; %s", strategy,
                   jm->eg->graph->checkpointing.interval_ms > 0 ? "checkpoints on"
                                                                : "no periodic checkpoints");
    jm_prepare(jm);
    jm_metrics_start(jm);
    if (jm->eg->graph->savepoint_path == NULL)
        jm_request_slots(jm);
}

static void
jm_on_stop(struct rpc_endpoint *ep)
{
    struct job_master *jm = jm_of(ep);

    jm_metrics_stop(jm);
    /* Stopped before the job ended (a new leader takes over, the process
     * exits): its checkpoints stay for whoever recovers it. */
    if (jm->cc != NULL && !job_status_is_terminal(jm->status))
        checkpoint_coordinator_shutdown(jm->cc, CC_JOB_SUSPENDED);
    jm->suspended = !job_status_is_terminal(jm->status);
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
    if ((rc = execution_graph_load_sources(jm->eg, o->library_path, err)) != 0) {
        execution_graph_free(jm->eg);
        free(jm);
        return rc;
    }
    if ((rc = jm_resolve_settings(jm->eg, o->cluster_conf, err)) != 0 ||
        (rc = execution_graph_check_connectors(jm->eg, err)) != 0) {
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
    /* Its lines carry job=ID: JobMasters share the RPC thread. */
    rpc_endpoint_set_log_fields(&jm->ep, "job=%s", id_str(&jm->o.job_id).s);
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
    char restart[300];

    job_master_info(jm, &info);
    restart_strategy_flink_description(&jm->restart, restart, sizeof restart);
    d.restart_strategy = restart;
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
