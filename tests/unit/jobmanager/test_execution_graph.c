/* Unit tests of src/jobmanager/execution_graph.c: slots per slot sharing
 * group, deployment descriptors that wire each consumer channel to the
 * partition its producer writes, state bookkeeping, restarts. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eg_test.h"
#include "jobmanager/execution_graph.h"
#include "streaming/types.h"

static struct execution_graph *
make_graph(void)
{
    spate_env *env = env_new(NULL, NULL);
    int64_t values[] = { 1, 2, 3 };
    spate_stream *s;

    /* Built-in operators only: no job library needed to encode. */
    s = spate_set_parallelism(spate_source_collection(env, spate_type_int64(), values, 3), 2);
    s = spate_set_parallelism(spate_sum(spate_key_by_value(s), -1), 3);
    spate_slot_sharing_group(spate_set_parallelism(spate_sink_print(spate_rebalance(s)), 4),
                             "other");
    return eg_test_build(env);
}

Test(execution_graph, slots_per_slot_sharing_group)
{
    struct execution_graph *eg = make_graph();
    int group, index;

    /* default: max(2, 3) = 3; other: 4 */
    cr_assert_eq(eg->ngroups, 2);
    cr_assert_eq(execution_graph_slots_needed(eg), 3 + 4);
    cr_assert_eq(eg->total, 2 + 3 + 4);
    execution_graph_slot_of(eg, &eg->executions[1][2], &group, &index);
    cr_assert_eq(group, 0);
    cr_assert_eq(index, 2);
    execution_graph_slot_of(eg, &eg->executions[2][3], &group, &index);
    cr_assert_str_eq(eg->groups[group], "other");
    execution_graph_free(eg);
}

Test(execution_graph, deployments_wire_consumers_to_their_producers)
{
    struct execution_graph *eg = make_graph();
    Jobgraph__TaskDeployment *prod, *cons;
    spate_error err = { 0 };
    spate_id tm[2];

    id_random(&tm[0]);
    id_random(&tm[1]);
    /* Subtasks of even index on TaskManager 0, odd on 1. */
    for (int v = 0; v < eg->graph->nvertices; v++) {
        for (int s = 0; s < eg->graph->vertices[v].parallelism; s++) {
            struct execution *e = &eg->executions[v][s];

            e->assigned = true;
            id_random(&e->slot.allocation_id);
            e->slot.resource_id = tm[s % 2];
            snprintf(e->slot.host, sizeof e->slot.host, "127.0.0.1");
            e->slot.data_port = 7000 + s % 2;
        }
    }
    /* The keyed sum (vertex 1), subtask 1, reads both source subtasks. */
    cr_assert_eq(execution_graph_deployment(eg, &eg->executions[1][1], "jm", NULL, &cons, &err), 0,
                 "%s", err.message);
    cr_assert_eq(cons->n_gates, 1);
    cr_assert_eq(cons->gates[0]->n_channels, 2);
    for (int c = 0; c < 2; c++) {
        Jobgraph__ChannelDesc *ch = cons->gates[0]->channels[c];

        cr_assert_eq(ch->subpartition, 1);
        cr_assert_eq(ch->port, 7000 + c % 2);
        cr_assert_eq(execution_graph_deployment(eg, &eg->executions[0][c], "jm", NULL, &prod, &err),
                     0);
        cr_assert_eq(prod->n_partitions, 1);
        cr_assert_eq(prod->partitions[0]->subpartitions, 3);
        cr_assert_eq(memcmp(prod->partitions[0]->partition_id.data, ch->partition_id.data, 16), 0,
                     "channel %d reads what producer %d writes", c, c);
        cr_assert_eq(memcmp(ch->producer_attempt.data, eg->executions[0][c].attempt_id.bytes, 16),
                     0);
        execution_graph_deployment_free(prod);
    }
    execution_graph_deployment_free(cons);
    /* Unassigned producers cannot be wired. */
    eg->executions[0][0].assigned = false;
    cr_assert_eq(execution_graph_deployment(eg, &eg->executions[1][0], "jm", NULL, &cons, &err),
                 SPATE_ESTATE);
    execution_graph_free(eg);
}

