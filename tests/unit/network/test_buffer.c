/* Unit tests of src/network/buffer.c: the network buffer pool, local pools
 * with their minimum and maximum, the waiter poked on recycling, buffers
 * recycled after their pool is gone, and threads recycling concurrently
 * (also under ThreadSanitizer). */
#include <criterion/criterion.h>
#include <pthread.h>

#include "network/buffer.h"

Test(buffer, local_pools_take_their_minimum_and_stop_at_their_maximum)
{
    struct network_buffer_pool *g;
    struct local_buffer_pool *a, *b;
    struct net_buffer *bufs[8];
    struct metric_level used = { 0 }, cap = { 0 };
    spate_error err;

    cr_assert_eq(network_buffer_pool_new(4096, 8, &g, &err), 0);
    cr_assert_eq(local_buffer_pool_new(g, 3, 5, NULL, &used, &cap, &a, &err), 0);
    cr_assert_eq(network_buffer_pool_available(g), 5, "the minimum is taken at once");
    cr_assert_eq(metric_level_get(&cap), 5);
    for (int i = 0; i < 5; i++) {
        bufs[i] = local_buffer_pool_request(a);
        cr_assert_not_null(bufs[i]);
        cr_assert_eq(bufs[i]->capacity, 4096);
    }
    cr_assert_null(local_buffer_pool_request(a), "past the maximum");
    cr_assert_eq(metric_level_get(&used), 5);
    /* 3 left in the global pool: a second pool that wants 4 cannot start. */
    cr_assert_eq(local_buffer_pool_new(g, 4, 4, NULL, NULL, NULL, &b, &err), SPATE_ENOMEM);
    cr_assert(strstr(err.message, "insufficient number of network buffers") != NULL);
    cr_assert_eq(network_buffer_pool_available(g), 3, "a failed pool gives back what it took");
    for (int i = 0; i < 5; i++)
        net_buffer_recycle(bufs[i]);
    cr_assert_eq(metric_level_get(&used), 0);
    local_buffer_pool_destroy(a);
    cr_assert_eq(network_buffer_pool_available(g), 8);
    network_buffer_pool_free(g);
}

Test(buffer, recycling_pokes_the_waiter_and_outlives_the_pool)
{
    struct network_buffer_pool *g;
    struct local_buffer_pool *a;
    struct net_buffer *x, *y;
    struct notifier n;
    spate_error err;

    cr_assert_eq(notifier_init(&n, &err), 0);
    cr_assert_eq(network_buffer_pool_new(4096, 4, &g, &err), 0);
    cr_assert_eq(local_buffer_pool_new(g, 2, 2, &n, NULL, NULL, &a, &err), 0);
    x = local_buffer_pool_request(a);
    y = local_buffer_pool_request(a);
    cr_assert_null(local_buffer_pool_request(a));
    cr_assert_eq(notifier_wait_until(&n, 0), 0, "nothing came back yet");
    net_buffer_recycle(x);
    cr_assert_eq(notifier_wait_until(&n, 0), 1, "the waiter is poked");
    /* The pool goes while y is still out: y goes to the global pool later. */
    local_buffer_pool_destroy(a);
    cr_assert_eq(network_buffer_pool_available(g), 3);
    net_buffer_recycle(y);
    cr_assert_eq(network_buffer_pool_available(g), 4);
    network_buffer_pool_free(g);
    notifier_release(&n);
}

/* Under backpressure a waiting producer is poked once half of what its pool
 * holds beyond its minimum is back, not per buffer; and once all but its
 * minimum is back even when the global pool let it take fewer buffers than
 * that threshold (else it would wait for buffers that cannot come). */
