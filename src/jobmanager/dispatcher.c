/* The Dispatcher (dispatcher.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/log.h"
#include "core/util.h"
#include "jobmanager/dispatcher.h"
#include "rpc/gateways.h"

#define DISP_LOG "dispatcher"

struct disp_job {
    struct hmap_node node;
    spate_id job_id;
    struct job_master *jm; /* NULL once archived */
    Cluster__JobInfo info; /* the archived summary */
    char *name, *state, *failure;
};

struct dispatcher {
    struct rpc_endpoint ep;
    struct dispatcher_options o;
    struct hmap jobs;
    struct rpc_gateway *rm; /* in-process */
    bool shutting_down;
};

/* The endpoint's state, from its handlers: only its own context may touch it. */
static struct dispatcher *
disp_of(struct rpc_endpoint *ep)
{
    RPC_ASSERT_IN(ep);
    return container_of(ep, struct dispatcher, ep);
}

static struct disp_job *
disp_find(struct dispatcher *d, const spate_id *job)
{
    struct hmap_node *n;

    HMAP_FOR_EACH_WITH_HASH(n, id_hash(job), &d->jobs)
    {
        struct disp_job *j = container_of(n, struct disp_job, node);

        if (id_equal(&j->job_id, job))
            return j;
    }
    return NULL;
}

static void
disp_job_info(struct disp_job *j, Cluster__JobInfo *info)
{
    if (j->jm != NULL) {
        job_master_info(j->jm, info);
    } else {
        *info = j->info;
        info->job_id = gw_id_bytes(&j->job_id);
    }
}

/* A JobMaster's job ended: keep its summary, stop the JobMaster. */
static void
disp_on_terminal(void *arg, struct job_master *jm)
{
    struct dispatcher *d = arg;
    struct hmap_node *n;

    HMAP_FOR_EACH(n, &d->jobs)
    {
        struct disp_job *j = container_of(n, struct disp_job, node);

        if (j->jm != jm)
            continue;
        job_master_info(jm, &j->info);
        j->name = xstrdup(j->info.name);
        j->state = xstrdup(j->info.state);
        j->failure = xstrdup(j->info.failure);
        j->info.name = j->name;
        j->info.state = j->state;
        j->info.failure = j->failure;
        j->jm = NULL;
        rpc_future_unref(job_master_stop(jm));
        return;
    }
}

static void
dh_submit_test_job(struct rpc_endpoint *ep, const Cluster__TestJob *req, struct rpc_call *call)
{
    struct dispatcher *d = disp_of(ep);
    Cluster__JobId reply = CLUSTER__JOB_ID__INIT;
    struct job_master_options o = { 0 };
    spate_error err = { 0 };
    struct disp_job *j;

    if (d->shutting_down) {
        rpc_call_fail(call, SPATE_ESTATE, "the cluster is shutting down");
        return;
    }
    if (req->slots == 0 || req->slots > 100000) {
        rpc_call_fail(call, SPATE_EINVAL, "a test job needs 1 to 100000 slots, not %u", req->slots);
        return;
    }
    j = xcalloc(1, sizeof *j);
    id_random(&j->job_id);
    o.job_id = j->job_id;
    o.name = req->name;
    o.tasks = req->slots;
    o.run_ms = req->run_ms;
    o.slot_request_timeout_ms = d->o.slot_request_timeout_ms;
    o.heartbeat = d->o.heartbeat;
    o.registration = d->o.registration;
    o.ha = d->o.ha;
    o.on_terminal = disp_on_terminal;
    o.arg = d;
    hmap_insert(&d->jobs, &j->node, id_hash(&j->job_id));
    if (job_master_start(ep->svc, &o, &j->jm, &err) != 0) {
        hmap_remove(&d->jobs, &j->node);
        free(j);
        rpc_call_fail(call, err.code, "%s", err.message);
        return;
    }
    SPATE_LOG_INFO(DISP_LOG, "submitted job %s (%s) asking for %u slots", id_str(&j->job_id).s,
                   req->name, req->slots);
    reply.job_id = gw_id_bytes(&j->job_id);
    rpc_call_reply(call, &reply.base);
}

