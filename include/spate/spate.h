/* spate's C DataStream API, for job authors. A job is a shared library that
 * exports
 *
 *     int spate_job_main(spate_env *env, int argc, char **argv);
 *
 * which builds a dataflow on env and calls spate_execute(). The handles are
 * opaque; building calls never return NULL: a misuse is remembered by the
 * environment and reported by spate_execute(), so calls can be nested the way
 * Flink's are chained:
 *
 *     spate_name(spate_uid(spate_map(in, parse, spate_type_int64()), "parse"), "Parse");
 *
 * User functions run on task threads, possibly in other processes: they get
 * their parameters as bytes captured when the graph was built (spate_params),
 * never through globals or pointers. See docs/api.md. */
#ifndef SPATE_SPATE_H
#define SPATE_SPATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <spate/error.h>
#include <spate/export.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct spate_env spate_env;       /* StreamExecutionEnvironment */
typedef struct spate_stream spate_stream; /* DataStream (and, after key_by, KeyedStream) */
typedef struct spate_ctx spate_ctx;       /* RuntimeContext + Collector of one call */
typedef struct spate_type spate_type;     /* a record type */
typedef struct spate_counter spate_counter;
typedef struct spate_iter spate_iter; /* iterates list and map state, window elements */
/* Metrics of an operator (Flink's MetricGroup, Counter, Gauge, Meter,
 * Histogram): see spate_ctx_metric_group. */
typedef struct spate_metric_group spate_metric_group;
typedef struct spate_metric_counter spate_metric_counter;
typedef struct spate_metric_gauge spate_metric_gauge;
typedef struct spate_metric_meter spate_metric_meter;
typedef struct spate_metric_histogram spate_metric_histogram;

/* ---- records and types -------------------------------------------------- */

/* A string (bytes) record or field: a view, borrowed for the call. */
typedef struct spate_str {
    const char *data;
    size_t len;
} spate_str;

/* Bytes borrowed for the call. */
typedef struct spate_bytes {
    const void *data;
    size_t len;
} spate_bytes;

/* Built-in types. In memory: int64_t, double, spate_str. */
SPATE_API const spate_type *spate_type_int64(void);
SPATE_API const spate_type *spate_type_double(void);
SPATE_API const spate_type *spate_type_string(void);

/* A tuple of n fields; in memory a C struct of the fields in order with their
 * natural alignment, e.g. (string, int64) is
 *     struct { spate_str word; int64_t count; }
 * Fields may be tuples themselves. */
SPATE_API const spate_type *spate_type_tuple(spate_env *env, int n,
                                             const spate_type *const *fields);
/* Where field i lives inside a tuple record. */
SPATE_API size_t spate_type_field_offset(const spate_type *tuple, int i);
/* The in-memory size of a record of the type. */
SPATE_API size_t spate_type_size(const spate_type *type);

/* Writes rec's serialized form into out (cap bytes); returns its length. If it
 * needs more than cap, returns the length it needs (out's content is then
 * undefined) and is called again with enough room. */
typedef size_t (*spate_serialize_fn)(const void *rec, uint8_t *out, size_t cap);
/* Reads a serialized record of len bytes into rec (the type's in-memory
 * size). Pointers in rec may point into bytes. 0, or -1 when malformed. */
typedef int (*spate_deserialize_fn)(const uint8_t *bytes, size_t len, void *rec);
/* Writes a readable form like snprintf (for print and text sinks). */
typedef int (*spate_format_fn)(const void *rec, char *buf, size_t cap);

/* A user type: name and version are recorded with state and checkpoints.
 * Without serialize/deserialize the record is `size` plain bytes (no
 * pointers), copied as they are. */
typedef struct spate_type_def {
    const char *name;
    int version;
    size_t size;
    spate_serialize_fn serialize;
    spate_deserialize_fn deserialize;
    spate_format_fn format;
} spate_type_def;

SPATE_API const spate_type *spate_type_custom(spate_env *env, const spate_type_def *def);

/* ---- user functions ------------------------------------------------------ */

/* Writes the output record into out (storage of the output type's size). */
typedef void (*spate_map_fn)(spate_ctx *ctx, const void *in, void *out);
typedef bool (*spate_filter_fn)(spate_ctx *ctx, const void *in);
/* Emits zero or more records with spate_emit. Also the process function. */
typedef void (*spate_flat_map_fn)(spate_ctx *ctx, const void *in);
/* out = acc ⊕ in, all of the stream's type; out may alias neither. */
typedef void (*spate_reduce_fn)(spate_ctx *ctx, const void *acc, const void *in, void *out);
/* The key of a record, as bytes: a view into the record, or into scratch
 * (cap bytes). Equal keys must give equal bytes. */
