/* The checkpoint statistics of one job (checkpoint_stats_tracker.h). */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/list.h"
#include "core/util.h"
#include "jobmanager/checkpoint_stats_tracker.h"

#define STATS_SUMMARY_KEPT 1000 /* completed checkpoints the summaries cover */

/* The statistics of one checkpoint (Flink's AbstractCheckpointStats). */
struct cc_stats {
    struct list_node node;
    uint64_t id;
    bool savepoint;
    enum { ST_IN_PROGRESS, ST_COMPLETED, ST_FAILED } status;
    int64_t trigger_ms, latest_ack_ms, failure_ms;
    uint64_t state_size;
    int num_subtasks, num_acked;
    char *external_path;
    bool discarded;
    char *failure;
    struct {
        int num_subtasks, num_acked;
        uint64_t state_size;
        int64_t latest_ack_ms;
        int64_t *sub_ack_ms;              /* [num_subtasks]: 0 until it acknowledged */
        struct checkpoint_ack_stats *sub; /* [num_subtasks] */
    } * vertices;
    int nvertices;
};

struct checkpoint_stats_tracker {
    const struct job_graph *jg;
    int history_size;
    struct list_node history; /* newest first */
    int nhistory;
    struct cc_stats *latest_completed, *latest_failed, *latest_savepoint;
    int64_t restored_count, total, completed, failed;
    Ckstats__RestoredStats *restored;
    int64_t *sizes, *durations; /* ring of the last STATS_SUMMARY_KEPT completed */
    int nsummary, summary_next;
};

static struct cc_stats *
stats_find(struct checkpoint_stats_tracker *t, uint64_t id)
{
    struct list_node *n;

    list_for_each(n, &t->history)
    {
        struct cc_stats *s = container_of(n, struct cc_stats, node);

        if (s->id == id)
            return s;
    }
    return NULL;
}

static void
stats_free(struct cc_stats *s)
{
    if (s == NULL)
        return;
    free(s->external_path);
    free(s->failure);
    for (int v = 0; s->vertices != NULL && v < s->nvertices; v++) {
        free(s->vertices[v].sub_ack_ms);
        free(s->vertices[v].sub);
    }
    free(s->vertices);
    free(s);
}

static struct cc_stats *
stats_copy(const struct cc_stats *s, int nvertices)
{
    struct cc_stats *c = xmalloc(sizeof *c);

    *c = *s;
    c->external_path = s->external_path ? xstrdup(s->external_path) : NULL;
    c->failure = s->failure ? xstrdup(s->failure) : NULL;
    c->vertices = xcalloc((size_t)nvertices, sizeof *c->vertices);
    memcpy(c->vertices, s->vertices, (size_t)nvertices * sizeof *c->vertices);
    for (int v = 0; v < nvertices; v++) {
        size_t n = (size_t)s->vertices[v].num_subtasks;

        c->vertices[v].sub_ack_ms = xcalloc(n + 1, sizeof(int64_t));
        c->vertices[v].sub = xcalloc(n + 1, sizeof *c->vertices[v].sub);
        memcpy(c->vertices[v].sub_ack_ms, s->vertices[v].sub_ack_ms, n * sizeof(int64_t));
        memcpy(c->vertices[v].sub, s->vertices[v].sub, n * sizeof *c->vertices[v].sub);
    }
    return c;
}

