/* Every operator kind against a checkpoint: for each kind of
 * stream_graph.h's operator_kind (the virtual ones aside), a job that
 * holds an operator of that kind runs twice — once straight through, once
 * with the operator's task taking a checkpoint mid-input, failing and going
 * on restored from it (sync_runner.h's cut) — and both runs must emit
 * exactly the same records. A kind that keeps state where the snapshot does
 * not look (as the keyed sum and reduce did, in their own struct) starts
 * over from nothing after the cut and emits other records; a kind that
 * declares no state kind (operator.h's operator_state) has its checkpoint
 * refused. A new operator kind without a case here fails the enumeration
 * test. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "connectors/connectors.h"
#include "core/alloc.h"
#include "connectors/file_splits.h"
#include "streaming/operator.h"
#include "streaming/types.h"
#include "sync_runner.h"

#define N    240 /* records of the main input */
#define KEYS 5

struct pair {
    int64_t key;
    int64_t value;
};

/* ---- what the sinks saw ---- */

struct lines {
    char **v;
    size_t n, cap;
};

static struct lines seen; /* the function sinks' records, "key,value" */

static void
lines_add(struct lines *l, const char *s)
{
    xgrow((void **)&l->v, &l->cap, l->n + 1, sizeof *l->v);
    l->v[l->n++] = xstrdup(s);
}

static void
lines_free(struct lines *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof *l);
}

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
pair_sink(spate_ctx *ctx, const void *in)
{
    const struct pair *p = in;
    char s[64];

    (void)ctx;
    snprintf(s, sizeof s, "%lld,%lld", (long long)p->key, (long long)p->value);
    lines_add(&seen, s);
}

/* Adds every line of the text in f (from its start) to l. */
static void
lines_of_file(struct lines *l, FILE *f)
{
    char buf[256];

    rewind(f);
    while (fgets(buf, sizeof buf, f) != NULL) {
        buf[strcspn(buf, "\n")] = '\0';
        lines_add(l, buf);
    }
}

/* Adds the lines of every committed part file in dir (not the ones whose
 * names start with a dot: in progress, pending). */
static void
lines_of_folder(struct lines *l, const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;

    cr_assert_not_null(d, "no output folder %s", dir);
    while ((e = readdir(d)) != NULL) {
        char path[600];
        FILE *f;

        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        cr_assert_not_null(f = fopen(path, "r"));
        lines_of_file(l, f);
        fclose(f);
    }
    closedir(d);
}

/* ---- user functions ---- */

static const spate_type *
pair_type(spate_env *env)
{
    const spate_type *f[] = { spate_type_int64(), spate_type_int64() };

    return spate_type_tuple(env, 2, f);
}

static struct pair input[N];

static spate_stream *
source(spate_env *env)
{
    for (int i = 0; i < N; i++)
        input[i] = (struct pair){ (i * 7) % KEYS, i + 1 };
    return spate_source_collection(env, pair_type(env), input, N);
}

static int64_t
ts_of(spate_ctx *ctx, const void *rec)
{
    (void)ctx;
    return ((const struct pair *)rec)->value * 10;
}

/* The main input with event time: its value * 10 ms, in order. */
static spate_stream *
timed_source(spate_env *env)
{
    spate_watermark_strategy w = spate_watermarks_monotonous(ts_of);

    return spate_assign_timestamps_and_watermarks(source(env), &w);
}

static void
gen_pair(spate_ctx *ctx, uint64_t i, void *out)
{
    (void)ctx;
    *(struct pair *)out = (struct pair){ (int64_t)(i % KEYS), (int64_t)i };
}

static void
map_square(spate_ctx *ctx, const void *in, void *out)
{
    const struct pair *p = in;

    (void)ctx;
    *(struct pair *)out = (struct pair){ p->key, p->value * p->value };
}

static bool
filter_odd(spate_ctx *ctx, const void *in)
{
    (void)ctx;
    return ((const struct pair *)in)->value % 2;
}

static void
flat_twice(spate_ctx *ctx, const void *in)
{
    struct pair p = *(const struct pair *)in;

    spate_emit(ctx, &p);
    p.value = -p.value;
    spate_emit(ctx, &p);
}