typedef spate_bytes (*spate_key_fn)(spate_ctx *ctx, const void *in, void *scratch, size_t cap);
typedef void (*spate_sink_fn)(spate_ctx *ctx, const void *in);
/* The record at position index (0, 1, 2, ...) of a generated stream. */
typedef void (*spate_generator_fn)(spate_ctx *ctx, uint64_t index, void *out);
/* RichFunction's open and close, once per parallel instance. */
typedef void (*spate_open_fn)(spate_ctx *ctx);
typedef void (*spate_close_fn)(spate_ctx *ctx);

/* ---- the environment ----------------------------------------------------- */

/* Parallelism for operators that set none (parallelism.default, -p). */
SPATE_API void spate_env_set_parallelism(spate_env *env, int parallelism);
SPATE_API int spate_env_parallelism(const spate_env *env);
/* Number of key groups (pipeline.max-parallelism, default 128). */
SPATE_API void spate_env_set_max_parallelism(spate_env *env, int max_parallelism);
SPATE_API void spate_env_disable_chaining(spate_env *env);
/* Longest a partly filled network buffer waits before it is sent
 * (execution.buffer-timeout, default 5 ms); 0 sends after every record. */
SPATE_API void spate_env_set_buffer_timeout(spate_env *env, int64_t ms);
/* Checkpoints every interval_ms (at least 10), with barriers aligned
 * (exactly once) or not (at least once); over the configuration's
 * execution.checkpointing.interval and .mode. The other settings
 * (timeout, pauses, folder, restart strategy) come from the configuration. */
SPATE_API void spate_env_enable_checkpointing(spate_env *env, int64_t interval_ms,
                                              bool exactly_once);

/* Builds the JobGraph and runs it with the executor the caller installed
 * (mini cluster, cluster over REST, or plan only). 0 when the job finished;
 * a negative SPATE_E* code otherwise, with the reason in spate_env_error(). */
SPATE_API int spate_execute(spate_env *env, const char *job_name);
/* The first error of building or running, or NULL. */
SPATE_API const spate_error *spate_env_error(const spate_env *env);

/* ---- sources --------------------------------------------------------------- */

/* The n records at records (of type's in-memory size each), copied now. */
SPATE_API spate_stream *spate_source_collection(spate_env *env, const spate_type *type,
                                                const void *records, size_t n);
/* Strings, copied now. */
SPATE_API spate_stream *spate_source_strings(spate_env *env, const char *const *strings, size_t n);
/* Records gen(0) .. gen(count-1) (count 0: unbounded), at most
 * rate_per_second of them per second over all subtasks (0: as fast as
 * possible). The indexes are cut into max-parallelism splits (s, s+G,
 * s+2G, ...) spread over the subtasks; each subtask emits its own in
 * increasing order. */
SPATE_API spate_stream *spate_source_generator(spate_env *env, spate_generator_fn gen,
                                               const spate_type *type, uint64_t count,
                                               double rate_per_second);
/* Lines of text from a TCP server (spate_str records, without the newline). */
SPATE_API spate_stream *spate_source_socket(spate_env *env, const char *host, int port);
/* Lines of the files at path (a file or a folder of files), read in splits
 * that the JobMaster hands out to the subtasks. A relative path is the
 * folder's of the process that builds the job (the client), made absolute
 * here; a file: URI is its path; another scheme (s3://...) is an error. */
SPATE_API spate_stream *spate_source_text_file(spate_env *env, const char *path);

/* Records of type from the connector named connector (Flink's fromSource,
 * and the `connector` option of a table): "kafka" is the plugin library
 * libspate_kafka.so, found in lib/plugins. options are key, value pairs
 * ending in NULL, by the names of Flink's connector options, e.g.
 *     const char *const opts[] = { "topic", "words",
 *         "properties.bootstrap.servers", "localhost:9092",
 *         "value.format", "string", NULL };
 *     spate_from_source(env, "kafka", spate_type_string(), opts);
 * copied now; the connector checks them when its tasks open it (an unknown
 * connector or option fails the job with a message naming it). */
SPATE_API spate_stream *spate_from_source(spate_env *env, const char *connector,
                                          const spate_type *type, const char *const *options);

/* ---- event time ---------------------------------------------------------- */

/* A record without a timestamp (the Source and Sink APIs). */
#define SPATE_NO_TIMESTAMP INT64_MIN