Test(buffer, a_waiting_producer_is_poked_when_half_its_pool_is_back)
{
    struct network_buffer_pool *g;
    struct local_buffer_pool *a;
    struct net_buffer *bufs[10], *taken[12];
    struct notifier n;
    spate_error err;

    cr_assert_eq(notifier_init(&n, &err), 0);
    cr_assert_eq(network_buffer_pool_new(4096, 16, &g, &err), 0);
    /* min 2, max 10: poked when 5 are free. */
    cr_assert_eq(local_buffer_pool_new(g, 2, 10, &n, NULL, NULL, &a, &err), 0);
    for (int i = 0; i < 10; i++)
        cr_assert_not_null(bufs[i] = local_buffer_pool_request(a));
    cr_assert_null(local_buffer_pool_request(a));
    for (int i = 0; i < 4; i++) {
        net_buffer_recycle(bufs[i]);
        cr_assert_eq(notifier_wait_until(&n, 0), 0, "poked with only %d back", i + 1);
    }
    net_buffer_recycle(bufs[4]);
    cr_assert_eq(notifier_wait_until(&n, 0), 1, "not poked with half back");
    for (int i = 5; i < 10; i++)
        net_buffer_recycle(bufs[i]);
    local_buffer_pool_destroy(a);

    /* The global pool has 8 left for a pool of max 10: it can hold 4 (its
     * minimum 2, and 2 more while more than a quarter of 16 stay free). */
    for (int i = 0; i < 8; i++)
        cr_assert_not_null(taken[i] = network_buffer_pool_request(g), "global %d", i);
    cr_assert_eq(network_buffer_pool_available(g), 8);
    cr_assert_eq(local_buffer_pool_new(g, 2, 10, &n, NULL, NULL, &a, &err), 0);
    {
        struct net_buffer *held[4];

        for (int i = 0; i < 4; i++)
            cr_assert_not_null(held[i] = local_buffer_pool_request(a));
        cr_assert_null(local_buffer_pool_request(a), "the global pool keeps its last quarter");
        cr_assert_eq(network_buffer_pool_available(g), 4);
        net_buffer_recycle(held[0]);
        cr_assert_eq(notifier_wait_until(&n, 0), 0, "3 out, more than the minimum");
        net_buffer_recycle(held[1]);
        cr_assert_eq(notifier_wait_until(&n, 0), 1, "only the minimum out: poked");
        net_buffer_recycle(held[2]);
        net_buffer_recycle(held[3]);
    }
    local_buffer_pool_destroy(a);
    for (int i = 0; i < 8; i++)
        net_buffer_recycle(taken[i]);
    cr_assert_eq(network_buffer_pool_available(g), 16);
    network_buffer_pool_free(g);
    notifier_release(&n);
}

Test(buffer, a_pool_detached_from_its_metrics_never_touches_them_again)
{
    struct network_buffer_pool *g;
    struct local_buffer_pool *a;
    struct net_buffer *b1, *b2;
    struct metric_level used = { 0 }, cap = { 0 };
    spate_error err;

    cr_assert_eq(network_buffer_pool_new(4096, 4, &g, &err), 0);
    cr_assert_eq(local_buffer_pool_new(g, 1, 3, NULL, &used, &cap, &a, &err), 0);
    b1 = local_buffer_pool_request(a);
    b2 = local_buffer_pool_request(a);
    cr_assert_eq(metric_level_get(&used), 2);
    /* The producer goes while a consumer holds its buffers: its metrics
     * (freed with it) get back what the pool added and nothing more. */
    local_buffer_pool_detach_metrics(a);
    cr_assert_eq(metric_level_get(&used), 0);
    cr_assert_eq(metric_level_get(&cap), 0);
    net_buffer_recycle(b1);
    b1 = local_buffer_pool_request(a);
    cr_assert_not_null(b1, "the pool still serves");
    cr_assert_eq(metric_level_get(&used), 0, "requests after the detach count nowhere");
    net_buffer_recycle(b1);
    local_buffer_pool_destroy(a);
    net_buffer_recycle(b2);
    cr_assert_eq(metric_level_get(&used), 0, "recycling after the detach counts nowhere");
    cr_assert_eq(metric_level_get(&cap), 0, "the pool's memory goes without touching them");
    cr_assert_eq(network_buffer_pool_available(g), 4);
    network_buffer_pool_free(g);
}

Test(buffer, event_buffers_come_from_the_heap)
{
    uint32_t payload = 77;
    struct net_buffer *e = net_buffer_new_event(42, &payload, sizeof payload);

    cr_assert_eq(e->type, NET_BUFFER_EVENT);
    cr_assert_eq(net_buffer_event_type(e), 42);
    cr_assert_eq(e->size, 8);
    net_buffer_recycle(e);
}

struct churn {
    struct local_buffer_pool *pool;
    struct net_buffer *handoff[64];
    _Atomic int head, tail;
    struct notifier n;
    int rounds;
};

/* The consumer side: recycles whatever the producer hands over. */
static void *
recycler(void *arg)
{
    struct churn *c = arg;
    int done = 0;

    while (done < c->rounds) {
        int t = atomic_load_explicit(&c->tail, memory_order_acquire);
        int h = atomic_load_explicit(&c->head, memory_order_relaxed);

        if (h == t)
            continue;
        net_buffer_recycle(c->handoff[h % 64]);
        atomic_store_explicit(&c->head, h + 1, memory_order_release);
        done++;
    }
    return NULL;
}

