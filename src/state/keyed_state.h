/* One state's values as the heap backend and the timer service keep them:
 * a state map per key group of the subtask's range, the map of a key
 * found from its hash alone (its key group). Task thread only. */
#ifndef SPATE_STATE_KEYED_STATE_H
#define SPATE_STATE_KEYED_STATE_H

#include <stdint.h>

#include "core/key_group.h"
#include "core/util.h"
#include "state/state_map.h"

/* A state map per key group of the subtask. */
struct keyed_state {
    uint32_t max_parallelism;
    uint32_t kg_mask; /* max_parallelism - 1 when a power of two (the default 128), else 0 */
    struct key_group_range range;
    struct state_map *maps;
};

void keyed_state_init(struct keyed_state *ks, uint32_t max_parallelism,
                      struct key_group_range range);
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
