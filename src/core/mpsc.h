/* An intrusive multi-producer single-consumer queue (Dmitry Vyukov's
 * non-blocking design): any thread may push, one thread pops. Push is wait-free
 * (one atomic exchange); pop never blocks and may briefly see the queue empty
 * while a push is half done, so a consumer must be woken after each push (the
 * mailbox does that). Nodes are embedded in the caller's structs. */
#ifndef SPATE_CORE_MPSC_H
#define SPATE_CORE_MPSC_H

#include <stdatomic.h>
#include <stdbool.h>

struct mpsc_node {
    struct mpsc_node *_Atomic next;
};

struct mpsc_queue {
    /* Producers swap themselves in here; on its own cache line, away from the
     * consumer's tail. */
    _Alignas(64) struct mpsc_node *_Atomic head;
    _Alignas(64) struct mpsc_node *tail; /* consumer only */
    struct mpsc_node stub;
};

void mpsc_init(struct mpsc_queue *q);
/* Any thread. The node must stay valid until popped. */
void mpsc_push(struct mpsc_queue *q, struct mpsc_node *node);
/* Consumer thread only. NULL when empty, or when the next node's push is not
 * yet complete (its producer's wake-up follows). */
struct mpsc_node *mpsc_pop(struct mpsc_queue *q);
/* Consumer thread only: true when nothing is queued or being queued. */
bool mpsc_is_empty(struct mpsc_queue *q);

#endif
