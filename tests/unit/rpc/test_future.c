/* Futures, run_async, timers and the in-process transport inside one
 * process: completion exactly once and never inside the completing call,
 * callbacks in order in their endpoint's context, waits from other threads,
 * asks from several threads (also run under ThreadSanitizer). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/util.h"
#include "rpc/service.h"
#include "support/echo.h"

static struct rpc_service *svc;

static void
start(void)
{
    struct rpc_service_options o = { .bind_host = "127.0.0.1", .port = "0" };
    spate_error err = { 0 };

    cr_assert_eq(rpc_service_new(&o, &svc, &err), 0, "%s", err.message);
    cr_assert_eq(rpc_service_start(svc, &err), 0, "%s", err.message);
}

static void
stop(void)
{
    rpc_service_free(svc);
    svc = NULL;
}

struct order {
    struct rpc_endpoint ep;
    int seen[4];
    int n;
    bool in_complete;
    struct rpc_future *f;
    struct rpc_future *done;
};

static void
cb_record(struct rpc_future *f, void *arg)
{
    struct order *o = arg;

    cr_assert(!o->in_complete, "callback ran inside rpc_future_complete");
    cr_assert_eq(rpc_endpoint_current(), &o->ep);
    cr_assert_eq((intptr_t)rpc_future_value(f), 42);
    o->seen[o->n] = o->n;
    if (++o->n == 3)
        rpc_future_complete(o->done, NULL, NULL);
}

static void
order_run(void *arg)
{
    struct order *o = arg;

    cr_assert_eq(rpc_endpoint_init(&o->ep, svc, "order", NULL, NULL), 0);
    cr_assert_eq(rpc_endpoint_start(&o->ep, NULL), 0);
    o->f = rpc_future_new(svc);
    o->done = rpc_future_new(svc);
    rpc_future_then(o->f, &o->ep, cb_record, o);
    rpc_future_then(o->f, &o->ep, cb_record, o);
    o->in_complete = true;
    rpc_future_complete(o->f, (void *)(intptr_t)42, NULL);
    o->in_complete = false;
    /* Added after completion: still later, still in order. */
    rpc_future_then(o->f, &o->ep, cb_record, o);
}

static void
order_stop(void *arg)
{
    struct order *o = arg;

    rpc_future_unref(rpc_endpoint_stop(&o->ep));
}

Test(rpc_future, callbacks_run_later_in_order_in_their_endpoint)
{
    static struct order o;

    start();
    rpc_service_run_sync(svc, NULL, order_run, &o);
    cr_assert_eq(rpc_future_wait(o.done, 10000, NULL), 0);
    cr_assert_eq(o.n, 3);
    for (int i = 0; i < 3; i++)
        cr_assert_eq(o.seen[i], i);
    rpc_service_run_sync(svc, NULL, order_stop, &o);
    rpc_future_unref(o.f);
    rpc_future_unref(o.done);
    stop();
}

static void
fail_it(void *arg)
{
    rpc_future_fail(arg, SPATE_EREMOTE, "remote said '%s'", "no");
}

Test(rpc_future, wait_times_out_then_sees_the_failure)
{
    struct rpc_future *f;
    spate_error err = { 0 };

    start();
    f = rpc_future_new(svc);
    cr_assert_eq(rpc_future_wait(f, 50, &err), SPATE_ETIMEDOUT);
    cr_assert(!rpc_future_is_done(f));
    rpc_service_run_sync(svc, NULL, fail_it, f);
    cr_assert_eq(rpc_future_wait(f, -1, &err), SPATE_EREMOTE);
    cr_assert_str_eq(err.message, "remote said 'no'");
    cr_assert_str_eq(rpc_future_message(f), "remote said 'no'");
    rpc_future_unref(f);
    stop();
}

/* ---- run_async and timers ---- */

struct counter {
    struct rpc_endpoint ep;
    int count; /* only touched as the endpoint */
    bool wrong_context;
    bool cancelled_ran;
    struct rpc_future *done;
    struct rpc_timer *doomed;
};

#define THREADS 4
#define POSTS   5000

static void
count_one(void *arg)
{
    struct counter *c = arg;

    if (rpc_endpoint_current() != &c->ep)
        c->wrong_context = true;
    if (++c->count == THREADS * POSTS)
        rpc_future_complete(c->done, NULL, NULL);
}

static void *
poster(void *arg)
{
    struct counter *c = arg;

    for (int i = 0; i < POSTS; i++)
        rpc_endpoint_run_async(&c->ep, count_one, c);
    return NULL;
}

static void
counter_start(void *arg)
{
    struct counter *c = arg;

    cr_assert_eq(rpc_endpoint_init(&c->ep, svc, "counter", NULL, NULL), 0);
    cr_assert_eq(rpc_endpoint_start(&c->ep, NULL), 0);
    c->done = rpc_future_new(svc);
}

static void
counter_stop(void *arg)
{
    struct counter *c = arg;

    rpc_future_unref(rpc_endpoint_stop(&c->ep));
}

Test(rpc_future, run_async_from_many_threads)
{
    /* Static: an endpoint must outlive its last reference (timers' closes). */
    static struct counter c;
    pthread_t t[THREADS];

    start();
    rpc_service_run_sync(svc, NULL, counter_start, &c);
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, poster, &c);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    cr_assert_eq(rpc_future_wait(c.done, 20000, NULL), 0);
    cr_assert(!c.wrong_context);
    rpc_future_unref(c.done);
    rpc_service_run_sync(svc, NULL, counter_stop, &c);
    stop();
}