/* A record's event timestamp, in milliseconds. */
typedef int64_t (*spate_timestamp_fn)(spate_ctx *ctx, const void *rec);
/* A punctuated watermark for a record (its timestamp at hand), or INT64_MIN
 * for none. */
typedef int64_t (*spate_watermark_fn)(spate_ctx *ctx, const void *rec, int64_t timestamp);

/* Flink's WatermarkStrategy. The watermark trails the largest timestamp seen
 * by max_out_of_orderness_ms (0: monotonous timestamps), emitted every
 * pipeline.auto-watermark-interval; or, with `watermark`, whatever that
 * function says per record. With idleness_ms > 0 a subtask that saw no
 * record that long is idle and does not hold back event time downstream. */
typedef struct spate_watermark_strategy {
    spate_timestamp_fn timestamp; /* NULL: keep the records' timestamps */
    int64_t max_out_of_orderness_ms;
    spate_watermark_fn watermark;
    int64_t idleness_ms;
} spate_watermark_strategy;

static inline spate_watermark_strategy
spate_watermarks_bounded(spate_timestamp_fn timestamp, int64_t max_out_of_orderness_ms)
{
    spate_watermark_strategy s = { timestamp, max_out_of_orderness_ms, NULL, 0 };

    return s;
}

static inline spate_watermark_strategy
spate_watermarks_monotonous(spate_timestamp_fn timestamp)
{
    return spate_watermarks_bounded(timestamp, 0);
}

/* An operator that stamps the records of in and makes its watermarks from
 * them, per subtask (Flink's assignTimestampsAndWatermarks). */
SPATE_API spate_stream *
spate_assign_timestamps_and_watermarks(spate_stream *in, const spate_watermark_strategy *strategy);
/* The source stamps its records and makes the watermarks itself, as it
 * emits them, per subtask (Flink's fromSource with a WatermarkStrategy): no
 * operator between, the cheaper way when the timestamp is in the record
 * from the start. source must be a source; returns it. */
SPATE_API spate_stream *spate_source_with_watermarks(spate_stream *source,
                                                     const spate_watermark_strategy *strategy);

/* ---- transformations ---------------------------------------------------- */

SPATE_API spate_stream *spate_map(spate_stream *in, spate_map_fn fn, const spate_type *out_type);
SPATE_API spate_stream *spate_filter(spate_stream *in, spate_filter_fn fn);
SPATE_API spate_stream *spate_flat_map(spate_stream *in, spate_flat_map_fn fn,
                                       const spate_type *out_type);
/* A process function: like flat_map, with the record's timestamp and, on a
 * keyed stream, its key and keyed state at hand. */
SPATE_API spate_stream *spate_process(spate_stream *in, spate_flat_map_fn fn,
                                      const spate_type *out_type);

/* A keyed stream: records with equal keys go to the same subtask. */
SPATE_API spate_stream *spate_key_by(spate_stream *in, spate_key_fn key);
/* Keyed by the whole record (int64, double, string, or a plain-bytes type). */
SPATE_API spate_stream *spate_key_by_value(spate_stream *in);
/* Keyed by one field of a tuple. */
SPATE_API spate_stream *spate_key_by_field(spate_stream *in, int field);
/* Rolling reduce on a keyed stream: emits the new value per record. */
SPATE_API spate_stream *spate_reduce(spate_stream *keyed, spate_reduce_fn fn);
/* Rolling sum of an int64 or double field (-1: the record itself) on a keyed
 * stream; the other fields are those of the first record of the key. */
SPATE_API spate_stream *spate_sum(spate_stream *keyed, int field);

/* One stream of the records of both (of one type), as Flink's union. */
SPATE_API spate_stream *spate_union(spate_stream *a, spate_stream *b);
/* Two streams for one two-input operator (co_map, co_process,
 * broadcast_process); both keyed makes the operator keyed. */
SPATE_API spate_stream *spate_connect(spate_stream *a, spate_stream *b);
SPATE_API spate_stream *spate_co_map(spate_stream *connected, spate_map_fn map1, spate_map_fn map2,
                                     const spate_type *out_type);
/* Emit with spate_emit; on keyed streams with state and timers (spate_on_timer). */
SPATE_API spate_stream *spate_co_process(spate_stream *connected, spate_flat_map_fn fn1,
                                         spate_flat_map_fn fn2, const spate_type *out_type);
/* A broadcast stream carrying a broadcast state: a map every instance of the
 * operator it is connected to holds alike. Only process_broadcast writes it. */
