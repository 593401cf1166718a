/* Polling waits of the unit tests, as e2e/spatetest.py's wait_for: every
 * wait has a deadline and, when it gives up, says what it waited for. A
 * test never sleeps and then asserts. */
#ifndef SPATE_TESTS_UNIT_WAIT_H
#define SPATE_TESTS_UNIT_WAIT_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <time.h>

#include "core/clock.h"

/* Polls cond every millisecond until it holds; fails the test naming what
 * (a string) after seconds. */
#define WAIT_FOR(cond, seconds, what)                                                          \
    do {                                                                                       \
        uint64_t wait_deadline_ = clock_mono_ns() + (uint64_t)(seconds)*1000000000u;           \
        while (!(cond)) {                                                                      \
            if (clock_mono_ns() > wait_deadline_)                                              \
                cr_assert_fail("timed out after %d s waiting for %s", (int)(seconds), (what)); \
            nanosleep(&(struct timespec){ 0, 1000000 }, NULL);                                 \
        }                                                                                      \
    } while (0)

#endif
