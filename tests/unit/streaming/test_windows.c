/* Unit tests of the window operator against a naive reference computed here:
 * tumbling, sliding and session windows in event time over out-of-order
 * events, with allowed lateness and late data in a side output; count
 * windows; a custom trigger and an evictor. Watermarks are punctuated (the
 * record's time minus the bound) so that the reference sees them exactly
 * where the job does. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "connectors/connectors.h"
#include "core/alloc.h"
#include "core/clock.h"
#include "core/config.h"
#include "core/key_group.h"
#include "core/util.h"
#include "state/heap_keyed_backend.h"
#include "network/record_reader.h"
#include "streaming/operator_chain.h"
#include "streaming/stream_element.h"
#include "streaming/types.h"
#include "local_job.h"
#include "sync_runner.h"

#define N     600
#define KEYS  4
#define BOUND 100

struct evt {
    int64_t key;
    int64_t ts;
    int64_t value;
};

static struct evt events[N];

static uint64_t
mix(uint64_t z)
{
    z ^= z >> 30;
    z *= 0xBF58476D1CE4E5B9ULL;
    z ^= z >> 27;
    z *= 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Out of order by up to 300 ms, now and then far behind (late). */
static void
make_events(void)
{
    for (int i = 0; i < N; i++) {
        uint64_t x = mix((uint64_t)i + 17);

        events[i].key = (int64_t)(x % KEYS);
        events[i].ts = (int64_t)i * 10 + (int64_t)((x >> 8) % 300) - 250;
        if ((x >> 20) % 23 == 0)
            events[i].ts -= 900;
        if (events[i].ts < 0)
            events[i].ts = 0;
        events[i].value = i;
    }
}

/* ---- collecting output as sorted lines ---- */

struct lines {
    char **v;
    size_t n, cap;
};

static void
lines_add(struct lines *l, const char *s)
{
    xgrow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v);
    l->v[l->n++] = xstrdup(s);
}

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
lines_assert_equal(struct lines *got, struct lines *want, const char *what)
{
    qsort(got->v, got->n, sizeof *got->v, cmp_str);
    qsort(want->v, want->n, sizeof *want->v, cmp_str);
    if (getenv("WINDOWS_DEBUG")) {
        for (size_t i = 0; i < got->n || i < want->n; i++)
            fprintf(stderr, "%s %zu: %-40s %s\n", what, i, i < got->n ? got->v[i] : "-",
                    i < want->n ? want->v[i] : "-");
    }
    for (size_t i = 0; i < got->n && i < want->n; i++)
        cr_assert_str_eq(got->v[i], want->v[i], "%s: line %zu differs: got '%s', want '%s'", what,
                         i, got->v[i], want->v[i]);
    cr_assert_eq(got->n, want->n, "%s: %zu lines, want %zu", what, got->n, want->n);
    cr_assert_gt(want->n, 0, "%s: the test checks nothing", what);
}

static void
lines_free(struct lines *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

/* ---- job pieces ---- */

static int64_t
evt_ts(spate_ctx *ctx, const void *rec)
{
    (void)ctx;
    return ((const struct evt *)rec)->ts;
}

static int64_t
evt_wm(spate_ctx *ctx, const void *rec, int64_t ts)
{
    (void)ctx;
    (void)rec;
    return ts - BOUND - 1;
}

static const spate_type *
evt_type(spate_env *env)
{
    const spate_type *f[] = { spate_type_int64(), spate_type_int64(), spate_type_int64() };

    return spate_type_tuple(env, 3, f);
}

/* Where the events get their timestamps and watermarks: an operator after
 * the source, or the source itself (spate_source_with_watermarks). */
static bool watermarks_at_source;
/* Bounded out-of-orderness with pipeline.auto-watermark-interval 0: the
 * watermark after each record that advances it, the punctuated one's. */
static struct config *every_record;
/* The field the events are keyed by: 0, their key; or 2, their value,
 * which the keyed run tests then make a key too (a key that is not the
 * record's first field). */
static int key_field;

static spate_stream *
event_source(spate_env *env)
{
    spate_watermark_strategy ws = { evt_ts, 0, evt_wm, 0 };
    spate_stream *s = spate_source_collection(env, evt_type(env), events, N);

    if (every_record != NULL)
        ws = spate_watermarks_bounded(evt_ts, BOUND);

    if (watermarks_at_source)
        return spate_key_by_field(spate_source_with_watermarks(s, &ws), key_field);
    return spate_key_by_field(spate_assign_timestamps_and_watermarks(s, &ws), key_field);
}

struct sinks {
    struct lines *out;
    struct lines *late;
};

/* (key, a, b, c) four int64 results */
struct quad {
    int64_t k, a, b, c;
};

static void
quad_sink(spate_ctx *ctx, const void *in)
{
    const struct quad *q = in;
    struct lines *l = *(struct lines *const *)spate_ctx_params(ctx, NULL);
    char buf[96];

    snprintf(buf, sizeof buf, "%lld %lld %lld %lld ts=%lld", (long long)q->k, (long long)q->a,
             (long long)q->b, (long long)q->c, (long long)spate_ctx_timestamp(ctx));
    lines_add(l, buf);
}

static void
late_sink(spate_ctx *ctx, const void *in)
{
    const struct evt *e = in;
    struct lines *l = *(struct lines *const *)spate_ctx_params(ctx, NULL);
    char buf[64];

    snprintf(buf, sizeof buf, "%lld@%lld", (long long)e->key, (long long)e->ts);
    lines_add(l, buf);
}

static const spate_type *
quad_type(spate_env *env)
{
    const spate_type *f[] = { spate_type_int64(), spate_type_int64(), spate_type_int64(),
                              spate_type_int64() };

    return spate_type_tuple(env, 4, f);
}

static void
run(spate_env *env)
{
    struct accumulators acc;
    char *failure;

    accumulators_init(&acc);
    sync_run_env(env, &acc, &failure);
    cr_assert_null(failure, "%s", failure);
    accumulators_release(&acc);
    env_free(env);
}

/* ---- the reference's windows ---- */

struct rwin {
    int64_t key, start, end;
    int64_t count, sum, minv;
    bool exists, fired_once;
};

struct ref {
    struct rwin *w;
    size_t n, cap;
};

static struct rwin *
ref_find(struct ref *r, int64_t key, int64_t start, int64_t end, bool create)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->w[i].exists && r->w[i].key == key && r->w[i].start == start && r->w[i].end == end)
            return &r->w[i];
    if (!create)
        return NULL;
    xgrow((void **)&r->w, &r->cap, r->n + 1, sizeof *r->w);
    memset(&r->w[r->n], 0, sizeof *r->w);
    r->w[r->n] = (struct rwin){ key, start, end, 0, 0, INT64_MAX, true, false };
    return &r->w[r->n++];
}

