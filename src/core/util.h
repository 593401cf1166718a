/* Small macros every layer uses: assertions that stay on in release builds,
 * array sizes, container_of, branch hints. Header only. */
#ifndef SPATE_CORE_UTIL_H
#define SPATE_CORE_UTIL_H

#include <stddef.h>

#include "core/log.h"

/* An invariant of spate's own code: checked in every build, aborts with the
 * location. Never for external input, which gets an error return instead. */
#define SPATE_ASSERT(cond)                                          \
    do {                                                            \
        if (__builtin_expect(!(cond), 0))                           \
            log_assert_failed(#cond, __FILE__, __LINE__, __func__); \
    } while (0)

#define ARRAY_SIZE(a)                   (sizeof(a) / sizeof((a)[0]))
#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))
#define likely(x)                       __builtin_expect(!!(x), 1)
#define unlikely(x)                     __builtin_expect(!!(x), 0)
#ifndef MIN /* <sys/param.h>, which libuv includes, has the same */
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#endif
#define UNUSED(x) ((void)(x))
/* Per-record fast paths: the slow path out of line (so the fast one needs
 * no saved registers), the fast one inlined into its caller. */
#define SPATE_NOINLINE __attribute__((noinline))
#define SPATE_INLINE   inline __attribute__((always_inline))

#endif
