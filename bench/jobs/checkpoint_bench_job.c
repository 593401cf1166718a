/* The job of checkpoint_bench, written as a user writes it, against the
 * public API only:
 *
 *   --count N (0: unbounded) --keys K [--rate R]
 *
 * the benchmarks' keyed window tuples (x = h(3, j), value (x >> 32) % 1000)
 * keyed over K keys ((uint32)x % K); each key holds a 96-byte ValueState
 * (count, sum and 80 bytes of payload) read and written per record; the
 * keyed process function emits (key, count), and the sink adds the counts
 * into the accumulator "checksum" (the sum over keys of n(n+1)/2 when every
 * record is counted once). */
#include <stdlib.h>
#include <string.h>

#include <spate/spate.h>

#include "../bench_data.h"

struct tuple {
    int64_t key;
    int64_t value;
};

/* The per-key state: 96 bytes. */
struct key_state {
    int64_t count;
    int64_t sum;
    uint8_t payload[80];
};

static void
generate(spate_ctx *ctx, uint64_t j, void *out)
{
    const uint64_t *keys = spate_ctx_params(ctx, NULL);
    struct tuple *t = out;
    uint64_t x = bench_h(3, j);

    t->key = (int64_t)((uint32_t)x % *keys);
    t->value = (int64_t)((x >> 32) % 1000);
}

static void
update(spate_ctx *ctx, const void *in)
{
    const struct tuple *t = in;
    spate_state *st = spate_ctx_state(ctx, "state");
    struct key_state s;
    struct tuple out;

    if (!spate_value_get(st, &s))
        memset(&s, 0, sizeof s);
    s.count++;
    s.sum += t->value;
    s.payload[s.count % sizeof s.payload] ^= (uint8_t)t->value;
    spate_value_update(st, &s);
    out.key = t->key;
    out.value = s.count;
    spate_emit(ctx, &out);
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
    const spate_type_def state_def = {
        "checkpoint_bench.key_state", 1, sizeof(struct key_state), NULL, NULL, NULL
    };
    const spate_type *state_type = spate_type_custom(env, &state_def);
    uint64_t count = 10000000, keys = 1000000;
    double rate = 0;
    spate_stream *s;

    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--count") == 0)
            count = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--keys") == 0)
            keys = strtoull(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--rate") == 0)
            rate = strtod(argv[i + 1], NULL);
    }
    if (keys == 0)
        keys = 1;
    s = spate_source_generator(env, generate, tt, count, rate);
    s = spate_uid(spate_name(spate_params(s, &keys, sizeof keys), "Tuples"), "tuples");
    s = spate_process(spate_key_by_field(s, 0), update, tt);
    s = spate_uid(spate_name(spate_value_state(s, "state", state_type, 0), "Update"), "update");
    s = spate_open_close(spate_sink(s, checksum), sink_open, NULL);
    spate_uid(spate_name(s, "Checksum"), "checksum");
    return spate_execute(env, "Checkpoint benchmark");
}
