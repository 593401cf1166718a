/* Chaining the StreamGraph into a JobGraph (job_graph.h), and its plan JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/log.h"
#include "core/sha256.h"
#include "core/util.h"
#include "streaming/job_graph.h"
#include "streaming/types.h"

/* Per real StreamGraph node while building. */
struct build_node {
    struct spate_stream *node;
    struct stream_link *links; /* its real inputs (stream_graph_links) */
    int nlinks;
    const char *group; /* slot sharing group */
    int vertex;
    int op;
    spate_id operator_id;
};

/* Tiny lists, grown one at a time: set-up only. */
static void
push_int(int **items, int *n, int v)
{
    *items = xrealloc(*items, (size_t)(*n + 1) * sizeof **items);
    (*items)[(*n)++] = v;
}

/* A node chains to its one upstream operator, never when it reads several. */
static bool
chainable(const struct spate_env *env, const struct build_node *up, const struct build_node *down)
{
    return !env->chaining_disabled && down->nlinks == 1 && down->links[0].input_index == 0 &&
           down->links[0].partitioner == SHIP_FORWARD && down->node->chaining == CHAINING_ALWAYS &&
           up->node->chaining != CHAINING_NEVER &&
           stream_node_parallelism(up->node) == stream_node_parallelism(down->node) &&
           strcmp(up->group, down->group) == 0;
}

static void
operator_id(struct build_node *b, struct build_node *nodes, spate_id *id, bool *given)
{
    uint8_t digest[SHA256_BYTES];
    struct sha256_ctx ctx;
    const struct spate_stream *n = b->node;

    sha256_init(&ctx);
    if (n->uid != NULL) {
        sha256_update(&ctx, "uid:", 4);
        sha256_update(&ctx, n->uid, strlen(n->uid));
        *given = true;
    } else {
        /* Derived from the node's place in the graph: stable while the
         * program builds the same graph in the same order, as Flink's
         * StreamGraphHasherV2. */
        sha256_update(&ctx, "auto:", 5);
        sha256_update(&ctx, &n->id, sizeof n->id);
        sha256_update(&ctx, &n->kind, sizeof n->kind);
        for (int l = 0; l < b->nlinks; l++)
            sha256_update(&ctx, nodes[b->links[l].up->id].operator_id.bytes, ID_BYTES);
        *given = false;
    }
    sha256_final(&ctx, digest);
    memcpy(id->bytes, digest, ID_BYTES);
}

static char *
vertex_name(const struct jg_vertex *v)
{
    size_t len = 1;
    char *s;

    for (int i = 0; i < v->nops; i++)
        len += strlen(v->ops[i].name) + 4;
    s = xcalloc(1, len);
    for (int i = 0; i < v->nops; i++) {
        if (i > 0)
            strcat(s, " -> ");
        strcat(s, v->ops[i].name);
    }
    return s;
}

/* The node's real inputs with their partitioners settled (the default:
 * forward at equal parallelism, rebalance otherwise). */
static int
resolve_links(struct build_node *b, spate_error *err)
{
    struct spate_stream *n = b->node;

    b->links = stream_graph_links(n, &b->nlinks);
    for (int l = 0; l < b->nlinks; l++) {
        struct stream_link *k = &b->links[l];

        if (k->partitioner == SHIP_DEFAULT)
            k->partitioner = stream_node_parallelism(k->up) == stream_node_parallelism(n)
                                 ? SHIP_FORWARD
                                 : SHIP_REBALANCE;
        if (k->partitioner == SHIP_FORWARD &&
            stream_node_parallelism(k->up) != stream_node_parallelism(n)) {
            return spate_error_set(err, SPATE_EINVAL,
                                   "forward partitioning does not allow a change of "
                                   "parallelism: '%s' (%d) to '%s' (%d); use rebalance",
                                   k->up->name ? k->up->name : operator_kind_name(k->up->kind),
                                   stream_node_parallelism(k->up),
                                   n->name ? n->name : operator_kind_name(n->kind),
                                   stream_node_parallelism(n));
        }
    }
    if (!stream_node_is_source(n) && b->nlinks == 0)
        return spate_error_set(err, SPATE_EINVAL, "'%s' has no input",
                               n->name ? n->name : operator_kind_name(n->kind));
    return 0;
}

