/* The JobManager process's leadership: the one contender of its leader
 * election (ha/leader_election.h), which hands each grant and revoke to the
 * ResourceManager and the Dispatcher and publishes the REST endpoint's URL,
 * so that every component leads from this process or none does. */
#ifndef SPATE_JOBMANAGER_JM_LEADERSHIP_H
#define SPATE_JOBMANAGER_JM_LEADERSHIP_H

#include "ha/leader_election.h"
#include "jobmanager/dispatcher.h"
#include "jobmanager/resource_manager.h"

struct jm_leadership;

/* Any thread but the RPC loop's. rm, d and le must outlive the
 * leadership; rest_url ("http://host:port") is copied. */
int jm_leadership_start(struct leader_election *le, struct resource_manager *rm,
                        struct dispatcher *d, const char *rest_url, struct jm_leadership **out,
                        spate_error *err);
/* Stops contending (leadership goes to a standby); call before stopping
 * the endpoints. NULL is fine. */
void jm_leadership_stop(struct jm_leadership *l);

#endif
