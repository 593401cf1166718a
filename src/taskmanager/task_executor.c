/* The TaskExecutor (task_executor.h). Seed 004's flow, step by step:
 * start-up (te_on_start), ResourceManager leader retrieval (te_rm_leader),
 * registration (te_reg_*), the slot report (te_rm_established), requestSlot
 * (teh_request_slot), the connection to the JobMaster through the
 * JobLeaderService and offerSlots (te_offer_slots). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/log_files.h"
#include "core/thread_dump.h"
#include "core/util.h"
#include "rpc/gateways.h"
#include "taskmanager/job_leader_service.h"
#include "taskmanager/job_table.h"
#include "taskmanager/metric_query.h"
#include "taskmanager/task.h"
#include "taskmanager/task_executor.h"
#include "taskmanager/task_slot_table.h"

/* Thread samples: at most this many threads, rounds and ms between them
 * (the loop waits through them). */
#define TE_SAMPLE_MAX_THREADS  64
#define TE_SAMPLE_MAX_ROUNDS   100
#define TE_SAMPLE_MAX_DELAY_MS 20

/* A log file over RPC: its last 8 MB (frames are at most 10 MiB). */
#define TE_LOG_MAX_BYTES (8u << 20)

struct task_executor {
    struct rpc_endpoint ep;
    struct task_executor_options o;
    char address[300]; /* host:port/endpoint */

    struct task_slot_table slots;
    struct job_table jobs;
    struct job_leader_service jls;

    /* the ResourceManager connection */
    struct leader_retrieval *rm_retrieval;
    char *rm_address;
    spate_id rm_session;    /* the retrieved leader session (zero: none told) */
    struct rpc_gateway *rm; /* fenced with rm_id once established */
    struct registration *rm_registration;
    struct rpc_timer *rm_registration_timeout;
    spate_id rm_id, rm_resource_id, registration_id;
    bool rm_established;

    struct heartbeat_manager *hb_rm; /* receiver: the ResourceManager asks */
    struct heartbeat_manager *hb_jm; /* receiver: JobMasters ask */

    struct te_task *tasks; /* running (and ending) tasks */
    /* Per slot: the state backend its tasks get, with the slot's shared
     * resources (RocksDB's managed memory), which outlive its tasks. */
    struct state_backend_options *slot_backends;
    struct shared_resources *slot_resources;
    /* The tasks' metrics (NULL when this TaskExecutor runs none) and the
     * timer that recomputes their rates (Flink's ViewUpdater). */
    struct metric_registry *metrics;
    struct rpc_timer *metrics_timer;
    struct tm_metric_group own_metrics; /* with metrics: the TaskManager's own */
    /* Tasks whose threads have not ended, for task_executor_wait_tasks
     * (read by the process's main thread: a mutex and a condition). */
    pthread_mutex_t live_lock;
    pthread_cond_t live_changed;
    int live;
};

/* A task of this TaskExecutor, with its cancellation watchdog. */
struct te_task {
    struct te_task *next;
    struct task *task;
    struct task_executor *te;
    struct rpc_timer *watchdog;
};

#define TE_LOG "taskexecutor"
/* How often per-second rates are recomputed: they are rates over this long
 * (Flink's view updater: 5 s). */
#define TE_METRICS_UPDATE_MS 1000

/* The endpoint's state, from its handlers: only its own context may touch it. */
static struct task_executor *
te_of(struct rpc_endpoint *ep)
{
    RPC_ASSERT_IN(ep);
    return container_of(ep, struct task_executor, ep);
}

int
task_executor_options_from_config(const struct config *conf, struct task_executor_options *o,
                                  spate_error *err)
{
    const char *rid = NULL;
    int64_t slots;
    int rc;

    memset(o, 0, sizeof *o);
    if ((rc = config_get_int(conf, CFG(TASKMANAGER_NUMBER_OF_TASK_SLOTS), &slots, err)) != 0 ||
        (rc = registration_options_from_config(conf, &o->registration, err)) != 0 ||
        (rc = config_get_duration_ms(conf, CFG(TASKMANAGER_REGISTRATION_TIMEOUT),
                                     &o->registration_timeout_ms, err)) != 0 ||
        (rc = config_get_duration_ms(conf, CFG(TASKMANAGER_SLOT_TIMEOUT), &o->slot_timeout_ms,
                                     err)) != 0 ||
        (rc = heartbeat_options_from_config(conf, &o->heartbeat, err)) != 0 ||
        (rc = config_get_duration_ms(conf, CFG(TASK_CANCELLATION_TIMEOUT),
                                     &o->cancellation_timeout_ms, err)) != 0 ||
        (rc = config_get_bool(conf, CFG(TASKMANAGER_TASKS_BATCH_SCHEDULING), &o->batch_scheduling,
                              err)) != 0 ||
        (rc = state_backend_options_from_config(conf, &o->state_backend, err)) != 0 ||
        (rc = latency_tracking_from_config(conf, &o->latency, err)) != 0)
        return rc;
    o->slots = (uint32_t)slots;
    config_get_string(conf, CFG(TASKMANAGER_HOST), &o->host, NULL);
    if (config_get_string(conf, CFG(TASKMANAGER_RESOURCE_ID), &rid, NULL) == 0 && rid != NULL) {
        /* Flink's ResourceID is any string; spate's are 32 hex digits. */
        if ((rc = id_parse(rid, &o->resource_id, err)) != 0)
            return spate_error_wrap(err, "taskmanager.resource-id");
    } else {
        id_random(&o->resource_id);
    }
    o->endpoint_name = RPC_ENDPOINT_TASK_EXECUTOR;
    return 0;
}

/* ---- the ResourceManager connection ------------------------------------------- */

static void te_reconnect_rm(struct task_executor *te, const char *why);

static void
te_close_rm(struct task_executor *te)
{
    registration_cancel(te->rm_registration);
    te->rm_registration = NULL;
    rpc_timer_cancel(te->rm_registration_timeout);
    te->rm_registration_timeout = NULL;
    if (te->rm_established)
        heartbeat_unmonitor(te->hb_rm, &te->rm_resource_id);
    rpc_gateway_free(te->rm);
    te->rm = NULL;
    te->rm_established = false;
}

static void
te_on_registration_timeout(void *arg)
{
    struct task_executor *te = arg;
    char msg[600];

    te->rm_registration_timeout = NULL;
    snprintf(msg, sizeof msg,
             "could not register at the ResourceManager %s within "
             "taskmanager.registration.timeout (%lld ms)",
             te->rm_address ? te->rm_address : "(no leader known)",
             (long long)te->o.registration_timeout_ms);
    SPATE_LOG_ERROR(TE_LOG, "%s", msg);
    te_close_rm(te);
    if (te->o.on_exit != NULL)
        te->o.on_exit(te->o.arg, SPATE_ETIMEDOUT, msg);
}

