/* The REST side's metric store and its JSON views (metric_store.h). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/alloc.h"
#include "rest/metric_store.h"
#include "rpc/gateways.h"

struct metric_task {
    spate_id job, vertex;
    int subtask, attempt;
    struct metric_component metrics;
};

struct metric_tm {
    spate_id id;
    struct metric_component metrics;
};

struct metric_store {
    struct metric_tm *tms;
    size_t ntms, tms_cap;
    struct metric_task *tasks;
    size_t ntasks, tasks_cap;
};

/* ---- components ------------------------------------------------------------------------ */

void
metric_component_put(struct metric_component *c, const char *name, const char *value)
{
    for (size_t i = 0; i < c->n; i++) {
        if (strcmp(c->names[i], name) == 0) {
            free(c->values[i]);
            c->values[i] = xstrdup(value);
            return;
        }
    }
    if (c->n == c->cap) {
        size_t cap = c->cap;

        xgrow((void **)&c->names, &cap, c->n + 1, sizeof *c->names);
        xgrow((void **)&c->values, &c->cap, c->n + 1, sizeof *c->values);
    }
    c->names[c->n] = xstrdup(name);
    c->values[c->n] = xstrdup(value);
    c->n++;
}

void
metric_component_put_int(struct metric_component *c, const char *name, int64_t value)
{
    char text[32];

    snprintf(text, sizeof text, "%lld", (long long)value);
    metric_component_put(c, name, text);
}

const char *
metric_component_get(const struct metric_component *c, const char *name)
{
    for (size_t i = 0; c != NULL && i < c->n; i++)
        if (strcmp(c->names[i], name) == 0)
            return c->values[i];
    return NULL;
}

void
metric_component_release(struct metric_component *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->names[i]);
        free(c->values[i]);
    }
    free(c->names);
    free(c->values);
    memset(c, 0, sizeof *c);
}

static void
component_add_all(struct metric_component *c, Cluster__Metric *const *ms, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (ms[i]->name != NULL && ms[i]->name[0] != '\0' && ms[i]->value != NULL)
            metric_component_put(c, ms[i]->name, ms[i]->value);
}

/* ---- the store ------------------------------------------------------------------------- */

struct metric_store *
metric_store_new(void)
{
    return xcalloc(1, sizeof(struct metric_store));
}

void
metric_store_free(struct metric_store *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->ntms; i++)
        metric_component_release(&s->tms[i].metrics);
    for (size_t i = 0; i < s->ntasks; i++)
        metric_component_release(&s->tasks[i].metrics);
    free(s->tms);
    free(s->tasks);
    free(s);
}

size_t
metric_store_add(struct metric_store *s, const Cluster__MetricDump *dump)
{
    size_t skipped = 0;
    spate_id tm;

    if (gw_id_get(&dump->resource_id, &tm)) {
        struct metric_tm *t;

        xgrow((void **)&s->tms, &s->tms_cap, s->ntms + 1, sizeof *s->tms);
        t = &s->tms[s->ntms++];
        memset(t, 0, sizeof *t);
        t->id = tm;
        component_add_all(&t->metrics, dump->taskmanager, dump->n_taskmanager);
    } else {
        skipped++;
    }
    for (size_t i = 0; i < dump->n_tasks; i++) {
        const Cluster__TaskMetrics *d = dump->tasks[i];
        struct metric_task *t;

        if (d->subtask < 0 || d->attempt < 0) {
            skipped++;
            continue;
        }
        xgrow((void **)&s->tasks, &s->tasks_cap, s->ntasks + 1, sizeof *s->tasks);
        t = &s->tasks[s->ntasks];
        memset(t, 0, sizeof *t);
        if (!gw_id_get(&d->job_id, &t->job) || !gw_id_get(&d->vertex_id, &t->vertex)) {
            skipped++;
            continue;
        }
        t->subtask = d->subtask;
        t->attempt = d->attempt;
        component_add_all(&t->metrics, d->metrics, d->n_metrics);
        s->ntasks++;
    }
    return skipped;
}

