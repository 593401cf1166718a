/* Unit tests of event time, keyed state and timers: watermarks from
 * out-of-order records, event-time timers firing in order and deduplicated,
 * every kind of keyed state, and side outputs. Whole jobs run through the
 * synchronous runner; the backend alone is tests/unit/state's. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/key_group.h"
#include "streaming/operator.h"
#include "streaming/types.h"
#include "sync_runner.h"

struct ev {
    int64_t key;
    int64_t ts;
};

struct out_log {
    char lines[512][48];
    int n;
};

static const spate_type *
ev_type(spate_env *env)
{
    const spate_type *f[] = { spate_type_int64(), spate_type_int64() };

    return spate_type_tuple(env, 2, f);
}

static int64_t
ev_ts(spate_ctx *ctx, const void *rec)
{
    (void)ctx;
    return ((const struct ev *)rec)->ts;
}

static void
log_sink(spate_ctx *ctx, const void *in)
{
    struct out_log *log = *(struct out_log *const *)spate_ctx_params(ctx, NULL);
    const struct ev *e = in;

    snprintf(log->lines[log->n++], 48, "%lld@%lld wm=%lld", (long long)e->key, (long long)e->ts,
             (long long)spate_ctx_current_watermark(ctx));
}

/* ---- timers ---- */

static void
timer_process(spate_ctx *ctx, const void *in)
{
    const struct ev *e = in;

    /* Twice: one timer per key and timestamp. */
    spate_timer_register_event_time(ctx, e->ts + 10);
    spate_timer_register_event_time(ctx, e->ts + 10);
}

static void
timer_fired(spate_ctx *ctx, int64_t ts, bool event_time)
{
    struct ev out;

    cr_assert(event_time);
    out.key = spate_ctx_current_key_int64(ctx);
    out.ts = ts;
    cr_assert_eq(spate_ctx_timestamp(ctx), ts);
    spate_emit(ctx, &out);
}

Test(keyed, event_time_timers_fire_in_order_once_per_key_and_time)
{
    static const struct ev input[] = {
        { 1, 100 }, { 2, 105 }, { 1, 103 }, { 1, 100 },
        { 2, 140 }, { 1, 120 }, { 2, 101 }, /* late-ish: timer at 111 still ahead of the watermark */
        { 1, 300 },
    };
    spate_env *env = env_new(NULL, NULL);
    const spate_type *t = ev_type(env);
    spate_watermark_strategy ws = spate_watermarks_bounded(ev_ts, 5);
    struct out_log log = { { { 0 } }, 0 }, *lp = &log;
    struct accumulators acc;
    char *failure;
    spate_stream *s;

    s = spate_source_collection(env, t, input, sizeof input / sizeof input[0]);
    s = spate_assign_timestamps_and_watermarks(s, &ws);
    s = spate_on_timer(spate_process(spate_key_by_field(s, 0), timer_process, t), timer_fired);
    spate_params(spate_sink(s, log_sink), &lp, sizeof lp);
    accumulators_init(&acc);
    sync_run_env(env, &acc, &failure);
    cr_assert_null(failure, "%s", failure);
    /* Timers (key@time): 1@110, 2@115, 1@113, 2@150, 1@130, 2@111, 1@310 —
     * 1@110 registered twice; all fire at the end of input, in time order. */
    cr_assert_eq(log.n, 7, "%d timers fired", log.n);
    cr_assert(strncmp(log.lines[0], "1@110", 5) == 0, "%s", log.lines[0]);
    cr_assert(strncmp(log.lines[1], "2@111", 5) == 0, "%s", log.lines[1]);
    cr_assert(strncmp(log.lines[2], "1@113", 5) == 0, "%s", log.lines[2]);
    cr_assert(strncmp(log.lines[3], "2@115", 5) == 0, "%s", log.lines[3]);
    cr_assert(strncmp(log.lines[4], "1@130", 5) == 0, "%s", log.lines[4]);
    cr_assert(strncmp(log.lines[5], "2@150", 5) == 0, "%s", log.lines[5]);
    cr_assert(strncmp(log.lines[6], "1@310", 5) == 0, "%s", log.lines[6]);
    accumulators_release(&acc);
    env_free(env);
}

/* ---- every kind of state ---- */

static void
add_i64(spate_ctx *ctx, const void *a, const void *b, void *out)
{
    (void)ctx;
    *(int64_t *)out = *(const int64_t *)a + *(const int64_t *)b;
}

struct avg {
    int64_t sum, count;
};

static void
avg_create(spate_ctx *ctx, void *acc)
{
    (void)ctx;
    memset(acc, 0, sizeof(struct avg));
}

static void
avg_add(spate_ctx *ctx, const void *in, void *acc)
{
    (void)ctx;
    ((struct avg *)acc)->sum += ((const struct ev *)in)->ts;
    ((struct avg *)acc)->count++;
}

static void
avg_result(spate_ctx *ctx, const void *acc, void *out)
{
    (void)ctx;
    *(int64_t *)out = ((const struct avg *)acc)->sum / ((const struct avg *)acc)->count;
}

