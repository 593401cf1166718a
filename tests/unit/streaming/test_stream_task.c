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

/* ---- sums of words: keyed records of their own lengths ---- */

/* Words of 1 to 299 bytes: short ones whose sums lie in their state's
 * slots, long ones in heap blocks, and some of 128 bytes or more (a
 * length of two bytes in their serialized form). */
#define WORDS 61
static char vocab[WORDS][300];
static size_t vocab_len[WORDS];

static void
make_vocab(void)
{
    for (int w = 0; w < WORDS; w++) {
        vocab_len[w] = w < 40 ? (size_t)(1 + w % 20) : (size_t)(w * 5 - 5);
        for (size_t i = 0; i < vocab_len[w]; i++)
            vocab[w][i] = (char)('a' + (w * 7 + (int)i) % 26);
        /* Words of one length differ in their first byte. */
        vocab[w][0] = (char)('A' + w % 26);
    }
}

/* Record i: word i * 31 % WORDS, count i % 5 - 1 (negative ones too). */
static int
word_of(uint64_t i)
{
    return (int)(i * 31 % WORDS);
}

static int64_t
count_of(uint64_t i)
{
    return (int64_t)(i % 5) - 1;
}

struct word_sum {
    spate_str word;
    int64_t count;
};

struct sum_word { /* the count first: the word last in the serialized form */
    double count;
    spate_str word;
};

static void
gen_word_sum(spate_ctx *ctx, uint64_t i, void *out)
{
    (void)ctx;
    ((struct word_sum *)out)->word = (spate_str){ vocab[word_of(i)], vocab_len[word_of(i)] };
    ((struct word_sum *)out)->count = count_of(i);
}

static void
gen_sum_word(spate_ctx *ctx, uint64_t i, void *out)
{
    (void)ctx;
    ((struct sum_word *)out)->word = (spate_str){ vocab[word_of(i)], vocab_len[word_of(i)] };
    ((struct sum_word *)out)->count = (double)count_of(i) / 2;
}

/* Per word: the records of it the sink saw, the sum of their counts (the
 * running sums) and the last (a word's records reach one sink subtask,
 * in the order its sum made them). */
struct word_sums {
    pthread_mutex_t lock;
    int64_t records[WORDS];
    double sums[WORDS], last[WORDS];
};

static void
word_sums_add(struct word_sums *ws, spate_str word, double sum)
{
    int w = 0;

    while (w < WORDS && (word.len != vocab_len[w] || memcmp(word.data, vocab[w], word.len) != 0))
        w++;
    cr_assert_lt(w, WORDS, "a word the vocabulary does not have");
    pthread_mutex_lock(&ws->lock);
    ws->records[w]++;
    ws->sums[w] += sum;
    ws->last[w] = sum;
    pthread_mutex_unlock(&ws->lock);
}

static void
word_sum_sink(spate_ctx *ctx, const void *in)
{
    struct word_sums *ws = *(struct word_sums *const *)spate_ctx_params(ctx, NULL);
    const struct word_sum *r = in;

    word_sums_add(ws, r->word, (double)r->count);
}

static void
sum_word_sink(spate_ctx *ctx, const void *in)
{
    struct word_sums *ws = *(struct word_sums *const *)spate_ctx_params(ctx, NULL);
    const struct sum_word *r = in;

    word_sums_add(ws, r->word, r->count);
}

/* keyBy(word).sum(count) over N records, word first or count first, at
 * the given parallelisms: each word's running sums checked against the
 * test's own. */
static void
run_word_sums(bool count_first, int p_source, int p_sum)
{
    spate_env *env = env_new(NULL, NULL);
    const spate_type *ws_fields[] = { spate_type_string(), spate_type_int64() };
    const spate_type *sw_fields[] = { spate_type_double(), spate_type_string() };
    const spate_type *t =
        count_first ? spate_type_tuple(env, 2, sw_fields) : spate_type_tuple(env, 2, ws_fields);
    struct word_sums sums = { .lock = PTHREAD_MUTEX_INITIALIZER }, *sp = &sums;
    struct local_job lj = { 0 };
    spate_error err = { 0 };
    spate_stream *s;

    make_vocab();
    s = spate_set_parallelism(
        spate_source_generator(env, count_first ? gen_sum_word : gen_word_sum, t, N, 0), p_source);
    s = spate_set_parallelism(spate_sum(spate_key_by_field(s, count_first), !count_first), p_sum);
    spate_set_parallelism(
        spate_params(spate_sink(s, count_first ? sum_word_sink : word_sum_sink), &sp, sizeof sp),
        p_sum);
    local_start(&lj, env);
    cr_assert_eq(local_join(&lj, &err), 0, "%s", err.message);
    local_free(&lj);
    for (int w = 0; w < WORDS; w++) {
        int64_t n = 0, sum = 0, running = 0;

        /* The word's running sums in the order of its records (the counts
         * are small integers, or halves of them: the doubles add exactly). */
        for (uint64_t i = 0; i < N; i++)
            if (word_of(i) == w) {
                n++;
                sum += count_of(i);
                running += sum;
            }
        cr_assert_eq(sums.records[w], n, "word %d (%zu bytes): %lld records, not %lld", w,
                     vocab_len[w], (long long)sums.records[w], (long long)n);
        cr_assert_eq(sums.last[w], count_first ? (double)sum / 2 : (double)sum,
                     "word %d (%zu bytes)", w, vocab_len[w]);
        /* With one source, the order of its records. */
        if (p_source == 1)
            cr_assert_eq(sums.sums[w], count_first ? (double)running / 2 : (double)running,
                         "word %d (%zu bytes)", w, vocab_len[w]);
    }
    env_free(env);
}

