/* The planner: a query (PostgreSQL's SelectStmt tree) onto spate's
 * operators in a StreamGraph — each table's source (sql_connectors.h),
 * one Calc per SELECT with projection and WHERE fused and the source's
 * format read in it, a view planned where it is used — and INSERT INTO's
 * sink; the logical plan as text for EXPLAIN. Client thread. */
#ifndef SPATE_SQL_SQL_PLANNER_H
#define SPATE_SQL_SQL_PLANNER_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>
#include <spate/spate.h>

#include "sql/sql_aggregate.h"
#include "sql/sql_catalog.h"
#include "sql/sql_program.h"

/* A relation on its way through the plan: a stream and its columns, its
 * records rows, or the lines (CSV, JSON) or indexes (datagen, nexmark) of a source
 * that the next Calc reads. */
struct sql_relation {
    struct spate_stream *stream;
    enum sql_format format;
    struct sql_column *cols; /* owned */
    int ncols;
    char *name; /* the table's name or alias, for column references */
    /* the source's settings the Calc needs (datagen, CSV) */
    struct sql_datagen_field *datagen;
    uint64_t datagen_seed;
    struct sql_nexmark_source *nexmark; /* owned */
    char csv_delimiter;
    bool ignore_parse_errors;
    /* a source's event time: its rowtime column, -1: none; or, proctime,
     * a PROCTIME() column its Calc stamped the rows with */
    int rowtime;
    int64_t watermark_bound_ms;
    bool proctime;
    /* Its rows are a changelog (GROUP BY without a window): updates, not
     * only insertions. */
    bool updating;
    /* A join's: each column's table (or alias), NULL for none (owned);
     * NULL: every column is name's. */
    char **qualifiers;
};

void sql_relation_release(struct sql_relation *r);
/* The column of an updating relation's row kind ($kind), -1: none. */
int sql_kind_column(const struct sql_relation *r);

/* A window table function in FROM (TUMBLE, HOP, SESSION). */
struct sql_window {
    enum sql_window_kind kind;
    int64_t size_ms, slide_ms, gap_ms;
    json_t *node; /* for errors */
};

struct sql_plan_context {
    const struct sql_catalog *catalog;
    struct spate_env *env;
    const char *script;
    size_t offset; /* of the statement in script */
    FILE *explain; /* where the logical plan goes, or NULL */
    int depth;     /* views inside views */
    spate_error *err;
    json_t *ctes; /* WITH's queries in scope (CommonTableExpr nodes), or NULL */
};

/* Plans a SELECT into rel (its output: rows, or the format of sink, whose
 * columns it then fills, cast to their types; NULL: none). */
int sql_plan_select(struct sql_plan_context *pc, json_t *select, enum sql_format output,
                    const struct sql_table *sink, struct sql_relation *rel);

/* Plans INSERT INTO sink SELECT ...: the Calc writes the sink's format, the
 * sink's node follows. *job_name is malloc'd. */
int sql_plan_insert(struct sql_plan_context *pc, json_t *insert, char **job_name);

/* Plans a SELECT whose rows are printed as they arrive (Flink's tableau
 * mode: +I[...] lines on the print stream). */
int sql_plan_collect(struct sql_plan_context *pc, json_t *select);

/* For the join's planner (sql_join_plan.c): one item of FROM (win: where a
 * window table function's window goes, NULL: none allowed); a Calc over in
 * (taken) of targets with where, the first nkey of them the key that a $key
 * column before them is made of, its explanation followed by below_text
 * (taken); a constant positive INTERVAL's ms. */
int sql_plan_from_item(struct sql_plan_context *pc, json_t *item, struct sql_relation *rel,
                       struct sql_window *win);
int sql_plan_keyed_calc(struct sql_plan_context *pc, struct sql_relation *in, json_t *targets,
                        json_t *where, int nkey, char *below_text, struct sql_relation *rel);
int sql_plan_constant_interval(struct sql_plan_context *pc, json_t *node, const char *what,
                               int64_t *ms);
/* A JoinExpr of FROM (sql_join_plan.c): each side's Calc keyed by the
 * equi-join keys, the join; rel its columns, each with its table's name. */
int sql_plan_join(struct sql_plan_context *pc, json_t *item, struct sql_relation *rel);
/* The SELECT of an INNER JOIN with its WHERE moved into ON, where it can
 * filter each side before the join (a new reference), or NULL: none. */
json_t *sql_join_where_into_on(json_t *select);
/* The SELECT with the conjuncts of its WHERE that are IN (subquery), NOT
 * IN, EXISTS or NOT EXISTS made semi and anti joins of its FROM item (a
 * new reference), or NULL: none, or an error (*rc). */
json_t *sql_subqueries_into_joins(struct sql_plan_context *pc, json_t *select, int *rc);

#endif
