/* Keys on the task side: a record's key bytes by its key selector, and the
 * keyed state of the subtask's key groups (hashes and key groups are
 * core/key_group.h's). Task thread only. */
#ifndef SPATE_STREAMING_KEYS_H
#define SPATE_STREAMING_KEYS_H

#include <stdint.h>

#include <spate/spate.h>

#include "core/key_group.h"
#include "core/util.h"
#include "state/state_map.h"
#include "streaming/stream_graph.h"

struct task_info;

spate_bytes keys_extract(const struct key_selector *key, const struct spate_type *type,
                         spate_ctx *ctx, const void *rec, void *scratch, size_t cap);

/* A key selector resolved against its record type once, at set-up: a key
 * of fixed size at a fixed place in the record (a number field, a plain
 * tuple or user type) is read in place, with no call per record. */
struct key_access {
    const struct key_selector *sel;
    const struct spate_type *type;
    uint32_t offset, len; /* len > 0: the key is the record's bytes [offset, offset + len) */
};

void keys_access_init(struct key_access *a, const struct key_selector *sel,
                      const struct spate_type *type);

/* keys_extract through a resolved selector. */
static inline spate_bytes
keys_get(const struct key_access *a, spate_ctx *ctx, const void *rec, void *scratch, size_t cap)
{
    if (a->len != 0)
        return (spate_bytes){ (const uint8_t *)rec + a->offset, a->len };
    return keys_extract(a->sel, a->type, ctx, rec, scratch, cap);
}

/* One operator's keyed values: a state map per key group of the subtask. */
struct keyed_state {
    uint32_t max_parallelism;
    uint32_t kg_mask; /* max_parallelism - 1 when a power of two (the default 128), else 0 */
    struct key_group_range range;
    struct state_map *maps;
};

int keyed_state_init(struct keyed_state *ks, const struct task_info *task, int max_parallelism,
                     spate_error *err);
void keyed_state_release(struct keyed_state *ks);

/* The map of the key group of hash. A key outside the subtask's key groups
 * (a bug upstream) maps to the first. */
static inline struct state_map *
keyed_state_map(struct keyed_state *ks, uint64_t hash)
{
    /* A power-of-two max parallelism (the default 128) needs no division. */
    uint32_t kg = likely(ks->kg_mask != 0) || ks->max_parallelism == 1
                      ? (uint32_t)(hash & ks->kg_mask)
                      : key_group_of_hash(hash, ks->max_parallelism);
    uint32_t i = kg - ks->range.start;

    /* Unsigned: a key group below the range wraps past its end too. */
    if (unlikely(i > ks->range.end - ks->range.start))
        i = 0;
    return &ks->maps[i];
}

#endif
