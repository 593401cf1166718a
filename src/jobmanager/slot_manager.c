/* The SlotManager (slot_manager.h). */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/log.h"
#include "core/util.h"
#include "jobmanager/slot_manager.h"
#include "rpc/gateways.h"

#define SM_LOG "slotmanager"

void
slot_manager_init(struct slot_manager *sm, const struct slot_manager_actions *a, void *arg)
{
    hmap_init(&sm->task_managers);
    hmap_init(&sm->requests);
    list_init(&sm->queue);
    sm->actions = *a;
    sm->arg = arg;
}

static void
sm_request_free(struct slot_manager *sm, struct sm_request *r)
{
    hmap_remove(&sm->requests, &r->by_allocation);
    list_remove(&r->node);
    free(r->target_address);
    free(r);
}

void
slot_manager_release(struct slot_manager *sm)
{
    struct hmap_node *n;

    while ((n = hmap_first(&sm->requests)) != NULL)
        sm_request_free(sm, container_of(n, struct sm_request, by_allocation));
    while ((n = hmap_first(&sm->task_managers)) != NULL) {
        struct sm_task_manager *tm = container_of(n, struct sm_task_manager, node);

        hmap_remove(&sm->task_managers, n);
        free(tm->slots);
        free(tm);
    }
    hmap_release(&sm->task_managers);
    hmap_release(&sm->requests);
}

struct sm_task_manager *
slot_manager_find_task_manager(struct slot_manager *sm, const spate_id *resource_id)
{
    struct hmap_node *n;

    HMAP_FOR_EACH_WITH_HASH(n, id_hash(resource_id), &sm->task_managers)
    {
        struct sm_task_manager *tm = container_of(n, struct sm_task_manager, node);

        if (id_equal(&tm->resource_id, resource_id))
            return tm;
    }
    return NULL;
}

static struct sm_request *
sm_find_request(struct slot_manager *sm, const spate_id *allocation)
{
    struct hmap_node *n;

    HMAP_FOR_EACH_WITH_HASH(n, id_hash(allocation), &sm->requests)
    {
        struct sm_request *r = container_of(n, struct sm_request, by_allocation);

        if (id_equal(&r->allocation_id, allocation))
            return r;
    }
    return NULL;
}

static struct sm_slot *
sm_find_free_slot(struct slot_manager *sm, struct sm_task_manager **tm_out)
{
    struct hmap_node *n;

    HMAP_FOR_EACH(n, &sm->task_managers)
    {
        struct sm_task_manager *tm = container_of(n, struct sm_task_manager, node);

        for (uint32_t i = 0; i < tm->slot_count; i++) {
            if (tm->slots[i].state == SM_SLOT_FREE) {
                *tm_out = tm;
                return &tm->slots[i];
            }
        }
    }
    return NULL;
}

/* Gives waiting requests free slots, oldest request first. */
static void
sm_match(struct slot_manager *sm)
{
    struct list_node *n;

    while ((n = sm->queue.next) != &sm->queue) {
        struct sm_request *r = container_of(n, struct sm_request, node);
        struct sm_task_manager *tm;
        struct sm_slot *s = sm_find_free_slot(sm, &tm);

        if (s == NULL)
            return;
        list_remove(&r->node);
        s->state = SM_SLOT_PENDING;
        s->allocation_id = r->allocation_id;
        s->job_id = r->job_id;
        s->request = r;
        r->tm = tm;
        r->index = s->index;
        SPATE_LOG_DEBUG(SM_LOG, "assigning slot %u of %s to allocation %s of job %s", s->index,
                        id_str(&tm->resource_id).s, id_str(&r->allocation_id).s,
                        id_str(&r->job_id).s);
        sm->actions.allocate(sm->arg, tm, s->index, r);
    }
}

