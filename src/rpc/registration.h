/* Retrying registration (Flink's RetryingRegistration): an endpoint keeps
 * registering with a target until accepted, with back-off, a refusal delay,
 * an error delay and an optional overall timeout (the cluster.registration.*
 * keys); every retry is logged with its cause and delay. Loop thread, as the
 * owning endpoint. */
#ifndef SPATE_RPC_REGISTRATION_H
#define SPATE_RPC_REGISTRATION_H

/* A timed-out attempt is retried at once with a doubled timeout (from
 * initial-timeout up to max-timeout); a refusal waits
 * refused-registration-delay; any other failure (no connection yet, ...)
 * waits a delay that doubles from initial-timeout up to error-delay, so a
 * process that starts before its target finds it quickly, then backs off. */

#include <stdint.h>

#include "core/config.h"
#include "rpc/endpoint.h"
#include "rpc/future.h"

struct registration_options {
    int64_t initial_timeout_ms;
    int64_t max_timeout_ms;
    int64_t error_delay_ms;
    int64_t refused_delay_ms;
    int64_t total_timeout_ms; /* 0: retry forever */
};

/* The cluster.registration.* keys; total_timeout_ms is left 0. */
int registration_options_from_config(const struct config *conf, struct registration_options *o,
                                     spate_error *err);

struct registration_ops {
    /* Starts one attempt: an ask with timeout_ms, whose future it returns. */
    struct rpc_future *(*attempt)(void *arg, int64_t timeout_ms);
    /* Judges a successful reply: 0 accepted, else a refusal (err says why). */
    int (*check)(void *arg, struct rpc_future *reply, spate_error *err);
    /* Accepted. The registration is over (and freed) when this returns. */
    void (*success)(void *arg, struct rpc_future *reply);
    /* The overall timeout passed. Over (and freed) when this returns. */
    void (*failure)(void *arg, int code, const char *message);
    /* registration_cancel ended it (later, once no attempt is in flight):
     * what arg holds can go. May be NULL. */
    void (*cancelled)(void *arg);
};

struct registration;

/* target names what is registered with, for the log ("resource manager at
 * 127.0.0.1:6123/resourcemanager"). The first attempt starts at once. */
struct registration *registration_start(struct rpc_endpoint *ep, const char *target,
                                        const struct registration_options *o,
                                        const struct registration_ops *ops, void *arg);
/* Stops retrying; no callback runs after. Not after success or failure ran. */
void registration_cancel(struct registration *r);
unsigned registration_attempts(const struct registration *r);

#endif
