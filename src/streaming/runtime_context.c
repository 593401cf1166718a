/* The spate_ctx functions user code calls (spate.h), the scratch allocator,
 * and accumulators. Task thread only. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "streaming/accumulators.h"
#include "streaming/operator.h"

const void *
spate_ctx_params(const spate_ctx *ctx, size_t *len)
{
    if (len != NULL)
        *len = ctx->params_len;
    return ctx->params_len ? ctx->params : NULL;
}

int
spate_ctx_subtask_index(const spate_ctx *ctx)
{
    return ctx->subtask;
}

int
spate_ctx_parallelism(const spate_ctx *ctx)
{
    return ctx->parallelism;
}

int
spate_ctx_max_parallelism(const spate_ctx *ctx)
{
    return ctx->max_parallelism;
}

const char *
spate_ctx_task_name(const spate_ctx *ctx)
{
    return ctx->task_name;
}

void *
spate_ctx_user(const spate_ctx *ctx)
{
    return ctx->user;
}

void
spate_ctx_set_user(spate_ctx *ctx, void *user)
{
    ctx->user = user;
}

void
spate_emit(spate_ctx *ctx, const void *rec)
{
    operator_emit(ctx->op, rec, &ctx->meta);
}

void
spate_emit_side(spate_ctx *ctx, const char *tag, const void *rec)
{
    struct stream_operator *op = ctx->op;

    /* A handful of tags at most: a scan beats any map. */
    for (int i = 0; i < op->nsides; i++) {
        if (strcmp(op->sides[i].tag, tag) == 0) {
            op->sides[i].out->collect(op->sides[i].out, rec, &ctx->meta);
            return;
        }
    }
    /* A side output nobody reads: dropped, as in Flink. */
}

int64_t
spate_ctx_timestamp(const spate_ctx *ctx)
{
    return ctx->meta.timestamp;
}

int64_t
spate_ctx_current_watermark(const spate_ctx *ctx)
{
    return ctx->op->current_watermark;
}

int64_t
spate_ctx_current_processing_time(const spate_ctx *ctx)
{
    (void)ctx;
    return clock_wall_ms();
}

spate_bytes
spate_ctx_current_key(const spate_ctx *ctx)
{
    return ctx->key;
}

void
spate_ctx_fail(spate_ctx *ctx, const char *fmt, ...)
{
    va_list ap;

    if (ctx->failure != NULL)
        return;
    va_start(ap, fmt);
    ctx->failure = xvasprintf(fmt, ap);
    va_end(ap);
}

spate_counter *
spate_ctx_counter(spate_ctx *ctx, const char *name)
{
    return accumulators_counter(ctx->accumulators, name);
}

void
spate_counter_add(spate_counter *counter, int64_t delta)
{
    counter->value += delta;
}

/* ---- scratch ---- */

#define SCRATCH_CHUNK 65536

void *
spate_ctx_alloc(spate_ctx *ctx, size_t size)
{
    struct scratch *s = &ctx->scratch;
    size_t at = (s->used + 15) & ~(size_t)15;

    if (s->chunk == NULL || at + size > s->cap) {
        size_t cap = size > SCRATCH_CHUNK ? size : SCRATCH_CHUNK;

        /* Records already handed out may point into the old chunk: keep it
         * until the call ends. */
        if (s->chunk != NULL) {
            s->old = xrealloc(s->old, (s->nold + 1) * sizeof *s->old);
            s->old[s->nold++] = s->chunk;
        }
        s->chunk = xmalloc(cap);
        s->cap = cap;
        at = 0;
    }
    s->used = at + size;
    return s->chunk + at;
}

void
scratch_reset(struct scratch *s)
{
    s->used = 0;
    if (s->nold != 0) {
        for (size_t i = 0; i < s->nold; i++)
            free(s->old[i]);
        free(s->old);
        s->old = NULL;
        s->nold = 0;
    }
}

void
scratch_release(struct scratch *s)
{
    scratch_reset(s);
    free(s->chunk);
    s->chunk = NULL;
    s->cap = 0;
}
