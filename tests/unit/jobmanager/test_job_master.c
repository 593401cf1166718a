/* Unit tests of the JobMaster's failover (src/jobmanager/job_master_failover.c)
 * driven by hand: a JobMaster of a real JobGraph (a collection source of
 * parallelism 2, rebalanced into a sink: one pipelined region of four
 * tasks) with a fake ResourceManager and a fake TaskExecutor endpoint in the
 * same RPC service.
 * The test offers the slots the JobMaster asked for, reports the tasks'
 * states and reads what the JobMaster sent: a task fails and the restart
 * strategy allows a restart: the region's other tasks are cancelled, then
 * all four deployed anew; the strategy refuses: the job fails; a task its
 * TaskExecutor cancelled unasked restarts like a failed one. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <spate/spate.h>

#include "core/clock.h"
#include "core/config.h"
#include "core/util.h"
#include "ha/ha_services.h"
#include "jobmanager/job_master.h"
#include "rpc/gateways.h"
#include "rpc/service.h"
#include "streaming/job_graph_codec.h"
#include "streaming/stream_graph.h"
#include "../fake_retrieval.h"
#include "../wait.h"

/* ---- fake HA: the ResourceManager's leader, told by the test ---------------------- */

static struct fake_retrieval rm_retrieval = FAKE_RETRIEVAL_INIT;

static struct leader_retrieval *
fake_rm_retriever(struct ha_services *ha)
{
    UNUSED(ha);
    return &rm_retrieval.base;
}

static const struct ha_services_ops fake_ha_ops = { .resource_manager_retriever =
                                                        fake_rm_retriever };
static struct ha_services fake_ha = { &fake_ha_ops };

/* ---- the fakes' state: touched on the loop only ----------------------------------- */

#define MAX_SEEN 64

struct deployed {
    spate_id attempt;
    int vertex, subtask;
};

static struct {
    spate_id rm_leader, rm_resource, te_resource;
    int slot_requests;
    spate_id requests[MAX_SEEN];
    int ndeployed;
    struct deployed deployed[MAX_SEEN];
    int ncancelled;
    spate_id cancelled[MAX_SEEN];
    int nfreed; /* free_slot calls, but the test's probe */
    spate_id probe;
    int terminal; /* on_terminal calls */
} seen;

static struct rpc_service *svc;
static struct rpc_endpoint rm_ep, te_ep;
static struct job_master *jm;
static spate_id jm_id;
static struct config *conf;
static bool jm_stopped; /* by the test: the JobMaster may be freed */

/* ---- fake ResourceManager ---------------------------------------------------------- */

static void
rmh_register_job_master(struct rpc_endpoint *ep, const Cluster__JobMasterRegistration *req,
                        struct rpc_call *call)
{
    Cluster__RegistrationReply reply = CLUSTER__REGISTRATION_REPLY__INIT;

    UNUSED(ep);
    UNUSED(req);
    reply.accepted = true;
    reply.leader_id = gw_id_bytes(&seen.rm_leader);
    reply.leader_resource_id = gw_id_bytes(&seen.rm_resource);
    reply.registration_id = gw_id_bytes(&seen.rm_resource);
    rpc_call_reply(call, &reply.base);
}

static void
rmh_request_slot(struct rpc_endpoint *ep, const Cluster__SlotRequest *req, struct rpc_call *call)
{
    Cluster__Ack ack = CLUSTER__ACK__INIT;

    UNUSED(ep);
    cr_assert_lt(seen.slot_requests, MAX_SEEN);
    cr_assert(gw_id_get(&req->allocation_id, &seen.requests[seen.slot_requests]));
    seen.slot_requests++;
    rpc_call_reply(call, &ack.base);
}

static const struct rm_handlers fake_rm_handlers = {
    .register_job_master = rmh_register_job_master,
    .request_slot = rmh_request_slot,
};

/* ---- fake TaskExecutor --------------------------------------------------------------- */

static void
teh_submit_task(struct rpc_endpoint *ep, const Jobgraph__TaskDeployment *req, struct rpc_call *call)
{
    Cluster__Ack ack = CLUSTER__ACK__INIT;
    struct deployed *d = &seen.deployed[seen.ndeployed];

    UNUSED(ep);
    cr_assert_lt(seen.ndeployed, MAX_SEEN);
    cr_assert(gw_id_get(&req->attempt_id, &d->attempt));
    d->vertex = req->vertex;
    d->subtask = req->subtask;
    seen.ndeployed++;
    rpc_call_reply(call, &ack.base);
}

