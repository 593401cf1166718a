/* The ResourceManager (resource_manager.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/util.h"
#include "ha/ha_services.h"
#include "jobmanager/resource_manager.h"
#include "rpc/arena.h"
#include "jobmanager/slot_manager.h"
#include "rpc/gateways.h"

#define RM_LOG "resourcemanager"

struct rm_worker {
    struct hmap_node node;
    spate_id resource_id;
    spate_id instance_id; /* this registration's */
    char *address;
    struct rpc_gateway *gw;
    uint32_t slots;
    int data_port;
    Cluster__Hardware hw;
    int64_t last_heartbeat; /* wall clock ms */
    bool slots_registered;  /* its first slot report arrived */
};

struct rm_job_master {
    struct hmap_node node;
    spate_id job_id;
    spate_id jm_id;
    spate_id resource_id;
    char *address;
    struct rpc_gateway *gw; /* fenced with jm_id */
};

struct resource_manager {
    struct rpc_endpoint ep;
    struct resource_manager_options o;
    spate_id rm_id;       /* ResourceManagerId: the fencing token */
    spate_id resource_id; /* its heartbeat id */
    struct slot_manager sm;
    struct hmap workers;
    struct hmap job_masters;
    struct heartbeat_manager *hb_tm;
    struct heartbeat_manager *hb_jm;
    bool leader; /* granted leadership (HA); rm_id is its session id */
};

/* The endpoint's state, from its handlers: only its own context may touch it. */
static struct resource_manager *
rm_of(struct rpc_endpoint *ep)
{
    RPC_ASSERT_IN(ep);
    return container_of(ep, struct resource_manager, ep);
}

static struct rm_worker *
rm_find_worker(struct resource_manager *rm, const spate_id *id)
{
    struct hmap_node *n;

    HMAP_FOR_EACH_WITH_HASH(n, id_hash(id), &rm->workers)
    {
        struct rm_worker *w = container_of(n, struct rm_worker, node);

        if (id_equal(&w->resource_id, id))
            return w;
    }
    return NULL;
}

static struct rm_job_master *
rm_find_jm(struct resource_manager *rm, const spate_id *job)
{
    struct hmap_node *n;

    HMAP_FOR_EACH_WITH_HASH(n, id_hash(job), &rm->job_masters)
    {
        struct rm_job_master *j = container_of(n, struct rm_job_master, node);

        if (id_equal(&j->job_id, job))
            return j;
    }
    return NULL;
}

/* Registrations go to the leader only: elsewhere they fail (and are
 * retried), they are not refused. */
static bool
rm_check_leader(struct resource_manager *rm, struct rpc_call *call)
{
    if (rm->leader)
        return true;
    rpc_call_fail(call, SPATE_EFENCED, "ResourceManager at %s is not the leader",
                  rm->ep.svc ? rpc_service_address(rm->ep.svc) : "?");
    return false;
}

/* ---- TaskExecutors -------------------------------------------------------------- */

static void
rm_worker_free(struct resource_manager *rm, struct rm_worker *w)
{
    hmap_remove(&rm->workers, &w->node);
    rpc_gateway_free(w->gw);
    free(w->address);
    free(w);
}

/* Drops a TaskExecutor: its slots go, the JobMasters that used them are told. */
static void
rm_close_worker(struct resource_manager *rm, struct rm_worker *w, const char *cause,
                bool tell_worker)
{
    spate_id jobs[64];
    size_t n = slot_manager_unregister_task_manager(&rm->sm, &w->resource_id, jobs, 64);
    Cluster__Disconnect d = CLUSTER__DISCONNECT__INIT;

    heartbeat_unmonitor(rm->hb_tm, &w->resource_id);
    d.id = gw_id_bytes(&w->resource_id);
    d.cause = (char *)cause;
    d.leader_id = gw_id_bytes(&rm->rm_id);
    for (size_t i = 0; i < n; i++) {
        struct rm_job_master *j = rm_find_jm(rm, &jobs[i]);

        if (j != NULL)
            jm_disconnect_task_manager(j->gw, &d, NULL);
    }
    if (tell_worker)
        te_disconnect_resource_manager(w->gw, &d, NULL);
    rm_worker_free(rm, w);
    SPATE_LOG_INFO(RM_LOG, "cluster now has %zu TaskManagers, %u slots (%u free)",
                   hmap_count(&rm->workers), slot_manager_slots_total(&rm->sm),
                   slot_manager_slots_free(&rm->sm));
}

