/* Unit tests of the operators, chains, exchange outputs and element framing,
 * run synchronously at parallelism 1: each vertex's chain runs to its end,
 * its exchanges collect serialized elements in memory, and the next vertex's
 * head is fed by deserializing them — the path records take between tasks,
 * minus the network. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "connectors/connectors.h"
#include "core/alloc.h"
#include "streaming/accumulators.h"
#include "streaming/exchange_output.h"
#include "state/heap_keyed_backend.h"
#include "streaming/operator_chain.h"
#include "streaming/stream_element.h"
#include "streaming/types.h"
#include "sync_runner.h"

/* ---- user functions ---- */

struct word_count {
    spate_str word;
    int64_t count;
};

static void
split(spate_ctx *ctx, const void *in)
{
    const spate_str *line = in;
    size_t i = 0;

    while (i < line->len) {
        struct word_count wc;
        size_t j;

        while (i < line->len && line->data[i] == ' ')
            i++;
        for (j = i; j < line->len && line->data[j] != ' '; j++)
            ;
        if (j > i) {
            wc.word.data = line->data + i;
            wc.word.len = j - i;
            wc.count = 1;
            spate_emit(ctx, &wc);
        }
        i = j;
    }
}

struct result {
    char lines[64][64];
    int n;
};

static void
collect_sink(spate_ctx *ctx, const void *in)
{
    const struct word_count *wc = in;
    struct result *r = *(struct result *const *)spate_ctx_params(ctx, NULL);

    snprintf(r->lines[r->n++], 64, "%.*s %lld", (int)wc->word.len, wc->word.data,
             (long long)wc->count);
}

Test(operators, word_count_through_a_keyed_exchange)
{
    static const char *lines[] = { "to be or not", "to be", "  that is   the question" };
    spate_env *env = env_new(NULL, NULL);
    const spate_type *fields[] = { spate_type_string(), spate_type_int64() };
    const spate_type *wc = spate_type_tuple(env, 2, fields);
    struct result r = { 0 }, *rp = &r;
    struct accumulators acc;
    char *failure;
    spate_stream *s;

    accumulators_init(&acc);
    s = spate_flat_map(spate_source_strings(env, lines, 3), split, wc);
    s = spate_sum(spate_key_by_field(s, 0), 1);
    spate_params(spate_sink(s, collect_sink), &rp, sizeof rp);
    sync_run_env(env, &acc, &failure);
    cr_assert_null(failure);
    cr_assert_eq(r.n, 10);
    cr_assert_str_eq(r.lines[0], "to 1");
    cr_assert_str_eq(r.lines[4], "to 2");
    cr_assert_str_eq(r.lines[5], "be 2");
    cr_assert_str_eq(r.lines[9], "question 1");
    accumulators_release(&acc);
    env_free(env);
}

struct tagged_count {
    spate_str word;
    int64_t tag;
    int64_t count;
};

static void
collect_tagged(spate_ctx *ctx, const void *in)
{
    const struct tagged_count *tc = in;
    struct result *r = *(struct result *const *)spate_ctx_params(ctx, NULL);

    snprintf(r->lines[r->n++], 64, "%.*s %lld %lld", (int)tc->word.len, tc->word.data,
             (long long)tc->tag, (long long)tc->count);
}

/* A sum keeps the first record's fields other than the summed one, as
 * Flink's: a pair of the key and its count is emitted as the record with
 * its count replaced (sum_of_pair), any other shape from the stored value,
 * whose tag is the first record's. */
Test(operators, sum_keeps_the_first_records_other_fields)
{
    spate_env *env = env_new(NULL, NULL);
    const spate_type *fields[] = { spate_type_string(), spate_type_int64(), spate_type_int64() };
    const spate_type *tt = spate_type_tuple(env, 3, fields);
    struct tagged_count recs[] = {
        { { "ab", 2 }, 1, 5 }, { { "cd", 2 }, 2, 1 }, { { "ab", 2 }, 3, 7 }, { { "ab", 2 }, 4, -2 }
    };
    struct result r = { 0 }, *rp = &r;
    struct accumulators acc;
    char *failure;

    accumulators_init(&acc);
    spate_params(
        spate_sink(spate_sum(spate_key_by_field(spate_source_collection(env, tt, recs, 4), 0), 2),
                   collect_tagged),
        &rp, sizeof rp);
    sync_run_env(env, &acc, &failure);
    cr_assert_null(failure);
    cr_assert_eq(r.n, 4);
    cr_assert_str_eq(r.lines[0], "ab 1 5");
    cr_assert_str_eq(r.lines[1], "cd 2 1");
    cr_assert_str_eq(r.lines[2], "ab 1 12");
    cr_assert_str_eq(r.lines[3], "ab 1 10");
    accumulators_release(&acc);
    env_free(env);
}

