/* Unit tests of src/metrics: counters, ratios, meters and time rates with
 * Flink's names, read from another thread while a task thread updates them
 * (also under ThreadSanitizer). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>

#include "metrics/metrics.h"
#include "metrics/task_metrics.h"

#define MS 1000000ull

Test(metrics, task_metrics_with_flink_names)
{
    struct metric_registry *r = metric_registry_new();
    struct task_io_metrics m;
    double v;

    task_io_metrics_init(&m);
    task_io_metrics_register(&m, r, "tm.job.map.0");
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
    task_io_metrics_register(&h.m, r, "t");
    pthread_create(&t, NULL, task_thread, &h);
    while (!atomic_load(&h.done)) {
        struct metric_sample *s;
        size_t n = metric_registry_snapshot(r, &s);

        cr_assert_eq(metric_registry_get(r, "t", "numRecordsOut", &v), 0);
        cr_assert_geq(v, last, "a counter never goes back");
        last = v;
        cr_assert_eq(n, 13);
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