/* ---- tumbling: aggregate (count, sum), lateness, late side output ---- */

#define TSIZE 200
#define TLATE 150

struct cs {
    int64_t count, sum;
};

static void
cs_create(spate_ctx *ctx, void *acc)
{
    (void)ctx;
    memset(acc, 0, sizeof(struct cs));
}

static void
cs_add(spate_ctx *ctx, const void *in, void *acc)
{
    (void)ctx;
    ((struct cs *)acc)->count++;
    ((struct cs *)acc)->sum += ((const struct evt *)in)->value;
}

static void
cs_result(spate_ctx *ctx, const void *acc, void *out)
{
    (void)ctx;
    *(struct cs *)out = *(const struct cs *)acc;
}

static void
cs_merge(spate_ctx *ctx, const void *from, void *acc)
{
    (void)ctx;
    ((struct cs *)acc)->count += ((const struct cs *)from)->count;
    ((struct cs *)acc)->sum += ((const struct cs *)from)->sum;
}

static void
cs_window(spate_ctx *ctx, spate_time_window w, spate_iter *elements)
{
    struct cs r;
    struct quad q;

    cr_assert(spate_list_next(elements, &r));
    cr_assert(!spate_list_next(elements, &r), "one pre-aggregated result");
    q.k = spate_ctx_current_key_int64(ctx);
    q.a = w.start;
    q.b = r.count;
    q.c = r.sum;
    spate_emit(ctx, &q);
}

static void
ref_emit(struct lines *l, int64_t k, int64_t a, int64_t b, int64_t c, int64_t ts)
{
    char buf[96];

    snprintf(buf, sizeof buf, "%lld %lld %lld %lld ts=%lld", (long long)k, (long long)a,
             (long long)b, (long long)c, (long long)ts);
    lines_add(l, buf);
}

/* Fires and cleans up what the watermark passed, as timers would. */
static void
ref_advance_fixed(struct ref *r, int64_t wm, int64_t lateness, struct lines *out, bool start_only)
{
    for (size_t i = 0; i < r->n; i++) {
        struct rwin *w = &r->w[i];

        if (!w->exists)
            continue;
        if (!w->fired_once && w->end - 1 <= wm) {
            w->fired_once = true;
            if (start_only)
                ref_emit(out, w->key, w->start, w->count, w->sum, w->end - 1);
            else
                ref_emit(out, w->key, w->start, w->end, w->sum, w->end - 1);
        }
        if (w->end - 1 + lateness <= wm)
            w->exists = false;
    }
}

static void
tumbling_event_time_with_lateness_and_late_data(void)
{
    spate_env *env;
    const spate_type *cst;
    spate_aggregate agg;
    struct lines got = { 0 }, got_late = { 0 }, want = { 0 }, want_late = { 0 };
    struct lines *gp = &got, *lp = &got_late;
    struct ref ref = { 0 };
    int64_t wm = INT64_MIN;
    spate_tag late;
    spate_stream *w;

    make_events();
    env = env_new(every_record, NULL);
    cst =
        spate_type_tuple(env, 2, (const spate_type *[]){ spate_type_int64(), spate_type_int64() });
    agg = (spate_aggregate){ cst, cst, cs_create, cs_add, cs_result, cs_merge };
    w = spate_window(event_source(env), spate_tumbling_event_time(TSIZE));
    spate_allowed_lateness(w, TLATE);
    late = spate_output_tag(env, "late", evt_type(env));
    spate_late_data_side_output(w, late);
    w = spate_window_aggregate(w, &agg, cs_window, quad_type(env));
    spate_params(spate_sink(w, quad_sink), &gp, sizeof gp);
    spate_params(spate_sink(spate_side_output(w, late), late_sink), &lp, sizeof lp);
    run(env);

    for (int i = 0; i < N; i++) {
        const struct evt *e = &events[i];
        int64_t start = e->ts - e->ts % TSIZE;
        struct rwin *rw;

        if (start + TSIZE - 1 + TLATE <= wm) {
            char buf[64];

            snprintf(buf, sizeof buf, "%lld@%lld", (long long)e->key, (long long)e->ts);
            lines_add(&want_late, buf);
        } else {
            rw = ref_find(&ref, e->key, start, start + TSIZE, true);
            rw->count++;
            rw->sum += e->value;
            if (start + TSIZE - 1 <= wm) /* a late firing within the lateness */
                ref_emit(&want, e->key, start, rw->count, rw->sum, start + TSIZE - 1);
        }
        if (e->ts - BOUND - 1 > wm) {
            wm = e->ts - BOUND - 1;
            ref_advance_fixed(&ref, wm, TLATE, &want, true);
        }
    }
    ref_advance_fixed(&ref, INT64_MAX, TLATE, &want, true);
    lines_assert_equal(&got, &want, "tumbling windows");
    lines_assert_equal(&got_late, &want_late, "late records");
    lines_free(&got);
    lines_free(&got_late);
    lines_free(&want);
    lines_free(&want_late);
    free(ref.w);
}

Test(windows, tumbling_event_time_with_lateness_and_late_data)
{
    tumbling_event_time_with_lateness_and_late_data();
}

/* The same, the source stamping its records itself: the same windows, the
 * same late records. */