SPATE_API spate_stream *spate_broadcast_state(spate_stream *in, const char *name,
                                              const spate_type *key_type,
                                              const spate_type *value_type);
SPATE_API spate_stream *spate_broadcast_process(spate_stream *connected,
                                                spate_flat_map_fn process_element,
                                                spate_flat_map_fn process_broadcast,
                                                const spate_type *out_type);

/* Partitioning. */
SPATE_API spate_stream *spate_forward(spate_stream *in);
SPATE_API spate_stream *spate_rebalance(spate_stream *in);
SPATE_API spate_stream *spate_rescale(spate_stream *in);
SPATE_API spate_stream *spate_shuffle(spate_stream *in);
SPATE_API spate_stream *spate_broadcast(spate_stream *in);
SPATE_API spate_stream *spate_global(spate_stream *in);

/* ---- keyed state, timers, side outputs ------------------------------------ */

typedef struct spate_state spate_state; /* one named state of an operator */

/* Flink's AggregateFunction: an accumulator of acc_type per key (and window). */
typedef struct spate_aggregate {
    const spate_type *acc_type;
    const spate_type *out_type;
    void (*create)(spate_ctx *ctx, void *acc);                  /* a fresh accumulator */
    void (*add)(spate_ctx *ctx, const void *in, void *acc);     /* acc += in */
    void (*result)(spate_ctx *ctx, const void *acc, void *out); /* out of the accumulator */
    void (*merge)(spate_ctx *ctx, const void *from, void *acc); /* acc += from (sessions) */
} spate_aggregate;

/* Declares keyed state on an operator of a keyed stream (a process
 * function, a keyed flat_map, ...). ttl_ms > 0: a value not written for that
 * long (processing time) is gone, and cleaned up as state is used. Inside the
 * operator's functions, spate_ctx_state(ctx, name) gives the state, scoped to
 * the current key. */
SPATE_API spate_stream *spate_value_state(spate_stream *op, const char *name,
                                          const spate_type *type, int64_t ttl_ms);
SPATE_API spate_stream *spate_list_state(spate_stream *op, const char *name, const spate_type *type,
                                         int64_t ttl_ms);
SPATE_API spate_stream *spate_map_state(spate_stream *op, const char *name,
                                        const spate_type *key_type, const spate_type *value_type,
                                        int64_t ttl_ms);
SPATE_API spate_stream *spate_reducing_state(spate_stream *op, const char *name,
                                             const spate_type *type, spate_reduce_fn fn,
                                             int64_t ttl_ms);
SPATE_API spate_stream *spate_aggregating_state(spate_stream *op, const char *name,
                                                const spate_aggregate *agg, int64_t ttl_ms);

/* Operator state (not keyed): a list per parallel instance, split over the
 * instances (or, union, given whole to each) when a job resumes at another
 * parallelism. Read and written with the list calls through spate_ctx_state. */
SPATE_API spate_stream *spate_operator_list_state(spate_stream *op, const char *name,
                                                  const spate_type *type);
SPATE_API spate_stream *spate_union_list_state(spate_stream *op, const char *name,
                                               const spate_type *type);

/* Called when a timer fires, with the timer's key current. */
typedef void (*spate_on_timer_fn)(spate_ctx *ctx, int64_t timestamp, bool event_time);
/* A keyed process operator's timer callback (KeyedProcessFunction.onTimer). */
SPATE_API spate_stream *spate_on_timer(spate_stream *op, spate_on_timer_fn fn);

/* Flink's OutputTag<T>: a side output's name and the type of its records,
 * made once per job by spate_output_tag() (one name names one type in a
 * job). A plain value, without pointers: an operator's functions get it as
 * they get any parameter, in their spate_params, as a Flink function
 * captures its OutputTag. */
typedef struct spate_tag {
    uint64_t id; /* 0: no tag */
} spate_tag;

SPATE_API spate_tag spate_output_tag(spate_env *env, const char *name, const spate_type *type);
/* The stream of the records op sends to tag (Flink's getSideOutput), of
 * tag's type. Process functions (spate_process, spate_co_process,
 * spate_broadcast_process) and process window functions send them with
 * spate_ctx_output; a window sends its late data to the tag of
 * spate_late_data_side_output. A side output of any other operator, or of
 * a window that sends nothing to tag, fails spate_execute with an error
 * naming the tag and the operator. */
SPATE_API spate_stream *spate_side_output(spate_stream *op, spate_tag tag);

/* ---- windows ------------------------------------------------------------- */

