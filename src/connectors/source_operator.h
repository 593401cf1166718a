/* The operator of the Source API's sources (Flink's SourceOperator): runs a
 * spate_source_reader (include/spate/source.h) in its subtask, gets its
 * splits from the JobMaster's source coordinator (task_info.request_splits)
 * and from its restored state, emits what it reads through a ReaderOutput
 * (per-split watermarks with the strategy's idleness) and checkpoints its
 * splits' positions. Task thread only. */
#ifndef SPATE_CONNECTORS_SOURCE_OPERATOR_H
#define SPATE_CONNECTORS_SOURCE_OPERATOR_H

#include <spate/source.h>

#include "streaming/operator.h"
#include "streaming/watermark_generator.h"

/* A ReaderOutput: one source_run per poll; per-split watermarks once a
 * second split or a record's own timestamp shows. */
struct spate_reader_output {
    struct stream_operator *op;
    struct source_run run;
    struct split_time {
        int64_t max_timestamp; /* INT64_MIN: no record yet */
        uint64_t last_ns;      /* CLOCK_MONOTONIC of its last record */
    } * splits;
    uint32_t nsplits;
    uint64_t now_ns;
};

/* spate_reader_output_collect for the built-in readers, inlined: one
 * split's records without their own timestamps (the common case) are the
 * sources' batched run, the rest goes the per-split way. */
void source_output_collect_slow(struct spate_reader_output *out, uint32_t split, const void *rec,
                                int64_t timestamp_ms);

static inline void
source_output_collect(struct spate_reader_output *out, uint32_t split, const void *rec,
                      int64_t timestamp_ms)
{
    if (likely(split == 0 && timestamp_ms == SPATE_NO_TIMESTAMP && out->nsplits == 0))
        source_run_emit(&out->run, rec);
    else
        source_output_collect_slow(out, split, rec, timestamp_ms);
}

/* A poll's emitting: begin, the reader's collects, end. */
void source_output_begin(struct spate_reader_output *out, struct stream_operator *op);
void source_output_end(struct spate_reader_output *out);
void source_output_release(struct spate_reader_output *out);

/* The source of an operator kind that is built on the Source API (NULL:
 * the kind is not), with the configuration its enumerator and reader get:
 * the JobMaster makes its coordinator from it. */
const spate_source *source_operator_source(const struct operator_settings *settings,
                                           const void **config);

#endif
