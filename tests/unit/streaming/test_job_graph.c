/* Unit tests of src/streaming/job_graph.c: chaining rules, exchanges, ids,
 * the plan JSON, and the errors of bad graphs. */
#include <criterion/criterion.h>
#include <string.h>

#include "streaming/job_graph.h"
#include "streaming/types.h"

static void
map_fn(spate_ctx *ctx, const void *in, void *out)
{
    (void)ctx;
    *(int64_t *)out = *(const int64_t *)in;
}

static bool
filter_fn(spate_ctx *ctx, const void *in)
{
    (void)ctx;
    return *(const int64_t *)in > 0;
}

static void
gen(spate_ctx *ctx, uint64_t i, void *out)
{
    (void)ctx;
    *(int64_t *)out = (int64_t)i;
}

static struct job_graph *
build(spate_env *env)
{
    struct job_graph *jg = NULL;
    spate_error err = { 0 };

    cr_assert_null(spate_env_error(env), "%s", env->error.message);
    cr_assert_eq(job_graph_build(env, "test", &jg, &err), 0, "%s", err.message);
    return jg;
}

Test(job_graph, forward_operators_chain_into_one_vertex)
{
    spate_env *env = env_new(NULL, NULL);
    spate_stream *s = spate_source_generator(env, gen, spate_type_int64(), 10, 0);
    struct job_graph *jg;

    spate_sink_print(spate_filter(spate_map(s, map_fn, spate_type_int64()), filter_fn));
    jg = build(env);
    cr_assert_eq(jg->nvertices, 1);
    cr_assert_eq(jg->nedges, 0);
    cr_assert_eq(jg->vertices[0].nops, 4);
    cr_assert_str_eq(jg->vertices[0].name,
                     "Source: Generator -> Map -> Filter -> Sink: Print to Std. Out");
    job_graph_free(jg);
    env_free(env);
}

Test(job_graph, key_by_and_parallelism_changes_make_exchanges)
{
    spate_env *env = env_new(NULL, NULL);
    spate_stream *s = spate_source_generator(env, gen, spate_type_int64(), 10, 0);
    spate_stream *m = spate_set_parallelism(spate_map(s, map_fn, spate_type_int64()), 2);
    spate_stream *sum = spate_sum(spate_key_by_value(m), -1);
    struct job_graph *jg;

    spate_set_parallelism(spate_sink_print(spate_set_parallelism(sum, 2)), 2);
    jg = build(env);
    cr_assert_eq(jg->nvertices, 3);
    cr_assert_eq(jg->nedges, 2);
    cr_assert_eq(jg->edges[0].partitioner, SHIP_REBALANCE); /* 1 -> 2 */
    cr_assert_eq(jg->edges[1].partitioner, SHIP_HASH);
    cr_assert_eq(jg->edges[1].key.kind, KEY_VALUE);
    cr_assert_str_eq(jg->vertices[2].name, "Keyed Aggregation -> Sink: Print to Std. Out");
    job_graph_free(jg);
    env_free(env);
}

Test(job_graph, chaining_controls)
{
    spate_env *env = env_new(NULL, NULL);
    spate_stream *s = spate_source_generator(env, gen, spate_type_int64(), 10, 0);
    spate_stream *a = spate_map(s, map_fn, spate_type_int64());
    spate_stream *b = spate_start_new_chain(spate_map(a, map_fn, spate_type_int64()));
    spate_stream *c = spate_map(b, map_fn, spate_type_int64());
    spate_stream *d = spate_disable_chaining(spate_map(c, map_fn, spate_type_int64()));
    spate_stream *e = spate_slot_sharing_group(spate_map(d, map_fn, spate_type_int64()), "other");
    struct job_graph *jg;

    spate_sink_print(e);
    jg = build(env);
    /* [source, a] [b, c] [d] [e, sink] */
    cr_assert_eq(jg->nvertices, 4);
    cr_assert_eq(jg->vertices[0].nops, 2);
    cr_assert_eq(jg->vertices[1].nops, 2);
    cr_assert_eq(jg->vertices[2].nops, 1);
    cr_assert_eq(jg->vertices[3].nops, 2);
    cr_assert_str_eq(jg->vertices[3].slot_sharing_group, "other");
    cr_assert_str_eq(jg->vertices[2].slot_sharing_group, "default");
    for (int i = 0; i < jg->nedges; i++)
        cr_assert_eq(jg->edges[i].partitioner, SHIP_FORWARD);
    job_graph_free(jg);
    env_free(env);
}

Test(job_graph, env_disable_chaining)
{
    spate_env *env = env_new(NULL, NULL);
    spate_stream *s = spate_source_generator(env, gen, spate_type_int64(), 10, 0);
    struct job_graph *jg;

    spate_env_disable_chaining(env);
    spate_sink_print(spate_map(s, map_fn, spate_type_int64()));
    jg = build(env);
    cr_assert_eq(jg->nvertices, 3);
    job_graph_free(jg);
    env_free(env);
}