static void
times_ten(spate_ctx *ctx, const void *in, void *out)
{
    const int64_t *factor = spate_ctx_params(ctx, NULL);

    *(int64_t *)out = *(const int64_t *)in * *factor;
}

static bool
odd(spate_ctx *ctx, const void *in)
{
    (void)ctx;
    return *(const int64_t *)in % 2 != 0;
}

static void
gen_index(spate_ctx *ctx, uint64_t i, void *out)
{
    (void)ctx;
    *(int64_t *)out = (int64_t)i;
}

static void
max_reduce(spate_ctx *ctx, const void *acc, const void *in, void *out)
{
    (void)ctx;
    *(int64_t *)out =
        *(const int64_t *)acc > *(const int64_t *)in ? *(const int64_t *)acc : *(const int64_t *)in;
}

static spate_bytes
mod3_key(spate_ctx *ctx, const void *in, void *scratch, size_t cap)
{
    (void)ctx;
    (void)cap;
    *(int64_t *)scratch = *(const int64_t *)in % 3;
    return (spate_bytes){ scratch, 8 };
}

static void
count_sink(spate_ctx *ctx, const void *in)
{
    static spate_counter *c;
    int64_t *last = *(int64_t *const *)spate_ctx_params(ctx, NULL);

    if (c == NULL)
        c = spate_ctx_counter(ctx, "records");
    spate_counter_add(spate_ctx_counter(ctx, "records"), 1);
    last[*(const int64_t *)in % 3] = *(const int64_t *)in;
}

Test(operators, generator_map_filter_reduce_and_accumulators)
{
    spate_env *env = env_new(NULL, NULL);
    int64_t factor = 10, last[3] = { -1, -1, -1 }, *lp = last;
    struct accumulators acc;
    char *failure;
    spate_stream *s;

    accumulators_init(&acc);
    s = spate_source_generator(env, gen_index, spate_type_int64(), 1000, 0);
    s = spate_filter(s, odd);
    s = spate_params(spate_map(s, times_ten, spate_type_int64()), &factor, sizeof factor);
    s = spate_reduce(spate_key_by(s, mod3_key), max_reduce);
    spate_params(spate_sink(s, count_sink), &lp, sizeof lp);
    sync_run_env(env, &acc, &failure);
    cr_assert_null(failure);
    /* Odd numbers below 1000, times ten: 500 records; the running max per
     * key x % 3 ends at the largest of each class. */
    cr_assert_eq(acc.count, 1);
    cr_assert_eq(acc.counters[0]->value, 500);
    cr_assert_eq(last[0], 9990);
    cr_assert_eq(last[1], 9970);
    cr_assert_eq(last[2], 9950);
    accumulators_release(&acc);
    env_free(env);
}

static void
fail_on_seven(spate_ctx *ctx, const void *in, void *out)
{
    if (*(const int64_t *)in == 7)
        spate_ctx_fail(ctx, "record %lld is unlucky", (long long)*(const int64_t *)in);
    *(int64_t *)out = *(const int64_t *)in;
}

Test(operators, a_failing_user_function_fails_the_task_with_its_text)
{
    spate_env *env = env_new(NULL, NULL);
    struct accumulators acc;
    char *failure;
    spate_stream *s;

    accumulators_init(&acc);
    s = spate_source_generator(env, gen_index, spate_type_int64(), 100, 0);
    spate_sink_print(spate_map(s, fail_on_seven, spate_type_int64()));
    sync_run_env(env, &acc, &failure);
    cr_assert_not_null(failure);
    cr_assert_str_eq(failure, "record 7 is unlucky");
    free(failure);
    accumulators_release(&acc);
    env_free(env);
}