static void
doomed_fn(void *arg)
{
    ((struct counter *)arg)->cancelled_ran = true;
}

static void
timer_fn(void *arg)
{
    struct counter *c = arg;

    cr_assert_eq(rpc_endpoint_current(), &c->ep);
    rpc_future_complete(c->done, NULL, NULL);
}

static void
schedule_both(void *arg)
{
    struct counter *c = arg;

    c->doomed = rpc_endpoint_schedule(&c->ep, 30, doomed_fn, c);
    rpc_endpoint_schedule(&c->ep, 60, timer_fn, c);
    rpc_timer_cancel(c->doomed);
}

Test(rpc_future, scheduled_run_async_and_cancel)
{
    static struct counter c;

    start();
    rpc_service_run_sync(svc, NULL, counter_start, &c);
    rpc_service_run_sync(svc, &c.ep, schedule_both, &c);
    cr_assert_eq(rpc_future_wait(c.done, 10000, NULL), 0);
    /* The 60 ms timer ran, so the 30 ms one would have run before it. */
    cr_assert(!c.cancelled_ran);
    rpc_future_unref(c.done);
    rpc_service_run_sync(svc, NULL, counter_stop, &c);
    stop();
}

/* ---- blocking work and port ranges ---- */

struct blocking {
    struct rpc_endpoint ep;
    pthread_t loop, worker;
    bool done_in_ep;
    struct rpc_future *done;
};

static void
blocking_work(void *arg)
{
    ((struct blocking *)arg)->worker = pthread_self();
}

static void
blocking_done(void *arg)
{
    struct blocking *b = arg;

    b->done_in_ep = rpc_endpoint_current() == &b->ep && pthread_equal(pthread_self(), b->loop);
    rpc_future_complete(b->done, NULL, NULL);
}

static void
blocking_start(void *arg)
{
    struct blocking *b = arg;

    b->loop = pthread_self();
    cr_assert_eq(rpc_endpoint_init(&b->ep, svc, "blocking", NULL, NULL), 0);
    cr_assert_eq(rpc_endpoint_start(&b->ep, NULL), 0);
    b->done = rpc_future_new(svc);
    cr_assert_eq(rpc_endpoint_run_blocking(&b->ep, blocking_work, blocking_done, b), 0);
}

static void
blocking_stop(void *arg)
{
    rpc_future_unref(rpc_endpoint_stop(&((struct blocking *)arg)->ep));
}

Test(rpc_future, blocking_work_runs_elsewhere_and_completes_in_its_endpoint)
{
    static struct blocking b;

    start();
    rpc_service_run_sync(svc, NULL, blocking_start, &b);
    cr_assert_eq(rpc_future_wait(b.done, 10000, NULL), 0);
    cr_assert(!pthread_equal(b.worker, b.loop), "the work ran on the loop thread");
    cr_assert(b.done_in_ep);
    rpc_service_run_sync(svc, NULL, blocking_stop, &b);
    rpc_future_unref(b.done);
    stop();
}

Test(rpc_future, port_range_takes_the_next_free_port)
{
    struct rpc_service_options o = { .bind_host = "127.0.0.1", .port = "0" };
    struct rpc_service *second;
    spate_error err = { 0 };
    char range[32];
    int taken;

    start();
    taken = rpc_service_port(svc);
    snprintf(range, sizeof range, "%d-%d", taken, taken + 20);
    o.port = range;
    cr_assert_eq(rpc_service_new(&o, &second, &err), 0, "%s", err.message);
    cr_assert_gt(rpc_service_port(second), taken);
    cr_assert_leq(rpc_service_port(second), taken + 20);
    rpc_service_free(second);
    snprintf(range, sizeof range, "%d-%d", taken, taken);
    cr_assert_eq(rpc_service_new(&o, &second, &err), SPATE_EADDRINUSE);
    cr_assert(strstr(err.message, range) != NULL, "%s", err.message);
    stop();
}

/* ---- the in-process transport ---- */

static struct echo_server local_echo;

static void
echo_start(void *arg)
{
    UNUSED(arg);
    cr_assert_eq(echo_server_start(&local_echo, svc, "echo", NULL, NULL), 0);
}

static void *
local_asker(void *arg)
{
    struct rpc_gateway *gw = arg;
    Echotest__EchoRequest req = ECHOTEST__ECHO_REQUEST__INIT;

    for (uint64_t i = 0; i < 300; i++) {
        struct rpc_future *f;

        req.seq = i;
        f = echo_echo(gw, &req, 0);
        cr_assert_eq(rpc_future_wait(f, 20000, NULL), 0);
        cr_assert_eq(((Echotest__EchoReply *)rpc_future_value(f))->seq, i);
        rpc_future_unref(f);
    }
    return NULL;
}

Test(rpc_future, in_process_asks_from_many_threads)
{
    struct rpc_gateway *gw;
    pthread_t t[THREADS];
    char addr[160];

    start();
    rpc_service_run_sync(svc, NULL, echo_start, NULL);
    snprintf(addr, sizeof addr, "%s/echo", rpc_service_address(svc));
    cr_assert_eq(rpc_gateway_new(svc, addr, NULL, &gw, NULL), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, local_asker, gw);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    cr_assert_eq(local_echo.asks, THREADS * 300);
    rpc_gateway_free(gw);
    stop();
}
