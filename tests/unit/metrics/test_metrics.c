/* Unit tests of src/metrics: counters, ratios, meters and time rates with
 * Flink's names, read from another thread while a task thread updates them
 * (also under ThreadSanitizer). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>

#include "core/clock.h"
#include "metrics/metrics.h"
#include "metrics/process_metrics.h"
#include "metrics/task_metrics.h"

#define MS 1000000ull

Test(metrics, task_metrics_with_flink_names)
{
    struct metric_registry *r = metric_registry_new();
    struct task_io_metrics m;
    double v;

    task_io_metrics_init(&m);
    task_io_metrics_register(&m, r, "tm.job.map.0", NULL, 0);
    metric_counter_add(&m.num_records_out, 5);
    metric_counter_add(&m.num_bytes_in, 4096);
    metric_level_add(&m.out_pool_capacity, 10);
    metric_level_add(&m.out_pool_used, 4);
    cr_assert_eq(metric_registry_get(r, "tm.job.map.0", "numRecordsOut", &v), 0);
    cr_assert_eq(v, 5.0);
    cr_assert_eq(metric_registry_get(r, "tm.job.map.0", "numBytesIn", &v), 0);
    cr_assert_eq(v, 4096.0);
    cr_assert_eq(metric_registry_get(r, "tm.job.map.0", "buffers.outPoolUsage", &v), 0);
    cr_assert_eq(v, 0.4);
    cr_assert_eq(metric_registry_get(r, "tm.job.map.0", "buffers.inPoolUsage", &v), 0);
    cr_assert_eq(v, 0.0, "no capacity: 0, not a division by zero");
    cr_assert_eq(metric_registry_get(r, "tm.job.map.0", "nope", &v), SPATE_ENOENT);

    /* One second: idle 250 ms, back-pressured 500 ms, busy the rest. */
    metric_registry_update(r, 1000 * MS);
    metric_timer_start(&m.idle, 1000 * MS);
    metric_timer_stop(&m.idle, 1250 * MS);
    metric_timer_start(&m.back_pressured, 1300 * MS);
    metric_counter_add(&m.num_records_in, 300);
    /* still back-pressured at the update: the running part counts */
    metric_registry_update(r, 2000 * MS);
    metric_registry_get(r, "tm.job.map.0", "idleTimeMsPerSecond", &v);
    cr_assert_eq(v, 250.0);
    metric_registry_get(r, "tm.job.map.0", "backPressuredTimeMsPerSecond", &v);
    cr_assert_eq(v, 700.0);
    metric_registry_get(r, "tm.job.map.0", "busyTimeMsPerSecond", &v);
    cr_assert_eq(v, 50.0);
    metric_registry_get(r, "tm.job.map.0", "numRecordsInPerSecond", &v);
    cr_assert_eq(v, 300.0);
    task_io_metrics_release(&m);
    cr_assert_eq(metric_registry_get(r, "tm.job.map.0", "numRecordsOut", &v), SPATE_ENOENT);
    metric_registry_free(r);
}

struct hammer {
    struct task_io_metrics m;
    _Atomic bool done;
};

static void *
task_thread(void *arg)
{
    struct hammer *h = arg;

    for (uint64_t i = 1; i <= 300000; i++) {
        metric_counter_add(&h->m.num_records_out, 1);
        if (i % 100 == 0) {
            metric_timer_start(&h->m.idle, i);
            metric_timer_stop(&h->m.idle, i + 10);
        }
    }
    atomic_store(&h->done, true);
    return NULL;
}

Test(metrics, a_reader_thread_sees_consistent_values, .timeout = 60)
{
    struct metric_registry *r = metric_registry_new();
    struct hammer h;
    pthread_t t;
    double last = 0, v;

    task_io_metrics_init(&h.m);
    atomic_init(&h.done, false);
    task_io_metrics_register(&h.m, r, "t", NULL,
                             TASK_IO_INPUT_WATERMARK | TASK_IO_OUTPUT_WATERMARK);
    pthread_create(&t, NULL, task_thread, &h);
    while (!atomic_load(&h.done)) {
        struct metric_sample *s;
        size_t n = metric_registry_snapshot(r, &s);

        cr_assert_eq(metric_registry_get(r, "t", "numRecordsOut", &v), 0);
        cr_assert_geq(v, last, "a counter never goes back");
        last = v;
        cr_assert_eq(n, 18);
        metric_samples_free(s, n);
        metric_registry_update(r, UINT64_MAX / 2);
    }
    pthread_join(t, NULL);
    metric_registry_get(r, "t", "numRecordsOut", &v);
    cr_assert_eq(v, 300000.0);
    cr_assert_eq(metric_timer_read(&h.m.idle, 0), 3000 * 10);
    task_io_metrics_release(&h.m);
    metric_registry_free(r);
}