static void
dh_request_jobs(struct rpc_endpoint *ep, const Cluster__Ack *req, struct rpc_call *call)
{
    struct dispatcher *d = disp_of(ep);
    Cluster__JobsOverview out = CLUSTER__JOBS_OVERVIEW__INIT;
    size_t n = 0, cap = hmap_count(&d->jobs);
    Cluster__JobInfo *infos = xcalloc(cap ? cap : 1, sizeof *infos);
    Cluster__JobInfo **ptrs = xcalloc(cap ? cap : 1, sizeof *ptrs);
    struct hmap_node *node;

    UNUSED(req);
    HMAP_FOR_EACH(node, &d->jobs)
    {
        disp_job_info(container_of(node, struct disp_job, node), &infos[n]);
        ptrs[n] = &infos[n];
        n++;
    }
    out.n_jobs = n;
    out.jobs = ptrs;
    rpc_call_reply(call, &out.base);
    free(infos);
    free(ptrs);
}

static void
dh_request_job(struct rpc_endpoint *ep, const Cluster__JobId *req, struct rpc_call *call)
{
    Cluster__JobInfo info;
    struct disp_job *j;
    spate_id job;

    if (!gw_id_get(&req->job_id, &job)) {
        rpc_call_fail(call, SPATE_EINVAL, "malformed job id");
        return;
    }
    if ((j = disp_find(disp_of(ep), &job)) == NULL) {
        rpc_call_fail(call, SPATE_ENOENT, "job %s not found", id_str(&job).s);
        return;
    }
    disp_job_info(j, &info);
    rpc_call_reply(call, &info.base);
}

static void
dh_cancel_job(struct rpc_endpoint *ep, const Cluster__JobId *req, struct rpc_call *call)
{
    Cluster__Ack ack = CLUSTER__ACK__INIT;
    struct disp_job *j;
    spate_id job;

    if (!gw_id_get(&req->job_id, &job) || (j = disp_find(disp_of(ep), &job)) == NULL) {
        rpc_call_fail(call, SPATE_ENOENT, "job not found");
        return;
    }
    if (j->jm != NULL)
        job_master_cancel(j->jm, "cancelled by the user");
    rpc_call_reply(call, &ack.base);
}

struct overview_call {
    struct dispatcher *d;
    struct rpc_call *call;
};

static void
disp_overview_done(struct rpc_future *f, void *arg)
{
    struct overview_call *oc = arg;
    Cluster__ClusterOverview o = CLUSTER__CLUSTER_OVERVIEW__INIT;
    struct hmap_node *n;

    if (rpc_future_code(f) != 0) {
        rpc_call_fail(oc->call, rpc_future_code(f), "%s", rpc_future_message(f));
        free(oc);
        return;
    }
    {
        Cluster__ResourceOverview *r = rpc_future_value(f);

        o.taskmanagers = r->taskmanagers;
        o.slots_total = r->slots_total;
        o.slots_free = r->slots_free;
    }
    HMAP_FOR_EACH(n, &oc->d->jobs)
    {
        struct disp_job *j = container_of(n, struct disp_job, node);
        Cluster__JobInfo info;

        disp_job_info(j, &info);
        if (strcmp(info.state, "FINISHED") == 0)
            o.jobs_finished++;
        else if (strcmp(info.state, "CANCELED") == 0)
            o.jobs_cancelled++;
        else if (strcmp(info.state, "FAILED") == 0)
            o.jobs_failed++;
        else
            o.jobs_running++;
    }
    rpc_call_reply(oc->call, &o.base);
    free(oc);
}

static void
dh_request_cluster_overview(struct rpc_endpoint *ep, const Cluster__Ack *req, struct rpc_call *call)
{
    struct dispatcher *d = disp_of(ep);
    struct overview_call *oc = xmalloc(sizeof *oc);
    struct rpc_future *f;

    oc->d = d;
    oc->call = call;
    f = rm_request_overview(d->rm, req, 0);
    rpc_future_then(f, ep, disp_overview_done, oc);
    rpc_future_unref(f);
}

struct shutdown_call {
    struct dispatcher *d;
    struct rpc_call *call; /* NULL from SIGTERM */
    char *reason;
};

