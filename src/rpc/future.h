/* Futures: results of asynchronous operations (asks, slot requests, an
 * endpoint's termination). A future completes exactly once, on its service's
 * loop thread; its callbacks run later on that loop, never inside the call
 * that completed or started it, each as the endpoint that registered it.
 * Other threads wait with rpc_future_wait. Reference counted (any thread). */
#ifndef SPATE_RPC_FUTURE_H
#define SPATE_RPC_FUTURE_H

#include <stdbool.h>
#include <stdint.h>

#include <spate/error.h>

struct rpc_service;
struct rpc_endpoint;
struct rpc_future;

typedef void (*rpc_future_cb)(struct rpc_future *f, void *arg);
/* Frees a value a future was completed with (value, ctx as given). */
typedef void (*rpc_value_free)(void *value);

/* A pending future with one reference (the caller's). Any thread. */
struct rpc_future *rpc_future_new(struct rpc_service *svc);
void rpc_future_ref(struct rpc_future *f);
/* Drops a reference; the last one frees the future and its value. NULL is fine. */
void rpc_future_unref(struct rpc_future *f);

/* Loop thread. Completes with a value the future then owns (freed with
 * value_free, which may be NULL). Completing twice is a bug (asserted). */
void rpc_future_complete(struct rpc_future *f, void *value, rpc_value_free value_free);
void rpc_future_fail(struct rpc_future *f, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Completes f with src's outcome; the value moves only if src is not shared,
 * so this is for futures whose value is NULL or that the caller owns. */
void rpc_future_fail_from(struct rpc_future *f, const struct rpc_future *src);

/* Loop thread: runs cb(f, arg) once f is complete, on the loop, with ep as the
 * executing endpoint (ep may be NULL for loop-level code). Callbacks run in the
 * order they were added, also for a future that is already complete. The
 * callback borrows f; it holds its own reference meanwhile. */
void rpc_future_then(struct rpc_future *f, struct rpc_endpoint *ep, rpc_future_cb cb, void *arg);

/* Any thread except the loop's: waits until f completes or timeout_ms passes
 * (-1: forever). Returns f's code (0 or a SPATE_E* code, message in err), or
 * SPATE_ETIMEDOUT when the wait itself ran out (f stays pending). */
int rpc_future_wait(struct rpc_future *f, int64_t timeout_ms, spate_error *err);

bool rpc_future_is_done(const struct rpc_future *f);
/* Valid once done (read them after wait or in a callback). */
int rpc_future_code(const struct rpc_future *f);
/* The failure's message ("" on success). Valid while f is referenced. */
const char *rpc_future_message(const struct rpc_future *f);
/* The value (borrowed; valid while f is referenced), NULL when failed. */
void *rpc_future_value(const struct rpc_future *f);

#endif