static void
reduce_max_plus(spate_ctx *ctx, const void *acc, const void *in, void *out)
{
    const struct pair *a = acc, *b = in;

    (void)ctx;
    /* Not commutative on purpose: the order of the updates shows. */
    *(struct pair *)out = (struct pair){ a->key, a->value * 3 % 1000003 + b->value };
}

static void
line_to_pair(spate_ctx *ctx, const void *in, void *out)
{
    const spate_str *s = in;
    char buf[32];

    (void)ctx;
    snprintf(buf, sizeof buf, "%.*s", (int)s->len, s->data);
    *(struct pair *)out = (struct pair){ atoll(buf) % KEYS, atoll(buf) };
}

/* A keyed process function with each state kind and an event-time timer:
 * emits per record the key's count from each state, so that a state lost
 * or kept twice changes what it emits. */
static void
process_states(spate_ctx *ctx, const void *in)
{
    const struct pair *p = in;
    int64_t count = 0, one = 1, sum = 0, n = 0, mapped = 0, agg = 0, v;
    spate_iter it;

    spate_value_get(spate_ctx_state(ctx, "count"), &count);
    count++;
    spate_value_update(spate_ctx_state(ctx, "count"), &count);
    spate_list_add(spate_ctx_state(ctx, "list"), &p->value);
    spate_list_iter(spate_ctx_state(ctx, "list"), &it);
    while (spate_list_next(&it, &v))
        n++;
    spate_map_get(spate_ctx_state(ctx, "map"), &one, &mapped);
    mapped += p->value;
    spate_map_put(spate_ctx_state(ctx, "map"), &one, &mapped);
    spate_reducing_add(spate_ctx_state(ctx, "reducing"), &p->value);
    spate_reducing_get(spate_ctx_state(ctx, "reducing"), &sum);
    spate_aggregating_add(spate_ctx_state(ctx, "aggregating"), p);
    spate_aggregating_get(spate_ctx_state(ctx, "aggregating"), &agg);
    /* A timer per key and 100 ms of event time. */
    spate_timer_register_event_time(ctx, spate_ctx_timestamp(ctx) / 1000 * 1000 + 999);
    spate_emit(ctx, &(struct pair){ p->key, count * 1000000000 + n * 1000000 + sum * 7 +
                                                mapped * 11 + agg * 13 });
}

static void
process_timer(spate_ctx *ctx, int64_t ts, bool event_time)
{
    int64_t count = 0;

    (void)event_time;
    spate_value_get(spate_ctx_state(ctx, "count"), &count);
    spate_emit(ctx, &(struct pair){ -1, ts * 1000 + count });
}

static void
add_i64(spate_ctx *ctx, const void *acc, const void *in, void *out)
{
    (void)ctx;
    *(int64_t *)out = *(const int64_t *)acc + *(const int64_t *)in;
}

static void
agg_create(spate_ctx *ctx, void *acc)
{
    (void)ctx;
    *(int64_t *)acc = 0;
}

static void
agg_add(spate_ctx *ctx, const void *in, void *acc)
{
    (void)ctx;
    *(int64_t *)acc = *(int64_t *)acc * 31 % 1000003 + ((const struct pair *)in)->value;
}

static void
agg_result(spate_ctx *ctx, const void *acc, void *out)
{
    (void)ctx;
    *(int64_t *)out = *(const int64_t *)acc;
}

static void
agg_merge(spate_ctx *ctx, const void *from, void *acc)
{
    (void)ctx;
    *(int64_t *)acc += *(const int64_t *)from;
}

static const spate_aggregate hash_agg = { NULL, NULL, agg_create, agg_add, agg_result, agg_merge };

static spate_aggregate
agg_of(spate_env *env)
{
    spate_aggregate a = hash_agg;

    (void)env;
    a.acc_type = spate_type_int64();
    a.out_type = spate_type_int64();
    return a;
}

/* A window's end and a key in one number (a count window's end is
 * INT64_MAX: its key alone). */
