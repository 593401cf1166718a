/* Unit tests of src/connectors/connectors.c and of how streaming finds a
 * connector: the built-in table covers every source and sink kind, and a
 * kind missing from a task's table is a clear error, not a crash. The
 * generator hands an output that takes runs its records in runs. */
#include <criterion/criterion.h>
#include <stddef.h>
#include <string.h>

#include "connectors/connectors.h"
#include "streaming/operator.h"
#include "streaming/stream_graph.h"
#include "streaming/watermark_generator.h"

static void
discard(struct output *self, const void *rec, const struct record_meta *meta)
{
    (void)self;
    (void)rec;
    (void)meta;
}

static void
discard_watermark(struct output *self, int64_t watermark)
{
    (void)self;
    (void)watermark;
}

Test(connectors, the_builtin_table_has_every_source_and_sink_kind_once)
{
    const struct connector_table *t = connectors_builtin();
    /* The kinds that carry a configuration of their own (connector_config.h). */
    static const enum operator_kind kinds[] = {
        OP_SOURCE_COLLECTION, OP_SOURCE_GENERATOR, OP_SOURCE_SOCKET,  OP_SOURCE_FILE, OP_SINK_PRINT,
        OP_SINK_FILE,         OP_SOURCE_CONNECTOR, OP_SINK_CONNECTOR, OP_SOURCE,      OP_SINK_API
    };

    cr_assert_eq(t->count, sizeof kinds / sizeof kinds[0]);
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        int found = 0;

        for (size_t i = 0; i < t->count; i++) {
            const struct operator_vtable *vt = t->entries[i].vt;

            if (t->entries[i].kind != kinds[k])
                continue;
            found++;
            cr_assert_neq(vt->state, 0, "%s declares no state", operator_kind_name(kinds[k]));
            cr_assert(vt->open != NULL && vt->close != NULL);
            if (operator_kind_is_source(kinds[k]))
                cr_assert(vt->poll != NULL, "%s cannot poll", operator_kind_name(kinds[k]));
            else
                cr_assert(vt->process != NULL, "%s cannot take records",
                          operator_kind_name(kinds[k]));
        }
        cr_assert_eq(found, 1, "%s is in the table %d times", operator_kind_name(kinds[k]), found);
    }
}

Test(connectors, a_kind_missing_from_the_task_table_is_a_clear_error)
{
    spate_env *env = env_new(NULL, NULL);
    spate_stream *src = spate_source_text_file(env, "/nonexistent/in.txt");
    struct operator_settings settings;
    struct output out = { .collect = discard, .emit_watermark = discard_watermark };
    static const struct connector_entry only_print[] = { { OP_SINK_PRINT, NULL } };
    const struct connector_table print_table = { only_print, 1, NULL };
    struct task_info task = { 0 };
    struct stream_operator *op = NULL;
    spate_error err = { 0 };

    task.parallelism = 1;
    task.max_parallelism = 128;
    task.task_name = "files";
    stream_node_settings(src, &settings);
    /* No table at all, as a runner that installed none. */
    cr_assert_eq(operator_new(&settings, 0, &task, &out, &op, &err), SPATE_EINVAL);
    cr_assert_null(op);
    cr_assert_str_eq(err.message, "no connector for kind 'Source: File': the task's connector "
                                  "table (task_info.connectors) does not have it");
    /* A table without the kind. */
    task.connectors = &print_table;
    memset(&err, 0, sizeof err);
    cr_assert_eq(operator_new(&settings, 0, &task, &out, &op, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "no connector for kind 'Source: File'") != NULL, "%s",
              err.message);
    /* The built-in table has it. */
    task.connectors = connectors_builtin();
    memset(&err, 0, sizeof err);
    cr_assert_eq(operator_new(&settings, 0, &task, &out, &op, &err), 0, "%s", err.message);
    cr_assert_eq(op->conf, &src->conn.file_source, "the source reads its own configuration");
    operator_free(op);
    env_free(env);
}

Test(connectors, an_unknown_named_connector_is_a_clear_error_naming_it)
{
    spate_env *env = env_new(NULL, NULL);
    const char *const opts[] = { "topic", "in", NULL };
    spate_stream *src = spate_from_source(env, "no-such-thing", spate_type_string(), opts);
    struct operator_settings settings;
    struct output out = { .collect = discard, .emit_watermark = discard_watermark };
    struct task_info task = { 0 };
    struct stream_operator *op = NULL;
    spate_error err = { 0 };

    task.parallelism = 1;
    task.max_parallelism = 128;
    task.task_name = "named";
    task.connectors = connectors_builtin();
    stream_node_settings(src, &settings);
    cr_assert_eq(operator_new(&settings, 0, &task, &out, &op, &err), SPATE_ENOENT, "%s",
                 err.message);
    cr_assert_null(op);
    cr_assert(strstr(err.message, "unknown connector 'no-such-thing'") != NULL, "%s", err.message);
    cr_assert(strstr(err.message, "libspate_no-such-thing.so") != NULL, "%s", err.message);
    env_free(env);
}

