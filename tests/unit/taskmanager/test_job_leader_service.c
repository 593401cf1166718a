/* Unit tests of src/taskmanager/job_leader_service.c against fake JobMaster
 * endpoints and a job leader retrieval the test drives: the service
 * registers at the JobMaster the retrieval names (fenced with its
 * JobMasterId) and reports the connection; when another JobMaster becomes
 * the leader it reports the lost leadership, drops the old connection and
 * connects to the new one; when the first one leads again (a new session),
 * it connects back; a slot request naming a new leader does the same. */
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
#include "taskmanager/job_leader_service.h"
#include "../fake_retrieval.h"
#include "../wait.h"

/* ---- fake HA: a job leader retrieval the test drives ---------------------------------- */

static struct fake_retrieval retrieval = FAKE_RETRIEVAL_INIT;

static struct leader_retrieval *
fake_jm_retriever(struct ha_services *ha, const spate_id *job, const char *default_address)
{
    UNUSED(ha);
    UNUSED(job);
    UNUSED(default_address);
    return &retrieval.base;
}

static const struct ha_services_ops fake_ha_ops = { .job_master_retriever = fake_jm_retriever };
static struct ha_services fake_ha = { &fake_ha_ops };

/* ---- fake JobMasters ----------------------------------------------------------------- */

struct fake_jm {
    struct rpc_endpoint ep;
    spate_id jm_id;       /* its fencing token: the leader session */
    spate_id resource_id; /* its heartbeat id */
    int registrations;    /* accepted (the fencing refuses stale tokens) */
    char address[300];
};

static struct rpc_service *svc;
static struct rpc_endpoint te; /* the TaskExecutor's stand-in: the service runs as it */
static struct fake_jm jms[2];
static struct job_table jobs;
static struct job_leader_service jls;
static spate_id job;

/* What the listener heard (loop thread; read after a run_sync). */
static int nconnected, nlost;
static spate_id connected_to[8], lost_from[8];

static struct fake_jm *
jm_of(struct rpc_endpoint *ep)
{
    return container_of(ep, struct fake_jm, ep);
}

static void
jmh_register(struct rpc_endpoint *ep, const Cluster__TaskManagerRegistration *req,
             struct rpc_call *call)
{
    struct fake_jm *jm = jm_of(ep);
    Cluster__RegistrationReply reply = CLUSTER__REGISTRATION_REPLY__INIT;

    UNUSED(req);
    jm->registrations++;
    reply.accepted = true;
    reply.leader_id = gw_id_bytes(&jm->jm_id);
    reply.leader_resource_id = gw_id_bytes(&jm->resource_id);
    reply.registration_id = gw_id_bytes(&job);
    rpc_call_reply(call, &reply.base);
}

static const struct jm_handlers fake_jm_handlers = { .register_task_manager = jmh_register };

static void
on_connected(void *arg, struct job_entry *e)
{
    UNUSED(arg);
    cr_assert(e->connected);
    cr_assert_not_null(e->jm);
    cr_assert_lt(nconnected, 8);
    connected_to[nconnected++] = e->jm_resource_id;
}

static void
on_lost_leadership(void *arg, struct job_entry *e)
{
    UNUSED(arg);
    cr_assert(e->connected, "told while the old connection still stands");
    cr_assert_lt(nlost, 8);
    lost_from[nlost++] = e->jm_resource_id;
}

static void
start_on_loop(void *arg)
{
    UNUSED(arg);
    cr_assert_eq(rpc_endpoint_init(&te, svc, "taskexecutor", NULL, NULL), 0);
    cr_assert_eq(rpc_endpoint_start(&te, NULL), 0);
    for (int i = 0; i < 2; i++) {
        char name[32];

        snprintf(name, sizeof name, "jobmaster_%d", i);
        id_random(&jms[i].jm_id);
        id_random(&jms[i].resource_id);
        cr_assert_eq(rpc_endpoint_init(&jms[i].ep, svc, name, NULL, NULL), 0);
        rpc_endpoint_bind(&jms[i].ep, &jm_protocol, &fake_jm_handlers);
        rpc_endpoint_set_fencing_token(&jms[i].ep, &jms[i].jm_id);
        cr_assert_eq(rpc_endpoint_start(&jms[i].ep, NULL), 0);
        snprintf(jms[i].address, sizeof jms[i].address, "%s/%s", rpc_service_address(svc), name);
    }
    job_table_init(&jobs);
    id_random(&job);
    jls = (struct job_leader_service){
        .ep = &te,
        .ha = &fake_ha,
        .jobs = &jobs,
        .reg = { .initial_timeout_ms = 1000,
                 .max_timeout_ms = 2000,
                 .error_delay_ms = 50,
                 .refused_delay_ms = 20 },
        .own_address = "127.0.0.1:1/taskexecutor",
        .data_port = 1,
        .listener = { on_connected, on_lost_leadership },
    };
    id_random(&jls.own_id);
}

static void
start(void)
{
    struct rpc_service_options o = { .bind_host = "127.0.0.1", .port = "0" };

    cr_assert_eq(rpc_service_new(&o, &svc, NULL), 0);
    cr_assert_eq(rpc_service_start(svc, NULL), 0);
    rpc_service_run_sync(svc, NULL, start_on_loop, NULL);
}

