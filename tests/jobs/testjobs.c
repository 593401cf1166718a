/* Job library of the end-to-end job tests (tests/e2e/test_jobs.py), built
 * as users build theirs. The first argument picks the job:
 *
 *   params    --factor K --count N --output PATH   values i*K, K parsed here
 *             and handed to the map as its parameter (no globals)
 *   partition --how H --count N --output PATH [--chain C] [--group]
 *             generator (parallelism 2) -> H -> Route (parallelism -p) ->
 *             file; Route writes "source_subtask route_subtask value", so the
 *             test sees where every record went. H: forward, rebalance,
 *             rescale, shuffle, broadcast, global, none. C: default,
 *             disable (Route's chaining off), new-chain (Route starts a new
 *             chain), env (chaining off for the whole job). --group: Route in
 *             slot sharing group "other".
 *   unbounded                                      runs until cancelled
 *   fail      --at K                               Map fails at value K
 *   outside                                        a map function that is not
 *             in this library (libc's abort)
 *   stuck                                          a map that never returns,
 *             cancelled or not (task.cancellation.timeout must end it)
 *   checkpointed --count N --rate R --keys K --output DIR [--interval MS]
 *             [--at-least-once] [--slow-ms M | --slow-us U] [--input DIR]
 *             [--fail-at V --marker PATH] [--second-output DIR2]
 *             checkpoints every MS (200): generator (or the numbers of the
 *             files in --input, a line each) -> [Slow: sleeps a
 *             record] -> [Fail once: fails at value V while PATH does not
 *             exist, making it, so only the first attempt fails] -> To key
 *             (v % K) -> Count (a ValueState per key, emits (key, count))
 *             -> exactly-once text file sink DIR. Key k's counts are 1 ..
 *             n_k: a committed output with each exactly once is an
 *             uninterrupted run's (the checkpoint tests). --second-output:
 *             an independent copy of the pipeline (another pipelined
 *             region), without Slow and Fail once, into DIR2.
 *   windowed --count N --rate R --keys K --output DIR [--window W]
 *             [--period P] [--interval MS] [--changed]
 *             the savepoint tests' job, event time = the index (ms):
 *             generator (uid "events", (key i*7919 % K, i)) -> timestamps
 *             and watermarks (monotonous) -> key_by key -> a tumbling
 *             event-time window of W ms (100) counting (uid "windows") and
 *             a KeyedProcessFunction (uid "timers") counting per key and
 *             period of P ms (70) in a MapState, emitting at an event-time
 *             timer at the period's end -> union -> exactly-once text file
 *             sink DIR (uid "sink"), lines "kind,key,end,count" (kind 1:
 *             window, 2: timer). Checkpoints every MS (1000). --changed: a
 *             changed program: "timers" removed, a map "Tag" (uid "tag")
 *             added before the sink. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <spate/spate.h>

struct routed {
    int64_t value;
    int64_t from; /* the generating subtask */
};

struct count {
    int64_t key;
    int64_t n;
};

struct fail_params {
    int64_t at;
    char marker[512];
};

static int64_t
arg_int(int argc, char **argv, const char *name, int64_t dflt)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return strtoll(argv[i + 1], NULL, 10);
    return dflt;
}

static const char *
arg_str(int argc, char **argv, const char *name, const char *dflt)
{
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return argv[i + 1];
    return dflt;
}

static bool
arg_flag(int argc, char **argv, const char *name)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], name) == 0)
            return true;
    return false;
}

static void
gen_index(spate_ctx *ctx, uint64_t index, void *out)
{
    (void)ctx;
    *(int64_t *)out = (int64_t)index;
}

static void
gen_routed(spate_ctx *ctx, uint64_t index, void *out)
{
    struct routed *r = out;

    r->value = (int64_t)index;
    r->from = spate_ctx_subtask_index(ctx);
}

/* ---- params ---- */

struct scale_params {
    int64_t factor;
};

