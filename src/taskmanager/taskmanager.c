/* The TaskManager process (taskmanager.h). The main thread blocks the
 * termination signals before the RPC thread starts (so only it sees them)
 * and waits on a signalfd and an eventfd the TaskExecutors write when the
 * process should end. */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/log.h"
#include "core/tls.h"
#include "core/util.h"
#include "ha/ha_services.h"
#include "metrics/prometheus_reporter.h"
#include "network/net_env.h"
#include "rpc/gateways.h"
#include "taskmanager/task_executor.h"
#include "taskmanager/taskmanager.h"

#define TM_LOG "taskmanager"

struct tm_process {
    struct rpc_service *svc;
    struct ha_services *ha;
    struct task_executor **tes;
    int count;
    struct task_executor_options o;
    struct net_env *net;              /* count == 1 only: the others run no tasks */
    struct library_cache *libraries;  /* likewise */
    struct prometheus_reporter *prom; /* likewise: metrics.reporter.prom.* */
    struct tls_context *tls;          /* security.ssl.internal, or NULL */
    int exit_fd;                      /* eventfd: exit code + 1 */
    int start_error;                  /* set by tm_start_all */
    spate_error err;
};

static void
tm_on_exit(void *arg, int code, const char *reason)
{
    struct tm_process *p = arg;
    uint64_t v = code == 0 ? 1 : 2;

    UNUSED(reason);
    if (write(p->exit_fd, &v, sizeof v) < 0) {
        /* nothing else to tell */
    }
}

static void
tm_start_all(void *arg)
{
    struct tm_process *p = arg;

    for (int i = 0; i < p->count; i++) {
        struct task_executor_options o = p->o;
        char name[64];

        if (p->count > 1) {
            snprintf(name, sizeof name, "%s_%d", RPC_ENDPOINT_TASK_EXECUTOR, i);
            o.endpoint_name = name;
            id_random(&o.resource_id);
        }
        if ((p->start_error = task_executor_start(p->svc, &o, &p->tes[i], &p->err)) != 0)
            return;
    }
}

static void
tm_stop_all(void *arg)
{
    struct tm_process *p = arg;

    for (int i = 0; i < p->count; i++)
        if (p->tes[i] != NULL)
            rpc_future_unref(task_executor_stop(p->tes[i], "TaskManager shutting down"));
}

/* The data plane and the job libraries of a TaskManager that runs tasks. */
static int
tm_start_runtime(struct tm_process *p, const struct config *conf, spate_error *err)
{
    struct net_env_config nc;
    int rc;

    if ((rc = net_env_config_load(conf, &nc, err)) != 0)
        return rc;
    nc.name = id_str(&p->o.resource_id).s;
    nc.tls = p->tls;
    if ((rc = net_env_new(&nc, &p->net, err)) != 0)
        return rc;
    if ((rc = library_cache_from_config(conf, p->tls, &p->libraries, err)) != 0)
        return rc;
    p->o.net = p->net;
    p->o.libraries = p->libraries;
    p->o.data_port = net_env_data_port(p->net);
    p->o.print_out = stdout;
    return 0;
}

/* Before the TaskExecutor stops (so that tasks still report to their
 * JobMasters): running tasks are cancelled and waited for, bounded by the
 * cancellation timeout. False if one will not end: then what it uses stays. */
static bool
tm_end_tasks(struct tm_process *p)
{
    int64_t wait_ms = p->o.cancellation_timeout_ms > 0 ? p->o.cancellation_timeout_ms : 30000;

    if (p->net == NULL || p->tes[0] == NULL)
        return true;
    task_executor_cancel_tasks(p->tes[0]);
    if (task_executor_wait_tasks(p->tes[0], wait_ms) == 0)
        return true;
    SPATE_LOG_ERROR(TM_LOG,
                    "tasks still running %lld ms after cancel: exiting without freeing "
                    "what they use",
                    (long long)wait_ms);
    return false;
}

static void
tm_free_runtime(struct tm_process *p)
{
    net_env_free(p->net);
    library_cache_free(p->libraries);
}

