/* The job library of the metric end-to-end tests, built as users build
 * theirs. The job is chosen by the first argument:
 *
 *   backpressure [SLEEP_US]  numbers as fast as they come -> rebalance -> a
 *                            sink that sleeps SLEEP_US (1000) per record, so
 *                            that the source waits for buffers
 *   bounded N                the same with N numbers and no sleep: finishes
 *   eventtime [RATE]         RATE (2000) readings per second, event time 1 ms
 *                            apart, watermarks 50 ms behind -> key by sensor
 *                            -> 100 ms tumbling event-time counts -> a sink
 *   usermetrics              the eventtime job at 2000 readings per second,
 *                            one in ten 5 s late (the window drops them),
 *                            through "Measure", a map with user metrics:
 *                            counter "records", gauge "lastTimestamp", meter
 *                            "recordsRate", histogram "valueHistogram" of
 *                            the last 100 of i % 100 (0..99 once 100 came),
 *                            counter "MyGroup.nested" (addGroup), each
 *                            record once
 *   twoinputs                "Ahead" and "Behind", 1000 readings per second
 *                            each, event time 1 ms apart, Behind's 100 s
 *                            behind, watermarks 50 ms behind -> connected
 *                            into "Both", a co-map -> a sink
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <spate/spate.h>

static void
number(spate_ctx *ctx, uint64_t i, void *out)
{
    (void)ctx;
    *(int64_t *)out = (int64_t)i;
}

static void
slow_sink(spate_ctx *ctx, const void *in)
{
    const int64_t *us = spate_ctx_params(ctx, NULL);
    struct timespec ts = { 0, (long)*us * 1000 };

    (void)in;
    if (*us > 0)
        nanosleep(&ts, NULL);
}

struct reading {
    int64_t sensor;
    int64_t ts;
};

static void
reading(spate_ctx *ctx, uint64_t i, void *out)
{
    struct reading *r = out;

    (void)ctx;
    r->sensor = (int64_t)(i % 4);
    r->ts = (int64_t)i; /* one ms of event time per reading */
}

/* One in ten readings 5 s behind the others: late at the window. */
static void
late_reading(spate_ctx *ctx, uint64_t i, void *out)
{
    struct reading *r = out;

    reading(ctx, i, out);
    if (i % 10 == 5 && i > 5000)
        r->ts -= 5000;
}

struct measure {
    spate_metric_counter *records, *nested;
    spate_metric_gauge *last;
    spate_metric_meter *rate;
    spate_metric_histogram *values;
    uint64_t seen;
};

static void
measure_open(spate_ctx *ctx)
{
    spate_metric_group *g = spate_ctx_metric_group(ctx);
    struct measure *m = calloc(1, sizeof *m);

    m->records = spate_metric_group_counter(g, "records");
    m->last = spate_metric_group_gauge(g, "lastTimestamp");
    m->rate = spate_metric_group_meter(g, "recordsRate");
    m->values = spate_metric_group_histogram(g, "valueHistogram", 100);
    m->nested = spate_metric_group_counter(spate_metric_group_add_group(g, "MyGroup"), "nested");
    spate_ctx_set_user(ctx, m);
}

/* The reading 100 s of event time behind. */
static void
behind_reading(spate_ctx *ctx, uint64_t i, void *out)
{
    reading(ctx, i, out);
    ((struct reading *)out)->ts -= 100000;
}

static void
copy_reading(spate_ctx *ctx, const void *in, void *out)
{
    (void)ctx;
    memcpy(out, in, sizeof(struct reading));
}

static void
measure_close(spate_ctx *ctx)
{
    free(spate_ctx_user(ctx));
}

static void
measure(spate_ctx *ctx, const void *in, void *out)
{
    struct measure *m = spate_ctx_user(ctx);
    const struct reading *r = in;

    spate_metric_counter_inc(m->records, 1);
    spate_metric_counter_inc(m->nested, 2);
    spate_metric_counter_dec(m->nested, 1);
    spate_metric_gauge_set(m->last, (double)r->ts);
    spate_metric_meter_mark_event(m->rate, 1);
    spate_metric_histogram_update(m->values, (int64_t)(m->seen++ % 100));
    memcpy(out, in, sizeof *r);
}

