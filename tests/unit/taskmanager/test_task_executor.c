/* Unit tests of src/taskmanager/task_executor.c against a fake
 * ResourceManager endpoint and fake HA services in the same RPC service
 * (seed 004 §2.2-2.4): the registration timeout runs while no
 * ResourceManager leader is known; the retrieved leader session fences the
 * registration; a slot the ResourceManager allocated and no JobMaster
 * accepted is freed after taskmanager.slot.timeout and reported; a former
 * leader's JobMaster may not free a slot of the job. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/util.h"
#include "ha/ha_services.h"
#include "rpc/gateways.h"
#include "rpc/service.h"
#include "taskmanager/task_executor.h"
#include "../fake_retrieval.h"
#include "../wait.h"

/* ---- fake HA: retrievers the test drives ------------------------------------------- */

static struct fake_retrieval rm_retrieval = FAKE_RETRIEVAL_INIT;
static struct fake_retrieval jm_retrieval = FAKE_RETRIEVAL_INIT;

static struct leader_retrieval *
fake_rm_retriever(struct ha_services *ha)
{
    UNUSED(ha);
    return &rm_retrieval.base;
}

static struct leader_retrieval *
fake_jm_retriever(struct ha_services *ha, const spate_id *job, const char *default_address)
{
    UNUSED(ha);
    UNUSED(job);
    UNUSED(default_address);
    return &jm_retrieval.base; /* tells nothing: no JobMaster ever connects */
}

static const struct ha_services_ops fake_ha_ops = { .resource_manager_retriever = fake_rm_retriever,
                                                    .job_master_retriever = fake_jm_retriever };
static struct ha_services fake_ha = { &fake_ha_ops };

/* ---- fake ResourceManager ---------------------------------------------------------- */

struct fake_rm {
    struct rpc_endpoint ep;
    spate_id leader;      /* the session it answers registrations with */
    spate_id resource_id; /* its heartbeat id */
    int registrations;    /* attempts seen */
    int slot_reports;
    int slots_available;
    uint32_t available_index;
    spate_id available_alloc;
};

static struct rpc_service *svc;
static struct fake_rm rm;
static struct task_executor *te;
static atomic_int exit_code = 1; /* 1: on_exit not called */
static char exit_reason[600];

static void
rmh_register(struct rpc_endpoint *ep, const Cluster__TaskExecutorRegistration *req,
             struct rpc_call *call)
{
    Cluster__RegistrationReply reply = CLUSTER__REGISTRATION_REPLY__INIT;
    spate_id reg;

    UNUSED(ep);
    UNUSED(req);
    rm.registrations++;
    id_random(&reg);
    reply.accepted = true;
    reply.leader_id = gw_id_bytes(&rm.leader);
    reply.leader_resource_id = gw_id_bytes(&rm.resource_id);
    reply.registration_id = gw_id_bytes(&reg);
    rpc_call_reply(call, &reply.base);
}

static void
rmh_slot_report(struct rpc_endpoint *ep, const Cluster__SendSlotReport *req, struct rpc_call *call)
{
    Cluster__Ack ack = CLUSTER__ACK__INIT;

    UNUSED(ep);
    UNUSED(req);
    rm.slot_reports++;
    rpc_call_reply(call, &ack.base);
}

static void
rmh_slot_available(struct rpc_endpoint *ep, const Cluster__SlotAvailable *req,
                   struct rpc_call *call)
{
    UNUSED(ep);
    UNUSED(call);
    rm.slots_available++;
    rm.available_index = req->index;
    cr_assert(gw_id_get(&req->allocation_id, &rm.available_alloc));
}

static const struct rm_handlers fake_rm_handlers = {
    .register_task_executor = rmh_register,
    .send_slot_report = rmh_slot_report,
    .notify_slot_available = rmh_slot_available,
};

static void
te_exit(void *arg, int code, const char *reason)
{
    UNUSED(arg);
    snprintf(exit_reason, sizeof exit_reason, "%s", reason);
    atomic_store(&exit_code, code);
}

/* ---- set-up ---------------------------------------------------------------------------- */

struct setup {
    int64_t registration_timeout_ms, slot_timeout_ms;
};

