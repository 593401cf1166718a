/* Unit tests of src/core/clock.h. */
#include <criterion/criterion.h>
#include <time.h>

#include "core/clock.h"

Test(clock, monotonic_never_goes_back)
{
    uint64_t prev = clock_mono_ns();

    for (int i = 0; i < 100000; i++) {
        uint64_t now = clock_mono_ns();

        cr_assert_geq(now, prev);
        prev = now;
    }
    cr_assert_leq(clock_mono_ms(), clock_mono_us() / 1000 + 1);
}

Test(clock, wall_clock_is_epoch_milliseconds)
{
    int64_t ms = clock_wall_ms();
    time_t s = time(NULL);

    cr_assert_geq(ms / 1000, (int64_t)s - 1);
    cr_assert_leq(ms / 1000, (int64_t)s + 1);
}
