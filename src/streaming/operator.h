/* Running operators (Flink's StreamOperator) and the outputs between them.
 * Chained operators call each other directly, passing records by pointer:
 * no copy, no serialization inside a chain. Everything here runs on one task
 * thread, which owns the operators: no locks. */
#ifndef SPATE_STREAMING_OPERATOR_H
#define SPATE_STREAMING_OPERATOR_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <spate/spate.h>

#include "core/util.h"
#include "metrics/metrics.h"
#include "streaming/stream_graph.h"

#define RECORD_NO_TIMESTAMP INT64_MIN

/* What travels with a record besides its value. */
struct record_meta {
    int64_t timestamp; /* RECORD_NO_TIMESTAMP when none */
    uint64_t key_hash; /* valid when has_key_hash */
    bool has_key_hash;
};

/* Copies a record's meta field by field. A struct copy reads it with one
 * wide load, which stalls when its fields were just stored one by one (a
 * failed store-to-load forwarding, a dozen cycles or more per record). */
static inline void
record_meta_copy(struct record_meta *dst, const struct record_meta *src)
{
    int64_t timestamp = src->timestamp;
    uint64_t key_hash = src->key_hash;

    /* Keeps the compiler from merging the two loads into one vector load. */
    __asm__("" : "+r"(timestamp), "+r"(key_hash));
    dst->timestamp = timestamp;
    dst->key_hash = key_hash;
    dst->has_key_hash = src->has_key_hash;
}

struct latency_marker;

/* Where an operator's records go: the next chained operator(s), or an
 * exchange. */
struct output {
    void (*collect)(struct output *self, const void *rec, const struct record_meta *meta);
    /* Event time advanced (RECORD_MAX_WATERMARK at the end of bounded input). */
    void (*emit_watermark)(struct output *self, int64_t watermark);
    /* The stream went idle (no watermarks for a while) or active again. */
    void (*emit_idle)(struct output *self, bool idle);
    /* A latency marker passing by (latency_stats.h): each operator it
     * reaches records its latency, no user function sees it, and it goes
     * on to one target (Flink's emitLatencyMarker). NULL: dropped. */
    void (*emit_latency_marker)(struct output *self, const struct latency_marker *m);
    /* n records of a plain type (types.h: their bytes are their serialized
     * form), stride bytes apart from recs, with their timestamps (ts[i];
     * ts NULL: none) and no key hash: what n calls of collect would do,
     * in one call, so that what stays the same over the run is looked at
     * once. NULL: the caller collects each (every output but the keyed
     * exchange of plain records by an 8-byte key, exchange_output.c,
     * and a chained operator that takes runs, operator_takes_runs). */
    void (*collect_run)(struct output *self, const void *recs, size_t stride, const int64_t *ts,
                        int n);
    /* The last watermark emitted: the emitting operator's
     * currentOutputWatermark (INT64_MIN before the first). */
    struct metric_gauge watermark;
};

#define RECORD_MAX_WATERMARK INT64_MAX

/* The most records a run that an operator makes holds (a source's, a
 * chained operator's): enough that a call's cost and the run's set-up
 * vanish per record, few enough that the run stays in the first-level
 * cache. */
#define OPERATOR_RUN 64

/* Where a chained operator that takes runs (operator_vtable.process_run)
 * builds the runs it hands on: up to OPERATOR_RUN records of its output
 * type, stride bytes apart, and their timestamps. */
struct operator_run {
    uint8_t *recs;
    size_t stride;
    size_t size; /* of a record */
    int64_t ts[OPERATOR_RUN];
};

/* A bump allocator for the memory user functions ask for during a call
 * (spate_ctx_alloc), reset between calls. */
struct scratch {
    uint8_t *chunk;
    size_t used, cap;
    uint8_t **old; /* chunks outgrown during a call, freed at reset */
    size_t nold;
};

struct accumulators;
struct connector_table;
struct heap_keyed_backend;
struct state_backend_options;
struct stream_operator;
struct watermark_generator;

/* The context user functions get (spate.h's spate_ctx): the operator's
 * settings and the current record's. */
