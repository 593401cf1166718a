/* Keys on the task side: a record's key bytes by its key selector, their
 * hash (XXH3-64, fixed for good: savepoints depend on it, DESIGN.md §5a),
 * and the keyed state of the subtask's key groups. Task thread only. */
#ifndef SPATE_STREAMING_KEYS_H
#define SPATE_STREAMING_KEYS_H

#include <stdint.h>

#include <spate/spate.h>

#include "state/state_map.h"
#include "streaming/stream_graph.h"

struct task_info;

spate_bytes keys_extract(const struct key_selector *key, const struct spate_type *type,
                         spate_ctx *ctx, const void *rec, void *scratch, size_t cap);
uint64_t keys_hash(spate_bytes key);

/* Key group of a hash, and the subtask that owns a key group (Flink's
 * KeyGroupRangeAssignment). */
static inline int
keys_key_group(uint64_t hash, int max_parallelism)
{
    return (int)(hash % (uint64_t)max_parallelism);
}

static inline int
keys_operator_index(int key_group, int max_parallelism, int parallelism)
{
    return (int)((int64_t)key_group * parallelism / max_parallelism);
}

/* The key groups [first, last] of subtask index of parallelism. */
void keys_key_group_range(int max_parallelism, int parallelism, int index, int *first, int *last);

/* One operator's keyed values: a state map per key group of the subtask. */
struct keyed_state {
    int max_parallelism;
    int first_key_group, last_key_group;
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
    int kg = keys_key_group(hash, ks->max_parallelism);

    if (kg < ks->first_key_group || kg > ks->last_key_group)
        kg = ks->first_key_group;
    return &ks->maps[kg - ks->first_key_group];
}

#endif