static int64_t
reading_time(spate_ctx *ctx, const void *rec)
{
    (void)ctx;
    return ((const struct reading *)rec)->ts;
}

static void
add_counts(spate_ctx *ctx, const void *acc, const void *in, void *out)
{
    (void)ctx;
    ((struct reading *)out)->sensor = ((const struct reading *)acc)->sensor;
    ((struct reading *)out)->ts =
        ((const struct reading *)acc)->ts + ((const struct reading *)in)->ts;
}

static void
discard(spate_ctx *ctx, const void *in)
{
    (void)ctx;
    (void)in;
}

int
spate_job_main(spate_env *env, int argc, char **argv)
{
    spate_stream *s;

    if (argc > 1 && (strcmp(argv[1], "backpressure") == 0 || strcmp(argv[1], "bounded") == 0)) {
        bool bounded = strcmp(argv[1], "bounded") == 0;
        int64_t sleep_us = bounded ? 0 : argc > 2 ? atoll(argv[2]) : 1000;
        uint64_t count = bounded && argc > 2 ? strtoull(argv[2], NULL, 10) : 0;

        s = spate_name(spate_source_generator(env, number, spate_type_int64(), count, 0),
                       "Numbers");
        s = spate_rebalance(s);
        spate_name(spate_params(spate_sink(s, slow_sink), &sleep_us, sizeof sleep_us), "Slow Sink");
        return spate_execute(env, argv[1]);
    }
    if (argc > 1 && strcmp(argv[1], "eventtime") == 0) {
        const spate_type *t2[] = { spate_type_int64(), spate_type_int64() };
        const spate_type *rt = spate_type_tuple(env, 2, t2);
        spate_watermark_strategy ws = spate_watermarks_bounded(reading_time, 50);
        double rate = argc > 2 ? atof(argv[2]) : 2000;

        s = spate_name(spate_source_generator(env, reading, rt, 0, rate), "Readings");
        s = spate_assign_timestamps_and_watermarks(s, &ws);
        s = spate_window(spate_key_by_field(s, 0), spate_tumbling_event_time(100));
        s = spate_name(spate_window_reduce(s, add_counts, NULL, rt), "Counts");
        spate_name(spate_sink(s, discard), "Discard");
        return spate_execute(env, "eventtime");
    }
    if (argc > 1 && strcmp(argv[1], "usermetrics") == 0) {
        const spate_type *t2[] = { spate_type_int64(), spate_type_int64() };
        const spate_type *rt = spate_type_tuple(env, 2, t2);
        spate_watermark_strategy ws = spate_watermarks_bounded(reading_time, 50);

        s = spate_name(spate_source_generator(env, late_reading, rt, 0, 2000), "Readings");
        s = spate_set_parallelism(s, 1);
        s = spate_set_parallelism(spate_assign_timestamps_and_watermarks(s, &ws), 1);
        s = spate_open_close(spate_map(s, measure, rt), measure_open, measure_close);
        s = spate_set_parallelism(spate_name(s, "Measure"), 1);
        s = spate_window(spate_key_by_field(s, 0), spate_tumbling_event_time(100));
        s = spate_name(spate_window_reduce(s, add_counts, NULL, rt), "Counts");
        spate_name(spate_sink(s, discard), "Discard");
        return spate_execute(env, "usermetrics");
    }
    if (argc > 1 && strcmp(argv[1], "twoinputs") == 0) {
        const spate_type *t2[] = { spate_type_int64(), spate_type_int64() };
        const spate_type *rt = spate_type_tuple(env, 2, t2);
        spate_watermark_strategy ws = spate_watermarks_bounded(reading_time, 50);
        spate_stream *ahead, *behind;

        ahead = spate_name(spate_source_generator(env, reading, rt, 0, 1000), "Ahead");
        ahead = spate_assign_timestamps_and_watermarks(ahead, &ws);
        behind = spate_name(spate_source_generator(env, behind_reading, rt, 0, 1000), "Behind");
        behind = spate_assign_timestamps_and_watermarks(behind, &ws);
        s = spate_co_map(spate_connect(ahead, behind), copy_reading, copy_reading, rt);
        spate_name(spate_sink(spate_name(s, "Both"), discard), "Discard");
        return spate_execute(env, "twoinputs");
    }
    return -1;
}
