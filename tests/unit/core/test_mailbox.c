/* Unit tests of src/core/mailbox.c: several threads post to a libuv loop;
 * every message is delivered once, on the loop thread, in each producer's
 * order, and close delivers what is left (also run under ThreadSanitizer). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>

#include "core/mailbox.h"
#include "core/util.h"

#define PRODUCERS    4
#define PER_PRODUCER 20000

struct msg {
    struct mpsc_node node;
    int producer;
    int seq;
};

struct state {
    struct mailbox mb;
    pthread_t loop_thread;
    int next[PRODUCERS];
    int delivered;
    int closed;
};

static void
deliver(struct mailbox *mb, struct mpsc_node *node)
{
    struct state *st = mb->data;
    struct msg *m = container_of(node, struct msg, node);

    cr_assert(pthread_equal(pthread_self(), st->loop_thread));
    cr_assert_eq(m->seq, st->next[m->producer]);
    st->next[m->producer]++;
    st->delivered++;
    free(m);
    if (st->delivered == PRODUCERS * PER_PRODUCER)
        mailbox_close(mb, NULL);
}

struct producer {
    struct mailbox *mb;
    int id;
};

static void *
produce(void *arg)
{
    struct producer *p = arg;

    for (int i = 0; i < PER_PRODUCER; i++) {
        struct msg *m = malloc(sizeof *m);

        m->producer = p->id;
        m->seq = i;
        mailbox_post(p->mb, &m->node);
    }
    return NULL;
}

Test(mailbox, many_threads_post_loop_drains_in_order, .timeout = 60)
{
    uv_loop_t loop;
    struct state st = { 0 };
    struct producer prods[PRODUCERS];
    pthread_t threads[PRODUCERS];

    uv_loop_init(&loop);
    st.loop_thread = pthread_self();
    cr_assert_eq(mailbox_init(&loop, &st.mb, deliver), 0);
    st.mb.data = &st;
    for (int p = 0; p < PRODUCERS; p++) {
        prods[p].mb = &st.mb;
        prods[p].id = p;
        pthread_create(&threads[p], NULL, produce, &prods[p]);
    }
    /* Runs until deliver() closes the mailbox after the last message. */
    uv_run(&loop, UV_RUN_DEFAULT);
    for (int p = 0; p < PRODUCERS; p++) {
        pthread_join(threads[p], NULL);
        cr_assert_eq(st.next[p], PER_PRODUCER);
    }
    cr_assert_eq(uv_loop_close(&loop), 0);
}

static void
count_only(struct mailbox *mb, struct mpsc_node *node)
{
    struct state *st = mb->data;

    st->delivered++;
    free(container_of(node, struct msg, node));
}

static void
on_closed(struct mailbox *mb)
{
    ((struct state *)mb->data)->closed = 1;
}

Test(mailbox, close_delivers_what_is_queued)
{
    uv_loop_t loop;
    struct state st = { 0 };

    uv_loop_init(&loop);
    cr_assert_eq(mailbox_init(&loop, &st.mb, count_only), 0);
    st.mb.data = &st;
    for (int i = 0; i < 10; i++)
        mailbox_post(&st.mb, &((struct msg *)calloc(1, sizeof(struct msg)))->node);
    mailbox_close(&st.mb, on_closed);
    uv_run(&loop, UV_RUN_DEFAULT);
    cr_assert_eq(st.delivered, 10);
    cr_assert_eq(st.closed, 1);
    cr_assert_eq(uv_loop_close(&loop), 0);
}
