/* Unit tests of src/streaming/runtime_context.c: the current key read by
 * its type (and the task's failure when the type differs), and records
 * sent to side outputs by tag. Whole jobs run through the synchronous
 * runner. */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "streaming/stream_graph.h"
#include "streaming/types.h"
#include "sync_runner.h"

struct click {
    spate_str user;
    int64_t n;
};

struct seen {
    char lines[16][64];
    int n;
};

static const spate_type *
click_type(spate_env *env)
{
    const spate_type *f[] = { spate_type_string(), spate_type_int64() };

    return spate_type_tuple(env, 2, f);
}

static const struct click clicks[] = { { { "ann", 3 }, 1 }, { { "bob", 3 }, 2 } };

static spate_stream *
click_source(spate_env *env)
{
    return spate_source_collection(env, click_type(env), clicks, 2);
}

/* Runs env's job; the failure (malloc'd) or NULL. */
static char *
run(spate_env *env)
{
    struct accumulators acc;
    char *failure = NULL;

    accumulators_init(&acc);
    sync_run_env(env, &acc, &failure);
    accumulators_release(&acc);
    return failure;
}

/* A test function's parameters (pointers: the synchronous runner runs
 * in this process). */
struct params {
    struct seen *seen;
    const spate_type *type; /* tuple_key's key type */
    spate_tag tag;          /* route's side output */
};

static const struct params *
params_of(spate_ctx *ctx)
{
    return spate_ctx_params(ctx, NULL);
}

