/* The cluster commands (cli_cluster.h). The JobManager process: its RPC
 * service with the ResourceManager and the Dispatcher, and the REST server.
 * DELETE /cluster (spate stop-cluster) shuts the cluster down (TaskManagers
 * are told to stop), then the process ends; SIGTERM, as Flink's, stops this
 * process only: its TaskManagers keep running and register again with the
 * JobManager that comes up at its address (or, with high availability, the
 * next leader). */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "cli/cli_cluster.h"
#include "core/log.h"
#include "core/tmp_dir.h"
#include "core/tls.h"
#include "core/util.h"
#include "blob/blob_server.h"
#include "ha/ha_services.h"
#include "jobmanager/dispatcher.h"
#include "jobmanager/jm_leadership.h"
#include "jobmanager/resource_manager.h"
#include "metrics/process_metrics.h"
#include "metrics/prometheus_reporter.h"
#include "rest/rest_server.h"
#include "rpc/gateways.h"
#include "taskmanager/taskmanager.h"

#define JM_LOG "jobmanager"

struct jm_process {
    struct rpc_service *svc;
    struct ha_services *ha;
    struct resource_manager *rm;
    struct dispatcher *dispatcher;
    struct jm_leadership *leadership;
    bool ha_enabled; /* high-availability.type other than none */
    struct blob_server *blobs;
    struct resource_manager_options rmo;
    struct dispatcher_options dso;
    int exit_fd;
    int start_error;
    spate_error err;
    /* The JobManager's metrics (Flink's JobManagerMetricGroup) and their
     * Prometheus reporter; the reporter's thread refreshes the gauges. */
    struct metric_registry *metrics;
    struct metric_group *jm_group;
    struct process_metric_gauges process;
    struct metric_gauge taskmanagers, running_jobs, slots_available, slots_total;
    struct rpc_gateway *dispatcher_gw;
    struct prometheus_reporter *prom;
};

#define JM_METRICS_ASK_MS 2000

/* The reporter's thread, before a scrape: the process's figures, and the
 * cluster's from the Dispatcher (kept as they were when it does not answer,
 * e.g. while another JobManager leads). */
static void
jm_refresh_metrics(void *arg)
{
    struct jm_process *p = arg;
    Cluster__Ack req = CLUSTER__ACK__INIT;
    struct rpc_future *f;

    process_metric_gauges_refresh(&p->process);
    f = dispatcher_request_cluster_overview(p->dispatcher_gw, &req, JM_METRICS_ASK_MS);
    if (rpc_future_wait(f, JM_METRICS_ASK_MS + 1000, NULL) == 0) {
        const Cluster__ClusterOverview *o = rpc_future_value(f);

        metric_gauge_set(&p->taskmanagers, o->taskmanagers);
        metric_gauge_set(&p->running_jobs, o->jobs_running);
        metric_gauge_set(&p->slots_available, o->slots_free);
        metric_gauge_set(&p->slots_total, o->slots_total);
    }
    rpc_future_unref(f);
}

/* The JobManager's metric registry and group with Flink's names (before
 * the Dispatcher starts: its JobMasters register their jobs' groups). */
static void
jm_new_metrics(const struct config *conf, struct jm_process *p)
{
    const char *labels[] = { "host", "localhost", NULL };

    config_get_string(conf, CFG(JOBMANAGER_RPC_ADDRESS), &labels[1], NULL);
    if (labels[1] == NULL)
        labels[1] = "localhost";
    p->metrics = metric_registry_new();
    p->jm_group = metric_group_new_scoped(p->metrics, "jobmanager", "jobmanager", labels);
    process_metric_gauges_register(&p->process, p->jm_group);
    metric_group_gauge(p->jm_group, "numRegisteredTaskManagers", &p->taskmanagers);
    metric_group_gauge(p->jm_group, "numRunningJobs", &p->running_jobs);
    metric_group_gauge(p->jm_group, "taskSlotsAvailable", &p->slots_available);
    metric_group_gauge(p->jm_group, "taskSlotsTotal", &p->slots_total);
    p->dso.metrics = p->metrics;
    p->dso.host = labels[1];
}