Test(windows, tumbling_event_time_with_the_source_s_own_watermarks)
{
    watermarks_at_source = true;
    tumbling_event_time_with_lateness_and_late_data();
}

/* The generator's records, stamped by the generator itself: event j of
 * key j % KEYS at 3j ms, of value j. */
#define GEN_EVENTS 3000

static void
gen_evt(spate_ctx *ctx, uint64_t j, void *out)
{
    (void)ctx;
    *(struct evt *)out = (struct evt){ (int64_t)(j % KEYS), (int64_t)j * 3, (int64_t)j };
}

/* A generator that stamps its records itself (its aligned loop with a
 * timestamp function, the benchmarks' source) into tumbling windows: every
 * key's count and sum in every window, each at its window's end. */
Test(windows, tumbling_event_time_over_a_generator_s_own_timestamps)
{
    spate_env *env = env_new(NULL, NULL);
    spate_watermark_strategy ws = spate_watermarks_monotonous(evt_ts);
    const spate_type *cst =
        spate_type_tuple(env, 2, (const spate_type *[]){ spate_type_int64(), spate_type_int64() });
    spate_aggregate agg = { cst, cst, cs_create, cs_add, cs_result, cs_merge };
    struct lines got = { 0 }, want = { 0 }, *gp = &got;
    struct ref ref = { 0 };
    spate_stream *s, *w;

    s = spate_source_generator(env, gen_evt, evt_type(env), GEN_EVENTS, 0);
    s = spate_key_by_field(spate_source_with_watermarks(s, &ws), 0);
    w = spate_window(s, spate_tumbling_event_time(TSIZE));
    w = spate_window_aggregate(w, &agg, cs_window, quad_type(env));
    spate_params(spate_sink(w, quad_sink), &gp, sizeof gp);
    run(env);

    for (uint64_t j = 0; j < GEN_EVENTS; j++) {
        struct evt e;
        struct rwin *rw;

        gen_evt(NULL, j, &e);
        rw = ref_find(&ref, e.key, e.ts - e.ts % TSIZE, e.ts - e.ts % TSIZE + TSIZE, true);
        rw->count++;
        rw->sum += e.value;
    }
    ref_advance_fixed(&ref, INT64_MAX, 0, &want, true);
    lines_assert_equal(&got, &want, "the generator's windows");
    lines_free(&got);
    lines_free(&want);
    free(ref.w);
}

/* Periodic watermarks with no interval (Flink SQL's per-record
 * WatermarkAssigner) are the punctuated ones: the same late records, from
 * an operator and from the source itself. */
Test(windows, tumbling_event_time_with_a_watermark_after_every_record)
{
    every_record = config_new();
    config_set(every_record, "pipeline.auto-watermark-interval", "0", "test");
    tumbling_event_time_with_lateness_and_late_data();
    watermarks_at_source = true;
    tumbling_event_time_with_lateness_and_late_data();
    config_free(every_record);
    every_record = NULL;
}

/* ---- sliding: reduce + window function, lateness, late ones dropped ---- */

#define SSIZE  300
#define SSLIDE 100
#define SLATE  100

static void
sum_evt(spate_ctx *ctx, const void *a, const void *b, void *out)
{
    (void)ctx;
    *(struct evt *)out = *(const struct evt *)a;
    ((struct evt *)out)->value += ((const struct evt *)b)->value;
}

static void
sliding_window(spate_ctx *ctx, spate_time_window w, spate_iter *elements)
{
    struct evt r;
    struct quad q;

    cr_assert(spate_list_next(elements, &r));
    q.k = r.key;
    q.a = w.start;
    q.b = w.end;
    q.c = r.value;
    spate_emit(ctx, &q);
}

Test(windows, sliding_event_time_with_lateness)
{
    spate_env *env;
    struct lines got = { 0 }, want = { 0 }, *gp = &got;
    struct ref ref = { 0 };
    int64_t wm = INT64_MIN;
    spate_stream *w;

    make_events();
    env = env_new(NULL, NULL);
    w = spate_window(event_source(env), spate_sliding_event_time(SSIZE, SSLIDE));
    spate_allowed_lateness(w, SLATE);
    w = spate_window_reduce(w, sum_evt, sliding_window, quad_type(env));
    spate_params(spate_sink(w, quad_sink), &gp, sizeof gp);
    run(env);

    for (int i = 0; i < N; i++) {
        const struct evt *e = &events[i];
        int64_t last = e->ts - e->ts % SSLIDE;

        for (int64_t start = last; start > e->ts - SSIZE; start -= SSLIDE) {
            struct rwin *rw;

            if (start + SSIZE - 1 + SLATE <= wm)
                continue;
            rw = ref_find(&ref, e->key, start, start + SSIZE, true);
            rw->sum += e->value;
            if (start + SSIZE - 1 <= wm)
                ref_emit(&want, e->key, start, start + SSIZE, rw->sum, start + SSIZE - 1);
        }
        if (e->ts - BOUND - 1 > wm) {
            wm = e->ts - BOUND - 1;
            ref_advance_fixed(&ref, wm, SLATE, &want, false);
        }
    }
    ref_advance_fixed(&ref, INT64_MAX, SLATE, &want, false);
    lines_assert_equal(&got, &want, "sliding windows");
    lines_free(&got);
    lines_free(&want);
    free(ref.w);
}

/* ---- sessions: process window function over all elements ---- */

#define GAP 40

static void
session_window(spate_ctx *ctx, spate_time_window w, spate_iter *elements)
{
    struct evt r;
    struct quad q = { 0, w.start, w.end, 0 };

    while (spate_list_next(elements, &r)) {
        q.k = r.key;
        q.c++;
    }
    spate_emit(ctx, &q);
}

