/* Unit tests of src/jobmanager/slot_manager.c: registration from slot
 * reports, first-come-first-served matching, pending requests met by new
 * TaskManagers, failed allocations retried, re-registration, reconciliation,
 * and TaskManagers removed with their slots. */
#include <criterion/criterion.h>
#include <string.h>

#include "jobmanager/slot_manager.h"
#include "rpc/gateways.h"

struct allocation {
    spate_id tm;
    uint32_t index;
    spate_id alloc;
};

static struct allocation asked[16];
static int nasked;

static void
record(void *arg, struct sm_task_manager *tm, uint32_t index, const struct sm_request *req)
{
    (void)arg;
    cr_assert_lt(nasked, 16);
    asked[nasked].tm = tm->resource_id;
    asked[nasked].index = index;
    asked[nasked].alloc = req->allocation_id;
    nasked++;
}

static const struct slot_manager_actions actions = { record };

static spate_id
mkid(int n)
{
    spate_id id;

    memset(&id, 0, sizeof id);
    id.bytes[0] = (uint8_t)n;
    id.bytes[15] = 0x5a;
    return id;
}

Test(slot_manager, requests_wait_for_slots_and_are_met_in_order)
{
    struct slot_manager sm;
    spate_id tm1 = mkid(1), tm2 = mkid(2), job = mkid(9), a[3];

    nasked = 0;
    slot_manager_init(&sm, &actions, NULL);
    cr_assert(slot_manager_register_task_manager(&sm, &tm1, NULL, 2, NULL));
    cr_assert_eq(slot_manager_slots_total(&sm), 2);
    cr_assert_eq(slot_manager_slots_free(&sm), 2);
    for (int i = 0; i < 3; i++) {
        a[i] = mkid(20 + i);
        cr_assert_eq(slot_manager_request_slot(&sm, &job, &a[i], "jm"), 0);
    }
    cr_assert_eq(slot_manager_request_slot(&sm, &job, &a[0], "jm"), SPATE_EEXIST);
    cr_assert_eq(nasked, 2);
    cr_assert(id_equal(&asked[0].alloc, &a[0]));
    cr_assert(id_equal(&asked[1].alloc, &a[1]));
    cr_assert_eq(slot_manager_slots_free(&sm), 0);
    slot_manager_allocation_result(&sm, &tm1, asked[0].index, &a[0], true);
    slot_manager_allocation_result(&sm, &tm1, asked[1].index, &a[1], true);
    cr_assert_eq(slot_manager_pending_requests(&sm), 1);
    /* A new TaskManager meets the waiting request. */
    cr_assert(slot_manager_register_task_manager(&sm, &tm2, NULL, 1, NULL));
    cr_assert_eq(nasked, 3);
    cr_assert(id_equal(&asked[2].tm, &tm2));
    cr_assert(id_equal(&asked[2].alloc, &a[2]));
    /* It fails: the slot sits out (the TaskExecutor holds it for another
     * allocation, or could not say) and the request waits, asking nothing. */
    slot_manager_allocation_result(&sm, &tm2, 0, &a[2], false);
    cr_assert_eq(nasked, 3, "the refused slot was asked for again at once");
    cr_assert_eq(slot_manager_pending_requests(&sm), 1);
    cr_assert_eq(slot_manager_slots_free(&sm), 0);
    {
        /* The TaskExecutor's next report says the slot is free: asked again. */
        Cluster__SlotStatus st = CLUSTER__SLOT_STATUS__INIT;
        Cluster__SlotStatus *ptr = &st;
        Cluster__SlotReport report = CLUSTER__SLOT_REPORT__INIT;

        report.n_slots = 1;
        report.slots = &ptr;
        slot_manager_report(&sm, &tm2, &report);
    }
    cr_assert_eq(nasked, 4);
    cr_assert(id_equal(&asked[3].alloc, &a[2]));
    slot_manager_allocation_result(&sm, &tm2, 0, &a[2], true);
    cr_assert_eq(slot_manager_pending_requests(&sm), 0);
    /* Freed slots return. */
    slot_manager_free_slot(&sm, &tm1, asked[0].index, &a[0]);
    cr_assert_eq(slot_manager_slots_free(&sm), 1);
    slot_manager_release(&sm);
}

