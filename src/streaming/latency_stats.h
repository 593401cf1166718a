/* Latency tracking (Flink's LatencyMarker and LatencyStats): with
 * metrics.latency.interval set, each source subtask emits a marker at that
 * interval stamped with the wall-clock time, its operator id and its
 * subtask. Markers bypass every user function: each operator they reach
 * records now minus the marker's time in a histogram and passes the marker
 * on, to one target (a random channel of an exchange, as Flink's
 * RecordWriterOutput). The histograms are Flink's `latency`, in a group of
 * the task's named by the granularity (metrics.latency.granularity):
 * single (operator_id, operator_subtask_index), operator (source_id first)
 * or subtask (source_id, source_subtask_index first). Task thread only. */
#ifndef SPATE_STREAMING_LATENCY_STATS_H
#define SPATE_STREAMING_LATENCY_STATS_H

#include <stdint.h>

#include "core/config.h"
#include "core/id.h"
#include "streaming/operator.h"

enum latency_granularity {
    LATENCY_SINGLE,   /* one histogram per operator subtask */
    LATENCY_OPERATOR, /* ... per source operator */
    LATENCY_SUBTASK,  /* ... per source subtask */
};

struct latency_tracking {
    int64_t interval_ms; /* 0: off */
    enum latency_granularity granularity;
    int history_size; /* latencies a histogram keeps */
};

/* metrics.latency.interval, .granularity and .history-size. */
int latency_tracking_from_config(const struct config *conf, struct latency_tracking *out,
                                 spate_error *err);

struct latency_marker {
    int64_t marked_time; /* wall clock, ms */
    spate_id source_id;  /* the source operator's id */
    int32_t source_subtask;
};

/* On the wire (stream_element.h): tag, i64 time, 16 bytes id, i32 subtask. */
#define LATENCY_MARKER_ELEMENT_SIZE 29

/* Records now - m->marked_time in op's histogram for m's source. */
void latency_stats_report(struct stream_operator *op, const struct latency_marker *m);
/* Unregisters and frees op's histograms (NULL-safe). */
void latency_stats_free(struct latency_stats *s);

#endif