Test(windows, session_event_time_merges_and_sends_late_data_aside)
{
    spate_env *env;
    struct lines got = { 0 }, got_late = { 0 }, want = { 0 }, want_late = { 0 };
    struct lines *gp = &got, *lp = &got_late;
    struct ref ref = { 0 };
    int64_t wm = INT64_MIN;
    spate_tag late;
    spate_stream *w;

    make_events();
    env = env_new(NULL, NULL);
    w = spate_window(event_source(env), spate_session_event_time(GAP));
    late = spate_output_tag(env, "late", evt_type(env));
    spate_late_data_side_output(w, late);
    w = spate_window_process(w, session_window, quad_type(env));
    spate_params(spate_sink(w, quad_sink), &gp, sizeof gp);
    spate_params(spate_sink(spate_side_output(w, late), late_sink), &lp, sizeof lp);
    run(env);

    for (int i = 0; i < N; i++) {
        const struct evt *e = &events[i];
        int64_t start = e->ts, end = e->ts + GAP;
        int64_t count = 1;
        bool grew = true;

        /* Merge with every intersecting session of the key (Flink's
         * TimeWindow.intersects), then drop the result if it is late. */
        while (grew) {
            grew = false;
            for (size_t k = 0; k < ref.n; k++) {
                struct rwin *s = &ref.w[k];

                if (!s->exists || s->key != e->key || s->start > end || s->end < start)
                    continue;
                start = start < s->start ? start : s->start;
                end = end > s->end ? end : s->end;
                count += s->count;
                s->exists = false;
                grew = true;
            }
        }
        if (end - 1 <= wm) {
            char buf[64];

            snprintf(buf, sizeof buf, "%lld@%lld", (long long)e->key, (long long)e->ts);
            lines_add(&want_late, buf);
        } else {
            struct rwin *s = ref_find(&ref, e->key, start, end, true);

            s->count = count;
        }
        if (e->ts - BOUND - 1 > wm) {
            wm = e->ts - BOUND - 1;
            for (size_t k = 0; k < ref.n; k++) {
                struct rwin *s = &ref.w[k];

                if (s->exists && s->end - 1 <= wm) {
                    ref_emit(&want, s->key, s->start, s->end, s->count, s->end - 1);
                    s->exists = false;
                }
            }
        }
    }
    for (size_t k = 0; k < ref.n; k++)
        if (ref.w[k].exists)
            ref_emit(&want, ref.w[k].key, ref.w[k].start, ref.w[k].end, ref.w[k].count,
                     ref.w[k].end - 1);
    lines_assert_equal(&got, &want, "session windows");
    lines_assert_equal(&got_late, &want_late, "late records");
    lines_free(&got);
    lines_free(&got_late);
    lines_free(&want);
    lines_free(&want_late);
    free(ref.w);
}

/* ---- count windows, a custom trigger, an evictor ---- */

static void
count_window_fn(spate_ctx *ctx, spate_time_window w, spate_iter *elements)
{
    struct evt r;
    struct quad q = { 0, 0, 0, 0 };

    (void)w;
    while (spate_list_next(elements, &r)) {
        q.k = r.key;
        q.a++;
        q.b += r.value;
    }
    spate_emit(ctx, &q);
}

Test(windows, count_windows_tumbling_and_sliding)
{
    static const struct evt in[] = { { 1, 0, 1 }, { 1, 0, 2 },  { 2, 0, 10 }, { 1, 0, 3 },
                                     { 1, 0, 4 }, { 2, 0, 20 }, { 1, 0, 5 },  { 2, 0, 30 } };
    static const char *tumbling[] = { "1 3 6 0", "2 3 60 0" };
    static const char *sliding[] = { "1 2 3 0", "1 3 9 0", "2 2 30 0" };
    for (int k = 0; k < 2; k++) {
        spate_env *env = env_new(NULL, NULL);
        struct lines got = { 0 }, want = { 0 }, *gp = &got;
        spate_stream *s = spate_key_by_field(spate_source_collection(env, evt_type(env), in, 8), 0);
        spate_stream *w = k == 0 ? spate_count_window(s, 3) : spate_count_window_sliding(s, 3, 2);

        w = spate_window_process(w, count_window_fn, quad_type(env));
        spate_params(spate_sink(w, quad_sink), &gp, sizeof gp);
        run(env);
        for (size_t i = 0; i < (k == 0 ? 2u : 3u); i++) {
            char buf[64];

            snprintf(buf, sizeof buf, "%s ts=%lld", k == 0 ? tumbling[i] : sliding[i],
                     (long long)INT64_MAX);
            lines_add(&want, buf);
        }
        lines_assert_equal(&got, &want, k == 0 ? "count windows" : "sliding count windows");
        lines_free(&got);
        lines_free(&want);
    }
}

static spate_trigger_result
every_two(spate_ctx *ctx, const void *rec, int64_t ts, spate_time_window w)
{
    spate_state *n = spate_ctx_state(ctx, "n");
    int64_t c = 0;

    (void)rec;
    (void)ts;
    (void)w;
    spate_value_get(n, &c);
    if (++c == 2) {
        spate_state_clear(n);
        return SPATE_TRIGGER_FIRE_AND_PURGE;
    }
    spate_value_update(n, &c);
    return SPATE_TRIGGER_CONTINUE;
}

static void
keep_odd_values(spate_ctx *ctx, spate_time_window w, size_t count, const int64_t *ts, bool *keep,
                bool before)
{
    (void)ctx;
    (void)w;
    (void)ts;
    for (size_t i = 0; before && i < count; i++)
        keep[i] = i % 2 == 1; /* the second of every two */
}

Test(windows, custom_trigger_state_per_window_and_a_custom_evictor)
{
    static const struct evt in[] = { { 1, 5, 1 }, { 1, 6, 2 }, { 1, 7, 3 }, { 1, 8, 4 } };
    spate_env *env = env_new(NULL, NULL);
    struct lines got = { 0 }, want = { 0 }, *gp = &got;
    spate_trigger trig = { every_two, NULL, NULL };
    spate_watermark_strategy ws = spate_watermarks_monotonous(evt_ts);
    spate_stream *s = spate_source_collection(env, evt_type(env), in, 4);
    spate_stream *w;

    s = spate_key_by_field(spate_assign_timestamps_and_watermarks(s, &ws), 0);
    w = spate_window(s, spate_tumbling_event_time(1000));
    spate_value_state(w, "n", spate_type_int64(), 0);
    spate_window_trigger(w, &trig);
    spate_window_evictor(w, keep_odd_values);
    w = spate_window_process(w, count_window_fn, quad_type(env));
    spate_params(spate_sink(w, quad_sink), &gp, sizeof gp);
    run(env);
    /* Fired after records 2 and 4, each time keeping only the second. */
    lines_add(&want, "1 1 2 0 ts=999");
    lines_add(&want, "1 1 4 0 ts=999");
    lines_assert_equal(&got, &want, "custom trigger");
    lines_free(&got);
    lines_free(&want);
}