static int64_t
window_key(spate_time_window w, int64_t key)
{
    return (w.end == INT64_MAX ? 0 : w.end) * 100 + key;
}

static void
pair_of_result(spate_ctx *ctx, spate_time_window w, spate_iter *elements)
{
    int64_t v = 0, sum = 0;

    while (spate_list_next(elements, &v))
        sum += v;
    spate_emit(ctx, &(struct pair){ w.end, sum });
}

static void
pair_of_elements(spate_ctx *ctx, spate_time_window w, spate_iter *elements)
{
    struct pair p;
    int64_t h = 0;

    while (spate_list_next(elements, &p))
        h = h * 31 % 1000003 + p.value;
    spate_emit(ctx, &(struct pair){ window_key(w, p.key), h });
}

static void
pair_of_reduced(spate_ctx *ctx, spate_time_window w, spate_iter *elements)
{
    struct pair p;

    while (spate_list_next(elements, &p))
        spate_emit(ctx, &(struct pair){ window_key(w, p.key), p.value });
}

static void
co_first(spate_ctx *ctx, const void *in, void *out)
{
    (void)ctx;
    *(struct pair *)out = *(const struct pair *)in;
}

static void
co_second(spate_ctx *ctx, const void *in, void *out)
{
    const struct pair *p = in;

    (void)ctx;
    *(struct pair *)out = (struct pair){ p->key + 100, p->value };
}

/* Connected keyed streams: the first input counts, the second reads it. */
static void
co_count(spate_ctx *ctx, const void *in)
{
    const struct pair *p = in;
    int64_t c = 0;

    spate_value_get(spate_ctx_state(ctx, "count"), &c);
    c += p->value;
    spate_value_update(spate_ctx_state(ctx, "count"), &c);
    spate_emit(ctx, &(struct pair){ p->key, c });
}

static void
co_read(spate_ctx *ctx, const void *in)
{
    const struct pair *p = in;
    int64_t c = 0;

    spate_value_get(spate_ctx_state(ctx, "count"), &c);
    spate_emit(ctx, &(struct pair){ p->key + 100, c });
}

/* Broadcast: rules (key -> factor) into the broadcast state; keyed
 * elements read the rule and their own count. */
static void
bc_element(spate_ctx *ctx, const void *in)
{
    const struct pair *p = in;
    int64_t factor = 1, c = 0;

    spate_map_get(spate_ctx_state(ctx, "rules"), &p->key, &factor);
    spate_value_get(spate_ctx_state(ctx, "count"), &c);
    c++;
    spate_value_update(spate_ctx_state(ctx, "count"), &c);
    spate_emit(ctx, &(struct pair){ p->key, c * 1000 + factor });
}

static void
bc_rule(spate_ctx *ctx, const void *in)
{
    const struct pair *p = in;

    spate_map_put(spate_ctx_state(ctx, "rules"), &p->key, &p->value);
}

/* ---- the cases ---- */

struct fixture {
    char dir[64];   /* a temporary folder: the state files, files in and out */
    char path[128]; /* the file source's input */
    FILE *printed;  /* the print sink's output */
    struct sync_splits splits;
    bool has_splits;
};

struct op_case {
    enum operator_kind kind;
    const char *what;
    /* Builds the job; its output goes to seen, printed or <dir>/out. */
    void (*build)(spate_env *env, struct fixture *fx);
    int64_t cut; /* elements (records of a source) before the cut */
    /* Declared stateless, and not replayable: only its declaration is
     * checked (why, in what). */
    bool declared_only;
};

static void
build_collection(spate_env *env, struct fixture *fx)
{
    (void)fx;
    spate_sink(source(env), pair_sink);
}

static void
build_generator(spate_env *env, struct fixture *fx)
{
    (void)fx;
    spate_sink(spate_source_generator(env, gen_pair, pair_type(env), N, 0), pair_sink);
}