/* Reconciles one slot with what its TaskExecutor reports. */
static void
sm_reconcile(struct sm_slot *s, const Cluster__SlotStatus *st)
{
    spate_id alloc, job;
    bool reported = gw_id_get(&st->allocation_id, &alloc);

    if (s->state == SM_SLOT_PENDING)
        return; /* its answer is on the way */
    if (!reported) {
        if (s->state == SM_SLOT_ALLOCATED)
            SPATE_LOG_DEBUG(SM_LOG, "slot %u is free again (slot report)", s->index);
        s->state = SM_SLOT_FREE;
        memset(&s->allocation_id, 0, sizeof s->allocation_id);
        memset(&s->job_id, 0, sizeof s->job_id);
        return;
    }
    if (!gw_id_get(&st->job_id, &job))
        memset(&job, 0, sizeof job);
    s->state = SM_SLOT_ALLOCATED;
    s->allocation_id = alloc;
    s->job_id = job;
}

bool
slot_manager_register_task_manager(struct slot_manager *sm, const spate_id *resource_id,
                                   void *owner, uint32_t slots, const Cluster__SlotReport *report)
{
    struct sm_task_manager *tm = slot_manager_find_task_manager(sm, resource_id);

    if (tm != NULL) {
        slot_manager_report(sm, resource_id, report);
        return false;
    }
    tm = xcalloc(1, sizeof *tm);
    tm->resource_id = *resource_id;
    tm->owner = owner;
    tm->slot_count = slots;
    tm->slots = xcalloc(slots, sizeof *tm->slots);
    for (uint32_t i = 0; i < slots; i++)
        tm->slots[i].index = i;
    hmap_insert(&sm->task_managers, &tm->node, id_hash(resource_id));
    for (size_t i = 0; report != NULL && i < report->n_slots; i++)
        if (report->slots[i]->index < slots)
            sm_reconcile(&tm->slots[report->slots[i]->index], report->slots[i]);
    sm_match(sm);
    return true;
}

void
slot_manager_report(struct slot_manager *sm, const spate_id *resource_id,
                    const Cluster__SlotReport *report)
{
    struct sm_task_manager *tm = slot_manager_find_task_manager(sm, resource_id);

    if (tm == NULL || report == NULL)
        return;
    for (size_t i = 0; i < report->n_slots; i++)
        if (report->slots[i]->index < tm->slot_count)
            sm_reconcile(&tm->slots[report->slots[i]->index], report->slots[i]);
    sm_match(sm);
}

size_t
slot_manager_unregister_task_manager(struct slot_manager *sm, const spate_id *resource_id,
                                     spate_id *jobs, size_t max)
{
    struct sm_task_manager *tm = slot_manager_find_task_manager(sm, resource_id);
    size_t n = 0;

    if (tm == NULL)
        return 0;
    for (uint32_t i = 0; i < tm->slot_count; i++) {
        struct sm_slot *s = &tm->slots[i];
        bool seen = false;

        if (s->state == SM_SLOT_FREE)
            continue;
        for (size_t j = 0; j < n; j++)
            seen |= id_equal(&jobs[j], &s->job_id);
        if (jobs != NULL && !seen && n < max)
            jobs[n++] = s->job_id;
        if (s->state == SM_SLOT_PENDING && s->request != NULL) {
            /* Its request waits for another slot. */
            s->request->tm = NULL;
            list_push_front(&sm->queue, &s->request->node);
        }
    }
    hmap_remove(&sm->task_managers, &tm->node);
    free(tm->slots);
    free(tm);
    sm_match(sm);
    return n;
}

int
slot_manager_request_slot(struct slot_manager *sm, const spate_id *job, const spate_id *allocation,
                          const char *target_address)
{
    struct sm_request *r;

    if (sm_find_request(sm, allocation) != NULL)
        return SPATE_EEXIST;
    r = xcalloc(1, sizeof *r);
    r->allocation_id = *allocation;
    r->job_id = *job;
    r->target_address = xstrdup(target_address);
    hmap_insert(&sm->requests, &r->by_allocation, id_hash(allocation));
    list_push_back(&sm->queue, &r->node);
    sm_match(sm);
    return 0;
}

