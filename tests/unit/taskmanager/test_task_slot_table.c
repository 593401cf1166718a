/* Unit tests of src/taskmanager/task_slot_table.c: allocation (again for the
 * same allocation, busy slots, indexes out of range), the slot report,
 * freeing, and taskmanager.slot.timeout: a slot allocated and never marked
 * active, or inactive again, is reported to the owner (Flink's
 * SlotActions#timeoutSlot); an active or freed one is not. */
#include <criterion/criterion.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/util.h"
#include "rpc/gateways.h"
#include "rpc/service.h"
#include "taskmanager/task_slot_table.h"

static spate_id
mkid(int n)
{
    spate_id id;

    memset(&id, 0, sizeof id);
    id.bytes[0] = (uint8_t)n;
    id.bytes[15] = 0xa5;
    return id;
}

Test(task_slot_table, allocate_find_report_and_free)
{
    struct task_slot_table t;
    struct task_slot_report r;
    spate_id job = mkid(1), a = mkid(10), b = mkid(11), c = mkid(12);
    spate_error err = { 0 };
    spate_id got;

    task_slot_table_init(&t, 2);
    cr_assert_eq(task_slot_table_free_count(&t), 2);
    cr_assert_not(task_slot_table_has_slots_for(&t, &job));
    cr_assert_eq(task_slot_table_allocate(&t, 1, &job, &a, &err), 0);
    cr_assert_eq(task_slot_table_allocate(&t, 1, &job, &a, &err), 0, "the same allocation again");
    cr_assert_eq(task_slot_table_allocate(&t, 1, &job, &b, &err), SPATE_EBUSY);
    cr_assert(strstr(err.message, "slot 1 is already allocated") != NULL, "%s", err.message);
    cr_assert_eq(task_slot_table_allocate(&t, 0, &job, &a, &err), SPATE_EBUSY,
                 "an allocation has one slot");
    cr_assert_eq(task_slot_table_allocate(&t, 2, &job, &c, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "has 2") != NULL, "%s", err.message);
    cr_assert_eq(task_slot_table_free_count(&t), 1);
    cr_assert(task_slot_table_has_slots_for(&t, &job));
    cr_assert_eq(task_slot_table_find(&t, &a)->index, 1);
    cr_assert_eq(task_slot_table_find(&t, &a)->state, TASK_SLOT_ALLOCATED);
    cr_assert(task_slot_table_mark_active(&t, &a));
    cr_assert_eq(task_slot_table_find(&t, &a)->state, TASK_SLOT_ACTIVE);
    cr_assert_not(task_slot_table_mark_active(&t, &b), "no slot of that allocation");

    task_slot_table_report(&t, &r);
    cr_assert_eq(r.msg.n_slots, 2);
    cr_assert_eq(r.msg.slots[0]->allocation_id.len, 0, "slot 0 is free");
    cr_assert(gw_id_get(&r.msg.slots[1]->allocation_id, &got));
    cr_assert(id_equal(&got, &a));
    cr_assert(gw_id_get(&r.msg.slots[1]->job_id, &got));
    cr_assert(id_equal(&got, &job));
    task_slot_report_release(&r);

    cr_assert_eq(task_slot_table_free(&t, &a), 1);
    cr_assert_eq(task_slot_table_free(&t, &a), -1, "already free");
    cr_assert_eq(task_slot_table_free_count(&t), 2);
    cr_assert_not(task_slot_table_has_slots_for(&t, &job));
    cr_assert_null(task_slot_table_find(&t, &a));
    task_slot_table_release(&t);
}

/* ---- timeouts, on an endpoint -------------------------------------------------------- */

struct fixture {
    struct rpc_service *svc;
    struct rpc_endpoint ep;
    struct task_slot_table t;
    spate_id timed_out[8];
    int ntimed_out; /* written on the loop, read after a run_sync */
};

static void
on_timeout(void *arg, const spate_id *allocation)
{
    struct fixture *f = arg;

    cr_assert_lt(f->ntimed_out, 8);
    f->timed_out[f->ntimed_out++] = *allocation;
    /* The owner frees it, as the TaskExecutor does. */
    cr_assert_geq(task_slot_table_free(&f->t, allocation), 0);
}

static const struct task_slot_actions actions = { on_timeout };

