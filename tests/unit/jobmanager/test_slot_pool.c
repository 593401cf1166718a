/* Unit tests of src/jobmanager/slot_pool.c with a recording listener in
 * place of the JobMaster (seed 004 §2.5): an offer fulfils the request of
 * its allocation id, else the oldest one (the other withdrawn), else it is
 * kept as available; a new request takes an available slot before asking
 * the ResourceManager; idle slots go back after slot.idle.timeout; requests
 * fail after slot.request.timeout; a lost TaskManager takes its slots. */
#include <criterion/criterion.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/util.h"
#include "jobmanager/slot_pool.h"
#include "rpc/future.h"
#include "rpc/service.h"
#include "../wait.h"

/* What the pool told its JobMaster (read on the test thread after a
 * run_sync, which orders it after the loop's writes). */
struct record {
    spate_id sent[16], cancelled[16], freed[16];
    int nsent, ncancelled, nfreed, nfulfilled, ntimed_out;
    uint32_t fulfilled_task[16], timed_out_task[16];
    spate_id fulfilled_alloc[16];
};

struct fixture {
    struct rpc_service *svc;
    struct rpc_endpoint ep;
    struct slot_pool pool;
    struct record rec;
    int64_t request_timeout_ms, idle_timeout_ms;
};

static void
on_send(void *arg, const struct pool_request *r)
{
    struct record *rec = arg;

    cr_assert_lt(rec->nsent, 16);
    rec->sent[rec->nsent++] = r->allocation_id;
}

static void
on_cancel(void *arg, const spate_id *allocation)
{
    struct record *rec = arg;

    cr_assert_lt(rec->ncancelled, 16);
    rec->cancelled[rec->ncancelled++] = *allocation;
}

static void
on_fulfilled(void *arg, const struct pool_slot *s)
{
    struct record *rec = arg;

    cr_assert_lt(rec->nfulfilled, 16);
    rec->fulfilled_task[rec->nfulfilled] = s->task;
    rec->fulfilled_alloc[rec->nfulfilled++] = s->allocation_id;
}

static void
on_timed_out(void *arg, uint32_t task, uint64_t waited_ms)
{
    struct record *rec = arg;

    UNUSED(waited_ms);
    cr_assert_lt(rec->ntimed_out, 16);
    rec->timed_out_task[rec->ntimed_out++] = task;
}

static void
on_free(void *arg, const struct pool_slot *s, const char *cause)
{
    struct record *rec = arg;

    cr_assert(strstr(cause, "slot.idle.timeout") != NULL, "cause: %s", cause);
    cr_assert_lt(rec->nfreed, 16);
    rec->freed[rec->nfreed++] = s->allocation_id;
}

static const struct slot_pool_listener listener = { on_send, on_cancel, on_fulfilled, on_timed_out,
                                                    on_free };

static spate_id
mkid(int n)
{
    spate_id id;

    memset(&id, 0, sizeof id);
    id.bytes[0] = (uint8_t)n;
    id.bytes[15] = 0x5a;
    return id;
}

static bool
same(const spate_id *a, int n)
{
    spate_id b = mkid(n);

    return id_equal(a, &b);
}

static void
setup_on_loop(void *arg)
{
    struct fixture *f = arg;

    cr_assert_eq(rpc_endpoint_init(&f->ep, f->svc, "jobmaster", NULL, NULL), 0);
    cr_assert_eq(rpc_endpoint_start(&f->ep, NULL), 0);
    slot_pool_init(&f->pool, &f->ep, f->request_timeout_ms, f->idle_timeout_ms, &listener, &f->rec);
}

static void
start(struct fixture *f, int64_t request_timeout_ms, int64_t idle_timeout_ms)
{
    struct rpc_service_options o = { 0 };

    memset(f, 0, sizeof *f);
    f->request_timeout_ms = request_timeout_ms;
    f->idle_timeout_ms = idle_timeout_ms;
    cr_assert_eq(rpc_service_new(&o, &f->svc, NULL), 0);
    cr_assert_eq(rpc_service_start(f->svc, NULL), 0);
    rpc_service_run_sync(f->svc, NULL, setup_on_loop, f);
}

static void
teardown_on_loop(void *arg)
{
    struct fixture *f = arg;

    slot_pool_release(&f->pool);
    rpc_future_unref(rpc_endpoint_stop(&f->ep));
}