static void
stop_on_loop(void *arg)
{
    struct hmap_node *n;

    UNUSED(arg);
    while ((n = hmap_first(&jobs.jobs)) != NULL) {
        struct job_entry *e = container_of(n, struct job_entry, node);

        job_leader_service_disconnect(&jls, e);
        job_table_remove(&jobs, e);
    }
    job_table_release(&jobs);
    for (int i = 0; i < 2; i++)
        rpc_future_unref(rpc_endpoint_stop(&jms[i].ep));
    rpc_future_unref(rpc_endpoint_stop(&te));
}

static void
finish(void)
{
    rpc_service_run_sync(svc, &te, stop_on_loop, NULL);
    rpc_service_free(svc);
}

/* The slot request of a job whose leader is jms[i] (as requestSlot does). */
struct slot_request {
    int jm;
    bool add;
};

static void
slot_request_on_loop(void *arg)
{
    struct slot_request *r = arg;
    struct fake_jm *jm = &jms[r->jm];
    struct job_entry *e = job_table_get_or_create(&jobs, &job, &jm->jm_id, jm->address);

    job_leader_service_update(&jls, e, &jm->jm_id, jm->address);
    if (r->add)
        job_leader_service_add_job(&jls, e);
}

static void
slot_request(int jm, bool add)
{
    struct slot_request r = { jm, add };

    rpc_service_run_sync(svc, &te, slot_request_on_loop, &r);
}

/* The listener's counts and the entry's connection, read on the loop. */
struct view {
    int nconnected, nlost, registrations[2];
    bool connected;
    spate_id jm_id;
};

static void
view_on_loop(void *arg)
{
    struct view *v = arg;
    struct job_entry *e = job_table_find(&jobs, &job);

    v->nconnected = nconnected;
    v->nlost = nlost;
    v->registrations[0] = jms[0].registrations;
    v->registrations[1] = jms[1].registrations;
    v->connected = e != NULL && e->connected;
    if (e != NULL)
        v->jm_id = e->jm_id;
}

static struct view
view(void)
{
    struct view v = { 0 };

    rpc_service_run_sync(svc, &te, view_on_loop, &v);
    return v;
}

static void
tell_leader(int i)
{
    WAIT_FOR(atomic_load(&retrieval.started), 10, "the job's leader retrieval");
    retrieval.l->notify_leader(retrieval.arg, jms[i].address, &jms[i].jm_id);
}

static void
new_session(void *arg)
{
    struct fake_jm *jm = arg;

    id_random(&jm->jm_id);
    rpc_endpoint_set_fencing_token(&jm->ep, &jm->jm_id);
}

Test(job_leader_service, loses_and_regains_the_jobmaster_leader)
{
    struct view v;

    start();
    slot_request(0, true);
    tell_leader(0);
    WAIT_FOR(view().nconnected == 1, 10, "the connection to the first JobMaster");
    v = view();
    cr_assert(v.connected);
    cr_assert(id_equal(&connected_to[0], &jms[0].resource_id));
    cr_assert_eq(v.registrations[0], 1);
    cr_assert_eq(v.nlost, 0);

    /* The second JobMaster takes over: the first lost its leadership. */
    tell_leader(1);
    WAIT_FOR(view().nconnected == 2, 10, "the connection to the new leader");
    v = view();
    cr_assert_eq(v.nlost, 1);
    cr_assert(id_equal(&lost_from[0], &jms[0].resource_id), "the lost one is the first");
    cr_assert(id_equal(&connected_to[1], &jms[1].resource_id));
    cr_assert(id_equal(&v.jm_id, &jms[1].jm_id), "fenced with the new JobMasterId");
    cr_assert_eq(v.registrations[1], 1);

    /* The first one leads again, under a new session: connected back. */
    rpc_service_run_sync(svc, &jms[0].ep, new_session, &jms[0]);
    tell_leader(0);
    WAIT_FOR(view().nconnected == 3, 10, "the connection back to the first JobMaster");
    v = view();
    cr_assert_eq(v.nlost, 2);
    cr_assert(id_equal(&lost_from[1], &jms[1].resource_id));
    cr_assert(id_equal(&connected_to[2], &jms[0].resource_id));
    cr_assert(id_equal(&v.jm_id, &jms[0].jm_id));
    cr_assert_eq(v.registrations[0], 2);

    /* The same leader told again: nothing changes. */
    tell_leader(0);
    slot_request(0, false);
    v = view();
    cr_assert_eq(v.nconnected, 3);
    cr_assert_eq(v.nlost, 2);
    cr_assert(v.connected);
    finish();
}

Test(job_leader_service, a_slot_request_naming_a_new_leader_moves_the_connection)
{
    struct view v;

    start();
    slot_request(0, true);
    tell_leader(0);
    WAIT_FOR(view().nconnected == 1, 10, "the connection to the first JobMaster");
    /* requestSlot names the second JobMaster (its RM registration came
     * before the retrieval told): the service follows it. */
    slot_request(1, false);
    WAIT_FOR(view().nconnected == 2, 10, "the connection to the JobMaster the request named");
    v = view();
    cr_assert_eq(v.nlost, 1);
    cr_assert(id_equal(&connected_to[1], &jms[1].resource_id));
    cr_assert(id_equal(&v.jm_id, &jms[1].jm_id));
    finish();
}
