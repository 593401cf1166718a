/* The Source API's operator and reader output (source_operator.h), and the
 * reader's context of include/spate/source.h. */
#include <stdlib.h>
#include <string.h>

#include "connectors/connectors_int.h"
#include "connectors/source_operator.h"
#include "core/alloc.h"
#include "core/clock.h"
#include "core/util.h"
#include "streaming/connector_config.h"

/* How long a reader with nothing to read waits before it is polled (and
 * asks for splits) again. */
#define SOURCE_IDLE_WAIT_NS (20u * 1000000u)

struct spate_source_reader_context {
    struct stream_operator *op;
    struct byte_buf *snapshot; /* during snapshot_state */
    bool registered;           /* the coordinator knows the reader */
    bool want_split;           /* request_split called since the last request */
    bool no_more;              /* the enumerator signalled no more splits */
    bool got_none;             /* the last request brought no split */
    int64_t last_checkpoint;   /* the last one it took its state in */
};

struct source_op {
    const spate_source_reader *rd;
    void *reader;
    spate_source_reader_context ctx;
    spate_reader_output out;
};

/* ---- the reader output ---- */

void
source_output_begin(struct spate_reader_output *out, struct stream_operator *op)
{
    out->op = op;
    out->now_ns = 0;
    source_run_begin(&out->run, op);
}

/* Per-split watermarks (Flink's): the generator makes its watermark from
 * the smallest of the splits' largest timestamps, so a split that is behind
 * holds event time back; a split without records, or idle (the strategy's
 * idleness), does not. The generator never emits one below one it sent. */
void
source_output_end(struct spate_reader_output *out)
{
    struct watermark_generator *g = out->op->watermarks;
    int64_t min = INT64_MAX;

    source_run_end(&out->run);
    if (g == NULL || out->nsplits < 2)
        return;
    if (out->now_ns == 0)
        out->now_ns = clock_mono_ns(); /* no record this time: splits may have gone idle */
    for (uint32_t i = 0; i < out->nsplits; i++) {
        const struct split_time *t = &out->splits[i];

        if (t->max_timestamp == INT64_MIN ||
            (g->idleness_ns && out->now_ns - t->last_ns > g->idleness_ns))
            continue;
        if (t->max_timestamp < min)
            min = t->max_timestamp;
    }
    if (min != INT64_MAX)
        g->max_timestamp = min;
}

void
source_output_release(struct spate_reader_output *out)
{
    free(out->splits);
    out->splits = NULL;
    out->nsplits = 0;
}

static void
split_seen(struct spate_reader_output *out, uint32_t id, int64_t timestamp)
{
    if (id >= out->nsplits) {
        uint32_t n = id + 1;

        out->splits = xrealloc(out->splits, n * sizeof *out->splits);
        for (uint32_t i = out->nsplits; i < n; i++)
            out->splits[i] = (struct split_time){ INT64_MIN, 0 };
        /* Split 0's records so far went the plain way (below). */
        if (out->nsplits == 0)
            out->splits[0].max_timestamp = out->run.max_timestamp;
        out->nsplits = n;
    }
    if (out->now_ns == 0)
        out->now_ns = clock_mono_ns();
    if (timestamp > out->splits[id].max_timestamp)
        out->splits[id].max_timestamp = timestamp;
    out->splits[id].last_ns = out->now_ns;
}

void
source_output_collect_slow(struct spate_reader_output *out, uint32_t split, const void *rec,
                           int64_t ts)
{
    struct stream_operator *op = out->op;
    struct watermark_generator *g = op->watermarks;
    struct record_meta m = { ts, 0, false };

    if (g == NULL) {
        operator_emit(op, rec, &m);
        return;
    }
    m.timestamp = watermark_generator_on_event(op, g, rec, ts);
    if (m.timestamp > out->run.max_timestamp)
        out->run.max_timestamp = m.timestamp;
    split_seen(out, split, m.timestamp);
    operator_emit(op, rec, &m);
    if (g->watermark_fn != NULL)
        watermark_generator_punctuated(op, g, rec, m.timestamp);
}

void
spate_reader_output_collect(spate_reader_output *out, uint32_t split, const void *record,
                            int64_t timestamp_ms)
{
    source_output_collect(out, split, record, timestamp_ms);
}

/* ---- the reader's context ---- */

int
spate_reader_context_subtask(const spate_source_reader_context *ctx)
{
    return ctx->op->task->subtask;
}

int
spate_reader_context_parallelism(const spate_source_reader_context *ctx)
{
    return ctx->op->task->parallelism;
}

const void *
spate_reader_context_params(const spate_source_reader_context *ctx, size_t *len)
{
    *len = ctx->op->config->params_len;
    return ctx->op->config->params;
}

void
spate_reader_context_request_split(spate_source_reader_context *ctx)
{
    ctx->want_split = true;
}

void
spate_reader_context_save_split(spate_source_reader_context *ctx, const void *split, size_t len)
{
    if (ctx->snapshot != NULL)
        op_state_add(ctx->snapshot, split, len);
}

/* ---- the operator ---- */

