/* An intrusive hash map (Open vSwitch's hmap): nodes with a precomputed hash
 * live inside the objects, chained per bucket; the table doubles as it fills.
 * The caller compares keys while walking a bucket (HMAP_FOR_EACH_WITH_HASH).
 * Not thread-safe: owned by one thread or endpoint. */
#ifndef SPATE_CORE_HMAP_H
#define SPATE_CORE_HMAP_H

#include <stddef.h>
#include <stdint.h>

struct hmap_node {
    struct hmap_node *next;
    uint64_t hash;
};

struct hmap {
    struct hmap_node **buckets;
    size_t mask; /* buckets - 1; 0 with no table yet */
    size_t count;
};

void hmap_init(struct hmap *map);
/* Frees the table, not the nodes. */
void hmap_release(struct hmap *map);
void hmap_insert(struct hmap *map, struct hmap_node *node, uint64_t hash);
void hmap_remove(struct hmap *map, struct hmap_node *node);

static inline size_t
hmap_count(const struct hmap *map)
{
    return map->count;
}

/* The first node of hash's bucket (callers check node->hash and the key). */
static inline struct hmap_node *
hmap_bucket(const struct hmap *map, uint64_t hash)
{
    return map->buckets ? map->buckets[hash & map->mask] : NULL;
}

/* Any node, for draining a map; NULL when empty. */
struct hmap_node *hmap_first(const struct hmap *map);
/* The node after node in table order, for iteration without removal. */
struct hmap_node *hmap_next(const struct hmap *map, const struct hmap_node *node);

#define HMAP_FOR_EACH_WITH_HASH(node, h, map)                                     \
    for ((node) = hmap_bucket((map), (h)); (node) != NULL; (node) = (node)->next) \
        if ((node)->hash == (h))

#define HMAP_FOR_EACH(node, map) \
    for ((node) = hmap_first(map); (node) != NULL; (node) = hmap_next((map), (node)))

/* FNV-1a over a NUL-terminated string, mixed; for string keys. */
uint64_t hmap_hash_string(const char *s);
uint64_t hmap_hash_bytes(const void *p, size_t n);
/* A 64-bit mix (splitmix64's finaliser) for integer keys. */
static inline uint64_t
hmap_hash_u64(uint64_t z)
{
    z ^= z >> 30;
    z *= 0xBF58476D1CE4E5B9ull;
    z ^= z >> 27;
    z *= 0x94D049BB133111EBull;
    z ^= z >> 31;
    return z;
}

#endif
