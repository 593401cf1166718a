/* The TaskExecutor's slot table (Flink's TaskSlotTable): a fixed number of
 * slots (taskmanager.numberOfTaskSlots), each free, allocated to a job under
 * an allocation id, or active once its JobMaster accepted it. A slot that
 * stays allocated (never accepted, or inactive again) for
 * taskmanager.slot.timeout is reported to the owner to be freed (Flink's
 * SlotActions#timeoutSlot). Owned by its TaskExecutor endpoint. */
#ifndef SPATE_TASKMANAGER_TASK_SLOT_TABLE_H
#define SPATE_TASKMANAGER_TASK_SLOT_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#include <spate/error.h>

#include "core/id.h"
#include "rpc/endpoint.h"
#include "proto/cluster.pb-c.h"

enum task_slot_state {
    TASK_SLOT_FREE,
    TASK_SLOT_ALLOCATED, /* given to a job by the ResourceManager, not yet accepted */
    TASK_SLOT_ACTIVE,    /* accepted by the job's JobMaster */
};

struct task_slot_table;

struct task_slot {
    uint32_t index;
    enum task_slot_state state;
    spate_id allocation_id;
    spate_id job_id;
    struct rpc_timer *timeout; /* while allocated, once the table is started */
    struct task_slot_table *table;
};

struct task_slot_actions {
    /* The allocation's slot stayed allocated for taskmanager.slot.timeout:
     * the owner frees it (and tells the ResourceManager). */
    void (*timeout_slot)(void *arg, const spate_id *allocation);
};

struct task_slot_table {
    struct task_slot *slots;
    uint32_t count;
    struct rpc_endpoint *ep; /* NULL until started: no timeouts */
    int64_t timeout_ms;
    struct task_slot_actions actions;
    void *arg;
};

void task_slot_table_init(struct task_slot_table *t, uint32_t count);
/* Timeouts from now on, run as ep (Flink's TaskSlotTable#start). */
void task_slot_table_start(struct task_slot_table *t, struct rpc_endpoint *ep, int64_t timeout_ms,
                           const struct task_slot_actions *actions, void *arg);
/* Cancels the timeouts, as the endpoint (in its stop). */
void task_slot_table_stop(struct task_slot_table *t);
/* Frees the table (stopped before, if it was started). */
void task_slot_table_release(struct task_slot_table *t);
/* Allocates slot index to job under allocation, its timeout armed; asking
 * again for the same allocation is fine. SPATE_EBUSY when the slot holds
 * another allocation, SPATE_EINVAL for an index out of range. */
int task_slot_table_allocate(struct task_slot_table *t, uint32_t index, const spate_id *job,
                             const spate_id *allocation, spate_error *err);
struct task_slot *task_slot_table_find(struct task_slot_table *t, const spate_id *allocation);
/* The JobMaster accepted the allocation's slot: active, no timeout. False
 * when the allocation has no slot here. */
bool task_slot_table_mark_active(struct task_slot_table *t, const spate_id *allocation);
/* The slot is the job's but no JobMaster uses it (its leader changed):
 * allocated again, its timeout armed. False when unknown. */
bool task_slot_table_mark_inactive(struct task_slot_table *t, const spate_id *allocation);
/* Frees the allocation's slot; returns its index, or -1 when unknown. */
int task_slot_table_free(struct task_slot_table *t, const spate_id *allocation);
bool task_slot_table_has_slots_for(const struct task_slot_table *t, const spate_id *job);
uint32_t task_slot_table_free_count(const struct task_slot_table *t);
/* A slot report (Flink's SlotReport); its ids point into the table, so it
 * is sent before the table changes, then released. */
struct task_slot_report {
    Cluster__SlotReport msg;
    Cluster__SlotStatus *status;
    Cluster__SlotStatus **ptrs;
};

void task_slot_table_report(struct task_slot_table *t, struct task_slot_report *r);
void task_slot_report_release(struct task_slot_report *r);

#endif
