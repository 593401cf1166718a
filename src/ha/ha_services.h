/* High-availability services: where a component finds the leaders it talks
 * to (DESIGN.md §8). Standalone now (high-availability.type none: fixed
 * addresses from the configuration, session ids zero); ZooKeeper fills the
 * same interface later. Made and used on one thread; retrievers report to
 * their listeners as leader.h says. */
#ifndef SPATE_HA_HA_SERVICES_H
#define SPATE_HA_HA_SERVICES_H

#include "core/config.h"
#include "core/id.h"
#include "rpc/leader.h"

struct ha_services;

struct ha_services_ops {
    /* New retrievers, owned by the caller (leader_retrieval_free). */
    struct leader_retrieval *(*resource_manager_retriever)(struct ha_services *ha);
    struct leader_retrieval *(*dispatcher_retriever)(struct ha_services *ha);
    /* A job's JobMaster; standalone answers default_address, as Flink does. */
    struct leader_retrieval *(*job_master_retriever)(struct ha_services *ha, const spate_id *job,
                                                     const char *default_address);
    void (*free)(struct ha_services *ha);
};

struct ha_services {
    const struct ha_services_ops *ops;
};

/* From high-availability.type; "none" is standalone. */
int ha_services_from_config(const struct config *conf, struct ha_services **out, spate_error *err);
void ha_services_free(struct ha_services *ha);

/* Standalone: the JobManager's RPC address "host:port" (its endpoints'
 * addresses are built from it). */
struct ha_services *ha_standalone_new(const char *jobmanager_rpc);
/* A retriever that reports address (session id zero) once started. */
struct leader_retrieval *ha_standalone_retrieval_new(const char *address);

#endif