/* A time window [start, end), in milliseconds; its records' time is at most
 * end - 1 (Flink's TimeWindow.maxTimestamp). The global window spans all. */
typedef struct spate_time_window {
    int64_t start;
    int64_t end;
} spate_time_window;

enum spate_window_kind {
    SPATE_WINDOW_TUMBLING,
    SPATE_WINDOW_SLIDING,
    SPATE_WINDOW_SESSION,
    SPATE_WINDOW_GLOBAL,
};

/* Which windows a record belongs to (Flink's WindowAssigner). */
typedef struct spate_window_assigner {
    enum spate_window_kind kind;
    bool event_time;  /* else processing time */
    int64_t size_ms;  /* tumbling, sliding */
    int64_t slide_ms; /* sliding */
    int64_t gap_ms;   /* session */
    int64_t offset_ms;
} spate_window_assigner;

static inline spate_window_assigner
spate_tumbling_event_time(int64_t size_ms)
{
    spate_window_assigner a = { SPATE_WINDOW_TUMBLING, true, size_ms, 0, 0, 0 };

    return a;
}

static inline spate_window_assigner
spate_tumbling_processing_time(int64_t size_ms)
{
    spate_window_assigner a = { SPATE_WINDOW_TUMBLING, false, size_ms, 0, 0, 0 };

    return a;
}

static inline spate_window_assigner
spate_sliding_event_time(int64_t size_ms, int64_t slide_ms)
{
    spate_window_assigner a = { SPATE_WINDOW_SLIDING, true, size_ms, slide_ms, 0, 0 };

    return a;
}

static inline spate_window_assigner
spate_sliding_processing_time(int64_t size_ms, int64_t slide_ms)
{
    spate_window_assigner a = { SPATE_WINDOW_SLIDING, false, size_ms, slide_ms, 0, 0 };

    return a;
}

static inline spate_window_assigner
spate_session_event_time(int64_t gap_ms)
{
    spate_window_assigner a = { SPATE_WINDOW_SESSION, true, 0, 0, gap_ms, 0 };

    return a;
}

static inline spate_window_assigner
spate_session_processing_time(int64_t gap_ms)
{
    spate_window_assigner a = { SPATE_WINDOW_SESSION, false, 0, 0, gap_ms, 0 };

    return a;
}

static inline spate_window_assigner
spate_global_windows(void)
{
    spate_window_assigner a = { SPATE_WINDOW_GLOBAL, false, 0, 0, 0, 0 };

    return a;
}

/* What a trigger decides (Flink's TriggerResult). */
typedef enum spate_trigger_result {
    SPATE_TRIGGER_CONTINUE,
    SPATE_TRIGGER_FIRE,
    SPATE_TRIGGER_PURGE,
    SPATE_TRIGGER_FIRE_AND_PURGE,
} spate_trigger_result;

/* A custom trigger (Flink's Trigger). Its callbacks run with the key and
 * window current, so spate_ctx_state (the operator's declared states) and
 * spate_timer_* are scoped to that window. */
typedef struct spate_trigger {
    spate_trigger_result (*on_element)(spate_ctx *ctx, const void *rec, int64_t timestamp,
                                       spate_time_window window);
    spate_trigger_result (*on_event_time)(spate_ctx *ctx, int64_t time, spate_time_window window);
    spate_trigger_result (*on_processing_time)(spate_ctx *ctx, int64_t time,
                                               spate_time_window window);
} spate_trigger;

/* A custom evictor (Flink's Evictor): given the window's count elements in
 * arrival order by their timestamps, clears keep[i] for each element to
 * evict, before (before == true) or after the window function runs. */
typedef void (*spate_evictor_fn)(spate_ctx *ctx, spate_time_window window, size_t count,
                                 const int64_t *timestamps, bool *keep, bool before);

/* Called once per firing with the window's elements: all of them (a process
 * window function), or the one pre-aggregated result (after reduce or
 * aggregate). Read them with spate_list_next. */
typedef void (*spate_process_window_fn)(spate_ctx *ctx, spate_time_window window,
                                        spate_iter *elements);

/* A windowed keyed stream: finish it with spate_window_reduce, _aggregate or
 * _process; settings in between. */
SPATE_API spate_stream *spate_window(spate_stream *keyed, spate_window_assigner assigner);
/* Count windows: every size records of a key (tumbling), or the last size
 * records every slide records (sliding). */
SPATE_API spate_stream *spate_count_window(spate_stream *keyed, int64_t size);
SPATE_API spate_stream *spate_count_window_sliding(spate_stream *keyed, int64_t size,
                                                   int64_t slide);
