/* The configuration of each operator kind that streaming runs itself, one
 * struct per kind family (the sources' and sinks' are connector_config.h):
 * what the running operator needs beyond the settings every kind has (name,
 * record types, key selectors, declared states, params, open and close).
 * The API calls set it in the StreamGraph node's `opconf`
 * (stream_graph.c), the JobGraph carries it (job_graph_codec.c decodes it
 * straight into the kind's struct, in the decoded jg_operator's `opconf`)
 * and the operator reads it through stream_operator.conf
 * (operator_settings.conf). Plain data, read-only once built. */
#ifndef SPATE_STREAMING_OPERATOR_CONFIG_H
#define SPATE_STREAMING_OPERATOR_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <spate/spate.h>

/* OP_MAP, OP_FILTER, OP_FLAT_MAP, OP_SINK: one user function called per
 * record, by the kind's signature. */
struct function_config {
    union {
        spate_map_fn map;
        spate_filter_fn filter;
        spate_flat_map_fn flat_map;
        spate_sink_fn sink;
        void *any; /* what the codec stores */
    } fn;
};

/* OP_PROCESS: a process function (Flink's ProcessFunction, or
 * KeyedProcessFunction on a keyed stream) and its onTimer (NULL: none). */
struct process_config {
    spate_flat_map_fn fn;
    spate_on_timer_fn on_timer;
};

/* OP_REDUCE, OP_SUM: the current value per key (a ValueState of the
 * record type), combined by reduce or by adding field sum_field (-1: the
 * record itself is the number). */
struct keyed_reduce_config {
    spate_reduce_fn reduce; /* OP_REDUCE */
    int sum_field;          /* OP_SUM */
};

/* OP_CO_MAP, OP_CO_PROCESS, OP_BROADCAST_PROCESS: a function per input and,
 * for the process kinds, onTimer (NULL: none). fn1/fn2 are spate_map_fn for
 * OP_CO_MAP, spate_flat_map_fn for the process kinds. */
struct two_input_config {
    void *fn1;
    void *fn2;
    spate_on_timer_fn on_timer;
};

/* How a window operator's trigger and evictor are chosen. */
enum trigger_kind {
    TRIGGER_DEFAULT, /* the assigner's: event time, processing time, never */
    TRIGGER_EVENT_TIME,
    TRIGGER_PROCESSING_TIME,
    TRIGGER_COUNT,
    TRIGGER_NEVER,
    TRIGGER_CUSTOM,
};

enum evictor_kind {
    EVICTOR_NONE,
    EVICTOR_COUNT,
    EVICTOR_TIME,
    EVICTOR_CUSTOM,
};

enum window_function_kind {
    WINDOW_FN_NONE, /* not given yet */
    WINDOW_FN_REDUCE,
    WINDOW_FN_AGGREGATE,
    WINDOW_FN_PROCESS,
};

/* OP_WINDOW: a window operator's settings (Flink's WindowOperator). */
struct window_config {
    spate_window_assigner assigner;
    enum trigger_kind trigger;
    int64_t trigger_count;
    bool purging; /* count windows: fire and purge */
    spate_trigger custom;
    enum evictor_kind evictor;
    int64_t evictor_value;
    spate_evictor_fn evictor_fn;
    int64_t lateness_ms;
    char *late_tag;
    enum window_function_kind function;
    spate_reduce_fn reduce;
    spate_aggregate agg;
    spate_process_window_fn process;
};

/* OP_SQL_CALC, OP_SQL_AGG, OP_SQL_JOIN, OP_SQL_RANK, OP_SQL_OVER,
 * OP_SQL_LOOKUP_JOIN: SQL's compiled program, aggregation, join, rank,
 * OVER or lookup join (src/sql's sql.proto Calc, Aggregate, Join, Rank,
 * Over, LookupJoin; encoded), which only src/sql reads: streaming carries
 * the bytes. */
struct sql_config {
    uint8_t *program;
    size_t program_len;
};

/* One of the above, by the node's kind (OP_ASSIGN_TIMESTAMPS has none: its
 * strategy is the watermark_config every node has, as a source's). */
union operator_config {
    struct function_config function;
    struct process_config process;
    struct keyed_reduce_config keyed_reduce;
    struct two_input_config two_input;
    struct window_config window;
    struct sql_config sql;
};

#endif