Test(execution_graph, states_and_restart)
{
    struct execution_graph *eg = make_graph();
    struct execution *e = &eg->executions[0][0];
    spate_id old = e->attempt_id;

    cr_assert_eq(execution_graph_find(eg, &old), e);
    execution_set_state(eg, e, EXEC_RUNNING, NULL);
    execution_set_state(eg, e, EXEC_FAILED, "boom");
    execution_set_state(eg, e, EXEC_FAILED, "again");
    cr_assert_eq(eg->terminal, 1);
    cr_assert_eq(eg->failed, 1);
    cr_assert_str_eq(e->failure, "boom");
    cr_assert_str_eq(execution_state_name(EXEC_INITIALIZING), "INITIALIZING");
    cr_assert_eq(execution_state_parse("CANCELING"), EXEC_CANCELING);
    execution_graph_reset(eg);
    cr_assert(!id_equal(&old, &e->attempt_id));
    cr_assert_eq(e->attempt_number, 1);
    cr_assert_eq(e->state, EXEC_CREATED);
    cr_assert_eq(eg->terminal, 0);
    cr_assert_null(execution_graph_find(eg, &old));
    execution_graph_free(eg);
}

Test(execution_graph, bad_graph_bytes_are_an_error)
{
    struct execution_graph *eg;
    spate_error err = { 0 };
    uint8_t junk[] = { 1, 2, 3, 4, 5 };

    cr_assert_neq(execution_graph_new(junk, sizeof junk, NULL, &eg, &err), 0);
    cr_assert(strstr(err.message, "malformed job graph") != NULL, "%s", err.message);
}

Test(execution_graph, one_execution_restarts_alone)
{
    struct execution_graph *eg = make_graph();
    struct execution *e = &eg->executions[1][1];
    spate_id old = e->attempt_id;

    e->assigned = true;
    execution_set_state(eg, e, EXEC_FAILED, "boom");
    execution_set_state(eg, &eg->executions[0][0], EXEC_FINISHED, NULL);
    cr_assert_eq(eg->terminal, 2);
    execution_graph_reset_execution(eg, e, true);
    cr_assert(!id_equal(&old, &e->attempt_id));
    cr_assert_eq(e->attempt_number, 1);
    cr_assert_eq(e->state, EXEC_CREATED);
    cr_assert_null(e->failure);
    cr_assert(e->assigned, "its slot stays");
    cr_assert_eq(eg->terminal, 1);
    cr_assert_eq(eg->failed, 0);
    cr_assert_eq(eg->finished, 1);
    execution_graph_reset_execution(eg, e, false);
    cr_assert_not(e->assigned);
    cr_assert_eq(e->attempt_number, 2);
    execution_graph_free(eg);
}

Test(execution_graph, pipelined_regions)
{
    spate_env *env = env_new(NULL, NULL);
    int64_t values[] = { 1, 2, 3 };
    struct execution_graph *eg;
    spate_stream *s;

    /* A keyed pipeline (one region: all-to-all) beside two independent
     * chains of forward subtasks (a region per subtask). */
    spate_env_set_parallelism(env, 2);
    s = spate_source_collection(env, spate_type_int64(), values, 3);
    spate_sink_print(spate_sum(spate_key_by_value(s), -1));
    s = spate_source_collection(env, spate_type_int64(), values, 3);
    spate_disable_chaining(spate_sink_print(s));
    eg = eg_test_build(env);
    cr_assert_eq(eg->graph->nvertices, 4, "%d", eg->graph->nvertices);
    cr_assert_eq(eg->nregions, 3);
    cr_assert_eq(eg->region[0][0], eg->region[0][1]);
    cr_assert_eq(eg->region[0][0], eg->region[1][1]);
    cr_assert_eq(eg->region[2][0], eg->region[3][0]);
    cr_assert_eq(eg->region[2][1], eg->region[3][1]);
    cr_assert_neq(eg->region[2][0], eg->region[2][1]);
    cr_assert_neq(eg->region[2][0], eg->region[0][0]);
    execution_graph_free(eg);
}