static void
rm_worker_lost(void *arg, const spate_id *target, int reason, const char *message)
{
    struct resource_manager *rm = arg;
    struct rm_worker *w = rm_find_worker(rm, target);
    char cause[SPATE_ERROR_MESSAGE_MAX + 64];

    if (w == NULL)
        return;
    /* Which of the two: the log says it plainly (crashed vs hung peers). */
    if (reason == SPATE_ETIMEDOUT)
        SPATE_LOG_WARN(RM_LOG, "TaskManager %s at %s lost: heartbeat timed out: %s",
                       id_str(target).s, w->address, message);
    else
        SPATE_LOG_WARN(RM_LOG, "TaskManager %s at %s lost: connection lost: %s", id_str(target).s,
                       w->address, message);
    snprintf(cause, sizeof cause, "TaskManager %s lost: %s", id_str(target).s, message);
    rm_close_worker(rm, w, cause, reason == SPATE_ETIMEDOUT);
}

static void
rm_worker_payload(void *arg, const spate_id *target, const uint8_t *data, size_t len)
{
    struct resource_manager *rm = arg;
    struct rm_worker *w = rm_find_worker(rm, target);
    Cluster__SlotReport *report;
    char first[512];
    struct arena a;

    if (w == NULL)
        return;
    w->last_heartbeat = clock_wall_ms();
    if (!w->slots_registered || len == 0)
        return;
    arena_init(&a, first, sizeof first);
    report = (Cluster__SlotReport *)arena_unpack(&a, &cluster__slot_report__descriptor, data, len);
    if (report != NULL)
        slot_manager_report(&rm->sm, target, report);
    else
        SPATE_LOG_WARN(RM_LOG, "undecodable slot report from TaskManager %s", id_str(target).s);
    arena_release(&a);
}

static void
rmh_register_task_executor(struct rpc_endpoint *ep, const Cluster__TaskExecutorRegistration *req,
                           struct rpc_call *call)
{
    struct resource_manager *rm = rm_of(ep);
    Cluster__RegistrationReply reply = CLUSTER__REGISTRATION_REPLY__INIT;
    spate_error err = { 0 };
    struct rm_worker *w;
    spate_id id;
    char reason[400];

    RPC_ASSERT_IN(ep);
    if (!rm_check_leader(rm, call))
        return;
    if (!gw_id_get(&req->resource_id, &id) || req->slots == 0 || req->slots > 65536) {
        rpc_call_fail(call, SPATE_EINVAL, "registration with a malformed resource id or slots");
        return;
    }
    w = rm_find_worker(rm, &id);
    if (w != NULL) {
        if (strcmp(w->address, req->address) != 0) {
            snprintf(reason, sizeof reason,
                     "resource id %s is already registered by a live TaskManager at %s",
                     id_str(&id).s, w->address);
            SPATE_LOG_WARN(RM_LOG, "refusing the registration of TaskManager at %s: %s",
                           req->address, reason);
            reply.accepted = false;
            reply.reason = reason;
            rpc_call_reply(call, &reply.base);
            return;
        }
        /* Seed 004 §2.3: the same TaskExecutor registers again (it
         * reconnected): its old registration and slots are replaced. */
        SPATE_LOG_INFO(RM_LOG, "TaskManager %s at %s registers again: replacing its slots",
                       id_str(&id).s, w->address);
        slot_manager_unregister_task_manager(&rm->sm, &id, NULL, 0);
        heartbeat_unmonitor(rm->hb_tm, &id);
        rm_worker_free(rm, w);
    }
    w = xcalloc(1, sizeof *w);
    if (rpc_gateway_new(ep->svc, req->address, NULL, &w->gw, &err) != 0) {
        free(w);
        rpc_call_fail(call, SPATE_EINVAL, "bad TaskExecutor address: %s", err.message);
        return;
    }
    w->resource_id = id;
    id_random(&w->instance_id);
    w->address = xstrdup(req->address);
    w->slots = req->slots;
    w->data_port = req->data_port;
    if (req->hardware != NULL) {
        w->hw = *req->hardware;
        w->hw.base.unknown_fields = NULL;
        w->hw.base.n_unknown_fields = 0;
    } else {
        cluster__hardware__init(&w->hw);
    }
    w->last_heartbeat = clock_wall_ms();
    hmap_insert(&rm->workers, &w->node, id_hash(&id));
    if (heartbeat_monitor(rm->hb_tm, &id, w->address, &err) != 0)
        SPATE_LOG_WARN(RM_LOG, "cannot monitor TaskManager %s: %s", id_str(&id).s, err.message);
    reply.accepted = true;
    reply.registration_id = gw_id_bytes(&w->instance_id);
    reply.leader_id = gw_id_bytes(&rm->rm_id);
    reply.leader_resource_id = gw_id_bytes(&rm->resource_id);
    rpc_call_reply(call, &reply.base);
}