static void
setup_on_loop(void *arg)
{
    struct fixture *f = arg;

    cr_assert_eq(rpc_endpoint_init(&f->ep, f->svc, "taskexecutor", NULL, NULL), 0);
    cr_assert_eq(rpc_endpoint_start(&f->ep, NULL), 0);
    task_slot_table_init(&f->t, 4);
    task_slot_table_start(&f->t, &f->ep, 100, &actions, f);
}

static void
teardown_on_loop(void *arg)
{
    struct fixture *f = arg;

    task_slot_table_stop(&f->t);
    rpc_future_unref(rpc_endpoint_stop(&f->ep));
}

/* One operation on the loop, as the endpoint. */
struct op {
    struct fixture *f;
    char what; /* a allocate, I mark inactive, - nothing */
    uint32_t index;
    spate_id alloc;
    int ntimed_out;
};

static void
op_on_loop(void *arg)
{
    struct op *o = arg;
    struct task_slot_table *t = &o->f->t;
    spate_id job = mkid(1);

    if (o->what == 'a')
        cr_assert_eq(task_slot_table_allocate(t, o->index, &job, &o->alloc, NULL), 0);
    else if (o->what == 'I')
        cr_assert(task_slot_table_mark_inactive(t, &o->alloc));
    o->ntimed_out = o->f->ntimed_out;
}

static int
op(struct fixture *f, char what, uint32_t index, int alloc)
{
    struct op o = { .f = f, .what = what, .index = index, .alloc = mkid(alloc) };

    rpc_service_run_sync(f->svc, &f->ep, op_on_loop, &o);
    return o.ntimed_out;
}

static void
wait_timeouts(struct fixture *f, int n, const char *what)
{
    uint64_t until = clock_mono_ms() + 10000;
    struct timespec ts = { 0, 2000000 };

    while (op(f, '-', 0, 0) < n) {
        cr_assert_lt(clock_mono_ms(), until, "waited 10 s for %s", what);
        nanosleep(&ts, NULL);
    }
}

static bool
timed_out(const struct fixture *f, int alloc)
{
    spate_id a = mkid(alloc);

    for (int i = 0; i < f->ntimed_out; i++)
        if (id_equal(&f->timed_out[i], &a))
            return true;
    return false;
}

static void
three_slots(void *arg)
{
    struct fixture *f = arg;
    spate_id job = mkid(1), a20 = mkid(20), a21 = mkid(21), a22 = mkid(22);

    cr_assert_eq(task_slot_table_allocate(&f->t, 0, &job, &a20, NULL), 0);
    cr_assert_eq(task_slot_table_allocate(&f->t, 1, &job, &a21, NULL), 0);
    cr_assert_eq(task_slot_table_allocate(&f->t, 2, &job, &a22, NULL), 0);
    cr_assert(task_slot_table_mark_active(&f->t, &a20));
    cr_assert_eq(task_slot_table_free(&f->t, &a21), 1);
}

Test(task_slot_table, a_slot_never_accepted_times_out_an_accepted_or_freed_one_does_not)
{
    struct fixture f = { 0 };
    struct rpc_service_options so = { 0 };

    cr_assert_eq(rpc_service_new(&so, &f.svc, NULL), 0);
    cr_assert_eq(rpc_service_start(f.svc, NULL), 0);
    rpc_service_run_sync(f.svc, NULL, setup_on_loop, &f);
    /* In one turn of the loop (no timeout can fire in between): 20
     * accepted, 21 freed, 22 never accepted. */
    rpc_service_run_sync(f.svc, &f.ep, three_slots, &f);
    wait_timeouts(&f, 1, "the slot never accepted to time out");
    cr_assert(timed_out(&f, 22));
    op(&f, 'a', 3, 23); /* the latest: once it times out, so would have 20 and 21 */
    wait_timeouts(&f, 2, "the second slot never accepted to time out");
    cr_assert(timed_out(&f, 23));
    cr_assert_not(timed_out(&f, 20), "an active slot timed out");
    cr_assert_not(timed_out(&f, 21), "a freed slot timed out");
    cr_assert_eq(f.ntimed_out, 2);
    /* Inactive again (its JobMaster lost leadership): the timeout runs again. */
    op(&f, 'I', 0, 20);
    wait_timeouts(&f, 3, "the inactive slot to time out");
    cr_assert(timed_out(&f, 20));
    cr_assert_eq(task_slot_table_free_count(&f.t), 4, "the owner freed each");
    rpc_service_run_sync(f.svc, &f.ep, teardown_on_loop, &f);
    rpc_service_free(f.svc);
    task_slot_table_release(&f.t);
}
