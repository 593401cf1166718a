/* Unit tests of src/streaming/operator_metrics.c: the user's metrics of the
 * C API (spate_ctx_metric_group) in the operator's group inside its task's,
 * named as Flink's MetricStore names them, and the calls that fail the
 * task; and of latency_stats.c: the latency histograms an operator keeps
 * for the markers that pass it, and the marker on the wire. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "core/clock.h"
#include "metrics/metrics.h"
#include "streaming/latency_stats.h"
#include "streaming/operator.h"
#include "streaming/operator_metrics.h"
#include "streaming/stream_element.h"

static void
discard(struct output *self, const void *rec, const struct record_meta *meta)
{
    (void)self, (void)rec, (void)meta;
}

static void
discard_watermark(struct output *self, int64_t watermark)
{
    (void)self, (void)watermark;
}

struct handles {
    spate_metric_counter *count;
    spate_metric_gauge *last;
    spate_metric_meter *rate;
    spate_metric_histogram *sizes;
};

static void
measure_open(spate_ctx *ctx)
{
    spate_metric_group *g = spate_ctx_metric_group(ctx);
    struct handles *h = calloc(1, sizeof *h);

    h->count = spate_metric_group_counter(g, "count");
    /* The same name and kind again: the same counter. */
    cr_assert_eq(spate_metric_group_counter(g, "count"), h->count);
    h->last = spate_metric_group_gauge(spate_metric_group_add_group(g, "inner"), "last");
    h->rate = spate_metric_group_meter(g, "rate");
    h->sizes = spate_metric_group_histogram(g, "sizes", 0);
    spate_ctx_set_user(ctx, h);
}

static void
measure_close(spate_ctx *ctx)
{
    free(spate_ctx_user(ctx));
}

static void
measure(spate_ctx *ctx, const void *in, void *out)
{
    struct handles *h = spate_ctx_user(ctx);
    int64_t v = *(const int64_t *)in;

    spate_metric_counter_inc(h->count, 3);
    spate_metric_counter_dec(h->count, 1);
    spate_metric_gauge_set(h->last, (double)v / 2);
    spate_metric_meter_mark_event(h->rate, 1);
    spate_metric_histogram_update(h->sizes, v);
    *(int64_t *)out = v;
}

static void
clash_open(spate_ctx *ctx)
{
    spate_metric_group *g = spate_ctx_metric_group(ctx);

    spate_metric_group_counter(g, "x");
    /* Another kind under the same name: reported once, the task fails. */
    spate_metric_gauge_set(spate_metric_group_gauge(g, "x"), 1);
}

static void
noname_open(spate_ctx *ctx)
{
    spate_metric_counter_inc(spate_metric_group_counter(spate_ctx_metric_group(ctx), ""), 1);
}

static spate_stream *
map_of(spate_env *env, spate_open_fn open)
{
    int64_t v = 1;
    spate_stream *s = spate_source_collection(env, spate_type_int64(), &v, 1);

    s = spate_map(s, measure, spate_type_int64());
    return spate_name(spate_open_close(s, open, measure_close), "Measure");
}

Test(operator_metrics, user_metrics_in_the_operators_group)
{
    struct metric_registry *r = metric_registry_new();
    const char *labels[] = { "task_name", "t", NULL };
    struct metric_group *task_group = metric_group_new_scoped(r, "job.v.0.0", "x", labels);
    spate_env *env = env_new(NULL, NULL);
    struct output out = { .collect = discard, .emit_watermark = discard_watermark };
    struct task_info task = { .task_name = "Measure", .metrics = task_group };
    const struct record_meta meta = { RECORD_NO_TIMESTAMP, 0, false };
    struct operator_settings settings;
    struct stream_operator *op;
    spate_error err = { 0 };
    double v;

    stream_node_settings(map_of(env, measure_open), &settings);
    cr_assert_eq(operator_new(&settings, 0, &task, &out, &op, &err), 0, "%s", err.message);
    cr_assert_eq(metric_registry_get(r, "job.v.0.0", "Measure.inner.last", &v), 0);
    cr_assert(isnan(v), "a gauge never set is NaN, got %g", v);
    for (int64_t i = 1; i <= 10; i++)
        operator_process(op, &i, &meta);
    cr_assert_eq(metric_registry_get(r, "job.v.0.0", "Measure.count", &v), 0);
    cr_assert_eq(v, 20.0);
    cr_assert_eq(metric_registry_get(r, "job.v.0.0", "Measure.inner.last", &v), 0);
    cr_assert_eq(v, 5.0);
    cr_assert_eq(metric_registry_get(r, "job.v.0.0", "Measure.sizes_max", &v), 0);
    cr_assert_eq(v, 10.0);
    cr_assert_eq(metric_registry_get(r, "job.v.0.0", "Measure.sizes_mean", &v), 0);
    cr_assert_eq(v, 5.5);
    cr_assert_eq(metric_registry_get(r, "job.v.0.0", "Measure.rate", &v), 0);
    operator_free(op);
    /* The operator's group went with it; the task's stays. */
    cr_assert_eq(metric_registry_get(r, "job.v.0.0", "Measure.count", &v), SPATE_ENOENT);
    metric_group_free(task_group);
    metric_registry_free(r);
    env_free(env);
}