void
checkpoint_stats_tracker_report_pending(struct checkpoint_stats_tracker *t, uint64_t id,
                                        bool savepoint, int64_t trigger_ms, int ntasks,
                                        const struct execution *const *finished, int nfinished)
{
    const struct job_graph *jg = t->jg;
    struct cc_stats *s = xcalloc(1, sizeof *s);

    s->id = id;
    s->status = ST_IN_PROGRESS;
    s->savepoint = savepoint;
    s->trigger_ms = trigger_ms;
    s->num_subtasks = ntasks + nfinished;
    s->vertices = xcalloc((size_t)jg->nvertices, sizeof *s->vertices);
    s->nvertices = jg->nvertices;
    for (int v = 0; v < jg->nvertices; v++) {
        s->vertices[v].num_subtasks = jg->vertices[v].parallelism;
        s->vertices[v].sub_ack_ms =
            xcalloc((size_t)jg->vertices[v].parallelism + 1, sizeof(int64_t));
        s->vertices[v].sub =
            xcalloc((size_t)jg->vertices[v].parallelism + 1, sizeof *s->vertices[v].sub);
    }
    /* Finished tasks count as acknowledged at the trigger, as Flink shows
     * them. */
    s->num_acked = nfinished;
    for (int f = 0; f < nfinished; f++) {
        s->vertices[finished[f]->vertex].num_acked++;
        if (finished[f]->subtask >= 0 &&
            finished[f]->subtask < s->vertices[finished[f]->vertex].num_subtasks)
            s->vertices[finished[f]->vertex].sub_ack_ms[finished[f]->subtask] = trigger_ms;
    }
    list_push_front(&t->history, &s->node);
    t->total++;
    /* Keep history_size entries, but never drop one in progress. */
    if (++t->nhistory > t->history_size) {
        struct list_node *n = t->history.prev;

        while (n != &t->history && container_of(n, struct cc_stats, node)->status == ST_IN_PROGRESS)
            n = n->prev;
        if (n != &t->history) {
            list_remove(n);
            stats_free(container_of(n, struct cc_stats, node));
            t->nhistory--;
        }
    }
}

void
checkpoint_stats_tracker_report_ack(struct checkpoint_stats_tracker *t, uint64_t id, int vertex,
                                    int subtask, const struct checkpoint_ack_stats *a,
                                    int64_t now_ms)
{
    struct cc_stats *s = stats_find(t, id);

    if (s == NULL)
        return;
    s->num_acked++;
    s->state_size += a->state_size;
    s->latest_ack_ms = now_ms;
    s->vertices[vertex].num_acked++;
    s->vertices[vertex].state_size += a->state_size;
    s->vertices[vertex].latest_ack_ms = now_ms;
    if (subtask >= 0 && subtask < s->vertices[vertex].num_subtasks) {
        s->vertices[vertex].sub_ack_ms[subtask] = now_ms;
        s->vertices[vertex].sub[subtask] = *a;
    }
}

static void
summary_add(struct checkpoint_stats_tracker *t, uint64_t size, int64_t duration)
{
    t->sizes[t->summary_next] = (int64_t)size;
    t->durations[t->summary_next] = duration;
    t->summary_next = (t->summary_next + 1) % STATS_SUMMARY_KEPT;
    if (t->nsummary < STATS_SUMMARY_KEPT)
        t->nsummary++;
}

void
checkpoint_stats_tracker_report_completed(struct checkpoint_stats_tracker *t, uint64_t id,
                                          const char *external_path, const uint64_t *subsumed,
                                          size_t nsubsumed)
{
    struct cc_stats *s;

    t->completed++;
    if ((s = stats_find(t, id)) != NULL) {
        s->status = ST_COMPLETED;
        s->external_path = xstrdup(external_path);
        if (s->savepoint) {
            stats_free(t->latest_savepoint);
            t->latest_savepoint = stats_copy(s, t->jg->nvertices);
        } else {
            stats_free(t->latest_completed);
            t->latest_completed = stats_copy(s, t->jg->nvertices);
        }
        summary_add(t, s->state_size, s->latest_ack_ms - s->trigger_ms);
    }
    for (size_t i = 0; i < nsubsumed; i++)
        if ((s = stats_find(t, subsumed[i])) != NULL)
            s->discarded = true;
}

void
checkpoint_stats_tracker_report_failed(struct checkpoint_stats_tracker *t, uint64_t id,
                                       int64_t now_ms, const char *reason)
{
    struct cc_stats *s;

    t->failed++;
    if ((s = stats_find(t, id)) != NULL) {
        s->status = ST_FAILED;
        s->failure_ms = now_ms;
        s->failure = xstrdup(reason);
        stats_free(t->latest_failed);
        t->latest_failed = stats_copy(s, t->jg->nvertices);
    }
}

void
checkpoint_stats_tracker_report_restored(struct checkpoint_stats_tracker *t,
                                         const Checkpoint__CheckpointMetadata *md, const char *path,
                                         int64_t now_ms)
{
    if (t->restored == NULL) {
        t->restored = xmalloc(sizeof *t->restored);
        ckstats__restored_stats__init(t->restored);
        t->restored->external_path = NULL; /* not protobuf-c's static "" */
    }
    free(t->restored->external_path);
    t->restored->id = md->checkpoint_id;
    t->restored->restore_timestamp = now_ms;
    t->restored->is_savepoint = md->type != CHECKPOINT__CHECKPOINT_TYPE__CHECKPOINT;
    t->restored->external_path = xstrdup(path);
    t->restored_count++;
}

