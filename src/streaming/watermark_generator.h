/* A WatermarkStrategy at work on an operator's output: Flink's
 * TimestampAssigner with its WatermarkGenerator (bounded out-of-orderness,
 * punctuated, with idleness). One mechanism for the two places Flink uses
 * it: the timestamps/watermarks operator (TimestampsAndWatermarksOperator)
 * and a source that carries its strategy itself (fromSource with a
 * WatermarkStrategy, SourceOutputWithWatermarks), which stamps its records
 * as it emits them, with no operator between.
 *
 * Per record (watermark_generator_on_event, inline): the timestamp and the
 * largest one seen. Per tick of pipeline.auto-watermark-interval
 * (watermark_generator_on_periodic, from the task's processing-time work):
 * the periodic watermark and idleness. Task thread only. */
#ifndef SPATE_STREAMING_WATERMARK_GENERATOR_H
#define SPATE_STREAMING_WATERMARK_GENERATOR_H

#include <stdbool.h>
#include <stdint.h>

#include "core/util.h"
#include "streaming/operator.h"

struct watermark_generator {
    spate_timestamp_fn timestamp_fn; /* NULL: the records' own timestamps */
    spate_watermark_fn watermark_fn; /* punctuated watermarks; NULL: periodic */
    int64_t bound_ms;
    int64_t max_timestamp; /* INT64_MIN before the first record */
    int64_t emitted;       /* the last watermark sent */
    uint64_t interval_ns;
    uint64_t idleness_ns;     /* 0: never idle */
    uint64_t last_record_ns;  /* as of the last tick that saw records */
    uint64_t records_at_tick; /* the operator's records_out at that tick */
    bool idle;
};

/* For op (which emits the records the generator stamps) by config; sets
 * op->next_processing_ns to the first tick. */
struct watermark_generator *watermark_generator_new(struct stream_operator *op,
                                                    const struct watermark_config *config);
void watermark_generator_free(struct watermark_generator *g);

/* An idle stream's first record: active again. */
void watermark_generator_active(struct stream_operator *op, struct watermark_generator *g);
/* A punctuated watermark after the record of timestamp ts. */
void watermark_generator_punctuated(struct stream_operator *op, struct watermark_generator *g,
                                    const void *rec, int64_t ts);
/* The tick: the periodic watermark when event time advanced, idleness when
 * no record came for idleness_ns; sets op->next_processing_ns. */
void watermark_generator_on_periodic(struct stream_operator *op, struct watermark_generator *g,
                                     uint64_t now_ns);
/* With no interval (pipeline.auto-watermark-interval 0, as Flink SQL's
 * WatermarkAssigner): the watermark after a record, when it advanced. */
void watermark_generator_after_record(struct stream_operator *op, struct watermark_generator *g);

/* The timestamp of a record about to be emitted on op's output (ts: the
 * timestamp it came with). */
static inline int64_t
watermark_generator_on_event(struct stream_operator *op, struct watermark_generator *g,
                             const void *rec, int64_t ts)
{
    if (g->timestamp_fn != NULL)
        ts = g->timestamp_fn(&op->ctx, rec);
    /* RECORD_NO_TIMESTAMP (INT64_MIN) is never above the largest. */
    if (ts > g->max_timestamp)
        g->max_timestamp = ts;
    if (unlikely(g->idle))
        watermark_generator_active(op, g);
    return ts;
}

/* Emits a record of a source that carries its own watermark strategy:
 * stamped, with what the generator makes of it. */
static inline void
source_emit_stamped(struct stream_operator *op, struct watermark_generator *g, const void *rec)
{
    struct record_meta m = { watermark_generator_on_event(op, g, rec, RECORD_NO_TIMESTAMP), 0,
                             false };

    operator_emit(op, rec, &m);
    if (unlikely(g->watermark_fn != NULL))
        watermark_generator_punctuated(op, g, rec, m.timestamp);
    else if (unlikely(g->interval_ns == 0))
        watermark_generator_after_record(op, g);
}

/* A run of records a source emits in one go (a loop of its poll): how
 * every source emits. What each record needs is held in locals: the
 * output's collect, the timestamp function and the largest timestamp, the
 * count (into records_out at the end); every call in the loop may change
 * any memory, these not. Punctuated watermarks, and an idle stream (whose
 * first record makes it active), take source_emit_stamped per record. */
struct source_run {
    struct stream_operator *op;
    struct output *out;
    void (*collect)(struct output *self, const void *rec, const struct record_meta *meta);
    spate_timestamp_fn timestamp_fn; /* NULL: no timestamps */
    int64_t max_timestamp;
    uint64_t n;
    bool per_record;
};

static inline void
source_run_begin(struct source_run *r, struct stream_operator *op)
{
    struct watermark_generator *g = op->watermarks;

    r->op = op;
    r->out = op->out;
    r->collect = op->out->collect;
    r->timestamp_fn = g != NULL ? g->timestamp_fn : NULL;
    r->max_timestamp = g != NULL ? g->max_timestamp : INT64_MIN;
    r->n = 0;
    r->per_record = g != NULL && (g->watermark_fn != NULL || g->idle || g->interval_ns == 0);
}

static inline void
source_run_emit(struct source_run *r, const void *rec)
{
    struct record_meta m = { RECORD_NO_TIMESTAMP, 0, false };

    if (unlikely(r->per_record)) {
        source_emit_stamped(r->op, r->op->watermarks, rec);
        return;
    }
    if (r->timestamp_fn != NULL) {
        m.timestamp = r->timestamp_fn(&r->op->ctx, rec);
        if (m.timestamp > r->max_timestamp)
            r->max_timestamp = m.timestamp;
    }
    r->n++;
    r->collect(r->out, rec, &m);
}

static inline void
source_run_end(struct source_run *r)
{
    r->op->records_out += r->n;
    if (r->op->watermarks != NULL && !r->per_record)
        r->op->watermarks->max_timestamp = r->max_timestamp;
}

#endif