static void
build_file(spate_env *env, struct fixture *fx)
{
    char *path = fx->path;
    FILE *f;

    snprintf(fx->path, sizeof fx->path, "%s/in.txt", fx->dir);
    cr_assert_not_null(f = fopen(path, "w"));
    for (int i = 0; i < N; i++)
        fprintf(f, "%d\n", i * 13);
    fclose(f);
    /* Splits of 64 bytes: the cut falls inside one, with more to come. */
    sync_splits_init(&fx->splits, fx->path, 64);
    fx->has_splits = true;
    spate_sink(spate_map(spate_source_text_file(env, path), line_to_pair, pair_type(env)),
               pair_sink);
}

static void
build_map(spate_env *env, struct fixture *fx)
{
    (void)fx;
    spate_sink(spate_map(source(env), map_square, pair_type(env)), pair_sink);
}

static void
build_filter(spate_env *env, struct fixture *fx)
{
    (void)fx;
    spate_sink(spate_filter(source(env), filter_odd), pair_sink);
}

static void
build_flat_map(spate_env *env, struct fixture *fx)
{
    (void)fx;
    spate_sink(spate_flat_map(source(env), flat_twice, pair_type(env)), pair_sink);
}

static void
build_process(spate_env *env, struct fixture *fx)
{
    spate_aggregate agg = agg_of(env);
    spate_stream *p =
        spate_process(spate_key_by_field(timed_source(env), 0), process_states, pair_type(env));

    (void)fx;
    spate_value_state(p, "count", spate_type_int64(), 0);
    spate_list_state(p, "list", spate_type_int64(), 0);
    spate_map_state(p, "map", spate_type_int64(), spate_type_int64(), 0);
    spate_reducing_state(p, "reducing", spate_type_int64(), add_i64, 0);
    spate_aggregating_state(p, "aggregating", &agg, 0);
    spate_on_timer(p, process_timer);
    spate_sink(p, pair_sink);
}

static void
build_reduce(spate_env *env, struct fixture *fx)
{
    (void)fx;
    spate_sink(spate_reduce(spate_key_by_field(source(env), 0), reduce_max_plus), pair_sink);
}

static void
build_sum(spate_env *env, struct fixture *fx)
{
    (void)fx;
    spate_sink(spate_sum(spate_key_by_field(source(env), 0), 1), pair_sink);
}

static void
build_sink_print(spate_env *env, struct fixture *fx)
{
    (void)fx;
    spate_sink_print(source(env));
}

static void
build_sink_file(spate_env *env, struct fixture *fx)
{
    char path[128];

    /* Its parent folders are made too, as Flink's FileSink makes them. */
    snprintf(path, sizeof path, "%s/made/by/sink", fx->dir);
    spate_sink_text_file(source(env), path);
}

static void
build_sink(spate_env *env, struct fixture *fx)
{
    (void)fx;
    spate_sink(spate_rebalance(source(env)), pair_sink);
}

static void
build_assign_timestamps(spate_env *env, struct fixture *fx)
{
    spate_stream *w =
        spate_window(spate_key_by_field(timed_source(env), 0), spate_tumbling_event_time(200));

    (void)fx;
    spate_sink(spate_window_reduce(w, reduce_max_plus, pair_of_reduced, pair_type(env)), pair_sink);
}

static void
build_tumbling_reduce(spate_env *env, struct fixture *fx)
{
    spate_stream *w =
        spate_window(spate_key_by_field(timed_source(env), 0), spate_tumbling_event_time(300));

    (void)fx;
    spate_sink(spate_window_reduce(w, reduce_max_plus, pair_of_reduced, pair_type(env)), pair_sink);
}

/* The common window's timers wait in its own form (a timer per window);
 * with lateness a fired window's state waits for its clean-up. */
static void
build_tumbling_late_aggregate(spate_env *env, struct fixture *fx)
{
    spate_aggregate agg = agg_of(env);
    spate_stream *w = spate_allowed_lateness(
        spate_window(spate_key_by_field(timed_source(env), 0), spate_tumbling_event_time(300)),
        500);

    (void)fx;
    spate_sink(spate_window_aggregate(w, &agg, pair_of_result, pair_type(env)), pair_sink);
}

