/* The ExecutionGraph (execution_graph.h). */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/util.h"
#include "connectors/connector_factory.h"
#include "connectors/source_operator.h"
#include "jobmanager/execution_graph.h"
#include "streaming/job_graph_codec.h"
#include "streaming/user_code.h"

static int
group_index(struct execution_graph *eg, const char *name)
{
    for (int g = 0; g < eg->ngroups; g++)
        if (strcmp(eg->groups[g], name) == 0)
            return g;
    eg->groups = xrealloc(eg->groups, (size_t)(eg->ngroups + 1) * sizeof *eg->groups);
    eg->group_slots = xrealloc(eg->group_slots, (size_t)(eg->ngroups + 1) * sizeof(int));
    eg->groups[eg->ngroups] = xstrdup(name);
    eg->group_slots[eg->ngroups] = 0;
    return eg->ngroups++;
}

/* Union-find over executions numbered in vertex order. */
static int
uf_find(int *parent, int x)
{
    while (parent[x] != x)
        x = parent[x] = parent[parent[x]];
    return x;
}

/* Pipelined regions: every exchange joins its producer and consumer
 * subtasks (all-to-all edges join whole vertices, pointwise ones pairs). */
static void
compute_regions(struct execution_graph *eg)
{
    const struct job_graph *jg = eg->graph;
    int *first = xcalloc((size_t)jg->nvertices + 1, sizeof *first);
    int *parent, *number;

    for (int v = 0; v < jg->nvertices; v++)
        first[v + 1] = first[v] + jg->vertices[v].parallelism;
    parent = xcalloc((size_t)first[jg->nvertices] + 1, sizeof *parent);
    number = xcalloc((size_t)first[jg->nvertices] + 1, sizeof *number);
    for (int i = 0; i < first[jg->nvertices]; i++) {
        parent[i] = i;
        number[i] = -1;
    }
    for (int e = 0; e < jg->nedges; e++) {
        const struct jg_edge *edge = &jg->edges[e];

        for (int c = 0; c < jg->vertices[edge->target].parallelism; c++) {
            int *producers;
            uint32_t *subs;
            uint32_t n = jg_input_channels(jg, edge, c, &producers, &subs);

            for (uint32_t k = 0; k < n; k++)
                parent[uf_find(parent, first[edge->target] + c)] =
                    uf_find(parent, first[edge->source] + producers[k]);
            free(producers);
            free(subs);
        }
    }
    eg->region = xcalloc((size_t)jg->nvertices, sizeof *eg->region);
    for (int v = 0; v < jg->nvertices; v++) {
        eg->region[v] = xcalloc((size_t)jg->vertices[v].parallelism, sizeof **eg->region);
        for (int s = 0; s < jg->vertices[v].parallelism; s++) {
            int root = uf_find(parent, first[v] + s);

            if (number[root] < 0)
                number[root] = eg->nregions++;
            eg->region[v][s] = number[root];
        }
    }
    free(first);
    free(parent);
    free(number);
}

int
execution_graph_new(const uint8_t *bytes, size_t len, const char *blob_server,
                    struct execution_graph **out, spate_error *err)
{
    struct execution_graph *eg = xcalloc(1, sizeof *eg);
    struct job_graph *jg;
    int rc;

