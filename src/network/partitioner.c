/* Channel selectors (partitioner.h). */
#include <stdlib.h>
#include <sys/random.h>

#include "network/partitioner.h"

void
partitioner_init(struct partitioner *p, enum partitioner_kind kind, uint32_t num_channels,
                 uint32_t max_parallelism)
{
    uint32_t r = 0;

    p->kind = kind;
    p->num_channels = num_channels ? num_channels : 1;
    p->max_parallelism = max_parallelism ? max_parallelism : KEY_GROUP_DEFAULT_MAX_PARALLELISM;
    if (kind == PARTITIONER_REBALANCE && getrandom(&r, sizeof r, GRND_NONBLOCK) != sizeof r)
        r = 0;
    p->next = r % p->num_channels;
}

const char *
partitioner_name(enum partitioner_kind kind)
{
    static const char *const names[] = { "FORWARD", "REBALANCE", "RESCALE",
                                         "HASH",    "BROADCAST", "GLOBAL" };

    return (unsigned)kind < sizeof names / sizeof names[0] ? names[kind] : "UNKNOWN";
}
