/* Unit tests of src/core/bytes.h: the short copies and compares, against
 * memcpy and memcmp for every length up to 80 and every source offset in a
 * word. */
#include <criterion/criterion.h>
#include <string.h>

#include "core/bytes.h"

static void
fill(uint8_t *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(seed * 131u + i * 7u + 1u);
}

Test(bytes, copies_are_memcpy_for_every_length_and_offset)
{
    uint8_t src[96], want[96], got[96], got2[96];

    for (size_t off = 0; off < 8; off++)
        for (size_t n = 0; n + off <= 80; n++) {
            fill(src, sizeof src, (unsigned)(n + off));
            memset(want, 0xee, sizeof want);
            memset(got, 0xee, sizeof got);
            memset(got2, 0xee, sizeof got2);
            memcpy(want + 3, src + off, n);
            bytes_copy(got + 3, src + off, n);
            bytes_copy_fields(got2 + 3, src + off, n);
            cr_assert(memcmp(got, want, sizeof want) == 0, "bytes_copy of %zu at %zu", n, off);
            cr_assert(memcmp(got2, want, sizeof want) == 0, "bytes_copy_fields of %zu at %zu", n,
                      off);
        }
}

Test(bytes, equal_is_memcmp_for_every_length_and_difference)
{
    uint8_t a[80], b[80];

    for (size_t n = 0; n <= 64; n++) {
        fill(a, n, (unsigned)n);
        memcpy(b, a, n);
        cr_assert(bytes_equal(a, b, n), "equal bytes of %zu", n);
        for (size_t i = 0; i < n; i++) {
            b[i] ^= 0x10;
            cr_assert(!bytes_equal(a, b, n), "a difference at %zu of %zu", i, n);
            b[i] ^= 0x10;
        }
    }
}
