/* Unit tests of union, connect (co-map, keyed co-process with state),
 * broadcast state, operator list state, and the errors of misused state. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "streaming/job_graph.h"
#include "streaming/types.h"
#include "sync_runner.h"

struct kv {
    int64_t k, v;
};

static const spate_type *
kv_type(spate_env *env)
{
    const spate_type *f[] = { spate_type_int64(), spate_type_int64() };

    return spate_type_tuple(env, 2, f);
}

struct seen {
    int64_t sum;
    int n;
    char log[64][32];
};

static void
kv_sink(spate_ctx *ctx, const void *in)
{
    struct seen *s = *(struct seen *const *)spate_ctx_params(ctx, NULL);
    const struct kv *r = in;

    snprintf(s->log[s->n++ % 64], 32, "%lld:%lld", (long long)r->k, (long long)r->v);
    s->sum += r->v;
}

static void
run(spate_env *env, char **failure)
{
    struct accumulators acc;

    accumulators_init(&acc);
    sync_run_env(env, &acc, failure);
    accumulators_release(&acc);
}

Test(two_inputs, union_reads_both)
{
    static const struct kv a[] = { { 1, 1 }, { 2, 2 } }, b[] = { { 3, 30 } };
    spate_env *env = env_new(NULL, NULL);
    struct seen seen = { 0 }, *sp = &seen;
    char *failure;
    spate_stream *u;

    u = spate_union(spate_source_collection(env, kv_type(env), a, 2),
                    spate_source_collection(env, kv_type(env), b, 1));
    spate_params(spate_sink(u, kv_sink), &sp, sizeof sp);
    run(env, &failure);
    cr_assert_null(failure);
    cr_assert_eq(seen.n, 3);
    cr_assert_eq(seen.sum, 33);
    env_free(env);
}

static void
neg(spate_ctx *ctx, const void *in, void *out)
{
    (void)ctx;
    ((struct kv *)out)->k = ((const struct kv *)in)->k;
    ((struct kv *)out)->v = -((const struct kv *)in)->v;
}

static void
twice(spate_ctx *ctx, const void *in, void *out)
{
    (void)ctx;
    ((struct kv *)out)->k = ((const struct kv *)in)->k;
    ((struct kv *)out)->v = 2 * ((const struct kv *)in)->v;
}

Test(two_inputs, co_map_applies_one_function_per_input)
{
    static const struct kv a[] = { { 1, 1 }, { 2, 2 } }, b[] = { { 3, 30 } };
    spate_env *env = env_new(NULL, NULL);
    struct seen seen = { 0 }, *sp = &seen;
    char *failure;
    spate_stream *c;

    c = spate_connect(spate_source_collection(env, kv_type(env), a, 2),
                      spate_source_collection(env, kv_type(env), b, 1));
    spate_params(spate_sink(spate_co_map(c, neg, twice, kv_type(env)), kv_sink), &sp, sizeof sp);
    run(env, &failure);
    cr_assert_null(failure);
    cr_assert_eq(seen.sum, -3 + 60);
    env_free(env);
}

/* Keyed co-process: a per-key threshold from input 2 filters input 1. */
static void
on_value(spate_ctx *ctx, const void *in)
{
    int64_t limit = 0;

    if (spate_value_get(spate_ctx_state(ctx, "limit"), &limit) &&
        ((const struct kv *)in)->v > limit)
        spate_emit(ctx, in);
}

static void
on_limit(spate_ctx *ctx, const void *in)
{
    spate_value_update(spate_ctx_state(ctx, "limit"), &((const struct kv *)in)->v);
}

Test(two_inputs, keyed_co_process_shares_state_per_key)
{
    static const struct kv limits[] = { { 1, 10 }, { 2, 100 } };
    static const struct kv values[] = { { 1, 5 }, { 1, 50 }, { 2, 50 }, { 2, 500 }, { 3, 9 } };
    spate_env *env = env_new(NULL, NULL);
    struct seen seen = { 0 }, *sp = &seen;
    char *failure;
    spate_stream *c, *p;

    /* The sync runner reads input 2 (limits) before input 1 here. */
    c = spate_connect(spate_key_by_field(spate_source_collection(env, kv_type(env), values, 5), 0),
                      spate_key_by_field(spate_source_collection(env, kv_type(env), limits, 2), 0));
    p = spate_co_process(c, on_value, on_limit, kv_type(env));
    spate_value_state(p, "limit", spate_type_int64(), 0);
    spate_params(spate_sink(p, kv_sink), &sp, sizeof sp);
    run(env, &failure);
    cr_assert_null(failure, "%s", failure);
    cr_assert_eq(seen.n, 2); /* (1,50) and (2,500); key 3 has no limit */
    cr_assert_eq(seen.sum, 550);
    env_free(env);
}