int
taskmanager_run(const struct config *conf, int count)
{
    struct tm_process p = { .count = count, .exit_fd = -1 };
    struct rpc_service_options ro = { 0 };
    spate_error err = { 0 };
    sigset_t set;
    int sfd = -1, status = 1;
    bool ended;
    const char *bind_host, *port, *host;

    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    sfd = signalfd(-1, &set, SFD_CLOEXEC);
    p.exit_fd = eventfd(0, EFD_CLOEXEC);
    p.tes = xcalloc((size_t)count, sizeof *p.tes);

    if (tls_context_from_config(conf, TLS_INTERNAL, &p.tls, &err) != 0 ||
        config_get_string(conf, CFG(TASKMANAGER_BIND_HOST), &bind_host, &err) != 0 ||
        config_get_string(conf, CFG(TASKMANAGER_RPC_PORT), &port, &err) != 0 ||
        config_get_string(conf, CFG(TASKMANAGER_HOST), &host, &err) != 0 ||
        rpc_service_options_from_config(conf, &ro, &err) != 0 ||
        task_executor_options_from_config(conf, &p.o, &err) != 0 ||
        ha_services_from_config(conf, &p.ha, &err) != 0)
        goto fail;
    ro.bind_host = bind_host;
    ro.port = port;
    ro.advertised_host = host;
    ro.tls = p.tls;
    if (rpc_service_new(&ro, &p.svc, &err) != 0 || rpc_service_start(p.svc, &err) != 0)
        goto fail;
    /* Before the TaskExecutor, so that the data port goes into its
     * registration. */
    if (count == 1 && tm_start_runtime(&p, conf, &err) != 0)
        goto fail;
    p.o.ha = p.ha;
    p.o.on_exit = tm_on_exit;
    p.o.arg = &p;
    rpc_service_run_sync(p.svc, NULL, tm_start_all, &p);
    if (p.start_error != 0) {
        err = p.err;
        goto fail;
    }
    if (p.net != NULL) {
        struct prometheus_reporter_options po = { .bind_host = bind_host };
        struct metric_registry *r = task_executor_metric_registry(p.tes[0]);

        if (prometheus_reporter_from_config(conf, &r, 1, &po, &p.prom, &err) != 0)
            goto fail_started;
    }
    SPATE_LOG_INFO(TM_LOG, "TaskManager started with %d TaskExecutor%s at %s", count,
                   count == 1 ? "" : "s", rpc_service_address(p.svc));

    for (;;) {
        struct pollfd fds[2] = { { .fd = sfd, .events = POLLIN },
                                 { .fd = p.exit_fd, .events = POLLIN } };

        if (poll(fds, 2, -1) < 0)
            continue;
        if (fds[0].revents & POLLIN) {
            struct signalfd_siginfo si;

            if (read(sfd, &si, sizeof si) != sizeof si)
                continue;
            if (si.ssi_signo == SIGHUP) {
                tls_reload_on_sighup();
                continue;
            }
            SPATE_LOG_INFO(TM_LOG, "received signal %u: shutting down", si.ssi_signo);
            status = 0;
            break;
        }
        if (fds[1].revents & POLLIN) {
            uint64_t v = 0;

            if (read(p.exit_fd, &v, sizeof v) != sizeof v)
                continue;
            status = v == 1 ? 0 : 1;
            break;
        }
    }
    prometheus_reporter_stop(p.prom);
    p.prom = NULL;
    ended = tm_end_tasks(&p);
    rpc_service_run_sync(p.svc, NULL, tm_stop_all, &p);
    if (ended)
        tm_free_runtime(&p);
    rpc_service_free(p.svc);
    ha_services_free(p.ha);
    tls_context_unref(p.tls);
    free(p.tes);
    close(sfd);
    close(p.exit_fd);
    SPATE_LOG_INFO(TM_LOG, "TaskManager stopped");
    return status;
fail_started:
    /* The TaskExecutor runs: stop it before what it uses goes. */
    rpc_service_run_sync(p.svc, NULL, tm_stop_all, &p);
fail:
    SPATE_LOG_ERROR(TM_LOG, "TaskManager failed: %s", err.message);
    fprintf(stderr, "spate taskmanager: %s\n", err.message);
    tm_free_runtime(&p);
    rpc_service_free(p.svc);
    ha_services_free(p.ha);
    tls_context_unref(p.tls);
    free(p.tes);
    if (sfd >= 0)
        close(sfd);
    if (p.exit_fd >= 0)
        close(p.exit_fd);
    return 1;
}
