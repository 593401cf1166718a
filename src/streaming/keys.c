/* Keys on the task side (keys.h). */
#include <stdlib.h>

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

void
keys_access_init(struct key_access *a, const struct key_selector *sel,
                 const struct spate_type *type)
{
    const struct spate_type *t = type;
    size_t offset = 0;

    a->sel = sel;
    a->type = type;
    a->offset = a->len = 0;
    a->string = false;
    if (sel->kind == KEY_FN)
        return;
    if (sel->kind == KEY_FIELD) {
        offset = type->offsets[sel->field];
        t = type->fields[sel->field];
    }
    /* types_key_bytes' views of fixed size: numbers and plain records. */
    if (t->kind == TYPE_INT64 || t->kind == TYPE_DOUBLE || (t->kind != TYPE_STRING && t->plain)) {
        a->offset = (uint32_t)offset;
        a->len = (uint32_t)(t->kind == TYPE_INT64 || t->kind == TYPE_DOUBLE ? 8 : t->size);
    } else if (t->kind == TYPE_STRING) {
        a->offset = (uint32_t)offset;
        a->string = true;
    }
}