    if ((rc = job_graph_decode(bytes, len, NULL, &eg->graph, err)) != 0) {
        free(eg);
        return rc;
    }
    jg = eg->graph;
    eg->graph_bytes = xmalloc(len ? len : 1);
    memcpy(eg->graph_bytes, bytes, len);
    eg->graph_len = len;
    eg->blob_server = xstrdup(blob_server ? blob_server : "");
    eg->executions = xcalloc((size_t)jg->nvertices, sizeof *eg->executions);
    eg->vertex_group = xcalloc((size_t)jg->nvertices, sizeof *eg->vertex_group);
    for (int v = 0; v < jg->nvertices; v++) {
        const struct jg_vertex *vx = &jg->vertices[v];
        int g = group_index(eg, vx->slot_sharing_group);

        eg->vertex_group[v] = g;
        eg->group_slots[g] = MAX(eg->group_slots[g], vx->parallelism);
        eg->max_ops = MAX(eg->max_ops, vx->nops);
        eg->executions[v] = xcalloc((size_t)vx->parallelism, sizeof **eg->executions);
        for (int s = 0; s < vx->parallelism; s++) {
            struct execution *e = &eg->executions[v][s];

            e->vertex = v;
            e->subtask = s;
            id_random(&e->attempt_id);
            accumulators_init(&e->accumulators);
            e->timestamps[EXEC_CREATED] = clock_wall_ms();
            eg->total++;
        }
    }
    eg->sources = xcalloc((size_t)(jg->nvertices * eg->max_ops), sizeof *eg->sources);
    compute_regions(eg);
    for (int v = 0; v < jg->nvertices; v++) {
        for (int o = 0; o < jg->vertices[v].nops; o++) {
            const struct operator_settings *n = &jg->vertices[v].ops[o].settings;
            const void *config;

            /* A job's own source waits for its library (load_sources). */
            if (source_operator_source(n, &config) == NULL || n->kind == OP_SOURCE)
                continue;
            rc = source_coordinator_new(n, jg->vertices[v].parallelism, NULL,
                                        &eg->sources[v * eg->max_ops + o], err);
            if (rc != 0) {
                execution_graph_free(eg);
                return rc;
            }
        }
    }
    *out = eg;
    return 0;
}

void
execution_graph_free(struct execution_graph *eg)
{
    if (eg == NULL)
        return;
    for (int v = 0; eg->graph && v < eg->graph->nvertices; v++) {
        for (int s = 0; eg->executions[v] && s < eg->graph->vertices[v].parallelism; s++) {
            free(eg->executions[v][s].failure);
            accumulators_release(&eg->executions[v][s].accumulators);
        }
        free(eg->executions[v]);
    }
    for (int i = 0; eg->sources && eg->graph && i < eg->graph->nvertices * eg->max_ops; i++)
        source_coordinator_free(eg->sources[i]);
    for (int v = 0; eg->region && v < eg->graph->nvertices; v++)
        free(eg->region[v]);
    free(eg->region);
    for (int g = 0; g < eg->ngroups; g++)
        free(eg->groups[g]);
    free(eg->groups);
    free(eg->group_slots);
    free(eg->vertex_group);
    free(eg->sources);
    if (eg->user_graph != NULL)
        job_graph_free(eg->user_graph);
    job_library_close(eg->lib);
    free(eg->executions);
    free(eg->graph_bytes);
    free(eg->blob_server);
    job_graph_free(eg->graph);
    free(eg);
}

int
execution_graph_slots_needed(const struct execution_graph *eg)
{
    int n = 0;

    for (int g = 0; g < eg->ngroups; g++)
        n += eg->group_slots[g];
    return n;
}

void
execution_graph_slot_of(const struct execution_graph *eg, const struct execution *e, int *group,
                        int *index)
{
    *group = eg->vertex_group[e->vertex];
    *index = e->subtask;
}

struct execution *
execution_graph_find(struct execution_graph *eg, const spate_id *attempt)
{
    for (int v = 0; v < eg->graph->nvertices; v++)
        for (int s = 0; s < eg->graph->vertices[v].parallelism; s++)
            if (id_equal(&eg->executions[v][s].attempt_id, attempt))
                return &eg->executions[v][s];
    return NULL;
}

void
execution_set_state(struct execution_graph *eg, struct execution *e, enum execution_state state,
                    const char *failure)
{
    bool was_terminal = execution_state_is_terminal(e->state);

    if (e->state == state)
        return;
    e->state = state;
    e->timestamps[state] = clock_wall_ms();
    if (failure != NULL && e->failure == NULL)
        e->failure = xstrdup(failure);
    if (!was_terminal && execution_state_is_terminal(state)) {
        eg->terminal++;
        eg->finished += state == EXEC_FINISHED;
        eg->failed += state == EXEC_FAILED;
    }
}

void
execution_graph_reset(struct execution_graph *eg)
{
    for (int v = 0; v < eg->graph->nvertices; v++) {
        for (int s = 0; s < eg->graph->vertices[v].parallelism; s++) {
            struct execution *e = &eg->executions[v][s];

            id_random(&e->attempt_id);
            e->attempt_number++;
            e->state = EXEC_CREATED;
            memset(e->timestamps, 0, sizeof e->timestamps);
            e->timestamps[EXEC_CREATED] = clock_wall_ms();
            e->assigned = false;
            memset(&e->io, 0, sizeof e->io);
            free(e->failure);
            e->failure = NULL;
            accumulators_release(&e->accumulators);
            accumulators_init(&e->accumulators);
        }
    }
    eg->terminal = eg->finished = eg->failed = 0;
}