static void note(spate_ctx *ctx, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
note(spate_ctx *ctx, const char *fmt, ...)
{
    struct seen *s = params_of(ctx)->seen;
    va_list ap;

    cr_assert_lt(s->n, 16);
    va_start(ap, fmt);
    vsnprintf(s->lines[s->n++], 64, fmt, ap);
    va_end(ap);
}

static void
string_key(spate_ctx *ctx, const void *in)
{
    spate_str k = spate_ctx_current_key_string(ctx);

    (void)in;
    note(ctx, "%.*s", (int)k.len, k.data);
}

static void
int64_key(spate_ctx *ctx, const void *in)
{
    (void)in;
    note(ctx, "%lld", (long long)spate_ctx_current_key_int64(ctx));
}

static void
tuple_key(spate_ctx *ctx, const void *in)
{
    struct click k;

    (void)in;
    if (spate_ctx_current_key_as(ctx, params_of(ctx)->type, &k))
        note(ctx, "%.*s/%lld", (int)k.user.len, k.user.data, (long long)k.n);
}

static void
bytes_key(spate_ctx *ctx, const void *in)
{
    spate_bytes k = spate_ctx_current_key(ctx);

    (void)in;
    note(ctx, "%zu bytes", k.len);
}

static spate_bytes
user_of(spate_ctx *ctx, const void *in, void *scratch, size_t cap)
{
    const struct click *c = in;

    (void)ctx;
    (void)scratch;
    (void)cap;
    return (spate_bytes){ c->user.data, c->user.len };
}

/* Runs fn as a process function over the clicks keyed by key (a field, -1:
 * the whole record, -2: user_of); the failure (malloc'd) or NULL. */
static char *
run_keyed(int key, spate_flat_map_fn fn, struct seen *seen)
{
    spate_env *env = env_new(NULL, NULL);
    struct params p = { seen, click_type(env), { 0 } };
    spate_stream *s = click_source(env);
    char *failure;

    s = key >= 0    ? spate_key_by_field(s, key)
        : key == -1 ? spate_key_by_value(s)
                    : spate_key_by(s, user_of);
    spate_params(spate_process(s, fn, click_type(env)), &p, sizeof p);
    failure = run(env);
    env_free(env);
    return failure;
}

Test(runtime_context, the_key_reads_as_its_type)
{
    struct seen got = { 0 };

    cr_assert_null(run_keyed(0, string_key, &got));
    cr_assert_eq(got.n, 2);
    cr_assert_str_eq(got.lines[0], "ann");
    cr_assert_str_eq(got.lines[1], "bob");
    got.n = 0;
    cr_assert_null(run_keyed(1, int64_key, &got));
    cr_assert_eq(got.n, 2);
    cr_assert_str_eq(got.lines[0], "1");
    cr_assert_str_eq(got.lines[1], "2");
    got.n = 0;
    cr_assert_null(run_keyed(-1, tuple_key, &got));
    cr_assert_eq(got.n, 2);
    cr_assert_str_eq(got.lines[0], "ann/1");
    cr_assert_str_eq(got.lines[1], "bob/2");
}

Test(runtime_context, a_key_of_another_type_fails_the_task)
{
    struct seen got = { 0 };
    char *failure = run_keyed(0, int64_key, &got);

    cr_assert_not_null(failure);
    cr_assert(strstr(failure, "spate_ctx_current_key_int64") != NULL, "%s", failure);
    cr_assert(strstr(failure, "the key is string, not int64") != NULL, "%s", failure);
    free(failure);
    failure = run_keyed(1, string_key, &got);
    cr_assert_not_null(failure);
    cr_assert(strstr(failure, "the key is int64, not string") != NULL, "%s", failure);
    free(failure);
}

Test(runtime_context, a_key_by_function_s_key_is_bytes)
{
    struct seen got = { 0 };
    char *failure;

    cr_assert_null(run_keyed(-2, bytes_key, &got));
    cr_assert_eq(got.n, 2);
    cr_assert_str_eq(got.lines[0], "3 bytes");
    failure = run_keyed(-2, string_key, &got);
    cr_assert_not_null(failure);
    cr_assert(strstr(failure, "the key comes from a key_by function") != NULL, "%s", failure);
    free(failure);
}

Test(runtime_context, no_key_outside_a_keyed_operator)
{
    spate_env *env = env_new(NULL, NULL);
    struct seen got = { 0 };
    struct params p = { &got, NULL, { 0 } };
    char *failure;

    spate_params(spate_process(click_source(env), int64_key, click_type(env)), &p, sizeof p);
    failure = run(env);
    cr_assert_not_null(failure);
    cr_assert(strstr(failure, "the operator is not keyed") != NULL, "%s", failure);
    free(failure);
    env_free(env);
}

/* ---- side outputs ---- */

static void
route(spate_ctx *ctx, const void *in)
{
    const struct click *c = in;

    if (c->n % 2)
        spate_ctx_output(ctx, params_of(ctx)->tag, &c->user);
    else
        spate_emit(ctx, in);
}

static void
user_sink(spate_ctx *ctx, const void *in)
{
    const spate_str *u = in;

    note(ctx, "side %.*s", (int)u->len, u->data);
}

static void
click_sink(spate_ctx *ctx, const void *in)
{
    const struct click *c = in;

    note(ctx, "main %.*s", (int)c->user.len, c->user.data);
}

Test(runtime_context, records_reach_the_side_output_of_their_tag)
{
    spate_env *env = env_new(NULL, NULL);
    struct seen main_seen = { 0 }, side_seen = { 0 };
    spate_tag odd = spate_output_tag(env, "odd", spate_type_string());
    struct params p = { NULL, NULL, odd }, pm = { &main_seen, NULL, { 0 } },
                  ps = { &side_seen, NULL, { 0 } };
    spate_stream *s = spate_process(click_source(env), route, click_type(env));

    spate_params(s, &p, sizeof p);
    spate_params(spate_sink(s, click_sink), &pm, sizeof pm);
    spate_params(spate_sink(spate_side_output(s, odd), user_sink), &ps, sizeof ps);
    cr_assert_null(run(env));
    cr_assert_eq(main_seen.n, 1);
    cr_assert_str_eq(main_seen.lines[0], "main bob");
    cr_assert_eq(side_seen.n, 1);
    cr_assert_str_eq(side_seen.lines[0], "side ann");
    env_free(env);
}

Test(runtime_context, a_tag_missing_from_the_params_fails_the_task)
{
    spate_env *env = env_new(NULL, NULL);
    struct seen side_seen = { 0 };
    spate_tag odd = spate_output_tag(env, "odd", spate_type_string());
    struct params ps = { &side_seen, NULL, { 0 } };
    spate_stream *s = spate_process(click_source(env), route, click_type(env));
    char *failure;

    /* route's params never set: its tag reads as no tag. */
    spate_params(s, &(struct params){ 0 }, sizeof(struct params));
    spate_params(spate_sink(spate_side_output(s, odd), user_sink), &ps, sizeof ps);
    failure = run(env);
    cr_assert_not_null(failure);
    cr_assert(strstr(failure, "not a tag made by spate_output_tag") != NULL, "%s", failure);
    free(failure);
    env_free(env);
}

static void
nothing(spate_ctx *ctx, const void *in)
{
    (void)ctx;
    (void)in;
}

Test(runtime_context, a_key_of_the_wrong_size_is_no_number)
{
    spate_env *env = env_new(NULL, NULL);
    struct seen got = { 0 };
    struct params p = { &got, NULL, { 0 } };
    spate_stream *c;
    char *failure;

    /* The second input's keys are a key_by function's 3 bytes ("ann"),
     * the first's an int64 field: read as int64 in the second's calls. */
    c = spate_connect(spate_key_by_field(click_source(env), 1),
                      spate_key_by(click_source(env), user_of));
    spate_params(spate_co_process(c, nothing, int64_key, click_type(env)), &p, sizeof p);
    failure = run(env);
    cr_assert_not_null(failure);
    cr_assert(strstr(failure, "the key's 3 bytes are no int64") != NULL, "%s", failure);
    cr_assert_str_eq(got.lines[0], "0", "the call gives 0 as the task fails");
    free(failure);
    env_free(env);
}

static int64_t
click_n(spate_ctx *ctx, const void *rec)
{
    (void)ctx;
    return ((const struct click *)rec)->n;
}

/* Each window's clicks to the main output, its key to the side output. */
static void
window_route(spate_ctx *ctx, spate_time_window w, spate_iter *elements)
{
    struct click c;
    spate_str user = spate_ctx_current_key_string(ctx);

    (void)w;
    while (spate_list_next(elements, &c))
        spate_emit(ctx, &c);
    spate_ctx_output(ctx, params_of(ctx)->tag, &user);
}

Test(runtime_context, a_process_window_function_sends_to_side_outputs)
{
    spate_env *env = env_new(NULL, NULL);
    struct seen main_seen = { 0 }, side_seen = { 0 };
    spate_tag keys = spate_output_tag(env, "keys", spate_type_string());
    struct params p = { NULL, NULL, keys }, pm = { &main_seen, NULL, { 0 } },
                  ps = { &side_seen, NULL, { 0 } };
    spate_watermark_strategy ws = spate_watermarks_monotonous(click_n);
    spate_stream *w;

    w = spate_assign_timestamps_and_watermarks(click_source(env), &ws);
    w = spate_window(spate_key_by_field(w, 0), spate_tumbling_event_time(10));
    w = spate_params(spate_window_process(w, window_route, click_type(env)), &p, sizeof p);
    spate_params(spate_sink(w, click_sink), &pm, sizeof pm);
    spate_params(spate_sink(spate_side_output(w, keys), user_sink), &ps, sizeof ps);
    cr_assert_null(run(env));
    cr_assert_eq(main_seen.n, 2);
    cr_assert_eq(side_seen.n, 2);
    /* The windows fire in no promised order. */
    cr_assert(strcmp(side_seen.lines[0], side_seen.lines[1]) != 0);
    for (int i = 0; i < 2; i++)
        cr_assert(strcmp(side_seen.lines[i], "side ann") == 0 ||
                      strcmp(side_seen.lines[i], "side bob") == 0,
                  "%s", side_seen.lines[i]);
    env_free(env);
}
