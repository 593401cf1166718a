/* The eventfd notifier of notifier.h.
 * Memory orders: the notifier carries no data; the state it announces is
 * published by the notifier's callers with their own release/acquire (locks or
 * atomics). `pending` is exchanged seq_cst on both sides so that a notify
 * racing with a waiter that clears `pending` either sees it cleared (and
 * writes the eventfd) or was seen by the waiter's re-check of its state. */
#include <poll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/notifier.h"

int
notifier_init(struct notifier *n, spate_error *err)
{
    n->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (n->fd < 0)
        return spate_error_set(err, -errno, "cannot create an eventfd: %s", spate_strerror(-errno));
    atomic_init(&n->pending, false);
    atomic_init(&n->cancelled, false);
    return 0;
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
    if (!atomic_exchange_explicit(&n->pending, true, memory_order_seq_cst))
        notifier_poke(n);
}

void
notifier_cancel(struct notifier *n)
{
    atomic_store_explicit(&n->cancelled, true, memory_order_seq_cst);
    notifier_poke(n);
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

static void
notifier_consume(struct notifier *n)
{
    uint64_t count;

    while (read(n->fd, &count, sizeof count) < 0 && errno == EINTR)
        ;
    atomic_store_explicit(&n->pending, false, memory_order_seq_cst);
}

int
notifier_wait_until(struct notifier *n, uint64_t deadline_ns)
{
    struct pollfd pfd = { .fd = n->fd, .events = POLLIN };

    for (;;) {
        uint64_t now;
        struct timespec ts, *tsp = NULL;
        int rc;

        if (notifier_is_cancelled(n))
            return SPATE_ECANCELED;
        if (atomic_load_explicit(&n->pending, memory_order_seq_cst)) {
            notifier_consume(n);
            return 1;
        }
        if (deadline_ns != NOTIFIER_FOREVER) {
            now = clock_mono_ns();
            if (now >= deadline_ns)
                return 0;
            ts.tv_sec = (time_t)((deadline_ns - now) / 1000000000u);
            ts.tv_nsec = (long)((deadline_ns - now) % 1000000000u);
            tsp = &ts;
        }
        rc = ppoll(&pfd, 1, tsp, NULL);
        if (rc > 0) {
            if (notifier_is_cancelled(n))
                return SPATE_ECANCELED;
            notifier_consume(n);
            return 1;
        }
        if (rc < 0 && errno != EINTR)
            return -errno;
    }
}
