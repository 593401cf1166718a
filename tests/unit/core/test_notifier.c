/* Unit tests of src/core/notifier.c: wake-ups coalesce and are never lost,
 * deadlines, cancel (also under ThreadSanitizer), no spin while more
 * workers are awake than CPUs. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/clock.h"
#include "core/notifier.h"
#include "../wait.h"

Test(notifier, notifies_coalesce_into_one_wake_up)
{
    struct notifier n;
    spate_error err;

    cr_assert_eq(notifier_init(&n, &err), 0);
    cr_assert_eq(notifier_wait_until(&n, 0), 0, "nothing pending: a timeout");
    for (int i = 0; i < 100; i++)
        notifier_notify(&n);
    cr_assert_eq(notifier_wait_until(&n, NOTIFIER_FOREVER), 1);
    cr_assert_eq(notifier_wait_until(&n, 0), 0, "a hundred notifies, one wake-up");
    notifier_release(&n);
}

Test(notifier, deadline_passes)
{
    struct notifier n;
    spate_error err;
    uint64_t start = clock_mono_ns();

    cr_assert_eq(notifier_init(&n, &err), 0);
    cr_assert_eq(notifier_wait_until(&n, start + 20 * 1000000u), 0);
    cr_assert_geq(clock_mono_ns(), start + 20 * 1000000u, "returned before its deadline");
    notifier_release(&n);
}

struct ping {
    struct notifier n;
    _Atomic long produced;
    long rounds;
};

static void *
pinger(void *arg)
{
    struct ping *p = arg;

    for (long i = 0; i < p->rounds; i++) {
        atomic_fetch_add(&p->produced, 1);
        notifier_notify(&p->n);
    }
    return NULL;
}

Test(notifier, no_wake_up_is_lost_across_threads, .timeout = 60)
{
    struct ping p = { .rounds = 200000 };
    pthread_t t;
    spate_error err;
    long seen = 0;

    cr_assert_eq(notifier_init(&p.n, &err), 0);
    pthread_create(&t, NULL, pinger, &p);
    /* The waiter's contract: check state, wait, check again. A lost wake-up
     * would block here forever (the test's timeout). */
    while (seen < p.rounds) {
        long now = atomic_load(&p.produced);

        if (now > seen) {
            seen = now;
            continue;
        }
        cr_assert_geq(notifier_wait_until(&p.n, NOTIFIER_FOREVER), 0);
    }
    pthread_join(t, NULL);
    notifier_release(&p.n);
}

static void *
canceller(void *arg)
{
    notifier_cancel(arg);
    return NULL;
}

Test(notifier, cancel_wakes_and_sticks)
{
    struct notifier n;
    pthread_t t;
    spate_error err;

    cr_assert_eq(notifier_init(&n, &err), 0);
    pthread_create(&t, NULL, canceller, &n);
    cr_assert_eq(notifier_wait_until(&n, NOTIFIER_FOREVER), SPATE_ECANCELED);
    pthread_join(t, NULL);
    cr_assert(notifier_is_cancelled(&n));
    cr_assert_eq(notifier_wait_until(&n, NOTIFIER_FOREVER), SPATE_ECANCELED);
    notifier_release(&n);
}

static void *
waiter(void *arg)
{
    return (void *)(intptr_t)notifier_wait_until(arg, NOTIFIER_FOREVER);
}

/* A worker thread: awake until it is told to wait on its notifier. */
struct worker {
    struct notifier n;
    _Atomic bool sleep;
    pthread_t thread;
};

static void *
worker_main(void *arg)
{
    struct worker *w = arg;

    notifier_worker_begin();
    while (!atomic_load(&w->sleep))
        sched_yield();
    notifier_wait_until(&w->n, NOTIFIER_FOREVER);
    notifier_worker_end();
    return NULL;
}

/* With more workers awake than CPUs a wait sleeps at once, however long its
 * spin: spinning alone on a core, it would hold that core from a worker
 * (YSB-like at p2 on two cores: a window task spun on one core while both
 * sources shared the other). Workers asleep in a wait do not count. */
Test(notifier, a_wait_does_not_spin_while_more_workers_are_awake_than_cpus, .timeout = 120)
{
    struct notifier n;
    struct worker *w;
    spate_error err;
    cpu_set_t set;
    pthread_t t;
    void *rc;
    int cpus;

    cr_assert_eq(sched_getaffinity(0, sizeof set, &set), 0);
    cpus = CPU_COUNT(&set);
    w = calloc((size_t)cpus + 1, sizeof *w);
    cr_assert(notifier_spin_allowed(), "no workers");
    for (int i = 0; i <= cpus; i++) {
        cr_assert_eq(notifier_init(&w[i].n, &err), 0);
        notifier_set_spin(&w[i].n, 0);
        pthread_create(&w[i].thread, NULL, worker_main, &w[i]);
    }
    WAIT_FOR(!notifier_spin_allowed(), 30, "the workers to be counted awake");
    cr_assert_eq(notifier_init(&n, &err), 0);
    notifier_set_spin(&n, 3600ull * 1000000000u); /* an hour */
    pthread_create(&t, NULL, waiter, &n);
    WAIT_FOR(atomic_load(&n.sleeping), 30, "the waiter to sleep rather than spin for an hour");
    notifier_notify(&n);
    pthread_join(t, &rc);
    cr_assert_eq((intptr_t)rc, 1, "woken by the notify");
    /* It slept without a yield: not through the rule that stops a spin
     * whose yield came back late, which sets no_spin_until_ns. */
    cr_assert_eq(n.no_spin_until_ns, 0, "the waiter spun before it slept");

    /* The workers asleep: a wait may spin again. */
    for (int i = 0; i <= cpus; i++)
        atomic_store(&w[i].sleep, true);
    for (int i = 0; i <= cpus; i++)
        WAIT_FOR(atomic_load(&w[i].n.sleeping), 30, "every worker to sleep in its wait");
    cr_assert(notifier_spin_allowed(), "workers asleep in a wait are not counted awake");
    for (int i = 0; i <= cpus; i++) {
        notifier_notify(&w[i].n);
        pthread_join(w[i].thread, NULL);
        notifier_release(&w[i].n);
    }
    cr_assert(notifier_spin_allowed(), "no workers");
    free(w);
    notifier_release(&n);
}
