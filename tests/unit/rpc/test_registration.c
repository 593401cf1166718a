/* Unit tests of src/rpc/registration.c with scripted attempts (no network):
 * a timed-out attempt is retried at once with a doubled timeout, a failure
 * after a delay that doubles up to cluster.registration.error-delay, a
 * refusal after the refusal delay; success and the overall timeout end it;
 * cancel ends it quietly. */
#include <criterion/criterion.h>
#include <string.h>

#include "core/clock.h"
#include "core/util.h"
#include "rpc/registration.h"
#include "rpc/service.h"

enum outcome { OK, TIMEOUT, ERROR, REFUSED };

static struct rpc_service *svc;

struct script {
    struct rpc_endpoint ep;
    enum outcome steps[16];
    int nsteps, next;
    int64_t timeouts[16];
    uint64_t at_ms[16];
    struct rpc_future *done; /* value: 1 success, 2 failure, 3 cancelled */
    struct registration *reg;
    struct registration_options o;
};

static struct rpc_future *
attempt(void *arg, int64_t timeout_ms)
{
    struct script *s = arg;
    struct rpc_future *f = rpc_future_new(svc);
    int i = s->next++;
    enum outcome o = i < s->nsteps ? s->steps[i] : ERROR;

    s->timeouts[i] = timeout_ms;
    s->at_ms[i] = clock_mono_ms();
    if (o == TIMEOUT)
        rpc_future_fail(f, SPATE_ETIMEDOUT, "scripted timeout");
    else if (o == ERROR)
        rpc_future_fail(f, SPATE_ECONNLOST, "scripted error");
    else
        rpc_future_complete(f, (void *)(intptr_t)(o == OK), NULL);
    return f;
}

static int
check(void *arg, struct rpc_future *reply, spate_error *err)
{
    UNUSED(arg);
    if ((intptr_t)rpc_future_value(reply) != 1)
        return spate_error_set(err, SPATE_EREMOTE, "scripted refusal");
    return 0;
}

static void
success(void *arg, struct rpc_future *reply)
{
    UNUSED(reply);
    rpc_future_complete(((struct script *)arg)->done, (void *)1, NULL);
}

static void
failure(void *arg, int code, const char *msg)
{
    UNUSED(msg);
    cr_assert_eq(code, SPATE_ETIMEDOUT);
    rpc_future_complete(((struct script *)arg)->done, (void *)2, NULL);
}

static void
cancelled(void *arg)
{
    rpc_future_complete(((struct script *)arg)->done, (void *)3, NULL);
}

static const struct registration_ops ops = { attempt, check, success, failure, cancelled };

static void
start(void *arg)
{
    struct script *s = arg;

    cr_assert_eq(rpc_endpoint_init(&s->ep, svc, "registrant", NULL, NULL), 0);
    cr_assert_eq(rpc_endpoint_start(&s->ep, NULL), 0);
    s->done = rpc_future_new(svc);
    s->reg = registration_start(&s->ep, "the script", &s->o, &ops, s);
}

static void
cancel(void *arg)
{
    registration_cancel(((struct script *)arg)->reg);
}

static void
stop(void *arg)
{
    rpc_future_unref(rpc_endpoint_stop(&((struct script *)arg)->ep));
}

static intptr_t
run(struct script *s)
{
    struct rpc_service_options o = { 0 };
    intptr_t result;

    cr_assert_eq(rpc_service_new(&o, &svc, NULL), 0);
    cr_assert_eq(rpc_service_start(svc, NULL), 0);
    rpc_service_run_sync(svc, NULL, start, s);
    cr_assert_eq(rpc_future_wait(s->done, 20000, NULL), 0);
    result = (intptr_t)rpc_future_value(s->done);
    rpc_service_run_sync(svc, NULL, stop, s);
    rpc_future_unref(s->done);
    rpc_service_free(svc);
    return result;
}

Test(registration, backoff_refusal_and_success)
{
    static struct script s = {
        .steps = { TIMEOUT, TIMEOUT, ERROR, ERROR, ERROR, REFUSED, OK },
        .nsteps = 7,
        .o = { .initial_timeout_ms = 10,
               .max_timeout_ms = 30,
               .error_delay_ms = 50,
               .refused_delay_ms = 60 },
    };

    cr_assert_eq(run(&s), 1);
    cr_assert_eq(s.next, 7);
    /* Timeouts double up to the maximum. */
    cr_assert_eq(s.timeouts[0], 10);
    cr_assert_eq(s.timeouts[1], 20);
    cr_assert_eq(s.timeouts[2], 30);
    /* Errors wait 10, 20, 40 ms (doubling from the initial timeout, capped
     * at the error delay); the refusal waits its own delay. Timers may fire
     * a little early against this clock (libuv's cached loop time), so only
     * half of each delay is asserted: enough to tell the delays apart. */
    cr_assert_geq(s.at_ms[4] - s.at_ms[3], 20 / 2);
    cr_assert_geq(s.at_ms[5] - s.at_ms[4], 40 / 2);
    cr_assert_geq(s.at_ms[6] - s.at_ms[5], 60 / 2);
}

Test(registration, overall_timeout_fails_it)
{
    static struct script s = {
        .nsteps = 0, /* every attempt fails */
        .o = { .initial_timeout_ms = 10,
               .max_timeout_ms = 20,
               .error_delay_ms = 20,
               .refused_delay_ms = 20,
               .total_timeout_ms = 150 },
    };

    cr_assert_eq(run(&s), 2);
    cr_assert_geq(s.next, 3);
}

static void
start_then_cancel(void *arg)
{
    start(arg);
    cancel(arg);
}

Test(registration, cancel_ends_it_quietly)
{
    static struct script s = {
        .nsteps = 0,
        .o = { .initial_timeout_ms = 10,
               .max_timeout_ms = 20,
               .error_delay_ms = 1000,
               .refused_delay_ms = 20 },
    };
    struct rpc_service_options o = { 0 };

    cr_assert_eq(rpc_service_new(&o, &svc, NULL), 0);
    cr_assert_eq(rpc_service_start(svc, NULL), 0);
    rpc_service_run_sync(svc, NULL, start_then_cancel, &s);
    cr_assert_eq(rpc_future_wait(s.done, 20000, NULL), 0);
    cr_assert_eq((intptr_t)rpc_future_value(s.done), 3);
    cr_assert_eq(s.next, 1);
    rpc_service_run_sync(svc, NULL, stop, &s);
    rpc_future_unref(s.done);
    rpc_service_free(svc);
}