static void
teh_cancel_task(struct rpc_endpoint *ep, const Cluster__TaskId *req, struct rpc_call *call)
{
    Cluster__Ack ack = CLUSTER__ACK__INIT;

    UNUSED(ep);
    cr_assert_lt(seen.ncancelled, MAX_SEEN);
    cr_assert(gw_id_get(&req->attempt_id, &seen.cancelled[seen.ncancelled]));
    seen.ncancelled++;
    rpc_call_reply(call, &ack.base);
}

static void
teh_free_slot(struct rpc_endpoint *ep, const Cluster__FreeSlot *req, struct rpc_call *call)
{
    Cluster__Ack ack = CLUSTER__ACK__INIT;

    spate_id alloc;

    UNUSED(ep);
    cr_assert(gw_id_get(&req->allocation_id, &alloc));
    seen.nfreed += !id_equal(&alloc, &seen.probe);
    rpc_call_reply(call, &ack.base);
}

static const struct te_handlers fake_te_handlers = {
    .submit_task = teh_submit_task,
    .cancel_task = teh_cancel_task,
    .free_slot = teh_free_slot,
};

/* ---- the job ------------------------------------------------------------------------- */

/* A collection (2) -> rebalance -> print sink (2), built-in operators (no
 * job library): four tasks, two shared slots, one pipelined region. */
static void
job_graph_bytes(uint8_t **bytes, size_t *len)
{
    spate_env *env = env_new(NULL, NULL);
    int64_t values[] = { 1, 2, 3 };
    struct job_graph *jg;
    spate_error err = { 0 };
    spate_stream *s;

    s = spate_set_parallelism(spate_source_collection(env, spate_type_int64(), values, 3), 2);
    spate_set_parallelism(spate_sink_print(spate_rebalance(s)), 2);
    cr_assert_eq(job_graph_build(env, "failover", &jg, &err), 0, "%s", err.message);
    cr_assert_eq(job_graph_encode(jg, NULL, bytes, len, &err), 0, "%s", err.message);
    job_graph_free(jg);
    env_free(env);
}

static void
on_terminal(void *arg, struct job_master *j)
{
    UNUSED(arg);
    UNUSED(j);
    seen.terminal++;
}

/* ---- set-up ------------------------------------------------------------------------ */

static void
start_on_loop(void *arg)
{
    struct job_master_options o = { 0 };
    spate_error err = { 0 };
    uint8_t *bytes;
    size_t len;

    UNUSED(arg);
    cr_assert_eq(rpc_endpoint_init(&rm_ep, svc, RPC_ENDPOINT_RESOURCE_MANAGER, NULL, NULL), 0);
    rpc_endpoint_bind(&rm_ep, &rm_protocol, &fake_rm_handlers);
    rpc_endpoint_bind(&rm_ep, &heartbeat_protocol, &heartbeat_default_handlers);
    rpc_endpoint_set_fencing_token(&rm_ep, &seen.rm_leader);
    cr_assert_eq(rpc_endpoint_start(&rm_ep, NULL), 0);
    cr_assert_eq(rpc_endpoint_init(&te_ep, svc, RPC_ENDPOINT_TASK_EXECUTOR, NULL, NULL), 0);
    rpc_endpoint_bind(&te_ep, &te_protocol, &fake_te_handlers);
    rpc_endpoint_bind(&te_ep, &heartbeat_protocol, &heartbeat_default_handlers);
    cr_assert_eq(rpc_endpoint_start(&te_ep, NULL), 0);

    job_graph_bytes(&bytes, &len);
    id_random(&jm_id);
    o.job_master_id = jm_id;
    o.graph = bytes;
    o.graph_len = len;
    o.blob_server = "127.0.0.1:1";
    o.slot_request_timeout_ms = 60000;
    o.heartbeat = (struct heartbeat_options){ .interval_ms = 10000, .timeout_ms = 60000 };
    o.registration = (struct registration_options){ .initial_timeout_ms = 1000,
                                                    .max_timeout_ms = 2000,
                                                    .error_delay_ms = 50,
                                                    .refused_delay_ms = 20 };
    o.ha = &fake_ha;
    o.cluster_conf = conf;
    o.on_terminal = on_terminal;
    cr_assert_eq(job_master_start(svc, &o, &jm, &err), 0, "%s", err.message);
    free(bytes);
}