/* What the API let through but no JobGraph can run. */
static int
check_node(const struct spate_stream *n, spate_error *err)
{
    if (n->kind == OP_WINDOW && n->opconf.window.function == WINDOW_FN_NONE)
        return spate_error_set(err, SPATE_EINVAL,
                               "a windowed stream needs a window function (spate_window_reduce, "
                               "_aggregate or _process)");
    for (int k = 0; k < n->nstates; k++) {
        if (n->states[k].scope == SCOPE_KEYED && !stream_node_is_keyed(n))
            return spate_error_set(err, SPATE_EINVAL,
                                   "keyed state '%s' is declared on '%s', which does not read "
                                   "a keyed stream (spate_key_by)",
                                   n->states[k].name,
                                   n->name ? n->name : operator_kind_name(n->kind));
    }
    if (stream_node_is_keyed(n) && stream_node_max_parallelism(n) < stream_node_parallelism(n))
        return spate_error_set(err, SPATE_EINVAL,
                               "max parallelism %d of '%s' is below its parallelism %d",
                               stream_node_max_parallelism(n), operator_kind_name(n->kind),
                               stream_node_parallelism(n));
    return 0;
}

/* Real inputs, partitioners and slot sharing groups. */
static int
prepare_nodes(struct spate_env *env, struct build_node *nodes, spate_error *err)
{
    int rc;

    for (size_t i = 0; i < env->nnodes; i++) {
        struct build_node *b = &nodes[i];
        struct spate_stream *n = env->nodes[i];

        b->node = n;
        b->vertex = -1;
        if (stream_node_is_virtual(n))
            continue;
        if ((rc = resolve_links(b, err)) != 0)
            return rc;
        if (n->slot_sharing_group != NULL)
            b->group = n->slot_sharing_group;
        else if (b->nlinks > 0)
            b->group = nodes[b->links[0].up->id].group;
        else
            b->group = "default";
        if ((rc = check_node(n, err)) != 0)
            return rc;
    }
    return 0;
}

/* A new vertex headed by b. */
static void
add_vertex(struct job_graph *jg, struct build_node *b)
{
    struct jg_vertex *v;

    jg->vertices = xrealloc(jg->vertices, (size_t)(jg->nvertices + 1) * sizeof *v);
    v = &jg->vertices[jg->nvertices];
    memset(v, 0, sizeof *v);
    v->parallelism = stream_node_parallelism(b->node);
    v->max_parallelism = stream_node_max_parallelism(b->node);
    v->slot_sharing_group = xstrdup(b->group);
    b->vertex = jg->nvertices++;
}

/* b's operator, appended to its vertex's chain (after its upstream one). */
static void
add_operator(struct job_graph *jg, struct build_node *nodes, struct build_node *b)
{
    struct jg_vertex *v = &jg->vertices[b->vertex];
    struct jg_operator *op;

    v->ops = xrealloc(v->ops, (size_t)(v->nops + 1) * sizeof *v->ops);
    op = &v->ops[v->nops];
    memset(op, 0, sizeof *op);
    op->node = b->node;
    stream_node_settings(b->node, &op->settings);
    op->name = xstrdup(b->node->name ? b->node->name : operator_kind_name(b->node->kind));
    operator_id(b, nodes, &op->operator_id, &op->uid_given);
    b->operator_id = op->operator_id;
    op->settings.operator_id = op->operator_id;
    if (!op->uid_given)
        jg->derived_uids++;
    b->op = v->nops++;
    if (b->op > 0) {
        struct jg_operator *up = &v->ops[nodes[b->links[0].up->id].op];
        const char *tag = b->links[0].tag;

        up->chained_tags =
            xrealloc(up->chained_tags, (size_t)(up->nchained + 1) * sizeof *up->chained_tags);
        up->chained_tags[up->nchained] = tag ? xstrdup(tag) : NULL;
        push_int(&up->chained, &up->nchained, b->op);
    }
    /* A keyed vertex keeps the largest max parallelism of its operators
     * (they all share the vertex's key groups). */
    v->max_parallelism = MAX(v->max_parallelism, stream_node_max_parallelism(b->node));
}

