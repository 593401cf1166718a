/* Unit tests of src/core/notifier.c: wake-ups coalesce and are never lost,
 * deadlines, cancel (also under ThreadSanitizer). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>

#include "core/clock.h"
#include "core/notifier.h"

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