/* Seed 004 §2.3: sendSlotReport: the SlotManager registers the slots. */
static void
rmh_send_slot_report(struct rpc_endpoint *ep, const Cluster__SendSlotReport *req,
                     struct rpc_call *call)
{
    struct resource_manager *rm = rm_of(ep);
    Cluster__Ack ack = CLUSTER__ACK__INIT;
    struct rm_worker *w;
    spate_id id, instance;

    if (!gw_id_get(&req->resource_id, &id) || !gw_id_get(&req->registration_id, &instance) ||
        (w = rm_find_worker(rm, &id)) == NULL || !id_equal(&w->instance_id, &instance)) {
        rpc_call_fail(call, SPATE_ESTATE, "unknown TaskManager registration %s",
                      req->registration_id.len == ID_BYTES ? id_str(&instance).s : "?");
        return;
    }
    slot_manager_register_task_manager(&rm->sm, &id, w, w->slots, req->report);
    w->slots_registered = true;
    SPATE_LOG_INFO(RM_LOG,
                   "registered TaskManager %s at %s with %u slots; cluster now has %zu "
                   "TaskManagers, %u slots (%u free)",
                   id_str(&id).s, w->address, w->slots, hmap_count(&rm->workers),
                   slot_manager_slots_total(&rm->sm), slot_manager_slots_free(&rm->sm));
    rpc_call_reply(call, &ack.base);
}

static void
rmh_notify_slot_available(struct rpc_endpoint *ep, const Cluster__SlotAvailable *req,
                          struct rpc_call *call)
{
    struct resource_manager *rm = rm_of(ep);
    spate_id id, instance, alloc;
    struct rm_worker *w;

    UNUSED(call);
    if (!gw_id_get(&req->resource_id, &id) || !gw_id_get(&req->registration_id, &instance) ||
        !gw_id_get(&req->allocation_id, &alloc) || (w = rm_find_worker(rm, &id)) == NULL ||
        !id_equal(&w->instance_id, &instance))
        return;
    slot_manager_free_slot(&rm->sm, &id, req->index, &alloc);
}

static void
rmh_disconnect_task_manager(struct rpc_endpoint *ep, const Cluster__Disconnect *req,
                            struct rpc_call *call)
{
    struct resource_manager *rm = rm_of(ep);
    struct rm_worker *w;
    spate_id id;

    UNUSED(call);
    if (!gw_id_get(&req->id, &id) || (w = rm_find_worker(rm, &id)) == NULL)
        return;
    SPATE_LOG_INFO(RM_LOG, "TaskManager %s at %s disconnects: %s", id_str(&id).s, w->address,
                   req->cause);
    rm_close_worker(rm, w, req->cause, false);
}

/* ---- slot allocation -------------------------------------------------------------- */

struct rm_alloc {
    struct resource_manager *rm;
    spate_id resource_id;
    spate_id allocation_id;
    uint32_t index;
};

static void
rm_alloc_done(struct rpc_future *f, void *arg)
{
    struct rm_alloc *a = arg;

    if (rpc_endpoint_is_running(&a->rm->ep)) {
        if (rpc_future_code(f) != 0)
            SPATE_LOG_WARN(RM_LOG, "TaskManager %s could not allocate slot %u: %s",
                           id_str(&a->resource_id).s, a->index, rpc_future_message(f));
        slot_manager_allocation_result(&a->rm->sm, &a->resource_id, a->index, &a->allocation_id,
                                       rpc_future_code(f) == 0);
    }
    free(a);
}