const spate_source *
source_operator_source(const struct operator_settings *settings, const void **config)
{
    *config = settings->conf;
    switch (settings->kind) {
    case OP_SOURCE_FILE:
        return &file_source;
    case OP_SOURCE:
        *config = NULL;
        return ((const struct api_source_config *)settings->conf)->source;
    default:
        return NULL;
    }
}

static int
so_open(struct stream_operator *op, spate_error *err)
{
    struct source_op *s = xcalloc(1, sizeof *s);
    const spate_source *src;
    const void *config;

    op->impl = s;
    s->ctx.op = op;
    if ((src = source_operator_source(op->config, &config)) == NULL)
        return spate_error_set(err, SPATE_EINVAL, "operator '%s' is not a source",
                               op->ctx.task_name);
    s->rd = src->reader;
    if ((s->reader = s->rd->create(&s->ctx, config, err)) == NULL)
        return err->code ? err->code : SPATE_EINVAL;
    return 0;
}

static void
so_close(struct stream_operator *op)
{
    struct source_op *s = op->impl;

    if (s == NULL)
        return;
    if (s->reader != NULL)
        s->rd->close(s->reader);
    source_output_release(&s->out);
    free(s);
    op->impl = NULL;
}

struct so_add {
    struct source_op *s;
    spate_error *err;
    size_t n; /* splits added */
};

static int
so_add_split(void *arg, const void *split, size_t len)
{
    struct so_add *a = arg;

    a->n++;
    return a->s->rd->add_split(a->s->reader, split, len, a->err);
}

/* Registers the reader, or asks for the splits it wants (the JobMaster's
 * source coordinator). */
static int
so_request(struct stream_operator *op, struct source_op *s, spate_error *err)
{
    struct so_add a = { s, err, 0 };
    bool no_more = false, asked = s->ctx.want_split;
    int rc;

    if (op->task->request_splits == NULL)
        return spate_error_set(err, SPATE_ESTATE, "no split enumerator for '%s'",
                               op->ctx.task_name);
    rc = op->task->request_splits(op->task->split_data, op->index, !s->ctx.registered,
                                  s->ctx.want_split, s->ctx.last_checkpoint, so_add_split, &a,
                                  &no_more, err);
    if (rc != 0)
        return rc;
    /* Only a request that asked for a split and got none makes the reader
     * wait before asking again: the registration alone asks for nothing
     * (an enumerator may assign only on request, as Flink's file source),
     * and the reader's first request follows it at once. */
    s->ctx.got_none = asked && a.n == 0 && !no_more;
    s->ctx.registered = true;
    s->ctx.want_split = false;
    if (no_more && !s->ctx.no_more) {
        s->ctx.no_more = true;
        if (s->rd->no_more_splits != NULL)
            s->rd->no_more_splits(s->reader);
    }
    return 0;
}

static enum source_status
so_poll(struct stream_operator *op, int budget, spate_error *err)
{
    struct source_op *s = op->impl;
    spate_input_status st;

    if ((!s->ctx.registered || s->ctx.want_split) && so_request(op, s, err) != 0)
        return SOURCE_END;
    source_output_begin(&s->out, op);
    st = s->rd->poll_next(s->reader, &s->out, budget, err);
    source_output_end(&s->out);
    switch (st) {
    case SPATE_INPUT_MORE_AVAILABLE:
        return SOURCE_MORE;
    case SPATE_INPUT_NOTHING_AVAILABLE:
        /* The request goes out at once, unless the last one brought
         * nothing (the enumerator has none now, or its valve is closed
         * until this reader's barrier). */
        if (s->ctx.want_split && !s->ctx.got_none)
            return SOURCE_MORE;
        op->wait_until_ns = clock_mono_ns() + SOURCE_IDLE_WAIT_NS;
        return SOURCE_WAITING;
    case SPATE_INPUT_END_OF_INPUT:
        return SOURCE_END;
    default:
        if (err->code == 0)
            spate_error_set(err, SPATE_EIO, "source reader of '%s' failed", op->ctx.task_name);
        return SOURCE_END;
    }
}

static void
so_snapshot(struct stream_operator *op, int64_t checkpoint_id, struct byte_buf *out)
{
    struct source_op *s = op->impl;

    s->ctx.snapshot = out;
    s->rd->snapshot_state(s->reader, checkpoint_id, &s->ctx);
    s->ctx.snapshot = NULL;
    s->ctx.last_checkpoint = checkpoint_id;
}

/* One element of the state: a split of the reader's with its position. */
static int
so_restore(struct stream_operator *op, const uint8_t *bytes, size_t len, spate_error *err)
{
    struct source_op *s = op->impl;

    return s->rd->add_split(s->reader, bytes, len, err);
}

static void
so_checkpoint_complete(struct stream_operator *op, int64_t checkpoint_id)
{
    struct source_op *s = op->impl;

    if (s->rd->checkpoint_complete != NULL)
        s->rd->checkpoint_complete(s->reader, checkpoint_id);
}

const struct operator_vtable source_operator_vtable = {
    .state = OPERATOR_OWN_STATE,
    .open = so_open,
    .close = so_close,
    .poll = so_poll,
    .snapshot_state = so_snapshot,
    .restore_state = so_restore,
    .checkpoint_complete = so_checkpoint_complete,
};
