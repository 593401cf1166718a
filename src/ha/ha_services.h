/* High-availability services: where a component finds the
 * leaders it talks to, the JobManager process's one leader election, and
 * the stores a new leader recovers jobs from. Three implementations, chosen
 * by high-availability.type: none (standalone.c), embedded (embedded.c) and
 * zookeeper (zookeeper.c over the plugin of coord.h). */
#ifndef SPATE_HA_HA_SERVICES_H
#define SPATE_HA_HA_SERVICES_H

/* Threads: services are made and freed by one thread; their methods may be
 * called from any thread. Retrievers and the election call their listeners
 * on any thread (ZooKeeper's: the HA thread), which hand the news to their
 * endpoint with rpc_endpoint_run_async and never block. Store calls block
 * (ZooKeeper and file I/O): run them with rpc_endpoint_run_blocking. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/id.h"
#include "ha/leader_election.h"
#include "ha/stores.h"
#include "rpc/leader.h"

/* Component names: the leader-information node of each
 * (<root>/<cluster-id>/leader/<component>/connection_info), as Flink's. A
 * job's JobMaster uses the job id's hex form. */
#define HA_COMPONENT_RESOURCE_MANAGER "resource_manager"
#define HA_COMPONENT_DISPATCHER       "dispatcher"
#define HA_COMPONENT_REST_SERVER      "rest_server"

struct ha_services;

struct ha_services_ops {
    /* New retrievers, owned by the caller (leader_retrieval_free). */
    struct leader_retrieval *(*resource_manager_retriever)(struct ha_services *ha);
    struct leader_retrieval *(*dispatcher_retriever)(struct ha_services *ha);
    /* A job's JobMaster; standalone answers default_address, as Flink does. */
    struct leader_retrieval *(*job_master_retriever)(struct ha_services *ha, const spate_id *job,
                                                     const char *default_address);
    /* The REST endpoint's URL ("http://host:port"), for clients. */
    struct leader_retrieval *(*rest_retriever)(struct ha_services *ha);
    /* The process's one leader election (borrowed; lives as long as ha). */
    struct leader_election *(*election)(struct ha_services *ha);
    /* New stores, owned by the caller (their free). */
    int (*job_graph_store)(struct ha_services *ha, struct job_graph_store **out, spate_error *err);
    int (*job_result_store)(struct ha_services *ha, struct job_result_store **out,
                            spate_error *err);
    int (*checkpoint_store)(struct ha_services *ha, const spate_id *job, uint32_t max_retained,
                            struct completed_checkpoint_store **out, spate_error *err);
    int (*checkpoint_id_counter)(struct ha_services *ha, const spate_id *job,
                                 struct checkpoint_id_counter **out, spate_error *err);
    /* The HA blob store's folder (Flink's createBlobStore): the
     * BlobServer keeps each job's library there so that the next leader
     * serves it. *out malloc'd, or NULL when the services keep nothing
     * beyond the process (none, embedded). */
    int (*blob_store_dir)(struct ha_services *ha, char **out, spate_error *err);
    /* What a benchmark or log wants to know: the negotiated ZooKeeper
     * session timeout (0 when there is none). */
    int64_t (*session_timeout_ms)(struct ha_services *ha);
    void (*free)(struct ha_services *ha);
};

struct ha_services {
    const struct ha_services_ops *ops;
};

/* From high-availability.type. jobmanager_rpc is this process's own RPC
 * address "host:port" when it is a JobManager (standalone leaders are its
 * own endpoints), NULL elsewhere (standalone: jobmanager.rpc.address/port).
 * For zookeeper: loads the plugin and connects, retrying an unreachable
 * quorum as the retry options say; failing that, a clear error. */
int ha_services_new(const struct config *conf, const char *jobmanager_rpc, struct ha_services **out,
                    spate_error *err);
/* ha_services_new(conf, NULL, ...). */
int ha_services_from_config(const struct config *conf, struct ha_services **out, spate_error *err);
void ha_services_free(struct ha_services *ha);

/* Standalone: the JobManager's RPC address "host:port" (its endpoints'
 * addresses are built from it); rest_url may be NULL. */
struct ha_services *ha_standalone_new(const char *jobmanager_rpc, const char *rest_url);
/* A retriever that reports address (session id zero) once started. */
struct leader_retrieval *ha_standalone_retrieval_new(const char *address);

/* Embedded (the mini cluster): every leader in this process; the election
 * grants at once, retrievers report what the leaders confirm. */
struct ha_services *ha_embedded_new(void);

/* ZooKeeper (zookeeper.c). */
int ha_zookeeper_new(const struct config *conf, struct ha_services **out, spate_error *err);

/* The leader information of a component as bytes for its node (ha.proto's
 * LeaderInfo) and back; parsing checks everything (external input). */
uint8_t *ha_leader_info_encode(const spate_id *session, const char *address, size_t *len);
int ha_leader_info_decode(const uint8_t *data, size_t len, spate_id *session, char *address,
                          size_t address_size, spate_error *err);

#endif