struct spate_ctx {
    struct stream_operator *op;
    const void *params;
    size_t params_len;
    int subtask;
    int parallelism;
    int max_parallelism;
    const char *task_name;
    void *user;
    struct record_meta meta; /* of the record being processed */
    /* Keyed operators: the current key and namespace (a window, or none),
     * which the operator's keyed state backend reads. */
    struct state_key_context keyctx;
    spate_time_window window; /* window functions and triggers: the window */
    struct scratch scratch;
    struct accumulators *accumulators;
    char *failure; /* set by spate_ctx_fail */
    /* The lazy key context: an operator's per-record path may leave meta,
     * keyctx and window as they were and name the record they belong to
     * here instead, for settle to set them when a function reads them
     * (ctx_settle, in every spate_ctx_* and state call that does); NULL:
     * they are current. The operator clears it after the record. */
    const void *pending;
    const struct record_meta *pending_meta;
    void (*settle)(spate_ctx *ctx);
};

/* Makes the pending record's key context current (a function reads it). */
static inline void
ctx_settle(const spate_ctx *ctx)
{
    if (unlikely(ctx != NULL && ctx->pending != NULL))
        ctx->settle((spate_ctx *)ctx);
}

/* Where the task comes from, for operators that need more than their own
 * settings (input splits, the print sink's stream). */
struct task_info {
    int subtask;
    int parallelism;
    int max_parallelism;
    int attempt;
    const char *task_name;
    struct accumulators *accumulators;
    FILE *print_out; /* where print sinks write: stdout */
    /* A Source API reader's request to its split enumerator on the
     * JobMaster (jm.request_split): registers the reader, or asks for a
     * split, having taken its state last in checkpoint last_checkpoint;
     * add gets each split assigned to it since its last request (and may
     * fail, which ends the call), *no_more whether the enumerator said no
     * more come. 0, or < 0 on failure. */
    int (*request_splits)(void *data, int operator_index, bool register_reader, bool request_split,
                          int64_t last_checkpoint,
                          int (*add)(void *arg, const void *split, size_t len), void *arg,
                          bool *no_more, spate_error *err);
    void *split_data;
    /* The job takes checkpoints: sinks commit by two-phase commit. */
    bool checkpointing;
    /* The source and sink kinds (src/connectors/), installed by whoever
     * runs the task (connectors_builtin): operator_new finds them here. */
    const struct connector_table *connectors;
    /* Which keyed state backend operators get (NULL: the heap). */
    const struct state_backend_options *state_backend;
    /* The task's I/O metric group, inside which each operator's metric
     * group goes (operator_metrics.h); NULL: none (metrics still count,
     * unreported). */
    struct metric_group *metrics;
    /* Latency tracking (latency_stats.h); NULL or an interval of 0: off. */
    const struct latency_tracking *latency;
};

enum source_status {
    SOURCE_MORE,    /* call poll again */
    SOURCE_WAITING, /* nothing now: wait for wait_fd or wait_until_ns */
    SOURCE_END,     /* bounded input done */
};

/* What an operator kind keeps that checkpoints must capture. Every kind
 * declares it (0 is no declaration, which no checkpoint takes): a kind
 * that keeps state anywhere else than its keyed backend or its own state
 * (snapshot_state) would lose it at every restore. */
enum operator_state {
    OPERATOR_STATELESS = 1 << 0,
    OPERATOR_KEYED_STATE = 1 << 1, /* in op->backend: keyed state, timers */
    OPERATOR_OWN_STATE = 1 << 2,   /* snapshot_state and restore_state */
    /* The keyed state is there only when the operator is keyed or
     * declares state (process functions on a non-keyed stream). */
    OPERATOR_STATE_IF_KEYED = 1 << 3,
};

