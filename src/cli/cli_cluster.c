/* The cluster commands (cli_cluster.h). The JobManager process: its RPC
 * service with the ResourceManager and the Dispatcher, and the REST server;
 * SIGTERM and DELETE /cluster shut the cluster down (TaskManagers are told
 * to stop), then the process ends. */
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
#include "core/util.h"
#include "ha/ha_services.h"
#include "jobmanager/dispatcher.h"
#include "jobmanager/resource_manager.h"
#include "rest/rest_server.h"
#include "rpc/gateways.h"
#include "taskmanager/taskmanager.h"

#define JM_LOG "jobmanager"

struct jm_process {
    struct rpc_service *svc;
    struct ha_services *ha;
    struct resource_manager *rm;
    struct dispatcher *dispatcher;
    struct resource_manager_options rmo;
    struct dispatcher_options dso;
    int exit_fd;
    int start_error;
    spate_error err;
};

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
jm_shutdown_cluster(void *arg)
{
    struct jm_process *p = arg;

    dispatcher_shutdown(p->dispatcher, "the JobManager received SIGTERM");
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

/* Waits for the signalfd or the exit eventfd; returns which (0 signal, 1
 * exit), or -1 when timeout_ms passed. */
static int
wait_for_exit(int sfd, int efd, int timeout_ms)
{
    for (;;) {
        struct pollfd fds[2] = { { .fd = sfd, .events = POLLIN }, { .fd = efd, .events = POLLIN } };
        int n = poll(fds, 2, timeout_ms);

        if (n == 0)
            return -1;
        if (n < 0)
            continue;
        if (fds[0].revents & POLLIN) {
            struct signalfd_siginfo si;

            if (read(sfd, &si, sizeof si) == sizeof si)
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

int
cli_jobmanager(const struct config *conf, int argc, char **argv)
{
    struct jm_process p = { .exit_fd = -1 };
    struct rpc_service_options ro = { 0 };
    struct rest_server_options so = { 0 };
    struct rest_server *rest = NULL;
    spate_error err = { 0 };
    const char *bind_host, *adv, *rest_bind, *rest_port = NULL;
    int64_t port, rport;
    char port_text[16], rport_text[16];
    sigset_t set;
    int sfd, status = 1;

    UNUSED(argc);
    UNUSED(argv);
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    sfd = signalfd(-1, &set, SFD_CLOEXEC);
    p.exit_fd = eventfd(0, EFD_CLOEXEC);

    if (config_get_string(conf, CFG(JOBMANAGER_BIND_HOST), &bind_host, &err) != 0 ||
        config_get_string(conf, CFG(JOBMANAGER_RPC_ADDRESS), &adv, &err) != 0 ||
        config_get_int(conf, CFG(JOBMANAGER_RPC_PORT), &port, &err) != 0 ||
        config_get_string(conf, CFG(REST_BIND_ADDRESS), &rest_bind, &err) != 0 ||
        config_get_int(conf, CFG(REST_PORT), &rport, &err) != 0 ||
        rpc_service_options_from_config(conf, &ro, &err) != 0 ||
        heartbeat_options_from_config(conf, &p.rmo.heartbeat, &err) != 0 ||
        registration_options_from_config(conf, &p.dso.registration, &err) != 0 ||
        config_get_duration_ms(conf, CFG(SLOT_REQUEST_TIMEOUT), &p.dso.slot_request_timeout_ms,
                               &err) != 0)
        goto fail;
    config_get_string(conf, CFG(REST_BIND_PORT), &rest_port, NULL);
    snprintf(port_text, sizeof port_text, "%lld", (long long)port);
    snprintf(rport_text, sizeof rport_text, "%lld", (long long)rport);
    ro.bind_host = bind_host;
    ro.port = port_text;
    ro.advertised_host = adv;
    ro.thread_name = "rpc";
    if (rpc_service_new(&ro, &p.svc, &err) != 0 || rpc_service_start(p.svc, &err) != 0)
        goto fail;
    /* Standalone HA: the leaders are this process's endpoints, at the
     * address the service really bound (port 0 picks one). */
    p.ha = ha_standalone_new(rpc_service_address(p.svc));
    p.dso.heartbeat = p.rmo.heartbeat;
    p.dso.ha = p.ha;
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
    if (rest_server_start(&so, &rest, &err) != 0)
        goto fail;
    SPATE_LOG_INFO(JM_LOG, "JobManager started: rpc at %s, REST at http://%s:%d",
                   rpc_service_address(p.svc), rest_bind, rest_server_port(rest));

    if (wait_for_exit(sfd, p.exit_fd, -1) == 0) {
        /* SIGTERM: as DELETE /cluster, the TaskManagers are told to stop. */
        rpc_service_run_sync(p.svc, NULL, jm_shutdown_cluster, &p);
        if (wait_for_exit(sfd, p.exit_fd, 5000) < 0)
            SPATE_LOG_WARN(JM_LOG, "the cluster did not confirm its shutdown in 5 s: exiting");
    }
    status = 0;
    rest_server_stop(rest);
    rest = NULL;
    rpc_service_run_sync(p.svc, NULL, jm_stop_endpoints, &p);
    SPATE_LOG_INFO(JM_LOG, "JobManager stopped");
fail:
    if (status != 0) {
        SPATE_LOG_ERROR(JM_LOG, "JobManager failed: %s", err.message);
        fprintf(stderr, "spate jobmanager: %s\n", err.message);
    }
    rest_server_stop(rest);
    rpc_service_free(p.svc);
    ha_services_free(p.ha);
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
    return taskmanager_run(conf, count);
}

int
cli_test_job(const struct config *conf, int argc, char **argv)
{
    struct rpc_service_options ro = { 0 };
    Cluster__TestJob job = CLUSTER__TEST_JOB__INIT;
    struct rpc_gateway *gw = NULL;
    struct rpc_service *svc = NULL;
    struct rpc_future *f = NULL;
    spate_error err = { 0 };
    const char *host;
    int64_t port;
    char addr[300];
    int status = 1;
    spate_id id;

    job.name = "test job";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--slots") == 0 && i + 1 < argc)
            job.slots = (uint32_t)atoi(argv[++i]);
        else if (strcmp(argv[i], "--run-ms") == 0 && i + 1 < argc)
            job.run_ms = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--name") == 0 && i + 1 < argc)
            job.name = argv[++i];
        else {
            fprintf(stderr, "usage: spate test-job --slots N [--run-ms MS] [--name NAME]\n");
            return 2;
        }
    }
    if (config_get_string(conf, CFG(JOBMANAGER_RPC_ADDRESS), &host, &err) != 0 ||
        config_get_int(conf, CFG(JOBMANAGER_RPC_PORT), &port, &err) != 0 ||
        rpc_service_options_from_config(conf, &ro, &err) != 0)
        goto out;
    ro.thread_name = "rpc";
    snprintf(addr, sizeof addr, "%s:%lld/%s", host, (long long)port, RPC_ENDPOINT_DISPATCHER);
    if (rpc_service_new(&ro, &svc, &err) != 0 || rpc_service_start(svc, &err) != 0 ||
        rpc_gateway_new(svc, addr, NULL, &gw, &err) != 0)
        goto out;
    f = dispatcher_submit_test_job(gw, &job, 0);
    if (rpc_future_wait(f, -1, &err) != 0)
        goto out;
    gw_id_get(&((Cluster__JobId *)rpc_future_value(f))->job_id, &id);
    printf("%s\n", id_str(&id).s);
    status = 0;
out:
    if (status != 0)
        fprintf(stderr, "spate test-job: %s\n", err.message);
    rpc_future_unref(f);
    rpc_gateway_free(gw);
    rpc_service_free(svc);
    return status;
}