/* The Prometheus reporter, when the configuration asks for one. */
static int
jm_start_reporter(const struct config *conf, struct jm_process *p, const char *bind_host,
                  spate_error *err)
{
    struct prometheus_reporter_options po = { .bind_host = bind_host,
                                              .refresh = jm_refresh_metrics,
                                              .arg = p };
    char addr[400];

    snprintf(addr, sizeof addr, "%s/%s", rpc_service_address(p->svc), RPC_ENDPOINT_DISPATCHER);
    rpc_gateway_new(p->svc, addr, NULL, &p->dispatcher_gw, NULL);
    return prometheus_reporter_from_config(conf, &p->metrics, 1, &po, &p->prom, err);
}

static void
jm_stop_reporter(struct jm_process *p)
{
    prometheus_reporter_stop(p->prom);
    p->prom = NULL;
    rpc_gateway_free(p->dispatcher_gw);
    p->dispatcher_gw = NULL;
}

/* After the endpoints stopped (their groups are gone). */
static void
jm_free_metrics(struct jm_process *p)
{
    metric_group_free(p->jm_group);
    p->jm_group = NULL;
    metric_registry_free(p->metrics);
    p->metrics = NULL;
}

static void
jm_on_shutdown(void *arg, const char *reason)
{
    struct jm_process *p = arg;
    uint64_t v = 1;

    SPATE_LOG_INFO(JM_LOG, "the cluster was shut down (%s): exiting", reason);
    if (write(p->exit_fd, &v, sizeof v) < 0) {
        /* nothing else to tell */
    }
}

static void
jm_start_endpoints(void *arg)
{
    struct jm_process *p = arg;

    if ((p->start_error = resource_manager_start(p->svc, &p->rmo, &p->rm, &p->err)) != 0)
        return;
    p->start_error = dispatcher_start(p->svc, &p->dso, &p->dispatcher, &p->err);
}

static void
jm_stop_endpoints(void *arg)
{
    struct jm_process *p = arg;

    if (p->dispatcher != NULL)
        rpc_future_unref(dispatcher_stop(p->dispatcher));
    if (p->rm != NULL)
        rpc_future_unref(resource_manager_stop(p->rm));
}

/* The HA services: standalone leaders are this process's endpoints, at the
 * address the service really bound (port 0 picks one); with ZooKeeper this
 * connects (or fails clearly after the configured retries). */
static int
jm_open_ha(const struct config *conf, struct jm_process *p, spate_error *err)
{
    int type = 0;

    config_get_enum(conf, CFG(HIGH_AVAILABILITY_TYPE), &type, NULL);
    p->ha_enabled = type != 0;
    return ha_services_new(conf, rpc_service_address(p->svc), &p->ha, err);
}

/* Contends for leadership (standalone: granted at once); once granted, the
 * ResourceManager, the Dispatcher and the REST URL lead from here. */
static int
jm_start_leadership(const struct config *conf, struct jm_process *p, int rest_port,
                    spate_error *err)
{
    const char *host = "127.0.0.1";
    bool https = false;
    char url[300];

    config_get_string(conf, CFG(REST_ADDRESS), &host, NULL);
    config_get_bool(conf, CFG(SECURITY_SSL_REST_ENABLED), &https, NULL);
    if (host == NULL || strcmp(host, "localhost") == 0)
        host = "127.0.0.1";
    snprintf(url, sizeof url, "%s://%s:%d", https ? "https" : "http", host, rest_port);
    return jm_leadership_start(p->ha->ops->election(p->ha), p->rm, p->dispatcher, url,
                               &p->leadership, err);
}

/* Waits for the signalfd or the exit eventfd; returns which (0 signal, 1
 * exit), or SPATE_ETIMEDOUT when timeout_ms passed. */