static struct rpc_future *
te_reg_attempt(void *arg, int64_t timeout_ms)
{
    struct task_executor *te = arg;
    Cluster__TaskExecutorRegistration r = CLUSTER__TASK_EXECUTOR_REGISTRATION__INIT;
    Cluster__Hardware hw = CLUSTER__HARDWARE__INIT;
    long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES);
    long psize = sysconf(_SC_PAGESIZE);

    hw.cpu_cores = (uint32_t)sysconf(_SC_NPROCESSORS_ONLN);
    hw.physical_memory = (uint64_t)pages * (uint64_t)psize;
    hw.free_memory = (uint64_t)avail * (uint64_t)psize;
    r.address = te->address;
    r.resource_id = gw_id_bytes(&te->o.resource_id);
    r.data_port = te->o.data_port;
    r.slots = te->o.slots;
    r.hardware = &hw;
    return rm_register_task_executor(te->rm, &r, timeout_ms);
}

/* The retrieved leader session fences the registration: a reply from
 * another session (a former leader still answering at the address, or one
 * that took over since) is a refusal, retried until the retrieval names the
 * leader that answers. */
static int
te_reg_check(void *arg, struct rpc_future *reply, spate_error *err)
{
    struct task_executor *te = arg;
    Cluster__RegistrationReply *r = rpc_future_value(reply);
    spate_id leader;

    if (!r->accepted)
        return spate_error_set(err, SPATE_EREMOTE, "%s", r->reason);
    if (!gw_id_get(&r->leader_id, &leader) || r->registration_id.len != ID_BYTES)
        return spate_error_set(err, SPATE_EPROTO, "registration reply without ids");
    if (!id_is_zero(&te->rm_session) && !id_equal(&leader, &te->rm_session))
        return spate_error_set(err, SPATE_EFENCED,
                               "answered by ResourceManager leader session %s, not by the "
                               "retrieved leader session %s",
                               id_str(&leader).s, id_str(&te->rm_session).s);
    return 0;
}

static void
te_slot_report_done(struct rpc_future *f, void *arg)
{
    struct task_executor *te = arg;

    if (rpc_future_code(f) == 0 || !rpc_endpoint_is_running(&te->ep))
        return;
    SPATE_LOG_WARN(TE_LOG, "the ResourceManager did not take the slot report: %s",
                   rpc_future_message(f));
    if (te->rm_established)
        te_reconnect_rm(te, "slot report failed");
}

/* Seed 004 §2.3: with the connection established, send the slot report. */
static void
te_rm_established(struct task_executor *te)
{
    Cluster__SendSlotReport msg = CLUSTER__SEND_SLOT_REPORT__INIT;
    struct task_slot_report report;
    struct rpc_gateway *fenced = rpc_gateway_with_token(te->rm, &te->rm_id);
    struct rpc_future *f;
    spate_error err = { 0 };

    rpc_gateway_free(te->rm);
    te->rm = fenced;
    te->rm_established = true;
    if (heartbeat_monitor(te->hb_rm, &te->rm_resource_id, te->rm->address, &err) != 0)
        SPATE_LOG_ERROR(TE_LOG, "cannot monitor the ResourceManager: %s", err.message);
    task_slot_table_report(&te->slots, &report);
    msg.resource_id = gw_id_bytes(&te->o.resource_id);
    msg.registration_id = gw_id_bytes(&te->registration_id);
    msg.report = &report.msg;
    f = rm_send_slot_report(te->rm, &msg, 0);
    task_slot_report_release(&report);
    rpc_future_then(f, &te->ep, te_slot_report_done, te);
    rpc_future_unref(f);
}

static void
te_reg_success(void *arg, struct rpc_future *reply)
{
    struct task_executor *te = arg;
    Cluster__RegistrationReply *r = rpc_future_value(reply);

    te->rm_registration = NULL;
    rpc_timer_cancel(te->rm_registration_timeout);
    te->rm_registration_timeout = NULL;
    gw_id_get(&r->leader_id, &te->rm_id);
    gw_id_get(&r->registration_id, &te->registration_id);
    if (!gw_id_get(&r->leader_resource_id, &te->rm_resource_id))
        te->rm_resource_id = te->rm_id;
    SPATE_LOG_INFO(TE_LOG,
                   "TaskExecutor %s registered at the ResourceManager %s under registration id %s",
                   id_str(&te->o.resource_id).s, te->rm_address, id_str(&te->registration_id).s);
    te_rm_established(te);
}

static void
te_reg_failure(void *arg, int code, const char *message)
{
    UNUSED(arg);
    UNUSED(code);
    UNUSED(message);
}

static const struct registration_ops te_reg_ops = { te_reg_attempt, te_reg_check, te_reg_success,
                                                    te_reg_failure, NULL };

/* Flink's startRegistrationTimeout: armed at start and at every
 * reconnection, known leader or not; only an established connection
 * cancels it. */
static void
te_start_registration_timeout(struct task_executor *te)
{
    rpc_timer_cancel(te->rm_registration_timeout);
    te->rm_registration_timeout = rpc_endpoint_schedule(
        &te->ep, (uint64_t)te->o.registration_timeout_ms, te_on_registration_timeout, te);
}

/* Seed 004 §2.2: reconnectToResourceManager: close, start the registration
 * timeout, try to connect (when a leader is known). */
static void
te_reconnect_rm(struct task_executor *te, const char *why)
{
    spate_error err = { 0 };
    char target[400];

    te_close_rm(te);
    if (!rpc_endpoint_is_running(&te->ep))
        return;
    te_start_registration_timeout(te);
    if (te->rm_address == NULL) {
        SPATE_LOG_INFO(TE_LOG, "no ResourceManager leader known (%s): waiting for one", why);
        return;
    }
    SPATE_LOG_INFO(TE_LOG, "connecting to ResourceManager %s (%s)", te->rm_address, why);
    if (rpc_gateway_new(te->ep.svc, te->rm_address,
                        id_is_zero(&te->rm_session) ? NULL : &te->rm_session, &te->rm, &err) != 0) {
        SPATE_LOG_ERROR(TE_LOG, "bad ResourceManager address: %s", err.message);
        return;
    }
    snprintf(target, sizeof target, "resource manager %s", te->rm_address);
    te->rm_registration = registration_start(&te->ep, target, &te->o.registration, &te_reg_ops, te);
}

struct te_news {
    struct task_executor *te;
    spate_id session;
    char address[];
};

static void
te_rm_leader(void *arg)
{
    struct te_news *n = arg;
    struct task_executor *te = n->te;

    if (rpc_endpoint_is_running(&te->ep)) {
        free(te->rm_address);
        te->rm_address = n->address[0] ? xstrdup(n->address) : NULL;
        te->rm_session = n->session;
        te_reconnect_rm(te, "new ResourceManager leader");
    }
    free(n);
}

/* May run on any thread (leader.h): hand it to the endpoint. */
static void
te_notify_rm_leader(void *arg, const char *address, const spate_id *session)
{
    struct task_executor *te = arg;
    struct te_news *n = xmalloc(sizeof *n + (address ? strlen(address) : 0) + 1);

    n->te = te;
    if (session != NULL && address != NULL)
        n->session = *session;
    else
        memset(&n->session, 0, sizeof n->session);
    strcpy(n->address, address ? address : "");
    rpc_endpoint_run_async(&te->ep, te_rm_leader, n);
}

