/* Mailboxes (mailbox.h): MPSC queue + uv_async_t. */
#include "core/mailbox.h"
#include "core/util.h"

static bool
mailbox_drain(struct mailbox *mb)
{
    struct mpsc_node *node;
    bool any = false;

    while ((node = mpsc_pop(&mb->queue)) != NULL) {
        mb->deliver(mb, node);
        any = true;
    }
    return any;
}

static void
mailbox_on_async(uv_async_t *async)
{
    mailbox_drain(container_of(async, struct mailbox, async));
}

int
mailbox_init(uv_loop_t *loop, struct mailbox *mb, mailbox_deliver_cb deliver)
{
    mpsc_init(&mb->queue);
    mb->deliver = deliver;
    mb->on_close = NULL;
    atomic_init(&mb->polling, false);
    return uv_async_init(loop, &mb->async, mailbox_on_async);
}

void
mailbox_post(struct mailbox *mb, struct mpsc_node *node)
{
    mpsc_push(&mb->queue, node);
    /* The push's last store (the link to the node) must be visible before
     * uv_async_send reads the handle's pending flag: it returns without a
     * wake-up when it sees the flag set, trusting the loop's coming callback
     * to drain the queue. Without this fence the load can pass the store
     * (x86 lets it), the loop can clear the flag and drain before the link
     * is visible, and the node sits in the queue with nobody woken. */
    atomic_thread_fence(memory_order_seq_cst);
    /* A polling loop finds the node itself (mailbox_set_polling's store and
     * this load are ordered against the push by the fences: either the loop
     * sees the node or this sees polling off). */
    if (atomic_load_explicit(&mb->polling, memory_order_relaxed))
        return;
    /* Coalesces: many posts before the loop wakes cost one callback. */
    uv_async_send(&mb->async);
}

void
mailbox_set_polling(struct mailbox *mb, bool polling)
{
    atomic_store_explicit(&mb->polling, polling, memory_order_relaxed);
    if (polling)
        return;
    /* seq_cst: pairs with mailbox_post's fence (Dekker). A post that saw
     * polling on has pushed its node: deliver it (and any push still half
     * done) before the loop sleeps. */
    atomic_thread_fence(memory_order_seq_cst);
    while (!mpsc_is_empty(&mb->queue))
        mailbox_drain(mb);
}

bool
mailbox_poll(struct mailbox *mb)
{
    return mailbox_drain(mb);
}

static void
mailbox_on_closed(uv_handle_t *handle)
{
    struct mailbox *mb = container_of((uv_async_t *)handle, struct mailbox, async);

    mailbox_drain(mb);
    if (mb->on_close != NULL)
        mb->on_close(mb);
}

void
mailbox_close(struct mailbox *mb, mailbox_close_cb on_close)
{
    mb->on_close = on_close;
    mailbox_drain(mb);
    uv_close((uv_handle_t *)&mb->async, mailbox_on_closed);
}