static void
build_sliding_aggregate(spate_env *env, struct fixture *fx)
{
    spate_aggregate agg = agg_of(env);
    spate_stream *w =
        spate_window(spate_key_by_field(timed_source(env), 0), spate_sliding_event_time(400, 100));

    (void)fx;
    spate_sink(spate_window_aggregate(w, &agg, pair_of_result, pair_type(env)), pair_sink);
}

static void
build_session_process(spate_env *env, struct fixture *fx)
{
    spate_stream *w =
        spate_window(spate_key_by_field(timed_source(env), 0), spate_session_event_time(25));

    (void)fx;
    spate_sink(spate_window_process(w, pair_of_elements, pair_type(env)), pair_sink);
}

static void
build_count_window(spate_env *env, struct fixture *fx)
{
    spate_stream *w = spate_count_window(spate_key_by_field(source(env), 0), 7);

    (void)fx;
    spate_sink(spate_window_process(w, pair_of_elements, pair_type(env)), pair_sink);
}

static void
build_co_map(spate_env *env, struct fixture *fx)
{
    spate_stream *c = spate_connect(source(env), source(env));

    (void)fx;
    spate_sink(spate_co_map(c, co_first, co_second, pair_type(env)), pair_sink);
}

static void
build_co_process(spate_env *env, struct fixture *fx)
{
    spate_stream *c =
        spate_connect(spate_key_by_field(source(env), 0), spate_key_by_field(source(env), 0));
    spate_stream *p = spate_co_process(c, co_count, co_read, pair_type(env));

    (void)fx;
    spate_value_state(p, "count", spate_type_int64(), 0);
    spate_sink(p, pair_sink);
}

static struct pair rules[] = { { 0, 3 }, { 1, 5 }, { 2, 7 }, { 4, 11 } };

static void
build_broadcast(spate_env *env, struct fixture *fx)
{
    spate_stream *r = spate_broadcast_state(spate_source_collection(env, pair_type(env), rules, 4),
                                            "rules", spate_type_int64(), spate_type_int64());
    spate_stream *c = spate_connect(spate_key_by_field(source(env), 0), r);
    spate_stream *p = spate_broadcast_process(c, bc_element, bc_rule, pair_type(env));

    (void)fx;
    spate_value_state(p, "count", spate_type_int64(), 0);
    spate_sink(p, pair_sink);
}

static const struct op_case cases[] = {
    { OP_SOURCE_COLLECTION, "collection source", build_collection, 100, false },
    { OP_SOURCE_GENERATOR, "generator source", build_generator, 100, false },
    { OP_SOURCE_SOCKET,
      "socket source (reads a live connection that cannot be replayed, as Flink's "
      "socketTextStream: declared stateless)",
      NULL, 0, true },
    { OP_SOURCE_FILE, "file source", build_file, 100, false },
    { OP_MAP, "map", build_map, 100, false },
    { OP_FILTER, "filter", build_filter, 100, false },
    { OP_FLAT_MAP, "flat map", build_flat_map, 100, false },
    { OP_PROCESS, "keyed process function, every state kind, event-time timers", build_process, 130,
      false },
    { OP_REDUCE, "keyed reduce", build_reduce, 100, false },
    { OP_SUM, "keyed sum", build_sum, 100, false },
    { OP_SINK_PRINT, "print sink", build_sink_print, 100, false },
    { OP_SINK_FILE, "text file sink", build_sink_file, 100, false },
    { OP_SINK, "function sink", build_sink, 100, false },
    { OP_ASSIGN_TIMESTAMPS, "timestamps and watermarks", build_assign_timestamps, 100, false },
    { OP_WINDOW, "tumbling event-time window, reduce", build_tumbling_reduce, 130, false },
    { OP_WINDOW, "tumbling event-time window with lateness, aggregate",
      build_tumbling_late_aggregate, 130, false },
    { OP_WINDOW, "sliding event-time window, aggregate", build_sliding_aggregate, 130, false },
    { OP_WINDOW, "session window, process function", build_session_process, 130, false },
    { OP_WINDOW, "count window, process function", build_count_window, 100, false },
    { OP_CO_MAP, "co-map", build_co_map, 300, false },
    { OP_CO_PROCESS, "keyed co-process function", build_co_process, 300, false },
    { OP_BROADCAST_PROCESS, "broadcast process function", build_broadcast, 120, false },
};