static void
scale(spate_ctx *ctx, const void *in, void *out)
{
    size_t len;
    const struct scale_params *p = spate_ctx_params(ctx, &len);

    *(int64_t *)out = *(const int64_t *)in * p->factor;
}

static int
job_params(spate_env *env, int argc, char **argv)
{
    struct scale_params p = { arg_int(argc, argv, "--factor", 1) };
    spate_stream *s = spate_source_generator(env, gen_index, spate_type_int64(),
                                             (uint64_t)arg_int(argc, argv, "--count", 1000), 0);

    /* Rebalanced, so that with two TaskExecutors records cross them. */
    s = spate_params(spate_name(spate_map(spate_rebalance(s), scale, spate_type_int64()), "Scale"),
                     &p, sizeof p);
    spate_sink_text_file(s, arg_str(argc, argv, "--output", "params.out"));
    return spate_execute(env, "Params");
}

/* ---- partition ---- */

/* (value, from) -> "from route value" */
static void
route(spate_ctx *ctx, const void *in, void *out)
{
    const struct routed *r = in;
    spate_str *s = out;
    char *buf = spate_ctx_alloc(ctx, 64);

    s->len = (size_t)snprintf(buf, 64, "%lld %d %lld", (long long)r->from,
                              spate_ctx_subtask_index(ctx), (long long)r->value);
    s->data = buf;
}

static int
job_partition(spate_env *env, int argc, char **argv)
{
    const char *how = arg_str(argc, argv, "--how", "none");
    const char *chain = arg_str(argc, argv, "--chain", "default");
    const spate_type *fields[] = { spate_type_int64(), spate_type_int64() };
    /* Forward needs equal parallelism on both sides; so does chaining. */
    bool pairs = strcmp(how, "forward") == 0 || strcmp(how, "none") == 0;
    int p = pairs ? 2 : spate_env_parallelism(env);
    spate_stream *s, *r, *sink;

    if (strcmp(chain, "env") == 0)
        spate_env_disable_chaining(env);
    s = spate_source_generator(env, gen_routed, spate_type_tuple(env, 2, fields),
                               (uint64_t)arg_int(argc, argv, "--count", 1000), 0);
    s = spate_uid(spate_name(spate_set_parallelism(s, 2), "Numbers"), "numbers");
    if (strcmp(how, "forward") == 0)
        s = spate_forward(s);
    else if (strcmp(how, "rebalance") == 0)
        s = spate_rebalance(s);
    else if (strcmp(how, "rescale") == 0)
        s = spate_rescale(s);
    else if (strcmp(how, "shuffle") == 0)
        s = spate_shuffle(s);
    else if (strcmp(how, "broadcast") == 0)
        s = spate_broadcast(s);
    else if (strcmp(how, "global") == 0)
        s = spate_global(s);
    else if (strcmp(how, "none") != 0) {
        fprintf(stderr, "testjobs: unknown partitioning '%s'\n", how);
        return SPATE_EINVAL;
    }
    r = spate_uid(spate_name(spate_map(s, route, spate_type_string()), "Route"), "route");
    spate_set_parallelism(r, p);
    if (strcmp(chain, "disable") == 0)
        spate_disable_chaining(r);
    else if (strcmp(chain, "new-chain") == 0)
        spate_start_new_chain(r);
    if (arg_flag(argc, argv, "--group"))
        spate_slot_sharing_group(r, "other");
    sink = spate_sink_text_file(r, arg_str(argc, argv, "--output", "partition.out"));
    spate_set_parallelism(sink, p);
    return spate_execute(env, "Partitioning");
}

/* ---- unbounded, fail, outside ---- */

static void
discard(spate_ctx *ctx, const void *in)
{
    (void)ctx;
    (void)in;
}

static int
job_unbounded(spate_env *env)
{
    struct scale_params p = { 1 };
    spate_stream *s = spate_source_generator(env, gen_index, spate_type_int64(), 0, 100000);

    s = spate_params(spate_map(spate_rebalance(s), scale, spate_type_int64()), &p, sizeof p);
    spate_sink(s, discard);
    return spate_execute(env, "Unbounded");
}

