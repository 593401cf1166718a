/* Unit tests of src/core/mailbox.c: several threads post to a libuv loop;
 * every message is delivered once, on the loop thread, in each producer's
 * order, and close delivers what is left (also run under ThreadSanitizer). */
#include <criterion/criterion.h>
#include <sched.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
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

/* Two posts in quick succession, then wait for both, many times: the second
 * post finds the async handle pending and relies on the loop's callback to
 * drain it, so a link not yet visible to that drain would be lost and the
 * wait below would never end (the test's timeout). A stress test: the race
 * it guards (mailbox_post's fence) stalled a network benchmark once in many
 * millions of posts, and this test does not hit it reliably without the
 * fence. */
#define BURSTS 100000

struct burst {
    struct mailbox mb;
    struct mpsc_node nodes[2];
    _Atomic int delivered;
    _Atomic bool stop;
};

static void
burst_deliver(struct mailbox *mb, struct mpsc_node *node)
{
    struct burst *b = mb->data;

    UNUSED(node);
    atomic_fetch_add(&b->delivered, 1);
}

static void
burst_stop(uv_async_t *a)
{
    struct burst *b = a->data;

    atomic_store(&b->stop, true);
}

/* A busy loop (as the network I/O loop while it polls): it drains while the
 * poster is still posting, which opens the window. */
static void *
burst_loop(void *arg)
{
    struct burst *b = arg;

    /* Yielding between polls, as the network I/O loop does: with more
     * spinning threads than cores (criterion runs tests side by side) a
     * spin that never yields holds the core for a whole time slice. */
    while (!atomic_load(&b->stop)) {
        uv_run(b->mb.async.loop, UV_RUN_NOWAIT);
        sched_yield();
    }
    return NULL;
}

Test(mailbox, no_post_is_lost_to_a_draining_loop, .timeout = 60)
{
    uv_loop_t loop;
    uv_async_t stop;
    struct burst b;
    pthread_t t;

    uv_loop_init(&loop);
    atomic_init(&b.delivered, 0);
    atomic_init(&b.stop, false);
    cr_assert_eq(mailbox_init(&loop, &b.mb, burst_deliver), 0);
    b.mb.data = &b;
    uv_async_init(&loop, &stop, burst_stop);
    stop.data = &b;
    pthread_create(&t, NULL, burst_loop, &b);
    for (int i = 0; i < BURSTS; i++) {
        mailbox_post(&b.mb, &b.nodes[0]);
        /* Sweep the gap across the loop's reaction time, so that the second
         * post lands while the loop drains the first. */
        for (volatile int k = 0; k < (i * 7) % 600; k++)
            ;
        mailbox_post(&b.mb, &b.nodes[1]);
        while (atomic_load(&b.delivered) < 2 * (i + 1))
            sched_yield(); /* a lost post spins here until the timeout */
    }
    uv_async_send(&stop);
    pthread_join(t, NULL);
    mailbox_close(&b.mb, NULL);
    uv_close((uv_handle_t *)&stop, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    cr_assert_eq(uv_loop_close(&loop), 0);
}

/* A busy-polling loop (the network I/O loop): posts made while it polls skip
 * the wake-up, and switching polling off delivers them before the loop
 * blocks. The loop alternates polling and blocking; a post lost in a switch
 * would leave it blocked forever (the test's timeout). */
#define POLL_POSTS 50000

struct polled {
    struct mailbox mb;
    struct mpsc_node *nodes;
    _Atomic long delivered;
};

static void
polled_deliver(struct mailbox *mb, struct mpsc_node *node)
{
    struct polled *p = mb->data;

    UNUSED(node);
    atomic_fetch_add(&p->delivered, 1);
}

/* One post at a time, each waited for: a post that the switch drops is never
 * followed by another that would wake the loop. */
static void *
polled_poster(void *arg)
{
    struct polled *p = arg;

    for (long i = 0; i < POLL_POSTS; i++) {
        mailbox_post(&p->mb, &p->nodes[i]);
        while (atomic_load(&p->delivered) <= i)
            sched_yield();
    }
    return NULL;
}

Test(mailbox, a_polling_loop_gets_every_post, .timeout = 60)
{
    uv_loop_t loop;
    struct polled p = { .nodes = calloc(POLL_POSTS, sizeof(struct mpsc_node)) };
    pthread_t t;

    uv_loop_init(&loop);
    cr_assert_eq(mailbox_init(&loop, &p.mb, polled_deliver), 0);
    p.mb.data = &p;
    pthread_create(&t, NULL, polled_poster, &p);
    for (int round = 0; atomic_load(&p.delivered) < POLL_POSTS; round++) {
        mailbox_set_polling(&p.mb, true);
        for (int i = 0; i < round % 7; i++)
            mailbox_poll(&p.mb);
        mailbox_set_polling(&p.mb, false);
        if (atomic_load(&p.delivered) < POLL_POSTS)
            uv_run(&loop, UV_RUN_ONCE); /* blocks until a post wakes it */
    }
    pthread_join(t, NULL);
    cr_assert_eq(atomic_load(&p.delivered), POLL_POSTS);
    mailbox_close(&p.mb, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    cr_assert_eq(uv_loop_close(&loop), 0);
    free(p.nodes);
}
