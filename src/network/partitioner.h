/* Channel selectors (Flink's ChannelSelector implementations): small pure
 * functions the producing task calls to pick the output channel of a record,
 * then record_writer_emit. The state of round-robin ones lives in the
 * caller's struct partitioner, owned by the task thread. Broadcast has no
 * selector: call record_writer_broadcast_emit. */
#ifndef SPATE_NETWORK_PARTITIONER_H
#define SPATE_NETWORK_PARTITIONER_H

#include <stdint.h>

#include "core/key_group.h"

enum partitioner_kind {
    PARTITIONER_FORWARD,   /* the one channel to the same-index consumer */
    PARTITIONER_REBALANCE, /* round-robin over every channel */
    PARTITIONER_RESCALE,   /* round-robin over this producer's (pointwise) channels */
    PARTITIONER_HASH,      /* by key group: key_group * channels / max_parallelism */
    PARTITIONER_BROADCAST, /* every channel */
    PARTITIONER_GLOBAL,    /* channel 0 */
};

struct partitioner {
    enum partitioner_kind kind;
    uint32_t num_channels;
    uint32_t max_parallelism; /* HASH */
    uint32_t next;            /* REBALANCE, RESCALE */
};

/* Rebalance starts at a random channel, as Flink's does, so that producers do
 * not all begin with channel 0. */
void partitioner_init(struct partitioner *p, enum partitioner_kind kind, uint32_t num_channels,
                      uint32_t max_parallelism);
const char *partitioner_name(enum partitioner_kind kind);

static inline uint32_t
partitioner_round_robin(struct partitioner *p)
{
    uint32_t ch = p->next;

    p->next = ch + 1 == p->num_channels ? 0 : ch + 1;
    return ch;
}

/* The channel of a keyed record whose key group travels with it. */
static inline uint32_t
partitioner_hash(const struct partitioner *p, uint32_t key_group)
{
    return key_group_operator_index(key_group, p->max_parallelism, p->num_channels);
}

/* Any kind but BROADCAST; key_group is read by HASH only. */
static inline uint32_t
partitioner_select(struct partitioner *p, uint32_t key_group)
{
    switch (p->kind) {
    case PARTITIONER_REBALANCE:
    case PARTITIONER_RESCALE:
        return partitioner_round_robin(p);
    case PARTITIONER_HASH:
        return partitioner_hash(p, key_group);
    default: /* FORWARD, GLOBAL */
        return 0;
    }
}

#endif