Test(stream_task, sums_of_words_of_every_length, .timeout = 60)
{
    run_word_sums(false, 1, 1);
    run_word_sums(false, 2, 3);
    run_word_sums(true, 1, 1);
    run_word_sums(true, 2, 2);
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

/* ---- keyed_run_bodies: records of their own lengths ---- */

/* Element i at *at: untimed, key hash 5000 + i, a body of i % 7 + 1 bytes,
 * each the byte i; *at moves past it. */
static void
put_var_record(uint8_t **at, int i)
{
    uint32_t body = (uint32_t)(i % 7 + 1), len = ELEMENT_KEYED_HEADER + body;
    uint64_t hash = 5000 + (uint64_t)i;

    memcpy(*at, &len, 4);
    (*at)[4] = ELEMENT_KEYED_TAG;
    memcpy(*at + 5, &hash, 8);
    memset(*at + 13, i, body);
    *at += RECORD_LENGTH_BYTES + len;
}

struct bodies_seen {
    uint64_t hash[64], told[64];
    size_t len[64];
    const void *found[64];
    int n, ntold, refuse; /* the body of record refuse does not read */
};

static struct bodies_seen bseen;

static const void *
bodies_find(const void *data, uint64_t key_hash)
{
    cr_assert_eq(data, &bseen);
    bseen.told[bseen.ntold++] = key_hash;
    return (const void *)(uintptr_t)key_hash;
}

static bool
bodies_one(struct stream_operator *op, const void *data, const void *found, const uint8_t *body,
           size_t len, const struct record_meta *meta)
{
    (void)op;
    (void)data;
    if (bseen.n == bseen.refuse)
        return false;
    cr_assert(meta->has_key_hash);
    cr_assert_eq(meta->timestamp, RECORD_NO_TIMESTAMP);
    for (size_t i = 0; i < len; i++)
        cr_assert_eq(body[i], (uint8_t)(meta->key_hash - 5000));
    bseen.hash[bseen.n] = meta->key_hash;
    bseen.len[bseen.n] = len;
    bseen.found[bseen.n] = found;
    bseen.n++;
    return true;
}

static int
bodies_over(const uint8_t *buf, const uint8_t *end, int max, int refuse, const uint8_t **pos)
{
    memset(&bseen, 0, sizeof bseen);
    bseen.refuse = refuse;
    *pos = buf;
    return keyed_run_bodies(NULL, bodies_one, bodies_find, &bseen, pos, end, max);
}

Test(keyed_run, reads_records_of_their_own_lengths_once_each_and_finds_each_eight_ahead)
{
    static uint8_t buf[40 * 32];
    const uint8_t *starts[41], *pos;
    uint8_t *at = buf;
    int k;

    for (int i = 0; i < 40; i++) {
        starts[i] = at;
        put_var_record(&at, i);
    }
    starts[40] = at;
    /* 30 whole records and part of the 31st. */
    k = bodies_over(buf, starts[30] + 6, 100, -1, &pos);
    cr_assert_eq(k, 30);
    cr_assert_eq(pos, starts[30], "the run ends before the record cut short");
    cr_assert_eq(bseen.ntold, 30, "each record found once");
    for (int i = 0; i < 30; i++) {
        cr_assert_eq(bseen.hash[i], 5000 + (uint64_t)i);
        cr_assert_eq(bseen.len[i], (size_t)(i % 7 + 1));
        cr_assert_eq(bseen.told[i], 5000 + (uint64_t)i);
        cr_assert_eq(bseen.found[i], (const void *)(uintptr_t)(5000 + i), "what find said");
    }
    /* At most max: found up to KEYED_RUN_AHEAD past the last. */
    k = bodies_over(buf, starts[40], 5, -1, &pos);
    cr_assert_eq(k, 5);
    cr_assert_eq(pos, starts[5]);
    cr_assert_eq(bseen.ntold, 5 + KEYED_RUN_AHEAD);
    cr_assert_eq(bodies_over(buf, starts[40], 0, -1, &pos), 0);
    cr_assert_eq(bodies_over(buf, starts[40], -1, -1, &pos), 0);
    cr_assert_eq(pos, buf);
    /* A body that does not read ends the run at its record. */
    k = bodies_over(buf, starts[40], 100, 12, &pos);
    cr_assert_eq(k, 12);
    cr_assert_eq(pos, starts[12]);
    /* A record of another kind ends it too. */
    at = (uint8_t *)starts[20];
    at[4] = ELEMENT_WATERMARK;
    k = bodies_over(buf, starts[40], 100, -1, &pos);
    cr_assert_eq(k, 20);
    cr_assert_eq(pos, starts[20]);
    cr_assert_eq(bseen.ntold, 20);
}
