/* Futures (future.h). Completion and callbacks belong to the loop thread;
 * the mutex and condition variable serve only threads that wait. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "core/util.h"
#include "rpc/rpc_int.h"

struct rpc_future *
rpc_future_new(struct rpc_service *svc)
{
    struct rpc_future *f = xmalloc(sizeof *f);
    pthread_condattr_t attr;

    memset(f, 0, offsetof(struct rpc_future, arena_first));
    atomic_init(&f->refs, 1);
    f->svc = svc;
    pthread_mutex_init(&f->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&f->cond, &attr);
    pthread_condattr_destroy(&attr);
    list_init(&f->pending.deadline_node);
    list_init(&f->pending.conn_node);
    list_init(&f->pending.ep_node);
    return f;
}

void
rpc_future_ref(struct rpc_future *f)
{
    atomic_fetch_add_explicit(&f->refs, 1, memory_order_relaxed);
}

void
rpc_future_unref(struct rpc_future *f)
{
    if (f == NULL)
        return;
    /* acq_rel: the thread that frees sees the completing thread's writes. */
    if (atomic_fetch_sub_explicit(&f->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (f->value != NULL && f->value_free != NULL)
        f->value_free(f->value);
    if (f->has_arena)
        arena_release(&f->arena);
    free(f->message);
    pthread_mutex_destroy(&f->lock);
    pthread_cond_destroy(&f->cond);
    free(f);
}

static void
callback_run(struct rpc_runnable *r)
{
    struct rpc_callback *cb = container_of(r, struct rpc_callback, r);
    struct rpc_future *f = cb->f;
    struct rpc_endpoint *ep = cb->ep;
    struct rpc_endpoint *prev = rpc_enter(ep);
    bool embedded = cb == &f->first_cb;

    cb->cb(f, cb->arg);
    rpc_leave(prev);
    if (!embedded)
        free(cb);
    rpc_endpoint_unref(ep);
    rpc_future_unref(f);
}

void
future_schedule_callbacks(struct rpc_future *f)
{
    struct rpc_callback *cb = f->cbs, *next;

    f->cbs = f->cbs_tail = NULL;
    for (; cb != NULL; cb = next) {
        next = cb->next;
        cb->r.run = callback_run;
        rpc_service_defer(f->svc, &cb->r);
    }
    rpc_service_wake(f->svc);
}

static void
future_finish(struct rpc_future *f, int code, char *message, void *value, rpc_value_free vfree)
{
    SPATE_ASSERT(rpc_service_in_loop(f->svc));
    /* A waiter may drop the last outside reference as soon as it wakes. */
    rpc_future_ref(f);
    pthread_mutex_lock(&f->lock);
    SPATE_ASSERT(!f->done);
    f->code = code;
    f->message = message;
    f->value = value;
    f->value_free = vfree;
    f->done = true;
    pthread_cond_broadcast(&f->cond);
    pthread_mutex_unlock(&f->lock);
    if (f->cbs != NULL)
        future_schedule_callbacks(f);
    rpc_future_unref(f);
}

void
rpc_future_complete(struct rpc_future *f, void *value, rpc_value_free value_free)
{
    future_finish(f, 0, NULL, value, value_free);
}

void
rpc_future_fail(struct rpc_future *f, int code, const char *fmt, ...)
{
    va_list ap;
    char *msg;

    SPATE_ASSERT(code < 0);
    va_start(ap, fmt);
    msg = xvasprintf(fmt, ap);
    va_end(ap);
    future_finish(f, code, msg, NULL, NULL);
}

void
rpc_future_fail_from(struct rpc_future *f, const struct rpc_future *src)
{
    SPATE_ASSERT(src->done && src->code < 0);
    future_finish(f, src->code, xstrdup(src->message ? src->message : ""), NULL, NULL);
}

void
rpc_future_then(struct rpc_future *f, struct rpc_endpoint *ep, rpc_future_cb fn, void *arg)
{
    struct rpc_callback *cb;

    SPATE_ASSERT(rpc_service_in_loop(f->svc));
    if (!f->first_cb_used) {
        cb = &f->first_cb;
        f->first_cb_used = true;
    } else {
        cb = xmalloc(sizeof *cb);
    }
    cb->next = NULL;
    cb->f = f;
    cb->ep = ep;
    cb->cb = fn;
    cb->arg = arg;
    rpc_future_ref(f);
    if (ep != NULL)
        rpc_endpoint_ref(ep);
    if (f->done) {
        cb->r.run = callback_run;
        rpc_service_defer(f->svc, &cb->r);
        rpc_service_wake(f->svc);
        return;
    }
    if (f->cbs_tail != NULL)
        f->cbs_tail->next = cb;
    else
        f->cbs = cb;
    f->cbs_tail = cb;
}

int
rpc_future_wait(struct rpc_future *f, int64_t timeout_ms, spate_error *err)
{
    struct timespec deadline;
    int code;

    clock_gettime(CLOCK_MONOTONIC, &deadline);
    if (timeout_ms >= 0) {
        deadline.tv_sec += timeout_ms / 1000;
        deadline.tv_nsec += (timeout_ms % 1000) * 1000000;
        if (deadline.tv_nsec >= 1000000000) {
            deadline.tv_sec++;
            deadline.tv_nsec -= 1000000000;
        }
    }
    pthread_mutex_lock(&f->lock);
    while (!f->done) {
        if (timeout_ms < 0) {
            pthread_cond_wait(&f->cond, &f->lock);
        } else if (pthread_cond_timedwait(&f->cond, &f->lock, &deadline) == ETIMEDOUT && !f->done) {
            pthread_mutex_unlock(&f->lock);
            return spate_error_set(err, SPATE_ETIMEDOUT, "gave up waiting after %lld ms",
                                   (long long)timeout_ms);
        }
    }
    code = f->code;
    if (code != 0)
        spate_error_set(err, code, "%s", f->message ? f->message : spate_strerror(code));
    pthread_mutex_unlock(&f->lock);
    return code;
}

bool
rpc_future_is_done(const struct rpc_future *f)
{
    struct rpc_future *m = (struct rpc_future *)f;
    bool done;

    pthread_mutex_lock(&m->lock);
    done = m->done;
    pthread_mutex_unlock(&m->lock);
    return done;
}

int
rpc_future_code(const struct rpc_future *f)
{
    return f->code;
}

const char *
rpc_future_message(const struct rpc_future *f)
{
    return f->message ? f->message : "";
}

void *
rpc_future_value(const struct rpc_future *f)
{
    return f->value;
}