/* Seed 004 §2.4: allocateSlot: requestSlot at the TaskExecutor. */
static void
rm_allocate(void *arg, struct sm_task_manager *tm, uint32_t index, const struct sm_request *req)
{
    struct resource_manager *rm = arg;
    struct rm_worker *w = tm->owner;
    struct rm_job_master *j = rm_find_jm(rm, &req->job_id);
    Cluster__TaskExecutorSlotRequest msg = CLUSTER__TASK_EXECUTOR_SLOT_REQUEST__INIT;
    struct rm_alloc *a = xmalloc(sizeof *a);
    struct rpc_future *f;
    spate_id none;

    memset(&none, 0, sizeof none);
    a->rm = rm;
    a->resource_id = tm->resource_id;
    a->allocation_id = req->allocation_id;
    a->index = index;
    msg.index = index;
    msg.job_id = gw_id_bytes(&req->job_id);
    msg.allocation_id = gw_id_bytes(&req->allocation_id);
    msg.target_address = req->target_address;
    msg.resource_manager_id = gw_id_bytes(&rm->rm_id);
    msg.job_master_id = gw_id_bytes(j != NULL ? &j->jm_id : &none);
    f = te_request_slot(w->gw, &msg, 0);
    rpc_future_then(f, &rm->ep, rm_alloc_done, a);
    rpc_future_unref(f);
}

/* ---- JobMasters ------------------------------------------------------------------- */

static void
rm_jm_free(struct resource_manager *rm, struct rm_job_master *j)
{
    hmap_remove(&rm->job_masters, &j->node);
    rpc_gateway_free(j->gw);
    free(j->address);
    free(j);
}

static void
rm_close_jm(struct resource_manager *rm, struct rm_job_master *j)
{
    slot_manager_cancel_job(&rm->sm, &j->job_id);
    heartbeat_unmonitor(rm->hb_jm, &j->resource_id);
    rm_jm_free(rm, j);
}

static void
rm_jm_lost(void *arg, const spate_id *target, int reason, const char *message)
{
    struct resource_manager *rm = arg;
    struct hmap_node *n;

    UNUSED(reason);
    HMAP_FOR_EACH(n, &rm->job_masters)
    {
        struct rm_job_master *j = container_of(n, struct rm_job_master, node);

        if (id_equal(&j->resource_id, target)) {
            SPATE_LOG_WARN(RM_LOG, "JobMaster of job %s lost: %s", id_str(&j->job_id).s, message);
            rm_close_jm(rm, j);
            return;
        }
    }
}

static void
rmh_register_job_master(struct rpc_endpoint *ep, const Cluster__JobMasterRegistration *req,
                        struct rpc_call *call)
{
    struct resource_manager *rm = rm_of(ep);
    Cluster__RegistrationReply reply = CLUSTER__REGISTRATION_REPLY__INIT;
    struct rm_job_master *j;
    spate_id job, jm_id, rid;
    spate_error err = { 0 };

    if (!rm_check_leader(rm, call))
        return;
    if (!gw_id_get(&req->job_id, &job) || !gw_id_get(&req->job_master_id, &jm_id) ||
        !gw_id_get(&req->resource_id, &rid)) {
        rpc_call_fail(call, SPATE_EINVAL, "JobMaster registration with malformed ids");
        return;
    }
    if ((j = rm_find_jm(rm, &job)) != NULL)
        rm_close_jm(rm, j);
    j = xcalloc(1, sizeof *j);
    if (rpc_gateway_new(ep->svc, req->address, &jm_id, &j->gw, &err) != 0) {
        free(j);
        rpc_call_fail(call, SPATE_EINVAL, "bad JobMaster address: %s", err.message);
        return;
    }
    j->job_id = job;
    j->jm_id = jm_id;
    j->resource_id = rid;
    j->address = xstrdup(req->address);
    hmap_insert(&rm->job_masters, &j->node, id_hash(&job));
    if (heartbeat_monitor(rm->hb_jm, &rid, j->address, &err) != 0)
        SPATE_LOG_WARN(RM_LOG, "cannot monitor the JobMaster of job %s: %s", id_str(&job).s,
                       err.message);
    SPATE_LOG_INFO(RM_LOG, "registered the JobMaster of job %s at %s", id_str(&job).s, j->address);
    reply.accepted = true;
    reply.leader_id = gw_id_bytes(&rm->rm_id);
    reply.leader_resource_id = gw_id_bytes(&rm->resource_id);
    reply.registration_id = gw_id_bytes(&job);
    rpc_call_reply(call, &reply.base);
}

