/* The ExecutionGraph (Flink's): one Execution per parallel subtask of each
 * JobGraph vertex, with its attempt id, ExecutionState, slot and failure;
 * the slots the job needs (one per subtask index of each slot sharing group);
 * the task deployment descriptors that wire each subtask's partitions and
 * input channels to its producers' TaskManagers; the sources' coordinators
 * (connectors/source_coordinator.h); the accumulators of finished tasks.
 * Owned by the JobMaster's endpoint (loop thread). */
#ifndef SPATE_JOBMANAGER_EXECUTION_GRAPH_H
#define SPATE_JOBMANAGER_EXECUTION_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "core/execution_state.h"
#include "core/id.h"
#include "connectors/source_coordinator.h"
#include "proto/checkpoint.pb-c.h"
#include "proto/jobgraph.pb-c.h"
#include "streaming/accumulators.h"
#include "streaming/job_graph.h"

/* Where an execution runs. */
struct slot_location {
    spate_id allocation_id;
    spate_id resource_id; /* the TaskManager's */
    char host[64];        /* its data address */
    int data_port;
    char address[256]; /* its RPC address (host:port/endpoint) */
};

/* What a task measured in all, reported when it ended (Flink's IOMetrics). */
struct execution_io {
    bool present;
    uint64_t records_in, records_out, bytes_in, bytes_out;
    uint64_t idle_ms, back_pressured_ms, busy_ms;
};

struct execution {
    int vertex;
    int subtask;
    spate_id attempt_id;
    int attempt_number;
    enum execution_state state;
    int64_t timestamps[EXEC_STATE_COUNT]; /* wall ms when each state was entered */
    bool assigned;
    struct slot_location slot;
    char *failure;
    struct accumulators accumulators; /* reported when the task ended */
    struct execution_io io;           /* likewise */
};

struct execution_graph {
    struct job_graph *graph; /* decoded, no user code; owned */
    uint8_t *graph_bytes;    /* for the deployment descriptors (the JobMaster
                              * re-encodes them with the resolved settings) */
    size_t graph_len;
    char *blob_server;             /* host:port of the BlobServer with the job library */
    struct execution **executions; /* [vertex][subtask] */
    int total, terminal, finished, failed;
    /* Slot sharing groups: the job needs slots[g] slots for group g, and
     * subtask i of every vertex of the group runs in the group's i-th. */
    char **groups;
    int *group_slots;
    int ngroups;
    int *vertex_group; /* per vertex */
    /* Source API sources: a coordinator per (vertex, operator), hosting
     * its split enumerator; NULL elsewhere. */
    struct source_coordinator **sources; /* [vertex * max ops + operator] */
    /* With sources of the job's own: its library and the graph decoded
     * with it, whose settings their coordinators read; else NULL. */
    struct job_library *lib;
    struct job_graph *user_graph;
    int max_ops;
    /* Pipelined regions (Flink's): executions joined by an exchange belong
     * to one region; region[v][s] numbers them 0 .. nregions - 1. */
    int **region;
    int nregions;
};

/* Builds the graph of a submitted JobGraph (bytes are copied). Errors: a
 * graph that does not decode, a file source whose path cannot be read. */
int execution_graph_new(const uint8_t *bytes, size_t len, const char *blob_server,
                        struct execution_graph **out, spate_error *err);
void execution_graph_free(struct execution_graph *eg);

/* Slots: how many the job needs in all, and which shared slot (group,
 * index) an execution runs in. */
int execution_graph_slots_needed(const struct execution_graph *eg);
void execution_graph_slot_of(const struct execution_graph *eg, const struct execution *e,
                             int *group, int *index);

struct execution *execution_graph_find(struct execution_graph *eg, const spate_id *attempt);

/* Moves e to state at the wall clock (no checks: the JobMaster decides). */
void execution_set_state(struct execution_graph *eg, struct execution *e,
                         enum execution_state state, const char *failure);
/* A fresh attempt of every execution (a restart): new attempt ids, CREATED. */
void execution_graph_reset(struct execution_graph *eg);
/* A fresh attempt of one execution (it restarts with its region): a new
 * attempt id, attempt_number + 1, CREATED; its slot stays when keep_slot
 * (its TaskManager is still there), else it waits for a new one. */
void execution_graph_reset_execution(struct execution_graph *eg, struct execution *e,
                                     bool keep_slot);

/* The deployment descriptor of e, every producer of its inputs assigned.
 * Free with execution_graph_deployment_free. */
int execution_graph_deployment(const struct execution_graph *eg, const struct execution *e,
                               const char *job_master_address, const spate_id *job_master_id,
                               Jobgraph__TaskDeployment **out, spate_error *err);
void execution_graph_deployment_free(Jobgraph__TaskDeployment *tdd);

/* The options of the job's connector sources and sinks (spate_from_source,
 * spate_sink_to, SQL's tables) checked by their plugins, once the job's
 * checkpointing is settled: a bad one refuses the submission, naming the
 * source or sink (Flink checks a table's options when the job is
 * planned). */
int execution_graph_check_connectors(const struct execution_graph *eg, spate_error *err);

/* The job's own sources (spate_source_from) need the job's library here:
 * loads it from library_path (a file whose SHA-256 is the graph's) and
 * makes their coordinators. Nothing when the job has none. Errors: no
 * library, one that does not load or match, an enumerator that fails. */
int execution_graph_load_sources(struct execution_graph *eg, const char *library_path,
                                 spate_error *err);
/* The source coordinator of operator op of vertex, or NULL when it is no
 * Source API source. */
struct source_coordinator *execution_graph_source(const struct execution_graph *eg, int vertex,
                                                  int op);

/* The result partition id a producer execution writes for an edge. */
void execution_graph_partition_id(const struct execution_graph *eg, int edge,
                                  const struct execution *producer, spate_id *partition);

#endif