/* Per record: updates every state, then emits (key, a checksum of them). */
static void
all_states(spate_ctx *ctx, const void *in)
{
    const struct ev *e = in;
    spate_state *value = spate_ctx_state(ctx, "last");
    spate_state *list = spate_ctx_state(ctx, "all");
    spate_state *map = spate_ctx_state(ctx, "seen");
    spate_state *reducing = spate_ctx_state(ctx, "sum");
    spate_state *aggregating = spate_ctx_state(ctx, "avg");
    int64_t last = -1, sum = 0, avg = 0, count = 0, x, mk, mv, n = 0;
    spate_iter it;
    struct ev out;

    cr_assert_not_null(value);
    cr_assert_null(spate_ctx_state(ctx, "undeclared"));
    spate_value_get(value, &last);
    spate_value_update(value, &e->ts);
    spate_list_add(list, &e->ts);
    spate_map_put(map, &e->ts, &e->key);
    spate_reducing_add(reducing, &e->ts);
    spate_aggregating_add(aggregating, e);
    cr_assert(spate_reducing_get(reducing, &sum));
    cr_assert(spate_aggregating_get(aggregating, &avg));
    spate_list_iter(list, &it);
    while (spate_list_next(&it, &x))
        count++;
    spate_map_iter(map, &it);
    while (spate_map_next(&it, &mk, &mv)) {
        cr_assert_eq(mv, e->key);
        n++;
    }
    cr_assert(spate_map_get(map, &e->ts, &mv));
    out.key = e->key;
    out.ts = last * 1000000 + sum * 1000 + count * 100 + n * 10 + avg % 10;
    spate_emit(ctx, &out);
    if (e->ts == 7) {
        /* Clearing forgets the key's value. */
        spate_state_clear(value);
        cr_assert(!spate_value_get(value, &last));
        spate_state_clear(map);
        spate_map_iter(map, &it);
        cr_assert(!spate_map_next(&it, &mk, &mv));
    }
}

Test(keyed, every_kind_of_state_is_scoped_to_its_key)
{
    static const struct ev input[] = { { 1, 3 }, { 2, 4 }, { 1, 5 }, { 1, 5 }, { 2, 7 }, { 2, 1 } };
    static const char *expect[] = {
        /* key@(last*1e6 + sum*1000 + count*100 + distinct*10 + avg%10) */
        "1@-996887", "2@-995886", "1@3008224", "1@5013324", "2@4011225", "2@-987686",
    };
    spate_env *env = env_new(NULL, NULL);
    const spate_type *t = ev_type(env);
    spate_aggregate agg = {
        spate_type_tuple(env, 2, (const spate_type *[]){ spate_type_int64(), spate_type_int64() }),
        spate_type_int64(),
        avg_create,
        avg_add,
        avg_result,
        NULL
    };
    struct out_log log = { { { 0 } }, 0 }, *lp = &log;
    struct accumulators acc;
    char *failure;
    spate_stream *s;

    s = spate_process(spate_key_by_field(spate_source_collection(env, t, input, 6), 0), all_states,
                      t);
    spate_value_state(s, "last", spate_type_int64(), 0);
    spate_list_state(s, "all", spate_type_int64(), 0);
    spate_map_state(s, "seen", spate_type_int64(), spate_type_int64(), 0);
    spate_reducing_state(s, "sum", spate_type_int64(), add_i64, 0);
    spate_aggregating_state(s, "avg", &agg, 0);
    spate_params(spate_sink(s, log_sink), &lp, sizeof lp);
    accumulators_init(&acc);
    sync_run_env(env, &acc, &failure);
    cr_assert_null(failure, "%s", failure);
    cr_assert_eq(log.n, 6);
    for (int i = 0; i < 6; i++)
        cr_assert(strncmp(log.lines[i], expect[i], strlen(expect[i])) == 0, "%d: %s, want %s", i,
                  log.lines[i], expect[i]);
    accumulators_release(&acc);
    env_free(env);
}

/* ---- side outputs ---- */

static void
split_odd(spate_ctx *ctx, const void *in)
{
    const spate_tag *odd = spate_ctx_params(ctx, NULL);

    if (((const struct ev *)in)->ts % 2)
        spate_ctx_output(ctx, *odd, in);
    else
        spate_emit(ctx, in);
}

Test(keyed, side_outputs_reach_their_consumers_only)
{
    static const struct ev input[] = { { 1, 1 }, { 1, 2 }, { 1, 3 }, { 1, 4 }, { 1, 5 } };
    spate_env *env = env_new(NULL, NULL);
    const spate_type *t = ev_type(env);
    struct out_log main_log = { { { 0 } }, 0 }, side_log = { { { 0 } }, 0 };
    struct out_log *mp = &main_log, *sp = &side_log;
    struct accumulators acc;
    char *failure;
    spate_tag tag = spate_output_tag(env, "odd", t);
    spate_stream *s, *odd;

    s = spate_process(spate_source_collection(env, t, input, 5), split_odd, t);
    spate_params(s, &tag, sizeof tag);
    odd = spate_side_output(s, tag);
    spate_params(spate_sink(s, log_sink), &mp, sizeof mp);
    spate_params(spate_sink(spate_rebalance(odd), log_sink), &sp, sizeof sp);
    accumulators_init(&acc);
    sync_run_env(env, &acc, &failure);
    cr_assert_null(failure);
    cr_assert_eq(main_log.n, 2);
    cr_assert_eq(side_log.n, 3);
    cr_assert(strncmp(side_log.lines[2], "1@5", 3) == 0);
    accumulators_release(&acc);
    env_free(env);
}
