/* Event time over out-of-order data: sensor readings arrive up to 2 s out of
 * order (and now and then much later); watermarks trail the largest time by
 * 2 s; each sensor's readings are averaged in 1 s tumbling windows, with 1 s
 * of allowed lateness; later readings go to a side output, printed apart.
 *
 *   spate run [--local] build/examples/out_of_order.so [--readings 10000]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <spate/spate.h>

struct reading {
    int64_t sensor;
    int64_t ts; /* ms */
    int64_t value;
};

struct average {
    int64_t sensor;
    int64_t window_start;
    int64_t count;
    int64_t mean;
};

static uint64_t
mix(uint64_t z)
{
    z ^= z >> 30;
    z *= 0xBF58476D1CE4E5B9ULL;
    z ^= z >> 27;
    z *= 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Reading i: every 10 ms of sensor time, shuffled by up to 2 s, one in 50
 * held back 5 s. Deterministic: the same run gives the same output. */
static void
make_reading(spate_ctx *ctx, uint64_t i, void *out)
{
    struct reading *r = out;
    uint64_t x = mix(i);

    (void)ctx;
    r->sensor = (int64_t)(x % 5);
    r->ts = (int64_t)i * 10 + 5000 - (int64_t)((x >> 8) % 2000);
    if ((x >> 24) % 50 == 0)
        r->ts -= 5000;
    r->value = (int64_t)((x >> 32) % 100);
}

static int64_t
reading_time(spate_ctx *ctx, const void *rec)
{
    (void)ctx;
    return ((const struct reading *)rec)->ts;
}

struct acc {
    int64_t count, sum;
};

static void
acc_create(spate_ctx *ctx, void *a)
{
    (void)ctx;
    memset(a, 0, sizeof(struct acc));
}

static void
acc_add(spate_ctx *ctx, const void *in, void *a)
{
    (void)ctx;
    ((struct acc *)a)->count++;
    ((struct acc *)a)->sum += ((const struct reading *)in)->value;
}

static void
acc_result(spate_ctx *ctx, const void *a, void *out)
{
    (void)ctx;
    *(struct acc *)out = *(const struct acc *)a;
}

static void
to_average(spate_ctx *ctx, spate_time_window w, spate_iter *results)
{
    struct acc a;
    struct average avg;

    if (!spate_list_next(results, &a))
        return;
    avg.sensor = spate_ctx_current_key_int64(ctx);
    avg.window_start = w.start;
    avg.count = a.count;
    avg.mean = a.count ? a.sum / a.count : 0;
    spate_emit(ctx, &avg);
}

static void
mark_late(spate_ctx *ctx, const void *in, void *out)
{
    (void)ctx;
    *(struct reading *)out = *(const struct reading *)in;
    ((struct reading *)out)->value = -1; /* printed as late */
}

int
spate_job_main(spate_env *env, int argc, char **argv)
{
    uint64_t readings = 10000;
    const spate_type *t3[] = { spate_type_int64(), spate_type_int64(), spate_type_int64() };
    const spate_type *t4[] = { spate_type_int64(), spate_type_int64(), spate_type_int64(),
                               spate_type_int64() };
    const spate_type *reading = spate_type_tuple(env, 3, t3);
    const spate_type *average = spate_type_tuple(env, 4, t4);
    const spate_type *acc_t = spate_type_tuple(env, 2, t3);
    spate_aggregate agg = { acc_t, acc_t, acc_create, acc_add, acc_result, NULL };
    spate_watermark_strategy ws = spate_watermarks_bounded(reading_time, 2000);
    spate_tag late = spate_output_tag(env, "late", reading);
    spate_stream *s, *w;

    for (int i = 1; i + 1 < argc; i += 2)
        if (strcmp(argv[i], "--readings") == 0)
            readings = strtoull(argv[i + 1], NULL, 10);
    s = spate_source_generator(env, make_reading, reading, readings, 0);
    s = spate_source_with_watermarks(s, &ws);
    w = spate_window(spate_key_by_field(s, 0), spate_tumbling_event_time(1000));
    spate_allowed_lateness(w, 1000);
    spate_late_data_side_output(w, late);
    w = spate_window_aggregate(w, &agg, to_average, average);
    spate_sink_print(w);
    spate_sink_print(spate_map(spate_side_output(w, late), mark_late, reading));
    return spate_execute(env, "Out-of-order sensor averages");
}
