/* Unit tests of src/jobmanager/job_vertices.c: a job's vertices as the REST
 * API gets them, with each subtask's state, TaskManager, state times and
 * reported I/O, one vertex or all, and what survives packing for the
 * Dispatcher's archive. */
#include <criterion/criterion.h>
#include <string.h>

#include "eg_test.h"
#include "jobmanager/job_vertices.h"
#include "rpc/gateways.h"
#include "streaming/types.h"

/* A source of parallelism 2 feeding a print sink of parallelism 3. */
static struct execution_graph *
two_vertices(void)
{
    spate_env *env = env_new(NULL, NULL);
    int64_t values[] = { 1, 2, 3 };
    spate_stream *s;

    s = spate_set_parallelism(spate_source_collection(env, spate_type_int64(), values, 3), 2);
    spate_set_parallelism(spate_sink_print(spate_rebalance(s)), 3);
    return eg_test_build(env);
}

Test(job_vertices, subtasks_with_state_taskmanager_times_and_io)
{
    struct execution_graph *eg = two_vertices();
    struct execution *e = &eg->executions[1][2];
    Cluster__JobVertices out, *back;
    const Cluster__SubtaskInfo *s;
    uint8_t *packed;
    spate_id tm, id;
    size_t len;

    id_random(&tm);
    e->assigned = true;
    e->slot.resource_id = tm;
    snprintf(e->slot.host, sizeof e->slot.host, "127.0.0.9");
    e->slot.data_port = 7009;
    execution_set_state(eg, e, EXEC_DEPLOYING, NULL);
    execution_set_state(eg, e, EXEC_RUNNING, NULL);
    execution_set_state(eg, e, EXEC_FINISHED, NULL);
    e->io = (struct execution_io){ true, 5, 6, 7, 8, 9, 10, 11 };

    cr_assert_eq(job_vertices_build(eg, NULL, &out), 0);
    cr_assert_eq(out.n_vertices, 2);
    cr_assert_eq(out.vertices[0]->parallelism, 2);
    cr_assert_eq(out.vertices[1]->n_subtasks, 3);
    cr_assert(gw_id_get(&out.vertices[1]->vertex_id, &id) &&
              id_equal(&id, &eg->graph->vertices[1].id));
    s = out.vertices[1]->subtasks[2];
    cr_assert_str_eq(s->state, "FINISHED");
    cr_assert_str_eq(s->host, "127.0.0.9");
    cr_assert_eq(s->data_port, 7009);
    cr_assert(gw_id_get(&s->resource_id, &id) && id_equal(&id, &tm));
    /* CREATED (at construction), DEPLOYING, RUNNING, FINISHED */
    cr_assert_eq(s->n_timestamps, 4);
    cr_assert_str_eq(s->timestamps[3]->state, "FINISHED");
    cr_assert_eq(s->timestamps[3]->time, e->timestamps[EXEC_FINISHED]);
    cr_assert_not_null(s->io);
    cr_assert_eq(s->io->records_in, 5);
    cr_assert_eq(s->io->busy_ms, 11);
    s = out.vertices[1]->subtasks[0];
    cr_assert_str_eq(s->state, "CREATED");
    cr_assert_eq(s->resource_id.len, 0, "not assigned yet");
    cr_assert_null(s->io);
    /* Packed (the Dispatcher's archive of a finished job) and back. */
    len = cluster__job_vertices__get_packed_size(&out);
    packed = malloc(len);
    cluster__job_vertices__pack(&out, packed);
    job_vertices_release(&out);
    back = cluster__job_vertices__unpack(NULL, len, packed);
    cr_assert_not_null(back);
    cr_assert_eq(back->vertices[1]->subtasks[2]->io->bytes_out, 8);
    cluster__job_vertices__free_unpacked(back, NULL);
    free(packed);
    execution_graph_free(eg);
}

Test(job_vertices, one_vertex_or_none)
{
    struct execution_graph *eg = two_vertices();
    Cluster__JobVertices out;
    spate_id other;

    cr_assert_eq(job_vertices_build(eg, &eg->graph->vertices[0].id, &out), 0);
    cr_assert_eq(out.n_vertices, 1);
    cr_assert_eq(out.vertices[0]->n_subtasks, 2);
    job_vertices_release(&out);
    id_random(&other);
    cr_assert_eq(job_vertices_build(eg, &other, &out), SPATE_ENOENT);
    execution_graph_free(eg);
}