static const char *
address_of(const char *endpoint)
{
    static char a[2][300];
    static int k;

    k ^= 1;
    snprintf(a[k], sizeof a[k], "%s/%s", rpc_service_address(svc), endpoint);
    return a[k];
}

/* The fakes' view, the JobMaster's status and its tasks' states, read on the loop. */
struct view {
    int slot_requests, ndeployed, ncancelled, nfreed, terminal;
    enum job_status status;
    Cluster__JobInfo info;
};

static void
view_on_loop(void *arg)
{
    struct view *v = arg;

    v->slot_requests = seen.slot_requests;
    v->ndeployed = seen.ndeployed;
    v->ncancelled = seen.ncancelled;
    v->nfreed = seen.nfreed;
    v->terminal = seen.terminal;
    if (jm_stopped) /* it may be gone */
        return;
    v->status = job_master_status(jm);
    job_master_info(jm, &v->info);
}

static struct view
view(void)
{
    struct view v = { 0 };

    rpc_service_run_sync(svc, NULL, view_on_loop, &v);
    return v;
}

/* The test as the TaskExecutor: registers at the JobMaster and offers it the
 * slots the ResourceManager was asked for (run on the loop; replies unread). */
static void
offer_on_loop(void *arg)
{
    Cluster__TaskManagerRegistration r = CLUSTER__TASK_MANAGER_REGISTRATION__INIT;
    Cluster__SlotOffers so = CLUSTER__SLOT_OFFERS__INIT;
    Cluster__SlotOffer offers[MAX_SEEN], *ptrs[MAX_SEEN];
    struct rpc_gateway *gw;
    char jm_address[300];
    spate_id job = job_master_job_id(jm);

    UNUSED(arg);
    snprintf(jm_address, sizeof jm_address, "%s/jobmaster_%s", rpc_service_address(svc),
             id_str(&job).s);
    cr_assert_eq(rpc_gateway_new(svc, jm_address, &jm_id, &gw, NULL), 0);
    r.resource_id = gw_id_bytes(&seen.te_resource);
    r.address = (char *)address_of(RPC_ENDPOINT_TASK_EXECUTOR);
    r.data_port = 1;
    rpc_future_unref(jm_register_task_manager(gw, &r, 0));
    for (int i = 0; i < seen.slot_requests; i++) {
        cluster__slot_offer__init(&offers[i]);
        offers[i].allocation_id = gw_id_bytes(&seen.requests[i]);
        offers[i].index = (uint32_t)i;
        ptrs[i] = &offers[i];
    }
    so.resource_id = gw_id_bytes(&seen.te_resource);
    so.n_offers = (size_t)seen.slot_requests;
    so.offers = ptrs;
    rpc_future_unref(jm_offer_slots(gw, &so, 0));
    rpc_gateway_free(gw);
}

struct report {
    spate_id attempt;
    const char *state, *failure;
};

static void
report_on_loop(void *arg)
{
    const struct report *rp = arg;
    Cluster__TaskExecutionState st = CLUSTER__TASK_EXECUTION_STATE__INIT;
    struct rpc_gateway *gw;
    char jm_address[300];
    spate_id job = job_master_job_id(jm);

    snprintf(jm_address, sizeof jm_address, "%s/jobmaster_%s", rpc_service_address(svc),
             id_str(&job).s);
    cr_assert_eq(rpc_gateway_new(svc, jm_address, &jm_id, &gw, NULL), 0);
    st.attempt_id = gw_id_bytes(&rp->attempt);
    st.state = (char *)rp->state;
    st.failure = (char *)(rp->failure ? rp->failure : "");
    rpc_future_unref(jm_update_task_execution_state(gw, &st, 0));
    rpc_gateway_free(gw);
}

/* The test as the TaskExecutor: attempt is now in state. */
static void
report(const spate_id *attempt, const char *state, const char *failure)
{
    struct report rp = { *attempt, state, failure };

    rpc_service_run_sync(svc, NULL, report_on_loop, &rp);
}

static void
copy_deployed(void *arg)
{
    memcpy(arg, seen.deployed, sizeof seen.deployed);
}

static void
copy_cancelled(void *arg)
{
    memcpy(arg, seen.cancelled, sizeof seen.cancelled);
}

/* Starts a JobMaster with the restart strategy of conf's "restart-strategy.*"
 * keys and brings its four tasks to RUNNING; their deployments in d[0..3]. */
