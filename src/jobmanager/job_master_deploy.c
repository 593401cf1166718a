/* The JobMaster's deployment: one slot per shared slot through the
 * SlotPool (its listener), executions placed in the slots they get, and
 * TaskDeploymentDescriptors sent once every waiting execution has one
 * (eager scheduling). Loop thread. */
#include <stdio.h>

#include "core/log.h"
#include "jobmanager/job_master_int.h"
#include "jobmanager/state_assignment.h"
#include "rpc/gateways.h"

/* The shared slot an execution runs in: group g's slots after those of the
 * groups before it. */
int
jm_shared_slot(const struct execution_graph *eg, const struct execution *e)
{
    int group, index, k = 0;

    execution_graph_slot_of(eg, e, &group, &index);
    for (int g = 0; g < group; g++)
        k += eg->group_slots[g];
    return k + index;
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
void
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
    SPATE_LOG_INFO(JM_LOG, "deploying %d tasks%s%s", n, jm->restore_path ? ", restoring " : "",
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
void
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
        SPATE_LOG_WARN(JM_LOG, "slot request not taken by the ResourceManager: %s",
                       rpc_future_message(f));
}

void
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

void
jm_cancel_request(void *arg, const spate_id *allocation)
{
    struct job_master *jm = arg;
    Cluster__CancelSlotRequest c = CLUSTER__CANCEL_SLOT_REQUEST__INIT;

    if (!jm->rm_connected)
        return;
    c.allocation_id = gw_id_bytes(allocation);
    rm_cancel_slot_request(jm->rm, &c, NULL);
}

void
jm_fulfilled(void *arg, const struct pool_slot *s)
{
    jm_assign_slot(arg, s);
}

void
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

/* One slot per subtask index of each slot sharing group. */
void
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