static void
write_lines(const char *path, int lines)
{
    FILE *f = fopen(path, "w");

    cr_assert_not_null(f);
    for (int i = 0; i < lines; i++)
        fprintf(f, "line %d\n", i);
    fclose(f);
}

/* Subtask's next file split from the source coordinator, the reader past
 * every barrier: 0 with its path in path, 1 when none is left. */
static int
take_split_after(struct execution_graph *eg, int subtask, int64_t last_checkpoint, char *path,
                 size_t size)
{
    Cluster__SplitAssignment a = CLUSTER__SPLIT_ASSIGNMENT__INIT;
    spate_error err = { 0 };
    uint32_t plen;

    cr_assert_eq(source_coordinator_request(execution_graph_source(eg, 0, 0), subtask, false, true,
                                            last_checkpoint, &a, &err),
                 0, "%s", err.message);
    if (a.n_splits == 0) {
        free(a.splits);
        return a.no_more_splits ? 1 : 2;
    }
    cr_assert_eq(a.n_splits, 1);
    /* The assigned form (file_source.c): u8 2, u64 start, u64 length, u32
     * path length, path. */
    memcpy(&plen, a.splits[0].data + 17, 4);
    snprintf(path, size, "%.*s", (int)plen, (const char *)a.splits[0].data + 21);
    free(a.splits);
    return 0;
}

static int
take_split(struct execution_graph *eg, int subtask, char *path, size_t size)
{
    return take_split_after(eg, subtask, 1000, path, size);
}

/* Where name shows in a snapshot's enumerator state (-1: nowhere). */
static long
state_at(const Checkpoint__SourceCoordinatorState *st, const char *name)
{
    const uint8_t *at = memmem(st->enumerator.data, st->enumerator.len, name, strlen(name));

    return at ? (long)(at - st->enumerator.data) : -1;
}

