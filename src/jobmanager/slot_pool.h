/* The JobMaster's SlotPool (Flink's SlotPoolImpl): the job's pending slot
 * requests (each under a fresh allocation id, failed after
 * slot.request.timeout), the slots TaskExecutors offered that serve a
 * request, and the available ones that serve none yet. Seed 004 §2.5: an
 * offer fulfils the pending request of its allocation id, else the oldest
 * pending one, else it is kept as available (accepted in any case); a new
 * request takes an available slot before asking the ResourceManager; a slot
 * available for slot.idle.timeout goes back to its TaskExecutor (freeSlot).
 * Owned by its JobMaster. */
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
    uint32_t task; /* what it is for (the JobMaster's shared slot index) */
    uint64_t requested_ms;
    bool sent; /* given to send_request (else an available slot serves it) */
    struct rpc_timer *timeout;
    struct slot_pool *pool;
};

struct pool_slot {
    struct list_node node;
    spate_id allocation_id;
    spate_id resource_id; /* the TaskExecutor's */
    uint32_t index;
    uint32_t task;    /* while allocated */
    uint64_t idle_ms; /* while available: since when */
};

struct slot_pool_listener {
    /* A request was made or must be made again: send it to the ResourceManager. */
    void (*send_request)(void *arg, const struct pool_request *r);
    /* A request fulfilled by a slot of another allocation: withdraw it. */
    void (*cancel_request)(void *arg, const spate_id *allocation);
    void (*fulfilled)(void *arg, const struct pool_slot *s);
    /* slot.request.timeout passed; the request is gone when this returns. */
    void (*timed_out)(void *arg, uint32_t task, uint64_t waited_ms);
    /* An available slot idled for slot.idle.timeout: give it back to its
     * TaskExecutor (freeSlot). The slot is gone when this returns. */
    void (*free_slot)(void *arg, const struct pool_slot *s, const char *cause);
};

struct slot_pool {
    struct rpc_endpoint *ep;
    int64_t request_timeout_ms;
    int64_t idle_timeout_ms;
    struct list_node pending;
    struct list_node allocated;
    struct list_node available; /* oldest first */
    struct rpc_timer *idle_check;
    struct rpc_timer *match_soon; /* available slots meet new requests */
    struct slot_pool_listener l;
    void *arg;
};

void slot_pool_init(struct slot_pool *p, struct rpc_endpoint *ep, int64_t request_timeout_ms,
                    int64_t idle_timeout_ms, const struct slot_pool_listener *l, void *arg);
/* Cancels the timers and forgets everything (the caller frees slots first). */
void slot_pool_release(struct slot_pool *p);
/* A request for task: met later (never inside this call) by an available
 * slot, else sent to the ResourceManager now. */
void slot_pool_request_slot(struct slot_pool *p, uint32_t task);
/* Sends every pending request again (a new ResourceManager connection). */
void slot_pool_resend_pending(struct slot_pool *p);
/* An offered slot, accepted (true) unless this pool holds it for another
 * TaskExecutor: it fulfils a request or becomes available. */
bool slot_pool_offer(struct slot_pool *p, const spate_id *resource_id, const spate_id *allocation,
                     uint32_t index);
/* Removes the slots of a TaskExecutor, allocated and available; returns how
 * many allocated ones, their tasks in tasks[] (at most max). */
size_t slot_pool_release_task_manager(struct slot_pool *p, const spate_id *resource_id,
                                      uint32_t *tasks, size_t max);
size_t slot_pool_pending_count(const struct slot_pool *p);
size_t slot_pool_allocated_count(const struct slot_pool *p);
size_t slot_pool_available_count(const struct slot_pool *p);

#endif
