/* The job of large_state_bench.py, written as a user writes it, against the
 * public API only:
 *
 *   --keys K --value-bytes V --changes C --change-rate R
 *
 * keyed state larger than memory: records 0 .. K-1 write key j once (the
 * load, as fast as the job goes), then C records at R per second each
 * update key h(5, j) % K (about R / K of the keys change per second). Each
 * key holds a V-byte ValueState (a count, then bytes that do not
 * compress), read and written per record; the keyed process function emits
 * (key, count), and the sink adds the counts into the accumulator
 * "checksum", which the benchmark checks against the same sequence
 * computed on its side: a record lost or counted twice changes it. The
 * keyed function times its own phases at parallelism 1, in the
 * accumulators "load_ns" (record 0 to record K-1) and "changes_ns" (record
 * K to the last), each added once its phase ran whole in one attempt: the
 * throughput of each phase without the job's start and end. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <spate/spate.h>

#include "../bench_data.h"

struct params {
    uint64_t keys, value_bytes, changes;
    double rate;
};

struct tuple {
    int64_t key;
    int64_t value;
};

/* The source's start of the changes (CLOCK_MONOTONIC ns; 0: not yet): the
 * source runs on one thread per subtask, the benchmark at parallelism 1. */
static __thread uint64_t changes_start;

static uint64_t
now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void
generate(spate_ctx *ctx, uint64_t j, void *out)
{
    const struct params *p = spate_ctx_params(ctx, NULL);
    struct tuple *t = out;

    t->value = (int64_t)j;
    if (j < p->keys) {
        t->key = (int64_t)j;
        return;
    }
    t->key = (int64_t)(bench_h(5, j) % p->keys);
    if (p->rate > 0) {
        /* The changes at their rate, from the first change on (a restore
         * starts over from its own first). */
        uint64_t due, now = now_ns();

        if (changes_start == 0)
            changes_start = now - (uint64_t)((double)(j - p->keys) * 1e9 / p->rate);
        due = changes_start + (uint64_t)((double)(j - p->keys) * 1e9 / p->rate);
        if (due > now) {
            struct timespec d = { (time_t)((due - now) / 1000000000u),
                                  (long)((due - now) % 1000000000u) };

            nanosleep(&d, NULL);
        }
    }
}

/* The keyed function's own: its value buffer and its phases' clocks. */
struct update_user {
    uint8_t *v;
    spate_counter *load_ns, *changes_ns;
    uint64_t load_t0, changes_t0; /* 0: the phase's first record not seen */
};

/* Times the phases [first, last] of the records: the phase's clock starts
 * at its first record and is added to acc at its last. */
static void
phase(uint64_t j, uint64_t first, uint64_t last, uint64_t *t0, spate_counter *acc)
{
    if (j == first)
        *t0 = now_ns();
    if (j == last && *t0 != 0)
        spate_counter_add(acc, (int64_t)(now_ns() - *t0));
}

static void
update(spate_ctx *ctx, const void *in)
{
    const struct params *p = spate_ctx_params(ctx, NULL);
    const struct tuple *t = in;
    spate_state *st = spate_ctx_state(ctx, "state");
    struct update_user *u = spate_ctx_user(ctx);
    uint8_t *v = u->v;
    uint64_t j = (uint64_t)t->value;
    struct tuple out;
    int64_t count = 0;

    if (spate_value_get(st, v))
        memcpy(&count, v, 8);
    count++;
    memcpy(v, &count, 8);
    for (uint64_t i = 8; i < p->value_bytes; i += 8) {
        uint64_t x = bench_h(6, (uint64_t)t->value * 1024 + i);

        memcpy(v + i, &x, p->value_bytes - i < 8 ? p->value_bytes - i : 8);
    }
    spate_value_update(st, v);
    out.key = t->key;
    out.value = count;
    spate_emit(ctx, &out);
    phase(j, 0, p->keys - 1, &u->load_t0, u->load_ns);
    if (p->changes > 0)
        phase(j, p->keys, p->keys + p->changes - 1, &u->changes_t0, u->changes_ns);
}

static void
update_open(spate_ctx *ctx)
{
    const struct params *p = spate_ctx_params(ctx, NULL);
    struct update_user *u = calloc(1, sizeof *u);

    u->v = calloc(1, p->value_bytes);
    u->load_ns = spate_ctx_counter(ctx, "load_ns");
    u->changes_ns = spate_ctx_counter(ctx, "changes_ns");
    spate_ctx_set_user(ctx, u);
}

static void
update_close(spate_ctx *ctx)
{
    struct update_user *u = spate_ctx_user(ctx);

    free(u->v);
    free(u);
}

static void
sink_open(spate_ctx *ctx)
{
    spate_ctx_set_user(ctx, spate_ctx_counter(ctx, "checksum"));
}

static void
checksum(spate_ctx *ctx, const void *in)
{
    spate_counter_add(spate_ctx_user(ctx), ((const struct tuple *)in)->value);
}

int
spate_job_main(spate_env *env, int argc, char **argv)
{
    const spate_type *tf[] = { spate_type_int64(), spate_type_int64() };
    const spate_type *tt = spate_type_tuple(env, 2, tf);
    struct params p = { 1000000, 1024, 0, 0 };
    spate_type_def state_def = { "large_state.value", 1, 0, NULL, NULL, NULL };
    spate_stream *s;

    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--keys") == 0)
            p.keys = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--value-bytes") == 0)
            p.value_bytes = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--changes") == 0)
            p.changes = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--change-rate") == 0)
            p.rate = strtod(argv[i + 1], NULL);
    }
    if (p.keys == 0)
        p.keys = 1;
    if (p.value_bytes < 8)
        p.value_bytes = 8;
    state_def.size = p.value_bytes;
    s = spate_source_generator(env, generate, tt, p.keys + p.changes, 0);
    s = spate_uid(spate_name(spate_params(s, &p, sizeof p), "Keys"), "keys");
    s = spate_process(spate_key_by_field(s, 0), update, tt);
    s = spate_params(spate_open_close(s, update_open, update_close), &p, sizeof p);
    s = spate_value_state(s, "state", spate_type_custom(env, &state_def), 0);
    s = spate_uid(spate_name(s, "Update"), "update");
    s = spate_open_close(spate_sink(s, checksum), sink_open, NULL);
    spate_uid(spate_name(s, "Checksum"), "checksum");
    return spate_execute(env, "Large state benchmark");
}
