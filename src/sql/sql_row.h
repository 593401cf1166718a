/* A SQL row as a spate record (streaming/types.h: a row type, NULLs in its
 * leading bitmap): its fields read into values and values written into
 * it, values compared, and a row's key made its operator's current key,
 * for SQL's keyed operators (OP_SQL_AGG, OP_SQL_JOIN, OP_SQL_RANK, OP_SQL_OVER). Plain
 * functions: the record's thread. */
#ifndef SPATE_SQL_SQL_ROW_H
#define SPATE_SQL_SQL_ROW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <spate/spate.h>

#include "sql/sql_types.h"

/* The n fields of record rec (of row type t, fields of types) into v;
 * strings point into the record. */
void sql_row_read(const struct spate_type *t, const void *rec, const struct sql_type *types, int n,
                  struct sql_value *v);
/* v into record rec; strings point to v's. */
void sql_row_write(const struct spate_type *t, void *rec, const struct sql_type *types, int n,
                   const struct sql_value *v);

struct stream_operator;
struct record_meta;

/* Makes the key of record rec (its operator's key: a SQL operator's $key
 * column) the current key of op's keyed state; scratch (cap bytes) holds
 * it when it is not in the record as it is. */
void sql_row_set_key(struct stream_operator *op, const void *rec, const struct record_meta *meta,
                     uint8_t *scratch, size_t cap);

/* Compares two non-NULL values of type t (strings byte by byte). */
int sql_value_cmp(const struct sql_type *t, const struct sql_value *x, const struct sql_value *y);
/* Whether x and y are the same value, NULL the same as NULL (doubles by
 * their bits). */
bool sql_value_same(const struct sql_type *t, const struct sql_value *x, const struct sql_value *y);

#endif
