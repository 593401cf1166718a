/* Clocks: monotonic time for timeouts and durations, wall time for timestamps
 * users see (job start times, checkpoint timestamps). Thread-safe. */
#ifndef SPATE_CORE_CLOCK_H
#define SPATE_CORE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t
clock_mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t
clock_mono_us(void)
{
    return clock_mono_ns() / 1000u;
}

static inline uint64_t
clock_mono_ms(void)
{
    return clock_mono_ns() / 1000000u;
}

/* Milliseconds since the epoch, as Flink's timestamps in the REST API. */
static inline int64_t
clock_wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Microseconds since the epoch: times compared across threads or processes. */
static inline int64_t
clock_wall_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

#endif
