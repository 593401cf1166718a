/* Keys on the task side (keys.h). */
#include <stdlib.h>
#include <xxhash.h>

#include "core/alloc.h"
#include "core/util.h"
#include "streaming/keys.h"
#include "streaming/operator.h"
#include "streaming/types.h"

spate_bytes
keys_extract(const struct key_selector *key, const struct spate_type *type, spate_ctx *ctx,
             const void *rec, void *scratch, size_t cap)
{
    spate_bytes b;

    switch (key->kind) {
    case KEY_FN:
        return key->fn(ctx, rec, scratch, cap);
    case KEY_FIELD:
        rec = (const uint8_t *)rec + type->offsets[key->field];
        type = type->fields[key->field];
        break;
    default:
        break;
    }
    b = types_key_bytes(type, rec, scratch, cap);
    if (b.data == NULL) {
        /* A key larger than the scratch: serialize it into call scratch. */
        void *big = spate_ctx_alloc(ctx, b.len);

        b = types_key_bytes(type, rec, big, b.len);
    }
    return b;
}

uint64_t
keys_hash(spate_bytes key)
{
    return XXH3_64bits(key.data, key.len);
}

void
keys_key_group_range(int max_parallelism, int parallelism, int index, int *first, int *last)
{
    /* Flink's computeKeyGroupRangeForOperatorIndex. */
    *first = (int)(((int64_t)index * max_parallelism + parallelism - 1) / parallelism);
    *last = (int)((((int64_t)index + 1) * max_parallelism - 1) / parallelism);
}

int
keyed_state_init(struct keyed_state *ks, const struct task_info *task, int max_parallelism,
                 spate_error *err)
{
    if (max_parallelism < task->parallelism)
        return spate_error_set(err, SPATE_EINVAL, "max parallelism %d is below the parallelism %d",
                               max_parallelism, task->parallelism);
    ks->max_parallelism = max_parallelism;
    keys_key_group_range(max_parallelism, task->parallelism, task->subtask, &ks->first_key_group,
                         &ks->last_key_group);
    ks->maps = xcalloc((size_t)(ks->last_key_group - ks->first_key_group + 1), sizeof *ks->maps);
    return 0;
}

void
keyed_state_release(struct keyed_state *ks)
{
    if (ks->maps == NULL)
        return;
    for (int i = 0; i <= ks->last_key_group - ks->first_key_group; i++)
        state_map_release(&ks->maps[i]);
    free(ks->maps);
    ks->maps = NULL;
}
