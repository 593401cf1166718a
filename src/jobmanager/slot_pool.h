/* The JobMaster's SlotPool (Flink's SlotPoolImpl): the job's pending slot
 * requests (each under a fresh allocation id, failed after
 * slot.request.timeout) and the slots TaskExecutors offered and it
 * accepted. Seed 004 §2.5: an offer fulfils the pending request of its
 * allocation id, else the oldest pending one. Owned by its JobMaster. */
#ifndef SPATE_JOBMANAGER_SLOT_POOL_H
#define SPATE_JOBMANAGER_SLOT_POOL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/id.h"
#include "core/list.h"
#include "rpc/endpoint.h"

struct pool_request {
    struct list_node node;
    spate_id allocation_id;
    uint32_t task; /* what it is for (the stand-in job's task index) */
    uint64_t requested_ms;
    struct rpc_timer *timeout;
    struct slot_pool *pool;
};

struct pool_slot {
    struct list_node node;
    spate_id allocation_id;
    spate_id resource_id; /* the TaskExecutor's */
    uint32_t index;
    uint32_t task;
};

struct slot_pool_listener {
    /* A request was made or must be made again: send it to the ResourceManager. */
    void (*send_request)(void *arg, const struct pool_request *r);
    /* A request fulfilled by a slot of another allocation: withdraw it. */
    void (*cancel_request)(void *arg, const spate_id *allocation);
    void (*fulfilled)(void *arg, const struct pool_slot *s);
    /* slot.request.timeout passed; the request is gone when this returns. */
    void (*timed_out)(void *arg, uint32_t task, uint64_t waited_ms);
};

struct slot_pool {
    struct rpc_endpoint *ep;
    int64_t request_timeout_ms;
    struct list_node pending;
    struct list_node allocated;
    struct slot_pool_listener l;
    void *arg;
};

void slot_pool_init(struct slot_pool *p, struct rpc_endpoint *ep, int64_t request_timeout_ms,
                    const struct slot_pool_listener *l, void *arg);
/* Cancels the timers and forgets everything (the caller frees slots first). */
void slot_pool_release(struct slot_pool *p);
void slot_pool_request_slot(struct slot_pool *p, uint32_t task);
/* Sends every pending request again (a new ResourceManager connection). */
void slot_pool_resend_pending(struct slot_pool *p);
/* An offered slot: true when accepted (it fulfilled a request). */
bool slot_pool_offer(struct slot_pool *p, const spate_id *resource_id, const spate_id *allocation,
                     uint32_t index);
/* Removes the slots of a TaskExecutor; returns how many, their tasks in
 * tasks[] (at most max). */
size_t slot_pool_release_task_manager(struct slot_pool *p, const spate_id *resource_id,
                                      uint32_t *tasks, size_t max);
size_t slot_pool_pending_count(const struct slot_pool *p);
size_t slot_pool_allocated_count(const struct slot_pool *p);

#endif
