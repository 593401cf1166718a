/* An operator's metric group and the spate_metric_* calls of spate.h
 * (operator_metrics.h). Task thread only; the registry's reader reads the
 * sources, which metric_group_free stops before they are freed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "streaming/operator_metrics.h"

#define HISTOGRAM_WINDOW_DEFAULT 1024

struct spate_metric_counter {
    struct metric_counter c;
};

struct spate_metric_gauge {
    struct metric_value v;
};

struct spate_metric_meter {
    struct metric_counter events;
};

struct spate_metric_histogram {
    struct metric_histogram h;
};

enum user_metric_kind {
    UM_COUNTER,
    UM_GAUGE,
    UM_METER,
    UM_HISTOGRAM,
};

static const char *const kind_names[] = { "counter", "gauge", "meter", "histogram" };

struct user_metric {
    struct user_metric *next;
    char *name; /* within the operator's group, its groups' names first */
    enum user_metric_kind kind;
    union {
        struct spate_metric_counter counter;
        struct spate_metric_gauge gauge;
        struct spate_metric_meter meter;
        struct spate_metric_histogram histogram;
    } u;
};

/* The operator's group, or a group inside it (addGroup): a prefix of its
 * metrics' names. */
struct spate_metric_group {
    struct operator_metrics *owner;
    char *prefix; /* "" or "a.b." */
    struct spate_metric_group *next;
};

struct operator_metrics {
    struct stream_operator *op;
    struct metric_group *group; /* NULL: no registry, metrics unreported */
    struct user_metric *metrics;
    struct spate_metric_group root;
    struct spate_metric_group *groups; /* made by add_group */
};

static struct operator_metrics *
operator_metrics_of(struct stream_operator *op)
{
    struct operator_metrics *m = op->metrics;
    const struct operator_settings *s = op->config;

    if (m != NULL)
        return m;
    m = xcalloc(1, sizeof *m);
    m->op = op;
    m->root.owner = m;
    m->root.prefix = xstrdup("");
    if (op->task != NULL && op->task->metrics != NULL) {
        const char *name = s->name != NULL ? s->name : operator_kind_name(s->kind);
        id_text id = id_str(&s->operator_id);
        /* Flink's variables of an operator's group, after its task's. */
        const char *labels[] = { "operator_id", id.s, "operator_name", name, NULL };
        char *prefix = xasprintf("%s.", name);

        m->group = metric_group_new_child(op->task->metrics, "taskmanager_job_task_operator",
                                          labels, prefix);
        free(prefix);
    }
    op->metrics = m;
    return m;
}

/* The metric of kind named prefix + name in g's operator: the one made
 * before, or a new one registered in the operator's group. A bad name, or
 * one of another kind, sets err and gives a metric no one reports. */
static struct user_metric *
metric_get(struct spate_metric_group *g, const char *name, enum user_metric_kind kind,
           size_t window, spate_error *err)
{
    struct operator_metrics *m = g->owner;
    struct user_metric *u;
    char *full = NULL;
    bool report = true;

    if (name == NULL || name[0] == '\0') {
        spate_error_set(err, SPATE_EINVAL, "a %s of operator '%s' has no name", kind_names[kind],
                        spate_ctx_task_name(&m->op->ctx));
        report = false;
    } else {
        full = xasprintf("%s%s", g->prefix, name);
        for (u = m->metrics; u != NULL; u = u->next) {
            if (u->name == NULL || strcmp(u->name, full) != 0)
                continue;
            if (u->kind == kind) {
                free(full);
                return u;
            }
            spate_error_set(
                err, SPATE_EINVAL, "metric '%s' of operator '%s' is a %s, asked for as a %s", full,
                spate_ctx_task_name(&m->op->ctx), kind_names[u->kind], kind_names[kind]);
            report = false;
            break;
        }
    }
    u = xcalloc(1, sizeof *u);
    u->kind = kind;
    u->name = report ? full : NULL;
    if (!report)
        free(full);
    u->next = m->metrics;
    m->metrics = u;
    switch (kind) {
    case UM_GAUGE:
        metric_value_set(&u->u.gauge.v, NAN);
        break;
    case UM_HISTOGRAM:
        metric_histogram_init(&u->u.histogram.h, window > 0 ? window : HISTOGRAM_WINDOW_DEFAULT);
        break;
    default:
        break;
    }
    if (!report || m->group == NULL)
        return u;
    switch (kind) {
    case UM_COUNTER:
        metric_group_counter(m->group, u->name, &u->u.counter.c);
        break;
    case UM_GAUGE:
        metric_group_value(m->group, u->name, &u->u.gauge.v);
        break;
    case UM_METER:
        metric_group_meter(m->group, u->name, &u->u.meter.events);
        break;
    case UM_HISTOGRAM:
        metric_group_histogram(m->group, u->name, &u->u.histogram.h);
        break;
    }
    return u;
}

/* The user's calls: a bad one fails the task with the message. */
static struct user_metric *
user_metric_get(spate_metric_group *g, const char *name, enum user_metric_kind kind, size_t window)
{
    spate_error err = { 0 };
    struct user_metric *u = metric_get(g, name, kind, window, &err);

    if (err.code != 0)
        spate_ctx_fail(&g->owner->op->ctx, "%s", err.message);
    return u;
}

