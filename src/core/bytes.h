/* Short byte copies and compares, inlined: keys, namespaces and plain
 * records of a few words are copied and compared once per record, where a
 * library call costs more than the bytes. Header only; pure. */
#ifndef SPATE_CORE_BYTES_H
#define SPATE_CORE_BYTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* bytes_copy of n <= 16 bytes (a word): the shorter lengths tested first. */
static inline void
bytes_copy_short(void *dst, const void *src, size_t n)
{
    uint8_t *d = dst;
    const uint8_t *s = src;

    if (n >= 8) {
        uint64_t a, b;

        memcpy(&a, s, 8);
        memcpy(&b, s + n - 8, 8);
        memcpy(d, &a, 8);
        memcpy(d + n - 8, &b, 8);
    } else if (n >= 4) {
        uint32_t a, b;

        memcpy(&a, s, 4);
        memcpy(&b, s + n - 4, 4);
        memcpy(d, &a, 4);
        memcpy(d + n - 4, &b, 4);
    } else if (n > 0) {
        uint8_t a = s[0], b = s[n / 2], c = s[n - 1];

        d[0] = a;
        d[n / 2] = b;
        d[n - 1] = c;
    }
}

/* memcpy(dst, src, n) for n that is mostly small (a key, a word):
 * overlapping moves up to 32 bytes, no loop, the library beyond. */
static inline void
bytes_copy(void *dst, const void *src, size_t n)
{
    uint8_t *d = dst;
    const uint8_t *s = src;

    if (n >= 16 && n <= 32) {
        uint8_t a[16], b[16];

        memcpy(a, s, 16);
        memcpy(b, s + n - 16, 16);
        memcpy(d, a, 16);
        memcpy(d + n - 16, b, 16);
    } else if (n < 16) {
        bytes_copy_short(d, s, n);
    } else {
        memcpy(d, s, n);
    }
}

static inline uint64_t
bytes_load64(const uint8_t *p)
{
    uint64_t v;

    memcpy(&v, p, 8);
    return v;
}

/* bytes_copy of a record its producer has just written field by field:
 * 8-byte moves up to 32 bytes, so that each load reads what one earlier
 * store wrote (a 16-byte load over two 8-byte stores cannot take their
 * bytes from the store buffer and waits until both reach the cache, a
 * dozen cycles or more per record). */
static inline void
bytes_copy_fields(void *dst, const void *src, size_t n)
{
    uint8_t *d = dst;
    const uint8_t *s = src;

    if (n >= 16 && n <= 32) {
        uint64_t a = bytes_load64(s), b = bytes_load64(s + 8), c = bytes_load64(s + n - 16),
                 e = bytes_load64(s + n - 8);

        /* Keeps the compiler from merging the loads into vector loads. */
        __asm__("" : "+r"(a), "+r"(b), "+r"(c), "+r"(e));
        memcpy(d, &a, 8);
        memcpy(d + 8, &b, 8);
        memcpy(d + n - 16, &c, 8);
        memcpy(d + n - 8, &e, 8);
    } else {
        bytes_copy(d, s, n);
    }
}

static inline uint32_t
bytes_load32(const uint8_t *p)
{
    uint32_t v;

    memcpy(&v, p, 4);
    return v;
}

/* memcmp(a, b, n) == 0: 4 to 32 bytes as overlapping words, without a
 * branch per word; the library beyond. */
static inline bool
bytes_equal(const void *a, const void *b, size_t n)
{
    const uint8_t *x = a, *y = b;

    if (n >= 16 && n <= 32)
        return ((bytes_load64(x) ^ bytes_load64(y)) | (bytes_load64(x + 8) ^ bytes_load64(y + 8)) |
                (bytes_load64(x + n - 16) ^ bytes_load64(y + n - 16)) |
                (bytes_load64(x + n - 8) ^ bytes_load64(y + n - 8))) == 0;
    if (n >= 8 && n < 16)
        return ((bytes_load64(x) ^ bytes_load64(y)) |
                (bytes_load64(x + n - 8) ^ bytes_load64(y + n - 8))) == 0;
    if (n >= 4 && n < 8)
        return ((bytes_load32(x) ^ bytes_load32(y)) |
                (bytes_load32(x + n - 4) ^ bytes_load32(y + n - 4))) == 0;
    if (n > 32)
        return memcmp(x, y, n) == 0;
    while (n-- > 0)
        if (*x++ != *y++)
            return false;
    return true;
}

#endif
