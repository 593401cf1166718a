/* Keys on the task side: a record's key bytes by its key selector (hashes
 * and key groups are core/key_group.h's). Task thread only. */
#ifndef SPATE_STREAMING_KEYS_H
#define SPATE_STREAMING_KEYS_H

#include <stdint.h>

#include <spate/spate.h>

#include "core/key_group.h"
#include "core/util.h"
#include "streaming/stream_graph.h"

spate_bytes keys_extract(const struct key_selector *key, const struct spate_type *type,
                         spate_ctx *ctx, const void *rec, void *scratch, size_t cap);

/* A key selector resolved against its record type once, at set-up: a key
 * of fixed size at a fixed place in the record (a number field, a plain
 * tuple or user type) is read in place, with no call per record. */
struct key_access {
    const struct key_selector *sel;
    const struct spate_type *type;
    uint32_t offset, len; /* len > 0: the key is the record's bytes [offset, offset + len) */
    bool string;          /* the key is the bytes of the spate_str at offset */
};

void keys_access_init(struct key_access *a, const struct key_selector *sel,
                      const struct spate_type *type);

/* keys_extract through a resolved selector. */
static inline spate_bytes
keys_get(const struct key_access *a, spate_ctx *ctx, const void *rec, void *scratch, size_t cap)
{
    if (a->len != 0)
        return (spate_bytes){ (const uint8_t *)rec + a->offset, a->len };
    if (a->string) {
        const spate_str *s = (const spate_str *)((const uint8_t *)rec + a->offset);

        return (spate_bytes){ s->data, s->len };
    }
    return keys_extract(a->sel, a->type, ctx, rec, scratch, cap);
}

#endif