/* Triggers other than the assigner's default: */
SPATE_API spate_stream *spate_window_trigger_event_time(spate_stream *window);
SPATE_API spate_stream *spate_window_trigger_processing_time(spate_stream *window);
SPATE_API spate_stream *spate_window_trigger_count(spate_stream *window, int64_t count);
SPATE_API spate_stream *spate_window_trigger(spate_stream *window, const spate_trigger *trigger);
/* Evictors: keep the last count elements; keep the elements within keep_ms
 * of the newest; or the user's. */
SPATE_API spate_stream *spate_window_evictor_count(spate_stream *window, int64_t count);
SPATE_API spate_stream *spate_window_evictor_time(spate_stream *window, int64_t keep_ms);
SPATE_API spate_stream *spate_window_evictor(spate_stream *window, spate_evictor_fn fn);
/* Records later than the watermark by up to ms still update (and refire)
 * their window; later ones are dropped, or sent to the side output tag. */
SPATE_API spate_stream *spate_allowed_lateness(spate_stream *window, int64_t ms);
/* tag's type must be the window's input type. */
SPATE_API spate_stream *spate_late_data_side_output(spate_stream *window, spate_tag tag);
/* The window function. fn (may be NULL) gets the result of reduce or
 * aggregate with the window at hand; out_type is then fn's output type. */
SPATE_API spate_stream *spate_window_reduce(spate_stream *window, spate_reduce_fn reduce,
                                            spate_process_window_fn fn, const spate_type *out_type);
SPATE_API spate_stream *spate_window_aggregate(spate_stream *window, const spate_aggregate *agg,
                                               spate_process_window_fn fn,
                                               const spate_type *out_type);
SPATE_API spate_stream *spate_window_process(spate_stream *window, spate_process_window_fn fn,
                                             const spate_type *out_type);

/* ---- sinks -------------------------------------------------------------- */

/* Each record's readable form on a line of the output (stdout of the process
 * that runs the subtask), prefixed "i> " by subtask when parallelism > 1. */
SPATE_API spate_stream *spate_sink_print(spate_stream *in);
/* Each record's readable form on a line of a part file in the folder path
 * (made if missing; relative paths as for spate_source_text_file), as
 * Flink's FileSink: subtask s writes part-s-n, committed by checkpoints or
 * at the end of bounded input (see docs/api.md). */
SPATE_API spate_stream *spate_sink_text_file(spate_stream *in, const char *path);
/* The line format of a file sink (Flink's FileSink with an encoder). */
typedef enum spate_file_format {
    SPATE_FILE_TEXT, /* each record's readable form (spate_sink_text_file) */
    /* A tuple's fields separated by ',' (RFC 4180: a string field that is
     * empty or holds ',', '"', CR or LF between '"', its '"' doubled; a
     * nested tuple or custom field its readable form), no header. */
    SPATE_FILE_CSV,
    /* JSON lines: one object per record, its members the tuple's fields
     * named by field_names; int64 and double fields numbers (a double that
     * is not finite null), strings strings, a nested tuple an array, a
     * custom field its readable form as a string. */
    SPATE_FILE_JSON,
} spate_file_format;
/* As spate_sink_text_file (the same part files and exactly-once
 * commits), each record a line in format. CSV and JSON need a tuple-typed
 * stream; field_names (JSON only; NULL-ended, one per field, copied) are
 * the members' names, or NULL for f0, f1, ... as Flink's tuples name
 * theirs. */
SPATE_API spate_stream *spate_sink_file(spate_stream *in, const char *path,
                                        spate_file_format format, const char *const *field_names);
SPATE_API spate_stream *spate_sink(spate_stream *in, spate_sink_fn fn);
/* Writes the stream to the connector named connector (Flink's sinkTo),
 * options as for spate_from_source, e.g. "kafka" with "topic",
 * "properties.bootstrap.servers", "sink.delivery-guarantee". */
SPATE_API spate_stream *spate_sink_to(spate_stream *in, const char *connector,
                                      const char *const *options);
/* Sinks show as "Sink: Print to Std. Out", "Sink: Text File", "Sink: CSV
 * File", "Sink: JSON File" and "Sink: Unnamed"; spate_name(sink, "Counts")
 * shows "Sink: Counts". */

/* ---- operator settings (return their argument) -------------------------- */

/* Parameters of the operator's functions: len bytes, copied now, without
 * pointers (they travel to other processes). */