/* ---- the generator's runs ---- */

#define GEN_COUNT 1000 /* 7 rounds of 128 splits, and a last one of 104 */

static void
gen_triple(spate_ctx *ctx, uint64_t j, void *out)
{
    int64_t *r = out;

    (void)ctx;
    r[0] = (int64_t)(j * 7919 % 101);
    r[1] = (int64_t)j;
    r[2] = (int64_t)j / 10;
}

static int64_t
triple_time(spate_ctx *ctx, const void *rec)
{
    (void)ctx;
    return ((const int64_t *)rec)[2];
}

/* An output that writes down each record it gets, with its timestamp, and
 * how: one collect call each, or in runs (when it takes them). */
struct seen_output {
    struct output base;
    int64_t index[GEN_COUNT], ts[GEN_COUNT];
    int n, by_collect, by_run, runs;
};

static void
seen_one(struct seen_output *o, const int64_t *r, int64_t ts)
{
    cr_assert_lt(o->n, GEN_COUNT, "more records than the generator's count");
    cr_assert_eq(r[0], (int64_t)((uint64_t)r[1] * 7919 % 101));
    o->index[o->n] = r[1];
    o->ts[o->n++] = ts;
}

static void
seen_collect(struct output *self, const void *rec, const struct record_meta *meta)
{
    struct seen_output *o = (struct seen_output *)self;

    seen_one(o, rec, meta->timestamp);
    o->by_collect++;
}

static void
seen_run(struct output *self, const void *recs, size_t stride, const int64_t *ts, int n)
{
    struct seen_output *o = (struct seen_output *)self;

    cr_assert(n > 0 && ts != NULL);
    for (int i = 0; i < n; i++)
        seen_one(o, (const int64_t *)((const uint8_t *)recs + (size_t)i * stride), ts[i]);
    o->by_run += n;
    o->runs++;
}

/* Polls a generator of GEN_COUNT records with its own monotonous
 * watermarks into o, budget records a call, to its end. */
static void
generate_into(struct seen_output *o, int budget)
{
    spate_env *env = env_new(NULL, NULL);
    const spate_type *f[] = { spate_type_int64(), spate_type_int64(), spate_type_int64() };
    spate_watermark_strategy ws = spate_watermarks_monotonous(triple_time);
    spate_stream *s =
        spate_source_generator(env, gen_triple, spate_type_tuple(env, 3, f), GEN_COUNT, 0);
    struct operator_settings settings;
    struct task_info task = { 0 };
    struct stream_operator *op = NULL;
    spate_error err = { 0 };
    enum source_status st;

    s = spate_source_with_watermarks(s, &ws);
    o->base.emit_watermark = discard_watermark;
    task.parallelism = 1;
    task.max_parallelism = 128;
    task.task_name = "generator";
    task.connectors = connectors_builtin();
    stream_node_settings(s, &settings);
    cr_assert_eq(operator_new(&settings, 0, &task, &o->base, &op, &err), 0, "%s", err.message);
    while ((st = op->vt->poll(op, budget, &err)) == SOURCE_MORE)
        ;
    cr_assert_eq(st, SOURCE_END, "%s", err.message);
    cr_assert_eq(op->records_out, GEN_COUNT);
    cr_assert_eq(op->watermarks->max_timestamp, (GEN_COUNT - 1) / 10);
    operator_free(op);
    env_free(env);
}

Test(generator_source, hands_an_output_that_takes_runs_its_records_in_runs)
{
    static struct seen_output one = { .base = { .collect = seen_collect } },
                              runs = { .base = { .collect = seen_collect,
                                                 .collect_run = seen_run } };

    for (int budget = 1; budget <= 300; budget += 299) {
        memset(&one.n, 0, sizeof one - offsetof(struct seen_output, n));
        memset(&runs.n, 0, sizeof runs - offsetof(struct seen_output, n));
        generate_into(&one, budget);
        generate_into(&runs, budget);
        /* Every index once, in order, with its timestamp, either way. */
        cr_assert_eq(one.n, GEN_COUNT);
        cr_assert_eq(runs.n, GEN_COUNT);
        for (int i = 0; i < GEN_COUNT; i++) {
            cr_assert_eq(one.index[i], i);
            cr_assert_eq(one.ts[i], i / 10);
            cr_assert_eq(runs.index[i], i);
            cr_assert_eq(runs.ts[i], i / 10);
        }
        cr_assert_eq(one.by_collect, GEN_COUNT, "an output without runs gets each alone");
        /* A fresh start's rounds, the last one's indexes below the count
         * too, in runs of up to 64 records (fewer when the budget is). */
        cr_assert_eq(runs.by_run, GEN_COUNT, "budget %d", budget);
        cr_assert_eq(runs.by_collect, 0);
        if (budget == 1)
            cr_assert_eq(runs.runs, GEN_COUNT);
        else
            cr_assert(runs.runs >= GEN_COUNT / 64 && runs.runs <= GEN_COUNT / 40,
                      "budget %d: %d runs", budget, runs.runs);
    }
}