Test(slot_manager, reregistration_reconciles_and_removal_reports_jobs)
{
    struct slot_manager sm;
    spate_id tm = mkid(1), job = mkid(9), alloc = mkid(30), jobs[4];
    Cluster__SlotStatus st[2] = { CLUSTER__SLOT_STATUS__INIT, CLUSTER__SLOT_STATUS__INIT };
    Cluster__SlotStatus *ptrs[2] = { &st[0], &st[1] };
    Cluster__SlotReport report = CLUSTER__SLOT_REPORT__INIT;

    nasked = 0;
    slot_manager_init(&sm, &actions, NULL);
    /* Its first report says slot 1 is allocated already (a TaskManager that
     * kept a slot across a ResourceManager restart). */
    st[0].index = 0;
    st[1].index = 1;
    st[1].allocation_id = gw_id_bytes(&alloc);
    st[1].job_id = gw_id_bytes(&job);
    report.n_slots = 2;
    report.slots = ptrs;
    cr_assert(slot_manager_register_task_manager(&sm, &tm, NULL, 2, &report));
    cr_assert_eq(slot_manager_slots_free(&sm), 1);
    /* Registering again only reconciles: now both are free. */
    st[1].allocation_id.len = 0;
    st[1].job_id.len = 0;
    cr_assert_not(slot_manager_register_task_manager(&sm, &tm, NULL, 2, &report));
    cr_assert_eq(slot_manager_slots_total(&sm), 2);
    cr_assert_eq(slot_manager_slots_free(&sm), 2);
    /* Allocated, then the TaskManager goes: the job is reported. */
    cr_assert_eq(slot_manager_request_slot(&sm, &job, &alloc, "jm"), 0);
    slot_manager_allocation_result(&sm, &tm, asked[0].index, &alloc, true);
    cr_assert_eq(slot_manager_unregister_task_manager(&sm, &tm, jobs, 4), 1);
    cr_assert(id_equal(&jobs[0], &job));
    cr_assert_eq(slot_manager_slots_total(&sm), 0);
    slot_manager_release(&sm);
}

Test(slot_manager, cancelled_requests_are_forgotten)
{
    struct slot_manager sm;
    spate_id job = mkid(9), a = mkid(40), b = mkid(41), tm = mkid(1);

    nasked = 0;
    slot_manager_init(&sm, &actions, NULL);
    cr_assert_eq(slot_manager_request_slot(&sm, &job, &a, "jm"), 0);
    cr_assert_eq(slot_manager_request_slot(&sm, &job, &b, "jm"), 0);
    slot_manager_cancel_request(&sm, &a);
    slot_manager_cancel_job(&sm, &job);
    cr_assert_eq(slot_manager_pending_requests(&sm), 0);
    slot_manager_register_task_manager(&sm, &tm, NULL, 2, NULL);
    cr_assert_eq(nasked, 0);
    slot_manager_release(&sm);
}

/* A slot report older than an allocation says the slot is free: the slot
 * is given to a new request, and its TaskExecutor refuses (still held by
 * the first). The request goes to another TaskManager's slot, not to the
 * refused one again and again; the next report puts the refused slot right. */
Test(slot_manager, a_refused_slot_is_not_asked_for_again_until_reported)
{
    struct slot_manager sm;
    spate_id tm1 = mkid(1), tm2 = mkid(2), job = mkid(9), held = mkid(30), fresh = mkid(31);
    Cluster__SlotStatus st = CLUSTER__SLOT_STATUS__INIT;
    Cluster__SlotStatus *ptr = &st;
    Cluster__SlotReport report = CLUSTER__SLOT_REPORT__INIT;

    nasked = 0;
    slot_manager_init(&sm, &actions, NULL);
    cr_assert(slot_manager_register_task_manager(&sm, &tm1, NULL, 1, NULL));
    cr_assert_eq(slot_manager_request_slot(&sm, &job, &held, "jm"), 0);
    slot_manager_allocation_result(&sm, &tm1, 0, &held, true);
    /* A report from before that allocation arrives late: slot 0 free. */
    report.n_slots = 1;
    report.slots = &ptr;
    slot_manager_report(&sm, &tm1, &report);
    cr_assert_eq(slot_manager_slots_free(&sm), 1);
    cr_assert_eq(slot_manager_request_slot(&sm, &job, &fresh, "jm"), 0);
    cr_assert_eq(nasked, 2);
    cr_assert(id_equal(&asked[1].tm, &tm1));
    slot_manager_allocation_result(&sm, &tm1, 0, &fresh, false); /* held by the first */
    cr_assert_eq(nasked, 2, "the refused slot was asked for again");
    /* Another TaskManager: the request goes there. */
    cr_assert(slot_manager_register_task_manager(&sm, &tm2, NULL, 1, NULL));
    cr_assert_eq(nasked, 3);
    cr_assert(id_equal(&asked[2].tm, &tm2));
    cr_assert(id_equal(&asked[2].alloc, &fresh));
    slot_manager_allocation_result(&sm, &tm2, 0, &fresh, true);
    /* tm1's next report: slot 0 held by the first allocation; its end frees it. */
    st.allocation_id = gw_id_bytes(&held);
    st.job_id = gw_id_bytes(&job);
    slot_manager_report(&sm, &tm1, &report);
    cr_assert_eq(slot_manager_slots_free(&sm), 0);
    slot_manager_free_slot(&sm, &tm1, 0, &held);
    cr_assert_eq(slot_manager_slots_free(&sm), 1);
    cr_assert_eq(slot_manager_pending_requests(&sm), 0);
    slot_manager_release(&sm);
}