void
execution_graph_reset_execution(struct execution_graph *eg, struct execution *e, bool keep_slot)
{
    if (execution_state_is_terminal(e->state)) {
        eg->terminal--;
        eg->finished -= e->state == EXEC_FINISHED;
        eg->failed -= e->state == EXEC_FAILED;
    }
    id_random(&e->attempt_id);
    e->attempt_number++;
    e->state = EXEC_CREATED;
    memset(e->timestamps, 0, sizeof e->timestamps);
    e->timestamps[EXEC_CREATED] = clock_wall_ms();
    e->assigned = keep_slot && e->assigned;
    free(e->failure);
    e->failure = NULL;
    accumulators_release(&e->accumulators);
    accumulators_init(&e->accumulators);
}

void
execution_graph_partition_id(const struct execution_graph *eg, int edge,
                             const struct execution *producer, spate_id *partition)
{
    /* Flink's IntermediateResultPartitionID: the data set id and the
     * producer's subtask index. */
    *partition = eg->graph->edges[edge].dataset_id;
    partition->bytes[12] ^= (uint8_t)(producer->subtask >> 24);
    partition->bytes[13] ^= (uint8_t)(producer->subtask >> 16);
    partition->bytes[14] ^= (uint8_t)(producer->subtask >> 8);
    partition->bytes[15] ^= (uint8_t)producer->subtask;
}

/* ---- deployment descriptors ---- */

static ProtobufCBinaryData
bin_copy(const void *data, size_t len)
{
    ProtobufCBinaryData b = { len, xmalloc(len ? len : 1) };

    if (len)
        memcpy(b.data, data, len);
    return b;
}

int
execution_graph_deployment(const struct execution_graph *eg, const struct execution *e,
                           const char *job_master_address, const spate_id *job_master_id,
                           Jobgraph__TaskDeployment **out, spate_error *err)
{
    const struct job_graph *jg = eg->graph;
    const struct jg_vertex *v = &jg->vertices[e->vertex];
    Jobgraph__TaskDeployment *t = xcalloc(1, sizeof *t);

    jobgraph__task_deployment__init(t);
    t->job_id = bin_copy(jg->job_id.bytes, ID_BYTES);
    t->attempt_id = bin_copy(e->attempt_id.bytes, ID_BYTES);
    t->attempt_number = e->attempt_number;
    t->allocation_id = bin_copy(e->slot.allocation_id.bytes, ID_BYTES);
    t->vertex = e->vertex;
    t->subtask = e->subtask;
    t->job_graph = bin_copy(eg->graph_bytes, eg->graph_len);
    t->blob_server = xstrdup(eg->blob_server);
    t->library_sha256 = bin_copy(jg->library_sha256, sizeof jg->library_sha256);
    t->job_master_address = xstrdup(job_master_address ? job_master_address : "");
    t->job_master_id = job_master_id ? bin_copy(job_master_id->bytes, ID_BYTES) : bin_copy(NULL, 0);

    t->n_partitions = (size_t)v->noutputs;
    t->partitions = xcalloc((size_t)v->noutputs + 1, sizeof *t->partitions);
    for (int o = 0; o < v->noutputs; o++) {
        Jobgraph__PartitionDesc *p = xcalloc(1, sizeof *p);
        spate_id pid;

        jobgraph__partition_desc__init(p);
        p->edge = v->outputs[o];
        execution_graph_partition_id(eg, v->outputs[o], e, &pid);
        p->partition_id = bin_copy(pid.bytes, ID_BYTES);
        p->subpartitions = jg_num_subpartitions(jg, &jg->edges[v->outputs[o]], e->subtask);
        t->partitions[o] = p;
    }

    t->n_gates = (size_t)v->ninputs;
    t->gates = xcalloc((size_t)v->ninputs + 1, sizeof *t->gates);
    for (int g = 0; g < v->ninputs; g++) {
        const struct jg_edge *edge = &jg->edges[v->inputs[g]];
        Jobgraph__GateDesc *gd = xcalloc(1, sizeof *gd);
        int *producers;
        uint32_t *subs;
        uint32_t n = jg_input_channels(jg, edge, e->subtask, &producers, &subs);

        jobgraph__gate_desc__init(gd);
        t->gates[g] = gd;
        gd->edge = v->inputs[g];
        gd->n_channels = n;
        gd->channels = xcalloc(n + 1, sizeof *gd->channels);
        for (uint32_t c = 0; c < n; c++) {
            const struct execution *pe = &eg->executions[edge->source][producers[c]];
            Jobgraph__ChannelDesc *cd = xcalloc(1, sizeof *cd);
            spate_id pid;

            jobgraph__channel_desc__init(cd);
            gd->channels[c] = cd;
            if (!pe->assigned) {
                int rc = spate_error_set(err, SPATE_ESTATE, "producer %d of '%s' has no slot yet",
                                         producers[c], jg->vertices[edge->source].name);

                free(producers);
                free(subs);
                execution_graph_deployment_free(t);
                return rc;
            }
            execution_graph_partition_id(eg, v->inputs[g], pe, &pid);
            cd->partition_id = bin_copy(pid.bytes, ID_BYTES);
            cd->producer_attempt = bin_copy(pe->attempt_id.bytes, ID_BYTES);
            cd->subpartition = subs[c];
            cd->producer_resource_id = bin_copy(pe->slot.resource_id.bytes, ID_BYTES);
            cd->host = xstrdup(pe->slot.host);
            cd->port = pe->slot.data_port;
        }
        free(producers);
        free(subs);
    }
    *out = t;
    return 0;
}