Test(operator_metrics, without_a_registry_metrics_count_unreported)
{
    spate_env *env = env_new(NULL, NULL);
    struct output out = { .collect = discard, .emit_watermark = discard_watermark };
    struct task_info task = { .task_name = "Measure" };
    const struct record_meta meta = { RECORD_NO_TIMESTAMP, 0, false };
    struct operator_settings settings;
    struct stream_operator *op;
    spate_error err = { 0 };
    int64_t one = 1;

    stream_node_settings(map_of(env, measure_open), &settings);
    cr_assert_eq(operator_new(&settings, 0, &task, &out, &op, &err), 0, "%s", err.message);
    operator_process(op, &one, &meta);
    cr_assert_null(op->ctx.failure);
    operator_free(op);
    env_free(env);
}

Test(operator_metrics, a_clash_or_no_name_fails_the_task_with_a_message)
{
    spate_env *env = env_new(NULL, NULL);
    struct output out = { .collect = discard, .emit_watermark = discard_watermark };
    struct task_info task = { .task_name = "Measure" };
    struct operator_settings settings;
    struct stream_operator *op = NULL;
    spate_error err = { 0 };

    stream_node_settings(map_of(env, clash_open), &settings);
    cr_assert_eq(operator_new(&settings, 0, &task, &out, &op, &err), SPATE_EUSER);
    cr_assert_not_null(strstr(err.message, "metric 'x' of operator 'Measure' is a counter, asked "
                                           "for as a gauge"),
                       "%s", err.message);
    stream_node_settings(map_of(env, noname_open), &settings);
    cr_assert_eq(operator_new(&settings, 0, &task, &out, &op, &err), SPATE_EUSER);
    cr_assert_not_null(strstr(err.message, "a counter of operator 'Measure' has no name"), "%s",
                       err.message);
    env_free(env);
}

/* Counts the latency markers an operator passes on. */
struct marker_count {
    struct output base;
    int markers;
};

static void
count_marker(struct output *self, const struct latency_marker *m)
{
    (void)m;
    ((struct marker_count *)self)->markers++;
}

/* The histograms a map keeps for markers of two sources (subtasks 0 and 1
 * of the first, 0 of the second) at granularity g: how many, read under
 * Flink's names; the map's function never runs. */
