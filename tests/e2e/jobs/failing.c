/* A job whose task fails at run time: record 500 of 1,000 is "poisoned".
 * Its error text must reach GET /jobs/:jobid/exceptions. */
#include "common.h"

static void
check(spate_ctx *ctx, const void *in, void *out)
{
    int64_t v = *(const int64_t *)in;

    if (v == 500)
        spate_ctx_fail(ctx, "record %lld is poisoned", (long long)v);
    *(int64_t *)out = v;
}

int
spate_job_main(spate_env *env, int argc, char **argv)
{
    spate_stream *s;

    (void)argc;
    (void)argv;
    s = spate_source_generator(env, gen, spate_type_int64(), 1000, 0);
    s = spate_name(spate_map(s, check, spate_type_int64()), "Check");
    spate_sink(s, drop);
    return spate_execute(env, "Failing");
}