void
execution_graph_deployment_free(Jobgraph__TaskDeployment *tdd)
{
    if (tdd == NULL)
        return;
    /* Everything was allocated with the default allocator. */
    jobgraph__task_deployment__free_unpacked(tdd, NULL);
}

int
execution_graph_check_connectors(const struct execution_graph *eg, spate_error *err)
{
    const struct job_graph *jg = eg->graph;

    for (int v = 0; v < jg->nvertices; v++)
        for (int o = 0; o < jg->vertices[v].nops; o++) {
            const struct jg_operator *op = &jg->vertices[v].ops[o];
            enum operator_kind kind = op->settings.kind;
            int rc;

            if ((kind == OP_SOURCE_CONNECTOR || kind == OP_SINK_CONNECTOR) &&
                (rc = named_connector_check(&op->conn.named, kind == OP_SOURCE_CONNECTOR,
                                            op->settings.name, jg->vertices[v].parallelism,
                                            jg->checkpointing.interval_ms > 0, err)) != 0)
                return rc;
        }
    return 0;
}

int
execution_graph_load_sources(struct execution_graph *eg, const char *library_path, spate_error *err)
{
    const struct job_graph *jg = eg->graph;
    bool any = false;
    int rc;

    for (int v = 0; v < jg->nvertices; v++)
        for (int o = 0; o < jg->vertices[v].nops; o++)
            any |= jg->vertices[v].ops[o].settings.kind == OP_SOURCE;
    if (!any)
        return 0;
    if (library_path == NULL)
        return spate_error_set(err, SPATE_EINVAL,
                               "the job has a source of its own, whose split enumerator runs on "
                               "the JobManager, but no job library there");
    if ((rc = job_library_open(library_path, NULL, jg->library_sha256, &eg->lib, err)) != 0 ||
        (rc = job_graph_decode(eg->graph_bytes, eg->graph_len, eg->lib, &eg->user_graph, err)) != 0)
        return spate_error_wrap(err, "cannot load the job library for its sources");
    for (int v = 0; v < jg->nvertices; v++)
        for (int o = 0; o < jg->vertices[v].nops; o++) {
            const struct operator_settings *n = &eg->user_graph->vertices[v].ops[o].settings;

            if (n->kind != OP_SOURCE)
                continue;
            if ((rc = source_coordinator_new(n, jg->vertices[v].parallelism, NULL,
                                             &eg->sources[v * eg->max_ops + o], err)) != 0)
                return spate_error_wrap(err, "the source '%s'",
                                        n->name ? n->name : "Custom Source");
        }
    return 0;
}

struct source_coordinator *
execution_graph_source(const struct execution_graph *eg, int vertex, int op)
{
    if (vertex < 0 || vertex >= eg->graph->nvertices || op < 0 || op >= eg->max_ops)
        return NULL;
    return eg->sources[vertex * eg->max_ops + op];
}