void
slot_manager_cancel_request(struct slot_manager *sm, const spate_id *allocation)
{
    struct sm_request *r = sm_find_request(sm, allocation);

    if (r == NULL)
        return;
    if (r->tm != NULL) {
        /* The slot stays pending until its TaskExecutor answers. */
        r->tm->slots[r->index].request = NULL;
    }
    sm_request_free(sm, r);
}

void
slot_manager_cancel_job(struct slot_manager *sm, const spate_id *job)
{
    struct hmap_node *n, *next;

    for (n = hmap_first(&sm->requests); n != NULL; n = next) {
        struct sm_request *r = container_of(n, struct sm_request, by_allocation);

        next = hmap_next(&sm->requests, n);
        if (id_equal(&r->job_id, job)) {
            slot_manager_cancel_request(sm, &r->allocation_id);
            next = hmap_first(&sm->requests); /* the map changed */
        }
    }
}

void
slot_manager_allocation_result(struct slot_manager *sm, const spate_id *resource_id, uint32_t index,
                               const spate_id *allocation, bool ok)
{
    struct sm_task_manager *tm = slot_manager_find_task_manager(sm, resource_id);
    struct sm_slot *s;

    if (tm == NULL || index >= tm->slot_count)
        return;
    s = &tm->slots[index];
    if (s->state != SM_SLOT_PENDING || !id_equal(&s->allocation_id, allocation))
        return;
    if (ok) {
        s->state = SM_SLOT_ALLOCATED;
        if (s->request != NULL)
            sm_request_free(sm, s->request);
        s->request = NULL;
    } else {
        struct sm_request *r = s->request;

        /* The TaskExecutor holds the slot for another allocation (a slot
         * report older than that allocation said it was free), or could not
         * answer: the slot sits out, held by no allocation known here, until
         * its TaskExecutor's next slot report says what it holds. Marked
         * free, it was asked for again at once, and refused again, for as
         * long as the other allocation lived (a job stuck restarting after
         * a TaskManager was killed, the ResourceManager asking a thousand
         * times a second). Flink's SlotManager marks an occupied slot
         * allocated too. */
        s->state = SM_SLOT_ALLOCATED;
        s->request = NULL;
        memset(&s->allocation_id, 0, sizeof s->allocation_id);
        memset(&s->job_id, 0, sizeof s->job_id);
        if (r != NULL) {
            r->tm = NULL;
            list_push_front(&sm->queue, &r->node);
        }
        sm_match(sm);
    }
}

void
slot_manager_free_slot(struct slot_manager *sm, const spate_id *resource_id, uint32_t index,
                       const spate_id *allocation)
{
    struct sm_task_manager *tm = slot_manager_find_task_manager(sm, resource_id);
    struct sm_slot *s;

    if (tm == NULL || index >= tm->slot_count)
        return;
    s = &tm->slots[index];
    if (s->state != SM_SLOT_ALLOCATED || !id_equal(&s->allocation_id, allocation))
        return;
    s->state = SM_SLOT_FREE;
    memset(&s->allocation_id, 0, sizeof s->allocation_id);
    memset(&s->job_id, 0, sizeof s->job_id);
    sm_match(sm);
}

uint32_t
slot_manager_slots_total(const struct slot_manager *sm)
{
    struct hmap_node *n;
    uint32_t total = 0;

    HMAP_FOR_EACH(n, &sm->task_managers)
    total += container_of(n, struct sm_task_manager, node)->slot_count;
    return total;
}

uint32_t
slot_manager_tm_free(const struct sm_task_manager *tm)
{
    uint32_t n = 0;

    for (uint32_t i = 0; i < tm->slot_count; i++)
        n += tm->slots[i].state == SM_SLOT_FREE;
    return n;
}

uint32_t
slot_manager_slots_free(const struct slot_manager *sm)
{
    struct hmap_node *n;
    uint32_t free_slots = 0;

    HMAP_FOR_EACH(n, &sm->task_managers)
    free_slots += slot_manager_tm_free(container_of(n, struct sm_task_manager, node));
    return free_slots;
}

size_t
slot_manager_pending_requests(const struct slot_manager *sm)
{
    return hmap_count(&sm->requests);
}
