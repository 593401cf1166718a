/* Unit tests of src/streaming/stream_task.c: whole jobs run as task threads
 * over one network environment (local channels), at several parallelisms and
 * with every partitioner; results are checked against what the test computes
 * itself. Cancellation and user failures end the tasks. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "local_job.h"
#include "streaming/types.h"

/* ---- jobs ---- */

struct pair {
    int64_t key;
    int64_t count;
};

#define KEYS 97
#define N    20000

static void
gen_pair(spate_ctx *ctx, uint64_t i, void *out)
{
    (void)ctx;
    ((struct pair *)out)->key = (int64_t)(i * 7919 % KEYS);
    ((struct pair *)out)->count = 1;
}

/* Per subtask: the sum of every emitted count and the number of records. */
struct sums {
    int64_t checksum[16];
    int64_t records[16];
};

static void
sum_sink(spate_ctx *ctx, const void *in)
{
    struct sums *s = *(struct sums *const *)spate_ctx_params(ctx, NULL);

    s->checksum[spate_ctx_subtask_index(ctx)] += ((const struct pair *)in)->count;
    s->records[spate_ctx_subtask_index(ctx)]++;
}

static void
pass(spate_ctx *ctx, const void *in, void *out)
{
    (void)ctx;
    *(struct pair *)out = *(const struct pair *)in;
}

/* A keyed running count over N records of KEYS keys, with the given
 * parallelisms and a repartitioning step between source and count. */
static void
run_count(int p_source, int p_map, int p_count, spate_stream *(*part)(spate_stream *),
          int64_t expect_records_factor)
{
    spate_env *env = env_new(NULL, NULL);
    const spate_type *fields[] = { spate_type_int64(), spate_type_int64() };
    const spate_type *pt = spate_type_tuple(env, 2, fields);
    struct sums sums = { { 0 }, { 0 } }, *sp = &sums;
    struct local_job lj = { 0 };
    spate_error err = { 0 };
    int64_t checksum = 0, records = 0, expected = 0;
    spate_stream *s;

    s = spate_set_parallelism(spate_source_generator(env, gen_pair, pt, N, 0), p_source);
    if (part != NULL)
        s = part(s);
    s = spate_set_parallelism(spate_map(s, pass, pt), p_map);
    s = spate_set_parallelism(spate_sum(spate_key_by_field(s, 0), 1), p_count);
    spate_set_parallelism(spate_params(spate_sink(s, sum_sink), &sp, sizeof sp), p_count);
    local_start(&lj, env);
    cr_assert_eq(local_join(&lj, &err), 0, "%s", err.message);
    local_free(&lj);
    for (int i = 0; i < 16; i++) {
        checksum += sums.checksum[i];
        records += sums.records[i];
    }
    /* Key k occurs n_k times; its running counts sum to n_k (n_k + 1) / 2. */
    for (int k = 0; k < KEYS; k++) {
        int64_t n = 0;

        for (uint64_t i = 0; i < N; i++)
            n += (int64_t)(i * 7919 % KEYS) == k;
        n *= expect_records_factor;
        expected += n * (n + 1) / 2;
    }
    cr_assert_eq(records, (int64_t)N * expect_records_factor);
    cr_assert_eq(checksum, expected);
    env_free(env);
}

Test(stream_task, keyed_count_at_parallelism_one, .timeout = 60)
{
    run_count(1, 1, 1, NULL, 1);
}

Test(stream_task, keyed_count_across_parallelisms, .timeout = 60)
{
    run_count(2, 3, 4, NULL, 1);
    run_count(3, 3, 2, NULL, 1); /* forward source -> map: chained */
}

Test(stream_task, every_partitioner, .timeout = 60)
{
    run_count(2, 2, 3, spate_forward, 1);
    run_count(2, 3, 2, spate_rebalance, 1);
    run_count(2, 4, 2, spate_rescale, 1);
    run_count(4, 2, 2, spate_rescale, 1);
    run_count(2, 3, 2, spate_shuffle, 1);
    run_count(1, 3, 2, spate_global, 1);
    /* Broadcast: every map subtask sees every record. */
    run_count(1, 3, 2, spate_broadcast, 3);
}

static void
gen_forever(spate_ctx *ctx, uint64_t i, void *out)
{
    (void)ctx;
    ((struct pair *)out)->key = (int64_t)(i % 10);
    ((struct pair *)out)->count = 1;
}

static void
slow_sink(spate_ctx *ctx, const void *in)
{
    (void)ctx;
    (void)in;
}

Test(stream_task, cancel_wakes_every_task, .timeout = 60)
{
    spate_env *env = env_new(NULL, NULL);
    const spate_type *fields[] = { spate_type_int64(), spate_type_int64() };
    const spate_type *pt = spate_type_tuple(env, 2, fields);
    struct local_job lj = { 0 };
    spate_error err = { 0 };
    spate_stream *s;

    s = spate_set_parallelism(spate_source_generator(env, gen_forever, pt, 0, 0), 2);
    s = spate_set_parallelism(spate_sum(spate_key_by_field(s, 0), 1), 2);
    spate_sink(s, slow_sink);
    local_start(&lj, env);
    local_cancel(&lj);
    cr_assert_eq(local_join(&lj, &err), lj.ntasks);
    cr_assert_eq(err.code, SPATE_ECANCELED, "%s", err.message);
    cr_assert(strstr(err.message, "was cancelled") != NULL, "%s", err.message);
    local_free(&lj);
    env_free(env);
}

static void
fail_at(spate_ctx *ctx, const void *in, void *out)
{
    if (((const struct pair *)in)->count == 1 && ((const struct pair *)in)->key == 5)
        spate_ctx_fail(ctx, "key %lld is not allowed", (long long)((const struct pair *)in)->key);
    *(struct pair *)out = *(const struct pair *)in;
}

Test(stream_task, a_failing_function_fails_its_task_and_its_consumers_end, .timeout = 60)
{
    spate_env *env = env_new(NULL, NULL);
    const spate_type *fields[] = { spate_type_int64(), spate_type_int64() };
    const spate_type *pt = spate_type_tuple(env, 2, fields);
    struct local_job lj = { 0 };
    spate_error err = { 0 };
    spate_stream *s;

    s = spate_source_generator(env, gen_forever, pt, 0, 0);
    s = spate_map(s, fail_at, pt);
    s = spate_set_parallelism(spate_sum(spate_key_by_field(s, 0), 1), 2);
    spate_sink(s, slow_sink);
    local_start(&lj, env);
    /* The source fails with the function's text; the others are cancelled. */
    cr_assert_eq(local_join(&lj, &err), lj.ntasks);
    cr_assert(strstr(err.message, "key 5 is not allowed") != NULL, "%s", err.message);
    local_free(&lj);
    env_free(env);
}