Test(operators, text_file_sink_and_collection_source)
{
    char dir[] = "/tmp/spate-test-ops-XXXXXX";
    char path[256], line[64];
    spate_env *env = env_new(NULL, NULL);
    int64_t values[] = { 3, 1, 4, 1, 5 };
    struct accumulators acc;
    char *failure;
    FILE *f;
    int n = 0;

    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/out", dir);
    accumulators_init(&acc);
    spate_sink_text_file(spate_source_collection(env, spate_type_int64(), values, 5), path);
    sync_run_env(env, &acc, &failure);
    cr_assert_null(failure);
    /* A folder of part files, at p1 too: the one of subtask 0, committed
     * at the end of the input. */
    snprintf(path, sizeof path, "%s/out/part-0-0", dir);
    f = fopen(path, "r");
    cr_assert_not_null(f, "no committed part file %s", path);
    while (fgets(line, sizeof line, f) != NULL)
        cr_assert_eq(atoll(line), values[n++]);
    cr_assert_eq(n, 5);
    fclose(f);
    unlink(path);
    snprintf(path, sizeof path, "%s/out", dir);
    rmdir(path);
    rmdir(dir);
    accumulators_release(&acc);
    env_free(env);
}

Test(operators, element_framing_round_trip_and_garbage)
{
    struct record_meta m = { 1234, 0xabcdef, true };
    uint8_t buf[32];
    size_t n = element_write_record_header(&m, buf);
    struct element e;

    cr_assert_eq(n, 17);
    cr_assert_eq(element_read(buf, n, &e), 0);
    cr_assert_eq(e.meta.timestamp, 1234);
    cr_assert_eq(e.meta.key_hash, 0xabcdef);
    cr_assert_eq(e.body_len, 0);
    n = element_write_watermark(99, buf);
    cr_assert_eq(element_read(buf, n, &e), 0);
    cr_assert_eq(e.kind, ELEMENT_WATERMARK);
    cr_assert_eq(e.watermark, 99);
    buf[0] = 0xff;
    cr_assert_eq(element_read(buf, n, &e), SPATE_EPROTO);
    buf[0] = ELEMENT_RECORD | ELEMENT_HAS_TIMESTAMP;
    cr_assert_eq(element_read(buf, 4, &e), SPATE_EPROTO);
    cr_assert_eq(element_read(buf, 0, &e), SPATE_EPROTO);
}

Test(operators, pointwise_wiring_is_consistent)
{
    for (int np = 1; np <= 9; np++) {
        for (int nc = 1; nc <= 9; nc++) {
            int reads[16] = { 0 };

            for (int p = 0; p < np; p++) {
                int first, count;

                jg_pointwise_targets(p, np, nc, &first, &count);
                cr_assert_geq(count, 1);
                for (int c = first; c < first + count; c++) {
                    int f2, n2;

                    reads[c]++;
                    jg_pointwise_sources(c, np, nc, &f2, &n2);
                    cr_assert(p >= f2 && p < f2 + n2, "np %d nc %d: %d -> %d not mutual", np, nc, p,
                              c);
                }
            }
            for (int c = 0; c < nc; c++)
                cr_assert_geq(reads[c], 1, "np %d nc %d: consumer %d reads nothing", np, nc, c);
        }
    }
}

/* ---- the generator's positions: snapshot anywhere, restore anywhere ---- */

#define GEN_COUNT 1000 /* not a multiple of the 128 splits: a short last round */

static void
mark_index(spate_ctx *ctx, const void *in)
{
    uint8_t *seen = **(uint8_t * *const *)spate_ctx_params(ctx, NULL); /* where marks go now */
    int64_t i = *(const int64_t *)in;

    cr_assert(i >= 0 && i < GEN_COUNT, "index %lld out of range", (long long)i);
    seen[i]++;
}

