/* The metric registry of metrics.h. The registry mutex guards the group list
 * and each metric's derived-rate state; sources are read with relaxed atomic
 * loads under it, so a group freed (under the mutex) is never read again. */
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
};

struct metric {
    char *name;
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

struct metric_group *
metric_group_new_scoped(struct metric_registry *r, const char *scope, const char *kind,
                        const char *const *labels)
{
    struct metric_group *g = xcalloc(1, sizeof *g);

    g->registry = r;
    g->scope = xstrdup(scope);
    g->kind = xstrdup(kind != NULL ? kind : "");
    g->labels = labels_format(labels);
    pthread_mutex_lock(&r->lock);
    g->next = r->groups;
    r->groups = g;
    pthread_mutex_unlock(&r->lock);
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
    m->name = xstrdup(name);
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

int
metric_registry_get(struct metric_registry *r, const char *scope, const char *name, double *value)
{
    uint64_t now = clock_mono_ns();
    int rc = SPATE_ENOENT;

    pthread_mutex_lock(&r->lock);
    for (struct metric_group *g = r->groups; g != NULL && rc != 0; g = g->next) {
        if (strcmp(g->scope, scope) != 0)
            continue;
        for (size_t i = 0; i < g->count; i++) {
            if (strcmp(g->metrics[i].name, name) == 0) {
                struct metric_sample sample;

                metric_read(&g->metrics[i], now, &sample);
                *value = sample.value;
                rc = 0;
                break;
            }
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
            xgrow((void **)&s, &cap, n + 1, sizeof *s);
            s[n].scope = xstrdup(g->scope);
            s[n].name = xstrdup(g->metrics[i].name);
            s[n].kind = xstrdup(g->kind);
            s[n].labels = xstrdup(g->labels);
            metric_read(&g->metrics[i], now, &s[n]);
            n++;
        }
    }
    pthread_mutex_unlock(&r->lock);
    *out = s;
    return n;
}

void
metric_samples_free(struct metric_sample *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(s[i].scope);
        free(s[i].name);
        free(s[i].kind);
        free(s[i].labels);
    }
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
