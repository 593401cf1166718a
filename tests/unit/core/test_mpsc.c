/* Unit tests of src/core/mpsc.c: FIFO per producer, nothing lost or doubled
 * with several producer threads (also run under ThreadSanitizer). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>

#include "core/mpsc.h"
#include "core/util.h"

struct item {
    struct mpsc_node node;
    int producer;
    int seq;
};

Test(mpsc, empty_queue_pops_null)
{
    struct mpsc_queue q;

    mpsc_init(&q);
    cr_assert(mpsc_is_empty(&q));
    cr_assert_null(mpsc_pop(&q));
}

Test(mpsc, single_thread_fifo)
{
    struct mpsc_queue q;
    struct item items[10];

    mpsc_init(&q);
    for (int i = 0; i < 10; i++) {
        items[i].seq = i;
        mpsc_push(&q, &items[i].node);
    }
    cr_assert(!mpsc_is_empty(&q));
    for (int i = 0; i < 10; i++) {
        struct mpsc_node *n = mpsc_pop(&q);

        cr_assert_not_null(n);
        cr_assert_eq(container_of(n, struct item, node)->seq, i);
    }
    cr_assert_null(mpsc_pop(&q));
    cr_assert(mpsc_is_empty(&q));
    /* Reusable after draining. */
    mpsc_push(&q, &items[3].node);
    cr_assert_eq(mpsc_pop(&q), &items[3].node);
}

#define PRODUCERS    4
#define PER_PRODUCER 50000

struct producer {
    pthread_t thread;
    struct mpsc_queue *q;
    struct item *items;
    int id;
};

static void *
produce(void *arg)
{
    struct producer *p = arg;

    for (int i = 0; i < PER_PRODUCER; i++) {
        p->items[i].producer = p->id;
        p->items[i].seq = i;
        mpsc_push(p->q, &p->items[i].node);
    }
    return NULL;
}

Test(mpsc, many_producers_lose_nothing_and_keep_each_order, .timeout = 60)
{
    struct mpsc_queue q;
    struct producer prods[PRODUCERS];
    int next[PRODUCERS] = { 0 };
    int received = 0;

    mpsc_init(&q);
    for (int p = 0; p < PRODUCERS; p++) {
        prods[p].q = &q;
        prods[p].id = p;
        prods[p].items = calloc(PER_PRODUCER, sizeof(struct item));
        pthread_create(&prods[p].thread, NULL, produce, &prods[p]);
    }
    while (received < PRODUCERS * PER_PRODUCER) {
        struct mpsc_node *n = mpsc_pop(&q);
        struct item *it;

        if (n == NULL)
            continue;
        it = container_of(n, struct item, node);
        cr_assert_eq(it->seq, next[it->producer], "producer %d: got %d, want %d", it->producer,
                     it->seq, next[it->producer]);
        next[it->producer]++;
        received++;
    }
    for (int p = 0; p < PRODUCERS; p++) {
        pthread_join(prods[p].thread, NULL);
        cr_assert_eq(next[p], PER_PRODUCER);
        free(prods[p].items);
    }
    cr_assert_null(mpsc_pop(&q));
}