static void
poison(spate_ctx *ctx, const void *in, void *out)
{
    size_t len;
    const int64_t *at = spate_ctx_params(ctx, &len);
    int64_t v = *(const int64_t *)in;

    if (v == *at)
        spate_ctx_fail(ctx, "record %lld is poison", (long long)v);
    *(int64_t *)out = v;
}

static int
job_fail(spate_env *env, int argc, char **argv)
{
    int64_t at = arg_int(argc, argv, "--at", 42);
    spate_stream *s = spate_source_generator(env, gen_index, spate_type_int64(), 1000, 0);

    s = spate_params(spate_name(spate_map(s, poison, spate_type_int64()), "Poison"), &at,
                     sizeof at);
    spate_sink(s, discard);
    return spate_execute(env, "Failing");
}

static int
job_outside(spate_env *env)
{
    spate_stream *s = spate_source_generator(env, gen_index, spate_type_int64(), 10, 0);

    /* A function of libc, not of this library: it cannot be sent anywhere. */
    spate_sink(spate_map(s, (spate_map_fn)(void (*)(void))abort, spate_type_int64()), discard);
    return spate_execute(env, "Outside");
}

static void
hang(spate_ctx *ctx, const void *in, void *out)
{
    static const char entered[] = "Hang: entered\n";

    (void)ctx;
    (void)in;
    (void)out;
    /* Tells the test the task is in here (its output is the test's). */
    if (write(1, entered, sizeof entered - 1) < 0)
        abort();
    for (;;)
        pause();
}

static int
job_stuck(spate_env *env)
{
    spate_stream *s = spate_source_generator(env, gen_index, spate_type_int64(), 10, 0);

    spate_sink(spate_name(spate_map(s, hang, spate_type_int64()), "Hang"), discard);
    return spate_execute(env, "Stuck");
}

static void
slow(spate_ctx *ctx, const void *in, void *out)
{
    const int64_t *us = spate_ctx_params(ctx, NULL);
    struct timespec ts = { *us / 1000000, (*us % 1000000) * 1000 };

    nanosleep(&ts, NULL);
    *(int64_t *)out = *(const int64_t *)in;
}

/* A line of the input files: a decimal number. */
static void
parse(spate_ctx *ctx, const void *in, void *out)
{
    const spate_str *line = in;
    char buf[32];
    size_t n = line->len < sizeof buf - 1 ? line->len : sizeof buf - 1;

    (void)ctx;
    memcpy(buf, line->data, n);
    buf[n] = '\0';
    *(int64_t *)out = strtoll(buf, NULL, 10);
}

static void
fail_once(spate_ctx *ctx, const void *in, void *out)
{
    const struct fail_params *p = spate_ctx_params(ctx, NULL);
    int64_t v = *(const int64_t *)in;

    if (v == p->at) {
        int fd = open(p->marker, O_WRONLY | O_CREAT | O_EXCL, 0644);

        if (fd >= 0) {
            close(fd);
            spate_ctx_fail(ctx, "failing once at value %lld", (long long)v);
        }
    }
    *(int64_t *)out = v;
}

static void
to_key(spate_ctx *ctx, const void *in, void *out)
{
    const int64_t *keys = spate_ctx_params(ctx, NULL);

    *(int64_t *)out = *(const int64_t *)in % *keys;
}

/* The running count of the record's key, in a ValueState. */
static void
count(spate_ctx *ctx, const void *in)
{
    spate_state *st = spate_ctx_state(ctx, "count");
    struct count c = { *(const int64_t *)in, 0 };

    spate_value_get(st, &c.n);
    c.n++;
    spate_value_update(st, &c.n);
    spate_emit(ctx, &c);
}

