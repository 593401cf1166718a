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
 *   slots     --slots N [--run-ms MS | --until PATH]
 *             a source of N subtasks chained into a sink that drops its
 *             records, one slot each (the cluster and HA tests' job): runs
 *             until cancelled; --run-ms: each subtask emits 100 records a
 *             second (at least 128 over all) and then finishes, after about
 *             MS ms; --until: each subtask finishes once PATH exists
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
 *             added before the sink.
 *   operators --count N --rate R --keys K --output DIR [--interval MS] ...
 *             every stateful operator kind as branches of one generator,
 *             each into its own exactly-once sink DIR/<branch> (the kill -9
 *             suite, tests/e2e/test_operator_failover.py; see job_operators). */
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

/* ---- slots ---- */

struct slots_params {
    char until[512]; /* "": none */
};

/* The index; with --until, only once the file exists (each subtask's first
 * record waits for it, the others find it at once). */
static void
gen_until(spate_ctx *ctx, uint64_t index, void *out)
{
    const struct slots_params *p = spate_ctx_params(ctx, NULL);
    struct timespec ts = { 0, 10 * 1000 * 1000 };

    while (p->until[0] != '\0' && access(p->until, F_OK) != 0)
        nanosleep(&ts, NULL);
    *(int64_t *)out = (int64_t)index;
}

static int
job_slots(spate_env *env, int argc, char **argv)
{
    int64_t n = arg_int(argc, argv, "--slots", 1);
    int64_t run_ms = arg_int(argc, argv, "--run-ms", 0);
    struct slots_params p = { "" };
    uint64_t count = 0;
    double rate = 0;
    spate_stream *s;

    if (n < 1 || n > 128 || run_ms < 0) {
        /* 128: the default max parallelism, a split for every subtask. */
        fprintf(stderr, "testjobs: slots: --slots must be 1 to 128 and --run-ms not "
                        "negative\n");
        return SPATE_EINVAL;
    }
    snprintf(p.until, sizeof p.until, "%s", arg_str(argc, argv, "--until", ""));
    if (run_ms > 0) {
        rate = 100.0 * (double)n;
        count = (uint64_t)(rate * (double)run_ms / 1000.0);
        count = count < 128 ? 128 : count; /* a record for every split */
    } else if (p.until[0] != '\0') {
        count = 128 * (uint64_t)n;
    } else {
        rate = 10.0 * (double)n; /* unbounded, slowly */
    }
    s = spate_source_generator(env, gen_until, spate_type_int64(), count, rate);
    s = spate_set_parallelism(spate_params(spate_name(s, "Slots"), &p, sizeof p), (int)n);
    spate_set_parallelism(spate_name(spate_sink(s, discard), "Discard"), (int)n);
    return spate_execute(env, "Slots");
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
    /* The delay owed by this task thread, slept once it reaches 2 ms: a
     * nanosleep per record of a few microseconds would sleep the timer
     * slack (50 us) each time, many times the delay asked. */
    static _Thread_local int64_t owed_us;
    const int64_t *us = spate_ctx_params(ctx, NULL);

    if ((owed_us += *us) >= 2000) {
        struct timespec ts = { owed_us / 1000000, (owed_us % 1000000) * 1000 };

        nanosleep(&ts, NULL);
        owed_us = 0;
    }
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

/* ---- staggered: sources that end at different times (FLIP-147) ----
 *
 *   staggered --count N --rate R --keys K --output DIR [--sources M]
 *             [--interval MS]
 *             M generators (3) of parallelism 1, source m (uid "source-m")
 *             emitting m * 1000000000 + i for i < (m + 1) * N at R a
 *             second, so that source m ends at (m + 1) * N / R s -> union
 *             -> To key (v % K) -> Count (ValueState) -> exactly-once text
 *             file sink DIR; checkpoints every MS (200). The tests of
 *             checkpoints after some tasks finished
 *             (tests/e2e/test_finished_checkpoints.py). */

static void
gen_staggered(spate_ctx *ctx, uint64_t index, void *out)
{
    const int64_t *source = spate_ctx_params(ctx, NULL);

    *(int64_t *)out = *source * 1000000000 + (int64_t)index;
}

static int
job_staggered(spate_env *env, int argc, char **argv)
{
    const spate_type *i64 = spate_type_int64();
    const spate_type *fields[2] = { i64, i64 };
    const spate_type *pair = spate_type_tuple(env, 2, fields);
    int64_t keys = arg_int(argc, argv, "--keys", 10);
    int64_t n = arg_int(argc, argv, "--count", 1000);
    int64_t sources = arg_int(argc, argv, "--sources", 3);
    double rate = (double)arg_int(argc, argv, "--rate", 0);
    spate_stream *all = NULL, *s;

    spate_env_enable_checkpointing(env, arg_int(argc, argv, "--interval", 200), true);
    for (int64_t m = 0; m < sources; m++) {
        char uid[32];

        snprintf(uid, sizeof uid, "source-%lld", (long long)m);
        s = spate_source_generator(env, gen_staggered, i64, (uint64_t)((m + 1) * n), rate);
        s = spate_set_parallelism(spate_params(spate_uid(s, uid), &m, sizeof m), 1);
        all = all == NULL ? s : spate_union(all, s);
    }
    s = spate_params(spate_name(spate_map(all, to_key, i64), "To key"), &keys, sizeof keys);
    s = spate_name(spate_process(spate_key_by_value(s), count, pair), "Count");
    s = spate_uid(spate_value_state(s, "count", i64, 0), "count");
    spate_uid(spate_sink_text_file(s, arg_str(argc, argv, "--output", "counts.out")), "sink");
    return spate_execute(env, "Staggered count");
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

    r.key = spate_ctx_current_key_int64(ctx);
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
    r.key = spate_ctx_current_key_int64(ctx);
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

/* ---- operators: every stateful operator kind under one source ---- */

/* testjobs' `operators` job (tests/e2e/test_operator_failover.py): one
 * generator, record i = (key i % K, event time ts(i) = i + i / B * G, i, 1),
 * so that time runs in blocks of B records with gaps of G ms between them;
 * the generator's splits and the exactly-once sinks hold operator (union)
 * list state. Each branch ends in a sink of its own, DIR/<branch>, and its
 * whole output follows from the index alone. */
struct op_params {
    int64_t keys, block, gap;
    int64_t timer_every;    /* states: a processing-time timer every n-th record of a key */
    int64_t timer_delay_ms; /* ... that far ahead */
    int64_t overdue;        /* states: records of the key after which an entry is overdue */
    int64_t second_every;   /* connected: the second input takes every n-th record */
    int64_t rule_every;     /* broadcast: every n-th record is a rule */
};

struct op_event {
    int64_t key, ts, i, one;
};

struct op_pair {
    int64_t a, b;
};

/* A window's line: every window function of one assigner writes the same. */
struct op_window_result {
    int64_t key, start, end, count, sum;
};

/* The keyed process function's lines: kind 1 per record, the count read
 * from each state kind (value, list, map, reducing, aggregating); kind 2 at
 * a block's event-time timer (block, records of the key in it); kind 3 an
 * entry n taken by a processing-time timer (or at the end of input); kind
 * 9 (n, count) an entry still pending `overdue` records of the key after
 * its timer was due: a processing-time timer lost. */
struct op_states_result {
    int64_t kind, key, a, b, c, d, e;
};

/* The two-input functions' lines: (kind, key, n, 0), see op_co_* and op_bc_*. */
struct op_co_result {
    int64_t kind, key, n, zero;
};

static const struct op_params *
op_params_of(spate_ctx *ctx)
{
    return spate_ctx_params(ctx, NULL);
}

static int64_t
op_key_of(spate_ctx *ctx)
{
    return spate_ctx_current_key_int64(ctx);
}

static void
op_gen(spate_ctx *ctx, uint64_t index, void *out)
{
    const struct op_params *p = op_params_of(ctx);
    struct op_event *e = out;
    int64_t i = (int64_t)index;

    e->key = i % p->keys;
    e->ts = i + i / p->block * p->gap;
    e->i = i;
    e->one = 1;
}

static int64_t
op_event_ts(spate_ctx *ctx, const void *rec)
{
    (void)ctx;
    return ((const struct op_event *)rec)->ts;
}

/* (key, 1) for the rolling sum and reduce. */
static void
op_ones(spate_ctx *ctx, const void *in, void *out)
{
    const struct op_event *e = in;
    struct op_pair *o = out;

    (void)ctx;
    o->a = e->key;
    o->b = 1;
}

static void
op_add_pairs(spate_ctx *ctx, const void *acc, const void *in, void *out)
{
    const struct op_pair *x = acc, *y = in;
    struct op_pair *o = out;

    (void)ctx;
    o->a = x->a;
    o->b = x->b + y->b;
}

/* ---- windows: reduce, aggregate and process give (key, start, end, count, sum of i) ---- */

static void
op_reduce_events(spate_ctx *ctx, const void *acc, const void *in, void *out)
{
    const struct op_event *x = acc, *y = in;
    struct op_event *o = out;

    (void)ctx;
    o->key = x->key;
    o->ts = x->ts > y->ts ? x->ts : y->ts;
    o->i = x->i + y->i;
    o->one = x->one + y->one;
}

static void
op_window_reduced(spate_ctx *ctx, spate_time_window w, spate_iter *elements)
{
    struct op_window_result r = { op_key_of(ctx), w.start, w.end, 0, 0 };
    struct op_event e;

    while (spate_list_next(elements, &e)) {
        r.count += e.one;
        r.sum += e.i;
    }
    spate_emit(ctx, &r);
}

static void
op_agg_create(spate_ctx *ctx, void *acc)
{
    (void)ctx;
    memset(acc, 0, sizeof(struct op_pair));
}

static void
op_agg_add(spate_ctx *ctx, const void *in, void *acc)
{
    const struct op_event *e = in;
    struct op_pair *a = acc;

    (void)ctx;
    a->a += e->one;
    a->b += e->i;
}

static void
op_agg_result(spate_ctx *ctx, const void *acc, void *out)
{
    (void)ctx;
    memcpy(out, acc, sizeof(struct op_pair));
}

static void
op_agg_merge(spate_ctx *ctx, const void *from, void *acc)
{
    const struct op_pair *f = from;
    struct op_pair *a = acc;

    (void)ctx;
    a->a += f->a;
    a->b += f->b;
}

static void
op_window_aggregated(spate_ctx *ctx, spate_time_window w, spate_iter *elements)
{
    struct op_window_result r = { op_key_of(ctx), w.start, w.end, 0, 0 };
    struct op_pair acc;

    while (spate_list_next(elements, &acc)) {
        r.count += acc.a;
        r.sum += acc.b;
    }
    spate_emit(ctx, &r);
}

/* A count window's line: (key, 0, 0, records, 0); which records a count
 * window holds depends on their arrival, its size does not. */
static void
op_count_window(spate_ctx *ctx, spate_time_window w, spate_iter *elements)
{
    struct op_window_result r = { op_key_of(ctx), 0, 0, 0, 0 };
    struct op_event e;

    (void)w;
    while (spate_list_next(elements, &e))
        r.count += e.one;
    spate_emit(ctx, &r);
}

/* ---- a keyed process function with every state kind and both timer kinds ---- */

static void
op_add_ints(spate_ctx *ctx, const void *acc, const void *in, void *out)
{
    (void)ctx;
    *(int64_t *)out = *(const int64_t *)acc + *(const int64_t *)in;
}

static void
op_count_create(spate_ctx *ctx, void *acc)
{
    (void)ctx;
    *(int64_t *)acc = 0;
}

static void
op_count_add(spate_ctx *ctx, const void *in, void *acc)
{
    (void)ctx;
    (void)in;
    ++*(int64_t *)acc;
}

static void
op_count_result(spate_ctx *ctx, const void *acc, void *out)
{
    (void)ctx;
    *(int64_t *)out = *(const int64_t *)acc;
}

static void
op_count_merge(spate_ctx *ctx, const void *from, void *acc)
{
    (void)ctx;
    *(int64_t *)acc += *(const int64_t *)from;
}

/* The event time of a timer that fires only at the end of input. */
#define OP_END_OF_TIME (INT64_MAX / 2)

/* Emits the key's pending processing-time entries (n -> n) and clears them. */
static void
op_flush_pending(spate_ctx *ctx)
{
    spate_state *pending = spate_ctx_state(ctx, "pending");
    struct op_states_result r = { 3, op_key_of(ctx), 0, 0, 0, 0, 0 };
    spate_iter it;
    int64_t n, same;
    bool any = false;

    spate_map_iter(pending, &it);
    while (spate_map_next(&it, &n, &same)) {
        r.a = n;
        spate_emit(ctx, &r);
        any = true;
    }
    if (any)
        spate_state_clear(pending);
}

/* A kind 9 line for each pending entry that the key's count has passed by
 * more than `overdue` records: its processing-time timer never fired. */
static void
op_check_overdue(spate_ctx *ctx, const struct op_params *p)
{
    struct op_states_result r = { 9, op_key_of(ctx), 0, 0, 0, 0, 0 };
    spate_iter it;
    int64_t n, same;

    spate_value_get(spate_ctx_state(ctx, "value"), &r.b);
    spate_map_iter(spate_ctx_state(ctx, "pending"), &it);
    while (spate_map_next(&it, &n, &same))
        if (r.b - n > p->overdue) {
            r.a = n;
            spate_emit(ctx, &r);
        }
}

static void
op_states(spate_ctx *ctx, const void *in)
{
    const struct op_params *p = op_params_of(ctx);
    const struct op_event *e = in;
    struct op_states_result r = { 1, e->key, 0, 0, 0, 0, 0 };
    spate_state *value = spate_ctx_state(ctx, "value");
    spate_state *list = spate_ctx_state(ctx, "list");
    spate_state *map = spate_ctx_state(ctx, "map");
    spate_state *reducing = spate_ctx_state(ctx, "reducing");
    spate_state *aggregating = spate_ctx_state(ctx, "aggregating");
    spate_state *blocks = spate_ctx_state(ctx, "blocks");
    int64_t one = 1, entries = 0, x, k, v, block, in_block = 0;
    spate_iter it;

    spate_value_get(value, &r.a);
    r.a++;
    spate_value_update(value, &r.a);
    /* The list holds ones, folded into one entry every 8: its sum is the count. */
    spate_list_iter(list, &it);
    while (spate_list_next(&it, &x)) {
        r.b += x;
        entries++;
    }
    if (entries >= 8) {
        spate_state_clear(list);
        spate_list_add(list, &r.b);
    }
    spate_list_add(list, &one);
    r.b++;
    /* The map counts the key's records by i % 4. */
    k = e->i % 4;
    v = 0;
    spate_map_get(map, &k, &v);
    v++;
    spate_map_put(map, &k, &v);
    spate_map_iter(map, &it);
    while (spate_map_next(&it, &k, &v))
        r.c += v;
    spate_reducing_add(reducing, &one);
    spate_reducing_get(reducing, &r.d);
    spate_aggregating_add(aggregating, e);
    spate_aggregating_get(aggregating, &r.e);
    spate_emit(ctx, &r);

    /* An event-time timer at the end of the record's block. */
    block = e->i / p->block;
    spate_map_get(blocks, &block, &in_block);
    in_block++;
    spate_map_put(blocks, &block, &in_block);
    spate_timer_register_event_time(ctx, block * (p->block + p->gap) + p->block - 1);
    /* Every timer_every-th record of the key: an entry for a processing-time
     * timer. Those still pending at the end of input (the job ends before
     * their time) are taken by an event-time timer at the end of time. */
    if (r.a % p->timer_every == 0) {
        spate_map_put(spate_ctx_state(ctx, "pending"), &r.a, &r.a);
        spate_timer_register_processing_time(ctx, spate_ctx_current_processing_time(ctx) +
                                                      p->timer_delay_ms);
        spate_timer_register_event_time(ctx, OP_END_OF_TIME);
    }
}

static void
op_states_timer(spate_ctx *ctx, int64_t timestamp, bool event_time)
{
    const struct op_params *p = op_params_of(ctx);

    if (!event_time || timestamp == OP_END_OF_TIME) {
        op_flush_pending(ctx);
    } else {
        spate_state *blocks = spate_ctx_state(ctx, "blocks");
        struct op_states_result r = {
            2, op_key_of(ctx), timestamp / (p->block + p->gap), 0, 0, 0, 0
        };

        if (spate_map_get(blocks, &r.a, &r.b)) {
            spate_map_remove(blocks, &r.a);
            spate_emit(ctx, &r);
        }
        op_check_overdue(ctx, p);
    }
}

/* ---- connected streams: a keyed co-process function with state ---- */

static void
op_second(spate_ctx *ctx, const void *in, void *out)
{
    const struct op_event *e = in;
    struct op_pair *o = out;

    (void)ctx;
    o->a = e->key;
    o->b = e->i;
}

static bool
op_is_second(spate_ctx *ctx, const void *in)
{
    return ((const struct op_event *)in)->i % op_params_of(ctx)->second_every == 0;
}

static bool
op_is_rule(spate_ctx *ctx, const void *in)
{
    return ((const struct op_event *)in)->i % op_params_of(ctx)->rule_every == 0;
}

/* Per record of input `side` (1 or 2): (0, key, n over both inputs) and
 * (side, key, n of that input), each from a ValueState. */
static void
op_co_count(spate_ctx *ctx, int64_t key, int side)
{
    spate_state *total = spate_ctx_state(ctx, "total");
    spate_state *mine = spate_ctx_state(ctx, side == 1 ? "first" : "second");
    struct op_co_result r = { 0, key, 0, 0 };

    spate_value_get(total, &r.n);
    r.n++;
    spate_value_update(total, &r.n);
    spate_emit(ctx, &r);
    r.kind = side;
    r.n = 0;
    spate_value_get(mine, &r.n);
    r.n++;
    spate_value_update(mine, &r.n);
    spate_emit(ctx, &r);
}

static void
op_co_first(spate_ctx *ctx, const void *in)
{
    op_co_count(ctx, ((const struct op_event *)in)->key, 1);
}

static void
op_co_second(spate_ctx *ctx, const void *in)
{
    op_co_count(ctx, ((const struct op_pair *)in)->a, 2);
}

/* ---- broadcast state ---- */

/* A rule: the broadcast state "rules" counts them under key 0 (each
 * instance alike); subtask 0 writes (1, 0, rules so far). */
static void
op_bc_rule(spate_ctx *ctx, const void *in)
{
    spate_state *rules = spate_ctx_state(ctx, "rules");
    struct op_co_result r = { 1, 0, 0, 0 };
    int64_t zero = 0;

    (void)in;
    spate_map_get(rules, &zero, &r.n);
    r.n++;
    spate_map_put(rules, &zero, &r.n);
    if (spate_ctx_subtask_index(ctx) == 0)
        spate_emit(ctx, &r);
}

/* An element (keyed): (2, key, n) from a ValueState. */
static void
op_bc_element(spate_ctx *ctx, const void *in)
{
    const struct op_event *e = in;
    spate_state *seen = spate_ctx_state(ctx, "seen");
    struct op_co_result r = { 2, e->key, 0, 0 };

    spate_value_get(seen, &r.n);
    r.n++;
    spate_value_update(seen, &r.n);
    spate_emit(ctx, &r);
}

/* The branch's exactly-once sink, DIR/<branch> (uid "sink-<branch>"). */
static void
op_sink(spate_stream *s, const char *dir, const char *branch)
{
    char path[1024], uid[64];

    snprintf(path, sizeof path, "%s/%s", dir, branch);
    snprintf(uid, sizeof uid, "sink-%s", branch);
    spate_uid(spate_name(spate_sink_text_file(s, path), uid), uid);
}

static spate_stream *
op_named(spate_stream *s, const char *uid)
{
    return spate_uid(spate_name(s, uid), uid);
}

static int
job_operators(spate_env *env, int argc, char **argv)
{
    const spate_type *i64 = spate_type_int64();
    const spate_type *f[7] = { i64, i64, i64, i64, i64, i64, i64 };
    const spate_type *event_t = spate_type_tuple(env, 4, f);
    const spate_type *pair_t = spate_type_tuple(env, 2, f);
    const spate_type *window_t = spate_type_tuple(env, 5, f);
    const spate_type *states_t = spate_type_tuple(env, 7, f);
    const spate_type *co_t = spate_type_tuple(env, 4, f);
    const char *out = arg_str(argc, argv, "--output", "operators.out");
    struct op_params p = {
        arg_int(argc, argv, "--keys", 7),          arg_int(argc, argv, "--block", 1000),
        arg_int(argc, argv, "--gap", 1000),        arg_int(argc, argv, "--timer-every", 50),
        arg_int(argc, argv, "--timer-delay", 100), arg_int(argc, argv, "--overdue", 2000),
        arg_int(argc, argv, "--second-every", 3),  arg_int(argc, argv, "--rule-every", 100),
    };
    int64_t interval = arg_int(argc, argv, "--interval", 200);
    spate_aggregate agg = {
        pair_t, pair_t, op_agg_create, op_agg_add, op_agg_result, op_agg_merge
    };
    spate_aggregate counter = { i64,           i64, op_count_create, op_count_add, op_count_result,
                                op_count_merge };
    spate_watermark_strategy ws = spate_watermarks_monotonous(op_event_ts);
    struct {
        const char *name;
        spate_window_assigner assigner;
    } assigners[3] = {
        { "tumbling", spate_tumbling_event_time(arg_int(argc, argv, "--tumbling", 400)) },
        { "sliding", spate_sliding_event_time(arg_int(argc, argv, "--sliding", 600),
                                              arg_int(argc, argv, "--slide", 200)) },
        { "session", spate_session_event_time(arg_int(argc, argv, "--session-gap", 50)) },
    };
    spate_stream *events, *ones, *s, *second, *rules;
    char name[64];

    if (p.keys <= 0 || p.block <= 0 || p.gap < 0 || p.timer_every <= 0 || p.overdue <= 0 ||
        p.second_every <= 0 || p.rule_every <= 0) {
        fprintf(stderr, "testjobs: operators: --keys, --block, --timer-every, --overdue, "
                        "--second-every and --rule-every must be positive, --gap not "
                        "negative\n");
        return SPATE_EINVAL;
    }
    if (interval > 0)
        spate_env_enable_checkpointing(env, interval, true);
    events = spate_source_generator(env, op_gen, event_t,
                                    (uint64_t)arg_int(argc, argv, "--count", 40000),
                                    (double)arg_int(argc, argv, "--rate", 0));
    events = spate_params(op_named(events, "events"), &p, sizeof p);
    events = spate_source_with_watermarks(events, &ws);

    /* Rolling sum and reduce: (key, n) for n = 1 .. the key's records. */
    ones = op_named(spate_map(events, op_ones, pair_t), "ones");
    op_sink(op_named(spate_sum(spate_key_by_field(ones, 0), 1), "sum"), out, "sum");
    op_sink(op_named(spate_reduce(spate_key_by_field(ones, 0), op_add_pairs), "reduce"), out,
            "reduce");

    /* Each event-time window kind with each window function. */
    for (int a = 0; a < 3; a++) {
        spate_stream *w;

        snprintf(name, sizeof name, "%s-reduce", assigners[a].name);
        w = spate_window(spate_key_by_field(events, 0), assigners[a].assigner);
        s = spate_window_reduce(w, op_reduce_events, op_window_reduced, window_t);
        op_sink(op_named(s, name), out, name);
        snprintf(name, sizeof name, "%s-aggregate", assigners[a].name);
        w = spate_window(spate_key_by_field(events, 0), assigners[a].assigner);
        s = spate_window_aggregate(w, &agg, op_window_aggregated, window_t);
        op_sink(op_named(s, name), out, name);
        snprintf(name, sizeof name, "%s-process", assigners[a].name);
        w = spate_window(spate_key_by_field(events, 0), assigners[a].assigner);
        s = spate_window_process(w, op_window_reduced, window_t);
        op_sink(op_named(s, name), out, name);
    }
    /* A count window (the global window with a count trigger). */
    s = spate_count_window(spate_key_by_field(events, 0), arg_int(argc, argv, "--count-window", 9));
    s = spate_window_reduce(s, op_reduce_events, op_count_window, window_t);
    op_sink(op_named(s, "count-window"), out, "count-window");

    /* A keyed process function with every state kind and both timer kinds. */
    s = spate_process(spate_key_by_field(events, 0), op_states, states_t);
    s = spate_value_state(op_named(s, "states"), "value", i64, 0);
    spate_list_state(s, "list", i64, 0);
    spate_map_state(s, "map", i64, i64, 0);
    spate_reducing_state(s, "reducing", i64, op_add_ints, 0);
    spate_aggregating_state(s, "aggregating", &counter, 0);
    spate_map_state(s, "blocks", i64, i64, 0);
    spate_map_state(s, "pending", i64, i64, 0);
    spate_params(spate_on_timer(s, op_states_timer), &p, sizeof p);
    op_sink(s, out, "states");

    /* Connected streams: a keyed co-process function with state. */
    second = spate_params(spate_filter(events, op_is_second), &p, sizeof p);
    second = op_named(spate_map(second, op_second, pair_t), "second");
    s = spate_connect(spate_key_by_field(events, 0), spate_key_by_field(second, 0));
    s = op_named(spate_co_process(s, op_co_first, op_co_second, co_t), "connected");
    spate_value_state(s, "total", i64, 0);
    spate_value_state(s, "first", i64, 0);
    spate_value_state(s, "second", i64, 0);
    op_sink(s, out, "connected");

    /* A broadcast process function: broadcast state and keyed state. */
    rules = spate_params(op_named(spate_filter(events, op_is_rule), "rules"), &p, sizeof p);
    rules = spate_broadcast_state(rules, "rules", i64, i64);
    s = spate_connect(spate_key_by_field(events, 0), rules);
    s = op_named(spate_broadcast_process(s, op_bc_element, op_bc_rule, co_t), "broadcast");
    spate_value_state(s, "seen", i64, 0);
    op_sink(s, out, "broadcast");
    return spate_execute(env, "Operators");
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
    if (strcmp(job, "slots") == 0)
        return job_slots(env, argc, argv);
    if (strcmp(job, "fail") == 0)
        return job_fail(env, argc, argv);
    if (strcmp(job, "outside") == 0)
        return job_outside(env);
    if (strcmp(job, "stuck") == 0)
        return job_stuck(env);
    if (strcmp(job, "checkpointed") == 0)
        return job_checkpointed(env, argc, argv);
    if (strcmp(job, "staggered") == 0)
        return job_staggered(env, argc, argv);
    if (strcmp(job, "windowed") == 0)
        return job_windowed(env, argc, argv);
    if (strcmp(job, "operators") == 0)
        return job_operators(env, argc, argv);
    fprintf(stderr, "testjobs: which job? params, partition, unbounded, slots, fail, outside, "
                    "stuck, checkpointed, staggered, windowed or operators\n");
    return SPATE_EINVAL;
}
