/* A state map per key group (keyed_state.h). */
#include <stdlib.h>

#include "core/alloc.h"
#include "state/keyed_state.h"

void
keyed_state_init(struct keyed_state *ks, uint32_t max_parallelism, struct key_group_range range)
{
    ks->max_parallelism = max_parallelism;
    ks->kg_mask = (max_parallelism & (max_parallelism - 1)) == 0 ? max_parallelism - 1 : 0;
    ks->range = range;
    ks->maps = xcalloc(range.end - range.start + 1, sizeof *ks->maps);
}

void
keyed_state_release(struct keyed_state *ks)
{
    if (ks->maps == NULL)
        return;
    for (uint32_t i = 0; i <= ks->range.end - ks->range.start; i++)
        state_map_release(&ks->maps[i]);
    free(ks->maps);
    ks->maps = NULL;
}