/* ---- the per-record path and snapshots ---- */

/* The operator chain of env's window (its one vertex with an input),
 * built to be driven record by record, as subtask `subtask` of
 * `parallelism`. */
static struct operator_chain *
window_chain_of(spate_env *env, int parallelism, int subtask, struct accumulators *acc,
                struct job_graph **jg)
{
    struct task_info task = { .parallelism = parallelism,
                              .subtask = subtask,
                              .task_name = "w",
                              .accumulators = acc,
                              .print_out = stdout,
                              .connectors = connectors_builtin() };
    struct operator_chain *chain;
    spate_error err = { 0 };
    int vx = -1;

    accumulators_init(acc);
    cr_assert_eq(job_graph_build(env, "t", jg, &err), 0, "%s", err.message);
    for (int v = 0; v < (*jg)->nvertices; v++)
        if ((*jg)->vertices[v].ninputs == 1)
            vx = v;
    cr_assert_geq(vx, 0);
    task.max_parallelism = (*jg)->vertices[vx].max_parallelism;
    cr_assert_eq(operator_chain_new(*jg, vx, &task, NULL, &chain, &err), 0, "%s", err.message);
    return chain;
}

static struct operator_chain *
window_chain(spate_env *env, struct accumulators *acc, struct job_graph **jg)
{
    return window_chain_of(env, 1, 0, acc, jg);
}

/* The state map view's entry of (key, window) in the window's contents:
 * its (count, sum); false when the view has none. */
static bool
view_acc(const struct keyed_backend_snapshot *s, int64_t key, spate_time_window win, struct cs *out)
{
    uint8_t ck[8 + 8 + sizeof win];
    uint32_t klen = 8, nlen = sizeof win;
    uint32_t nkg = s->kg_end - s->kg_start + 1;

    memcpy(ck, &klen, 4);
    memcpy(ck + 4, &key, 8);
    memcpy(ck + 12, &nlen, 4);
    memcpy(ck + 16, &win, sizeof win);
    for (int i = 0; i < s->nstates; i++)
        for (uint32_t k = 0; k < nkg; k++) {
            const struct state_map_view *v = &s->views[(size_t)i * nkg + k];

            for (size_t j = 0; v->slots != NULL && j <= v->mask; j++) {
                const struct state_entry *e = &v->slots[j];

                if (state_entry_used(e) && state_entry_key_len(e) == sizeof ck &&
                    memcmp(state_entry_key(e), ck, sizeof ck) == 0 && e->value_len == sizeof *out) {
                    memcpy(out, state_entry_value(e), sizeof *out);
                    return true;
                }
            }
        }
    return false;
}

/* Records of one key and window go into its accumulator where the state
 * map keeps it; a snapshot taken between them reads the accumulator of its
 * moment (the map's table is copied before the next change), and the live
 * one goes on: the window fires with every record. */
Test(windows, a_snapshot_between_records_keeps_the_accumulator_of_its_moment)
{
    spate_env *env = env_new(NULL, NULL);
    const spate_type *cst =
        spate_type_tuple(env, 2, (const spate_type *[]){ spate_type_int64(), spate_type_int64() });
    spate_aggregate agg = { cst, cst, cs_create, cs_add, cs_result, cs_merge };
    struct lines got = { 0 }, *gp = &got;
    struct accumulators acc;
    struct job_graph *jg;
    spate_stream *w;
    struct operator_chain *chain;
    struct stream_operator *head;
    struct keyed_backend_snapshot snap[2];
    spate_time_window win = { 0, TSIZE };
    struct cs a;

    w = spate_window(event_source(env), spate_tumbling_event_time(TSIZE));
    w = spate_window_aggregate(w, &agg, cs_window, quad_type(env));
    spate_params(spate_sink(w, quad_sink), &gp, sizeof gp);
    chain = window_chain(env, &acc, &jg);
    head = operator_chain_head(chain);
    for (int i = 0; i < 7; i++) {
        struct evt e = { 3, 10 + i, 100 + i };
        struct record_meta m = { .timestamp = e.ts, .has_key_hash = true };

        m.key_hash = key_group_hash(&e.key, 8);
        if (i == 3)
            keyed_backend_snapshot(heap_keyed_backend_of(head->backend), &snap[0]);
        if (i == 5)
            keyed_backend_snapshot(heap_keyed_backend_of(head->backend), &snap[1]);
        operator_process(head, &e, &m);
    }
    cr_assert(view_acc(&snap[0], 3, win, &a), "the first snapshot holds no accumulator");
    cr_assert(a.count == 3 && a.sum == 100 + 101 + 102, "first snapshot: (%lld, %lld)",
              (long long)a.count, (long long)a.sum);
    cr_assert(view_acc(&snap[1], 3, win, &a), "the second snapshot holds no accumulator");
    cr_assert(a.count == 5 && a.sum == 100 + 101 + 102 + 103 + 104, "second snapshot: (%lld, %lld)",
              (long long)a.count, (long long)a.sum);
    /* Both still unreleased: the live table was copied once for each. */
    operator_process_watermark(head, RECORD_MAX_WATERMARK);
    cr_assert_eq(got.n, 1);
    cr_assert_str_eq(got.v[0], "3 0 7 721 ts=199");
    keyed_backend_snapshot_release(&snap[0]);
    keyed_backend_snapshot_release(&snap[1]);
    lines_free(&got);
    operator_chain_free(chain);
    job_graph_free(jg);
    accumulators_release(&acc);
    env_free(env);
}