/* The sample of scope/name from a snapshot, or NULL. */
static const struct metric_sample *
find_sample(const struct metric_sample *s, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s[i].name, name) == 0)
            return &s[i];
    return NULL;
}

static void
sample_text(struct metric_registry *r, const char *name, char *buf, size_t cap)
{
    struct metric_sample *s;
    size_t n = metric_registry_snapshot(r, &s);
    const struct metric_sample *x = find_sample(s, n, name);

    cr_assert_not_null(x, "no metric %s", name);
    metric_sample_format(x, buf, cap);
    metric_samples_free(s, n);
}

Test(metrics, watermarks_and_values_as_flinks_dumps_write_them)
{
    struct metric_registry *r = metric_registry_new();
    struct task_io_metrics m;
    char text[64];
    double v;

    task_io_metrics_init(&m);
    task_io_metrics_register(&m, r, "s", NULL, TASK_IO_INPUT_WATERMARK);
    /* No watermark yet: Long.MIN_VALUE, exactly, as Flink shows it. */
    sample_text(r, "currentInputWatermark", text, sizeof text);
    cr_assert_str_eq(text, "-9223372036854775808");
    metric_gauge_set(&m.input_watermark, 1700000000123);
    sample_text(r, "currentInputWatermark", text, sizeof text);
    cr_assert_str_eq(text, "1700000000123");
    cr_assert_eq(metric_registry_get(r, "s", "currentOutputWatermark", &v), SPATE_ENOENT,
                 "only the watermarks asked for");
    metric_counter_add(&m.num_records_in, 7);
    sample_text(r, "numRecordsIn", text, sizeof text);
    cr_assert_str_eq(text, "7");
    metric_level_add(&m.in_pool_capacity, 10);
    metric_level_add(&m.in_pool_used, 4);
    sample_text(r, "buffers.inPoolUsage", text, sizeof text);
    cr_assert_str_eq(text, "0.4");
    /* A rate over 2 s: 1997 records are 998.5 per second. */
    metric_registry_update(r, 1000 * MS);
    metric_counter_add(&m.num_records_in, 1997);
    metric_registry_update(r, 3000 * MS);
    sample_text(r, "numRecordsInPerSecond", text, sizeof text);
    cr_assert_str_eq(text, "998.5");
    task_io_metrics_release(&m);
    metric_registry_free(r);
}

Test(metrics, accumulated_times_and_totals)
{
    struct metric_registry *r = metric_registry_new();
    struct metric_group *g = metric_group_new(r, "t");
    struct metric_timer idle = { 0 }, bp = { 0 };
    uint64_t now = clock_mono_ns(), since = now - 1000 * MS, before, after;
    struct metric_sample *s;
    const struct metric_sample *x;
    size_t n;

    metric_group_time_total(g, "accumulatedIdleTimeMs", &idle);
    metric_group_time_total(g, "accumulatedBackPressuredTimeMs", &bp);
    metric_group_time_total_rest(g, "accumulatedBusyTimeMs", &idle, &bp, since);
    metric_timer_start(&idle, now - 900 * MS);
    metric_timer_stop(&idle, now - 700 * MS);
    metric_timer_start(&bp, now - 600 * MS);
    metric_timer_stop(&bp, now - 300 * MS);
    before = clock_mono_ns();
    n = metric_registry_snapshot(r, &s);
    after = clock_mono_ns();
    x = find_sample(s, n, "accumulatedIdleTimeMs");
    cr_assert(x->integral);
    cr_assert_eq(x->int_value, 200);
    cr_assert_eq(find_sample(s, n, "accumulatedBackPressuredTimeMs")->int_value, 300);
    /* Busy: what is neither, from since to the moment of the snapshot. */
    x = find_sample(s, n, "accumulatedBusyTimeMs");
    cr_assert_geq(x->int_value, (int64_t)((before - since) / MS) - 500);
    cr_assert_leq(x->int_value, (int64_t)((after - since) / MS) - 500);
    metric_samples_free(s, n);
    metric_group_free(g);
    metric_registry_free(r);
}

