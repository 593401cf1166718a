/* The metric registry of metrics.h. The registry mutex guards the group list
 * and each metric's derived-rate state; sources are read with relaxed atomic
 * loads under it, so a group freed (under the mutex) is never read again. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/util.h"
#include "metrics/metrics.h"

enum metric_kind {
    METRIC_COUNTER,
    METRIC_RATIO,
    METRIC_METER,
    METRIC_TIME_RATE,
    METRIC_TIME_REST,
    METRIC_GAUGE,
    METRIC_TIME_TOTAL,
    METRIC_TIME_TOTAL_REST,
    METRIC_VALUE,
    METRIC_HISTOGRAM,
};

struct metric {
    char *name;        /* the group's prefix, then the metric's own name */
    size_t prefix_len; /* name + prefix_len: the metric's own name */
    enum metric_kind kind;
    void *a, *b;
    uint64_t since_ns; /* METRIC_TIME_TOTAL_REST: when the time began */
    /* derived rates: the previous sample and the last computed value */
    uint64_t prev_a, prev_b;
    uint64_t prev_ns;
    double rate;
};

struct metric_group {
    struct metric_registry *registry;
    char *scope;
    char *kind;   /* "" when none */
    char *labels; /* Prometheus label text, "" when none */
    char *prefix; /* of every metric's name where the scope names it */
    struct metric *metrics;
    size_t count, cap;
    struct metric_group *next;
};

struct metric_registry {
    pthread_mutex_t lock; /* guards groups and every metric's rate state */
    struct metric_group *groups;
};

/* ---- timers: a single-writer sequence lock ---- */

static void
timer_write_begin(struct metric_timer *t)
{
    uint32_t s = atomic_load_explicit(&t->seq, memory_order_relaxed);

    atomic_store_explicit(&t->seq, s + 1, memory_order_relaxed);
    /* release fence: a reader that sees a data store below also sees the odd seq */
    atomic_thread_fence(memory_order_release);
}

static void
timer_write_end(struct metric_timer *t)
{
    uint32_t s = atomic_load_explicit(&t->seq, memory_order_relaxed);

    /* release: the data stores happen before the even seq a reader checks */
    atomic_store_explicit(&t->seq, s + 1, memory_order_release);
}

void
metric_timer_start(struct metric_timer *t, uint64_t now_ns)
{
    if (atomic_load_explicit(&t->start_ns, memory_order_relaxed) != 0)
        return;
    timer_write_begin(t);
    atomic_store_explicit(&t->start_ns, now_ns ? now_ns : 1, memory_order_relaxed);
    timer_write_end(t);
}

void
metric_timer_stop(struct metric_timer *t, uint64_t now_ns)
{
    uint64_t start = atomic_load_explicit(&t->start_ns, memory_order_relaxed);
    uint64_t total = atomic_load_explicit(&t->total_ns, memory_order_relaxed);

    if (start == 0)
        return;
    timer_write_begin(t);
    atomic_store_explicit(&t->total_ns, total + (now_ns > start ? now_ns - start : 0),
                          memory_order_relaxed);
    atomic_store_explicit(&t->start_ns, 0, memory_order_relaxed);
    timer_write_end(t);
}

uint64_t
metric_timer_read(struct metric_timer *t, uint64_t now_ns)
{
    for (;;) {
        uint32_t s1 = atomic_load_explicit(&t->seq, memory_order_acquire);
        uint64_t total = atomic_load_explicit(&t->total_ns, memory_order_relaxed);
        uint64_t start = atomic_load_explicit(&t->start_ns, memory_order_relaxed);

        /* acquire fence: the loads above complete before seq is read again */
        atomic_thread_fence(memory_order_acquire);
        if ((s1 & 1) == 0 && s1 == atomic_load_explicit(&t->seq, memory_order_relaxed))
            return total + (start != 0 && now_ns > start ? now_ns - start : 0);
    }
}

/* ---- registry ---- */

struct metric_registry *
metric_registry_new(void)
{
    struct metric_registry *r = xcalloc(1, sizeof *r);

    pthread_mutex_init(&r->lock, NULL);
    return r;
}