/* ---- statistics for REST ------------------------------------------------------------ */

static const char *const status_names[] = { "IN_PROGRESS", "COMPLETED", "FAILED" };

static Ckstats__CheckpointStats *
stats_message(const struct checkpoint_stats_tracker *t, const struct cc_stats *s)
{
    const struct job_graph *jg = t->jg;
    Ckstats__CheckpointStats *m = xmalloc(sizeof *m);

    ckstats__checkpoint_stats__init(m);
    m->id = (int64_t)s->id;
    m->status = xstrdup(status_names[s->status]);
    m->is_savepoint = s->savepoint;
    m->trigger_timestamp = s->trigger_ms;
    m->latest_ack_timestamp = s->latest_ack_ms;
    m->state_size = s->state_size;
    m->end_to_end_duration = s->status == ST_FAILED ? s->failure_ms - s->trigger_ms
                             : s->latest_ack_ms > 0 ? s->latest_ack_ms - s->trigger_ms
                                                    : 0;
    m->num_subtasks = s->num_subtasks;
    m->num_acknowledged = s->num_acked;
    m->external_path = xstrdup(s->external_path ? s->external_path : "");
    m->discarded = s->discarded;
    m->failure_timestamp = s->failure_ms;
    m->failure_message = xstrdup(s->failure ? s->failure : "");
    m->vertices = xcalloc((size_t)jg->nvertices + 1, sizeof *m->vertices);
    for (int v = 0; v < jg->nvertices; v++) {
        Ckstats__VertexStats *vs = xmalloc(sizeof *vs);

        ckstats__vertex_stats__init(vs);
        vs->vertex_id.len = ID_BYTES;
        vs->vertex_id.data = xmalloc(ID_BYTES);
        memcpy(vs->vertex_id.data, jg->vertices[v].id.bytes, ID_BYTES);
        vs->num_subtasks = s->vertices[v].num_subtasks;
        vs->num_acknowledged = s->vertices[v].num_acked;
        vs->state_size = s->vertices[v].state_size;
        vs->latest_ack_timestamp = s->vertices[v].latest_ack_ms;
        vs->subtasks = xcalloc((size_t)s->vertices[v].num_subtasks + 1, sizeof *vs->subtasks);
        for (int i = 0; i < s->vertices[v].num_subtasks; i++) {
            Ckstats__SubtaskStats *ss = xmalloc(sizeof *ss);

            ckstats__subtask_stats__init(ss);
            ss->index = i;
            ss->ack_timestamp = s->vertices[v].sub_ack_ms[i];
            ss->state_size = s->vertices[v].sub[i].state_size;
            ss->sync_duration = s->vertices[v].sub[i].sync_ms;
            ss->async_duration = s->vertices[v].sub[i].async_ms;
            ss->alignment_duration = s->vertices[v].sub[i].alignment_ms;
            vs->subtasks[vs->n_subtasks++] = ss;
        }
        m->vertices[m->n_vertices++] = vs;
    }
    return m;
}

static int
cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? -1 : x > y;
}

static Ckstats__Summary *
summary_message(const int64_t *values, int n)
{
    Ckstats__Summary *m = xmalloc(sizeof *m);
    int64_t *sorted;
    int64_t sum = 0;

    ckstats__summary__init(m);
    m->count = n;
    if (n == 0)
        return m;
    sorted = xcalloc((size_t)n, sizeof *sorted);
    memcpy(sorted, values, (size_t)n * sizeof *sorted);
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_i64);
    for (int i = 0; i < n; i++)
        sum += sorted[i];
    m->min = sorted[0];
    m->max = sorted[n - 1];
    m->avg = sum / n;
    /* Nearest rank, as a histogram over the retained window would give. */
#define PCT(q) ((double)sorted[(int)((q) * (n - 1) + 0.5)])
    m->p50 = PCT(0.5);
    m->p90 = PCT(0.9);
    m->p95 = PCT(0.95);
    m->p99 = PCT(0.99);
    m->p999 = PCT(0.999);
#undef PCT
    free(sorted);
    return m;
}