Test(buffer, a_producer_waits_for_buffers_another_thread_recycles, .timeout = 60)
{
    struct network_buffer_pool *g;
    struct churn c = { .rounds = 50000 };
    pthread_t t;
    spate_error err;

    cr_assert_eq(notifier_init(&c.n, &err), 0);
    cr_assert_eq(network_buffer_pool_new(4096, 4, &g, &err), 0);
    cr_assert_eq(local_buffer_pool_new(g, 1, 3, &c.n, NULL, NULL, &c.pool, &err), 0);
    pthread_create(&t, NULL, recycler, &c);
    for (int i = 0; i < c.rounds; i++) {
        struct net_buffer *b;

        /* The task's loop: request; none left → wait for a poke. */
        while ((b = local_buffer_pool_request(c.pool)) == NULL)
            cr_assert_geq(notifier_wait_until(&c.n, NOTIFIER_FOREVER), 0);
        b->data[0] = (uint8_t)i;
        while (atomic_load(&c.tail) - atomic_load(&c.head) >= 64)
            ;
        c.handoff[atomic_load(&c.tail) % 64] = b;
        atomic_store_explicit(&c.tail, atomic_load(&c.tail) + 1, memory_order_release);
    }
    pthread_join(t, NULL);
    local_buffer_pool_destroy(c.pool);
    cr_assert_eq(network_buffer_pool_available(g), 4);
    network_buffer_pool_free(g);
    notifier_release(&c.n);
}

/* Pokes are made after the pool's lock: unsetting the waiter waits out
 * those in flight, so that the producer may release its notifier at once.
 * The recycler pokes a sleeping waiter (an eventfd write, which reads the
 * notifier's fd); under ThreadSanitizer a poke not ordered before the
 * release that follows set_waiter(NULL) is a race on that fd. */
struct late_poke {
    struct net_buffer *bufs[4];
};

static void *
recycle_all(void *arg)
{
    struct late_poke *l = arg;

    for (int i = 0; i < 4; i++)
        net_buffer_recycle(l->bufs[i]);
    return NULL;
}

Test(buffer, no_poke_touches_the_waiter_once_it_is_unset, .timeout = 60)
{
    struct network_buffer_pool *g;
    spate_error err;

    /* 8: the pool's 4 leave more than a quarter free. */
    cr_assert_eq(network_buffer_pool_new(4096, 8, &g, &err), 0);
    for (int round = 0; round < 300; round++) {
        struct local_buffer_pool *pool;
        struct late_poke l;
        struct notifier n;
        pthread_t t;

        cr_assert_eq(notifier_init(&n, &err), 0);
        cr_assert_eq(local_buffer_pool_new(g, 1, 4, &n, NULL, NULL, &pool, &err), 0);
        for (int i = 0; i < 4; i++)
            cr_assert_not_null(l.bufs[i] = local_buffer_pool_request(pool));
        cr_assert_null(local_buffer_pool_request(pool)); /* waiting */
        cr_assert_eq(notifier_begin_sleep(&n), 0);       /* a poke writes the eventfd */
        pthread_create(&t, NULL, recycle_all, &l);
        local_buffer_pool_set_waiter(pool, NULL);
        notifier_end_sleep(&n);
        notifier_release(&n);
        pthread_join(t, NULL);
        local_buffer_pool_destroy(pool);
    }
    cr_assert_eq(network_buffer_pool_available(g), 8);
    network_buffer_pool_free(g);
}

/* A pool takes buffers beyond its minimum only while more than a quarter of
 * the TaskManager's buffers stay free: a partition or gate that starts
 * later still gets its minimum, however busy the first pools are. */
Test(buffer, excess_buffers_leave_a_quarter_for_minimums_to_come)
{
    struct network_buffer_pool *g;
    struct local_buffer_pool *a, *b;
    struct net_buffer *bufs[16];
    int n = 0;
    spate_error err;

    cr_assert_eq(network_buffer_pool_new(4096, 16, &g, &err), 0);
    cr_assert_eq(local_buffer_pool_new(g, 1, 16, NULL, NULL, NULL, &a, &err), 0);
    while (n < 16 && (bufs[n] = local_buffer_pool_request(a)) != NULL)
        n++;
    cr_assert_eq(n, 12, "a pool of max 16 took %d of 16 buffers", n);
    cr_assert_eq(network_buffer_pool_available(g), 4);
    cr_assert_null(network_buffer_pool_request_excess(g));
    cr_assert_eq(local_buffer_pool_new(g, 4, 8, NULL, NULL, NULL, &b, &err), 0, "%s", err.message);
    cr_assert_eq(network_buffer_pool_available(g), 0);
    local_buffer_pool_destroy(b);
    for (int i = 0; i < n; i++)
        net_buffer_recycle(bufs[i]);
    local_buffer_pool_destroy(a);
    cr_assert_eq(network_buffer_pool_available(g), 16);
    network_buffer_pool_free(g);
}