/* The generator chained to a sink, as subtask `subtask` of `p`. */
static struct operator_chain *
gen_chain(struct job_graph *jg, int subtask, int p, struct accumulators *acc)
{
    struct task_info task = { .subtask = subtask,
                              .parallelism = p,
                              .max_parallelism = jg->vertices[0].max_parallelism,
                              .task_name = "g",
                              .accumulators = acc,
                              .print_out = stdout,
                              .connectors = connectors_builtin(),
                              .state_backend = test_state_backend() };
    struct operator_chain *chain;
    spate_error err = { 0 };

    cr_assert_eq(operator_chain_new(jg, 0, &task, NULL, &chain, &err), 0, "%s", err.message);
    return chain;
}

static int
gen_poll(struct operator_chain *chain, int budget)
{
    struct stream_operator *head = operator_chain_head(chain);
    spate_error err = { 0 };
    enum source_status st = head->vt->poll(head, budget, &err);

    cr_assert_eq(err.code, 0, "%s", err.message);
    return st;
}

/* A subtask at parallelism 1 runs a while (budgets that end mid-round),
 * snapshots, and emits some more (which the restore must not remember);
 * two subtasks restored from the snapshot's splits then run to the end:
 * every index below the count exactly once, from the first run's part
 * before the snapshot and the second run. */
Test(operators,
     generator_positions_survive_a_snapshot_mid_round_and_a_restore_at_another_parallelism)
{
    for (int stop = 1; stop < 1000; stop += 137) {
        spate_env *env = env_new(NULL, NULL);
        uint8_t before[GEN_COUNT] = { 0 }, after[GEN_COUNT] = { 0 }, *cur = before, **sp = &cur;
        struct accumulators acc;
        struct job_graph *jg;
        struct operator_chain *a, *b[2];
        struct byte_buf snap = { 0 };
        spate_error err = { 0 };
        int emitted = 0, n = 0;

        spate_params(
            spate_sink(spate_source_generator(env, gen_index, spate_type_int64(), GEN_COUNT, 0),
                       mark_index),
            &sp, sizeof sp);
        cr_assert_eq(job_graph_build(env, "g", &jg, &err), 0, "%s", err.message);
        cr_assert_eq(jg->nvertices, 1);
        accumulators_init(&acc);
        a = gen_chain(jg, 0, 1, &acc);
        while (emitted < stop) {
            int budget = MIN(37, stop - emitted);

            cr_assert_eq(gen_poll(a, budget), SOURCE_MORE);
            emitted += budget;
        }
        operator_chain_head(a)->vt->snapshot_state(operator_chain_head(a), 1, &snap);
        cur = after; /* what comes after the snapshot is lost with the failure */
        gen_poll(a, 50);
        memset(after, 0, sizeof after);
        operator_chain_free(a);

        b[0] = gen_chain(jg, 0, 2, &acc);
        b[1] = gen_chain(jg, 1, 2, &acc);
        for (size_t off = 0; off < snap.len; n++) {
            uint32_t len;
            struct stream_operator *h = operator_chain_head(b[n % 2]);

            memcpy(&len, snap.data + off, 4);
            cr_assert_eq(h->vt->restore_state(h, snap.data + off + 4, len, &err), 0, "%s",
                         err.message);
            off += 4 + len;
        }
        cr_assert_eq(n, 128, "one element per split");
        for (int i = 0; i < 2; i++)
            while (gen_poll(b[i], 29) != SOURCE_END)
                ;
        for (int i = 0; i < GEN_COUNT; i++)
            cr_assert_eq(before[i] + after[i], 1,
                         "index %d emitted %d times before the snapshot at %d, %d after", i,
                         before[i], stop, after[i]);
        operator_chain_free(b[0]);
        operator_chain_free(b[1]);
        free(snap.data);
        accumulators_release(&acc);
        job_graph_free(jg);
        env_free(env);
    }
}

static void
discard(struct output *self, const void *rec, const struct record_meta *meta)
{
    (void)self, (void)rec, (void)meta;
}

static void
discard_watermark(struct output *self, int64_t watermark)
{
    (void)self, (void)watermark;
}

