/* A task's wake-up primitive: an eventfd that other threads poke when they make
 * something available to the task (a buffer, a recycled output buffer, a
 * mail); notifies coalesce into one write(2), a sticky cancel flag wakes any
 * wait at once, and a wait polls briefly before it sleeps. The task thread
 * waits; any thread notifies or cancels. */
#ifndef SPATE_CORE_NOTIFIER_H
#define SPATE_CORE_NOTIFIER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <spate/error.h>

#define NOTIFIER_FOREVER UINT64_MAX

struct notifier {
    int fd;
    /* Set by the first notify since the waiter last consumed; later notifies
     * skip the write. */
    _Atomic bool pending;
    /* The waiter is about to block in poll: only then does a notify write
     * the eventfd (a spinning or busy waiter costs the notifier no syscall). */
    _Atomic bool sleeping;
    _Atomic bool cancelled;
    uint64_t spin_ns;          /* the waiter's: how long a wait polls before sleeping */
    uint64_t no_spin_until_ns; /* the waiter's: spinning lost the core lately */
};

/* How long a wait polls (yielding the core) before it sleeps, by default. */
#define NOTIFIER_SPIN_NS 200000u
/* A yield that returns this late means the core is contended: the waiter then
 * sleeps at once for NOTIFIER_NO_SPIN_NS before it tries spinning again. */
#define NOTIFIER_PREEMPTED_NS 300000u
#define NOTIFIER_NO_SPIN_NS   10000000u

int notifier_init(struct notifier *n, spate_error *err);
/* Waiter thread: poll this long before sleeping (0: sleep at once), e.g.
 * taskmanager.network.busy-poll. */
void notifier_set_spin(struct notifier *n, uint64_t spin_ns);
/* The calling thread is a worker (a task thread) from begin to end. No wait
 * polls while more workers are awake (working, or polling in a wait) than
 * the process has CPUs: a waiter spinning alone on a core holds it from a
 * thread with work, which the scheduler does not move there because the
 * core looks busy. A worker sleeping in a wait is not awake. */
void notifier_worker_begin(void);
void notifier_worker_end(void);
/* Whether a wait may poll now: no more workers awake than CPUs. */
bool notifier_spin_allowed(void);
void notifier_release(struct notifier *n);

/* Any thread. The notifier is a hint: publish the state change first, then
 * notify; the waiter re-checks its state after every wake-up. */
void notifier_notify(struct notifier *n);
/* Waiter thread. Returns 1 when notified (possibly spuriously), 0 when
 * deadline_ns (CLOCK_MONOTONIC; 0: do not block, NOTIFIER_FOREVER) passed,
 * SPATE_ECANCELED once notifier_cancel was called. */
int notifier_wait_until(struct notifier *n, uint64_t deadline_ns);
/* Any thread: sets the sticky cancel flag and wakes the waiter. */
void notifier_cancel(struct notifier *n);
bool notifier_is_cancelled(struct notifier *n);
/* For a larger poll set: the fd is readable after a notify that came while
 * the waiter was sleeping; a waiter that polls it itself brackets its poll
 * with notifier_begin_sleep (which returns 1 when a notify is already
 * pending: do not sleep) and notifier_end_sleep. */
int notifier_fd(const struct notifier *n);
int notifier_begin_sleep(struct notifier *n);
void notifier_end_sleep(struct notifier *n);

#endif