void
metric_registry_free(struct metric_registry *r)
{
    if (r == NULL)
        return;
    SPATE_ASSERT(r->groups == NULL);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

/* `key="value",...` with Prometheus' escapes (backslash, quote, newline) in
 * values; keys are Flink's variable names, already [a-z_]. */
static char *
labels_format(const char *const *labels)
{
    size_t cap = 1, n = 0;
    char *out;

    for (size_t i = 0; labels != NULL && labels[i] != NULL && labels[i + 1] != NULL; i += 2)
        cap += strlen(labels[i]) + 2 * strlen(labels[i + 1]) + 4;
    out = xmalloc(cap);
    for (size_t i = 0; labels != NULL && labels[i] != NULL && labels[i + 1] != NULL; i += 2) {
        if (n > 0)
            out[n++] = ',';
        n += (size_t)sprintf(out + n, "%s=\"", labels[i]);
        for (const char *v = labels[i + 1]; *v != '\0'; v++) {
            if (*v == '\\' || *v == '"' || *v == '\n') {
                out[n++] = '\\';
                out[n++] = *v == '\n' ? 'n' : *v;
            } else {
                out[n++] = *v;
            }
        }
        out[n++] = '"';
    }
    out[n] = '\0';
    return out;
}

struct metric_group *
metric_group_new(struct metric_registry *r, const char *scope)
{
    return metric_group_new_scoped(r, scope, NULL, NULL);
}

static void
group_link(struct metric_group *g)
{
    struct metric_registry *r = g->registry;

    pthread_mutex_lock(&r->lock);
    g->next = r->groups;
    r->groups = g;
    pthread_mutex_unlock(&r->lock);
}

struct metric_group *
metric_group_new_scoped(struct metric_registry *r, const char *scope, const char *kind,
                        const char *const *labels)
{
    struct metric_group *g = xcalloc(1, sizeof *g);

    g->registry = r;
    g->scope = xstrdup(scope);
    g->kind = xstrdup(kind != NULL ? kind : "");
    g->labels = labels_format(labels);
    g->prefix = xstrdup("");
    group_link(g);
    return g;
}

struct metric_group *
metric_group_new_child(struct metric_group *parent, const char *kind, const char *const *labels,
                       const char *name_prefix)
{
    struct metric_group *g = xcalloc(1, sizeof *g);
    char *own = labels_format(labels);

    /* The parent's fields never change once made: read without the lock. */
    g->registry = parent->registry;
    g->scope = xstrdup(parent->scope);
    g->kind = xstrdup(kind != NULL ? kind : parent->kind);
    if (parent->labels[0] != '\0' && own[0] != '\0') {
        g->labels = xasprintf("%s,%s", parent->labels, own);
        free(own);
    } else {
        g->labels = parent->labels[0] != '\0' ? xstrdup(parent->labels) : own;
        if (g->labels != own)
            free(own);
    }
    g->prefix = xasprintf("%s%s", parent->prefix, name_prefix != NULL ? name_prefix : "");
    group_link(g);
    return g;
}

void
metric_group_free(struct metric_group *g)
{
    struct metric_registry *r;

    if (g == NULL)
        return;
    r = g->registry;
    pthread_mutex_lock(&r->lock);
    for (struct metric_group **p = &r->groups; *p != NULL; p = &(*p)->next) {
        if (*p == g) {
            *p = g->next;
            break;
        }
    }
    pthread_mutex_unlock(&r->lock);
    for (size_t i = 0; i < g->count; i++)
        free(g->metrics[i].name);
    free(g->metrics);
    free(g->scope);
    free(g->kind);
    free(g->labels);
    free(g->prefix);
    free(g);
}

static void
group_add(struct metric_group *g, const char *name, enum metric_kind kind, void *a, void *b,
          uint64_t since_ns)
{
    struct metric *m;

    pthread_mutex_lock(&g->registry->lock);
    xgrow((void **)&g->metrics, &g->cap, g->count + 1, sizeof *g->metrics);
    m = &g->metrics[g->count++];
    memset(m, 0, sizeof *m);
    m->name = xasprintf("%s%s", g->prefix, name);
    m->prefix_len = strlen(g->prefix);
    m->kind = kind;
    m->a = a;
    m->b = b;
    m->since_ns = since_ns;
    pthread_mutex_unlock(&g->registry->lock);
}

void
metric_group_counter(struct metric_group *g, const char *name, struct metric_counter *c)
{
    group_add(g, name, METRIC_COUNTER, c, NULL, 0);
}

void
metric_group_ratio(struct metric_group *g, const char *name, struct metric_level *used,
                   struct metric_level *capacity)
{
    group_add(g, name, METRIC_RATIO, used, capacity, 0);
}

void
metric_group_meter(struct metric_group *g, const char *name, struct metric_counter *c)
{
    group_add(g, name, METRIC_METER, c, NULL, 0);
}

void
metric_group_time_rate(struct metric_group *g, const char *name, struct metric_timer *t)
{
    group_add(g, name, METRIC_TIME_RATE, t, NULL, 0);
}

void
metric_group_time_rest(struct metric_group *g, const char *name, struct metric_timer *a,
                       struct metric_timer *b)
{
    group_add(g, name, METRIC_TIME_REST, a, b, 0);
}

void
metric_group_gauge(struct metric_group *g, const char *name, struct metric_gauge *v)
{
    group_add(g, name, METRIC_GAUGE, v, NULL, 0);
}

void
metric_group_time_total(struct metric_group *g, const char *name, struct metric_timer *t)
{
    group_add(g, name, METRIC_TIME_TOTAL, t, NULL, 0);
}

void
metric_group_time_total_rest(struct metric_group *g, const char *name, struct metric_timer *a,
                             struct metric_timer *b, uint64_t since_ns)
{
    group_add(g, name, METRIC_TIME_TOTAL_REST, a, b, since_ns);
}

void
metric_group_value(struct metric_group *g, const char *name, struct metric_value *v)
{
    group_add(g, name, METRIC_VALUE, v, NULL, 0);
}

void
metric_group_histogram(struct metric_group *g, const char *name, struct metric_histogram *h)
{
    group_add(g, name, METRIC_HISTOGRAM, h, NULL, 0);
}

/* ---- histograms ---- */

void
metric_histogram_init(struct metric_histogram *h, size_t size)
{
    memset(h, 0, sizeof *h);
    h->size = size > 0 ? size : 1;
    h->values = xcalloc(h->size, sizeof *h->values);
}

void
metric_histogram_release(struct metric_histogram *h)
{
    free((void *)h->values);
    h->values = NULL;
}

static int
int64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

/* Apache Commons Math's Percentile (Flink's DescriptiveStatistics): the
 * position q * (n + 1), between the values around it. */
static double
quantile_of(const int64_t *sorted, size_t n, double q)
{
    double pos = q * (double)(n + 1), lower;
    size_t at;

    if (pos < 1)
        return (double)sorted[0];
    if (pos >= (double)n)
        return (double)sorted[n - 1];
    at = (size_t)pos;
    lower = (double)sorted[at - 1];
    return lower + (pos - (double)at) * ((double)sorted[at] - lower);
}

void
metric_histogram_stats(struct metric_histogram *h, struct metric_histogram_stats *out)
{
    /* acquire: the slots below count - 1 are written */
    uint64_t count = atomic_load_explicit(&h->count, memory_order_acquire);
    size_t n = count < h->size ? (size_t)count : h->size;
    int64_t *v;
    double sum = 0, sq = 0;

    memset(out, 0, sizeof *out);
    out->count = count;
    out->n = n;
    if (n == 0)
        return;
    v = xmalloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = atomic_load_explicit(&h->values[i], memory_order_relaxed);
    qsort(v, n, sizeof *v, int64_cmp);
    for (size_t i = 0; i < n; i++)
        sum += (double)v[i];
    out->mean = sum / (double)n;
    for (size_t i = 0; i < n; i++)
        sq += ((double)v[i] - out->mean) * ((double)v[i] - out->mean);
    /* the sample's standard deviation, as DescriptiveStatistics' */
    out->stddev = n > 1 ? sqrt(sq / (double)(n - 1)) : 0;
    out->min = (double)v[0];
    out->max = (double)v[n - 1];
    out->p50 = quantile_of(v, n, 0.5);
    out->p75 = quantile_of(v, n, 0.75);
    out->p90 = quantile_of(v, n, 0.9);
    out->p95 = quantile_of(v, n, 0.95);
    out->p98 = quantile_of(v, n, 0.98);
    out->p99 = quantile_of(v, n, 0.99);
    out->p999 = quantile_of(v, n, 0.999);
    free(v);
}

static void
metric_update(struct metric *m, uint64_t now_ns)
{
    uint64_t a = 0, b = 0;
    double dt;

    switch (m->kind) {
    case METRIC_METER:
        a = metric_counter_get(m->a);
        break;
    case METRIC_TIME_RATE:
        a = metric_timer_read(m->a, now_ns);
        break;
    case METRIC_TIME_REST:
        a = metric_timer_read(m->a, now_ns);
        b = metric_timer_read(m->b, now_ns);
        break;
    default:
        return;
    }
    if (m->prev_ns != 0 && now_ns > m->prev_ns) {
        dt = (double)(now_ns - m->prev_ns);
        switch (m->kind) {
        case METRIC_METER:
            m->rate = (double)(a - m->prev_a) * 1e9 / dt;
            break;
        case METRIC_TIME_RATE:
            m->rate = MIN(1000.0, (double)(a - m->prev_a) * 1000.0 / dt);
            break;
        default: {
            double used = (double)(a - m->prev_a + b - m->prev_b) * 1000.0 / dt;

            m->rate = used >= 1000.0 ? 0.0 : 1000.0 - used;
            break;
        }
        }
    }
    m->prev_a = a;
    m->prev_b = b;
    m->prev_ns = now_ns;
}

void
metric_registry_update(struct metric_registry *r, uint64_t now_ns)
{
    pthread_mutex_lock(&r->lock);
    for (struct metric_group *g = r->groups; g != NULL; g = g->next)
        for (size_t i = 0; i < g->count; i++)
            metric_update(&g->metrics[i], now_ns);
    pthread_mutex_unlock(&r->lock);
}

/* Reads m as of now_ns into out's value fields. Under the registry lock. */
static void
metric_read(struct metric *m, uint64_t now_ns, struct metric_sample *out)
{
    int64_t i = 0;

    out->integral = true;
    switch (m->kind) {
    case METRIC_COUNTER:
        i = (int64_t)metric_counter_get(m->a);
        break;
    case METRIC_GAUGE:
        i = metric_gauge_get(m->a);
        break;
    case METRIC_VALUE:
        out->integral = false;
        out->value = metric_value_get(m->a);
        return;
    case METRIC_TIME_TOTAL:
        i = (int64_t)(metric_timer_read(m->a, now_ns) / 1000000u);
        break;
    case METRIC_TIME_TOTAL_REST: {
        uint64_t spent = metric_timer_read(m->a, now_ns) + metric_timer_read(m->b, now_ns);
        uint64_t all = now_ns > m->since_ns ? now_ns - m->since_ns : 0;

        i = all > spent ? (int64_t)((all - spent) / 1000000u) : 0;
        break;
    }
    case METRIC_RATIO: {
        int64_t cap = metric_level_get(m->b);

        out->integral = false;
        out->value = cap > 0 ? (double)metric_level_get(m->a) / (double)cap : 0.0;
        return;
    }
    default:
        out->integral = false;
        out->value = m->rate;
        return;
    }
    out->int_value = i;
    out->value = (double)i;
}

static void metric_samples_clear(struct metric_sample *s, size_t n);

/* A histogram's parts (histogram_part_value reads them in this order). */
static const struct {
    const char *suffix;
    double quantile; /* a reporter's summary quantile, 0: none */
    unsigned audience;
} histogram_parts[] = {
    { "_min", 0, METRIC_FOR_SCOPE },
    { "_max", 0, METRIC_FOR_SCOPE },
    { "_mean", 0, METRIC_FOR_SCOPE },
    { "_median", 0.5, METRIC_FOR_SCOPE | METRIC_FOR_REPORTER },
    { "_stddev", 0, METRIC_FOR_SCOPE },
    { "_p75", 0.75, METRIC_FOR_SCOPE | METRIC_FOR_REPORTER },
    { "_p90", 0, METRIC_FOR_SCOPE },
    { "_p95", 0.95, METRIC_FOR_SCOPE | METRIC_FOR_REPORTER },
    { "_p98", 0.98, METRIC_FOR_SCOPE | METRIC_FOR_REPORTER },
    { "_p99", 0.99, METRIC_FOR_SCOPE | METRIC_FOR_REPORTER },
    { "_p999", 0.999, METRIC_FOR_SCOPE | METRIC_FOR_REPORTER },
    { "_count", 0, METRIC_FOR_REPORTER },
};
#define HISTOGRAM_PARTS (sizeof histogram_parts / sizeof histogram_parts[0])

static double
histogram_part_value(const struct metric_histogram_stats *st, size_t part)
{
    const double v[] = { st->min, st->max, st->mean, st->p50, st->stddev, st->p75,
                         st->p90, st->p95, st->p98,  st->p99, st->p999 };

    _Static_assert(sizeof v / sizeof v[0] + 1 == HISTOGRAM_PARTS, "a value per part");
    return part < HISTOGRAM_PARTS - 1 ? v[part] : (double)st->count;
}

/* m's samples as of now (one, or a histogram's parts) into out, which has
 * room for HISTOGRAM_PARTS; the number written. Under the registry lock. */
static size_t
metric_expand(const struct metric_group *g, struct metric *m, uint64_t now,
              struct metric_sample *out)
{
    struct metric_histogram_stats st;

    if (m->kind != METRIC_HISTOGRAM) {
        memset(out, 0, sizeof *out);
        out->scope = xstrdup(g->scope);
        out->name = xstrdup(m->name);
        out->family = xstrdup(m->name + m->prefix_len);
        out->kind = xstrdup(g->kind);
        out->labels = xstrdup(g->labels);
        out->audience = METRIC_FOR_SCOPE | METRIC_FOR_REPORTER;
        metric_read(m, now, out);
        return 1;
    }
    metric_histogram_stats(m->a, &st);
    for (size_t p = 0; p < HISTOGRAM_PARTS; p++) {
        struct metric_sample *s = &out[p];

        memset(s, 0, sizeof *s);
        s->scope = xstrdup(g->scope);
        s->name = xasprintf("%s%s", m->name, histogram_parts[p].suffix);
        s->family = xstrdup(m->name + m->prefix_len);
        s->part = histogram_parts[p].quantile > 0 ? "" : histogram_parts[p].suffix;
        s->quantile = histogram_parts[p].quantile;
        s->audience = histogram_parts[p].audience;
        s->kind = xstrdup(g->kind);
        s->labels = xstrdup(g->labels);
        s->value = histogram_part_value(&st, p);
        if (p == HISTOGRAM_PARTS - 1) {
            s->integral = true;
            s->int_value = (int64_t)st.count;
        }
    }
    return HISTOGRAM_PARTS;
}

int
metric_registry_get(struct metric_registry *r, const char *scope, const char *name, double *value)
{
    uint64_t now = clock_mono_ns();
    struct metric_sample parts[HISTOGRAM_PARTS];
    int rc = SPATE_ENOENT;

    pthread_mutex_lock(&r->lock);
    for (struct metric_group *g = r->groups; g != NULL && rc != 0; g = g->next) {
        if (strcmp(g->scope, scope) != 0)
            continue;
        for (size_t i = 0; i < g->count && rc != 0; i++) {
            size_t len = strlen(g->metrics[i].name), n;

            if (strncmp(g->metrics[i].name, name, len) != 0)
                continue;
            n = metric_expand(g, &g->metrics[i], now, parts);
            for (size_t k = 0; k < n; k++) {
                if (rc != 0 && (parts[k].audience & METRIC_FOR_SCOPE) &&
                    strcmp(parts[k].name, name) == 0) {
                    *value = parts[k].value;
                    rc = 0;
                }
            }
            metric_samples_clear(parts, n);
        }
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

size_t
metric_registry_snapshot(struct metric_registry *r, struct metric_sample **out)
{
    struct metric_sample *s = NULL;
    uint64_t now = clock_mono_ns();
    size_t n = 0, cap = 0;

    pthread_mutex_lock(&r->lock);
    for (struct metric_group *g = r->groups; g != NULL; g = g->next) {
        for (size_t i = 0; i < g->count; i++) {
            xgrow((void **)&s, &cap, n + HISTOGRAM_PARTS, sizeof *s);
            n += metric_expand(g, &g->metrics[i], now, &s[n]);
        }
    }
    pthread_mutex_unlock(&r->lock);
    *out = s;
    return n;
}

static void
metric_samples_clear(struct metric_sample *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(s[i].scope);
        free(s[i].name);
        free(s[i].family);
        free(s[i].kind);
        free(s[i].labels);
    }
}

void
metric_samples_free(struct metric_sample *s, size_t n)
{
    metric_samples_clear(s, n);
    free(s);
}

void
metric_sample_format(const struct metric_sample *s, char *buf, size_t cap)
{
    if (s->integral)
        snprintf(buf, cap, "%lld", (long long)s->int_value);
    else
        snprintf(buf, cap, "%.15g", s->value);
}
