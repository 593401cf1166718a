/* A TaskManager's metric dump (metric_query.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "metrics/task_metrics.h"
#include "rpc/gateways.h"
#include "taskmanager/metric_query.h"

/* A growing list of metrics that owns its names and values. */
struct metric_list {
    Cluster__Metric **items;
    size_t n, cap;
};

static void
list_add(struct metric_list *l, const char *name, const char *value)
{
    Cluster__Metric *m = xmalloc(sizeof *m);

    cluster__metric__init(m);
    m->name = xstrdup(name);
    m->value = xstrdup(value);
    xgrow((void **)&l->items, &l->cap, l->n + 1, sizeof *l->items);
    l->items[l->n++] = m;
}

static void
metrics_free(Cluster__Metric **items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(items[i]->name);
        free(items[i]->value);
        free(items[i]);
    }
    free(items);
}

void
tm_metric_group_register(struct tm_metric_group *m, struct metric_registry *r, struct net_env *net,
                         const spate_id *resource_id, const char *host)
{
    id_text tm = id_str(resource_id);
    const char *labels[] = { "host", host, "tm_id", tm.s, NULL };
    char scope[ID_HEX_LEN + 16];

    memset(m, 0, sizeof *m);
    m->net = net;
    snprintf(scope, sizeof scope, "taskmanager.%s", tm.s);
    m->group = metric_group_new_scoped(r, scope, "taskmanager", labels);
    process_metric_gauges_register(&m->process, m->group);
    tm_metric_group_refresh(m);
    if (net != NULL) {
        /* Flink's Status.Shuffle.Netty names for the network buffers. */
        metric_group_gauge(m->group, "Status.Shuffle.Netty.TotalMemorySegments",
                           &m->segments_total);
        metric_group_gauge(m->group, "Status.Shuffle.Netty.AvailableMemorySegments",
                           &m->segments_available);
        metric_group_gauge(m->group, "Status.Shuffle.Netty.UsedMemorySegments", &m->segments_used);
        metric_group_gauge(m->group, "Status.Shuffle.Netty.TotalMemory", &m->memory_total);
        metric_group_gauge(m->group, "Status.Shuffle.Netty.AvailableMemory", &m->memory_available);
        metric_group_gauge(m->group, "Status.Shuffle.Netty.UsedMemory", &m->memory_used);
    }
}

void
tm_metric_group_refresh(struct tm_metric_group *m)
{
    process_metric_gauges_refresh(&m->process);
    if (m->net != NULL) {
        struct net_env_stats st;

        net_env_stats(m->net, &st);
        metric_gauge_set(&m->segments_total, (int64_t)st.buffers_total);
        metric_gauge_set(&m->segments_available, (int64_t)st.buffers_available);
        metric_gauge_set(&m->segments_used, (int64_t)(st.buffers_total - st.buffers_available));
        metric_gauge_set(&m->memory_total, (int64_t)(st.buffers_total * st.segment_size));
        metric_gauge_set(&m->memory_available, (int64_t)(st.buffers_available * st.segment_size));
        metric_gauge_set(&m->memory_used,
                         (int64_t)((st.buffers_total - st.buffers_available) * st.segment_size));
    }
}

void
tm_metric_group_release(struct tm_metric_group *m)
{
    metric_group_free(m->group);
    m->group = NULL;
}

/* Orders pointers into one sample array by scope, then by place: a task's
 * groups (its I/O group, its operators') come together. */
static int
scope_cmp(const void *a, const void *b)
{
    const struct metric_sample *x = *(const struct metric_sample *const *)a;
    const struct metric_sample *y = *(const struct metric_sample *const *)b;
    int c = strcmp(x->scope, y->scope);

    return c != 0 ? c : (x > y) - (x < y);
}

void
metric_query_dump(struct metric_registry *r, const spate_id *resource_id, Cluster__MetricDump *out)
{
    struct metric_list tm = { 0 };
    struct metric_sample *all = NULL;
    size_t nall = r != NULL ? metric_registry_snapshot(r, &all) : 0, n = 0;
    const struct metric_sample **s = xmalloc((nall > 0 ? nall : 1) * sizeof *s);
    Cluster__TaskMetrics **tasks = NULL;
    size_t ntasks = 0, cap = 0;

    cluster__metric_dump__init(out);
    out->resource_id = gw_id_bytes(resource_id);
    for (size_t i = 0; i < nall; i++)
        if (all[i].audience & METRIC_FOR_SCOPE)
            s[n++] = &all[i];
    qsort(s, n, sizeof *s, scope_cmp);
    /* One TaskMetrics per run of equal scopes. Scopes that are not a
     * task's are the TaskManager's. */
    for (size_t i = 0; i < n;) {
        struct metric_list l = { 0 };
        Cluster__TaskMetrics *t;
        spate_id job, vertex;
        int subtask, attempt;
        size_t j = i;
        char value[64];

        if (!task_io_scope_parse(s[i]->scope, &job, &vertex, &subtask, &attempt)) {
            metric_sample_format(s[i], value, sizeof value);
            list_add(&tm, s[i]->name, value);
            i++;
            continue;
        }
        for (; j < n && strcmp(s[j]->scope, s[i]->scope) == 0; j++) {
            metric_sample_format(s[j], value, sizeof value);
            list_add(&l, s[j]->name, value);
        }
        t = xmalloc(sizeof *t + 2 * ID_BYTES);
        cluster__task_metrics__init(t);
        /* The ids live behind the message, freed with it. */
        memcpy((uint8_t *)(t + 1), job.bytes, ID_BYTES);
        memcpy((uint8_t *)(t + 1) + ID_BYTES, vertex.bytes, ID_BYTES);
        t->job_id = (ProtobufCBinaryData){ ID_BYTES, (uint8_t *)(t + 1) };
        t->vertex_id = (ProtobufCBinaryData){ ID_BYTES, (uint8_t *)(t + 1) + ID_BYTES };
        t->subtask = subtask;
        t->attempt = attempt;
        t->metrics = l.items;
        t->n_metrics = l.n;
        xgrow((void **)&tasks, &cap, ntasks + 1, sizeof *tasks);
        tasks[ntasks++] = t;
        i = j;
    }
    free(s);
    metric_samples_free(all, nall);
    out->taskmanager = tm.items;
    out->n_taskmanager = tm.n;
    out->tasks = tasks;
    out->n_tasks = ntasks;
}

void
metric_query_dump_release(Cluster__MetricDump *out)
{
    metrics_free(out->taskmanager, out->n_taskmanager);
    for (size_t i = 0; i < out->n_tasks; i++) {
        metrics_free(out->tasks[i]->metrics, out->tasks[i]->n_metrics);
        free(out->tasks[i]);
    }
    free(out->tasks);
}