const struct metric_component *
metric_store_taskmanager(const struct metric_store *s, const spate_id *tm)
{
    for (size_t i = 0; i < s->ntms; i++)
        if (id_equal(&s->tms[i].id, tm))
            return &s->tms[i].metrics;
    return NULL;
}

size_t
metric_store_taskmanager_count(const struct metric_store *s)
{
    return s->ntms;
}

const struct metric_component *
metric_store_taskmanager_at(const struct metric_store *s, size_t i, spate_id *id)
{
    *id = s->tms[i].id;
    return &s->tms[i].metrics;
}

const struct metric_component *
metric_store_subtask(const struct metric_store *s, const spate_id *job, const spate_id *vertex,
                     int subtask)
{
    const struct metric_task *best = NULL;

    /* An ending attempt may still be in a dump beside its successor. */
    for (size_t i = 0; i < s->ntasks; i++) {
        const struct metric_task *t = &s->tasks[i];

        if (t->subtask == subtask && id_equal(&t->job, job) && id_equal(&t->vertex, vertex) &&
            (best == NULL || t->attempt > best->attempt))
            best = t;
    }
    return best != NULL ? &best->metrics : NULL;
}

int
metric_store_subtask_limit(const struct metric_store *s, const spate_id *job,
                           const spate_id *vertex)
{
    int limit = 0;

    for (size_t i = 0; i < s->ntasks; i++)
        if (id_equal(&s->tasks[i].job, job) && id_equal(&s->tasks[i].vertex, vertex) &&
            s->tasks[i].subtask >= limit)
            limit = s->tasks[i].subtask + 1;
    return limit;
}

void
metric_store_vertex(const struct metric_store *s, const spate_id *job, const spate_id *vertex,
                    struct metric_component *out)
{
    int limit = metric_store_subtask_limit(s, job, vertex);

    memset(out, 0, sizeof *out);
    for (int i = 0; i < limit; i++) {
        const struct metric_component *c = metric_store_subtask(s, job, vertex, i);
        char name[512];

        for (size_t k = 0; c != NULL && k < c->n; k++) {
            snprintf(name, sizeof name, "%d.%s", i, c->names[k]);
            metric_component_put(out, name, c->values[k]);
        }
    }
}

/* ---- JSON ------------------------------------------------------------------------------ */

