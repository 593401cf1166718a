/* A job library for unit tests, built like a user's: a shared object with
 * static functions, resolved against the test program's spate_* symbols. */
#include <stdio.h>
#include <string.h>

#include <spate/spate.h>

static int64_t calls; /* per loaded copy: each job has its own globals */

static void
square(spate_ctx *ctx, const void *in, void *out)
{
    const int64_t *offset = spate_ctx_params(ctx, NULL);

    calls++;
    *(int64_t *)out = *(const int64_t *)in * *(const int64_t *)in + *offset;
}

static spate_bytes
parity(spate_ctx *ctx, const void *in, void *scratch, size_t cap)
{
    (void)ctx;
    (void)cap;
    *(int64_t *)scratch = *(const int64_t *)in % 2;
    return (spate_bytes){ scratch, 8 };
}

static void
gen(spate_ctx *ctx, uint64_t i, void *out)
{
    (void)ctx;
    *(int64_t *)out = (int64_t)i;
}

static void
record_sink(spate_ctx *ctx, const void *in)
{
    int64_t *out = *(int64_t *const *)spate_ctx_params(ctx, NULL);

    out[0]++;
    if (*(const int64_t *)in > out[1])
        out[1] = *(const int64_t *)in;
}

/* argv[1]: the address of an int64_t[2] for the sink (count, max), as text. */
int
spate_job_main(spate_env *env, int argc, char **argv)
{
    int64_t offset = 1;
    int64_t *results = NULL;
    spate_stream *s;

    if (argc > 1)
        sscanf(argv[1], "%p", (void **)&results);
    s = spate_source_generator(env, gen, spate_type_int64(), 100, 0);
    s = spate_params(spate_map(s, square, spate_type_int64()), &offset, sizeof offset);
    s = spate_sum(spate_key_by(s, parity), -1);
    spate_params(spate_sink(s, record_sink), &results, sizeof results);
    return spate_execute(env, "testjob");
}

__attribute__((visibility("default"))) int64_t testjob_calls(void);
int64_t
testjob_calls(void)
{
    return calls;
}