static void
start_running(const char *strategy, struct deployed *d)
{
    struct rpc_service_options o = { .bind_host = "127.0.0.1", .port = "0" };

    memset(&seen, 0, sizeof seen);
    jm_stopped = false;
    id_random(&seen.rm_leader);
    id_random(&seen.rm_resource);
    id_random(&seen.te_resource);
    conf = config_new();
    cr_assert_eq(config_load_string(conf, strategy, strlen(strategy), "test", NULL), 0);
    cr_assert_eq(rpc_service_new(&o, &svc, NULL), 0);
    cr_assert_eq(rpc_service_start(svc, NULL), 0);
    rpc_service_run_sync(svc, NULL, start_on_loop, NULL);
    WAIT_FOR(atomic_load(&rm_retrieval.started), 10, "the JobMaster's ResourceManager retrieval");
    rm_retrieval.l->notify_leader(rm_retrieval.arg, address_of(RPC_ENDPOINT_RESOURCE_MANAGER),
                                  &seen.rm_leader);
    WAIT_FOR(view().slot_requests == 2, 10, "a slot request per shared slot");
    rpc_service_run_sync(svc, NULL, offer_on_loop, NULL);
    WAIT_FOR(view().ndeployed == 4, 10, "the four tasks deployed");
    rpc_service_run_sync(svc, NULL, copy_deployed, d);
    for (int i = 0; i < 4; i++)
        report(&d[i].attempt, "RUNNING", NULL);
    WAIT_FOR(view().info.tasks_running == 4, 10, "four tasks RUNNING");
    cr_assert_eq(view().status, JOB_RUNNING);
}

static void
stop_jm_on_loop(void *arg)
{
    *(struct rpc_future **)arg = job_master_stop(jm);
    jm_stopped = true;
}

/* A free_slot of the probe allocation to the fake TaskExecutor, on the
 * connection every message of this service to it takes: once answered,
 * whatever was sent to it before has been handled. */
static void
probe_on_loop(void *arg)
{
    Cluster__FreeSlot fs = CLUSTER__FREE_SLOT__INIT;
    struct rpc_gateway *gw;

    cr_assert_eq(rpc_gateway_new(svc, address_of(RPC_ENDPOINT_TASK_EXECUTOR), NULL, &gw, NULL), 0);
    id_random(&seen.probe);
    fs.allocation_id = gw_id_bytes(&seen.probe);
    fs.cause = "probe";
    *(struct rpc_future **)arg = te_free_slot(gw, &fs, 0);
    rpc_gateway_free(gw);
}

static void
stop_on_loop(void *arg)
{
    UNUSED(arg);
    if (!jm_stopped)
        rpc_future_unref(job_master_stop(jm));
    rpc_future_unref(rpc_endpoint_stop(&te_ep));
    rpc_future_unref(rpc_endpoint_stop(&rm_ep));
}

static void
finish(void)
{
    rpc_service_run_sync(svc, NULL, stop_on_loop, NULL);
    rpc_service_free(svc);
    config_free(conf);
}

/* ---- tests ----------------------------------------------------------------------------- */

Test(job_master, a_failed_task_restarts_its_region_when_the_strategy_allows)
{
    struct deployed d[MAX_SEEN], again[MAX_SEEN];
    spate_id cancelled[MAX_SEEN];
    struct view v;

    start_running("restart-strategy.type: fixed-delay\n"
                  "restart-strategy.fixed-delay.attempts: 1\n"
                  "restart-strategy.fixed-delay.delay: 50 ms\n",
                  d);
    report(&d[0].attempt, "FAILED", "boom");
    /* The region's three other tasks are cancelled; the job restarts. */
    WAIT_FOR(view().ncancelled == 3, 10, "the region's other tasks cancelled");
    v = view();
    cr_assert_eq(v.status, JOB_RESTARTING, "%s", job_status_name(v.status));
    rpc_service_run_sync(svc, NULL, copy_cancelled, cancelled);
    for (int i = 0; i < 3; i++) {
        bool one_of_them = false;

        for (int k = 1; k < 4; k++)
            one_of_them |= id_equal(&cancelled[i], &d[k].attempt);
        cr_assert(one_of_them, "cancelled %s, not one of the other attempts",
                  id_str(&cancelled[i]).s);
    }
    cr_assert_eq(v.ndeployed, 4, "nothing deployed before the cancelled tasks ended");
    for (int k = 1; k < 4; k++)
        report(&d[k].attempt, "CANCELED", NULL);
    /* After the pause: four new attempts in the slots the job holds. */
    WAIT_FOR(view().ndeployed == 8, 10, "the region deployed again");
    v = view();
    cr_assert_eq(v.status, JOB_RUNNING, "%s", job_status_name(v.status));
    cr_assert_eq(v.slot_requests, 2, "the slots were kept: no new request");
    rpc_service_run_sync(svc, NULL, copy_deployed, again);
    for (int i = 4; i < 8; i++)
        for (int k = 0; k < 4; k++)
            cr_assert_not(id_equal(&again[i].attempt, &d[k].attempt),
                          "a restarted task deployed as its old attempt");
    cr_assert_eq(v.terminal, 0);
    finish();
}