static int
job_checkpointed(spate_env *env, int argc, char **argv)
{
    const spate_type *i64 = spate_type_int64();
    const spate_type *fields[2] = { i64, i64 };
    const spate_type *pair = spate_type_tuple(env, 2, fields);
    int64_t keys = arg_int(argc, argv, "--keys", 10);
    int64_t slow_us =
        arg_int(argc, argv, "--slow-ms", 0) * 1000 + arg_int(argc, argv, "--slow-us", 0);
    const char *input = arg_str(argc, argv, "--input", NULL);
    int64_t interval = arg_int(argc, argv, "--interval", 200);
    struct fail_params fp = { arg_int(argc, argv, "--fail-at", -1), "" };
    spate_stream *s;

    snprintf(fp.marker, sizeof fp.marker, "%s", arg_str(argc, argv, "--marker", ""));
    if (interval > 0)
        spate_env_enable_checkpointing(env, interval, !arg_flag(argc, argv, "--at-least-once"));
    if (input != NULL)
        s = spate_name(
            spate_map(spate_uid(spate_source_text_file(env, input), "source"), parse, i64),
            "Parse");
    else
        s = spate_uid(spate_source_generator(env, gen_index, i64,
                                             (uint64_t)arg_int(argc, argv, "--count", 1000),
                                             (double)arg_int(argc, argv, "--rate", 0)),
                      "source");
    if (slow_us > 0)
        s = spate_params(spate_name(spate_map(s, slow, i64), "Slow"), &slow_us, sizeof slow_us);
    if (fp.at >= 0 && fp.marker[0] != '\0')
        s = spate_params(spate_name(spate_map(s, fail_once, i64), "Fail once"), &fp, sizeof fp);
    s = spate_params(spate_name(spate_map(s, to_key, i64), "To key"), &keys, sizeof keys);
    s = spate_name(spate_process(spate_key_by_value(s), count, pair), "Count");
    s = spate_uid(spate_value_state(s, "count", i64, 0), "count");
    spate_uid(spate_sink_text_file(s, arg_str(argc, argv, "--output", "counts.out")), "sink");
    if (arg_str(argc, argv, "--second-output", NULL) != NULL) {
        /* An independent copy of the pipeline without failures: a pipelined
         * region of its own. */
        s = spate_source_generator(env, gen_index, i64,
                                   (uint64_t)arg_int(argc, argv, "--count", 1000),
                                   (double)arg_int(argc, argv, "--rate", 0));
        s = spate_params(spate_name(spate_map(spate_uid(s, "source-2"), to_key, i64), "To key 2"),
                         &keys, sizeof keys);
        s = spate_name(spate_process(spate_key_by_value(s), count, pair), "Count 2");
        s = spate_uid(spate_value_state(s, "count", i64, 0), "count-2");
        spate_uid(spate_sink_text_file(s, arg_str(argc, argv, "--second-output", NULL)), "sink-2");
    }
    return spate_execute(env, "Checkpointed count");
}

struct event {
    int64_t key, ts;
};

struct result {
    int64_t kind, key, end, count;
};

static void
gen_event(spate_ctx *ctx, uint64_t i, void *out)
{
    const int64_t *keys = spate_ctx_params(ctx, NULL);
    struct event *e = out;

    e->key = (int64_t)(i * 7919 % (uint64_t)*keys);
    e->ts = (int64_t)i;
}

static int64_t
event_ts(spate_ctx *ctx, const void *rec)
{
    (void)ctx;
    return ((const struct event *)rec)->ts;
}

static void
count_window(spate_ctx *ctx, spate_time_window w, spate_iter *elements)
{
    struct result r = { 1, 0, w.end, 0 };
    struct event e;

    memcpy(&r.key, spate_ctx_current_key(ctx).data, 8);
    while (spate_list_next(elements, &e))
        r.count++;
    spate_emit(ctx, &r);
}

/* Counts the key's records per period in a MapState (period end -> count)
 * and asks for an event-time timer at the period's end. */
static void
count_period(spate_ctx *ctx, const void *in)
{
    const int64_t *period = spate_ctx_params(ctx, NULL);
    spate_state *st = spate_ctx_state(ctx, "periods");
    const struct event *e = in;
    int64_t end = e->ts / *period * *period + *period, n = 0;

    spate_map_get(st, &end, &n);
    n++;
    spate_map_put(st, &end, &n);
    spate_timer_register_event_time(ctx, end - 1);
}

