/* The Dispatcher (Flink's), endpoint "dispatcher": runs a JobMaster per job,
 * keeps finished jobs' summaries, answers the overviews the REST API shows,
 * and shuts the cluster down (seed 000's StopCluster: the ResourceManager
 * tells every TaskManager to stop). Jobs are, for now, the test-only
 * stand-in of job_master.h. Loop thread. */
#ifndef SPATE_JOBMANAGER_DISPATCHER_H
#define SPATE_JOBMANAGER_DISPATCHER_H

#include "ha/ha_services.h"
#include "jobmanager/job_master.h"
#include "rpc/service.h"

struct dispatcher;

struct dispatcher_options {
    int64_t slot_request_timeout_ms;
    struct heartbeat_options heartbeat;
    struct registration_options registration;
    struct ha_services *ha;
    /* The cluster was told to stop; the process should end (as the endpoint). */
    void (*on_shutdown)(void *arg, const char *reason);
    void *arg;
};

int dispatcher_start(struct rpc_service *svc, const struct dispatcher_options *o,
                     struct dispatcher **out, spate_error *err);
/* Shuts the cluster down as shutdown_cluster does (SIGTERM uses this). */
void dispatcher_shutdown(struct dispatcher *d, const char *reason);
struct rpc_future *dispatcher_stop(struct dispatcher *d);

#endif