Test(job_graph, explicit_partitioners_are_kept)
{
    static const struct {
        spate_stream *(*fn)(spate_stream *);
        enum ship_strategy kind;
    } cases[] = {
        { spate_rebalance, SHIP_REBALANCE }, { spate_rescale, SHIP_RESCALE },
        { spate_shuffle, SHIP_SHUFFLE },     { spate_broadcast, SHIP_BROADCAST },
        { spate_global, SHIP_GLOBAL },
    };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        spate_env *env = env_new(NULL, NULL);
        spate_stream *s = spate_source_generator(env, gen, spate_type_int64(), 10, 0);
        struct job_graph *jg;

        spate_sink_print(spate_map(cases[i].fn(s), map_fn, spate_type_int64()));
        jg = build(env);
        cr_assert_eq(jg->nvertices, 2);
        cr_assert_eq(jg->edges[0].partitioner, cases[i].kind);
        job_graph_free(jg);
        env_free(env);
    }
}

Test(job_graph, forward_across_parallelism_is_an_error)
{
    spate_env *env = env_new(NULL, NULL);
    spate_stream *s = spate_source_generator(env, gen, spate_type_int64(), 10, 0);
    struct job_graph *jg = NULL;
    spate_error err = { 0 };

    spate_sink_print(
        spate_set_parallelism(spate_map(spate_forward(s), map_fn, spate_type_int64()), 3));
    cr_assert_eq(job_graph_build(env, "x", &jg, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "forward partitioning does not allow a change of parallelism") !=
                  NULL,
              "%s", err.message);
    env_free(env);
}

Test(job_graph, misuse_is_remembered_by_the_environment)
{
    spate_env *env = env_new(NULL, NULL);
    spate_stream *s = spate_source_generator(env, gen, spate_type_int64(), 10, 0);

    /* sum needs a keyed stream; the first error wins. */
    spate_sum(s, -1);
    spate_map(s, NULL, spate_type_int64());
    cr_assert_not_null(spate_env_error(env));
    cr_assert(strstr(spate_env_error(env)->message, "sum needs a keyed stream") != NULL);
    env_free(env);
}

static int64_t
ts_of(spate_ctx *ctx, const void *rec)
{
    (void)ctx;
    return *(const int64_t *)rec;
}

Test(job_graph, a_watermark_strategy_belongs_to_a_source_once)
{
    spate_env *env = env_new(NULL, NULL);
    spate_watermark_strategy ws = spate_watermarks_monotonous(ts_of);
    spate_stream *s = spate_source_generator(env, gen, spate_type_int64(), 10, 0);

    cr_assert_eq(spate_source_with_watermarks(s, &ws), s);
    cr_assert_null(spate_env_error(env));
    spate_source_with_watermarks(s, &ws);
    cr_assert_not_null(spate_env_error(env));
    cr_assert(strstr(spate_env_error(env)->message, "a second watermark strategy for source") !=
                  NULL,
              "%s", spate_env_error(env)->message);
    env_free(env);

    env = env_new(NULL, NULL);
    s = spate_map(spate_source_generator(env, gen, spate_type_int64(), 10, 0), map_fn,
                  spate_type_int64());
    spate_source_with_watermarks(s, &ws);
    cr_assert_not_null(spate_env_error(env));
    cr_assert(strstr(spate_env_error(env)->message,
                     "which is no source: use assign_timestamps_and_watermarks") != NULL,
              "%s", spate_env_error(env)->message);
    env_free(env);
}

Test(job_graph, uids_give_stable_ids_and_plan_json)
{
    spate_env *env1 = env_new(NULL, NULL);
    spate_env *env2 = env_new(NULL, NULL);
    struct job_graph *a, *b;
    json_t *plan;
    char *text;

    for (int k = 0; k < 2; k++) {
        spate_env *env = k ? env2 : env1;
        spate_stream *s =
            spate_uid(spate_source_generator(env, gen, spate_type_int64(), 10, 0), "src");

        spate_sink_print(spate_sum(spate_key_by_value(s), -1));
    }
    a = build(env1);
    b = build(env2);
    cr_assert(id_equal(&a->vertices[0].id, &b->vertices[0].id));
    cr_assert(id_equal(&a->vertices[1].ops[0].operator_id, &b->vertices[1].ops[0].operator_id));
    cr_assert(a->vertices[0].ops[0].uid_given);
    cr_assert(!a->vertices[1].ops[0].uid_given);
    cr_assert_eq(a->derived_uids, 2);
    plan = job_graph_plan_json(a);
    text = json_dumps(plan, JSON_COMPACT);
    cr_assert(strstr(text, "\"ship_strategy\":\"HASH\"") != NULL, "%s", text);
    cr_assert(strstr(text, "\"description\":\"Keyed Aggregation -> Sink: Print to Std. Out\"") !=
              NULL);
    cr_assert(strstr(text, "\"chained_edges\":[{\"from\":\"Keyed Aggregation\"") != NULL, "%s",
              text);
    free(text);
    json_decref(plan);
    job_graph_free(a);
    job_graph_free(b);
    env_free(env1);
    env_free(env2);
}