SPATE_API spate_stream *spate_params(spate_stream *op, const void *params, size_t len);
SPATE_API spate_stream *spate_open_close(spate_stream *op, spate_open_fn open,
                                         spate_close_fn close);
/* A stable id, matched against state in savepoints. */
SPATE_API spate_stream *spate_uid(spate_stream *op, const char *uid);
SPATE_API spate_stream *spate_name(spate_stream *op, const char *name);
SPATE_API spate_stream *spate_set_parallelism(spate_stream *op, int parallelism);
SPATE_API spate_stream *spate_set_max_parallelism(spate_stream *op, int max_parallelism);
SPATE_API spate_stream *spate_start_new_chain(spate_stream *op);
SPATE_API spate_stream *spate_disable_chaining(spate_stream *op);
SPATE_API spate_stream *spate_slot_sharing_group(spate_stream *op, const char *group);

/* ---- inside user functions ---------------------------------------------- */

/* The bytes given with spate_params (NULL and 0 when none). */
SPATE_API const void *spate_ctx_params(const spate_ctx *ctx, size_t *len);
SPATE_API int spate_ctx_subtask_index(const spate_ctx *ctx);
SPATE_API int spate_ctx_parallelism(const spate_ctx *ctx);
SPATE_API int spate_ctx_max_parallelism(const spate_ctx *ctx);
SPATE_API const char *spate_ctx_task_name(const spate_ctx *ctx);
/* A pointer for the function instance's own use, kept from open to close. */
SPATE_API void *spate_ctx_user(const spate_ctx *ctx);
SPATE_API void spate_ctx_set_user(spate_ctx *ctx, void *user);
/* Scratch memory valid until the current call returns (e.g. for the bytes
 * of an output string); never NULL. */
SPATE_API void *spate_ctx_alloc(spate_ctx *ctx, size_t size);
/* Passes a record to the next operator (flat_map, process). */
SPATE_API void spate_emit(spate_ctx *ctx, const void *rec);
/* The current record's event timestamp, or INT64_MIN when it has none. */
SPATE_API int64_t spate_ctx_timestamp(const spate_ctx *ctx);
/* The operator's event time (INT64_MIN before the first watermark). */
SPATE_API int64_t spate_ctx_current_watermark(const spate_ctx *ctx);
/* Processing time: the wall clock in milliseconds. */
SPATE_API int64_t spate_ctx_current_processing_time(const spate_ctx *ctx);
/* The current key of a keyed operator (its functions, timers, window
 * functions), of the key's type: the record's (spate_key_by_value) or the
 * field's (spate_key_by_field). A key of another type, or no key, fails the
 * task with a message naming both types (and the call returns 0, an empty
 * string, or false). Strings point into the key: valid for the call. */
SPATE_API int64_t spate_ctx_current_key_int64(spate_ctx *ctx);
SPATE_API double spate_ctx_current_key_double(spate_ctx *ctx);
SPATE_API spate_str spate_ctx_current_key_string(spate_ctx *ctx);
/* Any key type (tuples, user types): the key into out, type's in-memory
 * size (strings inside point into the key). */
SPATE_API bool spate_ctx_current_key_as(spate_ctx *ctx, const spate_type *type, void *out);
/* The key's bytes, whatever its type: the only form of a key that a
 * spate_key_by function made (the bytes it returned). */
SPATE_API spate_bytes spate_ctx_current_key(const spate_ctx *ctx);
/* A record of tag's type to the side output tag (spate_side_output);
 * dropped when nothing reads it, as in Flink. */
SPATE_API void spate_ctx_output(spate_ctx *ctx, spate_tag tag, const void *rec);

/* Keyed state of the operator by name (NULL when not declared), scoped to the
 * current key. Values read point into state storage for strings: valid until
 * the state changes. */
SPATE_API spate_state *spate_ctx_state(spate_ctx *ctx, const char *name);
SPATE_API bool spate_value_get(spate_state *st, void *out);
SPATE_API void spate_value_update(spate_state *st, const void *value);
/* Removes the current key's value (any kind of state). */
SPATE_API void spate_state_clear(spate_state *st);
SPATE_API void spate_list_add(spate_state *st, const void *value);

/* Iterating a list or a map state of the current key. */
struct spate_iter {
    spate_state *st;               /* NULL: [at, end) is one record in memory */
    const unsigned char *at, *end; /* list */
    size_t key_group, slot;        /* map */
};

