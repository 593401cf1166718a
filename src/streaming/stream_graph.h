/* The StreamGraph: what the DataStream API builds (spate_env, spate_stream).
 * Nodes are operators and virtual partitioning nodes (key_by, rebalance, …)
 * that only decide the partitioner of the edge behind them, as Flink's
 * PartitionTransformation. Built and read on the thread that runs
 * spate_job_main. */
#ifndef SPATE_STREAMING_STREAM_GRAPH_H
#define SPATE_STREAMING_STREAM_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <spate/spate.h>

#include "core/config.h"
#include "core/id.h"
#include "streaming/connector_config.h"
#include "streaming/operator_config.h"
#include "state/keyed_state_backend.h"

enum ship_strategy {
    SHIP_FORWARD,
    SHIP_REBALANCE,
    SHIP_RESCALE,
    SHIP_SHUFFLE,
    SHIP_BROADCAST,
    SHIP_GLOBAL,
    SHIP_HASH,
    /* Not chosen by the user: forward between equal parallelism, else rebalance. */
    SHIP_DEFAULT,
};

enum chaining_strategy {
    CHAINING_ALWAYS,
    CHAINING_HEAD,  /* start_new_chain: may chain to what follows, not to what precedes */
    CHAINING_NEVER, /* disable_chaining */
};

enum operator_kind {
    OP_SOURCE_COLLECTION,
    OP_SOURCE_GENERATOR,
    OP_SOURCE_SOCKET,
    OP_SOURCE_FILE,
    OP_MAP,
    OP_FILTER,
    OP_FLAT_MAP,
    OP_PROCESS,
    OP_REDUCE,
    OP_SUM,
    OP_SINK_PRINT,
    OP_SINK_FILE,
    OP_SINK,
    OP_ASSIGN_TIMESTAMPS,
    OP_WINDOW,
    OP_CO_MAP,
    OP_CO_PROCESS,
    OP_BROADCAST_PROCESS,
    OP_PARTITION,   /* virtual */
    OP_SIDE_OUTPUT, /* virtual: the side output `tag` of its input */
    OP_UNION,       /* virtual: its inputs as one stream */
    OP_CONNECTED,   /* virtual: two streams awaiting a co-operator */
    /* A connector found by name (a plugin library's, connector_plugin.h)
     * with Flink-style string options: spate_from_source, spate_sink_to. */
    OP_SOURCE_CONNECTOR,
    OP_SINK_CONNECTOR,
    /* SQL's fused projection and filter (src/sql/sql_calc.c), made from the
     * task's table as the connectors are. */
    OP_SQL_CALC,
    /* SQL's GROUP BY aggregation, unwindowed or in windows
     * (src/sql/sql_aggregate.c): keyed, its accumulators in keyed state. */
    OP_SQL_AGG,
    /* SQL's joins: regular, interval and window (src/sql/sql_join.c): two
     * inputs keyed by their $key columns, their rows in keyed state. */
    OP_SQL_JOIN,
    /* SQL's Top-N and deduplication (src/sql/sql_rank.c): keyed, each
     * partition's top rows in keyed state. */
    OP_SQL_RANK,
    /* SQL's OVER aggregates on event time (src/sql/sql_over.c): keyed, each
     * partition's rows in keyed state until the watermark passes them. */
    OP_SQL_OVER,
    /* SQL's lookup join against a table in a file (src/sql/sql_lookup.c):
     * the table in each subtask's memory, probed by each row. */
    OP_SQL_LOOKUP_JOIN,
    /* A source of the job's on the Source API (include/spate/source.h):
     * spate_source_from. */
    OP_SOURCE,
    /* A sink of the job's on the Sink API (include/spate/sink.h):
     * spate_sink_committing. */
    OP_SINK_API,
    OP_KIND_COUNT, /* not a kind: the number of kinds */
};

/* How a keyed operator (and a hash edge) finds a record's key. */
enum key_kind {
    KEY_NONE,
    KEY_FN,    /* a user key selector */
    KEY_VALUE, /* the whole record */
    KEY_FIELD, /* one field of a tuple */
};

struct key_selector {
    enum key_kind kind;
    spate_key_fn fn;
    int field;
};

/* A WatermarkStrategy (spate.h) as an operator carries it; milliseconds. */
struct watermark_config {
    bool set;
    spate_timestamp_fn timestamp; /* NULL: keep the records' timestamps */
    spate_watermark_fn watermark; /* punctuated; NULL: periodic */
    int64_t bound_ms;             /* max out-of-orderness */
    int64_t idleness_ms;          /* 0: never idle */
    int64_t interval_ms;          /* pipeline.auto-watermark-interval */
};

