/* The SlotPool (slot_pool.h). */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/util.h"
#include "jobmanager/slot_pool.h"

void
slot_pool_init(struct slot_pool *p, struct rpc_endpoint *ep, int64_t request_timeout_ms,
               const struct slot_pool_listener *l, void *arg)
{
    p->ep = ep;
    p->request_timeout_ms = request_timeout_ms;
    list_init(&p->pending);
    list_init(&p->allocated);
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

    while ((n = list_pop_front(&p->pending)) != NULL)
        pool_request_free(container_of(n, struct pool_request, node));
    while ((n = list_pop_front(&p->allocated)) != NULL)
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
    p->l.send_request(p->arg, r);
}

void
slot_pool_resend_pending(struct slot_pool *p)
{
    struct list_node *n;

    list_for_each(n, &p->pending)
        p->l.send_request(p->arg, container_of(n, struct pool_request, node));
}

bool
slot_pool_offer(struct slot_pool *p, const spate_id *resource_id, const spate_id *allocation,
                uint32_t index)
{
    struct pool_request *match = NULL;
    struct pool_slot *s;
    struct list_node *n;

    list_for_each(n, &p->allocated) if (
        id_equal(&container_of(n, struct pool_slot, node)->allocation_id,
                 allocation)) return true; /* offered again after a reconnection */
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
    if (match == NULL)
        return false; /* nothing waits for it: the TaskExecutor frees it */
    s = xcalloc(1, sizeof *s);
    s->allocation_id = *allocation;
    s->resource_id = *resource_id;
    s->index = index;
    s->task = match->task;
    list_push_back(&p->allocated, &s->node);
    if (!id_equal(&match->allocation_id, allocation))
        p->l.cancel_request(p->arg, &match->allocation_id);
    pool_request_free(match);
    p->l.fulfilled(p->arg, s);
    return true;
}

size_t
slot_pool_release_task_manager(struct slot_pool *p, const spate_id *resource_id, uint32_t *tasks,
                               size_t max)
{
    struct list_node *n, *tmp;
    size_t count = 0;

    list_for_each_safe(n, tmp, &p->allocated)
    {
        struct pool_slot *s = container_of(n, struct pool_slot, node);

        if (!id_equal(&s->resource_id, resource_id))
            continue;
        if (count < max)
            tasks[count] = s->task;
        count++;
        list_remove(n);
        free(s);
    }
    return count;
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
