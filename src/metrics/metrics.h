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

struct metric_sample {
    char *scope;
    char *name;
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
