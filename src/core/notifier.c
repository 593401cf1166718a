/* The eventfd notifier of notifier.h. pending and sleeping are seq_cst on both
 * sides (Dekker): a notifier sets pending then reads sleeping, a waiter sets
 * sleeping then reads pending, so either the waiter does not sleep or the
 * notifier writes the eventfd. The state a notify announces is published by
 * its callers with their own locks or atomics. */
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/notifier.h"
#include "core/util.h"

int
notifier_init(struct notifier *n, spate_error *err)
{
    n->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (n->fd < 0)
        return spate_error_set(err, -errno, "cannot create an eventfd: %s", spate_strerror(-errno));
    atomic_init(&n->pending, false);
    atomic_init(&n->sleeping, false);
    atomic_init(&n->cancelled, false);
    n->spin_ns = NOTIFIER_SPIN_NS;
    n->no_spin_until_ns = 0;
    return 0;
}

/* Polling first: a notify that comes within the spin costs no wake-up of a
 * sleeping thread, which is most of a record's latency at low load. An idle
 * task still sleeps: the spin follows only the start of a wait. */
void
notifier_set_spin(struct notifier *n, uint64_t spin_ns)
{
    n->spin_ns = spin_ns;
}

/* Workers awake (notifier_worker_begin), the CPUs (0: not counted yet),
 * and whether the calling thread is a worker. */
static _Atomic int awake;
static _Atomic int cpus;
static _Thread_local bool worker;

void
notifier_worker_begin(void)
{
    worker = true;
    atomic_fetch_add_explicit(&awake, 1, memory_order_relaxed);
}

void
notifier_worker_end(void)
{
    atomic_fetch_sub_explicit(&awake, 1, memory_order_relaxed);
    worker = false;
}

/* The CPUs this process may run on (its affinity mask, as taskset sets). */
static int
cpus_usable(void)
{
    cpu_set_t set;
    int n = atomic_load_explicit(&cpus, memory_order_relaxed);

    if (n > 0)
        return n;
    n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
    if (n <= 0)
        n = (int)sysconf(_SC_NPROCESSORS_ONLN);
    n = MAX(n, 1);
    atomic_store_explicit(&cpus, n, memory_order_relaxed);
    return n;
}

bool
notifier_spin_allowed(void)
{
    return atomic_load_explicit(&awake, memory_order_relaxed) <= cpus_usable();
}

void
notifier_release(struct notifier *n)
{
    if (n->fd >= 0)
        close(n->fd);
    n->fd = -1;
}

static void
notifier_poke(struct notifier *n)
{
    uint64_t one = 1;
    ssize_t rc;

    do {
        rc = write(n->fd, &one, sizeof one);
    } while (rc < 0 && errno == EINTR);
    /* EAGAIN means the counter is near overflow: the waiter is woken anyway. */
}

void
notifier_notify(struct notifier *n)
{
    if (!atomic_exchange_explicit(&n->pending, true, memory_order_seq_cst) &&
        atomic_load_explicit(&n->sleeping, memory_order_seq_cst))
        notifier_poke(n);
}

int
notifier_begin_sleep(struct notifier *n)
{
    atomic_store_explicit(&n->sleeping, true, memory_order_seq_cst);
    if (atomic_load_explicit(&n->pending, memory_order_seq_cst) || notifier_is_cancelled(n)) {
        atomic_store_explicit(&n->sleeping, false, memory_order_relaxed);
        return 1;
    }
    return 0;
}

void
notifier_end_sleep(struct notifier *n)
{
    atomic_store_explicit(&n->sleeping, false, memory_order_relaxed);
}

void
notifier_cancel(struct notifier *n)
{
    atomic_store_explicit(&n->cancelled, true, memory_order_seq_cst);
    notifier_poke(n); /* always: the sticky flag wakes every later wait too */
}

bool
notifier_is_cancelled(struct notifier *n)
{
    /* acquire: whoever cancelled published the reason before. */
    return atomic_load_explicit(&n->cancelled, memory_order_acquire);
}

int
notifier_fd(const struct notifier *n)
{
    return n->fd;
}

/* Takes the pending notify; drains the eventfd only when a poke may be in it. */
static void
notifier_consume(struct notifier *n, bool drain)
{
    uint64_t count;

    atomic_store_explicit(&n->pending, false, memory_order_seq_cst);
    if (drain)
        while (read(n->fd, &count, sizeof count) < 0 && errno == EINTR)
            ;
}

int
notifier_wait_until(struct notifier *n, uint64_t deadline_ns)
{
    struct pollfd pfd = { .fd = n->fd, .events = POLLIN };
    uint64_t now = clock_mono_ns(), spin_until = now + n->spin_ns, before;

    if (deadline_ns != NOTIFIER_FOREVER)
        spin_until = MIN(spin_until, deadline_ns);
    if (now < n->no_spin_until_ns || (spin_until > now && !notifier_spin_allowed()))
        spin_until = now; /* the core was busy lately, or others need the cores */
    for (;;) {
        if (notifier_is_cancelled(n))
            return SPATE_ECANCELED;
        if (atomic_load_explicit(&n->pending, memory_order_seq_cst)) {
            notifier_consume(n, false);
            return 1;
        }
        if (now >= spin_until)
            break;
        before = now;
        sched_yield();
        now = clock_mono_ns();
        if (now - before > NOTIFIER_PREEMPTED_NS) {
            /* The yield gave the core away to someone else for a while: on
             * a busy machine a spinning thread waits for whole time slices,
             * a sleeping one is woken (and preempts) as soon as it is
             * notified. Stop spinning for a while. */
            n->no_spin_until_ns = now + NOTIFIER_NO_SPIN_NS;
            break;
        }
    }
    for (;;) {
        struct timespec ts, *tsp = NULL;
        int rc;

        if (deadline_ns != NOTIFIER_FOREVER) {
            now = clock_mono_ns();
            if (now >= deadline_ns)
                return 0;
            ts.tv_sec = (time_t)((deadline_ns - now) / 1000000000u);
            ts.tv_nsec = (long)((deadline_ns - now) % 1000000000u);
            tsp = &ts;
        }
        if (notifier_begin_sleep(n)) {
            if (notifier_is_cancelled(n))
                return SPATE_ECANCELED;
            notifier_consume(n, false);
            return 1;
        }
        if (worker)
            atomic_fetch_sub_explicit(&awake, 1, memory_order_relaxed);
        rc = ppoll(&pfd, 1, tsp, NULL);
        if (worker)
            atomic_fetch_add_explicit(&awake, 1, memory_order_relaxed);
        notifier_end_sleep(n);
        if (rc > 0) {
            if (notifier_is_cancelled(n))
                return SPATE_ECANCELED;
            notifier_consume(n, true);
            return 1;
        }
        if (rc < 0 && errno != EINTR)
            return -errno;
    }
}