Test(metrics, a_tasks_totals_when_it_ends)
{
    struct task_io_metrics m;
    struct task_io_totals t;

    task_io_metrics_init(&m);
    m.start_ns = 1000 * MS;
    metric_counter_add(&m.num_records_in, 11);
    metric_counter_add(&m.num_records_out, 22);
    metric_counter_add(&m.num_bytes_in, 33);
    metric_counter_add(&m.num_bytes_out, 44);
    metric_timer_start(&m.idle, 1100 * MS);
    metric_timer_stop(&m.idle, 1400 * MS);
    metric_timer_start(&m.back_pressured, 1500 * MS); /* still running at the end */
    task_io_metrics_totals(&m, 2000 * MS, &t);
    cr_assert_eq(t.records_in, 11);
    cr_assert_eq(t.records_out, 22);
    cr_assert_eq(t.bytes_in, 33);
    cr_assert_eq(t.bytes_out, 44);
    cr_assert_eq(t.idle_ms, 300);
    cr_assert_eq(t.back_pressured_ms, 500);
    cr_assert_eq(t.busy_ms, 200);
}

Test(metrics, task_scopes_name_job_vertex_subtask_attempt)
{
    spate_id job, vertex, j2, v2;
    char scope[TASK_IO_SCOPE_MAX];
    int subtask, attempt;

    id_random(&job);
    id_random(&vertex);
    task_io_scope_format(scope, sizeof scope, &job, &vertex, 3, 1);
    cr_assert(task_io_scope_parse(scope, &j2, &v2, &subtask, &attempt));
    cr_assert(id_equal(&job, &j2));
    cr_assert(id_equal(&vertex, &v2));
    cr_assert_eq(subtask, 3);
    cr_assert_eq(attempt, 1);
    cr_assert_not(task_io_scope_parse("tm.job.map.0", &j2, &v2, &subtask, &attempt));
    strcat(scope, "x");
    cr_assert_not(task_io_scope_parse(scope, &j2, &v2, &subtask, &attempt), "trailing text");
    task_io_scope_format(scope, sizeof scope, &job, &vertex, -1, 0);
    cr_assert_not(task_io_scope_parse(scope, &j2, &v2, &subtask, &attempt), "negative subtask");
}

Test(metrics, histogram_statistics_as_flinks)
{
    struct metric_histogram h;
    struct metric_histogram_stats st;

    metric_histogram_init(&h, 4);
    metric_histogram_stats(&h, &st);
    cr_assert_eq(st.count, 0);
    cr_assert_eq(st.n, 0);
    cr_assert_eq(st.max, 0);
    metric_histogram_update(&h, 7);
    metric_histogram_stats(&h, &st);
    cr_assert_eq(st.n, 1);
    cr_assert_eq(st.min, 7);
    cr_assert_eq(st.p999, 7);
    cr_assert_eq(st.stddev, 0);
    /* 10, 20, -5, 40 replace 7: the window keeps the last 4. */
    metric_histogram_update(&h, 10);
    metric_histogram_update(&h, 20);
    metric_histogram_update(&h, -5);
    metric_histogram_update(&h, 40);
    metric_histogram_stats(&h, &st);
    cr_assert_eq(st.count, 5);
    cr_assert_eq(st.n, 4);
    cr_assert_eq(st.min, -5);
    cr_assert_eq(st.max, 40);
    cr_assert_float_eq(st.mean, 16.25, 1e-12);
    /* Commons Math's Percentile: position 0.5 * 5 = 2.5 between 10 and 20. */
    cr_assert_float_eq(st.p50, 15.0, 1e-12);
    cr_assert_float_eq(st.p75, 35.0, 1e-12); /* 3.75: 20 + 0.75 * 20 */
    cr_assert_eq(st.p99, 40);
    cr_assert_float_eq(st.stddev, 18.874586088, 1e-6);
    metric_histogram_release(&h);
}

Test(metrics, the_process_reads_its_own_figures)
{
    struct process_metrics pm;

    cr_assert_eq(process_metrics_read(&pm), 0);
    cr_assert_geq(pm.threads, 1);
    cr_assert_gt(pm.rss_bytes, 0);
    cr_assert_geq(pm.cpu_time_ms, 0);
}
