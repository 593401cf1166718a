/* Key groups (key_group.h). */
#include "core/key_group.h"

uint32_t
key_group_of_key(const void *key, size_t len, uint32_t max_parallelism)
{
    return key_group_of_hash(XXH3_64bits(key, len), max_parallelism);
}

struct key_group_range
key_group_range_for_operator(uint32_t max_parallelism, uint32_t parallelism, uint32_t index)
{
    /* Flink: start = ceil(index * max / p), end = ((index + 1) * max - 1) / p. */
    uint64_t start = ((uint64_t)index * max_parallelism + parallelism - 1) / parallelism;
    uint64_t end = ((uint64_t)(index + 1) * max_parallelism - 1) / parallelism;

    return (struct key_group_range){ (uint32_t)start, (uint32_t)end };
}

int
key_group_check(uint32_t max_parallelism, uint32_t parallelism, spate_error *err)
{
    if (parallelism == 0 || max_parallelism == 0)
        return spate_error_set(err, SPATE_EINVAL,
                               "parallelism %u and max parallelism %u must be "
                               "positive",
                               parallelism, max_parallelism);
    if (max_parallelism > KEY_GROUP_UPPER_BOUND)
        return spate_error_set(err, SPATE_EINVAL, "max parallelism %u exceeds %u", max_parallelism,
                               KEY_GROUP_UPPER_BOUND);
    if (parallelism > max_parallelism)
        return spate_error_set(err, SPATE_EINVAL, "parallelism %u exceeds max parallelism %u",
                               parallelism, max_parallelism);
    return 0;
}
