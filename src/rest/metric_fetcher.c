/* The metric fetcher (metric_fetcher.h). */
#include <pthread.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/log.h"
#include "rest/metric_fetcher.h"
#include "rpc/gateways.h"

#define FETCH_LOG "rest"

struct metric_fetcher {
    pthread_mutex_t lock; /* guards all below, from acquire to release */
    struct rpc_service *svc;
    const struct rpc_gateway *rm;
    int64_t interval_ms, timeout_ms;
    struct metric_store *store;
    uint64_t fetched_mono_ms; /* 0: never */
    int64_t fetched_wall_ms;
};

struct metric_fetcher *
metric_fetcher_new(struct rpc_service *svc, const struct rpc_gateway *rm,
                   int64_t update_interval_ms, int64_t fetch_timeout_ms)
{
    struct metric_fetcher *f = xcalloc(1, sizeof *f);

    f->svc = svc;
    f->rm = rm;
    f->interval_ms = update_interval_ms;
    f->timeout_ms = fetch_timeout_ms;
    f->store = metric_store_new();
    pthread_mutex_init(&f->lock, NULL);
    return f;
}

void
metric_fetcher_free(struct metric_fetcher *f)
{
    if (f == NULL)
        return;
    metric_store_free(f->store);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

/* One TaskManager's ask. */
struct fetch {
    struct rpc_gateway *gw;
    struct rpc_future *f;
};

/* Asks every TaskManager at once, then waits for the answers: a store of
 * what arrived within the timeout. */
static struct metric_store *
fetch_all(struct metric_fetcher *mf)
{
    Cluster__TaskManagerQuery q = CLUSTER__TASK_MANAGER_QUERY__INIT;
    Cluster__Ack ack = CLUSTER__ACK__INIT;
    struct metric_store *store = metric_store_new();
    struct rpc_future *tmf = rm_request_task_managers(mf->rm, &q, mf->timeout_ms);
    const Cluster__TaskManagerInfos *infos;
    struct fetch *fs = NULL;
    spate_error err = { 0 };
    uint64_t deadline;
    size_t n = 0;

    if (rpc_future_wait(tmf, mf->timeout_ms + 1000, &err) != 0) {
        SPATE_LOG_WARN(FETCH_LOG, "metrics: cannot list the TaskManagers: %s", err.message);
        rpc_future_unref(tmf);
        return store;
    }
    infos = rpc_future_value(tmf);
    fs = xcalloc(infos->n_taskmanagers + 1, sizeof *fs);
    for (size_t i = 0; i < infos->n_taskmanagers; i++) {
        const char *address = infos->taskmanagers[i]->address;

        if (address == NULL || rpc_gateway_new(mf->svc, address, NULL, &fs[n].gw, &err) != 0) {
            SPATE_LOG_WARN(FETCH_LOG, "metrics: bad TaskManager address '%s': %s",
                           address ? address : "", err.message);
            continue;
        }
        fs[n].f = te_request_metric_dump(fs[n].gw, &ack, mf->timeout_ms);
        n++;
    }
    rpc_future_unref(tmf);
    deadline = clock_mono_ms() + (uint64_t)mf->timeout_ms;
    for (size_t i = 0; i < n; i++) {
        uint64_t now = clock_mono_ms();
        int64_t left = now < deadline ? (int64_t)(deadline - now) : 0;
        size_t skipped;

        if (rpc_future_wait(fs[i].f, left, &err) != 0) {
            SPATE_LOG_WARN(FETCH_LOG, "metrics: TaskManager %s sent no metrics: %s",
                           fs[i].gw->address, err.message);
        } else if ((skipped = metric_store_add(store, rpc_future_value(fs[i].f))) > 0) {
            SPATE_LOG_WARN(FETCH_LOG, "metrics: %zu malformed entries in the dump of %s", skipped,
                           fs[i].gw->address);
        }
        rpc_future_unref(fs[i].f);
        rpc_gateway_free(fs[i].gw);
    }
    free(fs);
    return store;
}

const struct metric_store *
metric_fetcher_acquire(struct metric_fetcher *f, int64_t *fetched_ms)
{
    uint64_t now;

    pthread_mutex_lock(&f->lock);
    now = clock_mono_ms();
    if (f->fetched_mono_ms == 0 || now - f->fetched_mono_ms >= (uint64_t)f->interval_ms) {
        metric_store_free(f->store);
        f->store = fetch_all(f);
        f->fetched_mono_ms = clock_mono_ms();
        f->fetched_wall_ms = clock_wall_ms();
    }
    if (fetched_ms != NULL)
        *fetched_ms = f->fetched_wall_ms;
    return f->store;
}

void
metric_fetcher_release(struct metric_fetcher *f)
{
    pthread_mutex_unlock(&f->lock);
}
