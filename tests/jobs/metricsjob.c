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
    return -1;
}
