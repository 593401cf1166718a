/* What the test job libraries share: a generator of the numbers 0, 1, 2, …
 * and a sink that drops its records. Static: each library has its own. */
#ifndef SPATE_TESTS_E2E_JOBS_COMMON_H
#define SPATE_TESTS_E2E_JOBS_COMMON_H

#include <spate/spate.h>

static void
gen(spate_ctx *ctx, uint64_t index, void *out)
{
    (void)ctx;
    *(int64_t *)out = (int64_t)index;
}

static void
drop(spate_ctx *ctx, const void *in)
{
    (void)ctx;
    (void)in;
}

#endif
