/* SQL's lookup join (Flink's LookupJoin: JOIN t FOR SYSTEM_TIME AS OF
 * s.proctime AS x ON ...): what the planner asks for — the join's columns,
 * keys, type (INNER or LEFT) and the rest of ON as sql_join.h's Join, and
 * the table's file — as sql.proto's LookupJoin, and OP_SQL_LOOKUP_JOIN, the
 * operator that reads the file into its subtask's memory, hashed by the
 * keys, when it opens and probes it with each row of its input. The
 * planner builds a spec on the client thread; the operator belongs to its
 * task thread. */
#ifndef SPATE_SQL_SQL_LOOKUP_H
#define SPATE_SQL_SQL_LOOKUP_H

#include <stdbool.h>
#include <stdint.h>

#include <spate/spate.h>

#include "sql/sql_join.h"

/* join's left: [$key, keys, the input's own columns]; its right: [$key,
 * keys, the table's columns] (its $key and keys made from the table's
 * columns key_cols as the file is read); time SQL_JOIN_REGULAR, no TTL:
 * nothing is kept per row. */
struct sql_lookup_spec {
    struct sql_join_spec *join;
    char *path; /* a file, or a directory whose files (not .hidden, not _x) are read */
    char csv_delimiter;
    bool ignore_parse_errors;
    int *key_cols; /* join->nkey of them, each a column of the table */
};

void sql_lookup_spec_free(struct sql_lookup_spec *s);
/* The spec as bytes (sql.proto's LookupJoin), malloc'd. */
void sql_lookup_spec_encode(const struct sql_lookup_spec *s, uint8_t **out, size_t *len);
/* Decodes and checks a spec: its Join's, INNER or LEFT, each key a column
 * of the table of the key's type. */
int sql_lookup_spec_decode(const uint8_t *bytes, size_t len, struct sql_lookup_spec **out,
                           spate_error *err);

#endif