/* A snapshot the task took before the record that merges two sessions, and
 * what its keyed states looked like, to the snapshot thread, while they
 * merged (the thread writes the states' kinds into the checkpoint). */
static struct keyed_backend_snapshot *merging_snapshot;
static int merging_contents_kind = -1;

static void
cs_merge_as_the_snapshot_thread_looks(spate_ctx *ctx, const void *from, void *acc)
{
    Checkpoint__StateMeta **m;
    size_t n;

    cs_merge(ctx, from, acc);
    m = keyed_backend_snapshot_metas((const struct keyed_state_snapshot *)merging_snapshot, &n);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(m[i]->name, "__window_contents") == 0)
            merging_contents_kind = m[i]->kind;
        free(m[i]->name);
        free(m[i]->type_name);
        free(m[i]->key_type_name);
        free(m[i]);
    }
    free(m);
}

/* Session windows with an aggregate merge accumulator into accumulator;
 * the window contents stay an aggregating state throughout, also to a
 * snapshot written meanwhile. Once the merge read the accumulators by
 * turning the state into a value state for a moment: a checkpoint written
 * then said "value state", and no restore could read it. */
Test(windows, session_merges_keep_the_contents_an_aggregating_state_to_snapshots)
{
    static const struct evt in[] = { { 3, 10, 1 }, { 3, 10 + GAP + 5, 2 }, { 3, 10 + GAP / 2, 4 } };
    spate_env *env = env_new(NULL, NULL);
    const spate_type *cst =
        spate_type_tuple(env, 2, (const spate_type *[]){ spate_type_int64(), spate_type_int64() });
    spate_aggregate agg = { cst,    cst,       cs_create,
                            cs_add, cs_result, cs_merge_as_the_snapshot_thread_looks };
    struct lines got = { 0 }, *gp = &got;
    struct accumulators acc;
    struct job_graph *jg;
    spate_stream *w;
    struct operator_chain *chain;
    struct stream_operator *head;
    struct keyed_backend_snapshot snap;

    w = spate_window(event_source(env), spate_session_event_time(GAP));
    w = spate_window_aggregate(w, &agg, cs_window, quad_type(env));
    spate_params(spate_sink(w, quad_sink), &gp, sizeof gp);
    chain = window_chain(env, &acc, &jg);
    head = operator_chain_head(chain);
    for (int i = 0; i < 3; i++) {
        struct record_meta m = { .timestamp = in[i].ts, .has_key_hash = true };

        m.key_hash = key_group_hash(&in[i].key, 8);
        if (i == 2) { /* the record that bridges the two sessions */
            keyed_backend_snapshot(heap_keyed_backend_of(head->backend), &snap);
            merging_snapshot = &snap;
        }
        operator_process(head, &in[i], &m);
    }
    merging_snapshot = NULL;
    cr_assert_eq(merging_contents_kind, STATE_AGGREGATING,
                 "while sessions merged, a snapshot saw the window contents as %s state",
                 state_kind_name(merging_contents_kind));
    operator_process_watermark(head, RECORD_MAX_WATERMARK);
    cr_assert_eq(got.n, 1);
    cr_assert_str_eq(got.v[0], "3 10 3 7 ts=94");
    keyed_backend_snapshot_release(&snap);
    lines_free(&got);
    operator_chain_free(chain);
    job_graph_free(jg);
    accumulators_release(&acc);
    env_free(env);
}

/* An aggregate function that checks, per record, what its context says:
 * the record's key, a window holding its timestamp, its timestamp. The
 * common window sets that context only when a function reads it. */
static void
cs_add_reading_context(spate_ctx *ctx, const void *in, void *acc)
{
    const struct evt *e = in;
    spate_time_window w = spate_ctx_window(ctx);
    struct cs *c = acc;

    c->count++;
    if (spate_ctx_current_key_int64(ctx) != e->key || spate_ctx_timestamp(ctx) != e->ts ||
        e->ts < w.start || e->ts >= w.end)
        c->sum += 1000000; /* a wrong context */
    else
        c->sum += e->value;
}

Test(windows, an_aggregate_function_reads_its_record_s_key_window_and_timestamp)
{
    spate_env *env = env_new(NULL, NULL);
    const spate_type *cst =
        spate_type_tuple(env, 2, (const spate_type *[]){ spate_type_int64(), spate_type_int64() });
    spate_aggregate agg = { cst, cst, cs_create, cs_add_reading_context, cs_result, cs_merge };
    struct lines got = { 0 }, want = { 0 }, *gp = &got;
    struct accumulators acc;
    struct job_graph *jg;
    spate_stream *w;
    struct operator_chain *chain;
    struct stream_operator *head;

    w = spate_window(event_source(env), spate_tumbling_event_time(TSIZE));
    w = spate_window_aggregate(w, &agg, cs_window, quad_type(env));
    spate_params(spate_sink(w, quad_sink), &gp, sizeof gp);
    chain = window_chain(env, &acc, &jg);
    head = operator_chain_head(chain);
    /* Four keys in turns, 50 records each, in two windows. */
    for (int i = 0; i < 200; i++) {
        struct evt e = { i % 4, i * 2, i };
        struct record_meta m = { .timestamp = e.ts, .has_key_hash = true };

        m.key_hash = key_group_hash(&e.key, 8);
        operator_process(head, &e, &m);
    }
    operator_process_watermark(head, RECORD_MAX_WATERMARK);
    for (int64_t k = 0; k < 4; k++)
        for (int64_t start = 0; start < 400; start += TSIZE) {
            int64_t sum = 0;
            char buf[96];

            for (int i = 0; i < 200; i++)
                if (i % 4 == k && i * 2 >= start && i * 2 < start + TSIZE)
                    sum += i;
            snprintf(buf, sizeof buf, "%lld %lld %d %lld ts=%lld", (long long)k, (long long)start,
                     25, (long long)sum, (long long)(start + TSIZE - 1));
            lines_add(&want, buf);
        }
    lines_assert_equal(&got, &want, "a context read per record");
    lines_free(&got);
    lines_free(&want);
    operator_chain_free(chain);
    job_graph_free(jg);
    accumulators_release(&acc);
    env_free(env);
}

