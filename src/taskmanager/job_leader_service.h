/* The JobLeaderService (Flink's): for each job the TaskExecutor holds slots
 * for, find the job's JobMaster (leader retrieval through the HA services)
 * and register there with the retrying registration; report the connection to
 * the TaskExecutor, which then offers the job's slots; after a failover,
 * follow the job to its new JobMaster (a new address or JobMasterId, the
 * leader session). Runs on the TaskExecutor's endpoint. */
#ifndef SPATE_TASKMANAGER_JOB_LEADER_SERVICE_H
#define SPATE_TASKMANAGER_JOB_LEADER_SERVICE_H

#include "ha/ha_services.h"
#include "rpc/endpoint.h"
#include "rpc/registration.h"
#include "taskmanager/job_table.h"

struct job_leader_listener {
    /* e->jm and e->jm_resource_id are set, e->connected is true. */
    void (*connected)(void *arg, struct job_entry *e);
    /* The JobMaster e is connected with is no longer the job's leader
     * (Flink's jobManagerLostLeadership); called while e->connected and
     * e->jm_resource_id still name it, before the JobLeaderService drops
     * the connection and registers at the new leader. */
    void (*lost_leadership)(void *arg, struct job_entry *e);
};

struct job_leader_service {
    struct rpc_endpoint *ep;
    struct ha_services *ha;
    struct job_table *jobs;
    struct registration_options reg;
    const char *own_address; /* the TaskExecutor's */
    spate_id own_id;
    int data_port;
    struct job_leader_listener listener;
    void *arg;
};

/* Starts finding and registering at e's JobMaster (if not already). */
void job_leader_service_add_job(struct job_leader_service *s, struct job_entry *e);
/* A slot request named e's JobMaster (jm_id, address): when that is another
 * than the one e registers or is connected with (a new leader), the
 * JobLeaderService drops that and registers at the new one. */
void job_leader_service_update(struct job_leader_service *s, struct job_entry *e,
                               const spate_id *jm_id, const char *address);
/* Stops that and forgets the connection (the entry stays). */
void job_leader_service_disconnect(struct job_leader_service *s, struct job_entry *e);

#endif
