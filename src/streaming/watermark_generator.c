/* The watermark generator of watermark_generator.h: what is not per record. */
#include "streaming/watermark_generator.h"

#include <stdlib.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "streaming/stream_graph.h"

/* When the next tick is due: every interval, or with no interval (the
 * watermark goes out after each record) only to see idleness. */
static uint64_t
next_tick(const struct watermark_generator *g, uint64_t now_ns)
{
    if (g->interval_ns != 0)
        return now_ns + g->interval_ns;
    return g->idleness_ns != 0 ? now_ns + g->idleness_ns : 0;
}

struct watermark_generator *
watermark_generator_new(struct stream_operator *op, const struct watermark_config *config)
{
    struct watermark_generator *g = xcalloc(1, sizeof *g);
    uint64_t now = clock_mono_ns();

    g->timestamp_fn = config->timestamp;
    g->watermark_fn = config->watermark;
    g->bound_ms = config->bound_ms;
    g->max_timestamp = INT64_MIN;
    g->emitted = INT64_MIN;
    g->interval_ns = (uint64_t)config->interval_ms * 1000000u;
    g->idleness_ns = (uint64_t)config->idleness_ms * 1000000u;
    g->last_record_ns = now;
    g->records_at_tick = op->records_out;
    op->next_processing_ns = next_tick(g, now);
    return g;
}

void
watermark_generator_free(struct watermark_generator *g)
{
    free(g);
}

static void
emit(struct stream_operator *op, struct watermark_generator *g, int64_t watermark)
{
    g->emitted = watermark;
    op->current_watermark = watermark;
    op->out->emit_watermark(op->out, watermark);
}

void
watermark_generator_active(struct stream_operator *op, struct watermark_generator *g)
{
    g->idle = false;
    op->out->emit_idle(op->out, false);
}

void
watermark_generator_punctuated(struct stream_operator *op, struct watermark_generator *g,
                               const void *rec, int64_t ts)
{
    int64_t wm = g->watermark_fn(&op->ctx, rec, ts);

    if (wm > g->emitted)
        emit(op, g, wm);
}

void
watermark_generator_on_periodic(struct stream_operator *op, struct watermark_generator *g,
                                uint64_t now_ns)
{
    if (op->records_out != g->records_at_tick) {
        g->records_at_tick = op->records_out;
        g->last_record_ns = now_ns;
    }
    /* Flink's BoundedOutOfOrdernessWatermarks: max - bound - 1. */
    if (g->watermark_fn == NULL && g->max_timestamp != INT64_MIN &&
        g->max_timestamp - g->bound_ms - 1 > g->emitted)
        emit(op, g, g->max_timestamp - g->bound_ms - 1);
    if (g->idleness_ns != 0 && !g->idle && now_ns - g->last_record_ns >= g->idleness_ns) {
        g->idle = true;
        op->out->emit_idle(op->out, true);
    }
    op->next_processing_ns = next_tick(g, now_ns);
}

void
watermark_generator_after_record(struct stream_operator *op, struct watermark_generator *g)
{
    if (g->max_timestamp != INT64_MIN && g->max_timestamp - g->bound_ms - 1 > g->emitted)
        emit(op, g, g->max_timestamp - g->bound_ms - 1);
}
