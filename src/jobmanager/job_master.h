/* The JobMaster (Flink's): one per job, endpoint "jobmaster_<jobid>", fenced
 * with its JobMasterId; registers at the ResourceManager, gets slots through
 * its SlotPool, heartbeats its TaskExecutors, runs the job's JobGraph.
 * Loop thread. */
#ifndef SPATE_JOBMANAGER_JOB_MASTER_H
#define SPATE_JOBMANAGER_JOB_MASTER_H

#include <stdint.h>

#include "core/id.h"
#include "core/job_status.h"
#include "ha/ha_services.h"
#include "metrics/metrics.h"
#include "proto/checkpoint_stats.pb-c.h"
#include "proto/cluster.pb-c.h"
#include "rpc/future.h"
#include "rpc/heartbeat.h"
#include "rpc/registration.h"
#include "rpc/service.h"

struct config;

struct job_master;
struct execution_graph;

struct job_master_options {
    spate_id job_id;
    /* The JobMasterId (fencing token): the leader session id, as Flink's;
     * zero: a random one. */
    spate_id job_master_id;
    const char *name;
    /* The job's encoded JobGraph (required), the BlobServer ("host:port")
     * that holds its library and the library's key, which must be the one
     * the graph was built from (NULL: not checked). */
    const uint8_t *graph;
    size_t graph_len;
    const char *blob_server;
    const uint8_t *library_key; /* SHA256_BYTES */
    /* The library's file on this host (NULL: none), loaded when the job
     * has sources of its own (their split enumerators run here). */
    const char *library_path;
    int64_t slot_request_timeout_ms;
    struct heartbeat_options heartbeat;
    struct registration_options registration;
    struct ha_services *ha;
    /* The leadership the JobMaster runs under (job_master_id is its
     * session; NULL without high availability): confirmed before the job's
     * checkpoints are deleted at its end. */
    struct leader_election *leader_election;
    /* The JobManager's configuration (may be NULL): the checkpointing and
     * restart settings the job does not set (job_settings_complete). */
    const struct config *cluster_conf;
    /* Where the job's metrics go (Flink's JobManagerJobMetricGroup: uptime,
     * numRestarts, checkpoint counts, ...; NULL: nowhere) and the host
     * variable of their group. */
    struct metric_registry *metrics;
    const char *host;
    /* The job reached a terminal state (called as the JobMaster). */
    void (*on_terminal)(void *arg, struct job_master *jm);
    void *arg;
};

/* Errors: no JobGraph, one that does not decode or was built from another
 * library, a file source path that cannot be read. */
int job_master_start(struct rpc_service *svc, const struct job_master_options *o,
                     struct job_master **out, spate_error *err);
/* Cancels the job (slots are freed); terminal callback follows. */
void job_master_cancel(struct job_master *jm, const char *why);
/* Stops the endpoint; the JobMaster is freed with its last reference. */
struct rpc_future *job_master_stop(struct job_master *jm);
/* Fills info (strings point into jm: valid until it changes). */
void job_master_info(struct job_master *jm, Cluster__JobInfo *info);
/* Everything REST shows of the job (vertices, plan, exceptions, status
 * times) as a packed Cluster__JobDetails (malloc'd). */
int job_master_details_pack(struct job_master *jm, uint8_t **out, size_t *len);
enum job_status job_master_status(const struct job_master *jm);
/* The job's ExecutionGraph; valid while the JobMaster runs, on its loop. */
const struct execution_graph *job_master_execution_graph(const struct job_master *jm);
/* Checkpoints (GET/POST /jobs/:jobid/checkpoints...): the statistics and
 * settings (checkpoint_id > 0: that checkpoint only), for
 * ckstats__checkpointing_stats__free_unpacked(s, NULL); a manual
 * checkpoint under trigger_id and its status. Errors: a job not yet or no
 * longer running, one without a checkpoint folder, an unknown trigger id
 * (SPATE_ENOENT). */
Ckstats__CheckpointingStats *job_master_checkpoint_stats(struct job_master *jm,
                                                         int64_t checkpoint_id);
int job_master_trigger_checkpoint(struct job_master *jm, const spate_id *trigger_id,
                                  spate_error *err);
int job_master_checkpoint_status(struct job_master *jm, const spate_id *trigger_id,
                                 Ckstats__TriggerStatus *out, spate_error *err);
/* Savepoints (POST /jobs/:jobid/savepoints, /stop), under trigger_id;
 * their status as a checkpoint's. target_dir "" or NULL: the job's
 * state.savepoints.dir. A stop (SAVEPOINT_STOP; drain: event time ends
 * first) finishes the job once its savepoint completed; a cancel with a
 * savepoint stops the same way, the job then CANCELED. A failed savepoint
 * leaves the job running. Errors: no folder, a relative one, a job that is
 * not yet running, a trigger id used before. */
enum job_savepoint_mode { JOB_SAVEPOINT_ONLY, JOB_SAVEPOINT_CANCEL, JOB_SAVEPOINT_STOP };
int job_master_trigger_savepoint(struct job_master *jm, const spate_id *trigger_id,
                                 const char *target_dir, enum job_savepoint_mode mode, bool drain,
                                 spate_error *err);
/* Every trigger's status (the Dispatcher archives them when the job ends),
 * for ckstats__trigger_statuses__free_unpacked(s, NULL). */
Ckstats__TriggerStatuses *job_master_trigger_statuses(struct job_master *jm);
spate_id job_master_job_id(const struct job_master *jm);
const char *job_master_name(const struct job_master *jm);

#endif
