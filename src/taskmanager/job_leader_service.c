/* The JobLeaderService (job_leader_service.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/log.h"
#include "core/util.h"
#include "rpc/gateways.h"
#include "taskmanager/job_leader_service.h"

/* What a registration attempt needs; freed with the registration. */
struct jls_attempt {
    struct job_leader_service *s;
    spate_id job_id;
    struct rpc_gateway *gw; /* fenced with the JobMasterId */
};

static struct rpc_future *
jls_attempt(void *arg, int64_t timeout_ms)
{
    struct jls_attempt *a = arg;
    Cluster__TaskManagerRegistration r = CLUSTER__TASK_MANAGER_REGISTRATION__INIT;

    r.resource_id = gw_id_bytes(&a->s->own_id);
    r.address = (char *)a->s->own_address;
    r.data_port = a->s->data_port;
    return jm_register_task_manager(a->gw, &r, timeout_ms);
}

static int
jls_check(void *arg, struct rpc_future *reply, spate_error *err)
{
    Cluster__RegistrationReply *r = rpc_future_value(reply);

    UNUSED(arg);
    if (!r->accepted)
        return spate_error_set(err, SPATE_EREMOTE, "%s", r->reason);
    return 0;
}

static void
jls_attempt_free(struct jls_attempt *a)
{
    rpc_gateway_free(a->gw);
    free(a);
}

static void
jls_success(void *arg, struct rpc_future *reply)
{
    struct jls_attempt *a = arg;
    Cluster__RegistrationReply *r = rpc_future_value(reply);
    struct job_entry *e = job_table_find(a->s->jobs, &a->job_id);

    if (e != NULL) {
        e->registration = NULL;
        if (!gw_id_get(&r->leader_resource_id, &e->jm_resource_id))
            memset(&e->jm_resource_id, 0, sizeof e->jm_resource_id);
        rpc_gateway_free(e->jm);
        e->jm = a->gw;
        a->gw = NULL;
        e->connected = true;
        SPATE_LOG_INFO("taskexecutor", "connected to JobMaster %s for job %s", e->jm_address,
                       id_str(&e->job_id).s);
        a->s->listener.connected(a->s->arg, e);
    }
    jls_attempt_free(a);
}

static void
jls_failure(void *arg, int code, const char *message)
{
    UNUSED(code);
    UNUSED(message);
    jls_attempt_free(arg);
}

static void
jls_cancelled(void *arg)
{
    jls_attempt_free(arg);
}

static const struct registration_ops jls_ops = { jls_attempt, jls_check, jls_success, jls_failure,
                                                 jls_cancelled };

/* The leader of a job is known (on the endpoint, via run_async). */
struct jls_news {
    struct job_leader_service *s;
    spate_id job_id;
    spate_id session; /* the JobMasterId (zero: standalone, keep the slot request's) */
    char address[];
};

/* With high availability the job's leader information is the authority:
 * when it names another JobMaster (address, or JobMasterId: the leader
 * session) than the one this entry registers or is connected with (a
 * failover), that attempt or connection is dropped. True when it was. */
static bool
jls_follow(struct job_leader_service *s, struct job_entry *e, const char *address,
           const spate_id *jm_id)
{
    bool moved = strcmp(e->jm_address, address) != 0 ||
                 (jm_id != NULL && !id_is_zero(jm_id) && !id_equal(jm_id, &e->jm_id));

    if (!moved)
        return false;
    if (e->registration != NULL || e->connected)
        SPATE_LOG_INFO("taskexecutor", "job %s: its JobMaster is now %s (was %s)",
                       id_str(&e->job_id).s, address, e->jm_address);
    if (e->connected && s->listener.lost_leadership != NULL)
        s->listener.lost_leadership(s->arg, e);
    registration_cancel(e->registration);
    e->registration = NULL;
    rpc_gateway_free(e->jm);
    e->jm = NULL;
    e->connected = false;
    free(e->jm_address);
    e->jm_address = xstrdup(address);
    if (jm_id != NULL && !id_is_zero(jm_id))
        e->jm_id = *jm_id;
    return true;
}

