/* The SlotPool (slot_pool.h). */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/util.h"
#include "jobmanager/slot_pool.h"

void
slot_pool_init(struct slot_pool *p, struct rpc_endpoint *ep, int64_t request_timeout_ms,
               int64_t idle_timeout_ms, const struct slot_pool_listener *l, void *arg)
{
    p->ep = ep;
    p->request_timeout_ms = request_timeout_ms;
    p->idle_timeout_ms = idle_timeout_ms;
    list_init(&p->pending);
    list_init(&p->allocated);
    list_init(&p->available);
    p->idle_check = NULL;
    p->match_soon = NULL;
    p->l = *l;
    p->arg = arg;
}

static void
pool_request_free(struct pool_request *r)
{
    list_remove(&r->node);
    rpc_timer_cancel(r->timeout);
    free(r);
}

void
slot_pool_release(struct slot_pool *p)
{
    struct list_node *n;

    rpc_timer_cancel(p->idle_check);
    p->idle_check = NULL;
    rpc_timer_cancel(p->match_soon);
    p->match_soon = NULL;
    while ((n = list_pop_front(&p->pending)) != NULL)
        pool_request_free(container_of(n, struct pool_request, node));
    while ((n = list_pop_front(&p->allocated)) != NULL)
        free(container_of(n, struct pool_slot, node));
    while ((n = list_pop_front(&p->available)) != NULL)
        free(container_of(n, struct pool_slot, node));
}

static void
pool_on_timeout(void *arg)
{
    struct pool_request *r = arg;
    struct slot_pool *p = r->pool;
    uint32_t task = r->task;
    uint64_t waited = clock_mono_ms() - r->requested_ms;

    r->timeout = NULL;
    pool_request_free(r);
    p->l.timed_out(p->arg, task, waited);
}

static void
pool_send(struct slot_pool *p, struct pool_request *r)
{
    r->sent = true;
    p->l.send_request(p->arg, r);
}

/* s (out of any list) serves r: allocated, r gone, the JobMaster told. */
static void
pool_fulfil(struct slot_pool *p, struct pool_request *r, struct pool_slot *s)
{
    s->task = r->task;
    list_push_back(&p->allocated, &s->node);
    if (r->sent && !id_equal(&r->allocation_id, &s->allocation_id))
        p->l.cancel_request(p->arg, &r->allocation_id);
    pool_request_free(r);
    p->l.fulfilled(p->arg, s);
}

/* ---- idle slots ---------------------------------------------------------------------- */

static void pool_check_idle(void *arg);

static void
pool_arm_idle_check(struct slot_pool *p)
{
    struct pool_slot *oldest;
    uint64_t now = clock_mono_ms(), due;

    if (p->idle_check != NULL || list_empty(&p->available))
        return;
    oldest = container_of(p->available.next, struct pool_slot, node);
    due = oldest->idle_ms + (uint64_t)p->idle_timeout_ms;
    p->idle_check = rpc_endpoint_schedule(p->ep, due > now ? due - now : 0, pool_check_idle, p);
}

/* Flink's checkIdleSlot: available slots idle for slot.idle.timeout go back
 * to their TaskExecutors. */
static void
pool_check_idle(void *arg)
{
    struct slot_pool *p = arg;
    uint64_t now = clock_mono_ms();

    p->idle_check = NULL;
    while (!list_empty(&p->available)) {
        struct pool_slot *s = container_of(p->available.next, struct pool_slot, node);

        if (s->idle_ms + (uint64_t)p->idle_timeout_ms > now)
            break;
        list_remove(&s->node);
        SPATE_LOG_INFO("jobmaster",
                       "slot %u (allocation %s) of TaskManager %s idle for %lld ms: freeing it",
                       s->index, id_str(&s->allocation_id).s, id_str(&s->resource_id).s,
                       (long long)(now - s->idle_ms));
        p->l.free_slot(p->arg, s, "idle for slot.idle.timeout");
        free(s);
    }
    pool_arm_idle_check(p);
}

static void
pool_make_available(struct slot_pool *p, struct pool_slot *s)
{
    s->idle_ms = clock_mono_ms();
    list_push_back(&p->available, &s->node);
    pool_arm_idle_check(p);
}

/* ---- requests ------------------------------------------------------------------------ */

/* Available slots meet the oldest pending requests; what is left of those
 * is sent to the ResourceManager. */