struct operator_vtable {
    /* enum operator_state, or'ed */
    unsigned state;
    int (*open)(struct stream_operator *op, spate_error *err);
    void (*process)(struct stream_operator *op, const void *rec, const struct record_meta *meta);
    /* Two-input operators: a record of the second input. */
    void (*process2)(struct stream_operator *op, const void *rec, const struct record_meta *meta);
    /* The input ended (bounded sources): emit final results. */
    void (*end_input)(struct stream_operator *op);
    void (*close)(struct stream_operator *op);
    /* Sources: emit up to budget records. On failure err is set and the
     * status is SOURCE_END. */
    enum source_status (*poll)(struct stream_operator *op, int budget, spate_error *err);
    /* Event time reached watermark: fire what is due, then pass it on. NULL:
     * pass it on. */
    void (*process_watermark)(struct stream_operator *op, int64_t watermark);
    /* op->next_processing_ns passed (timers, periodic watermarks). */
    void (*on_processing_time)(struct stream_operator *op, uint64_t now_ns);
    /* A run of keyed plain records where they are in the input buffer
     * (keyed_run.h: timed, with their timestamps, or without), handed to
     * this operator's process with it inlined; the number taken, counted
     * in records_in. NULL: one operator_process call each. */
    int (*process_keyed_run)(struct stream_operator *op, void *in_rec, size_t plain,
                             const uint8_t **pos, const uint8_t *end, int max, bool timed);
    /* The same for keyed records of their own lengths (keyed_run.h's
     * keyed_run_bodies), of either shape; in_rec is the task's storage for
     * one record. NULL: keyed_run_var. */
    int (*process_keyed_run_var)(struct stream_operator *op, void *in_rec, const uint8_t **pos,
                                 const uint8_t *end, int max);
    /* A run of plain records (output.collect_run's arguments), each
     * taken as process takes it, what it emits handed on in runs to
     * op->out->collect_run, built in op->run: the kinds that emit at most
     * one record per record, and only through their main output (map,
     * filter; their functions emit nothing with spate_emit). Used only
     * when operator_takes_runs. NULL: one operator_process call each. */
    void (*process_run)(struct stream_operator *op, const uint8_t *recs, size_t stride,
                        const int64_t *ts, int n);
    /* Checkpoints: the state the operator keeps itself (a source's
     * positions, a sink's pending transactions), as opaque elements added
     * to out with op_state_add; restore_state gets them back one by one
     * (on rescaling, spread over the new subtasks). NULL: keeps none. */
    void (*snapshot_state)(struct stream_operator *op, int64_t checkpoint_id, struct byte_buf *out);
    int (*restore_state)(struct stream_operator *op, const uint8_t *bytes, size_t len,
                         spate_error *err);
    /* Checkpoint checkpoint_id is complete (two-phase commit sinks commit). */
    void (*checkpoint_complete)(struct stream_operator *op, int64_t checkpoint_id);
    /* The own state's elements are union list state: on rescaling every
     * new subtask gets all of them (else they are split evenly). */
    bool own_state_union;
};

/* A source or sink kind that a folder above streaming implements (the
 * connectors): streaming makes it by kind without including that folder. */
struct connector_entry {
    enum operator_kind kind;
    const struct operator_vtable *vt;
};

struct connector_table {
    const struct connector_entry *entries;
    size_t count;
    /* Searched next (a folder's table before the one it builds on: SQL's
     * operators, then the connectors); NULL: none. */
    const struct connector_table *next;
};

/* Where an operator's side output `tag` goes. */
struct side_output {
    const char *tag;
    uint64_t id; /* output_tag_id(tag): what spate_ctx_output matches */
    struct output *out;
};

struct stream_operator {
    const struct operator_vtable *vt;
    const struct operator_settings *config; /* kind, types, keys, states, params */
    int index;                              /* in its chain */
    struct spate_ctx ctx;
    struct output *out;
    struct side_output *sides; /* consumed side outputs */
    int nsides;
    struct keyed_state_backend *backend; /* keyed operators with state or timers */
    bool owns_backend;                   /* made by operator_new for operator state */
    const struct task_info *task;
    void *impl; /* the kind's own state */
    /* Sources waiting: a descriptor to watch or a time to wake up. */
    int wait_fd;
    uint64_t wait_until_ns;
    /* Sources stopped by cancellation or stop-with-savepoint. */
    bool stopping;
    /* The kind's open succeeded: the user's close runs at the end. */
    bool opened;
    /* Restored from a checkpoint that holds its state, though maybe none
     * of it for this subtask (task_restore): a source given no split of
     * the checkpoint's owns none, rather than a fresh start's. */
    bool restored;
    /* Event time as this operator has seen it. */
    int64_t current_watermark;
    /* Where process_run builds its runs, made by the kind's open when its
     * output type is plain; NULL: the operator takes no runs. */
    struct operator_run *run;
    /* Its metric group and its metrics (operator_metrics.h), made with
     * the operator. */
    struct operator_metrics *metrics;
    /* Event time as its input gave it (currentInputWatermark) and, for a
     * two-input head, each input's (currentInput1Watermark, ...2...). */
    struct metric_gauge input_watermark;
    struct metric_gauge input_watermarks[2];
    /* Its latency histograms, one per source as the granularity says
     * (latency_stats.h); NULL until the first marker. */
    struct latency_stats *latency;
    /* The watermark strategy at work on this operator's output (a
     * timestamps/watermarks operator, or a source that carries its own), or
     * NULL; it owns next_processing_ns (its ticks). */
    struct watermark_generator *watermarks;
    /* When on_processing_time wants to run (CLOCK_MONOTONIC ns; 0: never). */
    uint64_t next_processing_ns;
    /* RocksDB's native metrics of its backend that the configuration
     * asks for (state.backend.rocksdb.metrics.*): gauges of its group,
     * [i] for rocksdb_native_metrics[i] (NULL: not reported), read when
     * native_metrics_ns passed (operator_backend_metrics). NULL: none. */
    struct metric_value **native_metrics;
    uint64_t native_metrics_ns;
    /* Records in and out on the main output (Flink's numRecordsIn and
     * numRecordsOut of an operator), reported with the job's result. */
    uint64_t records_in, records_out;
    /* The kind's own configuration (operator_config.h, or
     * connector_config.h for the sources and sinks), or NULL for a kind
     * that has none: the kind's functions and settings are read here, not
     * in config. Last, so that the fields the per-record paths read keep
     * their places. */
    const void *conf;
};

