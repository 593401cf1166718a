/* Latency histograms of an operator (latency_stats.h). */
#include <stdio.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "streaming/latency_stats.h"

/* One histogram: the latencies from one source (or from all, single). */
struct latency_entry {
    spate_id source_id;
    int32_t source_subtask;
    struct metric_group *group; /* NULL: unreported (no task group) */
    struct metric_histogram histogram;
};

struct latency_stats {
    struct latency_entry **entries;
    size_t n;
};

int
latency_tracking_from_config(const struct config *conf, struct latency_tracking *out,
                             spate_error *err)
{
    int64_t history;
    int granularity;
    int rc;

    if ((rc = config_get_duration_ms(conf, CFG(METRICS_LATENCY_INTERVAL), &out->interval_ms,
                                     err)) != 0 ||
        (rc = config_get_enum(conf, CFG(METRICS_LATENCY_GRANULARITY), &granularity, err)) != 0 ||
        (rc = config_get_int(conf, CFG(METRICS_LATENCY_HISTORY_SIZE), &history, err)) != 0)
        return rc;
    out->granularity = (enum latency_granularity)granularity;
    out->history_size = (int)history;
    return 0;
}

/* The group Flink's LatencyStats makes: key-value groups under the job's
 * "latency" group, each key a part of the logical scope and a label. */
static struct metric_group *
latency_group(struct stream_operator *op, enum latency_granularity granularity,
              const struct latency_entry *e)
{
    static const char *const kinds[] = {
        [LATENCY_SINGLE] = "taskmanager_job_latency_operator_id_operator_subtask_index",
        [LATENCY_OPERATOR] = "taskmanager_job_latency_source_id_operator_id_operator_subtask_index",
        [LATENCY_SUBTASK] = ("taskmanager_job_latency_source_id_source_subtask_index_operator_id_"
                             "operator_subtask_index"),
    };
    id_text source = id_str(&e->source_id), self = id_str(&op->config->operator_id);
    char source_subtask[16], subtask[16], *prefix;
    const char *labels[9];
    struct metric_group *g;
    int n = 0;

    snprintf(source_subtask, sizeof source_subtask, "%d", e->source_subtask);
    snprintf(subtask, sizeof subtask, "%d", op->task->subtask);
    if (granularity != LATENCY_SINGLE) {
        labels[n++] = "source_id";
        labels[n++] = source.s;
    }
    if (granularity == LATENCY_SUBTASK) {
        labels[n++] = "source_subtask_index";
        labels[n++] = source_subtask;
    }
    labels[n++] = "operator_id";
    labels[n++] = self.s;
    labels[n++] = "operator_subtask_index";
    labels[n++] = subtask;
    labels[n] = NULL;
    /* Where a scope names it, as Flink's MetricStore: each key and value. */
    if (granularity == LATENCY_SINGLE)
        prefix = xasprintf("latency.operator_id.%s.operator_subtask_index.%s.", self.s, subtask);
    else if (granularity == LATENCY_OPERATOR)
        prefix = xasprintf("latency.source_id.%s.operator_id.%s.operator_subtask_index.%s.",
                           source.s, self.s, subtask);
    else
        prefix = xasprintf("latency.source_id.%s.source_subtask_index.%s.operator_id.%s."
                           "operator_subtask_index.%s.",
                           source.s, source_subtask, self.s, subtask);
    g = metric_group_new_child(op->task->metrics, kinds[granularity], labels, prefix);
    free(prefix);
    return g;
}

static struct latency_entry *
latency_entry_of(struct stream_operator *op, const struct latency_marker *m)
{
    const struct latency_tracking *lt = op->task->latency;
    struct latency_stats *s = op->latency;
    struct latency_entry *e;
    spate_id source = { 0 };
    int32_t subtask = -1;

    if (lt->granularity != LATENCY_SINGLE)
        source = m->source_id;
    if (lt->granularity == LATENCY_SUBTASK)
        subtask = m->source_subtask;
    if (s == NULL)
        s = op->latency = xcalloc(1, sizeof *s);
    for (size_t i = 0; i < s->n; i++) {
        e = s->entries[i];
        if (e->source_subtask == subtask && id_equal(&e->source_id, &source))
            return e;
    }
    e = xcalloc(1, sizeof *e);
    e->source_id = source;
    e->source_subtask = subtask;
    metric_histogram_init(&e->histogram, (size_t)lt->history_size);
    if (op->task->metrics != NULL) {
        e->group = latency_group(op, lt->granularity, e);
        metric_group_histogram(e->group, "latency", &e->histogram);
    }
    s->entries = xrealloc(s->entries, (s->n + 1) * sizeof *s->entries);
    s->entries[s->n++] = e;
    return e;
}

void
latency_stats_report(struct stream_operator *op, const struct latency_marker *m)
{
    if (op->task == NULL || op->task->latency == NULL)
        return;
    metric_histogram_update(&latency_entry_of(op, m)->histogram,
                            (int64_t)clock_wall_ms() - m->marked_time);
}

void
latency_stats_free(struct latency_stats *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n; i++) {
        metric_group_free(s->entries[i]->group);
        metric_histogram_release(&s->entries[i]->histogram);
        free(s->entries[i]);
    }
    free(s->entries);
    free(s);
}