static void
pool_match_available(void *arg)
{
    struct slot_pool *p = arg;
    struct list_node *n;

    p->match_soon = NULL;
    while (!list_empty(&p->available) && !list_empty(&p->pending)) {
        struct pool_request *r = container_of(p->pending.next, struct pool_request, node);

        n = list_pop_front(&p->available);
        pool_fulfil(p, r, container_of(n, struct pool_slot, node));
    }
    list_for_each(n, &p->pending)
    {
        struct pool_request *r = container_of(n, struct pool_request, node);

        if (!r->sent)
            pool_send(p, r);
    }
    rpc_timer_cancel(p->idle_check);
    p->idle_check = NULL;
    pool_arm_idle_check(p);
}

void
slot_pool_request_slot(struct slot_pool *p, uint32_t task)
{
    struct pool_request *r = xcalloc(1, sizeof *r);

    id_random(&r->allocation_id);
    r->task = task;
    r->pool = p;
    r->requested_ms = clock_mono_ms();
    r->timeout = rpc_endpoint_schedule(p->ep, (uint64_t)p->request_timeout_ms, pool_on_timeout, r);
    list_push_back(&p->pending, &r->node);
    if (list_empty(&p->available))
        pool_send(p, r);
    else if (p->match_soon == NULL) /* not inside the caller's loop */
        p->match_soon = rpc_endpoint_schedule(p->ep, 0, pool_match_available, p);
}

void
slot_pool_resend_pending(struct slot_pool *p)
{
    struct list_node *n;

    list_for_each(n, &p->pending) pool_send(p, container_of(n, struct pool_request, node));
}

static struct pool_slot *
pool_find_slot(struct list_node *list, const spate_id *allocation)
{
    struct list_node *n;

    list_for_each(n, list)
    {
        struct pool_slot *s = container_of(n, struct pool_slot, node);

        if (id_equal(&s->allocation_id, allocation))
            return s;
    }
    return NULL;
}

bool
slot_pool_offer(struct slot_pool *p, const spate_id *resource_id, const spate_id *allocation,
                uint32_t index)
{
    struct pool_request *match = NULL;
    struct pool_slot *s;
    struct list_node *n;

    if ((s = pool_find_slot(&p->allocated, allocation)) != NULL ||
        (s = pool_find_slot(&p->available, allocation)) != NULL)
        /* Offered again after a reconnection; another TaskExecutor's
         * offer of an allocation held here is a mistake. */
        return id_equal(&s->resource_id, resource_id);
    list_for_each(n, &p->pending)
    {
        struct pool_request *r = container_of(n, struct pool_request, node);

        if (id_equal(&r->allocation_id, allocation)) {
            match = r;
            break;
        }
    }
    if (match == NULL && !list_empty(&p->pending))
        match = container_of(p->pending.next, struct pool_request, node);
    s = xcalloc(1, sizeof *s);
    s->allocation_id = *allocation;
    s->resource_id = *resource_id;
    s->index = index;
    if (match == NULL) {
        /* Seed 004 §2.5: accepted in any case; freed once idle too long. */
        SPATE_LOG_DEBUG("jobmaster", "slot %u (allocation %s) of TaskManager %s is available",
                        index, id_str(allocation).s, id_str(resource_id).s);
        pool_make_available(p, s);
        return true;
    }
    pool_fulfil(p, match, s);
    return true;
}

static size_t
pool_drop_slots(struct list_node *list, const spate_id *resource_id, uint32_t *tasks, size_t max)
{
    struct list_node *n, *tmp;
    size_t count = 0;

    list_for_each_safe(n, tmp, list)
    {
        struct pool_slot *s = container_of(n, struct pool_slot, node);

        if (!id_equal(&s->resource_id, resource_id))
            continue;
        if (tasks != NULL && count < max)
            tasks[count] = s->task;
        count++;
        list_remove(n);
        free(s);
    }
    return count;
}

size_t
slot_pool_release_task_manager(struct slot_pool *p, const spate_id *resource_id, uint32_t *tasks,
                               size_t max)
{
    pool_drop_slots(&p->available, resource_id, NULL, 0);
    return pool_drop_slots(&p->allocated, resource_id, tasks, max);
}

size_t
slot_pool_pending_count(const struct slot_pool *p)
{
    return list_size(&p->pending);
}

size_t
slot_pool_allocated_count(const struct slot_pool *p)
{
    return list_size(&p->allocated);
}

size_t
slot_pool_available_count(const struct slot_pool *p)
{
    return list_size(&p->available);
}