static void
te_rm_retrieval_error(void *arg, int code, const char *message)
{
    UNUSED(arg);
    SPATE_LOG_ERROR(TE_LOG, "ResourceManager leader retrieval failed (%s): %s",
                    spate_err_name(code), message);
}

static const struct leader_listener te_rm_listener = { te_notify_rm_leader, te_rm_retrieval_error };

/* ---- heartbeats ---------------------------------------------------------------- */

static void
te_rm_lost(void *arg, const spate_id *target, int reason, const char *message)
{
    struct task_executor *te = arg;

    UNUSED(target);
    te->rm_established = false; /* no longer monitored */
    SPATE_LOG_WARN(TE_LOG, "ResourceManager %s lost (%s): %s; registering again", te->rm_address,
                   reason == SPATE_ETIMEDOUT ? "heartbeat timed out" : "connection lost", message);
    te_reconnect_rm(te, "the ResourceManager was lost");
}

/* The slot report rides on every heartbeat to the ResourceManager. */
static uint8_t *
te_rm_payload(void *arg, const spate_id *target, size_t *len)
{
    struct task_executor *te = arg;
    struct task_slot_report report;
    uint8_t *buf;

    UNUSED(target);
    task_slot_table_report(&te->slots, &report);
    *len = protobuf_c_message_get_packed_size(&report.msg.base);
    buf = xmalloc(*len ? *len : 1);
    protobuf_c_message_pack(&report.msg.base, buf);
    task_slot_report_release(&report);
    return buf;
}

static void te_free_job_slots(struct task_executor *te, struct job_entry *e, const char *cause);
static void te_cancel_tasks(struct task_executor *te, const spate_id *job);

static void
te_jm_lost(void *arg, const spate_id *target, int reason, const char *message)
{
    struct task_executor *te = arg;
    struct hmap_node *n;

    HMAP_FOR_EACH(n, &te->jobs.jobs)
    {
        struct job_entry *e = container_of(n, struct job_entry, node);

        if (e->connected && id_equal(&e->jm_resource_id, target)) {
            SPATE_LOG_WARN(
                TE_LOG, "JobMaster %s of job %s lost (%s): %s", e->jm_address, id_str(&e->job_id).s,
                reason == SPATE_ETIMEDOUT ? "heartbeat timed out" : "connection lost", message);
            /* Flink's disconnectJobManagerConnection: the job's tasks end
             * (a new leader deploys new attempts; the old ones must not
             * run on beside them), then its slots go. */
            te_cancel_tasks(te, &e->job_id);
            te_free_job_slots(te, e, "its JobMaster was lost");
            return; /* the entry is gone; other jobs of the same JobMaster id: none */
        }
    }
}

/* ---- slots ------------------------------------------------------------------------ */

static void
te_notify_slot_available(struct task_executor *te, uint32_t index, const spate_id *allocation)
{
    Cluster__SlotAvailable msg = CLUSTER__SLOT_AVAILABLE__INIT;

    if (!te->rm_established)
        return; /* the next slot report tells */
    msg.resource_id = gw_id_bytes(&te->o.resource_id);
    msg.registration_id = gw_id_bytes(&te->registration_id);
    msg.index = index;
    msg.allocation_id = gw_id_bytes(allocation);
    rm_notify_slot_available(te->rm, &msg, NULL);
}

static void
te_remove_job(struct task_executor *te, struct job_entry *e)
{
    if (e->connected)
        heartbeat_unmonitor(te->hb_jm, &e->jm_resource_id);
    job_leader_service_disconnect(&te->jls, e);
    job_table_remove(&te->jobs, e);
}

/* Frees every slot of the job and forgets the job. */
static void
te_free_job_slots(struct task_executor *te, struct job_entry *e, const char *cause)
{
    for (uint32_t i = 0; i < te->slots.count; i++) {
        struct task_slot *s = &te->slots.slots[i];

        if (s->state != TASK_SLOT_FREE && id_equal(&s->job_id, &e->job_id)) {
            spate_id alloc = s->allocation_id;

            SPATE_LOG_INFO(TE_LOG, "freeing slot %u (allocation %s) of job %s: %s", i,
                           id_str(&alloc).s, id_str(&e->job_id).s, cause);
            task_slot_table_free(&te->slots, &alloc);
            te_notify_slot_available(te, i, &alloc);
        }
    }
    te_remove_job(te, e);
}

struct te_offer {
    struct task_executor *te;
    spate_id job_id;
    size_t n;
    spate_id allocations[];
};

static void
te_offer_done(struct rpc_future *f, void *arg)
{
    struct te_offer *o = arg;
    struct task_executor *te = o->te;
    Cluster__AcceptedSlots *acc;

    if (!rpc_endpoint_is_running(&te->ep)) {
        free(o);
        return;
    }
    if (rpc_future_code(f) != 0) {
        /* Offered again when the JobMaster connection is made again. */
        SPATE_LOG_WARN(TE_LOG, "offering %zu slots to the JobMaster of job %s failed: %s", o->n,
                       id_str(&o->job_id).s, rpc_future_message(f));
        free(o);
        return;
    }
    acc = rpc_future_value(f);
    for (size_t i = 0; i < o->n; i++) {
        struct task_slot *s = task_slot_table_find(&te->slots, &o->allocations[i]);
        bool accepted = false;

        if (s == NULL || s->state != TASK_SLOT_ALLOCATED)
            continue;
        for (size_t j = 0; j < acc->n_allocation_ids; j++) {
            spate_id a;

            if (gw_id_get(&acc->allocation_ids[j], &a) && id_equal(&a, &o->allocations[i]))
                accepted = true;
        }
        if (accepted) {
            task_slot_table_mark_active(&te->slots, &o->allocations[i]);
        } else {
            uint32_t index = s->index;

            SPATE_LOG_INFO(TE_LOG, "the JobMaster rejected slot %u of job %s: freeing it", index,
                           id_str(&o->job_id).s);
            task_slot_table_free(&te->slots, &o->allocations[i]);
            te_notify_slot_available(te, index, &o->allocations[i]);
        }
    }
    {
        struct job_entry *e = job_table_find(&te->jobs, &o->job_id);

        if (e != NULL && !task_slot_table_has_slots_for(&te->slots, &e->job_id))
            te_remove_job(te, e);
    }
    free(o);
}

