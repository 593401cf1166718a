/* The slot table (task_slot_table.h). */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "rpc/gateways.h"
#include "taskmanager/task_slot_table.h"

void
task_slot_table_init(struct task_slot_table *t, uint32_t count)
{
    memset(t, 0, sizeof *t);
    t->slots = xcalloc(count, sizeof *t->slots);
    t->count = count;
    for (uint32_t i = 0; i < count; i++) {
        t->slots[i].index = i;
        t->slots[i].table = t;
    }
}

void
task_slot_table_start(struct task_slot_table *t, struct rpc_endpoint *ep, int64_t timeout_ms,
                      const struct task_slot_actions *actions, void *arg)
{
    t->ep = ep;
    t->timeout_ms = timeout_ms;
    t->actions = *actions;
    t->arg = arg;
}

static void
tst_cancel_timeout(struct task_slot *s)
{
    rpc_timer_cancel(s->timeout);
    s->timeout = NULL;
}

void
task_slot_table_stop(struct task_slot_table *t)
{
    for (uint32_t i = 0; i < t->count; i++)
        tst_cancel_timeout(&t->slots[i]);
    t->ep = NULL;
}

static void
tst_on_timeout(void *arg)
{
    struct task_slot *s = arg;
    struct task_slot_table *t = s->table;
    spate_id allocation = s->allocation_id;

    s->timeout = NULL;
    if (s->state == TASK_SLOT_ALLOCATED)
        t->actions.timeout_slot(t->arg, &allocation);
}

static void
tst_arm_timeout(struct task_slot_table *t, struct task_slot *s)
{
    tst_cancel_timeout(s);
    if (t->ep != NULL)
        s->timeout = rpc_endpoint_schedule(t->ep, (uint64_t)t->timeout_ms, tst_on_timeout, s);
}

void
task_slot_table_release(struct task_slot_table *t)
{
    free(t->slots);
    t->slots = NULL;
    t->count = 0;
}

int
task_slot_table_allocate(struct task_slot_table *t, uint32_t index, const spate_id *job,
                         const spate_id *allocation, spate_error *err)
{
    struct task_slot *s;

    if (index >= t->count)
        return spate_error_set(err, SPATE_EINVAL,
                               "slot %u does not exist (this TaskManager has %u)", index, t->count);
    s = &t->slots[index];
    if (s->state != TASK_SLOT_FREE) {
        if (id_equal(&s->allocation_id, allocation))
            return 0;
        return spate_error_set(err, SPATE_EBUSY, "slot %u is already allocated to %s", index,
                               id_str(&s->allocation_id).s);
    }
    if (task_slot_table_find(t, allocation) != NULL)
        return spate_error_set(err, SPATE_EBUSY, "allocation %s already has another slot",
                               id_str(allocation).s);
    s->state = TASK_SLOT_ALLOCATED;
    s->allocation_id = *allocation;
    s->job_id = *job;
    tst_arm_timeout(t, s);
    return 0;
}

struct task_slot *
task_slot_table_find(struct task_slot_table *t, const spate_id *allocation)
{
    for (uint32_t i = 0; i < t->count; i++)
        if (t->slots[i].state != TASK_SLOT_FREE && id_equal(&t->slots[i].allocation_id, allocation))
            return &t->slots[i];
    return NULL;
}

bool
task_slot_table_mark_active(struct task_slot_table *t, const spate_id *allocation)
{
    struct task_slot *s = task_slot_table_find(t, allocation);

    if (s == NULL)
        return false;
    s->state = TASK_SLOT_ACTIVE;
    tst_cancel_timeout(s);
    return true;
}

bool
task_slot_table_mark_inactive(struct task_slot_table *t, const spate_id *allocation)
{
    struct task_slot *s = task_slot_table_find(t, allocation);

    if (s == NULL)
        return false;
    if (s->state == TASK_SLOT_ACTIVE) {
        s->state = TASK_SLOT_ALLOCATED;
        tst_arm_timeout(t, s);
    }
    return true;
}

int
task_slot_table_free(struct task_slot_table *t, const spate_id *allocation)
{
    struct task_slot *s = task_slot_table_find(t, allocation);

    if (s == NULL)
        return -1;
    tst_cancel_timeout(s);
    s->state = TASK_SLOT_FREE;
    memset(&s->allocation_id, 0, sizeof s->allocation_id);
    memset(&s->job_id, 0, sizeof s->job_id);
    return (int)s->index;
}

bool
task_slot_table_has_slots_for(const struct task_slot_table *t, const spate_id *job)
{
    for (uint32_t i = 0; i < t->count; i++)
        if (t->slots[i].state != TASK_SLOT_FREE && id_equal(&t->slots[i].job_id, job))
            return true;
    return false;
}

uint32_t
task_slot_table_free_count(const struct task_slot_table *t)
{
    uint32_t n = 0;

    for (uint32_t i = 0; i < t->count; i++)
        n += t->slots[i].state == TASK_SLOT_FREE;
    return n;
}

void
task_slot_table_report(struct task_slot_table *t, struct task_slot_report *r)
{
    r->status = xcalloc(t->count, sizeof *r->status);
    r->ptrs = xcalloc(t->count, sizeof *r->ptrs);
    cluster__slot_report__init(&r->msg);
    for (uint32_t i = 0; i < t->count; i++) {
        struct task_slot *s = &t->slots[i];

        cluster__slot_status__init(&r->status[i]);
        r->status[i].index = s->index;
        if (s->state != TASK_SLOT_FREE) {
            r->status[i].allocation_id = gw_id_bytes(&s->allocation_id);
            r->status[i].job_id = gw_id_bytes(&s->job_id);
        }
        r->ptrs[i] = &r->status[i];
    }
    r->msg.n_slots = t->count;
    r->msg.slots = r->ptrs;
}

void
task_slot_report_release(struct task_slot_report *r)
{
    free(r->status);
    free(r->ptrs);
    r->status = NULL;
    r->ptrs = NULL;
}