/* Runs c's job, cut after `after` elements (-1: straight through), and
 * returns what its sinks emitted, sorted. */
static struct lines
run_case_on(const struct op_case *c, int64_t after, bool other_backend)
{
    struct fixture fx = { .dir = "/tmp/spate-opstate-XXXXXX" };
    spate_env *env = env_new(NULL, NULL);
    struct sync_cut cut = { c->kind, after, fx.dir, NULL, NULL, other_backend };
    struct accumulators acc;
    struct job_graph *jg;
    struct lines out = { 0 };
    spate_error err = { 0 };
    char *failure = NULL;
    char cmd[128];

    cr_assert_not_null(mkdtemp(fx.dir));
    cr_assert_not_null(fx.printed = tmpfile());
    cut.print_out = fx.printed;
    spate_env_set_parallelism(env, 1);
    c->build(env, &fx);
    if (fx.has_splits) {
        cut.splits = &fx.splits;
    }
    cr_assert_null(spate_env_error(env), "%s: %s", c->what, spate_env_error(env)->message);
    cr_assert_eq(job_graph_build(env, "t", &jg, &err), 0, "%s", err.message);
    accumulators_init(&acc);
    sync_run_cut(jg, &acc, &failure, &cut);
    cr_assert_null(failure, "%s: %s", c->what, failure);
    out = seen;
    memset(&seen, 0, sizeof seen);
    lines_of_file(&out, fx.printed);
    if (c->kind == OP_SINK_FILE) {
        char path[128];

        snprintf(path, sizeof path, "%s/made/by/sink", fx.dir);
        lines_of_folder(&out, path);
    }
    qsort(out.v, out.n, sizeof *out.v, cmp_str);
    fclose(fx.printed);
    if (fx.has_splits)
        sync_splits_release(&fx.splits);
    accumulators_release(&acc);
    job_graph_free(jg);
    env_free(env);
    snprintf(cmd, sizeof cmd, "rm -rf %s", fx.dir);
    cr_assert_eq(system(cmd), 0);
    return out;
}

Test(operator_state, every_operator_kind_has_a_case_and_declares_its_state)
{
    for (int k = 0; k < OP_PARTITION; k++) {
        bool found = false;

        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            found |= (int)cases[i].kind == k;
        cr_expect(found, "operator kind %s has no case in test_operator_state.c",
                  operator_kind_name((enum operator_kind)k));
    }
}

/* Records that differ between c's straight run and its restored one: none
 * allowed. */
static void
assert_same(const struct op_case *c, struct lines *straight, struct lines *restored,
            const char *across)
{
    size_t diff = 0;

    cr_expect_gt(straight->n, 0, "%s: emits nothing", c->what);
    for (size_t a = 0, b = 0; a < straight->n || b < restored->n;) {
        int d = a == straight->n   ? 1
                : b == restored->n ? -1
                                   : strcmp(straight->v[a], restored->v[b]);

        if (d != 0 && diff++ < 3)
            cr_log_error("%s: %s '%s'", c->what, d < 0 ? "lost" : "extra",
                         d < 0 ? straight->v[a] : restored->v[b]);
        a += d <= 0;
        b += d >= 0;
    }
    cr_expect_eq(diff, 0, "%s (%s): %zu records differ %s (%zu straight through, %zu across it)",
                 c->what, operator_kind_name(c->kind), diff, across, straight->n, restored->n);
    lines_free(straight);
    lines_free(restored);
}

static struct lines
run_case(const struct op_case *c, int64_t after)
{
    return run_case_on(c, after, false);
}

Test(operator_state, every_operator_kind_emits_the_same_across_a_checkpoint_and_restore)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct op_case *c = &cases[i];
        struct lines straight, restored;

        if (c->declared_only)
            continue;
        straight = run_case(c, -1);
        restored = run_case(c, c->cut);
        assert_same(c, &straight, &restored, "after a checkpoint and restore");
    }
}