Test(job_master, a_failed_task_fails_the_job_when_the_strategy_refuses)
{
    struct deployed d[MAX_SEEN];
    struct view v;

    start_running("restart-strategy.type: none\n", d);
    report(&d[1].attempt, "FAILED", "boom");
    WAIT_FOR(view().ncancelled == 3, 10, "the other tasks cancelled");
    v = view();
    cr_assert_eq(v.status, JOB_FAILING, "%s", job_status_name(v.status));
    for (int k = 0; k < 4; k++)
        if (k != 1)
            report(&d[k].attempt, "CANCELED", NULL);
    WAIT_FOR(view().terminal == 1, 10, "the job's end");
    v = view();
    cr_assert_eq(v.status, JOB_FAILED, "%s", job_status_name(v.status));
    cr_assert(strstr(v.info.failure, "boom") != NULL, "failure: %s", v.info.failure);
    cr_assert_eq(v.ndeployed, 4, "no restart");
    /* A job that ended gives its two slots back. */
    WAIT_FOR(view().nfreed == 2, 10, "the job's slots freed");
    finish();
}

/* A task its TaskExecutor cancelled on its own (it freed the slot, its
 * job went to another JobMaster) is a failure of that task, which the
 * restart strategy decides on: it ended the job as FAILED, with no reason,
 * when a paused former leader's TaskManagers had cancelled its tasks, and
 * then that of the new leader (issue 30's sigstop-leader fault). */
Test(job_master, a_task_its_taskexecutor_cancelled_restarts_its_region)
{
    struct deployed d[MAX_SEEN];
    struct view v;

    start_running("restart-strategy.type: fixed-delay\n"
                  "restart-strategy.fixed-delay.attempts: 1\n"
                  "restart-strategy.fixed-delay.delay: 50 ms\n",
                  d);
    report(&d[2].attempt, "CANCELED", NULL);
    WAIT_FOR(view().ncancelled == 3, 10, "the region's other tasks cancelled");
    v = view();
    cr_assert_eq(v.status, JOB_RESTARTING, "%s", job_status_name(v.status));
    for (int k = 0; k < 4; k++)
        if (k != 2)
            report(&d[k].attempt, "CANCELED", NULL);
    WAIT_FOR(view().ndeployed == 8, 10, "the region deployed again");
    v = view();
    cr_assert_eq(v.status, JOB_RUNNING, "%s", job_status_name(v.status));
    cr_assert_eq(v.terminal, 0);
    finish();
}

/* Stopped while its job runs (a new leader takes the job over), the
 * JobMaster leaves the job's slots to it: the TaskExecutor offers them to
 * the next leader's JobMaster (freeing them here let a new leader's job be
 * deployed into slots that were gone, test_ha's sigstop test). */
Test(job_master, a_stopped_jobmaster_leaves_the_jobs_slots_to_it)
{
    struct deployed d[MAX_SEEN];
    struct rpc_future *f;

    start_running("restart-strategy.type: none\n", d);
    rpc_service_run_sync(svc, NULL, stop_jm_on_loop, &f);
    cr_assert_eq(rpc_future_wait(f, 10000, NULL), 0);
    rpc_future_unref(f);
    rpc_service_run_sync(svc, NULL, probe_on_loop, &f);
    cr_assert_eq(rpc_future_wait(f, 10000, NULL), 0);
    rpc_future_unref(f);
    cr_assert_eq(view().nfreed, 0, "a slot freed by a JobMaster that was stopped");
    cr_assert_eq(view().terminal, 1);
    finish();
}
