/* The mini cluster (mini_cluster.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/mini_cluster.h"
#include "core/alloc.h"
#include "core/log.h"
#include "core/util.h"
#include "blob/blob_server.h"
#include "ha/ha_services.h"
#include "jobmanager/dispatcher.h"
#include "jobmanager/jm_leadership.h"
#include "jobmanager/resource_manager.h"
#include "metrics/prometheus_reporter.h"
#include "network/net_env.h"
#include "rpc/gateways.h"
#include "taskmanager/library_cache.h"
#include "taskmanager/task_executor.h"

#define MC_LOG "minicluster"

struct mc_taskmanager {
    struct task_executor *te;
    struct task_executor_options o;
    struct net_env *net;
    struct library_cache *libraries;
    char name[64];
};

struct mini_cluster {
    struct rpc_service *svc;
    struct ha_services *ha;
    struct resource_manager *rm;
    struct dispatcher *dispatcher;
    struct jm_leadership *leadership; /* embedded: granted at once */
    struct resource_manager_options rmo;
    struct dispatcher_options dso;
    struct blob_server *blobs;
    struct mc_taskmanager *tms;
    int ntms;
    struct prometheus_reporter *prom;   /* over the TaskManagers' registries */
    struct metric_registry *jm_metrics; /* the JobMasters' job groups */
    int64_t cancellation_timeout_ms;
    char dispatcher_address[300];
    int start_error;
    spate_error err;
    struct config *conf; /* the caller's, with this cluster's secret */
};

/* A TaskManager of the mini cluster is this process: one whose task will
 * not stop (task.cancellation.timeout) ends it, as it would end a
 * TaskManager process. */
static void
mc_on_exit(void *arg, int code, const char *reason)
{
    UNUSED(arg);
    if (code == 0)
        return;
    SPATE_LOG_ERROR(MC_LOG, "a TaskManager must end: %s", reason);
    fprintf(stderr, "spate: mini cluster TaskManager failed: %s\n", reason);
    fflush(NULL);
    _exit(2);
}

static void
mc_start_endpoints(void *arg)
{
    struct mini_cluster *mc = arg;

    if ((mc->start_error = resource_manager_start(mc->svc, &mc->rmo, &mc->rm, &mc->err)) != 0 ||
        (mc->start_error = dispatcher_start(mc->svc, &mc->dso, &mc->dispatcher, &mc->err)) != 0)
        return;
    for (int i = 0; i < mc->ntms; i++) {
        struct mc_taskmanager *tm = &mc->tms[i];

        if ((mc->start_error = task_executor_start(mc->svc, &tm->o, &tm->te, &mc->err)) != 0)
            return;
    }
}

static void
mc_stop_endpoints(void *arg)
{
    struct mini_cluster *mc = arg;

    for (int i = 0; i < mc->ntms; i++)
        if (mc->tms[i].te != NULL)
            rpc_future_unref(task_executor_stop(mc->tms[i].te, "mini cluster stopping"));
    if (mc->dispatcher != NULL)
        rpc_future_unref(dispatcher_stop(mc->dispatcher));
    if (mc->rm != NULL)
        rpc_future_unref(resource_manager_stop(mc->rm));
}

static int
mc_add_taskmanager(struct mini_cluster *mc, const struct config *conf,
                   const struct mini_cluster_options *mo, int i, spate_error *err)
{
    struct mc_taskmanager *tm = &mc->tms[i];
    struct net_env_config nc;
    int rc;

    if ((rc = task_executor_options_from_config(conf, &tm->o, err)) != 0 ||
        (rc = net_env_config_load(conf, &nc, err)) != 0)
        return rc;
    id_random(&tm->o.resource_id);
    snprintf(tm->name, sizeof tm->name, "%s_%d", RPC_ENDPOINT_TASK_EXECUTOR, i);
    nc.name = tm->name;
    nc.port = 0; /* several data ports on one host */
    if ((rc = net_env_new(&nc, &tm->net, err)) != 0)
        return rc;
    if ((rc = library_cache_from_config(conf, NULL, &tm->libraries, err)) != 0)
        return rc;
    tm->o.endpoint_name = tm->name;
    tm->o.slots = (uint32_t)mo->slots_per_tm;
    tm->o.net = tm->net;
    tm->o.libraries = tm->libraries;
    tm->o.data_port = net_env_data_port(tm->net);
    tm->o.print_out = mo->print_out != NULL ? mo->print_out : stdout;
    tm->o.ha = mc->ha;
    tm->o.on_exit = mc_on_exit;
    tm->o.arg = mc;
    mc->cancellation_timeout_ms = tm->o.cancellation_timeout_ms;
    return 0;
}

/* Its listeners are on loopback, where other users are: unless the caller
 * set security.rpc.secret, a random one of this cluster's own guards them. */
static struct config *
mc_config(const struct config *caller)
{
    struct config *conf = config_copy(caller);
    char hex[2 * ID_BYTES + 1];
    spate_id a;

    if (config_is_set(conf, CFG(SECURITY_RPC_SECRET)))
        return conf;
    id_random(&a);
    snprintf(hex, sizeof hex, "%s", id_str(&a).s);
    config_set(conf, CFG(SECURITY_RPC_SECRET)->key, hex, "random, of this mini cluster");
    explicit_bzero(hex, sizeof hex);
    return conf;
}

/* As Flink's MiniCluster, the configured reporter: one for the process,
 * over every TaskManager's registry. */
