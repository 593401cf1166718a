/* Key groups (Flink's KeyGroupRangeAssignment): a key's bytes
 * hash to a key group, XXH3_64bits(key) % max_parallelism; key groups map to
 * operator indexes in contiguous ranges, so that keyed state can move when a
 * job resumes with another parallelism. Fixed for good: savepoints depend on
 * it. Pure functions; any thread. */
#ifndef SPATE_CORE_KEY_GROUP_H
#define SPATE_CORE_KEY_GROUP_H

#include <stddef.h>
#include <stdint.h>

/* XXH3 inlined: keys are short, and its small-input paths are a few
 * instructions once the call and the dispatch are gone (once per record at
 * a hash exchange). */
#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>

#include <spate/error.h>

#define KEY_GROUP_DEFAULT_MAX_PARALLELISM 128
#define KEY_GROUP_UPPER_BOUND             32768 /* Flink's UPPER_BOUND_MAX_PARALLELISM */

/* An inclusive range [start, end]; empty when end < start. */
struct key_group_range {
    uint32_t start;
    uint32_t end;
};

/* The 64-bit hash of a key's bytes that travels with a keyed record. */
static inline uint64_t
key_group_hash(const void *key, size_t len)
{
    /* The same hash; the common 8-byte key (an int64 field) gets XXH3's
     * 4-8 byte path (XXH3_len_4to8_64b, the default secret, seed 0) with
     * no dispatch on the length, and its two 4-byte halves, the first
     * shifted above the last, read as they are: the key's 8 bytes rotated
     * by 32, one load and one rotation. */
    if (len == 8) {
        uint64_t bitflip = XXH_readLE64(XXH3_kSecret + 8) ^ XXH_readLE64(XXH3_kSecret + 16);

        return XXH3_rrmxmx(XXH_rotl64(XXH_readLE64(key), 32) ^ bitflip, 8);
    }
    return XXH3_64bits(key, len);
}
/* key_group_hash of a key mostly of 16 bytes or fewer (a word): XXH3's
 * path for those inlined, no call and no dispatch on the length beyond
 * that; the same hash. */
static inline uint64_t
key_group_hash_short(const void *key, size_t len)
{
    if (len <= 16)
        return XXH3_len_0to16_64b((const xxh_u8 *)key, len, XXH3_kSecret, 0);
    return XXH3_64bits(key, len);
}
/* The key group of a hash: hash % max_parallelism. */
static inline uint32_t
key_group_of_hash(uint64_t hash, uint32_t max_parallelism)
{
    return (uint32_t)(hash % max_parallelism);
}
uint32_t key_group_of_key(const void *key, size_t len, uint32_t max_parallelism);
/* The operator (subtask) index that owns key_group:
 * key_group * parallelism / max_parallelism. */
static inline uint32_t
key_group_operator_index(uint32_t key_group, uint32_t max_parallelism, uint32_t parallelism)
{
    return (uint32_t)((uint64_t)key_group * parallelism / max_parallelism);
}
/* The key groups of operator `index` of `parallelism` (Flink's
 * computeKeyGroupRangeForOperatorIndex). */
struct key_group_range key_group_range_for_operator(uint32_t max_parallelism, uint32_t parallelism,
                                                    uint32_t index);
/* Checks 1 <= parallelism <= max_parallelism <= KEY_GROUP_UPPER_BOUND. */
int key_group_check(uint32_t max_parallelism, uint32_t parallelism, spate_error *err);

#endif