Ckstats__CheckpointingStats *
checkpoint_stats_tracker_snapshot(const struct checkpoint_stats_tracker *t,
                                  const struct checkpoint_settings *cfg, int64_t checkpoint_id)
{
    Ckstats__CheckpointingStats *m = xmalloc(sizeof *m);
    struct list_node *n;

    ckstats__checkpointing_stats__init(m);
    m->enabled = cfg->interval_ms > 0;
    m->interval_ms = cfg->interval_ms;
    m->timeout_ms = cfg->timeout_ms;
    m->min_pause_ms = cfg->min_pause_ms;
    m->max_concurrent = cfg->max_concurrent;
    m->tolerable_failures = cfg->tolerable_failures;
    m->exactly_once = cfg->exactly_once;
    m->externalized = cfg->retention != RETAIN_NEVER;
    m->delete_on_cancellation = cfg->retention != RETAIN_ON_CANCELLATION;
    m->checkpoints_dir = xstrdup(cfg->checkpoints_dir ? cfg->checkpoints_dir : "");
    m->restored = t->restored_count;
    m->total = t->total;
    m->in_progress = 0;
    m->completed = t->completed;
    m->failed = t->failed;
    m->history = xcalloc((size_t)t->nhistory + 1, sizeof *m->history);
    list_for_each(n, &t->history)
    {
        const struct cc_stats *s = container_of(n, struct cc_stats, node);

        m->in_progress += s->status == ST_IN_PROGRESS;
        if (checkpoint_id <= 0 || (int64_t)s->id == checkpoint_id)
            m->history[m->n_history++] = stats_message(t, s);
    }
    if (t->latest_completed != NULL)
        m->latest_completed = stats_message(t, t->latest_completed);
    if (t->latest_failed != NULL)
        m->latest_failed = stats_message(t, t->latest_failed);
    if (t->latest_savepoint != NULL)
        m->latest_savepoint = stats_message(t, t->latest_savepoint);
    if (t->restored != NULL) {
        m->latest_restored = xmalloc(sizeof *m->latest_restored);
        *m->latest_restored = *t->restored;
        m->latest_restored->external_path = xstrdup(t->restored->external_path);
    }
    m->state_size = summary_message(t->sizes, t->nsummary);
    m->end_to_end_duration = summary_message(t->durations, t->nsummary);
    return m;
}

void
checkpoint_stats_tracker_counts(const struct checkpoint_stats_tracker *t,
                                struct checkpoint_stats_counts *c)
{
    const struct cc_stats *l = t->latest_completed;

    c->total = t->total;
    c->completed = t->completed;
    c->failed = t->failed;
    c->in_progress = t->total - t->completed - t->failed;
    c->restored = t->restored_count;
    c->last_id = l != NULL ? (int64_t)l->id : -1;
    c->last_duration_ms = l != NULL ? l->latest_ack_ms - l->trigger_ms : -1;
    c->last_size = l != NULL ? (int64_t)l->state_size : -1;
    c->last_restore_ms = t->restored != NULL ? t->restored->restore_timestamp : -1;
}

int64_t
checkpoint_stats_tracker_completed(const struct checkpoint_stats_tracker *t)
{
    return t->completed;
}

/* ---- life cycle --------------------------------------------------------------------- */

struct checkpoint_stats_tracker *
checkpoint_stats_tracker_new(const struct job_graph *jg, int history_size)
{
    struct checkpoint_stats_tracker *t = xcalloc(1, sizeof *t);

    t->jg = jg;
    t->history_size = history_size;
    list_init(&t->history);
    t->sizes = xcalloc(STATS_SUMMARY_KEPT, sizeof *t->sizes);
    t->durations = xcalloc(STATS_SUMMARY_KEPT, sizeof *t->durations);
    return t;
}

void
checkpoint_stats_tracker_free(struct checkpoint_stats_tracker *t)
{
    struct list_node *n;

    if (t == NULL)
        return;
    while ((n = list_pop_front(&t->history)) != NULL)
        stats_free(container_of(n, struct cc_stats, node));
    stats_free(t->latest_completed);
    stats_free(t->latest_savepoint);
    stats_free(t->latest_failed);
    if (t->restored != NULL) {
        free(t->restored->external_path);
        free(t->restored);
    }
    free(t->sizes);
    free(t->durations);
    free(t);
}
