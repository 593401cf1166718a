/* SQL's Top-N and deduplication (Flink's Rank, WindowRank and
 * Deduplicate): ROW_NUMBER() (RANK(), DENSE_RANK()) OVER (PARTITION BY ...
 * ORDER BY ...) kept to rn <= limit, as the planner asks for it —
 * sql.proto's Rank — and OP_SQL_RANK, the operator that runs it over a
 * keyed stream of rows [$key, partition columns, row columns, order
 * columns, and an updating input's $kind], each partition's top rows a
 * ListState. The planner builds a spec on the client thread;
 * the operator belongs to its task thread. */
#ifndef SPATE_SQL_SQL_RANK_H
#define SPATE_SQL_SQL_RANK_H

#include <stdbool.h>
#include <stdint.h>

#include <spate/spate.h>

#include "sql/sql_program.h"

/* The most rows a partition keeps: each is read and written for every row
 * that enters its top. */
#define SQL_RANK_LIMIT_MAX 100000

/* What numbers the rows: ROW_NUMBER() 1, 2, 3 whatever their ties; RANK()
 * the tied rows one number, the next row its position (1, 1, 3);
 * DENSE_RANK() the next number (1, 1, 2). */
enum sql_rank_function { SQL_RANK_ROW_NUMBER, SQL_RANK_RANK, SQL_RANK_DENSE_RANK };

struct sql_rank_order {
    int col; /* the input column */
    bool desc;
    bool nulls_first;
};

/* The output: $kind (INT, enum sql_row_kind), the row columns, then rn
 * (BIGINT) when emit_rank. */
struct sql_rank_spec {
    struct sql_column *input;
    int ninput;
    int npart, nrow;
    struct sql_rank_order *order;
    int norder;
    int64_t limit;
    /* rn is in the output: a row's rank changing is an update of it */
    bool emit_rank;
    /* a row ranks before the rows equal to it (deduplication keeping the
     * last row), else after them */
    bool last_wins_ties;
    /* the input column of a window's end, -1: none. Windowed, a window's
     * top rows are emitted once, insertions, when the watermark passes its
     * end; unwindowed, every row that enters the top changes it (+I, -D,
     * or -U/+U of each rank that moved). */
    int window_end;
    enum sql_rank_function function;
};

void sql_rank_spec_free(struct sql_rank_spec *s);
/* The spec as bytes (sql.proto's Rank), malloc'd. */
void sql_rank_spec_encode(const struct sql_rank_spec *s, uint8_t **out, size_t *len);
/* Decodes and checks a spec: columns in range, the limit positive. */
int sql_rank_spec_decode(const uint8_t *bytes, size_t len, struct sql_rank_spec **out,
                         spate_error *err);

/* The output columns of s (malloc'd, *n of them). */
struct sql_column *sql_rank_output(const struct sql_rank_spec *s, const char *rank_name, int *n);

#endif