/* State declared on an operator (Flink's StateDescriptor). */
struct state_decl {
    char *name;
    enum state_kind kind;
    const spate_type *type;     /* value, list element, map value, reducing */
    const spate_type *key_type; /* map */
    spate_reduce_fn reduce;
    spate_aggregate agg;
    int64_t ttl_ms;
    bool timestamped; /* list: each element keeps its timestamp (window buffers) */
    enum state_scope scope;
};

/* What the running operator is made from (Flink's StreamConfig): its
 * kind's configuration struct (conf: operator_config.h or
 * connector_config.h, NULL for a kind that has none) and the settings every
 * kind has. The client fills it from the StreamGraph node when it builds
 * the JobGraph (stream_node_settings: pointers into the node); the
 * TaskManager's and JobManager's decoders fill it straight from the
 * JobGraph (job_graph_codec.c), with no StreamGraph node. */
struct operator_settings {
    enum operator_kind kind;
    const char *name; /* NULL: the kind's name */
    const char *uid;  /* NULL: none given */
    /* The JobGraph's operator id (Flink's OperatorID: the metrics'
     * operator_id); zero before the JobGraph is made. */
    spate_id operator_id;
    int parallelism; /* 0: the environment's */
    int max_parallelism;
    enum chaining_strategy chaining;
    const spate_type *in_type;  /* NULL for sources */
    const spate_type *in_type2; /* two-input operators */
    const spate_type *out_type;
    /* The key selectors of a keyed input (KEY_NONE: not keyed). */
    struct key_selector key;
    struct key_selector key2;
    const struct state_decl *states; /* declared on the operator */
    int nstates;
    const uint8_t *params;
    size_t params_len;
    spate_open_fn open;
    spate_close_fn close;
    /* A source's or a timestamps/watermarks operator's strategy. */
    struct watermark_config wm;
    const void *conf;
};

struct spate_stream {
    struct spate_env *env;
    int id; /* position in env->nodes */
    enum operator_kind kind;
    char *name;
    char *uid;
    char *slot_sharing_group;
    int parallelism;     /* 0: the environment's */
    int max_parallelism; /* 0: the environment's */
    enum chaining_strategy chaining;
    const spate_type *in_type;
    const spate_type *out_type;

    /* The user's open and close (any kind; the kind's own functions are
     * in its configuration, opconf or conn). */
    spate_open_fn open;
    spate_close_fn close;
    uint8_t *params;
    size_t params_len;

    /* Keyed operators: the key selector of their keyed input, and their
     * declared states. */
    struct key_selector key;
    struct state_decl *states;
    int nstates;
    /* OP_SIDE_OUTPUT: the name of the tag it selects. */
    char *tag;

    /* Event time: the strategy of a timestamps/watermarks operator, or the
     * one a source carries (spate_source_with_watermarks). */
    struct watermark_config wm;

    /* Sources and sinks of the built-in kinds: the kind's own
     * configuration (connector_config.h; by kind, see stream_node_conf). */
    union connector_config conn;
    /* The kinds streaming runs: the kind's own configuration
     * (operator_config.h; by kind, see stream_node_conf). */
    union operator_config opconf;

    /* The input (NULL for sources), and for a virtual node the partitioner
     * it sets (with its key selector for SHIP_HASH). Two-input operators
     * read input2 too; a union reads its inputs. */
    struct spate_stream *input;
    struct spate_stream *input2;
    const spate_type *in_type2;
    struct key_selector key2; /* a keyed second input */
    struct spate_stream **union_inputs;
    int nunion;
    enum ship_strategy partitioner;
};

/* How spate_execute runs a job: installed by whoever made the environment
 * (the mini cluster, the REST client, plan-only). */
struct job_graph;
struct job_library;
struct executor {
    const char *name;
    int (*execute)(void *data, struct spate_env *env, struct job_graph *graph, spate_error *err);
    void *data;
};

/* A side output tag of the job (spate_output_tag): one type per name. */
struct output_tag {
    char *name;
    const spate_type *type;
    uint64_t id; /* output_tag_id(name) */
};

/* The id a tag named name has in spate_tag (and in a running operator's
 * side outputs): FNV-1a of the name, never 0. The job's tags are checked
 * for two names of one id when they are made. */
static inline uint64_t
output_tag_id(const char *name)
{
    uint64_t h = 14695981039346656037ULL;

    for (; *name; name++)
        h = (h ^ (uint8_t)*name) * 1099511628211ULL;
    return h != 0 ? h : 1;
}