SPATE_API void spate_list_iter(spate_state *st, spate_iter *it);
SPATE_API bool spate_list_next(spate_iter *it, void *out);
SPATE_API bool spate_map_get(spate_state *st, const void *key, void *value);
SPATE_API void spate_map_put(spate_state *st, const void *key, const void *value);
SPATE_API bool spate_map_remove(spate_state *st, const void *key);
SPATE_API void spate_map_iter(spate_state *st, spate_iter *it);
SPATE_API bool spate_map_next(spate_iter *it, void *key, void *value);
SPATE_API void spate_reducing_add(spate_state *st, const void *value);
SPATE_API bool spate_reducing_get(spate_state *st, void *out);
SPATE_API void spate_aggregating_add(spate_state *st, const void *in);
SPATE_API bool spate_aggregating_get(spate_state *st, void *out);

/* The window being processed (window functions and triggers). */
SPATE_API spate_time_window spate_ctx_window(const spate_ctx *ctx);

/* Timers of the current key, deduplicated: one per key and timestamp. */
SPATE_API void spate_timer_register_event_time(spate_ctx *ctx, int64_t timestamp);
SPATE_API void spate_timer_register_processing_time(spate_ctx *ctx, int64_t timestamp);
SPATE_API void spate_timer_delete_event_time(spate_ctx *ctx, int64_t timestamp);
SPATE_API void spate_timer_delete_processing_time(spate_ctx *ctx, int64_t timestamp);

/* A named counter (an accumulator summed over all subtasks into the job's
 * result); look it up in open and add to it per record. */
SPATE_API spate_counter *spate_ctx_counter(spate_ctx *ctx, const char *name);
SPATE_API void spate_counter_add(spate_counter *counter, int64_t delta);
/* The operator's metric group (Flink's getRuntimeContext().getMetricGroup()):
 * its metrics are reported with the operator's scope, over REST as
 * "<subtask>.<operator name>.<name>" of the vertex's metrics and by the
 * Prometheus reporter as flink_taskmanager_job_task_operator_<name> with the
 * task's labels, operator_id and operator_name. Make metrics in open and
 * update them per record, on the task thread: an update is a plain store.
 * Registering a name twice gives the metric made first when the kind is
 * the same; a bad name (NULL, empty) or another kind fails the task. Never
 * NULL; valid until close returns. */
SPATE_API spate_metric_group *spate_ctx_metric_group(spate_ctx *ctx);
/* A group inside g (Flink's addGroup): its metrics' names are "name.<metric>". */
SPATE_API spate_metric_group *spate_metric_group_add_group(spate_metric_group *g, const char *name);
/* A count that goes up and down (Flink's SimpleCounter). */
SPATE_API spate_metric_counter *spate_metric_group_counter(spate_metric_group *g, const char *name);
SPATE_API void spate_metric_counter_inc(spate_metric_counter *c, int64_t n);
SPATE_API void spate_metric_counter_dec(spate_metric_counter *c, int64_t n);
/* A value the operator sets, reported as it was last set (a Gauge); NaN
 * until then. */
SPATE_API spate_metric_gauge *spate_metric_group_gauge(spate_metric_group *g, const char *name);
SPATE_API void spate_metric_gauge_set(spate_metric_gauge *gauge, double value);
/* Events per second (a MeterView over a counter): reported as the rate over
 * the last update interval of the TaskManager's metrics (a second). */
SPATE_API spate_metric_meter *spate_metric_group_meter(spate_metric_group *g, const char *name);
SPATE_API void spate_metric_meter_mark_event(spate_metric_meter *m, int64_t n);
/* The statistics of the last `window` values (Flink's
 * DescriptiveStatisticsHistogram; 0: 1024): min, max, mean, stddev and
 * quantiles, over REST as name_min, name_max, name_mean, name_median,
 * name_stddev, name_p75, ..., name_p999; in Prometheus a summary. */
SPATE_API spate_metric_histogram *spate_metric_group_histogram(spate_metric_group *g,
                                                               const char *name, size_t window);
SPATE_API void spate_metric_histogram_update(spate_metric_histogram *h, int64_t value);

/* Fails the task (and the job) with this message, after the function returns. */
SPATE_API void spate_ctx_fail(spate_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The entry point a job library defines; declared here with default
 * visibility so that it is exported even from -fvisibility=hidden builds. */
__attribute__((visibility("default"))) int spate_job_main(spate_env *env, int argc, char **argv);
typedef int (*spate_job_main_fn)(spate_env *env, int argc, char **argv);
#define SPATE_JOB_MAIN "spate_job_main"

#ifdef __cplusplus
}
#endif

#endif