static void
rmh_request_slot(struct rpc_endpoint *ep, const Cluster__SlotRequest *req, struct rpc_call *call)
{
    struct resource_manager *rm = rm_of(ep);
    Cluster__Ack ack = CLUSTER__ACK__INIT;
    spate_id job, alloc;
    int rc;

    if (!gw_id_get(&req->job_id, &job) || !gw_id_get(&req->allocation_id, &alloc)) {
        rpc_call_fail(call, SPATE_EINVAL, "slot request with malformed ids");
        return;
    }
    if (rm_find_jm(rm, &job) == NULL) {
        rpc_call_fail(call, SPATE_ESTATE, "job %s has no JobMaster registered here",
                      id_str(&job).s);
        return;
    }
    rc = slot_manager_request_slot(&rm->sm, &job, &alloc, req->target_address);
    if (rc != 0 && rc != SPATE_EEXIST) {
        rpc_call_fail(call, rc, "slot request %s failed", id_str(&alloc).s);
        return;
    }
    rpc_call_reply(call, &ack.base);
}

static void
rmh_cancel_slot_request(struct rpc_endpoint *ep, const Cluster__CancelSlotRequest *req,
                        struct rpc_call *call)
{
    spate_id alloc;

    UNUSED(call);
    if (gw_id_get(&req->allocation_id, &alloc))
        slot_manager_cancel_request(&rm_of(ep)->sm, &alloc);
}

static void
rmh_disconnect_job_manager(struct rpc_endpoint *ep, const Cluster__Disconnect *req,
                           struct rpc_call *call)
{
    struct resource_manager *rm = rm_of(ep);
    struct rm_job_master *j;
    spate_id job;

    UNUSED(call);
    if (gw_id_get(&req->id, &job) && (j = rm_find_jm(rm, &job)) != NULL) {
        SPATE_LOG_INFO(RM_LOG, "the JobMaster of job %s disconnects: %s", id_str(&job).s,
                       req->cause);
        rm_close_jm(rm, j);
    }
}

/* ---- queries and shutdown ------------------------------------------------------------ */

static void
rmh_request_overview(struct rpc_endpoint *ep, const Cluster__Ack *req, struct rpc_call *call)
{
    struct resource_manager *rm = rm_of(ep);
    Cluster__ResourceOverview o = CLUSTER__RESOURCE_OVERVIEW__INIT;
    struct hmap_node *n;

    UNUSED(req);
    /* Only TaskManagers whose slots are registered count, as in Flink. */
    HMAP_FOR_EACH(n, &rm->workers)
    o.taskmanagers += container_of(n, struct rm_worker, node)->slots_registered;
    o.slots_total = slot_manager_slots_total(&rm->sm);
    o.slots_free = slot_manager_slots_free(&rm->sm);
    rpc_call_reply(call, &o.base);
}

static void
rmh_request_task_managers(struct rpc_endpoint *ep, const Cluster__TaskManagerQuery *req,
                          struct rpc_call *call)
{
    struct resource_manager *rm = rm_of(ep);
    Cluster__TaskManagerInfos out = CLUSTER__TASK_MANAGER_INFOS__INIT;
    size_t cap = hmap_count(&rm->workers), n = 0, slots_cap = 0, ns = 0;
    Cluster__TaskManagerInfo *infos = xcalloc(cap ? cap : 1, sizeof *infos);
    Cluster__TaskManagerInfo **ptrs = xcalloc(cap ? cap : 1, sizeof *ptrs);
    Cluster__SlotStatus *st = NULL, **stp = NULL;
    struct hmap_node *node;
    spate_id only;
    bool filter = gw_id_get(&req->resource_id, &only);