static void
disp_shutdown_done(struct rpc_future *f, void *arg)
{
    struct shutdown_call *sc = arg;
    Cluster__Ack ack = CLUSTER__ACK__INIT;

    if (rpc_future_code(f) != 0)
        SPATE_LOG_WARN(DISP_LOG, "the ResourceManager did not stop the cluster: %s",
                       rpc_future_message(f));
    if (sc->call != NULL)
        rpc_call_reply(sc->call, &ack.base);
    if (sc->d->o.on_shutdown != NULL)
        sc->d->o.on_shutdown(sc->d->o.arg, sc->reason);
    free(sc->reason);
    free(sc);
}

static void
disp_shutdown(struct dispatcher *d, struct rpc_call *call, const char *reason)
{
    Cluster__StopCluster msg = CLUSTER__STOP_CLUSTER__INIT;
    struct shutdown_call *sc = xmalloc(sizeof *sc);
    struct hmap_node *n;
    struct rpc_future *f;

    SPATE_LOG_INFO(DISP_LOG, "shutting the cluster down: %s", reason);
    d->shutting_down = true;
    HMAP_FOR_EACH(n, &d->jobs)
    {
        struct disp_job *j = container_of(n, struct disp_job, node);

        if (j->jm != NULL)
            job_master_cancel(j->jm, "the cluster is shutting down");
    }
    sc->d = d;
    sc->call = call;
    sc->reason = xstrdup(reason);
    msg.reason = (char *)reason;
    f = rm_stop_cluster(d->rm, &msg, 0);
    rpc_future_then(f, &d->ep, disp_shutdown_done, sc);
    rpc_future_unref(f);
}

static void
dh_shutdown_cluster(struct rpc_endpoint *ep, const Cluster__StopCluster *req, struct rpc_call *call)
{
    disp_shutdown(disp_of(ep), call, req->reason && *req->reason ? req->reason : "requested");
}

void
dispatcher_shutdown(struct dispatcher *d, const char *reason)
{
    if (!d->shutting_down)
        disp_shutdown(d, NULL, reason);
}

static const struct dispatcher_handlers disp_handlers = {
    .submit_test_job = dh_submit_test_job,
    .request_jobs = dh_request_jobs,
    .request_job = dh_request_job,
    .shutdown_cluster = dh_shutdown_cluster,
    .request_cluster_overview = dh_request_cluster_overview,
    .cancel_job = dh_cancel_job,
};

static void
disp_on_stop(struct rpc_endpoint *ep)
{
    struct dispatcher *d = disp_of(ep);
    struct hmap_node *n;

    while ((n = hmap_first(&d->jobs)) != NULL) {
        struct disp_job *j = container_of(n, struct disp_job, node);

        hmap_remove(&d->jobs, n);
        if (j->jm != NULL)
            rpc_future_unref(job_master_stop(j->jm));
        free(j->name);
        free(j->state);
        free(j->failure);
        free(j);
    }
    rpc_gateway_free(d->rm);
    d->rm = NULL;
}

static void
disp_destroy(struct rpc_endpoint *ep)
{
    struct dispatcher *d = container_of(ep, struct dispatcher, ep); /* no context: last reference */

    hmap_release(&d->jobs);
    free(d);
}

static const struct rpc_endpoint_ops disp_ops = { NULL, disp_on_stop, disp_destroy };

int
dispatcher_start(struct rpc_service *svc, const struct dispatcher_options *o,
                 struct dispatcher **out, spate_error *err)
{
    struct dispatcher *d = xcalloc(1, sizeof *d);
    char addr[300];
    int rc;

    d->o = *o;
    hmap_init(&d->jobs);
    snprintf(addr, sizeof addr, "%s/%s", rpc_service_address(svc), RPC_ENDPOINT_RESOURCE_MANAGER);
    if ((rc = rpc_gateway_new(svc, addr, NULL, &d->rm, err)) != 0 ||
        (rc = rpc_endpoint_init(&d->ep, svc, RPC_ENDPOINT_DISPATCHER, &disp_ops, err)) != 0) {
        rpc_gateway_free(d->rm);
        free(d);
        return rc;
    }
    rpc_endpoint_bind(&d->ep, &dispatcher_protocol, &disp_handlers);
    if ((rc = rpc_endpoint_start(&d->ep, err)) != 0) {
        rpc_future_unref(rpc_endpoint_stop(&d->ep));
        return rc;
    }
    *out = d;
    return 0;
}

struct rpc_future *
dispatcher_stop(struct dispatcher *d)
{
    return rpc_endpoint_stop(&d->ep);
}
