/* The metric registry: counters, pool-usage ratios, per-second rates and time
 * ratios in named groups (Flink's names), read by another thread (REST) while
 * their owners update them. Sources are single-writer relaxed atomics (no
 * locked instruction per record); the registry's mutex guards only its group
 * list and derived rates. A group's sources must outlive the group. */
#ifndef SPATE_METRICS_METRICS_H
#define SPATE_METRICS_METRICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <spate/error.h>

/* A monotonic count with one writer thread. Relaxed: readers want a recent
 * value, not an ordering with anything else. */
struct metric_counter {
    _Atomic uint64_t value;
};

static inline void
metric_counter_add(struct metric_counter *c, uint64_t n)
{
    atomic_store_explicit(&c->value, atomic_load_explicit(&c->value, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

static inline uint64_t
metric_counter_get(struct metric_counter *c)
{
    return atomic_load_explicit(&c->value, memory_order_relaxed);
}

/* A value that any thread may add to (pool usage: requested on one thread,
 * recycled on another); relaxed read-modify-writes, per buffer not per record. */
struct metric_level {
    _Atomic int64_t value;
};

static inline void
metric_level_add(struct metric_level *l, int64_t delta)
{
    atomic_fetch_add_explicit(&l->value, delta, memory_order_relaxed);
}

static inline int64_t
metric_level_get(struct metric_level *l)
{
    return atomic_load_explicit(&l->value, memory_order_relaxed);
}

/* A value its one writer thread sets (a watermark); relaxed, as a counter. */
struct metric_gauge {
    _Atomic int64_t value;
};

static inline void
metric_gauge_set(struct metric_gauge *g, int64_t v)
{
    atomic_store_explicit(&g->value, v, memory_order_relaxed);
}

static inline int64_t
metric_gauge_get(struct metric_gauge *g)
{
    return atomic_load_explicit(&g->value, memory_order_relaxed);
}

/* A number its one writer thread sets (a user's gauge): a double's bits,
 * relaxed as a counter. */
struct metric_value {
    _Atomic uint64_t bits;
};

static inline void
metric_value_set(struct metric_value *g, double v)
{
    uint64_t b;

    memcpy(&b, &v, sizeof b);
    atomic_store_explicit(&g->bits, b, memory_order_relaxed);
}

static inline double
metric_value_get(struct metric_value *g)
{
    uint64_t b = atomic_load_explicit(&g->bits, memory_order_relaxed);
    double v;

    memcpy(&v, &b, sizeof v);
    return v;
}

/* The last `size` values one writer thread updated it with (Flink's
 * DescriptiveStatisticsHistogram): a ring of relaxed slots and a count the
 * writer publishes with release. A reader copies the ring and may see a slot
 * already overwritten by a newer value: every slot it reads is some recent
 * value, which is what the statistics want. */
struct metric_histogram {
    _Atomic int64_t *values;
    size_t size;
    _Atomic uint64_t count; /* values ever added */
};

void metric_histogram_init(struct metric_histogram *h, size_t size);
void metric_histogram_release(struct metric_histogram *h);

static inline void
metric_histogram_update(struct metric_histogram *h, int64_t v)
{
    uint64_t n = atomic_load_explicit(&h->count, memory_order_relaxed);

    atomic_store_explicit(&h->values[n % h->size], v, memory_order_relaxed);
    /* release: a reader that sees count n + 1 sees slot n's value */
    atomic_store_explicit(&h->count, n + 1, memory_order_release);
}

/* A histogram's statistics over the values it holds (all 0 when empty):
 * Flink's HistogramStatistics, quantiles as its Percentile estimates them
 * (position q * (n + 1), interpolated). */
struct metric_histogram_stats {
    uint64_t count; /* values ever added */
    size_t n;       /* values held */
    double min, max, mean, stddev;
    double p50, p75, p90, p95, p98, p99, p999;
};
void metric_histogram_stats(struct metric_histogram *h, struct metric_histogram_stats *out);

/* Time spent in one state (idle, back-pressured): Flink's TimerGauge. One
 * writer starts and stops it; a reader gets the total including a running
 * measurement. A sequence lock keeps total and start consistent for readers. */
struct metric_timer {
    _Atomic uint32_t seq;
    _Atomic uint64_t total_ns;
    _Atomic uint64_t start_ns; /* 0 while stopped */
};

void metric_timer_start(struct metric_timer *t, uint64_t now_ns);
void metric_timer_stop(struct metric_timer *t, uint64_t now_ns);
/* Any thread: total nanoseconds up to now_ns. */
uint64_t metric_timer_read(struct metric_timer *t, uint64_t now_ns);

struct metric_registry;
struct metric_group;

struct metric_registry *metric_registry_new(void);
/* Every group must have been freed. */
void metric_registry_free(struct metric_registry *r);

/* A group of metrics under scope (e.g. "<tm>.<job>.<vertex>.<subtask>"). */
struct metric_group *metric_group_new(struct metric_registry *r, const char *scope);
/* The same, with what a reporter names the group by: Flink's logical scope
 * (kind: "taskmanager", "taskmanager_job_task", "jobmanager_job", ...) and its
 * variables, labels[0..] = key, value, key, value, ..., NULL (job_id,
 * job_name, task_name, subtask_index, ...). Either may be NULL. */
struct metric_group *metric_group_new_scoped(struct metric_registry *r, const char *scope,
                                             const char *kind, const char *const *labels);
/* A group inside parent (Flink's OperatorMetricGroup inside its task's):
 * the parent's scope, kind `kind` (NULL: the parent's), the parent's
 * variables and then labels', and every metric named `name_prefix` + name
 * where the scope names it (dumps, REST: "Map.myCounter"), by its own name
 * for a reporter, which has the variables (name_prefix may be NULL). */
struct metric_group *metric_group_new_child(struct metric_group *parent, const char *kind,
                                            const char *const *labels, const char *name_prefix);
/* Unregisters: once it returns, no reader touches the group's sources. */
void metric_group_free(struct metric_group *g);

void metric_group_counter(struct metric_group *g, const char *name, struct metric_counter *c);
/* used / capacity, 0 when capacity is 0 (inPoolUsage, outPoolUsage). */
void metric_group_ratio(struct metric_group *g, const char *name, struct metric_level *used,
                        struct metric_level *capacity);
/* Per-second rate of a counter over the last update interval (a MeterView). */
void metric_group_meter(struct metric_group *g, const char *name, struct metric_counter *c);
/* Milliseconds per second spent in a timer's state over the last interval. */
void metric_group_time_rate(struct metric_group *g, const char *name, struct metric_timer *t);
/* 1000 minus the time rates of a and b, at least 0: Flink's busyTimeMsPerSecond
 * is what is neither idle nor back-pressured. */
void metric_group_time_rest(struct metric_group *g, const char *name, struct metric_timer *a,
                            struct metric_timer *b);

/* An integer a thread sets (currentInputWatermark). */
void metric_group_gauge(struct metric_group *g, const char *name, struct metric_gauge *v);
/* A double a thread sets (a user's gauge). */
void metric_group_value(struct metric_group *g, const char *name, struct metric_value *v);
/* A histogram: where a scope names it, name_min, name_max, name_mean,
 * name_median, name_stddev, name_p75, name_p90, name_p95, name_p98, name_p99,
 * name_p999 (Flink's MetricStore); for a reporter a summary, its quantiles
 * 0.5, 0.75, 0.95, 0.98, 0.99, 0.999 and name_count (Flink's Prometheus
 * reporter). */
void metric_group_histogram(struct metric_group *g, const char *name, struct metric_histogram *h);
/* Whole milliseconds a timer has run in all (accumulatedIdleTimeMs). */
void metric_group_time_total(struct metric_group *g, const char *name, struct metric_timer *t);
/* Whole milliseconds since since_ns (CLOCK_MONOTONIC) that neither a nor b
 * ran: accumulatedBusyTimeMs. */
void metric_group_time_total_rest(struct metric_group *g, const char *name, struct metric_timer *a,
                                  struct metric_timer *b, uint64_t since_ns);

/* Recomputes the rates over the time since the previous update; the reader
 * (REST, a reporter) calls it every few seconds, as Flink's view updater. */
void metric_registry_update(struct metric_registry *r, uint64_t now_ns);

/* The current value of scope/name (rates as of the last update); SPATE_ENOENT
 * when there is none. */
int metric_registry_get(struct metric_registry *r, const char *scope, const char *name,
                        double *value);

/* Who a sample is for: a histogram has parts only one of them shows. */
enum {
    METRIC_FOR_SCOPE = 1,    /* dumps, REST, metric_registry_get */
    METRIC_FOR_REPORTER = 2, /* the Prometheus reporter */
};

struct metric_sample {
    char *scope;
    char *name; /* where the scope names it: the group's prefix, the metric, a part */
    /* For a reporter: the metric's own name (its family), and the part of
     * a histogram's summary: NULL for a gauge, "" for a quantile sample
     * (quantile set), "_count". */
    char *family;
    const char *part;
    double quantile;
    unsigned audience; /* METRIC_FOR_*, or'ed */
    /* The group's kind ("" when it has none) and variables as Prometheus
     * label text, `key="value",...` escaped ("" when none). */
    char *kind;
    char *labels;
    double value;
    /* Counts, gauges and accumulated times are integers: value is exact
     * only within 2^53, int_value always. */
    bool integral;
    int64_t int_value;
};
/* Every metric's value (totals up to now, rates as of the last update), in
 * registration order; free with metric_samples_free. */
size_t metric_registry_snapshot(struct metric_registry *r, struct metric_sample **out);
void metric_samples_free(struct metric_sample *s, size_t n);
/* The value as text, as Flink's metric dumps carry it: integers in decimal,
 * rates with up to 15 significant digits ("998.5", "0"). */
void metric_sample_format(const struct metric_sample *s, char *buf, size_t cap);

#endif