/* Chains: nodes come in creation order, inputs before consumers. */
static void
chain_nodes(struct spate_env *env, struct build_node *nodes, struct job_graph *jg)
{
    for (size_t i = 0; i < env->nnodes; i++) {
        struct build_node *b = &nodes[i];

        if (stream_node_is_virtual(b->node))
            continue;
        if (b->nlinks == 1 && chainable(env, &nodes[b->links[0].up->id], b))
            b->vertex = nodes[b->links[0].up->id].vertex;
        else
            add_vertex(jg, b);
        add_operator(jg, nodes, b);
    }
}

/* An exchange from up's vertex into b's along link k. */
static void
add_edge(struct job_graph *jg, struct build_node *up, struct build_node *b,
         const struct stream_link *k)
{
    struct jg_edge *e;
    int idx;

    jg->edges = xrealloc(jg->edges, (size_t)(jg->nedges + 1) * sizeof *e);
    idx = jg->nedges++;
    e = &jg->edges[idx];
    memset(e, 0, sizeof *e);
    e->source = up->vertex;
    e->source_operator = up->op;
    e->target = b->vertex;
    e->partitioner = k->partitioner;
    e->key = k->key;
    e->tag = k->tag ? xstrdup(k->tag) : NULL;
    e->input_index = k->input_index;
    id_random(&e->dataset_id);
    push_int(&jg->vertices[up->vertex].outputs, &jg->vertices[up->vertex].noutputs, idx);
    push_int(&jg->vertices[up->vertex].ops[up->op].outputs,
             &jg->vertices[up->vertex].ops[up->op].noutputs, idx);
    push_int(&jg->vertices[b->vertex].inputs, &jg->vertices[b->vertex].ninputs, idx);
}

/* Exchanges: every link that did not chain. */
static void
connect_vertices(struct spate_env *env, struct build_node *nodes, struct job_graph *jg)
{
    for (size_t i = 0; i < env->nnodes; i++) {
        struct build_node *b = &nodes[i];

        if (stream_node_is_virtual(b->node))
            continue;
        for (int l = 0; l < b->nlinks; l++) {
            struct stream_link *k = &b->links[l];
            struct build_node *up = &nodes[k->up->id];

            if (up->vertex != b->vertex)
                add_edge(jg, up, b, k);
        }
    }
}

/* A vertex is known by its head operator's id and its chain's names. */
static void
name_vertices(struct job_graph *jg)
{
    for (int i = 0; i < jg->nvertices; i++) {
        jg->vertices[i].id = jg->vertices[i].ops[0].operator_id;
        jg->vertices[i].name = vertex_name(&jg->vertices[i]);
    }
}

int
job_graph_build(struct spate_env *env, const char *name, struct job_graph **out, spate_error *err)
{
    size_t nn = env->nnodes;
    struct build_node *nodes = xcalloc(nn ? nn : 1, sizeof *nodes);
    struct job_graph *jg = xcalloc(1, sizeof *jg);
    int rc = 0;

    id_random(&jg->job_id);
    jg->name = xstrdup(name && *name ? name : "Streaming Job");
    jg->buffer_timeout_ms = env->buffer_timeout_ms;
    if ((rc = job_settings_from_config(env->conf, env->checkpoint_interval_ms, env->checkpoint_mode,
                                       &jg->checkpointing, &jg->restart, err)) != 0 ||
        (rc = prepare_nodes(env, nodes, err)) != 0)
        goto fail;
    chain_nodes(env, nodes, jg);
    connect_vertices(env, nodes, jg);
    name_vertices(jg);
    if (jg->nvertices == 0) {
        rc = spate_error_set(err, SPATE_EINVAL,
                             "no operators defined in the streaming topology: nothing to run");
        goto fail;
    }
    for (size_t i = 0; i < nn; i++)
        free(nodes[i].links);
    free(nodes);
    *out = jg;
    return 0;
fail:
    for (size_t i = 0; i < nn; i++)
        free(nodes[i].links);
    free(nodes);
    job_graph_free(jg);
    return rc;
}

