/* Keys on the task side: a record's key bytes by its key selector, and the
 * keyed state of the subtask's key groups (hashes and key groups are
 * core/key_group.h's). Task thread only. */
#ifndef SPATE_STREAMING_KEYS_H
#define SPATE_STREAMING_KEYS_H

#include <stdint.h>

#include <spate/spate.h>

#include "core/key_group.h"
#include "state/state_map.h"
#include "streaming/stream_graph.h"

struct task_info;

spate_bytes keys_extract(const struct key_selector *key, const struct spate_type *type,
                         spate_ctx *ctx, const void *rec, void *scratch, size_t cap);

/* One operator's keyed values: a state map per key group of the subtask. */
struct keyed_state {
    uint32_t max_parallelism;
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
    uint32_t kg = (ks->max_parallelism & (ks->max_parallelism - 1)) == 0
                      ? (uint32_t)(hash & (ks->max_parallelism - 1))
                      : key_group_of_hash(hash, ks->max_parallelism);

    if (kg < ks->range.start || kg > ks->range.end)
        kg = ks->range.start;
    return &ks->maps[kg - ks->range.start];
}

#endif
