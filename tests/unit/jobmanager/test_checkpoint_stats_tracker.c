/* Unit tests of src/jobmanager/checkpoint_stats_tracker.c: counts, the
 * history (bounded, never dropping a checkpoint in progress), per-vertex
 * acknowledgements, the latest completed, failed and restored checkpoints,
 * discarded (subsumed) ones and the summaries over completed checkpoints;
 * savepoints apart from checkpoints; the counts of the job's metrics. */
#include <criterion/criterion.h>
#include <string.h>

#include "jobmanager/checkpoint_stats_tracker.h"

/* Two vertices: a source of parallelism 2 and a sink of parallelism 1. */
struct graph {
    struct job_graph jg;
    struct jg_vertex v[2];
    struct checkpoint_settings cfg;
};

static void
graph_init(struct graph *g)
{
    memset(g, 0, sizeof *g);
    g->v[0].parallelism = 2;
    g->v[1].parallelism = 1;
    memset(&g->v[0].id, 0xa0, sizeof g->v[0].id);
    memset(&g->v[1].id, 0xb1, sizeof g->v[1].id);
    g->jg.vertices = g->v;
    g->jg.nvertices = 2;
    g->cfg.interval_ms = 1000;
    g->cfg.timeout_ms = 5000;
    g->cfg.max_concurrent = 1;
    g->cfg.checkpoints_dir = "/cps";
}

/* Checkpoint id triggered at 100 * id, every task acknowledging 10 bytes
 * at 100 * id + 7 * id, so that its duration is 7 * id. */
static void
complete(struct checkpoint_stats_tracker *t, uint64_t id, const uint64_t *subsumed, size_t n)
{
    checkpoint_stats_tracker_report_pending(t, id, false, (int64_t)(100 * id), 3, NULL, 0);
    for (int v = 0; v < 2; v++)
        for (int s = 0; s < (v == 0 ? 2 : 1); s++)
            checkpoint_stats_tracker_report_ack(t, id, v, s,
                                                &(struct checkpoint_ack_stats){ .state_size = 10 },
                                                (int64_t)(107 * id));
    checkpoint_stats_tracker_report_completed(t, id, "/cps/job/chk", subsumed, n);
}

static const Ckstats__CheckpointStats *
in_history(const Ckstats__CheckpointingStats *m, int64_t id)
{
    for (size_t i = 0; i < m->n_history; i++)
        if (m->history[i]->id == id)
            return m->history[i];
    return NULL;
}

