/* The Dispatcher (Flink's), endpoint "dispatcher": runs a JobMaster per job,
 * keeps an archive of finished jobs (status, plan, exceptions, accumulators;
 * jobstore.max-capacity entries, the oldest go first), answers the overviews the REST API shows,
 * and shuts the cluster down (seed 000's StopCluster: the ResourceManager
 * tells every TaskManager to stop). Jobs are JobGraphs submitted by clients
 * (submit_job). Loop thread. */
#ifndef SPATE_JOBMANAGER_DISPATCHER_H
#define SPATE_JOBMANAGER_DISPATCHER_H

#include "blob/blob_server.h"
#include "ha/ha_services.h"
#include "jobmanager/job_master.h"
#include "rpc/service.h"

struct dispatcher;

struct dispatcher_options {
    int64_t slot_request_timeout_ms;
    struct heartbeat_options heartbeat;
    struct registration_options registration;
    struct ha_services *ha;
    struct blob_server *blobs; /* job libraries; submitted jobs hold references */
    size_t archive_capacity;   /* jobstore.max-capacity */
    /* The JobManager's configuration, for the jobs' settings they do not
     * set themselves (outlives the Dispatcher; may be NULL). */
    const struct config *conf;
    /* The JobManager's metric registry, where JobMasters register their
     * jobs' metrics (NULL: none), and the host variable of their groups. */
    struct metric_registry *metrics;
    const char *host;
    /* The cluster was told to stop; the process should end (as the endpoint). */
    void (*on_shutdown)(void *arg, const char *reason);
    void *arg;
};

/* The options a Dispatcher reads from the configuration (all but ha, blobs
 * and the callback): heartbeats, registration and slot request timeouts,
 * the archive's capacity. */
int dispatcher_options_from_config(const struct config *conf, struct dispatcher_options *o,
                                   spate_error *err);
int dispatcher_start(struct rpc_service *svc, const struct dispatcher_options *o,
                     struct dispatcher **out, spate_error *err);
struct rpc_future *dispatcher_stop(struct dispatcher *d);

/* Leadership (ha/leader_election.h), from any thread; applied as the
 * endpoint. Until granted, the Dispatcher refuses submissions and queries
 * ("not the leader"). A grant publishes its address through le and recovers
 * every job of the job graph store that has no result in the job result
 * store (the seeds' RecoverAllJobs → RecoverJob → RecoverSubmittedJob);
 * submissions that arrive meanwhile wait until the store has been read;
 * a revoke suspends the running jobs (their JobMasters stop, their entries
 * stay in the store for the next leader). */
void dispatcher_grant_leadership(struct dispatcher *d, const spate_id *session,
                                 struct leader_election *le);
void dispatcher_revoke_leadership(struct dispatcher *d);

#endif