/* Seed 004 §2.5: offerSlotsToJobManager: the job's allocated slots. */
static void
te_offer_slots(struct task_executor *te, struct job_entry *e)
{
    Cluster__SlotOffers msg = CLUSTER__SLOT_OFFERS__INIT;
    Cluster__SlotOffer *offers = xcalloc(te->slots.count, sizeof *offers);
    Cluster__SlotOffer **ptrs = xcalloc(te->slots.count, sizeof *ptrs);
    struct te_offer *o = xmalloc(sizeof *o + te->slots.count * sizeof(spate_id));
    struct rpc_future *f;

    o->te = te;
    o->job_id = e->job_id;
    o->n = 0;
    for (uint32_t i = 0; i < te->slots.count; i++) {
        struct task_slot *s = &te->slots.slots[i];

        if (s->state != TASK_SLOT_ALLOCATED || !id_equal(&s->job_id, &e->job_id))
            continue;
        cluster__slot_offer__init(&offers[o->n]);
        o->allocations[o->n] = s->allocation_id;
        offers[o->n].allocation_id = gw_id_bytes(&o->allocations[o->n]);
        offers[o->n].index = s->index;
        ptrs[o->n] = &offers[o->n];
        o->n++;
    }
    if (o->n == 0) {
        free(o);
    } else {
        msg.resource_id = gw_id_bytes(&te->o.resource_id);
        msg.n_offers = o->n;
        msg.offers = ptrs;
        f = jm_offer_slots(e->jm, &msg, 0);
        rpc_future_then(f, &te->ep, te_offer_done, o);
        rpc_future_unref(f);
    }
    free(offers);
    free(ptrs);
}

static void
te_jm_connected(void *arg, struct job_entry *e)
{
    struct task_executor *te = arg;
    spate_error err = { 0 };

    if (heartbeat_monitor(te->hb_jm, &e->jm_resource_id, e->jm->address, &err) != 0)
        SPATE_LOG_WARN(TE_LOG, "cannot monitor the JobMaster of job %s: %s", id_str(&e->job_id).s,
                       err.message);
    te_offer_slots(te, e);
}

/* The job's JobMaster lost its leadership (another one leads): as Flink's
 * disconnectJobManagerConnection, its tasks end; the slots stay the job's,
 * inactive (taskmanager.slot.timeout runs), offered to the new leader once
 * connected. */
static void
te_jm_lost_leadership(void *arg, struct job_entry *e)
{
    struct task_executor *te = arg;

    SPATE_LOG_WARN(TE_LOG,
                   "JobMaster %s of job %s is no longer the leader: cancelling the job's "
                   "tasks",
                   e->jm_address, id_str(&e->job_id).s);
    heartbeat_unmonitor(te->hb_jm, &e->jm_resource_id);
    te_cancel_tasks(te, &e->job_id);
    for (uint32_t i = 0; i < te->slots.count; i++)
        if (te->slots.slots[i].state == TASK_SLOT_ACTIVE &&
            id_equal(&te->slots.slots[i].job_id, &e->job_id))
            task_slot_table_mark_inactive(&te->slots, &te->slots.slots[i].allocation_id);
}

/* ---- the TaskExecutor's methods -------------------------------------------------- */

/* ---- tasks -------------------------------------------------------------------------- */

static void
te_forget_task(struct task_executor *te, struct te_task *tt)
{
    struct te_task **p;

    for (p = &te->tasks; *p != NULL; p = &(*p)->next) {
        if (*p == tt) {
            *p = tt->next;
            break;
        }
    }
    rpc_timer_cancel(tt->watchdog);
    task_free(tt->task); /* its thread has returned or is returning */
    free(tt);
}

static void
te_task_done_async(void *arg)
{
    struct te_task *tt = arg;
    struct task_executor *te = tt->te;

    te_forget_task(te, tt);
    pthread_mutex_lock(&te->live_lock);
    te->live--;
    pthread_cond_broadcast(&te->live_changed);
    pthread_mutex_unlock(&te->live_lock);
    rpc_endpoint_unref(&te->ep);
}

/* Task thread: the task ended and reported; the endpoint frees it. */
static void
te_task_done(void *arg, struct task *t)
{
    struct te_task *tt = arg;

    UNUSED(t);
    rpc_endpoint_run_async(&tt->te->ep, te_task_done_async, tt);
}

int
task_executor_wait_tasks(struct task_executor *te, int64_t timeout_ms)
{
    struct timespec until;
    int rc = 0;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (timeout_ms % 1000) * 1000000;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&te->live_lock);
    while (te->live > 0 && rc == 0)
        rc = pthread_cond_timedwait(&te->live_changed, &te->live_lock, &until);
    rc = te->live > 0 ? SPATE_ETIMEDOUT : 0;
    pthread_mutex_unlock(&te->live_lock);
    return rc;
}

static void
te_cancel_all_sync(void *arg)
{
    struct task_executor *te = arg;
    struct te_task *tt;

    for (tt = te->tasks; tt != NULL; tt = tt->next)
        task_cancel(tt->task);
}

void
task_executor_cancel_tasks(struct task_executor *te)
{
    rpc_service_run_sync(te->ep.svc, &te->ep, te_cancel_all_sync, te);
}

/* Flink's task cancellation watchdog: a task that ignores its cancel for
 * task.cancellation.timeout takes its TaskManager down. */
static void
te_watchdog(void *arg)
{
    struct te_task *tt = arg;
    struct task_executor *te = tt->te;
    char msg[300];

    tt->watchdog = NULL;
    if (task_is_done(tt->task))
        return;
    snprintf(msg, sizeof msg,
             "task %s did not stop within task.cancellation.timeout (%lld ms) of its cancel: "
             "the TaskManager exits",
             id_str(task_attempt_id(tt->task)).s, (long long)te->o.cancellation_timeout_ms);
    SPATE_LOG_ERROR(TE_LOG, "%s", msg);
    if (te->o.on_exit != NULL)
        te->o.on_exit(te->o.arg, SPATE_ETIMEDOUT, msg);
}

static struct te_task *
te_find_task(struct task_executor *te, const spate_id *attempt)
{
    for (struct te_task *tt = te->tasks; tt != NULL; tt = tt->next)
        if (id_equal(task_attempt_id(tt->task), attempt))
            return tt;
    return NULL;
}

/* The JobMaster deploys a subtask into one of its slots (Flink's submitTask). */
static void
teh_submit_task(struct rpc_endpoint *ep, const Jobgraph__TaskDeployment *req, struct rpc_call *call)
{
    struct task_executor *te = te_of(ep);
    Cluster__Ack ack = CLUSTER__ACK__INIT;
    struct task_host host;
    struct task_slot *slot;
    spate_error err = { 0 };
    struct te_task *tt;
    spate_id job, alloc;

    if (te->o.net == NULL || te->o.libraries == NULL) {
        rpc_call_fail(call, SPATE_ENOTSUP, "this TaskExecutor runs no tasks");
        return;
    }
    if (!gw_id_get(&req->job_id, &job) || !gw_id_get(&req->allocation_id, &alloc)) {
        rpc_call_fail(call, SPATE_EINVAL, "submitTask: malformed ids");
        return;
    }
    slot = task_slot_table_find(&te->slots, &alloc);
    if (slot == NULL || !id_equal(&slot->job_id, &job)) {
        rpc_call_fail(call, SPATE_ESTATE,
                      "submitTask: no slot of allocation %s for job %s on this TaskExecutor",
                      id_str(&alloc).s, id_str(&job).s);
        return;
    }
    host = (struct task_host){ .svc = ep->svc,
                               .net = te->o.net,
                               .libraries = te->o.libraries,
                               .resource_id = te->o.resource_id,
                               .print_out = te->o.print_out,
                               .on_done = te_task_done,
                               .metrics = te->metrics,
                               .host = te->o.host != NULL ? te->o.host : "localhost",
                               .batch_scheduling = te->o.batch_scheduling,
                               .latency = &te->o.latency,
                               .state_backend = &te->slot_backends[slot->index] };
    tt = xcalloc(1, sizeof *tt);
    tt->te = te;
    host.arg = tt;
    if (task_start(&host, req, &tt->task, &err) != 0) {
        free(tt);
        rpc_call_fail(call, err.code, "%s", err.message);
        return;
    }
    tt->next = te->tasks;
    te->tasks = tt;
    /* The endpoint stays until the task's end is processed. */
    rpc_endpoint_ref(ep);
    pthread_mutex_lock(&te->live_lock);
    te->live++;
    pthread_mutex_unlock(&te->live_lock);
    rpc_call_reply(call, &ack.base);
}

