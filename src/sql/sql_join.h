/* SQL's joins (Flink's StreamingJoinOperator, its RowTimeIntervalJoin and
 * WindowJoinOperator): what the planner asks for — the two inputs' columns,
 * the equi-join keys, the join type, the rest of ON as a condition, the
 * time it joins in — as sql.proto's Join, and OP_SQL_JOIN, the two-input
 * operator that runs it over inputs keyed by their $key columns, each
 * side's rows a ListState per key (and window). The planner builds a spec
 * on the client thread; the operator belongs to its task thread. */
#ifndef SPATE_SQL_SQL_JOIN_H
#define SPATE_SQL_SQL_JOIN_H

#include <stdint.h>

#include <spate/spate.h>

#include "sql/sql_aggregate.h"
#include "sql/sql_program.h"

/* SEMI and ANTI: the left side's rows that match (IN, EXISTS) or that
 * match nothing (NOT IN, NOT EXISTS), its columns only. */
enum sql_join_type {
    SQL_JOIN_INNER,
    SQL_JOIN_LEFT,
    SQL_JOIN_RIGHT,
    SQL_JOIN_FULL,
    SQL_JOIN_SEMI,
    SQL_JOIN_ANTI
};

/* When rows meet: any time (a regular join, rows kept until their TTL),
 * within an interval of event time of each other (rows kept until the
 * watermark passes the interval), or in the same window (rows kept until
 * the window's end). */
enum sql_join_time { SQL_JOIN_REGULAR, SQL_JOIN_INTERVAL, SQL_JOIN_WINDOW };

/* The inputs: $key (VARCHAR), the nkey key columns, then the side's own
 * columns. The output: $kind (INT, enum sql_row_kind), the left side's own
 * columns, in a window join followed by window_start, window_end and
 * window_time, then the right side's alike (a semi or anti join: the left
 * side's only). The residual program reads
 * the output's columns after $kind; its filter is the rest of ON. */
struct sql_join_spec {
    struct sql_column *left, *right;
    int nleft, nright;
    int nkey;
    enum sql_join_type type;
    uint8_t *residual; /* sql.proto Calc; NULL: none */
    size_t residual_len;
    int64_t ttl_ms;
    enum sql_join_time time;
    int64_t lower_ms, upper_ms;
    enum sql_window_kind window;
    int64_t size_ms, slide_ms;
};

void sql_join_spec_free(struct sql_join_spec *s);
/* The spec as bytes (sql.proto's Join), malloc'd. */
void sql_join_spec_encode(const struct sql_join_spec *s, uint8_t **out, size_t *len);
/* Decodes and checks a spec: columns, keys of one type on both sides, the
 * interval's bounds, the window's sizes. */
int sql_join_spec_decode(const uint8_t *bytes, size_t len, struct sql_join_spec **out,
                         spate_error *err);

/* The output columns of s (malloc'd, *n of them). */
struct sql_column *sql_join_output(const struct sql_join_spec *s, int *n);

/* The residual program of s (s->residual), for an operator whose output
 * has nout columns of out_types ($kind first): decoded into *p, checked to
 * read those columns, its evaluator *ev made ready; errors name the
 * operator. */
int sql_join_residual_open(const struct sql_join_spec *s, const struct sql_type *out_types,
                           int nout, struct sql_program **p, struct sql_eval *ev, const char *name,
                           spate_error *err);

#endif