    HMAP_FOR_EACH(node, &rm->workers)
    {
        struct rm_worker *w = container_of(node, struct rm_worker, node);

        if (w->slots_registered && (!filter || id_equal(&w->resource_id, &only)))
            slots_cap += w->slots;
    }
    st = xcalloc(slots_cap ? slots_cap : 1, sizeof *st);
    stp = xcalloc(slots_cap ? slots_cap : 1, sizeof *stp);
    HMAP_FOR_EACH(node, &rm->workers)
    {
        struct rm_worker *w = container_of(node, struct rm_worker, node);
        struct sm_task_manager *tm = slot_manager_find_task_manager(&rm->sm, &w->resource_id);
        Cluster__TaskManagerInfo *i = &infos[n];

        if (!w->slots_registered || tm == NULL || (filter && !id_equal(&w->resource_id, &only)))
            continue;
        cluster__task_manager_info__init(i);
        i->resource_id = gw_id_bytes(&w->resource_id);
        i->address = w->address;
        i->data_port = w->data_port;
        i->slots = w->slots;
        i->free_slots = slot_manager_tm_free(tm);
        i->last_heartbeat_ms = w->last_heartbeat;
        i->hardware = &w->hw;
        i->allocated = &stp[ns];
        for (uint32_t s = 0; s < tm->slot_count; s++) {
            if (tm->slots[s].state != SM_SLOT_ALLOCATED)
                continue;
            cluster__slot_status__init(&st[ns]);
            st[ns].index = s;
            st[ns].allocation_id = gw_id_bytes(&tm->slots[s].allocation_id);
            st[ns].job_id = gw_id_bytes(&tm->slots[s].job_id);
            stp[ns] = &st[ns];
            ns++;
            i->n_allocated++;
        }
        ptrs[n++] = i;
    }
    out.n_taskmanagers = n;
    out.taskmanagers = ptrs;
    rpc_call_reply(call, &out.base);
    free(infos);
    free(ptrs);
    free(st);
    free(stp);
}

static void
rmh_stop_cluster(struct rpc_endpoint *ep, const Cluster__StopCluster *req, struct rpc_call *call)
{
    struct resource_manager *rm = rm_of(ep);
    Cluster__Ack ack = CLUSTER__ACK__INIT;
    struct hmap_node *n;

    /* Seed 000's StopCluster: every TaskManager is told to stop. */
    SPATE_LOG_INFO(RM_LOG, "stopping the cluster (%s): telling %zu TaskManagers to stop",
                   req->reason, hmap_count(&rm->workers));
    HMAP_FOR_EACH(n, &rm->workers)
    {
        struct rm_worker *w = container_of(n, struct rm_worker, node);

        te_stop_task_executor(w->gw, req, NULL);
    }
    rpc_call_reply(call, &ack.base);
}

static const struct rm_handlers rm_handlers = {
    .register_task_executor = rmh_register_task_executor,
    .send_slot_report = rmh_send_slot_report,
    .notify_slot_available = rmh_notify_slot_available,
    .register_job_master = rmh_register_job_master,
    .request_slot = rmh_request_slot,
    .cancel_slot_request = rmh_cancel_slot_request,
    .disconnect_task_manager = rmh_disconnect_task_manager,
    .disconnect_job_manager = rmh_disconnect_job_manager,
    .request_overview = rmh_request_overview,
    .request_task_managers = rmh_request_task_managers,
    .stop_cluster = rmh_stop_cluster,
};

/* ---- life cycle -------------------------------------------------------------------- */

static void
rm_on_stop(struct rpc_endpoint *ep)
{
    struct resource_manager *rm = rm_of(ep);
    struct hmap_node *n;

    heartbeat_manager_free(rm->hb_tm);
    heartbeat_manager_free(rm->hb_jm);
    rm->hb_tm = rm->hb_jm = NULL;
    while ((n = hmap_first(&rm->workers)) != NULL)
        rm_worker_free(rm, container_of(n, struct rm_worker, node));
    while ((n = hmap_first(&rm->job_masters)) != NULL)
        rm_jm_free(rm, container_of(n, struct rm_job_master, node));
    slot_manager_release(&rm->sm);
}

static void
rm_destroy(struct rpc_endpoint *ep)
{
    struct resource_manager *rm =
        container_of(ep, struct resource_manager, ep); /* no context: last reference */

    hmap_release(&rm->workers);
    hmap_release(&rm->job_masters);
    free(rm);
}

static const struct rpc_endpoint_ops rm_ops = { NULL, rm_on_stop, rm_destroy };

int
resource_manager_start(struct rpc_service *svc, const struct resource_manager_options *o,
                       struct resource_manager **out, spate_error *err)
{
    struct resource_manager *rm = xcalloc(1, sizeof *rm);
    static const struct slot_manager_actions sma = { rm_allocate };
    static const struct heartbeat_listener tm_l = { rm_worker_lost, rm_worker_payload, NULL };
    static const struct heartbeat_listener jm_l = { rm_jm_lost, NULL, NULL };
    struct heartbeat_options ho = o->heartbeat;
    int rc;