void
operator_settings_free_contents(struct jg_operator *op)
{
    struct operator_settings *s = &op->settings;

    for (int i = 0; i < s->nstates; i++)
        free(s->states[i].name);
    free((void *)s->states);
    free((void *)s->name);
    free((void *)s->uid);
    free((void *)s->params);
    if (s->kind == OP_SOURCE_COLLECTION)
        free(op->conn.collection.records);
    else if (s->kind == OP_SOURCE_SOCKET)
        free(op->conn.socket.host);
    else if (s->kind == OP_SOURCE_FILE)
        free(op->conn.file_source.path);
    else if (s->kind == OP_SINK_FILE)
        file_sink_config_release(&op->conn.file_sink);
    else if (s->kind == OP_SOURCE_CONNECTOR || s->kind == OP_SINK_CONNECTOR)
        named_connector_release(&op->conn.named);
    else if (s->kind == OP_WINDOW)
        free(op->opconf.window.late_tag);
    else if (s->kind == OP_SQL_CALC || s->kind == OP_SQL_AGG || s->kind == OP_SQL_JOIN ||
             s->kind == OP_SQL_RANK || s->kind == OP_SQL_OVER || s->kind == OP_SQL_LOOKUP_JOIN)
        free(op->opconf.sql.program);
    memset(s, 0, sizeof *s);
    op->owns_settings = false;
}

void
job_graph_free(struct job_graph *jg)
{
    if (jg == NULL)
        return;
    for (int i = 0; i < jg->nvertices; i++) {
        struct jg_vertex *v = &jg->vertices[i];

        for (int j = 0; j < v->nops; j++) {
            if (v->ops[j].owns_settings)
                operator_settings_free_contents(&v->ops[j]);
            for (int c = 0; c < v->ops[j].nchained; c++)
                free(v->ops[j].chained_tags ? v->ops[j].chained_tags[c] : NULL);
            free(v->ops[j].chained_tags);
            free(v->ops[j].name);
            free(v->ops[j].chained);
            free(v->ops[j].outputs);
        }
        free(v->ops);
        free(v->name);
        free(v->slot_sharing_group);
        free(v->inputs);
        free(v->outputs);
    }
    for (int i = 0; i < jg->nowned_types; i++)
        types_free(jg->owned_types[i]);
    free(jg->owned_types);
    for (int i = 0; i < jg->nedges; i++)
        free(jg->edges[i].tag);
    free(jg->vertices);
    free(jg->edges);
    free(jg->name);
    free(jg->library_name);
    free(jg->savepoint_path);
    job_settings_release(&jg->checkpointing);
    free(jg);
}

json_t *
job_graph_plan_json(const struct job_graph *jg)
{
    json_t *nodes = json_array();
    json_t *plan;

    for (int i = 0; i < jg->nvertices; i++) {
        const struct jg_vertex *v = &jg->vertices[i];
        json_t *inputs = json_array();
        json_t *ops = json_array();
        json_t *chained = json_array();

        for (int k = 0; k < v->ninputs; k++) {
            const struct jg_edge *e = &jg->edges[v->inputs[k]];

            json_array_append_new(inputs,
                                  json_pack("{s:i, s:s, s:s, s:s}", "num", k, "id",
                                            id_str(&jg->vertices[e->source].id).s, "ship_strategy",
                                            ship_strategy_name(e->partitioner), "exchange",
                                            "pipelined_bounded"));
        }
        for (int j = 0; j < v->nops; j++) {
            const struct jg_operator *op = &v->ops[j];

            json_array_append_new(ops,
                                  json_pack("{s:s, s:s, s:s?}", "name", op->name, "id",
                                            id_str(&op->operator_id).s, "uid", op->settings.uid));
            for (int c = 0; c < op->nchained; c++)
                json_array_append_new(chained, json_pack("{s:s, s:s}", "from", op->name, "to",
                                                         v->ops[op->chained[c]].name));
        }
        json_array_append_new(
            nodes,
            json_pack("{s:s, s:i, s:i, s:s, s:s, s:s, s:s, s:o, s:{}, s:o, s:o}", "id",
                      id_str(&v->id).s, "parallelism", v->parallelism, "maxParallelism",
                      v->max_parallelism, "operator", v->ops[0].name, "operator_strategy", "",
                      "description", v->name, "slot_sharing_group", v->slot_sharing_group, "inputs",
                      inputs, "optimizer_properties", "operators", ops, "chained_edges", chained));
    }
    plan = json_pack("{s:s, s:s, s:s, s:o}", "jid", id_str(&jg->job_id).s, "name", jg->name, "type",
                     "STREAMING", "nodes", nodes);
    return plan;
}