Test(execution_graph, file_splits_in_checkpoints_and_restarts)
{
    char dir[64], path[128];
    spate_env *env = env_new(NULL, NULL);
    struct execution_graph *eg;
    struct source_coordinator *c;
    Checkpoint__SourceCoordinatorState *st, *st2;
    spate_error err = { 0 };
    bool restarting[2] = { false, true };
    char cmd[100];

    snprintf(dir, sizeof dir, "/tmp/spate-eg-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/part-%d", dir, i);
        write_lines(path, 10);
    }
    spate_sink_print(spate_set_parallelism(spate_source_text_file(env, dir), 2));
    eg = eg_test_build(env);
    cr_assert_not_null(c = execution_graph_source(eg, 0, 0));
    cr_assert_null(execution_graph_source(eg, 0, 1), "not a source");
    /* Subtask 0 takes part-0, subtask 1 part-1; then the checkpoint. */
    cr_assert_eq(take_split(eg, 0, path, sizeof path), 0);
    cr_assert(strstr(path, "part-0") != NULL, "%s", path);
    cr_assert_eq(take_split(eg, 1, path, sizeof path), 0);
    st = source_coordinator_snapshot(c, 7);
    /* Until a reader took its state in checkpoint 7 it gets no split: one
     * handed out now would be in the enumerator's state and in its own. */
    cr_assert_eq(take_split_after(eg, 1, 6, path, sizeof path), 2, "valve open: %s", path);
    cr_assert_eq(take_split_after(eg, 1, 0, path, sizeof path), 2);
    cr_assert_eq(state_at(st, "part-0"), -1);
    cr_assert_eq(state_at(st, "part-1"), -1);
    cr_assert(state_at(st, "part-2") >= 0 && state_at(st, "part-2") < state_at(st, "part-3"));
    /* After its barrier: part-2 to subtask 1; once checkpoint 7 ended,
     * part-3 to subtask 0 whatever its last checkpoint. */
    cr_assert_eq(take_split_after(eg, 1, 7, path, sizeof path), 0);
    cr_assert(strstr(path, "part-2") != NULL, "%s", path);
    source_coordinator_checkpoint_ended(c, 7);
    cr_assert_eq(take_split_after(eg, 0, 0, path, sizeof path), 0);
    cr_assert(strstr(path, "part-3") != NULL, "%s", path);
    cr_assert_eq(take_split(eg, 0, path, sizeof path), 1, "none left");
    /* Subtask 1 restarts from the checkpoint: part-2 comes back (part-1 is
     * in its restored state), part-3 stays with subtask 0. */
    cr_assert_eq(source_coordinator_restore(c, st, restarting, &err), 0, "%s", err.message);
    cr_assert_eq(take_split(eg, 1, path, sizeof path), 0);
    cr_assert(strstr(path, "part-2") != NULL, "%s", path);
    cr_assert_eq(take_split(eg, 1, path, sizeof path), 1);
    /* Everything restarts from it: the enumerator is the checkpoint's. */
    cr_assert_eq(source_coordinator_restore(c, st, NULL, &err), 0, "%s", err.message);
    st2 = source_coordinator_snapshot(c, 8);
    cr_assert(state_at(st2, "part-2") >= 0 && state_at(st2, "part-2") < state_at(st2, "part-3"));
    cr_assert_eq(state_at(st2, "part-1"), -1);
    cr_assert_gt(st2->epoch, st->epoch);
    checkpoint__source_coordinator_state__free_unpacked(st2, NULL);
    /* Without a checkpoint a restart gives back all a subtask was handed. */
    cr_assert_eq(take_split(eg, 1, path, sizeof path), 0);
    cr_assert(strstr(path, "part-2") != NULL, "%s", path);
    cr_assert_eq(source_coordinator_restore(c, NULL, restarting, &err), 0, "%s", err.message);
    st2 = source_coordinator_snapshot(c, 9);
    cr_assert(state_at(st2, "part-2") >= 0 && state_at(st2, "part-3") >= 0);
    checkpoint__source_coordinator_state__free_unpacked(st2, NULL);
    checkpoint__source_coordinator_state__free_unpacked(st, NULL);
    /* Every split handed out, then a checkpoint: its state, through the
     * metadata's encoding, is empty and still a state: a restore from it
     * hands out nothing more (it once listed the files again). */
    while (take_split(eg, 0, path, sizeof path) == 0)
        ;
    st = source_coordinator_snapshot(c, 10);
    {
        size_t n = checkpoint__source_coordinator_state__get_packed_size(st);
        uint8_t *buf = malloc(n + 1);

        checkpoint__source_coordinator_state__pack(st, buf);
        checkpoint__source_coordinator_state__free_unpacked(st, NULL);
        cr_assert_not_null(st = checkpoint__source_coordinator_state__unpack(NULL, n, buf));
        free(buf);
    }
    cr_assert_eq(st->enumerator.len, 0);
    cr_assert_eq(source_coordinator_restore(c, st, NULL, &err), 0, "%s", err.message);
    cr_assert_eq(take_split(eg, 0, path, sizeof path), 1, "a restored empty enumerator: %s", path);
    checkpoint__source_coordinator_state__free_unpacked(st, NULL);
    execution_graph_free(eg);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(execution_graph, a_first_snapshot_with_every_split_assigned_is_empty)
{
    char dir[64], path[128];
    spate_env *env = env_new(NULL, NULL);
    struct execution_graph *eg;
    Checkpoint__SourceCoordinatorState *st;
    char cmd[100];

    snprintf(dir, sizeof dir, "/tmp/spate-eg-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/only", dir);
    write_lines(path, 10);
    spate_sink_print(spate_source_text_file(env, path));
    eg = eg_test_build(env);
    cr_assert_eq(take_split(eg, 0, path, sizeof path), 0);
    /* The enumerator saves nothing: under UBSan this once passed memcpy a
     * NULL source (the JobManager of asan-e2e/exactly_once died of it). */
    st = source_coordinator_snapshot(execution_graph_source(eg, 0, 0), 1);
    cr_assert_eq(st->enumerator.len, 0);
    cr_assert_eq(st->n_pending, 0);
    checkpoint__source_coordinator_state__free_unpacked(st, NULL);
    execution_graph_free(eg);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}
