/* The MPSC queue of mpsc.h. Memory orders: a producer publishes its node with
 * the release store of the predecessor's `next`; the consumer's acquire load of
 * `next` therefore sees everything the producer wrote before pushing. */
#include <stddef.h>

#include "core/mpsc.h"

void
mpsc_init(struct mpsc_queue *q)
{
    atomic_store_explicit(&q->stub.next, NULL, memory_order_relaxed);
    atomic_store_explicit(&q->head, &q->stub, memory_order_relaxed);
    q->tail = &q->stub;
}

void
mpsc_push(struct mpsc_queue *q, struct mpsc_node *node)
{
    struct mpsc_node *prev;

    atomic_store_explicit(&node->next, NULL, memory_order_relaxed);
    /* acq_rel: orders this exchange with other producers' exchanges. */
    prev = atomic_exchange_explicit(&q->head, node, memory_order_acq_rel);
    atomic_store_explicit(&prev->next, node, memory_order_release);
}

struct mpsc_node *
mpsc_pop(struct mpsc_queue *q)
{
    struct mpsc_node *tail = q->tail;
    struct mpsc_node *next = atomic_load_explicit(&tail->next, memory_order_acquire);

    if (tail == &q->stub) {
        if (next == NULL)
            return NULL;
        q->tail = next;
        tail = next;
        next = atomic_load_explicit(&next->next, memory_order_acquire);
    }
    if (next != NULL) {
        q->tail = next;
        return tail;
    }
    if (tail != atomic_load_explicit(&q->head, memory_order_acquire))
        return NULL; /* a producer is between its exchange and its link */
    /* tail is the last node: put the stub behind it so that tail can go. */
    mpsc_push(q, &q->stub);
    next = atomic_load_explicit(&tail->next, memory_order_acquire);
    if (next != NULL) {
        q->tail = next;
        return tail;
    }
    return NULL;
}

bool
mpsc_is_empty(struct mpsc_queue *q)
{
    return q->tail == &q->stub &&
           atomic_load_explicit(&q->stub.next, memory_order_acquire) == NULL &&
           atomic_load_explicit(&q->head, memory_order_acquire) == &q->stub;
}