Test(operators, a_file_sink_subtask_numbers_its_files_past_its_own_only)
{
    /* Another writer's files are not its: subtask 1 begins at part-1-0
     * whether subtask 0's first file is there yet or not (the names of a
     * run hung on which came first), and past its own committed ones. */
    char dir[] = "/tmp/spate-test-ops-XXXXXX";
    char path[300];
    spate_env *env = env_new(NULL, NULL);
    int64_t v = 7;
    struct output out = { .collect = discard, .emit_watermark = discard_watermark };
    struct task_info task = { 0 };
    const struct record_meta meta = { RECORD_NO_TIMESTAMP, 0, false };
    spate_stream *sink;
    struct operator_settings settings;
    struct stream_operator *op;
    spate_error err = { 0 };
    FILE *f;

    cr_assert_not_null(mkdtemp(dir));
    sink = spate_sink_text_file(spate_source_collection(env, spate_type_int64(), &v, 1), dir);
    task.connectors = connectors_builtin();
    task.subtask = 1;
    task.parallelism = 2;
    task.max_parallelism = 128;
    task.task_name = "sink";
    snprintf(path, sizeof path, "%s/part-0-3", dir);
    cr_assert_not_null(f = fopen(path, "w"));
    fclose(f);
    stream_node_settings(sink, &settings);
    for (int run = 0; run < 2; run++) {
        cr_assert_eq(operator_new(&settings, 0, &task, &out, &op, &err), 0, "%s", err.message);
        operator_process(op, &v, &meta);
        op->vt->end_input(op);
        operator_free(op);
        /* Run 0 wrote part-1-0; run 1, into the same folder, part-1-1. */
        snprintf(path, sizeof path, "%s/part-1-%d", dir, run);
        cr_assert_eq(access(path, F_OK), 0, "run %d: no %s", run, path);
    }
    snprintf(path, sizeof path, "rm -rf '%s'", dir);
    cr_assert_eq(system(path), 0);
    env_free(env);
}

/* ---- runs through chained operators (operator_vtable.process_run) ---- */

#define RUN_RECS 300 /* records fed per case */

enum keep { KEEP_THIRD, KEEP_NONE, KEEP_ALL };

/* Keeps a record by its field 1 and the filter's parameter. */
static bool
keep_by_mode(spate_ctx *ctx, const void *in)
{
    enum keep mode = *(const enum keep *)spate_ctx_params(ctx, NULL);
    int64_t v = ((const int64_t *)in)[1];

    return mode == KEEP_ALL || (mode == KEEP_THIRD && v % 3 == 0);
}

/* A record of 3 or 5 int64s to a pair (a size of its own): its fields'
 * sum and the timestamp the function sees. */
static void
to_pair(spate_ctx *ctx, const void *in, void *out)
{
    const int64_t *r = in;
    int nfields = *(const int *)spate_ctx_params(ctx, NULL);
    int64_t *o = out, sum = 0;

    for (int i = 0; i < nfields; i++)
        sum += r[i] * (i + 1);
    o[0] = sum;
    o[1] = spate_ctx_timestamp(ctx);
}

/* What reaches the chain's exchange: each record (a pair) with its
 * timestamp, and how (one collect each, or in runs, when it takes them). */
struct run_seen {
    struct output base;
    int64_t pair[RUN_RECS][2], ts[RUN_RECS];
    int n, by_collect, by_run, runs;
};

static void
run_seen_one(struct run_seen *o, const int64_t *pair, int64_t ts)
{
    cr_assert_lt(o->n, RUN_RECS, "more records than went in");
    o->pair[o->n][0] = pair[0];
    o->pair[o->n][1] = pair[1];
    o->ts[o->n++] = ts;
}

static void
run_seen_collect(struct output *self, const void *rec, const struct record_meta *meta)
{
    struct run_seen *o = (struct run_seen *)self;

    cr_assert(!meta->has_key_hash);
    run_seen_one(o, rec, meta->timestamp);
    o->by_collect++;
}

static void
run_seen_run(struct output *self, const void *recs, size_t stride, const int64_t *ts, int n)
{
    struct run_seen *o = (struct run_seen *)self;

    cr_assert(n > 0, "an empty run was handed on");
    cr_assert_geq(stride, 2 * sizeof(int64_t));
    for (int i = 0; i < n; i++)
        run_seen_one(o, (const int64_t *)((const uint8_t *)recs + (size_t)i * stride),
                     ts != NULL ? ts[i] : RECORD_NO_TIMESTAMP);
    o->by_run += n;
    o->runs++;
}

