/* The ResourceManager's SlotManager (Flink's SlotManagerImpl): the slots of
 * the registered TaskManagers (free, pending an allocation, allocated to a
 * job) and the slot requests of JobMasters, matched first come first
 * served; a request no free slot can meet waits for one. Owned by the
 * ResourceManager endpoint. */
#ifndef SPATE_JOBMANAGER_SLOT_MANAGER_H
#define SPATE_JOBMANAGER_SLOT_MANAGER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/hmap.h"
#include "core/id.h"
#include "core/list.h"
#include "proto/cluster.pb-c.h"

enum sm_slot_state { SM_SLOT_FREE, SM_SLOT_PENDING, SM_SLOT_ALLOCATED };

struct sm_request;

struct sm_slot {
    uint32_t index;
    enum sm_slot_state state;
    spate_id allocation_id;
    spate_id job_id;
    struct sm_request *request; /* while PENDING */
};

struct sm_task_manager {
    struct hmap_node node;
    spate_id resource_id;
    void *owner; /* the ResourceManager's registration */
    uint32_t slot_count;
    struct sm_slot *slots;
};

struct sm_request {
    struct list_node node; /* the queue (unassigned) or nothing */
    struct hmap_node by_allocation;
    spate_id allocation_id;
    spate_id job_id;
    char *target_address;       /* the JobMaster's */
    struct sm_task_manager *tm; /* assigned: the slot asked for */
    uint32_t index;
};

struct slot_manager_actions {
    /* Asks tm's TaskExecutor for slot index for req; the answer comes back
     * through slot_manager_allocation_result. */
    void (*allocate)(void *arg, struct sm_task_manager *tm, uint32_t index,
                     const struct sm_request *req);
};

struct slot_manager {
    struct hmap task_managers;
    struct hmap requests;   /* by allocation id */
    struct list_node queue; /* unassigned requests, oldest first */
    struct slot_manager_actions actions;
    void *arg;
};

void slot_manager_init(struct slot_manager *sm, const struct slot_manager_actions *a, void *arg);
void slot_manager_release(struct slot_manager *sm);

/* Seed 004 §2.3: registers a TaskManager's slots from its first report.
 * False when it is registered already (the report then only reconciles). */
bool slot_manager_register_task_manager(struct slot_manager *sm, const spate_id *resource_id,
                                        void *owner, uint32_t slots,
                                        const Cluster__SlotReport *report);
/* Removes a TaskManager and its slots; requests it was serving wait again.
 * jobs (may be NULL) receives the ids of the jobs that had slots there, at
 * most max of them; returns how many. */
size_t slot_manager_unregister_task_manager(struct slot_manager *sm, const spate_id *resource_id,
                                            spate_id *jobs, size_t max);
struct sm_task_manager *slot_manager_find_task_manager(struct slot_manager *sm,
                                                       const spate_id *resource_id);
/* Heals the view from a slot report (heartbeat payload). */
void slot_manager_report(struct slot_manager *sm, const spate_id *resource_id,
                         const Cluster__SlotReport *report);

/* A JobMaster's request; SPATE_EEXIST for an allocation id already asked for. */
int slot_manager_request_slot(struct slot_manager *sm, const spate_id *job,
                              const spate_id *allocation, const char *target_address);
void slot_manager_cancel_request(struct slot_manager *sm, const spate_id *allocation);
/* Cancels every request of job. */
void slot_manager_cancel_job(struct slot_manager *sm, const spate_id *job);
/* The TaskExecutor's answer to an allocate action. A refused slot is left
 * out until the TaskExecutor's next slot report; its request asks again
 * for any other slot. */
void slot_manager_allocation_result(struct slot_manager *sm, const spate_id *resource_id,
                                    uint32_t index, const spate_id *allocation, bool ok);
/* A TaskExecutor freed a slot. */
void slot_manager_free_slot(struct slot_manager *sm, const spate_id *resource_id, uint32_t index,
                            const spate_id *allocation);

uint32_t slot_manager_slots_total(const struct slot_manager *sm);
uint32_t slot_manager_slots_free(const struct slot_manager *sm);
uint32_t slot_manager_tm_free(const struct sm_task_manager *tm);
size_t slot_manager_pending_requests(const struct slot_manager *sm);

#endif