/* Broadcast: rules reach every instance; elements read them. */
static void
on_element(spate_ctx *ctx, const void *in)
{
    const struct kv *r = in;
    int64_t factor;

    if (spate_map_get(spate_ctx_state(ctx, "rules"), &r->k, &factor)) {
        struct kv out = { r->k, r->v * factor };

        spate_emit(ctx, &out);
    }
}

static void
on_rule(spate_ctx *ctx, const void *in)
{
    const struct kv *r = in;

    spate_map_put(spate_ctx_state(ctx, "rules"), &r->k, &r->v);
}

static void
writes_from_element_side(spate_ctx *ctx, const void *in)
{
    spate_map_put(spate_ctx_state(ctx, "rules"), &((const struct kv *)in)->k,
                  &((const struct kv *)in)->v);
}

Test(two_inputs, broadcast_state_is_written_by_the_broadcast_side_only)
{
    static const struct kv rules[] = { { 1, 10 }, { 2, 100 } };
    static const struct kv values[] = { { 1, 1 }, { 2, 2 }, { 3, 3 } };
    char *failure;

    for (int k = 0; k < 2; k++) {
        spate_env *env = env_new(NULL, NULL);
        struct seen seen = { 0 }, *sp = &seen;
        spate_stream *b, *c;

        b = spate_broadcast_state(spate_source_collection(env, kv_type(env), rules, 2), "rules",
                                  spate_type_int64(), spate_type_int64());
        c = spate_connect(spate_source_collection(env, kv_type(env), values, 3), b);
        c = spate_broadcast_process(c, k == 0 ? on_element : writes_from_element_side, on_rule,
                                    kv_type(env));
        spate_params(spate_sink(c, kv_sink), &sp, sizeof sp);
        run(env, &failure);
        if (k == 0) {
            cr_assert_null(failure, "%s", failure);
            cr_assert_eq(seen.n, 2);
            cr_assert_eq(seen.sum, 10 + 200);
        } else {
            cr_assert_not_null(failure);
            cr_assert(strstr(failure, "read-only outside process_broadcast") != NULL, "%s",
                      failure);
            free(failure);
        }
        env_free(env);
    }
}

/* Operator list state: a running list per instance. */
static void
remember(spate_ctx *ctx, const void *in, void *out)
{
    spate_state *st = spate_ctx_state(ctx, "history");
    spate_iter it;
    int64_t x, n = 0;

    spate_list_add(st, &((const struct kv *)in)->v);
    spate_list_iter(st, &it);
    while (spate_list_next(&it, &x))
        n++;
    ((struct kv *)out)->k = ((const struct kv *)in)->k;
    ((struct kv *)out)->v = n;
}

Test(two_inputs, operator_list_state_and_misused_keyed_state)
{
    static const struct kv values[] = { { 1, 1 }, { 2, 2 }, { 3, 3 } };
    spate_env *env = env_new(NULL, NULL);
    struct seen seen = { 0 }, *sp = &seen;
    struct job_graph *jg;
    spate_error err;
    char *failure;
    spate_stream *m;

    m = spate_map(spate_source_collection(env, kv_type(env), values, 3), remember, kv_type(env));
    spate_operator_list_state(m, "history", spate_type_int64());
    spate_params(spate_sink(m, kv_sink), &sp, sizeof sp);
    run(env, &failure);
    cr_assert_null(failure, "%s", failure);
    cr_assert_eq(seen.sum, 1 + 2 + 3);
    env_free(env);

    env = env_new(NULL, NULL);
    m = spate_map(spate_source_collection(env, kv_type(env), values, 3), remember, kv_type(env));
    spate_value_state(m, "oops", spate_type_int64(), 0);
    spate_sink_print(m);
    cr_assert_eq(job_graph_build(env, "x", &jg, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "keyed state 'oops'") != NULL, "%s", err.message);
    env_free(env);
}