Test(checkpoint_stats_tracker, counts_acks_per_vertex_and_the_latest_of_each_kind)
{
    struct graph g;
    struct checkpoint_stats_tracker *t;
    Ckstats__CheckpointingStats *m;
    const Ckstats__CheckpointStats *c;
    uint64_t subsumed[] = { 1 };
    struct execution finished = { .vertex = 0, .subtask = 1 };
    const struct execution *fin[] = { &finished };

    graph_init(&g);
    t = checkpoint_stats_tracker_new(&g.jg, 10);
    complete(t, 1, NULL, 0);
    complete(t, 2, subsumed, 1);
    /* 3 fails after one ack; 4 is in progress with a finished task. */
    checkpoint_stats_tracker_report_pending(t, 3, false, 300, 3, NULL, 0);
    checkpoint_stats_tracker_report_ack(t, 3, 1, 0,
                                        &(struct checkpoint_ack_stats){ .state_size = 5 }, 310);
    checkpoint_stats_tracker_report_failed(t, 3, 350, "declined by Sink (1/1): full");
    checkpoint_stats_tracker_report_pending(t, 4, false, 400, 2, fin, 1);
    m = checkpoint_stats_tracker_snapshot(t, &g.cfg, 0);
    cr_assert_eq(m->total, 4);
    cr_assert_eq(m->completed, 2);
    cr_assert_eq(m->failed, 1);
    cr_assert_eq(m->in_progress, 1);
    cr_assert_eq(checkpoint_stats_tracker_completed(t), 2);
    cr_assert_str_eq(m->checkpoints_dir, "/cps");
    cr_assert_eq(m->n_history, 4);
    cr_assert_eq(m->history[0]->id, 4, "newest first");
    c = in_history(m, 1);
    cr_assert(c->discarded, "subsumed by 2");
    cr_assert_str_eq(c->status, "COMPLETED");
    c = in_history(m, 2);
    cr_assert_not(c->discarded);
    cr_assert_eq(c->state_size, 30);
    cr_assert_eq(c->end_to_end_duration, 14);
    cr_assert_eq(c->num_acknowledged, 3);
    cr_assert_eq(c->vertices[0]->num_acknowledged, 2);
    cr_assert_eq(c->vertices[0]->state_size, 20);
    cr_assert_eq(c->vertices[1]->num_subtasks, 1);
    cr_assert_eq(c->vertices[1]->vertex_id.data[0], 0xb1);
    c = in_history(m, 3);
    cr_assert_str_eq(c->status, "FAILED");
    cr_assert_str_eq(c->failure_message, "declined by Sink (1/1): full");
    cr_assert_eq(c->end_to_end_duration, 50);
    c = in_history(m, 4);
    cr_assert_str_eq(c->status, "IN_PROGRESS");
    cr_assert_eq(c->num_subtasks, 3);
    cr_assert_eq(c->num_acknowledged, 1, "a finished task counts as acknowledged");
    cr_assert_eq(c->vertices[0]->num_acknowledged, 1);
    cr_assert_eq(m->latest_completed->id, 2);
    cr_assert_eq(m->latest_failed->id, 3);
    cr_assert_null(m->latest_restored);
    ckstats__checkpointing_stats__free_unpacked(m, NULL);
    /* Only one checkpoint when asked for one. */
    m = checkpoint_stats_tracker_snapshot(t, &g.cfg, 3);
    cr_assert_eq(m->n_history, 1);
    cr_assert_eq(m->history[0]->id, 3);
    ckstats__checkpointing_stats__free_unpacked(m, NULL);
    checkpoint_stats_tracker_free(t);
}

Test(checkpoint_stats_tracker, the_history_is_bounded_but_keeps_checkpoints_in_progress)
{
    struct graph g;
    struct checkpoint_stats_tracker *t;
    Ckstats__CheckpointingStats *m;

    graph_init(&g);
    t = checkpoint_stats_tracker_new(&g.jg, 3);
    /* 1..3 in progress: the fourth finds nothing to drop. */
    for (uint64_t id = 1; id <= 4; id++)
        checkpoint_stats_tracker_report_pending(t, id, false, 10, 3, NULL, 0);
    m = checkpoint_stats_tracker_snapshot(t, &g.cfg, 0);
    cr_assert_eq(m->n_history, 4);
    ckstats__checkpointing_stats__free_unpacked(m, NULL);
    checkpoint_stats_tracker_report_failed(t, 2, 20, "timeout");
    /* The next one drops the oldest that is not in progress: 2. */
    checkpoint_stats_tracker_report_pending(t, 5, false, 30, 3, NULL, 0);
    m = checkpoint_stats_tracker_snapshot(t, &g.cfg, 0);
    cr_assert_eq(m->n_history, 4);
    cr_assert_null(in_history(m, 2));
    cr_assert_not_null(in_history(m, 1));
    cr_assert_eq(m->total, 5);
    cr_assert_eq(m->latest_failed->id, 2, "the latest failed outlives its history entry");
    ckstats__checkpointing_stats__free_unpacked(m, NULL);
    checkpoint_stats_tracker_free(t);
}