static int
wait_for_exit(int sfd, int efd, int timeout_ms)
{
    for (;;) {
        struct pollfd fds[2] = { { .fd = sfd, .events = POLLIN }, { .fd = efd, .events = POLLIN } };
        int n = poll(fds, 2, timeout_ms);

        if (n == 0)
            return SPATE_ETIMEDOUT;
        if (n < 0)
            continue;
        if (fds[0].revents & POLLIN) {
            struct signalfd_siginfo si;

            if (read(sfd, &si, sizeof si) != sizeof si)
                continue;
            if (si.ssi_signo == SIGHUP) {
                tls_reload_on_sighup();
                continue;
            }
            SPATE_LOG_INFO(JM_LOG, "received signal %u", si.ssi_signo);
            return 0;
        }
        if (fds[1].revents & POLLIN) {
            uint64_t v;

            if (read(efd, &v, sizeof v) == sizeof v)
                return 1;
        }
    }
}

/* log.file: a daemon's lines go there, appended, rolling over at
 * log.file.max-size (Flink's rolling file appender); 0, or 1 after saying
 * why on standard error. */
static int
daemon_log_open(const struct config *conf)
{
    const char *path = NULL;
    spate_error err = { 0 };
    uint64_t max = 0;

    if (config_get_string(conf, CFG(LOG_FILE), &path, NULL) != 0 || path == NULL || path[0] == '\0')
        return 0;
    if (config_get_memory_bytes(conf, CFG(LOG_FILE_MAX_SIZE), &max, &err) != 0 ||
        log_open_file(path, &err) != 0) {
        fprintf(stderr, "spate: %s\n", err.message);
        return 1;
    }
    log_set_max_size((int64_t)MIN(max, (uint64_t)INT64_MAX));
    return 0;
}

