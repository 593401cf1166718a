/* SQL's GROUP BY aggregation (Flink's GroupAggregate and WindowAggregate):
 * what the planner asks for — the group columns, the aggregate calls with
 * their arguments and FILTERs, the window — as sql.proto's Aggregate, and
 * OP_SQL_AGG, the operator that runs it over a keyed stream of rows
 * [$key, group columns, arguments], its accumulators a ValueState of a row
 * per key (and window). The planner builds a spec on the client thread;
 * the operator belongs to its task thread. */
#ifndef SPATE_SQL_SQL_AGGREGATE_H
#define SPATE_SQL_SQL_AGGREGATE_H

#include <stdint.h>

#include <spate/spate.h>

#include "sql/sql_program.h"

enum sql_agg_kind {
    SQL_AGG_COUNT_STAR,
    SQL_AGG_COUNT,
    SQL_AGG_COUNT_DISTINCT,
    SQL_AGG_SUM,
    SQL_AGG_AVG,
    SQL_AGG_MIN,
    SQL_AGG_MAX,
    SQL_AGG_KIND_COUNT,
};

enum sql_window_kind { SQL_WINDOW_NONE, SQL_WINDOW_TUMBLE, SQL_WINDOW_HOP, SQL_WINDOW_SESSION };

struct sql_agg_call {
    enum sql_agg_kind kind;
    int arg;    /* the input column, -1: none (COUNT(*)) */
    int filter; /* the BOOLEAN input column of FILTER (WHERE ...), -1: none */
    struct sql_column result;
};

/* The input: $key (VARCHAR), the ngroup group columns, then the calls'
 * arguments and filters. The output: $kind (INT, enum sql_row_kind), the
 * group columns, window_start, window_end and window_time (TIMESTAMP(3))
 * when windowed, then one column per call. */
struct sql_agg_spec {
    struct sql_column *input;
    int ninput;
    int ngroup;
    struct sql_agg_call *calls;
    int ncalls;
    enum sql_window_kind window;
    int64_t size_ms, slide_ms, gap_ms;
};

void sql_agg_spec_free(struct sql_agg_spec *s);
/* The spec as bytes (sql.proto's Aggregate), malloc'd. */
void sql_agg_spec_encode(const struct sql_agg_spec *s, uint8_t **out, size_t *len);
/* Decodes and checks a spec: columns in range, each call's argument of a
 * type it takes, the window's sizes. */
int sql_agg_spec_decode(const uint8_t *bytes, size_t len, struct sql_agg_spec **out,
                        spate_error *err);

/* The output columns of s (malloc'd, *n of them). */
struct sql_column *sql_agg_output(const struct sql_agg_spec *s, int *n);

/* The result type of call kind over an argument of type arg (Flink's:
 * COUNT BIGINT, SUM and MIN and MAX the argument's, AVG the argument's
 * numeric type); 0, or "not supported" naming the type. */
int sql_agg_result_type(enum sql_agg_kind kind, const struct sql_type *arg, struct sql_type *out);

#endif