static void
run_seen_watermark(struct output *self, int64_t watermark)
{
    UNUSED(self);
    UNUSED(watermark);
}

static void
null_sink(spate_ctx *ctx, const void *in)
{
    UNUSED(ctx);
    UNUSED(in);
}

static void
never_generate(spate_ctx *ctx, uint64_t i, void *out)
{
    UNUSED(ctx);
    UNUSED(i);
    UNUSED(out);
    cr_assert_fail("the source is not polled");
}

/* Which operators the chain has between its source and its exchange. */
enum { RUN_FILTER = 1, RUN_MAP = 2 };

/* source -> filter(keep) -> map(to_pair) -> keyBy, or without one of the
 * two (ops): the source's chain, its exchange `seen`; records of nfields
 * int64s. */
static struct operator_chain *
run_chain(spate_env *env, unsigned ops, int nfields, enum keep keep, struct run_seen *seen,
          struct job_graph **jg)
{
    const spate_type *f[] = { spate_type_int64(), spate_type_int64(), spate_type_int64(),
                              spate_type_int64(), spate_type_int64() };
    const spate_type *in = spate_type_tuple(env, nfields, f), *pair = spate_type_tuple(env, 2, f);
    struct task_info task = { .parallelism = 1,
                              .max_parallelism = 128,
                              .task_name = "runs",
                              .print_out = stdout,
                              .connectors = connectors_builtin() };
    struct output *outs[] = { &seen->base };
    struct operator_chain *chain;
    spate_error err = { 0 };
    spate_stream *s = spate_source_generator(env, never_generate, in, 0, 0);

    if (ops & RUN_FILTER)
        s = spate_params(spate_filter(s, keep_by_mode), &keep, sizeof keep);
    if (ops & RUN_MAP)
        s = spate_params(spate_map(s, to_pair, pair), &nfields, sizeof nfields);
    spate_sink(spate_key_by_field(s, 0), null_sink);
    cr_assert_eq(job_graph_build(env, "runs", jg, &err), 0, "%s", err.message);
    cr_assert_eq((*jg)->vertices[0].nops, 1 + __builtin_popcount(ops), "the operators are chained");
    cr_assert_eq(operator_chain_new(*jg, 0, &task, outs, &chain, &err), 0, "%s", err.message);
    return chain;
}

/* Record i of nfields int64s and its timestamp. */
static void
run_record(int64_t *r, int nfields, int i, int64_t *ts)
{
    for (int f = 0; f < nfields; f++)
        r[f] = (int64_t)((uint64_t)i * 2654435761u % 1000) + f;
    *ts = 1000 + i / 3;
}

/* Feeds RUN_RECS records of nfields int64s, stride bytes apart, to the
 * operator after the chain's source: one collect each (len 0), else in
 * runs of len (the last one shorter), with their timestamps (timed) or
 * without. */
static void
feed(struct operator_chain *chain, int nfields, size_t stride, int len, bool timed)
{
    struct output *in = operator_chain_head(chain)->out;
    static int64_t recs[RUN_RECS * 8], ts[RUN_RECS];

    cr_assert(stride % 8 == 0 && stride <= 64);
    for (int i = 0; i < RUN_RECS; i++)
        run_record(recs + (size_t)i * stride / 8, nfields, i, &ts[i]);
    for (int i = 0; i < RUN_RECS;) {
        int n = len == 0 ? 1 : MIN(len, RUN_RECS - i);
        const int64_t *rec = recs + (size_t)i * stride / 8;

        if (len == 0) {
            struct record_meta m = { timed ? ts[i] : RECORD_NO_TIMESTAMP, 0, false };

            in->collect(in, rec, &m);
        } else {
            cr_assert_not_null(in->collect_run, "the operator takes runs");
            in->collect_run(in, rec, stride, timed ? &ts[i] : NULL, n);
        }
        i += n;
    }
}

/* What the exchange of run_chain(ops) gets from RUN_RECS records, fed in
 * runs of len (0: one by one), stride bytes apart; the exchange takes runs
 * (takes_runs) or not. */