void
jg_pointwise_targets(int producer, int np, int nc, int *first, int *count)
{
    if (np == nc) {
        *first = producer;
        *count = 1;
    } else if (np > nc) {
        /* Each producer feeds the one consumer whose source range holds it. */
        int c = 0;

        while (c + 1 < nc && (int64_t)(c + 1) * np / nc <= producer)
            c++;
        *first = c;
        *count = 1;
    } else {
        int start = (int)(((int64_t)producer * nc + np - 1) / np);
        int end = (int)(((int64_t)(producer + 1) * nc + np - 1) / np);

        *first = start;
        *count = end - start;
    }
}

void
jg_pointwise_sources(int consumer, int np, int nc, int *first, int *count)
{
    if (np == nc) {
        *first = consumer;
        *count = 1;
    } else if (np > nc) {
        int start = (int)((int64_t)consumer * np / nc);
        int end = (int)((int64_t)(consumer + 1) * np / nc);

        *first = start;
        *count = end - start;
    } else {
        /* The one producer whose target range holds this consumer. */
        int p = 0;

        while (p + 1 < np && ((int64_t)(p + 1) * nc + np - 1) / np <= consumer)
            p++;
        *first = p;
        *count = 1;
    }
}

bool
jg_edge_pointwise(const struct jg_edge *e)
{
    return e->partitioner == SHIP_FORWARD || e->partitioner == SHIP_RESCALE;
}

uint32_t
jg_num_subpartitions(const struct job_graph *jg, const struct jg_edge *e, int producer)
{
    int np = jg->vertices[e->source].parallelism;
    int nc = jg->vertices[e->target].parallelism;
    int first, count;

    if (!jg_edge_pointwise(e))
        return (uint32_t)nc;
    jg_pointwise_targets(producer, np, nc, &first, &count);
    return (uint32_t)count;
}

uint32_t
jg_input_channels(const struct job_graph *jg, const struct jg_edge *e, int consumer,
                  int **producers, uint32_t **subpartitions)
{
    int np = jg->vertices[e->source].parallelism;
    int nc = jg->vertices[e->target].parallelism;
    int first, count;

    if (!jg_edge_pointwise(e)) {
        *producers = xcalloc((size_t)np, sizeof **producers);
        *subpartitions = xcalloc((size_t)np, sizeof **subpartitions);
        for (int p = 0; p < np; p++) {
            (*producers)[p] = p;
            (*subpartitions)[p] = (uint32_t)consumer;
        }
        return (uint32_t)np;
    }
    jg_pointwise_sources(consumer, np, nc, &first, &count);
    *producers = xcalloc((size_t)count, sizeof **producers);
    *subpartitions = xcalloc((size_t)count, sizeof **subpartitions);
    for (int i = 0; i < count; i++) {
        int tfirst, tcount;

        jg_pointwise_targets(first + i, np, nc, &tfirst, &tcount);
        (*producers)[i] = first + i;
        (*subpartitions)[i] = (uint32_t)(consumer - tfirst);
    }
    return (uint32_t)count;
}