static void
period_timer(spate_ctx *ctx, int64_t timestamp, bool event_time)
{
    spate_state *st = spate_ctx_state(ctx, "periods");
    struct result r = { 2, 0, timestamp + 1, 0 };

    if (!event_time || !spate_map_get(st, &r.end, &r.count))
        return;
    spate_map_remove(st, &r.end);
    memcpy(&r.key, spate_ctx_current_key(ctx).data, 8);
    spate_emit(ctx, &r);
}

static void
tag(spate_ctx *ctx, const void *in, void *out)
{
    (void)ctx;
    memcpy(out, in, sizeof(struct result));
}

static int
job_windowed(spate_env *env, int argc, char **argv)
{
    const spate_type *i64 = spate_type_int64();
    const spate_type *ef[2] = { i64, i64 }, *rf[4] = { i64, i64, i64, i64 };
    const spate_type *et = spate_type_tuple(env, 2, ef), *rt = spate_type_tuple(env, 4, rf);
    int64_t keys = arg_int(argc, argv, "--keys", 10);
    int64_t period = arg_int(argc, argv, "--period", 70);
    int64_t interval = arg_int(argc, argv, "--interval", 1000);
    bool changed = arg_flag(argc, argv, "--changed");
    spate_watermark_strategy ws = spate_watermarks_monotonous(event_ts);
    spate_stream *events, *keyed, *out;

    if (interval > 0)
        spate_env_enable_checkpointing(env, interval, true);
    events = spate_uid(spate_source_generator(env, gen_event, et,
                                              (uint64_t)arg_int(argc, argv, "--count", 10000),
                                              (double)arg_int(argc, argv, "--rate", 0)),
                       "events");
    events = spate_params(events, &keys, sizeof keys);
    events = spate_uid(spate_assign_timestamps_and_watermarks(events, &ws), "watermarks");
    keyed = spate_key_by_field(events, 0);
    out = spate_window(keyed, spate_tumbling_event_time(arg_int(argc, argv, "--window", 100)));
    out = spate_name(spate_uid(spate_window_process(out, count_window, rt), "windows"), "Windows");
    if (!changed) {
        spate_stream *t =
            spate_name(spate_process(spate_key_by_field(events, 0), count_period, rt), "Timers");

        t = spate_params(spate_on_timer(t, period_timer), &period, sizeof period);
        t = spate_uid(spate_map_state(t, "periods", i64, i64, 0), "timers");
        out = spate_union(out, t);
    } else {
        out = spate_uid(spate_name(spate_map(out, tag, rt), "Tag"), "tag");
    }
    spate_uid(spate_sink_text_file(out, arg_str(argc, argv, "--output", "windows.out")), "sink");
    return spate_execute(env, changed ? "Windowed (changed)" : "Windowed");
}

int
spate_job_main(spate_env *env, int argc, char **argv)
{
    const char *job = argc > 1 ? argv[1] : "";

    if (strcmp(job, "params") == 0)
        return job_params(env, argc, argv);
    if (strcmp(job, "partition") == 0)
        return job_partition(env, argc, argv);
    if (strcmp(job, "unbounded") == 0)
        return job_unbounded(env);
    if (strcmp(job, "fail") == 0)
        return job_fail(env, argc, argv);
    if (strcmp(job, "outside") == 0)
        return job_outside(env);
    if (strcmp(job, "stuck") == 0)
        return job_stuck(env);
    if (strcmp(job, "checkpointed") == 0)
        return job_checkpointed(env, argc, argv);
    if (strcmp(job, "windowed") == 0)
        return job_windowed(env, argc, argv);
    fprintf(stderr, "testjobs: which job? params, partition, unbounded, fail, outside, stuck, "
                    "checkpointed or windowed\n");
    return SPATE_EINVAL;
}