static void
teh_cancel_task(struct rpc_endpoint *ep, const Cluster__TaskId *req, struct rpc_call *call)
{
    struct task_executor *te = te_of(ep);
    Cluster__Ack ack = CLUSTER__ACK__INIT;
    struct te_task *tt;
    spate_id attempt;

    if (!gw_id_get(&req->attempt_id, &attempt)) {
        rpc_call_fail(call, SPATE_EINVAL, "cancelTask: malformed attempt id");
        return;
    }
    if ((tt = te_find_task(te, &attempt)) != NULL && !task_is_done(tt->task)) {
        task_cancel(tt->task);
        if (te->o.cancellation_timeout_ms > 0 && tt->watchdog == NULL)
            tt->watchdog =
                rpc_endpoint_schedule(ep, (uint64_t)te->o.cancellation_timeout_ms, te_watchdog, tt);
    }
    rpc_call_reply(call, &ack.base); /* unknown: already gone, which is fine */
}

/* Checkpoints: the JobMaster's trigger (for a source task) and its
 * notifications go to the task's mailbox; a task that is gone ignores them
 * (the JobMaster learns of its end otherwise). */
static struct te_task *
te_live_task(struct task_executor *te, const ProtobufCBinaryData *attempt_bytes)
{
    struct te_task *tt;
    spate_id attempt;

    if (!gw_id_get(attempt_bytes, &attempt) || (tt = te_find_task(te, &attempt)) == NULL ||
        task_is_done(tt->task))
        return NULL;
    return tt;
}

static void
teh_trigger_checkpoint(struct rpc_endpoint *ep, const Checkpoint__TriggerCheckpoint *req,
                       struct rpc_call *call)
{
    struct te_task *tt = te_live_task(te_of(ep), &req->attempt_id);

    UNUSED(call);
    if (tt != NULL)
        task_trigger_checkpoint(tt->task, req);
}

static void
teh_notify_checkpoint_complete(struct rpc_endpoint *ep,
                               const Checkpoint__CheckpointNotification *req, struct rpc_call *call)
{
    struct te_task *tt = te_live_task(te_of(ep), &req->attempt_id);

    UNUSED(call);
    if (tt != NULL)
        task_notify_checkpoint(tt->task, req->checkpoint_id, true);
}

static void
teh_notify_checkpoint_aborted(struct rpc_endpoint *ep,
                              const Checkpoint__CheckpointNotification *req, struct rpc_call *call)
{
    struct te_task *tt = te_live_task(te_of(ep), &req->attempt_id);

    UNUSED(call);
    if (tt != NULL)
        task_notify_checkpoint(tt->task, req->checkpoint_id, false);
}

/* Cancels the tasks of job (all jobs: NULL) and waits for none: each ends
 * on its own thread and is freed when it says so. */
static void
te_cancel_tasks(struct task_executor *te, const spate_id *job)
{
    for (struct te_task *tt = te->tasks; tt != NULL; tt = tt->next)
        if (job == NULL || id_equal(task_job_id(tt->task), job))
            task_cancel(tt->task);
}

size_t
task_executor_task_count(const struct task_executor *te)
{
    size_t n = 0;

    for (struct te_task *tt = te->tasks; tt != NULL; tt = tt->next)
        n++;
    return n;
}

/* Seed 004 §2.4: requestSlot from the ResourceManager. */
static void
teh_request_slot(struct rpc_endpoint *ep, const Cluster__TaskExecutorSlotRequest *req,
                 struct rpc_call *call)
{
    struct task_executor *te = te_of(ep);
    Cluster__Ack ack = CLUSTER__ACK__INIT;
    spate_id job, alloc, rm_id, jm_id;
    spate_error err = { 0 };
    struct job_entry *e;

    RPC_ASSERT_IN(ep);
    if (!gw_id_get(&req->job_id, &job) || !gw_id_get(&req->allocation_id, &alloc) ||
        !gw_id_get(&req->resource_manager_id, &rm_id) || !gw_id_get(&req->job_master_id, &jm_id)) {
        rpc_call_fail(call, SPATE_EINVAL, "requestSlot: malformed ids");
        return;
    }
    if (!te->rm_established || !id_equal(&rm_id, &te->rm_id)) {
        rpc_call_fail(call, SPATE_EFENCED,
                      "requestSlot from ResourceManager %s, which this TaskExecutor is not "
                      "registered with",
                      id_str(&rm_id).s);
        return;
    }
    if (task_slot_table_allocate(&te->slots, req->index, &job, &alloc, &err) != 0) {
        rpc_call_fail(call, err.code, "%s", err.message);
        return;
    }
    SPATE_LOG_INFO(TE_LOG, "allocated slot %u for job %s (allocation %s)", req->index,
                   id_str(&job).s, id_str(&alloc).s);
    e = job_table_get_or_create(&te->jobs, &job, &jm_id, req->target_address);
    job_leader_service_update(&te->jls, e, &jm_id, req->target_address);
    if (e->connected)
        te_offer_slots(te, e);
    else
        job_leader_service_add_job(&te->jls, e);
    rpc_call_reply(call, &ack.base);
}

/* Flink's freeSlotInternal: the slot is free again, the ResourceManager
 * told; a job left without slots is forgotten. Unknown: already free. */
static void
te_release_slot(struct task_executor *te, const spate_id *alloc, const char *cause)
{
    struct task_slot *s = task_slot_table_find(&te->slots, alloc);
    spate_id job;
    int index;

    if (s == NULL)
        return;
    job = s->job_id;
    index = task_slot_table_free(&te->slots, alloc);
    /* A task without its slot has nowhere to run (Flink fails it). */
    if (!task_slot_table_has_slots_for(&te->slots, &job))
        te_cancel_tasks(te, &job);
    SPATE_LOG_INFO(TE_LOG, "freed slot %d (allocation %s) of job %s: %s", index, id_str(alloc).s,
                   id_str(&job).s, cause);
    te_notify_slot_available(te, (uint32_t)index, alloc);
    if (!task_slot_table_has_slots_for(&te->slots, &job)) {
        struct job_entry *e = job_table_find(&te->jobs, &job);

        if (e != NULL)
            te_remove_job(te, e);
    }
}