static void
latency_of_two_sources(enum latency_granularity g, const char *first_name, int histograms)
{
    struct metric_registry *r = metric_registry_new();
    const char *labels[] = { "task_name", "t", NULL };
    struct metric_group *task_group = metric_group_new_scoped(r, "job.v.0.0", "x", labels);
    struct latency_tracking lt = { 100, g, 16 };
    spate_env *env = env_new(NULL, NULL);
    struct marker_count out = { .base = { .collect = discard,
                                          .emit_watermark = discard_watermark,
                                          .emit_latency_marker = count_marker } };
    struct task_info task = { .task_name = "Measure", .metrics = task_group, .latency = &lt };
    struct latency_marker m[3];
    struct metric_sample *samples;
    struct operator_settings settings;
    struct stream_operator *op;
    spate_error err = { 0 };
    size_t n, found = 0;
    double v;

    stream_node_settings(map_of(env, measure_open), &settings);
    cr_assert_eq(operator_new(&settings, 0, &task, &out.base, &op, &err), 0, "%s", err.message);
    for (int i = 0; i < 3; i++) {
        memset(&m[i], 0, sizeof m[i]);
        m[i].source_id.bytes[0] = (uint8_t)(i < 2 ? 0xaa : 0xbb);
        m[i].source_subtask = i == 1;
        m[i].marked_time = clock_wall_ms() - 5;
        latency_stats_report(op, &m[i]);
    }
    n = metric_registry_snapshot(r, &samples);
    for (size_t i = 0; i < n; i++)
        found += strstr(samples[i].name, "latency_max") != NULL;
    metric_samples_free(samples, n);
    cr_assert_eq(found, (size_t)histograms);
    cr_assert_eq(metric_registry_get(r, "job.v.0.0", first_name, &v), 0, "%s", first_name);
    cr_assert_geq(v, 5.0);
    cr_assert_eq(metric_registry_get(r, "job.v.0.0", "Measure.count", &v), 0);
    cr_assert_eq(v, 0.0, "a marker never reaches the function");
    operator_free(op);
    n = metric_registry_snapshot(r, &samples);
    for (size_t i = 0; i < n; i++)
        cr_assert_null(strstr(samples[i].name, "latency"), "%s outlived its operator",
                       samples[i].name);
    metric_samples_free(samples, n);
    metric_group_free(task_group);
    metric_registry_free(r);
    env_free(env);
}

#define SOURCE_AA "aa000000000000000000000000000000"

Test(latency_stats, one_histogram_per_source_as_the_granularity_says)
{
    char name[256];
    id_text self;
    spate_env *env = env_new(NULL, NULL);
    struct operator_settings settings;

    stream_node_settings(map_of(env, measure_open), &settings);
    self = id_str(&settings.operator_id);
    snprintf(name, sizeof name, "latency.operator_id.%s.operator_subtask_index.0.latency_max",
             self.s);
    latency_of_two_sources(LATENCY_SINGLE, name, 1);
    snprintf(name, sizeof name,
             "latency.source_id." SOURCE_AA ".operator_id.%s.operator_subtask_index.0.latency_max",
             self.s);
    latency_of_two_sources(LATENCY_OPERATOR, name, 2);
    snprintf(name, sizeof name,
             "latency.source_id." SOURCE_AA ".source_subtask_index.1.operator_id.%s."
             "operator_subtask_index.0.latency_max",
             self.s);
    latency_of_two_sources(LATENCY_SUBTASK, name, 3);
    env_free(env);
}

Test(latency_stats, markers_on_the_wire_and_malformed_ones)
{
    struct latency_marker m = { 1234567, { { 1, 2, 3 } }, 7 };
    uint8_t bytes[LATENCY_MARKER_ELEMENT_SIZE];
    struct element e;

    cr_assert_eq(element_write_latency_marker(&m, bytes), (size_t)LATENCY_MARKER_ELEMENT_SIZE);
    cr_assert_eq(element_read(bytes, sizeof bytes, &e), 0);
    cr_assert_eq(e.kind, ELEMENT_LATENCY_MARKER);
    cr_assert_eq(e.latency.marked_time, 1234567);
    cr_assert(id_equal(&e.latency.source_id, &m.source_id));
    cr_assert_eq(e.latency.source_subtask, 7);
    /* Short, long, a stray flag, a negative subtask: refused. */
    cr_assert_eq(element_read(bytes, sizeof bytes - 1, &e), SPATE_EPROTO);
    {
        uint8_t longer[LATENCY_MARKER_ELEMENT_SIZE + 1] = { 0 };

        memcpy(longer, bytes, sizeof bytes);
        cr_assert_eq(element_read(longer, sizeof longer, &e), SPATE_EPROTO);
    }
    bytes[0] |= ELEMENT_HAS_TIMESTAMP;
    cr_assert_eq(element_read(bytes, sizeof bytes, &e), SPATE_EPROTO);
    m.source_subtask = -1;
    element_write_latency_marker(&m, bytes);
    cr_assert_eq(element_read(bytes, sizeof bytes, &e), SPATE_EPROTO);
}