struct spate_env {
    spate_error error; /* the first misuse or failure */
    int parallelism;
    int max_parallelism;
    bool chaining_disabled;
    int64_t buffer_timeout_ms;
    /* spate_env_enable_checkpointing: over the configuration's
     * execution.checkpointing.interval and mode (0 and -1: not called). */
    int64_t checkpoint_interval_ms;
    int checkpoint_mode;
    int executions; /* spate_execute calls that reached the executor */
    struct spate_stream **nodes;
    size_t nnodes, cap;
    struct spate_type **types; /* owned tuples and user types */
    size_t ntypes, types_cap;
    struct output_tag *tags; /* spate_output_tag */
    size_t ntags, tags_cap;
    struct executor executor;
    const struct config *conf;
    /* The job library the user functions come from (set by whoever loaded
     * it and ran spate_job_main; NULL in tests that build graphs directly). */
    const struct job_library *library;
};

/* A new environment with defaults from conf (parallelism.default,
 * pipeline.max-parallelism); conf is borrowed for the environment's life. */
struct spate_env *env_new(const struct config *conf, const struct executor *executor);
void env_free(struct spate_env *env);
/* Records the first misuse; later ones are dropped. Returns SPATE_EINVAL. */
int env_fail(struct spate_env *env, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool env_failed(const struct spate_env *env);
/* The environment keeps t (a type made by types_new_*) for its life. */
const spate_type *env_own_type(spate_env *env, struct spate_type *t);

/* The real (non-virtual) node behind a stream, and the partitioner and key
 * selector that the virtual nodes in between set. */
struct spate_stream *stream_graph_resolve(struct spate_stream *s, enum ship_strategy *part,
                                          struct key_selector *key);
/* The side output tag a stream selects (NULL: the main output). */
const char *stream_graph_tag(const struct spate_stream *s);

/* One real upstream operator of a node, through the virtual nodes between:
 * the partitioner and key selector the nearest partitioning node sets, the
 * side output the nearest side output node selects, and which input of the
 * node (0, or 1 for a two-input operator's second) it feeds. */
struct stream_link {
    struct spate_stream *up;
    enum ship_strategy partitioner;
    struct key_selector key;
    const char *tag;
    int input_index;
};

/* The links of node n (malloc'd; *count of them). */
struct stream_link *stream_graph_links(const struct spate_stream *n, int *count);
int stream_node_parallelism(const struct spate_stream *n);
/* A file sink's or source's path made absolute (against the client's
 * folder; a file: URI's path), malloc'd: the tasks run elsewhere. */
char *stream_path_absolute(const char *path);
int stream_node_max_parallelism(const struct spate_stream *n);
bool stream_node_is_source(const struct spate_stream *n);
/* Partitioning and side-output nodes: they shape edges, they do not run. */
static inline bool
stream_node_is_virtual(const struct spate_stream *n)
{
    return n->kind == OP_PARTITION || n->kind == OP_SIDE_OUTPUT || n->kind == OP_UNION ||
           n->kind == OP_CONNECTED;
}
bool stream_node_is_keyed(const struct spate_stream *n);
/* A new node of kind behind input (NULL for a source), its records of
 * out_type (NULL: its input's): for builders of graphs above streaming
 * (src/sql) that set the kind's configuration themselves. */
struct spate_stream *stream_node_new(spate_env *env, enum operator_kind kind,
                                     struct spate_stream *input, const spate_type *out_type);
/* Kinds a folder above streaming runs (the connectors, SQL's operators):
 * made from the task's table (task_info.connectors). */
bool operator_kind_is_external(enum operator_kind kind);
/* Sources and sinks of the built-in kinds (connector_config.h): made from
 * the task's connector table. */
bool operator_kind_is_connector(enum operator_kind kind);
bool operator_kind_is_source(enum operator_kind kind);
/* A kind a task can run: known, and not a virtual node. */
bool operator_kind_runs(int kind);
/* The settings of node n (pointers into n: valid while n is). */
void stream_node_settings(const struct spate_stream *n, struct operator_settings *out);
/* The kind's configuration struct: in n->conn (connector_config.h) for a
 * source or sink, in n->opconf (operator_config.h) for the kinds streaming
 * runs; NULL for a kind that has none (timestamps/watermarks, virtual). */
const void *stream_node_conf(const struct spate_stream *n);
/* The struct of kind's configuration in conn or opconf, or NULL. */
const void *operator_kind_conf(enum operator_kind kind, const union connector_config *conn,
                               const union operator_config *opconf);
const char *operator_kind_name(enum operator_kind kind);
const char *ship_strategy_name(enum ship_strategy kind);

#endif