/* A JobMaster frees a slot of its job. The slot may since have been
 * offered to the job's next leader under the same allocation id: a former
 * leader's JobMaster (its id is not the one the job is led by now) has no
 * say over it, or a JobManager that lost leadership while it was paused
 * would end the new leader's tasks. */
static void
teh_free_slot(struct rpc_endpoint *ep, const Cluster__FreeSlot *req, struct rpc_call *call)
{
    struct task_executor *te = te_of(ep);
    Cluster__Ack ack = CLUSTER__ACK__INIT;
    struct task_slot *s;
    struct job_entry *e;
    spate_id alloc, from;

    if (!gw_id_get(&req->allocation_id, &alloc)) {
        rpc_call_fail(call, SPATE_EINVAL, "freeSlot: malformed allocation id");
        return;
    }
    if (gw_id_get(&req->job_master_id, &from) && (s = task_slot_table_find(&te->slots, &alloc)) &&
        (e = job_table_find(&te->jobs, &s->job_id)) != NULL && !id_is_zero(&e->jm_id) &&
        !id_equal(&from, &e->jm_id)) {
        SPATE_LOG_WARN(TE_LOG,
                       "rejected freeSlot of allocation %s from JobMaster %s: job %s is led by "
                       "JobMaster %s (%s)",
                       id_str(&alloc).s, id_str(&from).s, id_str(&s->job_id).s, id_str(&e->jm_id).s,
                       req->cause);
        rpc_call_fail(call, SPATE_EPERM,
                      "freeSlot refused: the job is led by another JobMaster now");
        return;
    }
    te_release_slot(te, &alloc, req->cause);
    rpc_call_reply(call, &ack.base);
}

/* Flink's timeoutSlot: no JobMaster accepted the slot within
 * taskmanager.slot.timeout (the job ended or never connected). */
static void
te_slot_timed_out(void *arg, const spate_id *alloc)
{
    struct task_executor *te = arg;
    char cause[200];

    snprintf(cause, sizeof cause,
             "not accepted by a JobMaster within taskmanager.slot.timeout "
             "(%lld ms)",
             (long long)te->o.slot_timeout_ms);
    te_release_slot(te, alloc, cause);
}

/* A former leader's ResourceManager (its id is not the one this
 * TaskExecutor registered with) has no say: its message is rejected. */
static bool
te_disconnect_is_stale(struct task_executor *te, const Cluster__Disconnect *req)
{
    spate_id from;

    if (!te->rm_established || !gw_id_get(&req->leader_id, &from) || id_equal(&from, &te->rm_id))
        return false;
    SPATE_LOG_WARN(TE_LOG,
                   "rejected a disconnect from ResourceManager %s: this TaskExecutor is "
                   "registered with ResourceManager %s (%s)",
                   id_str(&from).s, id_str(&te->rm_id).s, req->cause);
    return true;
}

static void
teh_disconnect_rm(struct rpc_endpoint *ep, const Cluster__Disconnect *req, struct rpc_call *call)
{
    struct task_executor *te = te_of(ep);

    UNUSED(call);
    if (te_disconnect_is_stale(te, req))
        return;
    SPATE_LOG_WARN(TE_LOG, "the ResourceManager disconnected this TaskExecutor: %s", req->cause);
    te_reconnect_rm(te, "disconnected by the ResourceManager");
}

static void
teh_disconnect_jm(struct rpc_endpoint *ep, const Cluster__Disconnect *req, struct rpc_call *call)
{
    struct task_executor *te = te_of(ep);
    struct job_entry *e;
    spate_id job;

    UNUSED(call);
    if (gw_id_get(&req->id, &job) && (e = job_table_find(&te->jobs, &job)) != NULL)
        te_free_job_slots(te, e, req->cause);
}

/* Seed 000's StopCluster: the cluster is shutting down. */
static void
teh_stop_task_executor(struct rpc_endpoint *ep, const Cluster__StopCluster *req,
                       struct rpc_call *call)
{
    struct task_executor *te = te_of(ep);

    UNUSED(call);
    SPATE_LOG_INFO(TE_LOG, "stopping TaskExecutor %s: the cluster is shutting down (%s)",
                   id_str(&te->o.resource_id).s, req->reason);
    if (te->o.on_exit != NULL)
        te->o.on_exit(te->o.arg, 0, req->reason);
}

/* Flink's MetricQueryService: every metric of this TaskManager and its tasks. */
static void
teh_request_metric_dump(struct rpc_endpoint *ep, const Cluster__Ack *req, struct rpc_call *call)
{
    struct task_executor *te = te_of(ep);
    Cluster__MetricDump dump;

    UNUSED(req);
    if (te->metrics != NULL)
        tm_metric_group_refresh(&te->own_metrics);
    metric_query_dump(te->metrics, &te->o.resource_id, &dump);
    rpc_call_reply(call, &dump.base);
    metric_query_dump_release(&dump);
}

/* Flink's requestThreadDump: every thread's name and native stack, taken
 * and symbolized on a worker (the loop keeps answering heartbeats). */
struct te_dump {
    struct rpc_call *call;
    struct thread_stack *t;
    size_t n;
    int rc;
    spate_error err;
};

static void
te_dump_work(void *arg)
{
    struct te_dump *w = arg;

    w->rc = thread_dump_collect(&w->t, &w->n, &w->err);
}

static void
te_dump_done(void *arg)
{
    struct te_dump *w = arg;
    Cluster__ThreadDump out = CLUSTER__THREAD_DUMP__INIT;

    if (w->rc != 0) {
        rpc_call_fail(w->call, w->err.code, "%s", w->err.message);
        free(w);
        return;
    }
    out.threads = xcalloc(w->n + 1, sizeof *out.threads);
    for (size_t i = 0; i < w->n; i++) {
        out.threads[i] = xmalloc(sizeof *out.threads[i]);
        cluster__thread_stack__init(out.threads[i]);
        out.threads[i]->name = w->t[i].name;
        out.threads[i]->tid = w->t[i].tid;
        out.threads[i]->text = w->t[i].text;
    }
    out.n_threads = w->n;
    rpc_call_reply(w->call, &out.base);
    for (size_t i = 0; i < w->n; i++)
        free(out.threads[i]);
    free(out.threads);
    thread_dump_free(w->t, w->n);
    free(w);
}

static void
teh_request_thread_dump(struct rpc_endpoint *ep, const Cluster__Ack *req, struct rpc_call *call)
{
    struct te_dump *w = xcalloc(1, sizeof *w);

    UNUSED(req);
    w->call = call;
    if (rpc_endpoint_run_blocking(ep, te_dump_work, te_dump_done, w) != 0) {
        rpc_call_fail(call, SPATE_EAGAIN, "requestThreadDump: no worker thread");
        free(w);
    }
}