/* Makes op->backend, a keyed state backend of the task's type
 * (task_info.state_backend) for op's declared states and nextra more (the
 * kind's own: window contents, a reduce's value); operator_backend_free
 * disposes of it. */
int operator_backend_init(struct stream_operator *op, const struct state_decl *extra, int nextra,
                          spate_error *err);
void operator_backend_free(struct stream_operator *op);
/* A reducing or aggregating state's stored value of the current key and
 * namespace: an aggregate's accumulator, not its result (write it back
 * with spate_value_update). */
bool state_value_get_internal(spate_state *st, void *out);
/* Reads op's native RocksDB metrics into their gauges when they are due
 * (once a second; task thread). */
void operator_backend_metrics(struct stream_operator *op, uint64_t now_ns);

/* Makes the running operator for config; out is where its records go. */
int operator_new(const struct operator_settings *config, int index, const struct task_info *task,
                 struct output *out, struct stream_operator **opp, spate_error *err);
void operator_free(struct stream_operator *op);

/* A user function's failure (spate_ctx_fail), or NULL. */
static inline const char *
operator_failure(const struct stream_operator *op)
{
    return op->ctx.failure;
}

/* Hands op a record of its first (process) or second (process2) input. */
static inline void
operator_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    op->records_in++;
    op->vt->process(op, rec, meta);
}

static inline void
operator_process2(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    op->records_in++;
    op->vt->process2(op, rec, meta);
}

/* Whether op takes runs of plain records (operator_process_run): its kind
 * has process_run, its output type is plain, it has no side outputs (whose
 * records would overtake the run's) and its main output takes runs. */
static inline bool
operator_takes_runs(const struct stream_operator *op)
{
    return op->vt->process_run != NULL && op->run != NULL && op->nsides == 0 &&
           op->out->collect_run != NULL;
}

/* Hands op a run of n plain records of its input (output.collect_run's
 * arguments); op takes runs. */
static inline void
operator_process_run(struct stream_operator *op, const uint8_t *recs, size_t stride,
                     const int64_t *ts, int n)
{
    op->records_in += (uint64_t)n;
    op->vt->process_run(op, recs, stride, ts, n);
}

/* Emits a record on op's main output. */
static inline void
operator_emit(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    op->records_out++;
    op->out->collect(op->out, rec, meta);
}

/* Whether op holds state a checkpoint cannot capture (its kind declares
 * none, or declares keyed state it has no backend for, or state of its
 * own without snapshot_state): 0, or an error naming the operator. */
int operator_check_state(const struct stream_operator *op, spate_error *err);

/* Adds one element of an operator's own state (snapshot_state). */
void op_state_add(struct byte_buf *out, const void *bytes, size_t len);

/* Advances op's event time: its process_watermark, or passes it on. */
void operator_process_watermark(struct stream_operator *op, int64_t watermark);
/* op->next_processing_ns passed: its watermark generator's tick, or its
 * on_processing_time. */
void operator_on_processing_time(struct stream_operator *op, uint64_t now_ns);

void scratch_reset(struct scratch *s);
void scratch_release(struct scratch *s);

/* Before a call into a user function: the scratch memory of the previous
 * call is free again (ctx_before_call: for a loop that holds the context
 * alone, not its operator too). */
static inline void
ctx_before_call(spate_ctx *ctx)
{
    if (ctx->scratch.used != 0)
        scratch_reset(&ctx->scratch);
}

static inline void
operator_before_call(struct stream_operator *op)
{
    ctx_before_call(&op->ctx);
}

/* Zeroed storage for one record of type t, aligned for any field: where an
 * operator builds the records it emits. */
void *operator_out_storage(const struct spate_type *t);

#endif