int
cli_jobmanager(const struct config *conf, int argc, char **argv)
{
    struct jm_process p = { .exit_fd = -1 };
    struct rpc_service_options ro = { 0 };
    struct rest_server_options so = { 0 };
    struct blob_server_options bo;
    struct rest_server *rest = NULL;
    struct tls_context *tls = NULL;
    spate_error err = { 0 };
    const char *bind_host, *adv, *rest_bind, *rest_port = NULL;
    int64_t port, rport;
    char port_text[16], rport_text[16], blob_host[256], *ha_blobs = NULL;
    sigset_t set;
    int sfd, status = 1, rc;

    if (argc > 1) {
        fprintf(stderr,
                "spate jobmanager: unexpected argument '%s' (try 'spate jobmanager --help')\n",
                argv[1]);
        return 2;
    }
    if (daemon_log_open(conf) != 0)
        return 1;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    sfd = signalfd(-1, &set, SFD_CLOEXEC);
    p.exit_fd = eventfd(0, EFD_CLOEXEC);
    config_warn_misspelled(conf);
    tmp_dir_sweep_config(conf);

    if (tls_context_from_config(conf, TLS_INTERNAL, &tls, &err) != 0 ||
        config_get_string(conf, CFG(JOBMANAGER_BIND_HOST), &bind_host, &err) != 0 ||
        config_get_string(conf, CFG(JOBMANAGER_RPC_ADDRESS), &adv, &err) != 0 ||
        config_get_int(conf, CFG(JOBMANAGER_RPC_PORT), &port, &err) != 0 ||
        config_get_string(conf, CFG(REST_BIND_ADDRESS), &rest_bind, &err) != 0 ||
        config_get_int(conf, CFG(REST_PORT), &rport, &err) != 0 ||
        rpc_service_options_from_config(conf, &ro, &err) != 0 ||
        dispatcher_options_from_config(conf, &p.dso, &err) != 0)
        goto fail;
    p.rmo.heartbeat = p.dso.heartbeat;
    config_get_string(conf, CFG(REST_BIND_PORT), &rest_port, NULL);
    snprintf(port_text, sizeof port_text, "%lld", (long long)port);
    snprintf(rport_text, sizeof rport_text, "%lld", (long long)rport);
    ro.bind_host = bind_host;
    ro.port = port_text;
    ro.advertised_host = adv;
    ro.thread_name = "rpc";
    ro.tls = tls;
    if (rpc_service_new(&ro, &p.svc, &err) != 0 || rpc_service_start(p.svc, &err) != 0)
        goto fail;
    if (jm_open_ha(conf, &p, &err) != 0)
        goto fail;
    p.dso.ha = p.ha;
    if (blob_server_options_from_config(conf, &bo, &err) != 0)
        goto fail;
    /* TaskManagers reach the BlobServer where they reach the RPC service. */
    snprintf(blob_host, sizeof blob_host, "%s", rpc_service_address(p.svc));
    if (strrchr(blob_host, ':') != NULL)
        *strrchr(blob_host, ':') = '\0';
    bo.bind_host = bind_host;
    bo.advertised_host = blob_host;
    if (p.ha->ops->blob_store_dir(p.ha, &ha_blobs, &err) != 0)
        goto fail;
    bo.ha_dir = ha_blobs;
    bo.tls = tls;
    rc = blob_server_start(&bo, &p.blobs, &err);
    free(ha_blobs);
    if (rc != 0)
        goto fail;
    p.dso.blobs = p.blobs;
    jm_new_metrics(conf, &p);
    p.dso.on_shutdown = jm_on_shutdown;
    p.dso.arg = &p;
    rpc_service_run_sync(p.svc, NULL, jm_start_endpoints, &p);
    if (p.start_error != 0) {
        err = p.err;
        goto fail;
    }
    so.bind_address = rest_bind;
    so.port = rest_port != NULL ? rest_port : rport_text;
    so.svc = p.svc;
    so.conf = conf;
    so.blobs = p.blobs;
    so.metrics = p.metrics;
    if (rest_server_start(&so, &rest, &err) != 0)
        goto fail;
    SPATE_LOG_INFO(JM_LOG, "JobManager started: rpc at %s%s, REST at %s://%s:%d",
                   rpc_service_address(p.svc), tls != NULL ? " (TLS)" : "",
                   rest_server_https(rest) ? "https" : "http", rest_bind, rest_server_port(rest));
    if (jm_start_reporter(conf, &p, bind_host, &err) != 0)
        goto fail;
    if (jm_start_leadership(conf, &p, rest_server_port(rest), &err) != 0)
        goto fail;

    if (wait_for_exit(sfd, p.exit_fd, -1) == 0)
        SPATE_LOG_INFO(JM_LOG,
                       "stopping this JobManager only; its TaskManagers keep running "
                       "and register with the next (DELETE /cluster or spate "
                       "stop-cluster stops the cluster)%s",
                       p.ha_enabled ? "; a standby takes the lead (high availability)" : "");
    status = 0;
    jm_leadership_stop(p.leadership);
    p.leadership = NULL;
    rest_server_stop(rest);
    rest = NULL;
    jm_stop_reporter(&p);
    rpc_service_run_sync(p.svc, NULL, jm_stop_endpoints, &p);
    SPATE_LOG_INFO(JM_LOG, "JobManager stopped");
fail:
    if (status != 0) {
        SPATE_LOG_ERROR(JM_LOG, "JobManager failed: %s", err.message);
        fprintf(stderr, "spate jobmanager: %s\n", err.message);
    }
    jm_leadership_stop(p.leadership);
    rest_server_stop(rest);
    jm_stop_reporter(&p);
    rpc_service_free(p.svc);
    jm_free_metrics(&p);
    blob_server_stop(p.blobs);
    ha_services_free(p.ha);
    tls_context_unref(tls);
    if (sfd >= 0)
        close(sfd);
    if (p.exit_fd >= 0)
        close(p.exit_fd);
    return status;
}

int
cli_taskmanager(const struct config *conf, int argc, char **argv)
{
    int count = 1;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
            count = atoi(argv[++i]);
        } else {
            fprintf(stderr, "spate taskmanager: unknown argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (count < 1 || count > 100000) {
        fprintf(stderr, "spate taskmanager: --count must be 1 to 100000\n");
        return 2;
    }
    if (daemon_log_open(conf) != 0)
        return 1;
    config_warn_misspelled(conf);
    tmp_dir_sweep_config(conf);
    return taskmanager_run(conf, count);
}