/* Flink's requestLogList: the files of the TaskManager's log folder. */
static void
teh_request_log_list(struct rpc_endpoint *ep, const Cluster__Ack *req, struct rpc_call *call)
{
    Cluster__LogList out = CLUSTER__LOG_LIST__INIT;
    Cluster__LogFileInfo *infos;
    struct log_file *f = NULL;
    char dir[4096];
    size_t n = 0;

    UNUSED(ep);
    UNUSED(req);
    if (log_files_dir(NULL, dir, sizeof dir, NULL) == 0)
        n = log_files_list(dir, &f);
    infos = xcalloc(n + 1, sizeof *infos);
    out.logs = xcalloc(n + 1, sizeof *out.logs);
    for (size_t i = 0; i < n; i++) {
        cluster__log_file_info__init(&infos[i]);
        infos[i].name = f[i].name;
        infos[i].size = f[i].size;
        infos[i].mtime = f[i].mtime_ms;
        out.logs[i] = &infos[i];
    }
    out.n_logs = n;
    rpc_call_reply(call, &out.base);
    free(out.logs);
    free(infos);
    log_files_free(f, n);
}

/* Flink's requestFileUploadByName (the seeds' RequestTaskManagerLog): the
 * last max_bytes of one log file. */
static void
teh_request_log_file(struct rpc_endpoint *ep, const Cluster__LogFileRequest *req,
                     struct rpc_call *call)
{
    Cluster__LogFile out = CLUSTER__LOG_FILE__INIT;
    spate_error err = { 0 };
    char dir[4096], *data;
    size_t len;

    UNUSED(ep);
    if (log_files_dir(NULL, dir, sizeof dir, &err) != 0 ||
        log_files_read(dir, req->name != NULL ? req->name : "",
                       req->max_bytes > 0 && req->max_bytes < TE_LOG_MAX_BYTES ? req->max_bytes
                                                                               : TE_LOG_MAX_BYTES,
                       &data, &len, &err) != 0) {
        rpc_call_fail(call, err.code, "%s", err.message);
        return;
    }
    out.data = (ProtobufCBinaryData){ len, (uint8_t *)data };
    rpc_call_reply(call, &out.base);
    free(data);
}

/* Flink's requestThreadInfoSamples: num_samples stacks of each running
 * task thread of the vertex, delay_ms apart (bounded), symbolized,
 * outermost frame first. The sampling and the symbolizing (seconds under
 * ASan) run on a worker: the loop keeps answering heartbeats meanwhile. */
struct te_sampling {
    struct rpc_call *call;
    int tids[TE_SAMPLE_MAX_THREADS], subtasks[TE_SAMPLE_MAX_THREADS], nthreads;
    int rounds, delay_ms;
    Cluster__ThreadSamples out;
};

static void
te_sampling_work(void *arg)
{
    struct te_sampling *w = arg;
    Cluster__ThreadSamples *out = &w->out;
    struct thread_symbolizer *sym = thread_symbolizer_new();

    out->samples = xcalloc((size_t)(w->rounds * w->nthreads) + 1, sizeof *out->samples);
    for (int r = 0; r < w->rounds && w->nthreads > 0; r++) {
        if (r > 0 && w->delay_ms > 0)
            usleep((useconds_t)w->delay_ms * 1000);
        for (int i = 0; i < w->nthreads; i++) {
            void *frames[64];
            bool on_cpu;
            int nf = thread_dump_sample(w->tids[i], frames, 64, &on_cpu);
            Cluster__ThreadSample *smp;

            if (nf <= 2)
                continue;
            smp = xmalloc(sizeof *smp);
            cluster__thread_sample__init(smp);
            smp->subtask = w->subtasks[i];
            smp->on_cpu = on_cpu;
            /* The two innermost frames are the signal handler's own. */
            smp->n_frames = (size_t)(nf - 2);
            smp->frames = xcalloc(smp->n_frames, sizeof *smp->frames);
            for (int f = nf - 1, k = 0; f >= 2; f--, k++) {
                char name[256];

                thread_symbolize(sym, frames[f], name, sizeof name);
                smp->frames[k] = xstrdup(name);
            }
            out->samples[out->n_samples++] = smp;
        }
    }
    thread_symbolizer_free(sym);
}

static void
te_sampling_done(void *arg)
{
    struct te_sampling *w = arg;
    Cluster__ThreadSamples *out = &w->out;

    rpc_call_reply(w->call, &out->base);
    for (size_t i = 0; i < out->n_samples; i++) {
        for (size_t f = 0; f < out->samples[i]->n_frames; f++)
            free(out->samples[i]->frames[f]);
        free(out->samples[i]->frames);
        free(out->samples[i]);
    }
    free(out->samples);
    free(w);
}

static void
teh_request_thread_samples(struct rpc_endpoint *ep, const Cluster__ThreadSamplesRequest *req,
                           struct rpc_call *call)
{
    struct task_executor *te = te_of(ep);
    struct te_sampling *w;
    spate_id job, vertex;

    if (!gw_id_get(&req->job_id, &job) || !gw_id_get(&req->vertex_id, &vertex)) {
        rpc_call_fail(call, SPATE_EINVAL, "requestThreadInfoSamples: malformed ids");
        return;
    }
    w = xcalloc(1, sizeof *w);
    cluster__thread_samples__init(&w->out);
    w->call = call;
    w->rounds = req->num_samples > 0 ? MIN(req->num_samples, TE_SAMPLE_MAX_ROUNDS) : 1;
    w->delay_ms = MIN(MAX(req->delay_ms, 0), TE_SAMPLE_MAX_DELAY_MS);
    for (struct te_task *tt = te->tasks; tt != NULL && w->nthreads < TE_SAMPLE_MAX_THREADS;
         tt = tt->next) {
        spate_id v;
        int subtask, tid;

        if (id_equal(task_job_id(tt->task), &job) && task_thread(tt->task, &v, &subtask, &tid) &&
            id_equal(&v, &vertex)) {
            w->tids[w->nthreads] = tid;
            w->subtasks[w->nthreads++] = subtask;
        }
    }
    if (rpc_endpoint_run_blocking(ep, te_sampling_work, te_sampling_done, w) != 0) {
        rpc_call_fail(call, SPATE_EAGAIN, "requestThreadInfoSamples: no worker thread");
        free(w);
    }
}

static void
te_update_metrics(void *arg)
{
    struct task_executor *te = arg;

    te->metrics_timer = NULL;
    if (!rpc_endpoint_is_running(&te->ep))
        return;
    metric_registry_update(te->metrics, clock_mono_ns());
    tm_metric_group_refresh(&te->own_metrics);
    te->metrics_timer = rpc_endpoint_schedule(&te->ep, TE_METRICS_UPDATE_MS, te_update_metrics, te);
}

static const struct te_handlers te_handlers = {
    .request_slot = teh_request_slot,
    .free_slot = teh_free_slot,
    .disconnect_resource_manager = teh_disconnect_rm,
    .disconnect_job_manager = teh_disconnect_jm,
    .stop_task_executor = teh_stop_task_executor,
    .submit_task = teh_submit_task,
    .cancel_task = teh_cancel_task,
    .trigger_checkpoint = teh_trigger_checkpoint,
    .notify_checkpoint_complete = teh_notify_checkpoint_complete,
    .notify_checkpoint_aborted = teh_notify_checkpoint_aborted,
    .request_metric_dump = teh_request_metric_dump,
    .request_thread_dump = teh_request_thread_dump,
    .request_log_list = teh_request_log_list,
    .request_log_file = teh_request_log_file,
    .request_thread_samples = teh_request_thread_samples,
};