/* Calls fn for each non-empty name of a comma-separated list. */
static void
each_name(const char *list, void (*fn)(const char *name, void *arg), void *arg)
{
    char *copy = xstrdup(list), *save = NULL;

    for (char *tok = strtok_r(copy, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        while (isspace((unsigned char)*tok))
            tok++;
        for (char *e = tok + strlen(tok); e > tok && isspace((unsigned char)e[-1]);)
            *--e = '\0';
        if (*tok != '\0')
            fn(tok, arg);
    }
    free(copy);
}

struct values_arg {
    const struct metric_component *c;
    json_t *out;
    json_t *seen; /* a name asked twice is answered once, as Flink's set */
};

static void
add_value(const char *name, void *arg)
{
    struct values_arg *a = arg;
    const char *v = metric_component_get(a->c, name);

    if (v == NULL || json_object_get(a->seen, name) != NULL)
        return;
    json_object_set_new(a->seen, name, json_true());
    json_array_append_new(a->out, json_pack("{s:s, s:s}", "id", name, "value", v));
}

json_t *
metric_json_values(const struct metric_component *c, const char *get)
{
    json_t *out = json_array();

    if (c == NULL)
        return out;
    if (get == NULL || *get == '\0') {
        for (size_t i = 0; i < c->n; i++)
            json_array_append_new(out, json_pack("{s:s}", "id", c->names[i]));
    } else {
        struct values_arg a = { c, out, json_object() };

        each_name(get, add_value, &a);
        json_decref(a.seen);
    }
    return out;
}

struct agg_parse {
    unsigned aggs;
    char bad[64];
};

static void
add_aggregation(const char *name, void *arg)
{
    static const char *const names[] = { "min", "max", "avg", "sum" };
    struct agg_parse *p = arg;

    for (unsigned i = 0; i < 4; i++) {
        if (strcasecmp(name, names[i]) == 0) {
            p->aggs |= 1u << i;
            return;
        }
    }
    if (p->bad[0] == '\0')
        snprintf(p->bad, sizeof p->bad, "%s", name);
}

int
metric_parse_aggregations(const char *text, unsigned *aggs, spate_error *err)
{
    struct agg_parse p = { 0, "" };

    *aggs = METRIC_AGG_ALL;
    if (text == NULL || *text == '\0')
        return 0;
    each_name(text, add_aggregation, &p);
    if (p.bad[0] != '\0')
        return spate_error_set(err, SPATE_EINVAL,
                               "query parameter agg: '%s' is not an aggregation (min, max, avg, "
                               "sum)",
                               p.bad);
    if (p.aggs != 0)
        *aggs = p.aggs;
    return 0;
}

/* A non-negative decimal int filling all of [s, e). */
static bool
parse_index(const char *s, const char *e, int *out)
{
    long v = 0;

    if (s == e || e - s > 9)
        return false;
    for (; s < e; s++) {
        if (!isdigit((unsigned char)*s))
            return false;
        v = v * 10 + (*s - '0');
    }
    *out = (int)v;
    return true;
}

struct range_parse {
    bool *selected;
    int limit;
    char bad[64];
};

static void
add_range(const char *range, void *arg)
{
    struct range_parse *p = arg;
    const char *dash = strchr(range, '-');
    const char *end = range + strlen(range);
    int lo, hi;

    if (dash == NULL ? !parse_index(range, end, &lo)
                     : !parse_index(range, dash, &lo) || !parse_index(dash + 1, end, &hi)) {
        if (p->bad[0] == '\0')
            snprintf(p->bad, sizeof p->bad, "%s", range);
        return;
    }
    if (dash == NULL)
        hi = lo;
    for (int i = lo; i <= hi && i < p->limit; i++)
        p->selected[i] = true;
}

int
metric_parse_subtasks(const char *text, bool *selected, int limit, spate_error *err)
{
    struct range_parse p = { selected, limit, "" };
    bool all = text == NULL || *text == '\0';

    for (int i = 0; i < limit; i++)
        selected[i] = all;
    if (all)
        return 0;
    each_name(text, add_range, &p);
    if (p.bad[0] != '\0')
        return spate_error_set(err, SPATE_EINVAL,
                               "query parameter subtasks: '%s' is not a subtask index or range "
                               "such as 1,3,5-9",
                               p.bad);
    return 0;
}

/* A metric's text as a number; false for text that is not one. */
static bool
parse_number(const char *text, double *out)
{
    char *end;

    errno = 0;
    *out = strtod(text, &end);
    return end != text && *end == '\0' && errno == 0 && isfinite(*out);
}

struct aggregate_arg {
    const struct metric_component *const *cs;
    size_t n;
    unsigned aggs;
    json_t *out;
    json_t *seen;
};

static void
add_aggregate(const char *name, void *arg)
{
    struct aggregate_arg *a = arg;
    double min = INFINITY, max = -INFINITY, sum = 0, v;
    size_t count = 0;
    json_t *o;

    if (json_object_get(a->seen, name) != NULL)
        return;
    json_object_set_new(a->seen, name, json_true());
    for (size_t i = 0; i < a->n; i++) {
        const char *text = metric_component_get(a->cs[i], name);

        if (text == NULL)
            continue;
        if (!parse_number(text, &v))
            return; /* not numeric: cannot be aggregated (Flink skips it) */
        min = fmin(min, v);
        max = fmax(max, v);
        sum += v;
        count++;
    }
    if (count == 0)
        return;
    o = json_pack("{s:s}", "id", name);
    if (a->aggs & METRIC_AGG_MIN)
        json_object_set_new(o, "min", json_real(min));
    if (a->aggs & METRIC_AGG_MAX)
        json_object_set_new(o, "max", json_real(max));
    if (a->aggs & METRIC_AGG_AVG)
        json_object_set_new(o, "avg", json_real(sum / (double)count));
    if (a->aggs & METRIC_AGG_SUM)
        json_object_set_new(o, "sum", json_real(sum));
    json_array_append_new(a->out, o);
}

json_t *
metric_json_aggregate(const struct metric_component *const *cs, size_t n, const char *get,
                      unsigned aggs)
{
    json_t *out = json_array();
    json_t *seen = json_object();

    if (get == NULL || *get == '\0') {
        for (size_t i = 0; i < n; i++) {
            for (size_t k = 0; cs[i] != NULL && k < cs[i]->n; k++) {
                if (json_object_get(seen, cs[i]->names[k]) != NULL)
                    continue;
                json_object_set_new(seen, cs[i]->names[k], json_true());
                json_array_append_new(out, json_pack("{s:s}", "id", cs[i]->names[k]));
            }
        }
    } else {
        struct aggregate_arg a = { cs, n, aggs, out, seen };

        each_name(get, add_aggregate, &a);
    }
    json_decref(seen);
    return out;
}

json_t *
metric_json_watermarks(const struct metric_store *s, const spate_id *job, const spate_id *vertex,
                       int parallelism)
{
    json_t *out = json_array();

    for (int i = 0; i < parallelism; i++) {
        const char *v =
            metric_component_get(metric_store_subtask(s, job, vertex, i), "currentInputWatermark");
        char id[64];

        if (v == NULL)
            continue;
        snprintf(id, sizeof id, "%d.currentInputWatermark", i);
        json_array_append_new(out, json_pack("{s:s, s:s}", "id", id, "value", v));
    }
    return out;
}

const char *
metric_backpressure_level(double ratio)
{
    return ratio <= 0.10 ? "ok" : ratio <= 0.5 ? "low" : "high";
}

/* A ms-per-second metric as a ratio (Flink: absent is "0"). */
static double
ms_per_second_ratio(const struct metric_component *c, const char *name)
{
    const char *text = metric_component_get(c, name);
    double v;

    return text != NULL && parse_number(text, &v) ? v / 1000.0 : 0.0;
}

json_t *
metric_json_backpressure(const struct metric_store *s, const spate_id *job, const spate_id *vertex,
                         int64_t fetched_ms)
{
    int limit = metric_store_subtask_limit(s, job, vertex);
    json_t *subtasks = json_array();
    double worst = 0;

    if (limit == 0) {
        json_decref(subtasks);
        return json_pack("{s:s}", "status", "deprecated");
    }
    for (int i = 0; i < limit; i++) {
        const struct metric_component *c = metric_store_subtask(s, job, vertex, i);
        double ratio;

        if (c == NULL)
            continue;
        ratio = ms_per_second_ratio(c, "backPressuredTimeMsPerSecond");
        worst = fmax(worst, ratio);
        json_array_append_new(
            subtasks, json_pack("{s:i, s:s, s:f, s:f, s:f}", "subtask", i, "backpressureLevel",
                                metric_backpressure_level(ratio), "ratio", ratio, "idleRatio",
                                ms_per_second_ratio(c, "idleTimeMsPerSecond"), "busyRatio",
                                ms_per_second_ratio(c, "busyTimeMsPerSecond")));
    }
    return json_pack("{s:s, s:s, s:I, s:o}", "status", "ok", "backpressureLevel",
                     metric_backpressure_level(worst), "end-timestamp", (json_int_t)fetched_ms,
                     "subtasks", subtasks);
}