static void
start_on_loop(void *arg)
{
    struct setup *s = arg;
    struct task_executor_options o = { 0 };

    cr_assert_eq(rpc_endpoint_init(&rm.ep, svc, RPC_ENDPOINT_RESOURCE_MANAGER, NULL, NULL), 0);
    rpc_endpoint_bind(&rm.ep, &rm_protocol, &fake_rm_handlers);
    rpc_endpoint_bind(&rm.ep, &heartbeat_protocol, &heartbeat_default_handlers);
    rpc_endpoint_set_fencing_token(&rm.ep, &rm.leader);
    cr_assert_eq(rpc_endpoint_start(&rm.ep, NULL), 0);

    o.endpoint_name = RPC_ENDPOINT_TASK_EXECUTOR;
    id_random(&o.resource_id);
    o.slots = 2;
    o.registration = (struct registration_options){ .initial_timeout_ms = 1000,
                                                    .max_timeout_ms = 2000,
                                                    .error_delay_ms = 50,
                                                    .refused_delay_ms = 20 };
    o.registration_timeout_ms = s->registration_timeout_ms;
    o.slot_timeout_ms = s->slot_timeout_ms;
    o.heartbeat = (struct heartbeat_options){ .interval_ms = 10000, .timeout_ms = 60000 };
    o.ha = &fake_ha;
    o.on_exit = te_exit;
    cr_assert_eq(task_executor_start(svc, &o, &te, NULL), 0);
}

static void
start(int64_t registration_timeout_ms, int64_t slot_timeout_ms)
{
    struct rpc_service_options o = { .bind_host = "127.0.0.1", .port = "0" };
    struct setup s = { registration_timeout_ms, slot_timeout_ms };

    id_random(&rm.leader);
    id_random(&rm.resource_id);
    cr_assert_eq(rpc_service_new(&o, &svc, NULL), 0);
    cr_assert_eq(rpc_service_start(svc, NULL), 0);
    rpc_service_run_sync(svc, NULL, start_on_loop, &s);
}

static void
stop_on_loop(void *arg)
{
    UNUSED(arg);
    rpc_future_unref(task_executor_stop(te, "test over"));
    rpc_future_unref(rpc_endpoint_stop(&rm.ep));
}

static void
finish(void)
{
    rpc_service_run_sync(svc, NULL, stop_on_loop, NULL);
    rpc_service_free(svc);
}

/* The fake RM's view and the TaskExecutor's, read on the loop. */
struct view {
    struct fake_rm rm;
    bool registered;
};

static void
view_on_loop(void *arg)
{
    struct view *v = arg;

    v->rm = rm;
    v->registered = task_executor_is_registered(te);
}

static struct view
view(void)
{
    struct view v;

    rpc_service_run_sync(svc, NULL, view_on_loop, &v);
    return v;
}

static void
tell_rm_leader(const char *address, const spate_id *session)
{
    WAIT_FOR(atomic_load(&rm_retrieval.started), 10,
             "the TaskExecutor's ResourceManager retrieval");
    rm_retrieval.l->notify_leader(rm_retrieval.arg, address, session);
}

static const char *
rm_address(void)
{
    static char a[300];

    snprintf(a, sizeof a, "%s/%s", rpc_service_address(svc), RPC_ENDPOINT_RESOURCE_MANAGER);
    return a;
}

/* The ResourceManager's requestSlot of slot index for a new job whose
 * JobMaster (jm_id) never connects (its retrieval tells nothing); a
 * gateway to the TaskExecutor in *gw, the ids in *job and *alloc. */
static void
request_slot(uint32_t index, const spate_id *jm_id, spate_id *job, spate_id *alloc,
             struct rpc_gateway **gw)
{
    Cluster__TaskExecutorSlotRequest req = CLUSTER__TASK_EXECUTOR_SLOT_REQUEST__INIT;
    struct rpc_future *f;
    char te_address[300];

    id_random(job);
    id_random(alloc);
    req.job_id = gw_id_bytes(job);
    req.allocation_id = gw_id_bytes(alloc);
    req.resource_manager_id = gw_id_bytes(&rm.leader);
    req.job_master_id = gw_id_bytes(jm_id);
    req.target_address = "127.0.0.1:1/jobmaster_nobody";
    req.index = index;
    snprintf(te_address, sizeof te_address, "%s/%s", rpc_service_address(svc),
             RPC_ENDPOINT_TASK_EXECUTOR);
    cr_assert_eq(rpc_gateway_new(svc, te_address, NULL, gw, NULL), 0);
    f = te_request_slot(*gw, &req, 5000);
    cr_assert_eq(rpc_future_wait(f, 10000, NULL), 0, "requestSlot: %s", rpc_future_message(f));
    rpc_future_unref(f);
}

/* ---- tests ----------------------------------------------------------------------------- */

Test(task_executor, the_registration_timeout_runs_while_no_leader_is_known)
{
    start(300, 10000);
    /* The retrieval never names a ResourceManager: the TaskManager exits. */
    WAIT_FOR(atomic_load(&exit_code) != 1, 10, "taskmanager.registration.timeout without a leader");
    cr_assert_eq(atomic_load(&exit_code), SPATE_ETIMEDOUT);
    cr_assert(strstr(exit_reason, "no leader known") != NULL, "reason: %s", exit_reason);
    cr_assert(strstr(exit_reason, "taskmanager.registration.timeout") != NULL, "reason: %s",
              exit_reason);
    cr_assert_eq(view().rm.registrations, 0);
    finish();
}

