/* A SQL row as a spate record (sql_row.h). */
#include <stdint.h>
#include <string.h>

#include "core/key_group.h"
#include "core/util.h"
#include "sql/sql_row.h"
#include "streaming/keys.h"
#include "streaming/operator.h"
#include "streaming/types.h"

void
sql_row_read(const struct spate_type *t, const void *rec, const struct sql_type *types, int n,
             struct sql_value *v)
{
    uint64_t nulls = *(const uint64_t *)rec;

    for (int i = 0; i < n; i++) {
        const uint8_t *at = (const uint8_t *)rec + t->offsets[i + 1];

        v[i].null = (nulls >> i) & 1;
        switch (sql_type_phys(types[i].id)) {
        case SQL_PHYS_INT:
            memcpy(&v[i].i, at, 8);
            break;
        case SQL_PHYS_DOUBLE:
            memcpy(&v[i].f, at, 8);
            break;
        case SQL_PHYS_STRING:
            v[i].s.p = ((const spate_str *)at)->data;
            v[i].s.len = ((const spate_str *)at)->len;
            break;
        }
    }
}

void
sql_row_write(const struct spate_type *t, void *rec, const struct sql_type *types, int n,
              const struct sql_value *v)
{
    uint64_t nulls = 0;

    for (int i = 0; i < n; i++) {
        uint8_t *at = (uint8_t *)rec + t->offsets[i + 1];

        if (v[i].null) {
            nulls |= 1ULL << i;
            memset(at, 0, t->fields[i + 1]->size);
            continue;
        }
        switch (sql_type_phys(types[i].id)) {
        case SQL_PHYS_INT:
            memcpy(at, &v[i].i, 8);
            break;
        case SQL_PHYS_DOUBLE:
            memcpy(at, &v[i].f, 8);
            break;
        case SQL_PHYS_STRING:
            ((spate_str *)at)->data = v[i].s.p;
            ((spate_str *)at)->len = v[i].s.len;
            break;
        }
    }
    *(uint64_t *)rec = nulls;
}

int
sql_value_cmp(const struct sql_type *t, const struct sql_value *x, const struct sql_value *y)
{
    switch (sql_type_phys(t->id)) {
    case SQL_PHYS_INT:
        return (x->i > y->i) - (x->i < y->i);
    case SQL_PHYS_DOUBLE:
        return (x->f > y->f) - (x->f < y->f);
    default: {
        int c = memcmp(x->s.p, y->s.p, MIN(x->s.len, y->s.len));

        return c ? c : (x->s.len > y->s.len) - (x->s.len < y->s.len);
    }
    }
}

bool
sql_value_same(const struct sql_type *t, const struct sql_value *x, const struct sql_value *y)
{
    if (x->null || y->null)
        return x->null == y->null;
    if (sql_type_phys(t->id) == SQL_PHYS_DOUBLE)
        return memcmp(&x->f, &y->f, 8) == 0;
    return sql_value_cmp(t, x, y) == 0;
}

void
sql_row_set_key(struct stream_operator *op, const void *rec, const struct record_meta *meta,
                uint8_t *scratch, size_t cap)
{
    spate_bytes key =
        keys_extract(&op->config->key, op->config->in_type, &op->ctx, rec, scratch, cap);

    keyed_set_key(&op->ctx.keyctx, key,
                  meta->has_key_hash ? meta->key_hash : key_group_hash(key.data, key.len), NULL, 0);
}
