/* Unit tests of src/core/key_group.c: Flink's KeyGroupRangeAssignment
 * arithmetic over XXH3. */
#include <criterion/criterion.h>
#include <string.h>
#include <xxhash.h>

#include "core/key_group.h"

Test(key_group, key_group_is_xxh3_modulo_max_parallelism)
{
    const char key[] = "user-42";

    cr_assert_eq(key_group_hash(key, 7), XXH3_64bits(key, 7));
    cr_assert_eq(key_group_of_key(key, 7, 128), XXH3_64bits(key, 7) % 128);
    /* Fixed for good: savepoints depend on it. */
    cr_assert_eq(key_group_of_key("", 0, 128), XXH3_64bits("", 0) % 128);
    cr_assert_eq(XXH3_64bits("", 0), 0x2d06800538d394c2ULL);
}

Test(key_group, the_short_keys_hash_is_xxh3)
{
    char key[64];

    for (size_t i = 0; i < sizeof key; i++)
        key[i] = (char)(i * 37 + 11);
    for (size_t len = 0; len <= sizeof key; len++) {
        cr_assert_eq(key_group_hash_short(key, len), XXH3_64bits(key, len), "%zu bytes", len);
        cr_assert_eq(key_group_hash_short(key + 3, len / 2), XXH3_64bits(key + 3, len / 2));
    }
}

/* An 8-byte key's hash, written out for its length, is XXH3's: keys of
 * every bit pattern, at every alignment. */
Test(key_group, an_eight_byte_key_s_hash_is_xxh3)
{
    uint8_t bytes[16];
    uint64_t z = 0;

    for (int i = 0; i < 1000000; i++) {
        uint64_t k = (z += 0x9E3779B97F4A7C15ULL);

        k = (k ^ (k >> 30)) * 0xBF58476D1CE4E5B9ULL;
        k = (k ^ (k >> 27)) * 0x94D049BB133111EBULL;
        k ^= k >> 31;
        if (i < 64)
            k = i < 32 ? (uint64_t)i : ~(uint64_t)(i - 32); /* small, and all ones */
        memcpy(bytes + i % 8, &k, 8);
        cr_assert_eq(key_group_hash(bytes + i % 8, 8), XXH3_64bits(bytes + i % 8, 8), "key %016llx",
                     (unsigned long long)k);
    }
}

Test(key_group, operator_index_as_flink)
{
    /* computeOperatorIndexForKeyGroup: kg * p / maxP */
    cr_assert_eq(key_group_operator_index(0, 128, 3), 0);
    cr_assert_eq(key_group_operator_index(42, 128, 3), 0);
    cr_assert_eq(key_group_operator_index(43, 128, 3), 1);
    cr_assert_eq(key_group_operator_index(85, 128, 3), 1);
    cr_assert_eq(key_group_operator_index(86, 128, 3), 2);
    cr_assert_eq(key_group_operator_index(127, 128, 3), 2);
}

Test(key_group, ranges_partition_the_key_groups_and_agree_with_the_index)
{
    for (uint32_t max = 1; max <= 300; max += 37) {
        for (uint32_t p = 1; p <= max; p += 1 + p / 3) {
            uint32_t next = 0;

            for (uint32_t i = 0; i < p; i++) {
                struct key_group_range r = key_group_range_for_operator(max, p, i);

                cr_assert_eq(r.start, next, "max %u p %u op %u", max, p, i);
                for (uint32_t kg = r.start; kg <= r.end && r.end >= r.start; kg++)
                    cr_assert_eq(key_group_operator_index(kg, max, p), i);
                next = r.end + 1;
            }
            cr_assert_eq(next, max, "every key group has an owner");
        }
    }
}

Test(key_group, bounds_are_checked)
{
    spate_error err;

    cr_assert_eq(key_group_check(128, 4, &err), 0);
    cr_assert_eq(key_group_check(128, 0, &err), SPATE_EINVAL);
    cr_assert_eq(key_group_check(4, 8, &err), SPATE_EINVAL);
    cr_assert_eq(key_group_check(40000, 8, &err), SPATE_EINVAL);
}
