/* A mailbox: the way other threads hand work to a libuv loop. An MPSC queue
 * plus a uv_async_t; posts from any thread coalesce into one wake-up, and the
 * loop thread's callback drains the whole queue, one node at a time, in the
 * order each producer posted them. The mailbox belongs to its loop's thread:
 * init and close run there; post runs anywhere until close. */
#ifndef SPATE_CORE_MAILBOX_H
#define SPATE_CORE_MAILBOX_H

#include <stdbool.h>
#include <uv.h>

#include "core/mpsc.h"

struct mailbox;

/* Runs on the loop thread for each node drained. */
typedef void (*mailbox_deliver_cb)(struct mailbox *mb, struct mpsc_node *node);
typedef void (*mailbox_close_cb)(struct mailbox *mb);

struct mailbox {
    uv_async_t async;
    struct mpsc_queue queue;
    mailbox_deliver_cb deliver;
    mailbox_close_cb on_close;
    void *data; /* the owner's */
    /* Set by the loop thread while it polls the queue itself (a busy-polling
     * loop): posts then skip the wake-up. */
    _Atomic bool polling;
};

int mailbox_init(uv_loop_t *loop, struct mailbox *mb, mailbox_deliver_cb deliver);
/* Any thread, until mailbox_close is called. */
void mailbox_post(struct mailbox *mb, struct mpsc_node *node);
/* Loop thread, for a loop that busy-polls: while polling is on, posts do not
 * wake the loop and mailbox_poll must be called; turning it off delivers what
 * was posted meanwhile before it returns. */
void mailbox_set_polling(struct mailbox *mb, bool polling);
/* Loop thread: delivers what is queued; true when it delivered anything. */
bool mailbox_poll(struct mailbox *mb);
/* Loop thread. Delivers what is still queued, then closes the handle; on_close
 * (may be NULL) runs when the memory may be freed. */
void mailbox_close(struct mailbox *mb, mailbox_close_cb on_close);

#endif
