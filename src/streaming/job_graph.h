/* The JobGraph: the StreamGraph with operators chained into vertices (Flink's
 * StreamingJobGraphGenerator). Operators joined by a forward edge with equal
 * parallelism, in one slot sharing group, the downstream one with a single
 * input and neither refusing to chain, fuse into one vertex whose operators
 * call each other directly on one task thread. Every other edge is an
 * exchange between vertices. Built by spate_execute on the job's main thread;
 * then read only. */
#ifndef SPATE_STREAMING_JOB_GRAPH_H
#define SPATE_STREAMING_JOB_GRAPH_H

#include <jansson.h>

#include "core/id.h"
#include "streaming/job_settings.h"
#include "streaming/stream_graph.h"

/* One operator inside a vertex (Flink's StreamConfig). */
struct jg_operator {
    struct spate_stream *node; /* the StreamGraph node (client side only) */
    /* What the running operator is made from: pointers into node on the
     * client, into this operator's own storage in a decoded graph. */
    struct operator_settings settings;
    spate_id operator_id; /* from the uid, or derived from the graph */
    bool uid_given;
    char *name;
    /* Indexes into the vertex's operators of the operators chained behind
     * this one, and into the vertex's outputs of its exchanges. */
    int *chained;
    char **chained_tags; /* per chained operator: the side output it reads, or NULL */
    int nchained;
    int *outputs;
    int noutputs;
    /* A decoded graph's operator owns its settings' contents: the kind's
     * configuration lives here, by kind. */
    bool owns_settings;
    union connector_config conn;
    union operator_config opconf;
};

/* An exchange leaving a vertex (Flink's JobEdge + IntermediateDataSet). */
struct jg_edge {
    int source;          /* vertex index */
    int source_operator; /* index in the source vertex */
    int target;          /* vertex index */
    enum ship_strategy partitioner;
    struct key_selector key;
    spate_id dataset_id;
    char *tag;       /* the side output of the source operator it carries, or NULL */
    int input_index; /* which input of the target's head: 0, or 1 (two-input) */
};

struct jg_vertex {
    spate_id id; /* the head operator's id */
    char *name;  /* "Source: Generator -> Flat Map" */
    int parallelism;
    int max_parallelism;
    char *slot_sharing_group;
    struct jg_operator *ops; /* ops[0] is the chain's head */
    int nops;
    int *inputs; /* indexes of the edges into this vertex */
    int ninputs;
    int *outputs; /* indexes of the edges out of this vertex */
    int noutputs;
};

struct job_graph {
    spate_id job_id;
    char *name;
    struct jg_vertex *vertices; /* in topological order: sources first */
    int nvertices;
    struct jg_edge *edges;
    int nedges;
    /* Operators without a uid whose ids were derived from the graph. */
    int derived_uids;
    int64_t buffer_timeout_ms; /* execution.buffer-timeout */
    struct checkpoint_settings checkpointing;
    struct restart_settings restart;
    /* Resume from this savepoint (its folder or `_metadata`; NULL: none),
     * skipping state of operators the job no longer has when allowed. */
    char *savepoint_path;
    bool allow_non_restored_state;
    /* The job library's SHA-256 and file name (from the client). */
    uint8_t library_sha256[32];
    char *library_name;
    /* Decoded: some operator or type refers to a function of the job
     * library (a graph of built-in operators only, as SQL's, needs none). */
    bool has_user_code;
    /* A decoded graph owns its types (and each operator its settings). */
    struct spate_type **owned_types;
    int nowned_types;
};

/* POINTWISE wiring (forward, rescale), as Flink's connectPointwise: the
 * consumers [*first, *first + *count) that producer subtask `producer` of
 * `np` feeds, and the producers that consumer subtask `consumer` of `nc`
 * reads. ALL_TO_ALL edges (the others) connect every pair. */
void jg_pointwise_targets(int producer, int np, int nc, int *first, int *count);
void jg_pointwise_sources(int consumer, int np, int nc, int *first, int *count);
/* Whether an edge's partitioner wires pointwise. */
bool jg_edge_pointwise(const struct jg_edge *e);
/* How many subpartitions producer subtask `producer` of edge e has: one per
 * consumer it feeds. */
uint32_t jg_num_subpartitions(const struct job_graph *jg, const struct jg_edge *e, int producer);
/* The channels of consumer subtask `consumer` on edge e, in channel order:
 * channel i reads subpartition subpartitions[i] of producer subtask
 * producers[i]. Returns the channel count; the arrays are malloc'd. */
uint32_t jg_input_channels(const struct job_graph *jg, const struct jg_edge *e, int consumer,
                           int **producers, uint32_t **subpartitions);

/* Builds the JobGraph of env's StreamGraph. Errors: a graph without sinks or
 * sources, forward edges between different parallelism, a keyed operator
 * whose max parallelism is below its parallelism. */
int job_graph_build(struct spate_env *env, const char *name, struct job_graph **out,
                    spate_error *err);
void job_graph_free(struct job_graph *jg);
/* Frees what a decoded operator's settings own (owns_settings). */
void operator_settings_free_contents(struct jg_operator *op);

/* The plan in the JSON of Flink's /jobs/:jobid/plan ({"jid","name","type",
 * "nodes":[{"id","parallelism","operator","operator_strategy","description",
 * "inputs":[{"num","id","ship_strategy","exchange"}],"optimizer_properties"}]})
 * plus spate's "operators" per node: each chained operator's name, uid and id,
 * and "chained_edges". */
json_t *job_graph_plan_json(const struct job_graph *jg);

#endif
