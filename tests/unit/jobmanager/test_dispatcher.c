/* Unit tests of the Dispatcher (src/jobmanager/dispatcher.c) with the
 * embedded HA services: a submission that arrives while the Dispatcher,
 * just granted leadership, recovers the job graph store. The store is
 * wrapped so that the race the mini cluster lost in CI happens every time:
 * the recovery lists the store only after the submission stored its job.
 * Before the fix the recovery started that job too and the submission
 * was answered "job ... was submitted already". */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include <spate/spate.h>

#include "blob/blob_server.h"
#include "core/alloc.h"
#include "core/config.h"
#include "core/util.h"
#include "ha/ha_services.h"
#include "ha/stores.h"
#include "jobmanager/dispatcher.h"
#include "rpc/gateways.h"
#include "rpc/service.h"
#include "streaming/job_graph_codec.h"
#include "streaming/stream_graph.h"

/* ---- a job graph store whose listing waits for a put --------------------------- */

static struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    bool put_done, listed;
    int puts;
} gate = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false, 0 };

struct gated_store {
    struct job_graph_store base;
    struct job_graph_store *inner;
};

/* Waits until *flag or for at most ms. */
static void
gate_wait(bool *flag, int ms)
{
    struct timespec until;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&gate.lock);
    while (!*flag && pthread_cond_timedwait(&gate.changed, &gate.lock, &until) == 0)
        ;
    pthread_mutex_unlock(&gate.lock);
}

static void
gate_set(bool *flag)
{
    pthread_mutex_lock(&gate.lock);
    *flag = true;
    pthread_cond_broadcast(&gate.changed);
    pthread_mutex_unlock(&gate.lock);
}

static struct job_graph_store *
inner_of(struct job_graph_store *s)
{
    return container_of(s, struct gated_store, base)->inner;
}

static int
gated_put(struct job_graph_store *s, const struct job_graph_record *r, spate_error *err)
{
    int rc = inner_of(s)->ops->put(inner_of(s), r, err);

    __atomic_add_fetch(&gate.puts, 1, __ATOMIC_SEQ_CST);
    gate_set(&gate.put_done);
    /* Let a recovery that listed the store finish first. */
    gate_wait(&gate.listed, 2000);
    nanosleep(&(struct timespec){ 0, 100000000 }, NULL);
    return rc;
}

static int
gated_get(struct job_graph_store *s, const spate_id *job, struct job_graph_record *out,
          spate_error *err)
{
    return inner_of(s)->ops->get(inner_of(s), job, out, err);
}

static int
gated_job_ids(struct job_graph_store *s, spate_id **ids, size_t *count, spate_error *err)
{
    int rc;

    /* The recovery is slow: a submission's put may come first. */
    gate_wait(&gate.put_done, 1000);
    rc = inner_of(s)->ops->job_ids(inner_of(s), ids, count, err);
    gate_set(&gate.listed);
    return rc;
}

static int
gated_remove(struct job_graph_store *s, const spate_id *job, spate_error *err)
{
    return inner_of(s)->ops->remove(inner_of(s), job, err);
}

static void
gated_free(struct job_graph_store *s)
{
    inner_of(s)->ops->free(inner_of(s));
    free(container_of(s, struct gated_store, base));
}

static const struct job_graph_store_ops gated_ops = { gated_put, gated_get, gated_job_ids,
                                                      gated_remove, gated_free };

static const struct ha_services_ops *embedded_ops;
static struct ha_services_ops wrapped_ops;

static int
gated_job_graph_store(struct ha_services *ha, struct job_graph_store **out, spate_error *err)
{
    struct gated_store *g = xcalloc(1, sizeof *g);
    int rc = embedded_ops->job_graph_store(ha, &g->inner, err);

    if (rc != 0) {
        free(g);
        return rc;
    }
    g->base.ops = &gated_ops;
    *out = &g->base;
    return 0;
}

/* ---- the Dispatcher in an RPC service of its own ----------------------------------- */

static struct rpc_service *svc;
static struct dispatcher *disp;
static struct dispatcher_options dopts;
static int start_rc;
static spate_error start_err;

