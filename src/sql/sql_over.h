/* SQL's OVER aggregates on event time (Flink's OverAggregate): COUNT,
 * SUM, AVG, MIN, MAX OVER (PARTITION BY ... ORDER BY the event time ROWS
 * BETWEEN n PRECEDING AND CURRENT ROW, or RANGE BETWEEN INTERVAL ...
 * PRECEDING AND CURRENT ROW, or UNBOUNDED PRECEDING), as the planner asks
 * for them — sql.proto's Over — and OP_SQL_OVER, the operator that runs
 * them over a keyed stream of rows [$key, partition columns, row columns,
 * arguments]. The planner builds a spec on the client thread; the operator
 * belongs to its task thread. */
#ifndef SPATE_SQL_SQL_OVER_H
#define SPATE_SQL_SQL_OVER_H

#include <stdint.h>

#include <spate/spate.h>

#include "sql/sql_aggregate.h"
#include "sql/sql_program.h"

enum sql_over_frame { SQL_OVER_ROWS, SQL_OVER_RANGE };

/* The output: the row columns, then one column per call (insertions
 * only: a row comes out once, when the watermark passes its time). */
struct sql_over_spec {
    struct sql_column *input;
    int ninput;
    int npart, nrow;
    struct sql_agg_call *calls; /* no FILTER, no DISTINCT */
    int ncalls;
    enum sql_over_frame frame;
    int64_t preceding; /* ROWS: rows; RANGE: ms; -1: unbounded */
    int time;          /* the input column of the event time (the ORDER BY) */
};

void sql_over_spec_free(struct sql_over_spec *s);
/* The spec as bytes (sql.proto's Over), malloc'd. */
void sql_over_spec_encode(const struct sql_over_spec *s, uint8_t **out, size_t *len);
/* Decodes and checks a spec: columns in range, each call's argument of a
 * type it takes. */
int sql_over_spec_decode(const uint8_t *bytes, size_t len, struct sql_over_spec **out,
                         spate_error *err);

/* The output columns of s (malloc'd, *n of them). */
struct sql_column *sql_over_output(const struct sql_over_spec *s, int *n);

#endif
