/* mailbox_bench: how fast threads hand messages to a libuv loop through a
 * mailbox (MPSC queue + uv_async), beside the plain baseline of a mutex and
 * condition variable queue, in the same run. Runs alternate; medians of 5.
 * Last line: a JSON object. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/clock.h"
#include "core/mailbox.h"
#include "core/util.h"

#define MESSAGES 2000000
#define RUNS     5

struct msg {
    struct mpsc_node node;
    struct msg *next; /* baseline's list */
};

static struct msg *msgs;

/* ---- mailbox ---- */

static long mb_received;

static void
mb_deliver(struct mailbox *mb, struct mpsc_node *node)
{
    UNUSED(node);
    if (++mb_received == MESSAGES)
        mailbox_close(mb, NULL);
}

static void *
mb_produce(void *arg)
{
    struct mailbox *mb = arg;

    for (long i = 0; i < MESSAGES; i++)
        mailbox_post(mb, &msgs[i].node);
    return NULL;
}

static double
run_mailbox(void)
{
    uv_loop_t loop;
    struct mailbox mb;
    pthread_t t;
    uint64_t start;

    uv_loop_init(&loop);
    mailbox_init(&loop, &mb, mb_deliver);
    mb_received = 0;
    start = clock_mono_ns();
    pthread_create(&t, NULL, mb_produce, &mb);
    uv_run(&loop, UV_RUN_DEFAULT);
    pthread_join(t, NULL);
    uv_loop_close(&loop);
    return MESSAGES / ((clock_mono_ns() - start) / 1e9);
}

/* ---- baseline: mutex + condvar ---- */

static pthread_mutex_t bl_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t bl_cond = PTHREAD_COND_INITIALIZER;
static struct msg *bl_head, *bl_tail;

static void *
bl_produce(void *arg)
{
    UNUSED(arg);
    for (long i = 0; i < MESSAGES; i++) {
        struct msg *m = &msgs[i];

        m->next = NULL;
        pthread_mutex_lock(&bl_lock);
        if (bl_tail)
            bl_tail->next = m;
        else
            bl_head = m;
        bl_tail = m;
        pthread_cond_signal(&bl_cond);
        pthread_mutex_unlock(&bl_lock);
    }
    return NULL;
}

static double
run_baseline(void)
{
    pthread_t t;
    uint64_t start = clock_mono_ns();
    long received = 0;

    pthread_create(&t, NULL, bl_produce, NULL);
    while (received < MESSAGES) {
        struct msg *batch;

        pthread_mutex_lock(&bl_lock);
        while (bl_head == NULL)
            pthread_cond_wait(&bl_cond, &bl_lock);
        batch = bl_head;
        bl_head = bl_tail = NULL;
        pthread_mutex_unlock(&bl_lock);
        for (; batch; batch = batch->next)
            received++;
    }
    pthread_join(t, NULL);
    return MESSAGES / ((clock_mono_ns() - start) / 1e9);
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

int
main(void)
{
    double mb[RUNS], bl[RUNS];

    msgs = calloc(MESSAGES, sizeof *msgs);
    for (int r = 0; r < RUNS; r++) {
        mb[r] = run_mailbox();
        bl[r] = run_baseline();
        fprintf(stderr, "run %d: mailbox %.0f msg/s, mutex queue %.0f msg/s\n", r, mb[r], bl[r]);
    }
    qsort(mb, RUNS, sizeof *mb, cmp_double);
    qsort(bl, RUNS, sizeof *bl, cmp_double);
    printf("{\"bench\":\"mailbox\",\"messages\":%d,\"runs\":%d,"
           "\"mailbox_msgs_per_s\":%.0f,\"baseline_mutex_queue_msgs_per_s\":%.0f,"
           "\"ratio\":%.3f}\n",
           MESSAGES, RUNS, mb[RUNS / 2], bl[RUNS / 2], mb[RUNS / 2] / bl[RUNS / 2]);
    free(msgs);
    return 0;
}
