/* Unit tests of src/streaming/stream_task.c: whole jobs run as task threads
 * over one network environment (local channels), at several parallelisms and
 * with every partitioner; results are checked against what the test computes
 * itself. Cancellation and user failures end the tasks. And keyed_run.h's
 * run of keyed records read in place, over a buffer the test writes. */
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

/* ---- keyed_run.h: a run of keyed records read in place ---- */

#include "streaming/keyed_run.h"

#define RUN_PLAIN 16
#define RUN_LEN   (RECORD_LENGTH_BYTES + ELEMENT_KEYED_TS_HEADER + RUN_PLAIN)

/* What a run handed on: each record's key hash, timestamp and first field,
 * and the key hashes told ahead. */
struct run_seen {
    uint64_t hash[64], told[64];
    int64_t ts[64], first[64];
    int n, ntold;
};

static struct run_seen seen;

static void
run_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    (void)op;
    cr_assert(meta->has_key_hash);
    seen.hash[seen.n] = meta->key_hash;
    seen.ts[seen.n] = meta->timestamp;
    memcpy(&seen.first[seen.n], rec, 8);
    seen.n++;
}

static void
run_ahead(const void *data, uint64_t key_hash)
{
    cr_assert_eq(data, &seen);
    seen.told[seen.ntold++] = key_hash;
}

/* Record i of a timed keyed run, at buf + i * RUN_LEN: key hash 1000 + i,
 * timestamp 10 * i, fields i and -i. */
static void
put_record(uint8_t *buf, int i, uint8_t tag)
{
    uint8_t *p = buf + (size_t)i * RUN_LEN;
    uint32_t len = ELEMENT_KEYED_TS_HEADER + RUN_PLAIN;
    uint64_t hash = 1000 + (uint64_t)i;
    int64_t ts = 10 * (int64_t)i, f[2] = { i, -i };

    memcpy(p, &len, 4);
    p[4] = tag;
    memcpy(p + 5, &ts, 8);
    memcpy(p + 13, &hash, 8);
    memcpy(p + 21, f, sizeof f);
}

/* Runs keyed_run over buf[0, size) with at most max records. */
static int
run_over(const uint8_t *buf, size_t size, int max, const uint8_t **pos)
{
    _Alignas(16) uint8_t rec[RUN_PLAIN];

    memset(&seen, 0, sizeof seen);
    *pos = buf;
    return keyed_run_either(NULL, run_process, run_ahead, &seen, rec, RUN_PLAIN, pos, buf + size,
                            max, true);
}

Test(keyed_run, takes_whole_records_of_its_shape_and_tells_each_one_eight_ahead)
{
    static uint8_t buf[32 * RUN_LEN];
    const uint8_t *pos;
    int k;

    for (int i = 0; i < 32; i++)
        put_record(buf, i, ELEMENT_KEYED_TS_TAG);
    /* 20 whole records and half of the 21st. */
    k = run_over(buf, 20 * RUN_LEN + RUN_LEN / 2, 100, &pos);
    cr_assert_eq(k, 20);
    cr_assert_eq(pos, buf + 20 * RUN_LEN, "the run ends before the record cut short");
    for (int i = 0; i < 20; i++) {
        cr_assert_eq(seen.hash[i], 1000 + (uint64_t)i);
        cr_assert_eq(seen.ts[i], 10 * i);
        cr_assert_eq(seen.first[i], i);
    }
    /* Told ahead only of records the buffer holds whole: 8 to 19. */
    cr_assert_eq(seen.ntold, 12);
    for (int i = 0; i < 12; i++)
        cr_assert_eq(seen.told[i], 1000 + (uint64_t)i + 8);

    /* At most max. */
    k = run_over(buf, sizeof buf, 5, &pos);
    cr_assert_eq(k, 5);
    cr_assert_eq(pos, buf + 5 * RUN_LEN);
    cr_assert_eq(seen.ntold, 5);
    cr_assert_eq(seen.told[4], 1000 + 12);
    cr_assert_eq(run_over(buf, sizeof buf, 0, &pos), 0);
    cr_assert_eq(run_over(buf, sizeof buf, -1, &pos), 0);
    cr_assert_eq(pos, buf);

    /* Exactly nine records: the first is told of the last. */
    k = run_over(buf, 9 * RUN_LEN, 100, &pos);
    cr_assert_eq(k, 9);
    cr_assert_eq(seen.ntold, 1);
    cr_assert_eq(seen.told[0], 1000 + 8);
}

Test(keyed_run, stops_at_a_record_of_another_shape)
{
    static uint8_t buf[32 * RUN_LEN];
    const uint8_t *pos;
    int k;

    for (int i = 0; i < 32; i++)
        put_record(buf, i, i == 10 ? ELEMENT_KEYED_TAG : ELEMENT_KEYED_TS_TAG);
    k = run_over(buf, sizeof buf, 100, &pos);
    cr_assert_eq(k, 10);
    cr_assert_eq(pos, buf + 10 * RUN_LEN);
    cr_assert_eq(seen.n, 10);
    /* Of another length. */
    put_record(buf, 10, ELEMENT_KEYED_TS_TAG);
    buf[13 * RUN_LEN] = 3;
    k = run_over(buf, sizeof buf, 100, &pos);
    cr_assert_eq(k, 13);
    cr_assert_eq(pos, buf + 13 * RUN_LEN);
}