Test(task_executor, a_leader_gone_again_arms_the_registration_timeout)
{
    start(400, 10000);
    tell_rm_leader(rm_address(), &rm.leader);
    WAIT_FOR(view().registered, 10, "the registration");
    cr_assert_eq(atomic_load(&exit_code), 1, "registered in time: %s", exit_reason);
    /* The leader is gone (NULL, NULL): no leader, the timeout runs again. */
    tell_rm_leader(NULL, NULL);
    WAIT_FOR(atomic_load(&exit_code) != 1, 10,
             "taskmanager.registration.timeout after the leader left");
    cr_assert_eq(atomic_load(&exit_code), SPATE_ETIMEDOUT);
    cr_assert(strstr(exit_reason, "no leader known") != NULL, "reason: %s", exit_reason);
    finish();
}

static void
set_rm_leader(void *arg)
{
    rm.leader = *(const spate_id *)arg;
    rpc_endpoint_set_fencing_token(&rm.ep, &rm.leader);
}

Test(task_executor, the_retrieved_leader_session_fences_the_registration)
{
    spate_id retrieved, other;
    struct view v;

    start(60000, 10000);
    id_random(&retrieved);
    other = rm.leader; /* the RM answers as another session than retrieved */
    tell_rm_leader(rm_address(), &retrieved);
    WAIT_FOR(view().rm.registrations >= 3, 10, "registration attempts refused and retried");
    v = view();
    cr_assert_not(v.registered, "registered with leader session %s, retrieved %s", id_str(&other).s,
                  id_str(&retrieved).s);
    cr_assert_eq(v.rm.slot_reports, 0);
    /* The RM at that address now answers as the retrieved session. */
    rpc_service_run_sync(svc, &rm.ep, set_rm_leader, &retrieved);
    WAIT_FOR(view().registered, 10, "the registration with the retrieved session");
    WAIT_FOR(view().rm.slot_reports == 1, 10, "the slot report, fenced with the retrieved session");
    cr_assert_eq(atomic_load(&exit_code), 1);
    finish();
}

Test(task_executor, a_slot_no_jobmaster_accepts_is_freed_after_the_slot_timeout)
{
    struct rpc_gateway *gw;
    spate_id job, alloc, jm_id;
    struct view v;

    start(60000, 200);
    tell_rm_leader(rm_address(), &rm.leader);
    WAIT_FOR(view().rm.slot_reports == 1, 10, "the registration and slot report");
    id_random(&jm_id);
    request_slot(1, &jm_id, &job, &alloc, &gw);
    rpc_gateway_free(gw);
    WAIT_FOR(view().rm.slots_available == 1, 10,
             "the slot to be freed after taskmanager.slot.timeout");
    v = view();
    cr_assert_eq(v.rm.available_index, 1);
    cr_assert(id_equal(&v.rm.available_alloc, &alloc));
    finish();
}

/* A JobMaster's freeSlot (fenced by its JobMasterId, issue 30): the slot is
 * led by the job's current JobMaster; a former leader's JobMaster, resumed
 * after a pause, may not free it (it would end the new leader's tasks). */
Test(task_executor, a_former_jobmasters_free_slot_is_refused)
{
    Cluster__FreeSlot fs = CLUSTER__FREE_SLOT__INIT;
    struct rpc_gateway *gw;
    struct rpc_future *f;
    spate_id job, alloc, jm_id, former;
    struct view v;

    start(60000, 60000);
    tell_rm_leader(rm_address(), &rm.leader);
    WAIT_FOR(view().rm.slot_reports == 1, 10, "the registration and slot report");
    id_random(&jm_id);
    id_random(&former);
    request_slot(0, &jm_id, &job, &alloc, &gw);

    /* The former leader's JobMaster: refused, the slot stays the job's. */
    fs.allocation_id = gw_id_bytes(&alloc);
    fs.cause = "job ended";
    fs.job_master_id = gw_id_bytes(&former);
    f = te_free_slot(gw, &fs, 5000);
    cr_assert_eq(rpc_future_wait(f, 10000, NULL), SPATE_EPERM, "a former JobMaster's freeSlot: %s",
                 rpc_future_message(f));
    rpc_future_unref(f);
    cr_assert_eq(view().rm.slots_available, 0);

    /* The job's JobMaster: the slot is free again. */
    fs.job_master_id = gw_id_bytes(&jm_id);
    f = te_free_slot(gw, &fs, 5000);
    cr_assert_eq(rpc_future_wait(f, 10000, NULL), 0);
    cr_assert_eq(rpc_future_code(f), 0, "freeSlot: %s", rpc_future_message(f));
    rpc_future_unref(f);
    WAIT_FOR(view().rm.slots_available == 1, 10, "the slot freed by its JobMaster");
    v = view();
    cr_assert(id_equal(&v.rm.available_alloc, &alloc));
    rpc_gateway_free(gw);
    finish();
}
