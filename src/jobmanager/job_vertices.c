/* A job's vertices for the REST API (job_vertices.h). */
#include <stdlib.h>

#include "core/alloc.h"
#include "jobmanager/job_vertices.h"
#include "rpc/gateways.h"

static Cluster__SubtaskInfo *
subtask_info(const struct execution *e)
{
    Cluster__SubtaskInfo *s = xmalloc(sizeof *s);
    size_t n = 0;

    cluster__subtask_info__init(s);
    s->subtask = e->subtask;
    s->state = (char *)execution_state_name(e->state);
    s->attempt = e->attempt_number;
    s->host = (char *)(e->assigned ? e->slot.host : "");
    s->data_port = e->assigned ? e->slot.data_port : 0;
    s->resource_id = gw_id_bytes(e->assigned ? &e->slot.resource_id : NULL);
    s->timestamps = xcalloc(EXEC_STATE_COUNT, sizeof *s->timestamps);
    for (int st = 0; st < EXEC_STATE_COUNT; st++) {
        Cluster__StateTimestamp *t;

        if (e->timestamps[st] == 0)
            continue;
        t = xmalloc(sizeof *t);
        cluster__state_timestamp__init(t);
        t->state = (char *)execution_state_name((enum execution_state)st);
        t->time = e->timestamps[st];
        s->timestamps[n++] = t;
    }
    s->n_timestamps = n;
    if (e->io.present) {
        Cluster__IOMetrics *io = xmalloc(sizeof *io);

        cluster__iometrics__init(io);
        io->records_in = e->io.records_in;
        io->records_out = e->io.records_out;
        io->bytes_in = e->io.bytes_in;
        io->bytes_out = e->io.bytes_out;
        io->idle_ms = e->io.idle_ms;
        io->back_pressured_ms = e->io.back_pressured_ms;
        io->busy_ms = e->io.busy_ms;
        s->io = io;
    }
    return s;
}

static Cluster__JobVertexInfo *
vertex_info(const struct execution_graph *eg, int v)
{
    const struct jg_vertex *jv = &eg->graph->vertices[v];
    Cluster__JobVertexInfo *vi = xmalloc(sizeof *vi);

    cluster__job_vertex_info__init(vi);
    vi->vertex_id = gw_id_bytes(&jv->id);
    vi->name = jv->name;
    vi->parallelism = jv->parallelism;
    vi->max_parallelism = jv->max_parallelism;
    vi->subtasks = xcalloc((size_t)jv->parallelism + 1, sizeof *vi->subtasks);
    for (int i = 0; i < jv->parallelism; i++)
        vi->subtasks[i] = subtask_info(&eg->executions[v][i]);
    vi->n_subtasks = (size_t)jv->parallelism;
    return vi;
}

int
job_vertices_build(const struct execution_graph *eg, const spate_id *vertex,
                   Cluster__JobVertices *out)
{
    const struct job_graph *jg = eg->graph;

    cluster__job_vertices__init(out);
    out->vertices = xcalloc((size_t)jg->nvertices + 1, sizeof *out->vertices);
    for (int v = 0; v < jg->nvertices; v++)
        if (vertex == NULL || id_equal(vertex, &jg->vertices[v].id))
            out->vertices[out->n_vertices++] = vertex_info(eg, v);
    if (vertex != NULL && out->n_vertices == 0) {
        job_vertices_release(out);
        return SPATE_ENOENT;
    }
    return 0;
}

void
job_vertices_release(Cluster__JobVertices *out)
{
    for (size_t v = 0; v < out->n_vertices; v++) {
        Cluster__JobVertexInfo *vi = out->vertices[v];

        for (size_t i = 0; i < vi->n_subtasks; i++) {
            Cluster__SubtaskInfo *s = vi->subtasks[i];

            for (size_t t = 0; t < s->n_timestamps; t++)
                free(s->timestamps[t]);
            free(s->timestamps);
            free(s->io);
            free(s);
        }
        free(vi->subtasks);
        free(vi);
    }
    free(out->vertices);
    out->vertices = NULL;
    out->n_vertices = 0;
}