/* Windows' state and timers restored by the other backend: the heap's
 * common window keeps a timer per window, but writes each key's timers,
 * which RocksDB's window (a timer per key) fires; and the heap takes
 * RocksDB's per-key timers back into its own form. */
Test(operator_state, windows_restored_onto_the_other_backend_emit_the_same)
{
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct op_case *c = &cases[i];
        struct lines straight, restored;

        if (c->kind != OP_WINDOW)
            continue;
        straight = run_case(c, -1);
        restored = run_case_on(c, c->cut, true);
        assert_same(c, &straight, &restored, "restored onto the other backend");
    }
}

static void
count_records(struct output *self, const void *rec, const struct record_meta *meta)
{
    (void)rec, (void)meta;
    (*(int *)(self + 1))++;
}

static void
ignore_watermark(struct output *self, int64_t watermark)
{
    (void)self, (void)watermark;
}

Test(operator_state, a_generator_restored_with_none_of_the_splits_emits_nothing)
{
    /* At another parallelism, a partly finished generator's splits go to
     * the subtasks still running: a new subtask may get none of them, and
     * must not start a fresh range over (its records were emitted). */
    spate_env *env = env_new(NULL, NULL);
    struct {
        struct output base;
        int n;
    } out = { .base = { .collect = count_records, .emit_watermark = ignore_watermark } };
    struct task_info task = { 0 };
    struct operator_settings settings;
    struct stream_operator *op;
    spate_error err = { 0 };

    task.connectors = connectors_builtin();
    task.parallelism = 2;
    task.max_parallelism = 128;
    task.task_name = "generator";
    stream_node_settings(spate_source_generator(env, gen_pair, pair_type(env), 1000, 0), &settings);
    for (int restored = 0; restored <= 1; restored++) {
        out.n = 0;
        cr_assert_eq(operator_new(&settings, 0, &task, &out.base, &op, &err), 0, "%s", err.message);
        op->restored = restored; /* as task_restore, given no element */
        while (op->vt->poll(op, 100, &err) != SOURCE_END)
            ;
        /* Fresh, subtask 0 of 2 owns splits 0-63 of 128: 512 of 1000. */
        cr_assert_eq(out.n, restored ? 0 : 512, "restored %d: %d records", restored, out.n);
        operator_free(op);
    }
    env_free(env);
}

Test(operator_state, a_snapshot_refuses_state_it_cannot_capture)
{
    struct operator_vtable vt = { 0 };
    struct operator_settings cfg = { 0 };
    struct stream_operator op = { 0 };
    spate_error err = { 0 };

    cfg.kind = OP_SUM;
    cfg.name = "counts";
    op.config = &cfg;
    op.vt = &vt;
    /* A kind that declares nothing. */
    cr_assert_neq(operator_check_state(&op, &err), 0);
    cr_assert(strstr(err.message, "'counts'") && strstr(err.message, "declares no state"), "%s",
              err.message);
    /* Keyed state declared, kept outside a backend: the old sum. */
    vt.state = OPERATOR_KEYED_STATE;
    cr_assert_neq(operator_check_state(&op, &err), 0);
    cr_assert(strstr(err.message, "'counts'") && strstr(err.message, "outside a state backend"),
              "%s", err.message);
    /* State of its own without a snapshot. */
    vt.state = OPERATOR_OWN_STATE;
    cr_assert_neq(operator_check_state(&op, &err), 0);
    cr_assert(strstr(err.message, "cannot snapshot"), "%s", err.message);
    /* Declared stateless; a process function on a non-keyed stream. */
    vt.state = OPERATOR_STATELESS;
    cr_assert_eq(operator_check_state(&op, &err), 0);
    vt.state = OPERATOR_KEYED_STATE | OPERATOR_STATE_IF_KEYED;
    cfg.kind = OP_PROCESS;
    cr_assert_eq(operator_check_state(&op, &err), 0);
    cfg.key.kind = KEY_FIELD;
    cr_assert_neq(operator_check_state(&op, &err), 0);
}