/* ---- life cycle ---------------------------------------------------------------------- */

static void
te_on_start(struct rpc_endpoint *ep)
{
    struct task_executor *te = te_of(ep);
    spate_error err = { 0 };

    /* Seed 004 §2.1: start by connecting to the ResourceManager; the
     * registration timeout runs from now, a leader known or not. */
    te_start_registration_timeout(te);
    te->rm_retrieval = te->o.ha->ops->resource_manager_retriever(te->o.ha);
    if (leader_retrieval_start(te->rm_retrieval, &te_rm_listener, te, &err) != 0)
        SPATE_LOG_ERROR(TE_LOG, "cannot start ResourceManager leader retrieval: %s", err.message);
    if (te->metrics != NULL)
        te_update_metrics(te);
}

static void
te_on_stop(struct rpc_endpoint *ep)
{
    struct task_executor *te = te_of(ep);
    struct hmap_node *n;

    /* Tasks still running are cancelled; each is freed when it says it is
     * done (never joined here: its last report may need this loop). The
     * process waits for them (task_executor_wait_tasks) before it frees
     * what they use. */
    te_cancel_tasks(te, NULL);
    rpc_timer_cancel(te->metrics_timer);
    te->metrics_timer = NULL;
    while ((n = hmap_first(&te->jobs.jobs)) != NULL)
        te_remove_job(te, container_of(n, struct job_entry, node));
    te_close_rm(te);
    task_slot_table_stop(&te->slots);
    if (te->rm_retrieval != NULL) {
        leader_retrieval_stop(te->rm_retrieval);
        leader_retrieval_free(te->rm_retrieval);
        te->rm_retrieval = NULL;
    }
    heartbeat_manager_free(te->hb_rm);
    heartbeat_manager_free(te->hb_jm);
    te->hb_rm = te->hb_jm = NULL;
}

static void
te_destroy(struct rpc_endpoint *ep)
{
    struct task_executor *te =
        container_of(ep, struct task_executor, ep); /* no context: last reference */

    for (uint32_t i = 0; te->slot_resources != NULL && i < te->o.slots; i++)
        shared_resources_release(&te->slot_resources[i]);
    free(te->slot_resources);
    free(te->slot_backends);
    task_slot_table_release(&te->slots);
    job_table_release(&te->jobs);
    if (te->metrics != NULL)
        tm_metric_group_release(&te->own_metrics);
    metric_registry_free(te->metrics);
    pthread_mutex_destroy(&te->live_lock);
    pthread_cond_destroy(&te->live_changed);
    free(te->rm_address);
    free(te);
}

static const struct rpc_endpoint_ops te_ops = { te_on_start, te_on_stop, te_destroy };

int
task_executor_start(struct rpc_service *svc, const struct task_executor_options *o,
                    struct task_executor **out, spate_error *err)
{
    struct task_executor *te = xcalloc(1, sizeof *te);
    struct heartbeat_options ho = o->heartbeat;
    static const struct heartbeat_listener rm_l = { te_rm_lost, NULL, te_rm_payload };
    static const struct heartbeat_listener jm_l = { te_jm_lost, NULL, NULL };
    static const struct task_slot_actions slot_actions = { te_slot_timed_out };
    int rc;

    te->o = *o;
    if (o->net != NULL) {
        te->metrics = metric_registry_new();
        tm_metric_group_register(&te->own_metrics, te->metrics, o->net, &o->resource_id,
                                 o->host != NULL ? o->host : "localhost");
    }
    pthread_mutex_init(&te->live_lock, NULL);
    pthread_cond_init(&te->live_changed, NULL);
    if ((rc = rpc_endpoint_init(&te->ep, svc, o->endpoint_name, &te_ops, err)) != 0) {
        pthread_mutex_destroy(&te->live_lock);
        pthread_cond_destroy(&te->live_changed);
        if (te->metrics != NULL)
            tm_metric_group_release(&te->own_metrics);
        metric_registry_free(te->metrics);
        free(te);
        return rc;
    }
    rpc_endpoint_bind(&te->ep, &te_protocol, &te_handlers);
    rpc_endpoint_bind(&te->ep, &heartbeat_protocol, &heartbeat_default_handlers);
    rpc_endpoint_address(&te->ep, te->address, sizeof te->address);
    te->slot_backends = xcalloc(o->slots + 1, sizeof *te->slot_backends);
    te->slot_resources = xcalloc(o->slots + 1, sizeof *te->slot_resources);
    for (uint32_t i = 0; i < o->slots; i++) {
        shared_resources_init(&te->slot_resources[i]);
        te->slot_backends[i] = o->state_backend;
        te->slot_backends[i].slot_resources = &te->slot_resources[i];
    }
    task_slot_table_init(&te->slots, o->slots);
    task_slot_table_start(&te->slots, &te->ep, o->slot_timeout_ms, &slot_actions, te);
    job_table_init(&te->jobs);
    te->jls = (struct job_leader_service){ .ep = &te->ep,
                                           .ha = o->ha,
                                           .jobs = &te->jobs,
                                           .reg = o->registration,
                                           .own_address = te->address,
                                           .own_id = o->resource_id,
                                           .data_port = o->data_port,
                                           .listener = { te_jm_connected, te_jm_lost_leadership },
                                           .arg = te };
    ho.own_id = o->resource_id;
    ho.sender = false;
    ho.channel = HEARTBEAT_RM_TM;
    te->hb_rm = heartbeat_manager_new(&te->ep, &ho, &rm_l, te);
    ho.channel = HEARTBEAT_JM_TM;
    te->hb_jm = heartbeat_manager_new(&te->ep, &ho, &jm_l, te);
    if ((rc = rpc_endpoint_start(&te->ep, err)) != 0) {
        heartbeat_manager_free(te->hb_rm);
        heartbeat_manager_free(te->hb_jm);
        rpc_future_unref(rpc_endpoint_stop(&te->ep)); /* never started: destroys te */
        return rc;
    }
    SPATE_LOG_INFO(TE_LOG, "TaskExecutor %s started at %s with %u slots", id_str(&o->resource_id).s,
                   te->address, o->slots);
    *out = te;
    return 0;
}

struct rpc_future *
task_executor_stop(struct task_executor *te, const char *reason)
{
    if (te->rm_established) {
        Cluster__Disconnect d = CLUSTER__DISCONNECT__INIT;

        d.id = gw_id_bytes(&te->o.resource_id);
        d.cause = (char *)reason;
        rm_disconnect_task_manager(te->rm, &d, NULL);
    }
    return rpc_endpoint_stop(&te->ep);
}

bool
task_executor_is_registered(const struct task_executor *te)
{
    return te->rm_established;
}

struct metric_registry *
task_executor_metric_registry(const struct task_executor *te)
{
    return te->metrics;
}

const spate_id *
task_executor_resource_id(const struct task_executor *te)
{
    return &te->o.resource_id;
}