static void
finish(struct fixture *f)
{
    rpc_service_run_sync(f->svc, &f->ep, teardown_on_loop, f);
    rpc_service_free(f->svc);
}

/* Calls into the pool run as its endpoint, on the loop. */
struct call {
    struct fixture *f;
    int op; /* 0 request, 1 offer, 2 release task manager, 3 nothing (a read) */
    uint32_t task;
    spate_id tm, alloc;
    uint32_t index;
    bool accepted;
    size_t released;
    uint32_t tasks[8];
    size_t pending, allocated, available;
    int fulfilled; /* requests fulfilled when the call returned, on the loop */
};

static void
call_on_loop(void *arg)
{
    struct call *c = arg;
    struct slot_pool *p = &c->f->pool;

    if (c->op == 0)
        slot_pool_request_slot(p, c->task);
    else if (c->op == 1)
        c->accepted = slot_pool_offer(p, &c->tm, &c->alloc, c->index);
    else if (c->op == 2)
        c->released = slot_pool_release_task_manager(p, &c->tm, c->tasks, 8);
    c->pending = slot_pool_pending_count(p);
    c->allocated = slot_pool_allocated_count(p);
    c->available = slot_pool_available_count(p);
    c->fulfilled = c->f->rec.nfulfilled;
}

static struct call
run(struct fixture *f, struct call c)
{
    c.f = f;
    rpc_service_run_sync(f->svc, &f->ep, call_on_loop, &c);
    return c;
}

static struct call
request(struct fixture *f, uint32_t task)
{
    return run(f, (struct call){ .op = 0, .task = task });
}

static bool
offer(struct fixture *f, int tm, spate_id alloc, uint32_t index)
{
    return run(f, (struct call){ .op = 1, .tm = mkid(tm), .alloc = alloc, .index = index })
        .accepted;
}

static struct call
counts(struct fixture *f)
{
    return run(f, (struct call){ .op = 3 });
}

Test(slot_pool, an_offer_fulfils_its_allocations_request_else_the_oldest_one)
{
    struct fixture f;
    struct call c;

    start(&f, 60000, 60000);
    request(&f, 0);
    request(&f, 1);
    cr_assert_eq(f.rec.nsent, 2, "each request goes to the ResourceManager");
    /* The slot of the second request's allocation: that request, no withdrawal. */
    cr_assert(offer(&f, 1, f.rec.sent[1], 0));
    cr_assert_eq(f.rec.nfulfilled, 1);
    cr_assert_eq(f.rec.fulfilled_task[0], 1);
    cr_assert_eq(f.rec.ncancelled, 0);
    /* A slot of another allocation: the oldest request, whose own
     * allocation is withdrawn at the ResourceManager. */
    cr_assert(offer(&f, 1, mkid(50), 1));
    cr_assert_eq(f.rec.nfulfilled, 2);
    cr_assert_eq(f.rec.fulfilled_task[1], 0);
    cr_assert_eq(f.rec.ncancelled, 1);
    cr_assert(id_equal(&f.rec.cancelled[0], &f.rec.sent[0]));
    c = counts(&f);
    cr_assert_eq(c.pending, 0);
    cr_assert_eq(c.allocated, 2);
    cr_assert_eq(c.available, 0);
    /* Offered again after a reconnection: still accepted, nothing new. */
    cr_assert(offer(&f, 1, mkid(50), 1));
    cr_assert_eq(f.rec.nfulfilled, 2);
    /* The same allocation offered by another TaskManager: refused. */
    cr_assert_not(offer(&f, 2, mkid(50), 0));
    finish(&f);
}

Test(slot_pool, an_offer_nothing_waits_for_is_accepted_and_kept_available)
{
    struct fixture f;
    struct call c;

    start(&f, 60000, 60000);
    cr_assert(offer(&f, 1, mkid(60), 3), "Flink accepts an offer in any case");
    c = counts(&f);
    cr_assert_eq(c.available, 1);
    cr_assert_eq(c.allocated, 0);
    cr_assert_eq(f.rec.nfulfilled, 0);
    cr_assert(offer(&f, 1, mkid(60), 3), "offered again: still accepted");
    cr_assert_eq(counts(&f).available, 1);
    cr_assert_not(offer(&f, 2, mkid(60), 0), "another TaskManager's offer of the allocation");
    finish(&f);
}

