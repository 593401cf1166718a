/* Retrying registration (registration.h). */
#include <stdio.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/log.h"
#include "core/util.h"
#include "rpc/registration.h"
#include "rpc/rpc_int.h"

struct registration {
    struct rpc_endpoint *ep;
    struct registration_options o;
    struct registration_ops ops;
    void *arg;
    char *target;
    int64_t timeout_ms;  /* of the next attempt */
    int64_t error_delay; /* the next error delay */
    unsigned attempts;
    bool cancelled;
    bool finished;  /* success or failure ran: no "cancelled" callback */
    bool in_flight; /* an attempt's callback is still due */
    struct rpc_timer *retry;
    struct rpc_timer *deadline;
};

int
registration_options_from_config(const struct config *conf, struct registration_options *o,
                                 spate_error *err)
{
    int rc;

    if ((rc = config_get_duration_ms(conf, CFG(CLUSTER_REGISTRATION_INITIAL_TIMEOUT),
                                     &o->initial_timeout_ms, err)) != 0 ||
        (rc = config_get_duration_ms(conf, CFG(CLUSTER_REGISTRATION_MAX_TIMEOUT),
                                     &o->max_timeout_ms, err)) != 0 ||
        (rc = config_get_duration_ms(conf, CFG(CLUSTER_REGISTRATION_ERROR_DELAY),
                                     &o->error_delay_ms, err)) != 0 ||
        (rc = config_get_duration_ms(conf, CFG(CLUSTER_REGISTRATION_REFUSED_DELAY),
                                     &o->refused_delay_ms, err)) != 0)
        return rc;
    o->total_timeout_ms = 0;
    return 0;
}

static void
reg_free(struct registration *r)
{
    if (r->cancelled && !r->finished && r->ops.cancelled != NULL)
        r->ops.cancelled(r->arg);
    rpc_timer_cancel(r->retry);
    rpc_timer_cancel(r->deadline);
    rpc_endpoint_unref(r->ep);
    free(r->target);
    free(r);
}

static void reg_attempt(void *arg);

static void
reg_retry_in(struct registration *r, int64_t delay_ms)
{
    r->retry = rpc_endpoint_schedule(r->ep, (uint64_t)delay_ms, reg_attempt, r);
}

static void
reg_on_reply(struct rpc_future *f, void *arg)
{
    struct registration *r = arg;
    spate_error err = { 0 };
    int code = rpc_future_code(f);

    r->in_flight = false;
    if (r->cancelled) {
        reg_free(r);
        return;
    }
    if (code == 0) {
        if (r->ops.check(r->arg, f, &err) == 0) {
            SPATE_LOG_INFO("rpc", "registered at %s (attempt %u)", r->target, r->attempts);
            r->finished = true;
            r->ops.success(r->arg, f);
            reg_free(r);
            return;
        }
        SPATE_LOG_INFO("rpc", "registration at %s refused: %s; retrying in %lld ms", r->target,
                       err.message, (long long)r->o.refused_delay_ms);
        reg_retry_in(r, r->o.refused_delay_ms);
        return;
    }
    if (code == SPATE_ETIMEDOUT) {
        int64_t next = MIN(r->timeout_ms * 2, r->o.max_timeout_ms);

        SPATE_LOG_INFO("rpc",
                       "registration at %s timed out after %lld ms; retrying with a "
                       "%lld ms timeout",
                       r->target, (long long)r->timeout_ms, (long long)next);
        r->timeout_ms = next;
        reg_attempt(r);
        return;
    }
    SPATE_LOG_INFO("rpc", "registration at %s failed (attempt %u): %s; retrying in %lld ms",
                   r->target, r->attempts, rpc_future_message(f), (long long)r->error_delay);
    reg_retry_in(r, r->error_delay);
    r->error_delay = MIN(r->error_delay * 2, r->o.error_delay_ms);
}

static void
reg_attempt(void *arg)
{
    struct registration *r = arg;
    struct rpc_future *f;

    r->retry = NULL;
    r->attempts++;
    SPATE_LOG_DEBUG("rpc", "registration attempt %u at %s (timeout %lld ms)", r->attempts,
                    r->target, (long long)r->timeout_ms);
    f = r->ops.attempt(r->arg, r->timeout_ms);
    r->in_flight = true;
    rpc_future_then(f, r->ep, reg_on_reply, r);
    rpc_future_unref(f);
}

static void
reg_on_deadline(void *arg)
{
    struct registration *r = arg;
    char msg[400];

    r->deadline = NULL;
    snprintf(msg, sizeof msg, "could not register at %s within %lld ms (%u attempts)", r->target,
             (long long)r->o.total_timeout_ms, r->attempts);
    SPATE_LOG_ERROR("rpc", "%s", msg);
    r->finished = true;
    r->ops.failure(r->arg, SPATE_ETIMEDOUT, msg);
    registration_cancel(r);
}

struct registration *
registration_start(struct rpc_endpoint *ep, const char *target,
                   const struct registration_options *o, const struct registration_ops *ops,
                   void *arg)
{
    struct registration *r = xcalloc(1, sizeof *r);

    r->ep = ep;
    rpc_endpoint_ref(ep);
    r->o = *o;
    r->ops = *ops;
    r->arg = arg;
    r->target = xstrdup(target);
    r->timeout_ms = o->initial_timeout_ms;
    r->error_delay = MIN(o->initial_timeout_ms, o->error_delay_ms);
    if (r->error_delay <= 0)
        r->error_delay = 1;
    SPATE_LOG_INFO("rpc", "registering at %s", target);
    if (o->total_timeout_ms > 0)
        r->deadline = rpc_endpoint_schedule(ep, (uint64_t)o->total_timeout_ms, reg_on_deadline, r);
    reg_attempt(r);
    return r;
}

void
registration_cancel(struct registration *r)
{
    if (r == NULL)
        return;
    r->cancelled = true;
    rpc_timer_cancel(r->retry);
    r->retry = NULL;
    rpc_timer_cancel(r->deadline);
    r->deadline = NULL;
    if (!r->in_flight)
        reg_free(r);
}

unsigned
registration_attempts(const struct registration *r)
{
    return r->attempts;
}