static int
mc_start_reporter(struct mini_cluster *mc, const struct config *conf, spate_error *err)
{
    struct prometheus_reporter_options po = { .bind_host = "127.0.0.1" };
    struct metric_registry **rs = xcalloc((size_t)mc->ntms + 1, sizeof *rs);
    size_t n = 0;
    int rc;

    rs[n++] = mc->jm_metrics;
    for (int i = 0; i < mc->ntms; i++)
        if ((rs[n] = task_executor_metric_registry(mc->tms[i].te)) != NULL)
            n++;
    rc = prometheus_reporter_from_config(conf, rs, n, &po, &mc->prom, err);
    free(rs);
    return rc;
}

int
mini_cluster_start(const struct config *caller_conf, const struct mini_cluster_options *mo,
                   struct mini_cluster **out, spate_error *err)
{
    struct mini_cluster *mc = xcalloc(1, sizeof *mc);
    struct rpc_service_options ro = { 0 };
    struct blob_server_options bo;
    const struct config *conf;
    int rc;

    if (mo->taskmanagers < 1 || mo->slots_per_tm < 1) {
        free(mc);
        return spate_error_set(err, SPATE_EINVAL,
                               "a mini cluster needs at least one TaskManager and one slot");
    }
    mc->conf = mc_config(caller_conf);
    conf = mc->conf;
    mc->ntms = mo->taskmanagers;
    mc->tms = xcalloc((size_t)mc->ntms, sizeof *mc->tms);
    if ((rc = rpc_service_options_from_config(conf, &ro, err)) != 0 ||
        (rc = dispatcher_options_from_config(conf, &mc->dso, err)) != 0 ||
        (rc = blob_server_options_from_config(conf, &bo, err)) != 0)
        goto fail;
    /* The same BlobServer and BlobCaches as a cluster, over loopback. */
    bo.port = "0";
    if ((rc = blob_server_start(&bo, &mc->blobs, err)) != 0)
        goto fail;
    /* Nothing outside connects; the listener only gives the endpoints an
     * address, which the in-process transport recognises as its own. */
    ro.bind_host = "127.0.0.1";
    ro.port = "0";
    ro.thread_name = "rpc";
    if ((rc = rpc_service_new(&ro, &mc->svc, err)) != 0 ||
        (rc = rpc_service_start(mc->svc, err)) != 0)
        goto fail;
    mc->ha = ha_embedded_new();
    mc->rmo.heartbeat = mc->dso.heartbeat;
    mc->dso.ha = mc->ha;
    mc->dso.blobs = mc->blobs;
    mc->jm_metrics = metric_registry_new();
    mc->dso.metrics = mc->jm_metrics;
    mc->dso.host = "localhost";
    for (int i = 0; i < mc->ntms; i++)
        if ((rc = mc_add_taskmanager(mc, conf, mo, i, err)) != 0)
            goto fail;
    rpc_service_run_sync(mc->svc, NULL, mc_start_endpoints, mc);
    if ((rc = mc->start_error) != 0) {
        *err = mc->err;
        goto fail;
    }
    if ((rc = jm_leadership_start(mc->ha->ops->election(mc->ha), mc->rm, mc->dispatcher, "",
                                  &mc->leadership, err)) != 0)
        goto fail;
    snprintf(mc->dispatcher_address, sizeof mc->dispatcher_address, "%s/%s",
             rpc_service_address(mc->svc), RPC_ENDPOINT_DISPATCHER);
    if ((rc = mc_start_reporter(mc, conf, err)) != 0)
        goto fail;
    SPATE_LOG_INFO(MC_LOG, "mini cluster started: %d TaskManager%s with %d slot%s each", mc->ntms,
                   mc->ntms == 1 ? "" : "s", mo->slots_per_tm, mo->slots_per_tm == 1 ? "" : "s");
    *out = mc;
    return 0;
fail:
    mini_cluster_stop(mc);
    return rc;
}

struct rpc_service *
mini_cluster_service(struct mini_cluster *mc)
{
    return mc->svc;
}

const char *
mini_cluster_dispatcher_address(const struct mini_cluster *mc)
{
    return mc->dispatcher_address;
}

void
mini_cluster_network_stats(struct mini_cluster *mc, int i, struct net_env_stats *st)
{
    net_env_stats(mc->tms[i].net, st);
}

void
mini_cluster_stop(struct mini_cluster *mc)
{
    int64_t wait_ms;
    bool ended = true;

    if (mc == NULL)
        return;
    wait_ms = mc->cancellation_timeout_ms > 0 ? mc->cancellation_timeout_ms : 30000;
    prometheus_reporter_stop(mc->prom); /* before the registries go */
    mc->prom = NULL;
    /* Tasks end first, while their TaskExecutors can still report. */
    for (int i = 0; i < mc->ntms; i++)
        if (mc->tms[i].te != NULL)
            task_executor_cancel_tasks(mc->tms[i].te);
    for (int i = 0; i < mc->ntms; i++)
        if (mc->tms[i].te != NULL && task_executor_wait_tasks(mc->tms[i].te, wait_ms) != 0)
            ended = false;
    jm_leadership_stop(mc->leadership);
    if (mc->svc != NULL) {
        rpc_service_run_sync(mc->svc, NULL, mc_stop_endpoints, mc);
        rpc_service_free(mc->svc);
    }
    if (!ended) {
        /* What a task that will not end uses must stay: leave it all. */
        SPATE_LOG_ERROR(MC_LOG, "tasks still running %lld ms after cancel", (long long)wait_ms);
        return;
    }
    for (int i = 0; i < mc->ntms; i++) {
        net_env_free(mc->tms[i].net);
        library_cache_free(mc->tms[i].libraries);
    }
    ha_services_free(mc->ha);
    blob_server_stop(mc->blobs);
    metric_registry_free(mc->jm_metrics);
    free(mc->tms);
    config_free(mc->conf);
    free(mc);
}

struct blob_server *
mini_cluster_blob_server(struct mini_cluster *mc)
{
    return mc->blobs;
}
