/* Intrusive hash map (hmap.h). */
#include <stdlib.h>

#include "core/alloc.h"
#include "core/hmap.h"
#include "core/util.h"

void
hmap_init(struct hmap *map)
{
    map->buckets = NULL;
    map->mask = 0;
    map->count = 0;
}

void
hmap_release(struct hmap *map)
{
    free(map->buckets);
    hmap_init(map);
}

static void
hmap_resize(struct hmap *map, size_t n)
{
    struct hmap_node **b = xcalloc(n, sizeof *b);

    for (size_t i = 0; map->buckets && i <= map->mask; i++) {
        struct hmap_node *node = map->buckets[i], *next;

        for (; node != NULL; node = next) {
            next = node->next;
            node->next = b[node->hash & (n - 1)];
            b[node->hash & (n - 1)] = node;
        }
    }
    free(map->buckets);
    map->buckets = b;
    map->mask = n - 1;
}

void
hmap_insert(struct hmap *map, struct hmap_node *node, uint64_t hash)
{
    struct hmap_node **bucket;

    if (map->buckets == NULL)
        hmap_resize(map, 8);
    else if (map->count >= (map->mask + 1) * 2)
        hmap_resize(map, (map->mask + 1) * 4);
    node->hash = hash;
    bucket = &map->buckets[hash & map->mask];
    node->next = *bucket;
    *bucket = node;
    map->count++;
}

void
hmap_remove(struct hmap *map, struct hmap_node *node)
{
    struct hmap_node **p = &map->buckets[node->hash & map->mask];

    while (*p != node) {
        SPATE_ASSERT(*p != NULL);
        p = &(*p)->next;
    }
    *p = node->next;
    node->next = NULL;
    map->count--;
}

struct hmap_node *
hmap_first(const struct hmap *map)
{
    for (size_t i = 0; map->buckets && i <= map->mask; i++)
        if (map->buckets[i] != NULL)
            return map->buckets[i];
    return NULL;
}

struct hmap_node *
hmap_next(const struct hmap *map, const struct hmap_node *node)
{
    if (node->next != NULL)
        return node->next;
    for (size_t i = (node->hash & map->mask) + 1; i <= map->mask; i++)
        if (map->buckets[i] != NULL)
            return map->buckets[i];
    return NULL;
}

uint64_t
hmap_hash_bytes(const void *p, size_t n)
{
    const unsigned char *s = p;
    uint64_t h = 0xcbf29ce484222325ull;

    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 0x100000001b3ull;
    }
    return hmap_hash_u64(h);
}

uint64_t
hmap_hash_string(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;

    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ull;
    }
    return hmap_hash_u64(h);
}