    rm->o = *o;
    id_random(&rm->rm_id); /* nobody's token until leadership is granted */
    id_random(&rm->resource_id);
    hmap_init(&rm->workers);
    hmap_init(&rm->job_masters);
    slot_manager_init(&rm->sm, &sma, rm);
    if ((rc = rpc_endpoint_init(&rm->ep, svc, RPC_ENDPOINT_RESOURCE_MANAGER, &rm_ops, err)) != 0) {
        free(rm);
        return rc;
    }
    rpc_endpoint_bind(&rm->ep, &rm_protocol, &rm_handlers);
    rpc_endpoint_bind(&rm->ep, &heartbeat_protocol, &heartbeat_default_handlers);
    rpc_endpoint_set_fencing_token(&rm->ep, &rm->rm_id);
    ho.own_id = rm->resource_id;
    ho.sender = true;
    ho.channel = HEARTBEAT_RM_TM;
    rm->hb_tm = heartbeat_manager_new(&rm->ep, &ho, &tm_l, rm);
    ho.channel = HEARTBEAT_RM_JM;
    rm->hb_jm = heartbeat_manager_new(&rm->ep, &ho, &jm_l, rm);
    if ((rc = rpc_endpoint_start(&rm->ep, err)) != 0) {
        rm_on_stop(&rm->ep);
        rpc_future_unref(rpc_endpoint_stop(&rm->ep));
        return rc;
    }
    SPATE_LOG_INFO(RM_LOG, "ResourceManager started, waiting for leadership");
    *out = rm;
    return 0;
}

struct rpc_future *
resource_manager_stop(struct resource_manager *rm)
{
    return rpc_endpoint_stop(&rm->ep);
}

/* ---- leadership (HA) ---------------------------------------------------------------- */

struct rm_leadership {
    struct resource_manager *rm;
    bool grant;
    spate_id session;
    struct leader_election *le;
};

static void
rm_apply_leadership(void *arg)
{
    struct rm_leadership *l = arg;
    struct resource_manager *rm = l->rm;
    struct hmap_node *n;
    char addr[300];

    if (!rpc_endpoint_is_running(&rm->ep))
        goto out;
    if (l->grant) {
        rm->rm_id = l->session;
        rpc_endpoint_set_fencing_token(&rm->ep, &rm->rm_id);
        rm->leader = true;
        SPATE_LOG_INFO(RM_LOG, "ResourceManager %s granted leadership", id_str(&rm->rm_id).s);
        if (l->le != NULL)
            leader_election_confirm(l->le, HA_COMPONENT_RESOURCE_MANAGER, &l->session,
                                    rpc_endpoint_address(&rm->ep, addr, sizeof addr));
        goto out;
    }
    if (!rm->leader)
        goto out;
    SPATE_LOG_WARN(RM_LOG,
                   "ResourceManager %s lost leadership: dropping %zu TaskManagers and %zu "
                   "JobMasters",
                   id_str(&rm->rm_id).s, hmap_count(&rm->workers), hmap_count(&rm->job_masters));
    rm->leader = false;
    while ((n = hmap_first(&rm->workers)) != NULL)
        rm_close_worker(rm, container_of(n, struct rm_worker, node),
                        "the ResourceManager is no longer the leader", true);
    while ((n = hmap_first(&rm->job_masters)) != NULL)
        rm_close_jm(rm, container_of(n, struct rm_job_master, node));
    id_random(&rm->rm_id);
    rpc_endpoint_set_fencing_token(&rm->ep, &rm->rm_id);
out:
    free(l);
}

void
resource_manager_grant_leadership(struct resource_manager *rm, const spate_id *session,
                                  struct leader_election *le)
{
    struct rm_leadership *l = xcalloc(1, sizeof *l);

    l->rm = rm;
    l->grant = true;
    l->session = *session;
    l->le = le;
    rpc_endpoint_run_async(&rm->ep, rm_apply_leadership, l);
}

void
resource_manager_revoke_leadership(struct resource_manager *rm)
{
    struct rm_leadership *l = xcalloc(1, sizeof *l);

    l->rm = rm;
    rpc_endpoint_run_async(&rm->ep, rm_apply_leadership, l);
}
