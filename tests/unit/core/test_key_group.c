/* Unit tests of src/core/key_group.c: Flink's KeyGroupRangeAssignment
 * arithmetic over XXH3. */
#include <criterion/criterion.h>
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