static void jls_register(struct job_leader_service *s, struct job_entry *e);

void
job_leader_service_update(struct job_leader_service *s, struct job_entry *e, const spate_id *jm_id,
                          const char *address)
{
    if (jls_follow(s, e, address, jm_id) && e->retrieval != NULL)
        jls_register(s, e);
}

/* Registers at e's JobMaster (e->jm_address, fenced with e->jm_id). */
static void
jls_register(struct job_leader_service *s, struct job_entry *e)
{
    struct jls_attempt *a;
    char target[600];
    spate_error err = { 0 };

    if (e->connected || e->registration != NULL)
        return;
    a = xcalloc(1, sizeof *a);
    a->s = s;
    a->job_id = e->job_id;
    if (rpc_gateway_new(s->ep->svc, e->jm_address, &e->jm_id, &a->gw, &err) != 0) {
        SPATE_LOG_ERROR("taskexecutor", "job %s: bad JobMaster address: %s", id_str(&e->job_id).s,
                        err.message);
        free(a);
        return;
    }
    snprintf(target, sizeof target, "JobMaster %s of job %s", e->jm_address, id_str(&e->job_id).s);
    e->registration = registration_start(s->ep, target, &s->reg, &jls_ops, a);
}

static void
jls_on_leader(void *arg)
{
    struct jls_news *n = arg;
    struct job_entry *e = job_table_find(n->s->jobs, &n->job_id);

    if (e != NULL) {
        jls_follow(n->s, e, n->address, &n->session);
        jls_register(n->s, e);
    }
    free(n);
}

/* A retrieval's listener argument: the job by id, never the entry, since
 * the listener may be called on another thread. */
struct jls_ctx {
    struct job_leader_service *s;
    spate_id job_id;
};

static void
jls_notify(void *arg, const char *address, const spate_id *session)
{
    struct jls_ctx *ctx = arg;
    struct jls_news *n;

    if (address == NULL)
        return;
    n = xmalloc(sizeof *n + strlen(address) + 1);
    n->s = ctx->s;
    n->job_id = ctx->job_id;
    if (session != NULL)
        n->session = *session;
    else
        memset(&n->session, 0, sizeof n->session);
    strcpy(n->address, address);
    rpc_endpoint_run_async(ctx->s->ep, jls_on_leader, n);
}

static void
jls_error(void *arg, int code, const char *message)
{
    struct jls_ctx *ctx = arg;

    SPATE_LOG_WARN("taskexecutor", "job %s: JobMaster leader retrieval failed (%s): %s",
                   id_str(&ctx->job_id).s, spate_err_name(code), message);
}

static const struct leader_listener jls_listener = { jls_notify, jls_error };

void
job_leader_service_add_job(struct job_leader_service *s, struct job_entry *e)
{
    struct jls_ctx *ctx;
    spate_error err = { 0 };

    if (e->retrieval != NULL)
        return;
    ctx = xmalloc(sizeof *ctx);
    ctx->s = s;
    ctx->job_id = e->job_id;
    e->retrieval_ctx = ctx;
    e->retrieval = s->ha->ops->job_master_retriever(s->ha, &e->job_id, e->jm_address);
    if (leader_retrieval_start(e->retrieval, &jls_listener, ctx, &err) != 0)
        SPATE_LOG_ERROR("taskexecutor", "job %s: cannot retrieve its JobMaster: %s",
                        id_str(&e->job_id).s, err.message);
}

void
job_leader_service_disconnect(struct job_leader_service *s, struct job_entry *e)
{
    UNUSED(s);
    registration_cancel(e->registration);
    e->registration = NULL;
    if (e->retrieval != NULL) {
        leader_retrieval_stop(e->retrieval);
        leader_retrieval_free(e->retrieval);
        e->retrieval = NULL;
    }
    free(e->retrieval_ctx);
    e->retrieval_ctx = NULL;
    rpc_gateway_free(e->jm);
    e->jm = NULL;
    e->connected = false;
}