Test(checkpoint_stats_tracker, summaries_cover_completed_checkpoints_and_restores_are_shown)
{
    struct graph g;
    struct checkpoint_stats_tracker *t;
    Ckstats__CheckpointingStats *m;
    Checkpoint__CheckpointMetadata md = CHECKPOINT__CHECKPOINT_METADATA__INIT;

    graph_init(&g);
    t = checkpoint_stats_tracker_new(&g.jg, 5);
    for (uint64_t id = 1; id <= 10; id++)
        complete(t, id, NULL, 0);
    md.checkpoint_id = 42;
    md.type = CHECKPOINT__CHECKPOINT_TYPE__SAVEPOINT;
    checkpoint_stats_tracker_report_restored(t, &md, "/sp/savepoint-1/_metadata", 9000);
    m = checkpoint_stats_tracker_snapshot(t, &g.cfg, 0);
    cr_assert_eq(m->end_to_end_duration->count, 10);
    cr_assert_eq(m->end_to_end_duration->min, 7);
    cr_assert_eq(m->end_to_end_duration->max, 70);
    cr_assert_eq(m->end_to_end_duration->avg, 38);
    cr_assert_float_eq(m->end_to_end_duration->p50, 42.0, 1e-9);
    cr_assert_eq(m->state_size->max, 30);
    cr_assert_eq(m->restored, 1);
    cr_assert_eq(m->latest_restored->id, 42);
    cr_assert(m->latest_restored->is_savepoint);
    cr_assert_eq(m->latest_restored->restore_timestamp, 9000);
    cr_assert_str_eq(m->latest_restored->external_path, "/sp/savepoint-1/_metadata");
    ckstats__checkpointing_stats__free_unpacked(m, NULL);
    checkpoint_stats_tracker_free(t);
}

Test(checkpoint_stats_tracker, a_savepoint_is_the_latest_savepoint_not_the_latest_checkpoint)
{
    struct graph g;
    struct checkpoint_stats_tracker *t;
    Ckstats__CheckpointingStats *m;
    struct checkpoint_stats_counts c;

    graph_init(&g);
    t = checkpoint_stats_tracker_new(&g.jg, 10);
    complete(t, 1, NULL, 0);
    checkpoint_stats_tracker_report_pending(t, 2, true, 200, 3, NULL, 0);
    for (int v = 0; v < 2; v++)
        for (int s = 0; s < (v == 0 ? 2 : 1); s++)
            checkpoint_stats_tracker_report_ack(
                t, 2, v, s, &(struct checkpoint_ack_stats){ 10, 7 + s, 40 + v, 3 }, 230);
    checkpoint_stats_tracker_report_completed(t, 2, "/sps/savepoint-1", NULL, 0);
    m = checkpoint_stats_tracker_snapshot(t, &g.cfg, 0);
    cr_assert_eq(m->latest_completed->id, 1);
    cr_assert_not(m->latest_completed->is_savepoint);
    cr_assert_not_null(m->latest_savepoint);
    cr_assert_eq(m->latest_savepoint->id, 2);
    cr_assert(m->latest_savepoint->is_savepoint);
    cr_assert_str_eq(m->latest_savepoint->external_path, "/sps/savepoint-1");
    cr_assert(in_history(m, 2)->is_savepoint);
    /* Each subtask's acknowledgement, as its details show it. */
    cr_assert_eq(m->latest_savepoint->vertices[0]->n_subtasks, 2);
    cr_assert_eq(m->latest_savepoint->vertices[0]->subtasks[1]->index, 1);
    cr_assert_eq(m->latest_savepoint->vertices[0]->subtasks[1]->ack_timestamp, 230);
    cr_assert_eq(m->latest_savepoint->vertices[0]->subtasks[1]->state_size, 10);
    /* With what the task measured: its sync and async parts, alignment. */
    cr_assert_eq(m->latest_savepoint->vertices[0]->subtasks[1]->sync_duration, 8);
    cr_assert_eq(m->latest_savepoint->vertices[1]->subtasks[0]->async_duration, 41);
    cr_assert_eq(m->latest_savepoint->vertices[0]->subtasks[0]->alignment_duration, 3);
    cr_assert_not(in_history(m, 1)->is_savepoint);
    ckstats__checkpointing_stats__free_unpacked(m, NULL);
    /* The job's metrics count both; the last one's figures are the last's. */
    checkpoint_stats_tracker_counts(t, &c);
    cr_assert_eq(c.completed, 2);
    cr_assert_eq(c.total, 2);
    cr_assert_eq(c.in_progress, 0);
    cr_assert_eq(c.last_id, 1, "the latest completed checkpoint, not the savepoint");
    cr_assert_eq(c.last_size, 30);
    cr_assert_eq(c.last_duration_ms, 7);
    checkpoint_stats_tracker_free(t);
}