/* ---- a keyed run: records read where they are in an input buffer ---- */

#define RUN_KEYS      37
#define RUN_MANY_KEYS 1000
#define RUN_EVENTS    3000
#define RUN_CHUNK     100

static struct evt run_events[RUN_EVENTS];
/* RUN_MANY_KEYS keys, four events a ms: a window's contents grow past
 * what the window counts as small (window_contents_small), whose runs
 * fetch no slot ahead; else RUN_KEYS keys, which stay small. */
static bool many_keys;

/* Event i: one of RUN_KEYS keys, about 2 ms after the one before (or of
 * many_keys'), now and then 400 ms behind (late within the lateness, or
 * beyond it). */
static void
make_run_events(void)
{
    for (int i = 0; i < RUN_EVENTS; i++) {
        uint64_t x = mix((uint64_t)i + 5);

        run_events[i].key = (int64_t)(x % (many_keys ? RUN_MANY_KEYS : RUN_KEYS));
        run_events[i].ts = (many_keys ? (int64_t)i / 4 : (int64_t)i * 2) + (int64_t)((x >> 8) % 40);
        if ((x >> 20) % 31 == 0)
            run_events[i].ts = MAX(0, run_events[i].ts - 400);
        run_events[i].value = key_field == 2 ? run_events[i].key : i;
    }
}

/* The window of the run tests, its sink into *got, driven record by record
 * as subtask `subtask` of `parallelism`. */
static struct operator_chain *
run_window_chain(struct lines **gp, int parallelism, int subtask, struct accumulators *acc,
                 struct job_graph **jg, spate_env **envp)
{
    spate_env *env = env_new(NULL, NULL);
    const spate_type *cst =
        spate_type_tuple(env, 2, (const spate_type *[]){ spate_type_int64(), spate_type_int64() });
    spate_aggregate agg = { cst, cst, cs_create, cs_add_reading_context, cs_result, cs_merge };
    spate_stream *w;

    w = spate_window(event_source(env), spate_tumbling_event_time(TSIZE));
    spate_allowed_lateness(w, TLATE);
    w = spate_window_aggregate(w, &agg, cs_window, quad_type(env));
    spate_params(spate_sink(w, quad_sink), gp, sizeof *gp);
    *envp = env;
    return window_chain_of(env, parallelism, subtask, acc, jg);
}

/* Event e as an exchange writes it into a buffer, [u32 length][tag]
 * [timestamp][key hash][event], with extra bytes after it (another shape). */
static size_t
put_keyed(uint8_t *p, const struct evt *e, size_t extra)
{
    uint32_t len = (uint32_t)(ELEMENT_KEYED_TS_HEADER + sizeof *e + extra);
    uint64_t hash = key_group_hash((const int64_t *)e + key_field, 8);

    memcpy(p, &len, 4);
    p[4] = ELEMENT_KEYED_TS_TAG;
    memcpy(p + 5, &e->ts, 8);
    memcpy(p + 13, &hash, 8);
    memcpy(p + 21, e, sizeof *e);
    memset(p + 21 + sizeof *e, 0, extra);
    return RECORD_LENGTH_BYTES + len;
}

/* The events of subtask `subtask` of `parallelism`, in chunks of
 * RUN_CHUNK with the watermark after each: through the window's keyed run
 * (at most `max` records a call) in one chain, and one operator_process
 * call each in another; the two give the same windows. A record of
 * another shape in a chunk ends a run there and is skipped by both. */
static void
keyed_run_as_one_at_a_time(int parallelism, int subtask, int max)
{
    struct lines got_run = { 0 }, got_one = { 0 }, *rp = &got_run, *op = &got_one;
    struct accumulators acc_run, acc_one;
    struct job_graph *jg_run, *jg_one;
    spate_env *env_run, *env_one;
    struct operator_chain *run_chain =
        run_window_chain(&rp, parallelism, subtask, &acc_run, &jg_run, &env_run);
    struct operator_chain *one_chain =
        run_window_chain(&op, parallelism, subtask, &acc_one, &jg_one, &env_one);
    struct stream_operator *run_head = operator_chain_head(run_chain);
    struct stream_operator *one_head = operator_chain_head(one_chain);
    uint32_t maxp = (uint32_t)run_head->ctx.max_parallelism;
    struct key_group_range range =
        key_group_range_for_operator(maxp, (uint32_t)parallelism, (uint32_t)subtask);
    static uint8_t buf[RUN_CHUNK * 64];
    _Alignas(16) uint8_t rec[sizeof(struct evt) + 16];
    int64_t max_ts = INT64_MIN;
    int foreign = 0;

    cr_assert_not_null(run_head->vt->process_keyed_run);
    make_run_events();
    for (int c = 0; c < RUN_EVENTS; c += RUN_CHUNK) {
        const uint8_t *pos = buf, *end;
        size_t size = 0;

        for (int i = c; i < c + RUN_CHUNK; i++) {
            const struct evt *e = &run_events[i];
            const int64_t *key = (const int64_t *)e + key_field;
            uint32_t kg = key_group_of_hash(key_group_hash(key, 8), maxp);
            struct record_meta m = { .timestamp = e->ts, .has_key_hash = true };
            bool other = i % 700 == 350;

            if (kg < range.start || kg > range.end)
                continue;
            size += put_keyed(buf + size, e, other ? 8 : 0);
            if (other) {
                foreign++;
                continue;
            }
            m.key_hash = key_group_hash(key, 8);
            operator_process(one_head, e, &m);
            max_ts = MAX(max_ts, e->ts);
        }
        end = buf + size;
        while (pos < end) {
            int k = run_head->vt->process_keyed_run(run_head, rec, sizeof(struct evt), &pos, end,
                                                    max, true);

            if (k == 0) { /* the record of another shape: left where it is */
                uint32_t len;

                memcpy(&len, pos, 4);
                cr_assert_eq(len, ELEMENT_KEYED_TS_HEADER + sizeof(struct evt) + 8);
                pos += RECORD_LENGTH_BYTES + len;
                foreign--;
            }
            cr_assert_leq(pos, end);
        }
        operator_process_watermark(run_head, max_ts - BOUND - 1);
        operator_process_watermark(one_head, max_ts - BOUND - 1);
    }
    cr_assert_eq(foreign, 0, "each record of another shape ended a run");
    cr_assert_eq(run_head->records_in, one_head->records_in, "the runs count what they take");
    operator_process_watermark(run_head, RECORD_MAX_WATERMARK);
    operator_process_watermark(one_head, RECORD_MAX_WATERMARK);
    cr_assert_gt(got_one.n, 100, "windows fired: %zu", got_one.n);
    for (size_t i = 0; i < got_one.n; i++)
        cr_assert_null(strstr(got_one.v[i], " 1000000"), "a wrong context: %s", got_one.v[i]);
    lines_assert_equal(&got_run, &got_one, "a keyed run's windows");
    lines_free(&got_run);
    lines_free(&got_one);
    operator_chain_free(run_chain);
    operator_chain_free(one_chain);
    job_graph_free(jg_run);
    job_graph_free(jg_one);
    accumulators_release(&acc_run);
    accumulators_release(&acc_one);
    env_free(env_run);
    env_free(env_one);
}