void
operator_metrics_open(struct stream_operator *op)
{
    struct operator_metrics *m = operator_metrics_of(op);

    if (m->group == NULL)
        return;
    /* Flink's operator watermark gauges (WatermarkGauge), read from where
     * the task thread keeps them: the input's in the operator, the
     * output's in its output. */
    metric_group_gauge(m->group, "currentInputWatermark", &op->input_watermark);
    metric_group_gauge(m->group, "currentOutputWatermark", &op->out->watermark);
    if (op->vt->process2 != NULL) {
        metric_group_gauge(m->group, "currentInput1Watermark", &op->input_watermarks[0]);
        metric_group_gauge(m->group, "currentInput2Watermark", &op->input_watermarks[1]);
    }
}

/* The operator's own metric of kind named name: NULL with err set when
 * the name is bad or names another kind. */
static struct user_metric *
own_metric(struct stream_operator *op, const char *name, enum user_metric_kind kind,
           spate_error *err)
{
    spate_error e = { 0 };
    struct user_metric *u = metric_get(&operator_metrics_of(op)->root, name, kind, 0, &e);

    if (e.code != 0) {
        if (err != NULL)
            *err = e;
        return NULL;
    }
    return u;
}

struct metric_counter *
operator_metrics_counter(struct stream_operator *op, const char *name, spate_error *err)
{
    struct user_metric *u = own_metric(op, name, UM_COUNTER, err);

    return u != NULL ? &u->u.counter.c : NULL;
}

struct metric_value *
operator_metrics_gauge(struct stream_operator *op, const char *name, spate_error *err)
{
    struct user_metric *u = own_metric(op, name, UM_GAUGE, err);

    return u != NULL ? &u->u.gauge.v : NULL;
}

void
operator_metrics_free(struct operator_metrics *m)
{
    if (m == NULL)
        return;
    metric_group_free(m->group);
    while (m->metrics != NULL) {
        struct user_metric *u = m->metrics;

        m->metrics = u->next;
        if (u->kind == UM_HISTOGRAM)
            metric_histogram_release(&u->u.histogram.h);
        free(u->name);
        free(u);
    }
    while (m->groups != NULL) {
        struct spate_metric_group *g = m->groups;

        m->groups = g->next;
        free(g->prefix);
        free(g);
    }
    free(m->root.prefix);
    free(m);
}

/* ---- spate.h ---- */

spate_metric_group *
spate_ctx_metric_group(spate_ctx *ctx)
{
    return &operator_metrics_of(ctx->op)->root;
}

spate_metric_group *
spate_metric_group_add_group(spate_metric_group *g, const char *name)
{
    struct operator_metrics *m = g->owner;
    spate_metric_group *sub;
    char *prefix;

    if (name == NULL || name[0] == '\0') {
        spate_ctx_fail(&m->op->ctx, "a metric group of operator '%s' has no name",
                       spate_ctx_task_name(&m->op->ctx));
        name = "_";
    }
    prefix = xasprintf("%s%s.", g->prefix, name);
    for (sub = m->groups; sub != NULL; sub = sub->next) {
        if (strcmp(sub->prefix, prefix) == 0) {
            free(prefix);
            return sub;
        }
    }
    sub = xcalloc(1, sizeof *sub);
    sub->owner = m;
    sub->prefix = prefix;
    sub->next = m->groups;
    m->groups = sub;
    return sub;
}

spate_metric_counter *
spate_metric_group_counter(spate_metric_group *g, const char *name)
{
    return &user_metric_get(g, name, UM_COUNTER, 0)->u.counter;
}

void
spate_metric_counter_inc(spate_metric_counter *c, int64_t n)
{
    /* Two's complement: a negative n wraps into a decrease, and the
     * reader reads the count back as a signed number. */
    metric_counter_add(&c->c, (uint64_t)n);
}

void
spate_metric_counter_dec(spate_metric_counter *c, int64_t n)
{
    metric_counter_add(&c->c, (uint64_t)0 - (uint64_t)n);
}

spate_metric_gauge *
spate_metric_group_gauge(spate_metric_group *g, const char *name)
{
    return &user_metric_get(g, name, UM_GAUGE, 0)->u.gauge;
}

void
spate_metric_gauge_set(spate_metric_gauge *gauge, double value)
{
    metric_value_set(&gauge->v, value);
}

spate_metric_meter *
spate_metric_group_meter(spate_metric_group *g, const char *name)
{
    return &user_metric_get(g, name, UM_METER, 0)->u.meter;
}

void
spate_metric_meter_mark_event(spate_metric_meter *m, int64_t n)
{
    metric_counter_add(&m->events, (uint64_t)n);
}

spate_metric_histogram *
spate_metric_group_histogram(spate_metric_group *g, const char *name, size_t window)
{
    return &user_metric_get(g, name, UM_HISTOGRAM, window)->u.histogram;
}

void
spate_metric_histogram_update(spate_metric_histogram *h, int64_t value)
{
    metric_histogram_update(&h->h, value);
}