static void
start_dispatcher(void *arg)
{
    UNUSED(arg);
    start_rc = dispatcher_start(svc, &dopts, &disp, &start_err);
}

static void
stop_dispatcher(void *arg)
{
    UNUSED(arg);
    rpc_future_unref(dispatcher_stop(disp));
}

static void
job_graph_bytes(uint8_t **bytes, size_t *len, spate_id *job_id)
{
    spate_env *env = env_new(NULL, NULL);
    int64_t values[] = { 1, 2, 3 };
    struct job_graph *jg;
    spate_error err = { 0 };

    spate_sink_print(spate_source_collection(env, spate_type_int64(), values, 3));
    cr_assert_eq(job_graph_build(env, "held", &jg, &err), 0, "%s", err.message);
    *job_id = jg->job_id;
    cr_assert_eq(job_graph_encode(jg, NULL, bytes, len, &err), 0, "%s", err.message);
    job_graph_free(jg);
    env_free(env);
}

Test(dispatcher, a_submission_during_recovery_runs_once_and_is_answered)
{
    struct rpc_service_options ro = { 0 };
    struct blob_server_options bo;
    struct blob_server *blobs;
    struct config *conf = config_new();
    struct ha_services *ha = ha_embedded_new();
    Cluster__JobSubmission sub = CLUSTER__JOB_SUBMISSION__INIT;
    struct rpc_gateway *gw;
    struct rpc_future *f;
    spate_error err = { 0 };
    spate_id session, job_id, got;
    uint8_t *graph;
    size_t graph_len;
    char addr[300];
    int rc;

    embedded_ops = ha->ops;
    wrapped_ops = *ha->ops;
    wrapped_ops.job_graph_store = gated_job_graph_store;
    ha->ops = &wrapped_ops;
    cr_assert_eq(rpc_service_options_from_config(conf, &ro, &err), 0, "%s", err.message);
    ro.bind_host = "127.0.0.1";
    ro.port = "0";
    cr_assert_eq(rpc_service_new(&ro, &svc, &err), 0, "%s", err.message);
    cr_assert_eq(rpc_service_start(svc, &err), 0, "%s", err.message);
    cr_assert_eq(dispatcher_options_from_config(conf, &dopts, &err), 0, "%s", err.message);
    cr_assert_eq(blob_server_options_from_config(conf, &bo, &err), 0, "%s", err.message);
    bo.port = "0";
    cr_assert_eq(blob_server_start(&bo, &blobs, &err), 0, "%s", err.message);
    dopts.ha = ha;
    dopts.blobs = blobs;
    dopts.host = "localhost";
    rpc_service_run_sync(svc, NULL, start_dispatcher, NULL);
    cr_assert_eq(start_rc, 0, "%s", start_err.message);

    job_graph_bytes(&graph, &graph_len, &job_id);
    sub.job_graph.data = graph;
    sub.job_graph.len = graph_len;
    snprintf(addr, sizeof addr, "%s/%s", rpc_service_address(svc), RPC_ENDPOINT_DISPATCHER);
    cr_assert_eq(rpc_gateway_new(svc, addr, NULL, &gw, &err), 0, "%s", err.message);
    /* The grant starts the recovery; the submission follows at once, as the
     * mini cluster's client submits right after it starts. */
    id_random(&session);
    dispatcher_grant_leadership(disp, &session, NULL);
    f = dispatcher_submit_job(gw, &sub, 0);
    rc = rpc_future_wait(f, 30000, &err);
    cr_assert_eq(rc, 0, "the submission failed: %s", err.message);
    gw_id_get(&((const Cluster__JobId *)rpc_future_value(f))->job_id, &got);
    cr_assert(id_equal(&got, &job_id), "the reply names another job");
    cr_assert_eq(__atomic_load_n(&gate.puts, __ATOMIC_SEQ_CST), 1, "the job was stored %d times",
                 gate.puts);
    rpc_future_unref(f);

    rpc_service_run_sync(svc, NULL, stop_dispatcher, NULL);
    rpc_gateway_free(gw);
    rpc_service_stop(svc);
    rpc_service_free(svc);
    ha_services_free(ha);
    blob_server_stop(blobs);
    config_free(conf);
    free(graph);
}