static void
run_through(unsigned ops, int nfields, size_t stride, enum keep keep, int len, bool timed,
            bool takes_runs, struct run_seen *seen)
{
    spate_env *env = env_new(NULL, NULL);
    struct operator_chain *chain;
    struct job_graph *jg;

    memset(seen, 0, sizeof *seen);
    seen->base.collect = run_seen_collect;
    seen->base.emit_watermark = run_seen_watermark;
    seen->base.collect_run = takes_runs ? run_seen_run : NULL;
    chain = run_chain(env, ops, nfields, keep, seen, &jg);
    cr_assert_eq(operator_chain_head(chain)->out->collect_run != NULL, takes_runs,
                 "runs go through the chain exactly when its exchange takes them");
    feed(chain, nfields, stride, len, timed);
    cr_assert_eq(chain->ops[1]->records_in, RUN_RECS);
    for (int i = 1; i < chain->nops; i++) {
        if (i > 1)
            cr_assert_eq(chain->ops[i]->records_in, (uint64_t)seen->n);
        cr_assert_eq(chain->ops[i]->records_out, (uint64_t)seen->n);
    }
    operator_chain_free(chain);
    job_graph_free(jg);
    env_free(env);
}

/* Runs of 1 to 64 records and more, through a filter that keeps a third,
 * none or all, a map that changes the record's size (24 or 40 bytes to
 * 16), or both; the runs' records at the stride the filter has an
 * instance for (the size rounded up to 16) or another: exactly the
 * records, timestamps and order of one record at a time, and the
 * timestamps the map's function saw; a filter that keeps none hands
 * nothing on. */
Test(operators, a_filter_and_map_given_runs_emit_what_they_emit_one_record_at_a_time)
{
    static const int lens[] = { 1, 2, 3, 7, 31, 63, 64, 65, 100, RUN_RECS };
    static struct run_seen one, runs;

    for (unsigned ops = RUN_FILTER; ops <= (RUN_FILTER | RUN_MAP); ops++)
        for (int nfields = 3; nfields <= 5; nfields += 2)
            for (size_t stride = ((size_t)nfields * 8 + 15) & ~(size_t)15; stride <= 64;
                 stride += 16)
                for (enum keep keep = KEEP_THIRD; keep <= KEEP_ALL; keep++)
                    for (int timed = 0; timed <= 1; timed++) {
                        enum keep k = (ops & RUN_FILTER) ? keep : KEEP_ALL;
                        int want = 0;

                        run_through(ops, nfields, stride, k, 0, timed, false, &one);
                        cr_assert_eq(one.by_collect, one.n);
                        for (int i = 0; i < RUN_RECS; i++) {
                            int64_t r[5], ts;

                            run_record(r, nfields, i, &ts);
                            want += k == KEEP_ALL || (k == KEEP_THIRD && r[1] % 3 == 0);
                        }
                        cr_assert_eq(one.n, want);
                        cr_assert(k != KEEP_THIRD || (want > 50 && want < 150), "%d kept", want);
                        for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
                            run_through(ops, nfields, stride, k, lens[l], timed, true, &runs);
                            cr_assert_eq(runs.n, one.n,
                                         "ops %u, %d fields, stride %zu, keep %d, runs of %d", ops,
                                         nfields, stride, (int)k, lens[l]);
                            cr_assert_eq(runs.by_collect, 0, "the exchange gets runs only");
                            if (k == KEEP_NONE)
                                cr_assert_eq(runs.runs, 0,
                                             "a filter that keeps none hands nothing");
                            for (int i = 0; i < one.n; i++) {
                                cr_assert_eq(runs.pair[i][0], one.pair[i][0],
                                             "ops %u, %d fields, keep %d, runs of %d: record %d",
                                             ops, nfields, (int)k, lens[l], i);
                                cr_assert_eq(runs.pair[i][1], one.pair[i][1]);
                                cr_assert_eq(runs.ts[i], one.ts[i], "record %d's timestamp", i);
                                if (ops & RUN_MAP)
                                    cr_assert_eq(runs.pair[i][1],
                                                 timed ? runs.ts[i] : RECORD_NO_TIMESTAMP,
                                                 "the map's function sees the timestamp");
                            }
                        }
                    }
}