/* Each key's first record of a window, late records (within the lateness
 * and beyond it), records of the next window and runs cut at max in the
 * middle of a chunk: the run gives what one record at a time gives. */
Test(windows, a_keyed_run_gives_the_windows_of_one_record_at_a_time)
{
    keyed_run_as_one_at_a_time(1, 0, 64);
    keyed_run_as_one_at_a_time(1, 0, 7);
}

/* The same as a subtask with some of the key groups. */
Test(windows, a_keyed_run_of_a_subtask_with_some_key_groups)
{
    keyed_run_as_one_at_a_time(2, 1, 256);
}

/* The same with the key a field other than the record's first, with every
 * key group and with some. */
Test(windows, a_keyed_run_by_a_key_that_is_not_the_first_field)
{
    key_field = 2;
    keyed_run_as_one_at_a_time(1, 0, 64);
    keyed_run_as_one_at_a_time(2, 1, 256);
}

/* The same with contents that grow past small (the slots fetched ahead),
 * the key first or not, with every key group and with some. */
Test(windows, a_keyed_run_of_many_keys)
{
    many_keys = true;
    for (key_field = 0; key_field <= 2; key_field += 2) {
        keyed_run_as_one_at_a_time(1, 0, 64);
        keyed_run_as_one_at_a_time(1, 0, 7);
        keyed_run_as_one_at_a_time(2, 1, 256);
    }
}

/* ---- idleness: an input without records does not hold back event time ---- */

static void
tick(spate_ctx *ctx, uint64_t i, void *out)
{
    struct evt *e = out;

    (void)ctx;
    e->key = (int64_t)(i % 2);
    e->ts = (int64_t)i; /* ms */
    e->value = 1;
}

static void
count_firing(spate_ctx *ctx, const void *in)
{
    _Atomic int64_t *fired = *(_Atomic int64_t *const *)spate_ctx_params(ctx, NULL);

    (void)in;
    atomic_fetch_add(fired, 1);
}

/* Two sources into one window: one busy (2000 records a second, event time
 * twice as fast as the clock), one that emits its first record and then
 * nothing for 1000 s. With idleness the quiet one is idle after 50 ms and
 * the windows fire on the busy one's watermarks; without it they never
 * would (the quiet one's watermark stays at -1). */
static void
windows_fire_while_the_other_input_is_idle(void)
{
    spate_env *env = env_new(NULL, NULL);
    spate_watermark_strategy ws = spate_watermarks_monotonous(evt_ts);
    const spate_type *cst =
        spate_type_tuple(env, 2, (const spate_type *[]){ spate_type_int64(), spate_type_int64() });
    spate_aggregate agg = { cst, cst, cs_create, cs_add, cs_result, cs_merge };
    spate_stream *busy = spate_source_generator(env, tick, evt_type(env), 0, 2000);
    spate_stream *quiet = spate_source_generator(env, tick, evt_type(env), 0, 0.001);
    struct local_job lj = { 0 };
    _Atomic int64_t fired = 0, *fp = &fired;
    uint64_t deadline = clock_mono_ns() + 60 * 1000000000ull;
    spate_error err = { 0 };
    spate_stream *w;

    ws.idleness_ms = 50;
    if (watermarks_at_source) {
        busy = spate_source_with_watermarks(busy, &ws);
        quiet = spate_source_with_watermarks(quiet, &ws);
    } else {
        busy = spate_assign_timestamps_and_watermarks(busy, &ws);
        quiet = spate_assign_timestamps_and_watermarks(quiet, &ws);
    }
    w = spate_window(spate_key_by_field(spate_union(busy, quiet), 0),
                     spate_tumbling_event_time(100));
    w = spate_window_aggregate(w, &agg, cs_window, quad_type(env));
    spate_params(spate_sink(w, count_firing), &fp, sizeof fp);
    local_start(&lj, env);
    while (atomic_load(&fired) < 6 && clock_mono_ns() < deadline)
        nanosleep(&(struct timespec){ 0, 5000000 }, NULL);
    local_cancel(&lj);
    local_join(&lj, &err);
    cr_assert_geq(atomic_load(&fired), 6,
                  "windows fired %lld times in 60 s: the idle input held back event time",
                  (long long)atomic_load(&fired));
    local_free(&lj);
    env_free(env);
}

Test(windows, an_idle_input_does_not_hold_back_event_time, .timeout = 90)
{
    windows_fire_while_the_other_input_is_idle();
}

Test(windows, an_idle_source_with_its_own_watermarks_does_not_hold_back_event_time, .timeout = 90)
{
    watermarks_at_source = true;
    windows_fire_while_the_other_input_is_idle();
}
