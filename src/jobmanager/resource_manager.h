/* The ResourceManager (Flink's StandaloneResourceManager): registers
 * TaskExecutors and JobMasters, keeps the SlotManager, heartbeats both
 * (slot reports ride on the TaskExecutors' answers), and tells the
 * JobMasters when a TaskManager they used is lost. Endpoint
 * "resourcemanager", fenced with its ResourceManagerId. Loop thread. */
#ifndef SPATE_JOBMANAGER_RESOURCE_MANAGER_H
#define SPATE_JOBMANAGER_RESOURCE_MANAGER_H

#include "core/id.h"
#include "ha/leader_election.h"
#include "rpc/future.h"
#include "rpc/heartbeat.h"
#include "rpc/service.h"

struct resource_manager;

struct resource_manager_options {
    struct heartbeat_options heartbeat; /* interval and timeout */
};

int resource_manager_start(struct rpc_service *svc, const struct resource_manager_options *o,
                           struct resource_manager **out, spate_error *err);
struct rpc_future *resource_manager_stop(struct resource_manager *rm);

/* Leadership (ha/leader_election.h), from any thread; applied as the
 * endpoint. It starts as no leader: registrations fail, fenced calls are
 * rejected. A grant makes session the ResourceManagerId (the fencing token)
 * and publishes the address through le; a revoke drops every TaskExecutor
 * (told with the old id, so that they can tell it is stale) and JobMaster
 * and fences everything off with an id nobody knows. */
void resource_manager_grant_leadership(struct resource_manager *rm, const spate_id *session,
                                       struct leader_election *le);
void resource_manager_revoke_leadership(struct resource_manager *rm);

#endif