Test(slot_pool, a_new_request_takes_an_available_slot_without_asking_the_resource_manager)
{
    struct fixture f;
    struct call c;

    start(&f, 60000, 60000);
    cr_assert(offer(&f, 1, mkid(70), 0));
    cr_assert(offer(&f, 1, mkid(71), 1));
    /* Never inside the request call (the JobMaster may be in a loop): read
     * on the loop as the call returns, before the loop runs anything else. */
    cr_assert_eq(request(&f, 7).fulfilled, 0);
    WAIT_FOR((counts(&f), f.rec.nfulfilled == 1), 10,
             "the request to be met by the available slot");
    cr_assert_eq(f.rec.fulfilled_task[0], 7);
    cr_assert(same(&f.rec.fulfilled_alloc[0], 70), "the oldest available slot serves first");
    cr_assert_eq(f.rec.nsent, 0, "nothing asked of the ResourceManager");
    cr_assert_eq(f.rec.ncancelled, 0);
    /* Two more requests, one slot left: one met, the other sent. */
    request(&f, 8);
    request(&f, 9);
    WAIT_FOR((counts(&f), f.rec.nfulfilled == 2 && f.rec.nsent == 1), 10,
             "one request met by the last available slot and the other sent");
    cr_assert_eq(f.rec.fulfilled_task[1], 8);
    c = counts(&f);
    cr_assert_eq(c.available, 0);
    cr_assert_eq(c.allocated, 2);
    cr_assert_eq(c.pending, 1);
    finish(&f);
}

Test(slot_pool, an_available_slot_goes_back_after_the_idle_timeout)
{
    struct fixture f;

    start(&f, 60000, 100);
    request(&f, 0);
    cr_assert(offer(&f, 1, f.rec.sent[0], 0)); /* in use: stays */
    cr_assert(offer(&f, 1, mkid(80), 1));      /* nothing waits: idle */
    WAIT_FOR((counts(&f), f.rec.nfreed == 1), 10, "the idle slot to be freed");
    cr_assert(same(&f.rec.freed[0], 80));
    cr_assert_eq(counts(&f).available, 0);
    cr_assert_eq(counts(&f).allocated, 1, "the slot in use is kept");
    /* A slot that served a request meanwhile is not freed as idle. */
    cr_assert(offer(&f, 1, mkid(81), 2));
    request(&f, 1);
    WAIT_FOR((counts(&f), f.rec.nfulfilled == 2), 10, "the request to take the available slot");
    cr_assert(offer(&f, 1, mkid(82), 3));
    WAIT_FOR((counts(&f), f.rec.nfreed == 2), 10, "the second idle slot to be freed");
    cr_assert(same(&f.rec.freed[1], 82), "freed the slot that served a request");
    cr_assert_eq(counts(&f).allocated, 2);
    finish(&f);
}

Test(slot_pool, a_request_nothing_meets_times_out)
{
    struct fixture f;

    start(&f, 50, 60000);
    request(&f, 4);
    WAIT_FOR((counts(&f), f.rec.ntimed_out == 1), 10, "slot.request.timeout");
    cr_assert_eq(f.rec.timed_out_task[0], 4);
    cr_assert_eq(counts(&f).pending, 0);
    /* Its slot, offered late, is kept as available. */
    cr_assert(offer(&f, 1, f.rec.sent[0], 0));
    cr_assert_eq(counts(&f).available, 1);
    finish(&f);
}

Test(slot_pool, a_lost_task_manager_takes_its_slots_with_it)
{
    struct fixture f;
    struct call c;

    start(&f, 60000, 60000);
    request(&f, 0);
    request(&f, 1);
    cr_assert(offer(&f, 1, mkid(90), 0));
    cr_assert(offer(&f, 2, mkid(91), 0));
    cr_assert(offer(&f, 1, mkid(92), 1)); /* available */
    cr_assert(offer(&f, 2, mkid(93), 1)); /* available */
    c = run(&f, (struct call){ .op = 2, .tm = mkid(1) });
    cr_assert_eq(c.released, 1, "one slot in use");
    cr_assert_eq(c.tasks[0], 0);
    cr_assert_eq(c.allocated, 1);
    cr_assert_eq(c.available, 1, "the other TaskManager's available slot stays");
    /* The remaining available slot is the second TaskManager's. */
    request(&f, 5);
    WAIT_FOR((counts(&f), f.rec.nfulfilled == 3), 10, "the request to take the remaining slot");
    cr_assert(same(&f.rec.fulfilled_alloc[2], 93));
    finish(&f);
}
