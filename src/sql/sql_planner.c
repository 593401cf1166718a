/* The planner (sql_planner.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/util.h"
#include "sql/sql_aggregate.h"
#include "sql/sql_connectors.h"
#include "sql/sql_expr.h"
#include "sql/sql_parser.h"
#include "sql/sql_over.h"
#include "sql/sql_planner.h"
#include "sql/sql_rank.h"
#include "streaming/stream_graph.h"
#include "streaming/types.h"

#define SQL_MAX_VIEW_DEPTH 16

void
sql_relation_release(struct sql_relation *r)
{
    for (int i = 0; i < r->ncols; i++)
        free(r->cols[i].name);
    free(r->cols);
    free(r->name);
    free(r->datagen);
    for (int i = 0; r->qualifiers != NULL && i < r->ncols; i++)
        free(r->qualifiers[i]);
    free(r->qualifiers);
    sql_nexmark_source_free(r->nexmark);
    memset(r, 0, sizeof *r);
}

#define plan_error(pc, node, code, ...) \
    sql_error_in((pc)->err, (pc)->script, (pc)->offset, node, code, __VA_ARGS__)

static struct sql_column *
columns_copy(const struct sql_column *c, int n)
{
    struct sql_column *out = xcalloc((size_t)n + 1, sizeof *out);

    for (int i = 0; i < n; i++) {
        out[i].name = xstrdup(c[i].name);
        out[i].type = c[i].type;
    }
    return out;
}

static const char *sval_of(json_t *node);
static int plan_table(struct sql_plan_context *pc, json_t *item, const char *name,
                      const char *alias, struct sql_relation *rel);
static int plan_window_tvf(struct sql_plan_context *pc, json_t *item, struct sql_relation *rel,
                           struct sql_window *win);

static int
plan_from(struct sql_plan_context *pc, json_t *select, struct sql_relation *rel,
          struct sql_window *win)
{
    json_t *from = json_object_get(select, "fromClause"), *item;

    if (json_array_size(from) == 0)
        return plan_error(pc, select, SPATE_ENOTSUP,
                          "not supported: SELECT without FROM (a query reads a table)");
    item = json_array_get(from, 0);
    if (json_array_size(from) > 1)
        return plan_error(pc, json_array_get(from, 1), SPATE_ENOTSUP,
                          "not supported: more than one table in FROM (JOIN ... ON joins them)");
    return sql_plan_from_item(pc, item, rel, win);
}

int
sql_plan_from_item(struct sql_plan_context *pc, json_t *item, struct sql_relation *rel,
                   struct sql_window *win)
{
    json_t *rv;
    const char *name, *alias;
    int rc;

    if (json_object_get(item, "JoinExpr"))
        return sql_plan_join(pc, item, rel);
    if (json_object_get(item, "RangeFunction"))
        return plan_window_tvf(pc, item, rel, win);
    if ((rv = json_object_get(item, "RangeSubselect")) != NULL) {
        json_t *sub = json_object_get(json_object_get(rv, "subquery"), "SelectStmt");

        alias = json_string_value(json_object_get(json_object_get(rv, "alias"), "aliasname"));
        if (sub == NULL)
            return plan_error(pc, item, SPATE_ENOTSUP, "not supported: this subquery");
        if ((rc = sql_plan_select(pc, sub, SQL_FORMAT_ROW, NULL, rel)) != 0)
            return rc;
        free(rel->name);
        rel->name = alias ? xstrdup(alias) : NULL;
        return 0;
    }
    if ((rv = json_object_get(item, "RangeVar")) == NULL)
        return plan_error(pc, item, SPATE_ENOTSUP, "not supported: this FROM item");
    name = json_string_value(json_object_get(rv, "relname"));
    alias = json_string_value(json_object_get(json_object_get(rv, "alias"), "aliasname"));
    return plan_table(pc, item, name, alias, rel);
}

/* WITH's query named name: its index in pc->ctes, or -1. */
static int
cte_find(struct sql_plan_context *pc, const char *name)
{
    json_t *c;
    size_t i;

    json_array_foreach(pc->ctes, i, c)
    {
        const char *n = json_string_value(json_object_get(c, "ctename"));

        if (n != NULL && !strcmp(n, name))
            return (int)i;
    }
    return -1;
}

/* WITH's query at index i of pc->ctes in FROM (as alias): planned where it
 * is used, as a view, seeing the queries after it in pc->ctes (those
 * before it in its WITH, and the WITHs around). */
static int
plan_cte(struct sql_plan_context *pc, json_t *item, int i, const char *alias,
         struct sql_relation *rel)
{
    struct sql_plan_context vc = *pc;
    json_t *cte = json_array_get(pc->ctes, (size_t)i);
    json_t *q = json_object_get(json_object_get(cte, "ctequery"), "SelectStmt");
    int rc;

    if (pc->depth >= SQL_MAX_VIEW_DEPTH)
        return plan_error(pc, item, SPATE_EINVAL, "WITH queries and views nested more than %d deep",
                          SQL_MAX_VIEW_DEPTH);
    if (q == NULL)
        return plan_error(pc, item, SPATE_ENOTSUP, "not supported: a WITH query that is no SELECT");
    vc.ctes = json_array();
    for (size_t k = (size_t)i + 1; k < json_array_size(pc->ctes); k++)
        json_array_append(vc.ctes, json_array_get(pc->ctes, k));
    vc.depth++;
    rc = sql_plan_select(&vc, q, SQL_FORMAT_ROW, NULL, rel);
    json_decref(vc.ctes);
    if (rc != 0)
        return rc;
    free(rel->name);
    rel->name = xstrdup(alias);
    return 0;
}

/* The table or view name (as alias) in FROM. */
static int
plan_table(struct sql_plan_context *pc, json_t *item, const char *name, const char *alias,
           struct sql_relation *rel)
{
    struct sql_table *t;
    int rc;

    if (name == NULL)
        return plan_error(pc, item, SPATE_EINVAL, "a table without a name");
    if (cte_find(pc, name) >= 0)
        return plan_cte(pc, item, cte_find(pc, name), alias ? alias : name, rel);
    if ((t = sql_catalog_find(pc->catalog, name)) == NULL) {
        const char *near = sql_catalog_nearest(pc->catalog, name);

        if (near != NULL)
            return plan_error(pc, item, SPATE_EINVAL,
                              "table '%s' does not exist; did you mean '%s'?", name, near);
        return plan_error(pc, item, SPATE_EINVAL, "table '%s' does not exist", name);
    }
    if (t->view) {
        struct sql_plan_context vc = *pc;
        json_t *q = json_object_get(t->query, "SelectStmt");

        if (pc->depth >= SQL_MAX_VIEW_DEPTH)
            return plan_error(pc, item, SPATE_EINVAL, "views nested more than %d deep",
                              SQL_MAX_VIEW_DEPTH);
        vc.script = t->script;
        vc.offset = t->offset;
        vc.ctes = NULL; /* a view sees the catalog, not the WITH around its use */
        vc.depth++;
        if ((rc = sql_plan_select(&vc, q, SQL_FORMAT_ROW, NULL, rel)) != 0)
            return spate_error_wrap(pc->err, "in view '%s'", t->name);
        free(rel->name);
        rel->name = xstrdup(alias ? alias : name);
        return 0;
    }
    if ((rc = sql_connector_source(pc->env, t, rel, pc->err)) != 0)
        return rc;
    spate_name(rel->stream, t->name);
    rel->cols = columns_copy(t->cols, t->ncols);
    rel->ncols = t->ncols;
    rel->name = xstrdup(alias ? alias : name);
    rel->rowtime = t->rowtime;
    rel->watermark_bound_ms = t->watermark_bound_ms;
    if (pc->explain)
        fprintf(pc->explain, "%*sTableSourceScan(table=[%s], connector=[%s])\n", pc->depth * 3, "",
                t->name, sql_table_option(t, "connector"));
    return 0;
}

/* Whether a value of type from may be written to a column of type to
 * without a CAST (Flink's implicit casts on INSERT). */
static bool
assignable(const struct sql_type *from, const struct sql_type *to)
{
    static const int rank[SQL_TYPE_COUNT] = {
        [SQL_INT] = 1, [SQL_BIGINT] = 2, [SQL_DECIMAL] = 3, [SQL_DOUBLE] = 4
    };

    if (from->id == SQL_NULL || from->id == to->id)
        return true;
    return rank[from->id] && rank[to->id] && rank[from->id] <= rank[to->id];
}

static int
unsupported_clauses(struct sql_plan_context *pc, json_t *select)
{
    static const struct {
        const char *key, *what;
    } clauses[] = {
        { "sortClause", "ORDER BY on a stream" },
        { "limitCount", "LIMIT" },
        { "limitOffset", "OFFSET" },
        { "distinctClause", "SELECT DISTINCT" },
        { "windowClause", "WINDOW" },
        { "valuesLists", "VALUES" },
        { "intoClause", "SELECT INTO" },
        { "lockingClause", "FOR UPDATE" },
    };
    const char *op = json_string_value(json_object_get(select, "op"));

    if (op != NULL && strcmp(op, "SETOP_NONE") != 0)
        return plan_error(pc, json_object_get(select, "larg"), SPATE_ENOTSUP, "not supported: %s",
                          op + 6);
    for (size_t i = 0; i < ARRAY_SIZE(clauses); i++) {
        json_t *v = json_object_get(select, clauses[i].key);

        if (v != NULL && !(json_is_array(v) && json_array_size(v) == 0))
            return plan_error(pc, json_is_array(v) ? json_array_get(v, 0) : v, SPATE_ENOTSUP,
                              "not supported: %s", clauses[i].what);
    }
    return 0;
}

/* The output name of a SELECT item: its alias, the column it names, or
 * Flink's EXPR$i. */
static char *
output_name(json_t *target, int i)
{
    const char *alias = json_string_value(json_object_get(target, "name"));
    json_t *ref = json_object_get(json_object_get(target, "val"), "ColumnRef");

    if (alias != NULL)
        return xstrdup(alias);
    if (ref != NULL) {
        json_t *f = json_object_get(ref, "fields");
        const char *col = json_string_value(json_object_get(
            json_object_get(json_array_get(f, json_array_size(f) - 1), "String"), "sval"));

        if (col != NULL)
            return xstrdup(col);
    }
    return xasprintf("EXPR$%d", i);
}

static void
add_output(struct sql_program *p, int reg, const char *name, const struct sql_type *t)
{
    p->outputs = xrealloc(p->outputs, (size_t)(p->noutput + 1) * sizeof *p->outputs);
    p->output = xrealloc(p->output, (size_t)(p->noutput + 1) * sizeof *p->output);
    p->outputs[p->noutput] = reg;
    p->output[p->noutput].name = xstrdup(name);
    p->output[p->noutput].type = *t;
    p->noutput++;
}

/* What a Calc is asked for beyond its SELECT list and WHERE. */
struct calc_request {
    json_t *targets, *where;
    enum sql_format output;
    const struct sql_table *sink;
    /* GROUP BY above: the first nkey outputs are the group key, and a
     * $key column of their bytes goes before them (the exchange's key). */
    bool keyed;
    int nkey;
    /* A changelog: the input column of the row kind, -1: none. A row
     * output carries it on as $kind: its first column, or its last when
     * keyed (after the keyed operator's own columns). */
    int kind_col;
    const char *where_what; /* "WHERE" or "HAVING" */
};

/* One Calc over in (taken), its explanation followed by below_text
 * (taken). */
static int
plan_calc(struct sql_plan_context *pc, struct sql_relation *in_rel, const struct calc_request *req,
          char *below_text, struct sql_relation *rel)
{
    const struct sql_table *sink = req->sink;
    enum sql_format output = req->output;
    const struct sql_column *sink_cols = sink ? sink->cols : NULL;
    const char *sink_name = sink ? sink->name : NULL;
    int nsink_cols = sink ? sink->ncols : 0;
    struct sql_relation in = *in_rel;
    struct sql_program *p = xcalloc(1, sizeof *p);
    struct sql_compiler c;
    struct sql_scope scope;
    json_t *targets = req->targets, *where = req->where;
    const spate_type *out_type;
    struct spate_stream *node;
    uint8_t *bytes = NULL;
    size_t len = 0;
    struct sql_column *out_cols = NULL;
    int rc, n = 0, proctime_col = -1;

    memset(in_rel, 0, sizeof *in_rel);
    scope = (struct sql_scope){ in.name, in.cols, in.ncols };
    sql_compiler_init(&c, p, &scope, pc->script, pc->offset, pc->err);
    c.qualifiers = in.qualifiers;
    c.catalog = pc->catalog;
    p->input_format = in.format;
    p->input = columns_copy(in.cols, in.ncols);
    p->ninput = in.ncols;
    p->datagen = in.datagen;
    in.datagen = NULL;
    p->datagen_seed = in.datagen_seed;
    p->nexmark = in.nexmark;
    in.nexmark = NULL;
    p->csv_delimiter = in.csv_delimiter ? in.csv_delimiter : ',';
    p->csv_out_delimiter = ',';
    if (sink != NULL && sql_table_option(sink, "csv.field-delimiter") != NULL)
        p->csv_out_delimiter = sql_table_option(sink, "csv.field-delimiter")[0];
    p->ignore_parse_errors = in.ignore_parse_errors;
    /* A source with event time: the Calc that reads it stamps the records
     * with its rowtime; watermarks follow it (below). */
    p->rowtime =
        in.format != SQL_FORMAT_ROW && in.stream != NULL && in.rowtime >= 0 ? in.rowtime : -1;
    p->output_format = output;
    p->kind_reg = req->kind_col;
    /* An upsert (or keyed) sink's lines carry their row kinds. */
    p->changelog = sink != NULL && sql_connector_keyed(sink);
    /* A partitioned sink's lines carry their bucket (the INSERT's columns
     * are the table's, in order). */
    if (sink != NULL && sink->npartition > 0) {
        p->npartition = sink->npartition;
        p->partition = xcalloc((size_t)sink->npartition, sizeof *p->partition);
        memcpy(p->partition, sink->partition, (size_t)sink->npartition * sizeof *p->partition);
    }
    if (where != NULL) {
        struct sql_operand w;
        char b1[32];

        if ((rc = sql_compile(&c, where, &w)) != 0)
            goto fail;
        if (w.type.id != SQL_BOOLEAN) {
            rc =
                plan_error(pc, where, SPATE_EINVAL, "%s needs a BOOLEAN, not %s",
                           req->where_what ? req->where_what : "WHERE", sql_type_name(&w.type, b1));
            goto fail;
        }
        p->filter = w.reg;
    }
    if (req->keyed) {
        /* $key first: the bytes of the group columns, which come next. */
        add_output(p, sql_compile_temp(&c, &(struct sql_type){ SQL_VARCHAR, 0, 0, false }), "$key",
                   &(struct sql_type){ SQL_VARCHAR, 0, 0, false });
        p->key_reg = p->outputs[0];
        n++;
    } else if (output == SQL_FORMAT_ROW && req->kind_col >= 0 && in.updating) {
        add_output(p, req->kind_col, "$kind", &in.cols[req->kind_col].type);
        n++;
    }
    for (size_t i = 0; i < json_array_size(targets); i++) {
        json_t *rt = json_object_get(json_array_get(targets, i), "ResTarget");
        json_t *val = json_object_get(rt, "val");
        json_t *ref = json_object_get(val, "ColumnRef");
        json_t *f = json_object_get(ref, "fields");

        if (ref != NULL && json_object_get(json_array_get(f, json_array_size(f) - 1), "A_Star")) {
            /* a join's table.* its columns; a changelog's row kind ($kind)
             * is no column */
            const char *tab = json_array_size(f) == 2 ? sval_of(json_array_get(f, 0)) : NULL;

            for (int k = 0; k < in.ncols; k++) {
                if (k == req->kind_col || in.cols[k].name[0] == '$' ||
                    (tab != NULL && in.qualifiers != NULL &&
                     (in.qualifiers[k] == NULL || strcmp(in.qualifiers[k], tab) != 0)))
                    continue;
                add_output(p, k, in.cols[k].name, &in.cols[k].type);
                n++;
            }
            continue;
        }
        {
            struct sql_operand o;
            char *name = output_name(rt, n + 1);

            if ((rc = sql_compile(&c, val, &o)) != 0) {
                free(name);
                goto fail;
            }
            if (o.type.id == SQL_NULL) {
                struct sql_type vt = { SQL_VARCHAR, 0, 0, true };

                sql_compile_cast(&c, &o, &vt, -1);
            }
            add_output(p, o.reg, name, &o.type);
            free(name);
            n++;
        }
    }
    if (p->noutput == 0) {
        rc = plan_error(pc, targets, SPATE_EINVAL, "a SELECT without columns");
        goto fail;
    }
    if (req->keyed && req->kind_col >= 0 && in.updating)
        add_output(p, req->kind_col, "$kind", &in.cols[req->kind_col].type);
    /* A PROCTIME() column: the Calc stamps its rows with it (the wall
     * clock when the row went through), watermarks follow, and it is the
     * rows' time for a window over them (in place of an event time). */
    for (int i = 0; i < p->noutput && proctime_col < 0; i++)
        for (int k = 0; k < p->ncode; k++)
            if (p->code[k].op == SQLOP_PROCTIME && p->code[k].dst == p->outputs[i]) {
                proctime_col = i;
                p->rowtime = p->outputs[i];
                break;
            }
    if (req->keyed) {
        p->nkey = req->nkey;
        p->key_regs = xcalloc((size_t)req->nkey + 1, sizeof *p->key_regs);
        for (int i = 0; i < req->nkey; i++)
            p->key_regs[i] = p->outputs[1 + i];
    }
    if (p->noutput > TYPES_ROW_MAX_FIELDS) {
        rc = plan_error(pc, targets, SPATE_ENOTSUP, "not supported: more than %d columns",
                        TYPES_ROW_MAX_FIELDS);
        goto fail;
    }
    if (sink_cols != NULL) {
        /* INSERT: the sink's columns, in order, each given its type. */
        if (p->noutput != nsink_cols) {
            rc = plan_error(pc, targets, SPATE_EINVAL,
                            "the query gives %d columns, table '%s' has %d", p->noutput, sink_name,
                            nsink_cols);
            goto fail;
        }
        for (int i = 0; i < nsink_cols; i++) {
            char b1[32], b2[32];
            struct sql_operand o = { .reg = p->outputs[i], .type = p->output[i].type };

            if (!assignable(&p->output[i].type, &sink_cols[i].type)) {
                rc = plan_error(
                    pc, json_array_get(targets, (size_t)MIN(i, (int)json_array_size(targets) - 1)),
                    SPATE_EINVAL, "type mismatch: column '%s' of '%s' is %s, the query gives %s",
                    sink_cols[i].name, sink_name, sql_type_name(&sink_cols[i].type, b1),
                    sql_type_name(&p->output[i].type, b2));
                goto fail;
            }
            if ((rc = sql_compile_cast(&c, &o, &sink_cols[i].type, -1)) != 0)
                goto fail;
            p->outputs[i] = o.reg;
            free(p->output[i].name);
            p->output[i].name = xstrdup(sink_cols[i].name);
            p->output[i].type = sink_cols[i].type;
        }
    }
    sql_compiler_finish(&c);
    out_cols = columns_copy(p->output, p->noutput);
    /* The Calc enforces NOT NULL for a sink's columns only (Flink's
     * table.exec.sink.not-null-enforcer); elsewhere a column's NOT NULL is
     * the planner's knowledge, not a check per row. */
    for (int i = 0; sink_cols == NULL && i < p->noutput; i++)
        p->output[i].type.nullable = true;
    if (output == SQL_FORMAT_ROW) {
        const spate_type *fields[TYPES_ROW_MAX_FIELDS];

        for (int i = 0; i < p->noutput; i++)
            fields[i] = sql_type_spate(p->output[i].type.id);
        out_type = env_own_type(pc->env, types_new_row(p->noutput, fields));
    } else {
        out_type = spate_type_string();
    }
    sql_program_encode(p, &bytes, &len, pc->err);
    node = stream_node_new(pc->env, OP_SQL_CALC, in.stream, out_type);
    node->opconf.sql.program = bytes;
    node->opconf.sql.program_len = len;
    spate_name(node, "Calc");
    if (p->rowtime >= 0) {
        /* Flink's WatermarkAssigner: bounded out-of-orderness over the
         * timestamps the Calc set. */
        spate_watermark_strategy wm =
            spate_watermarks_bounded(NULL, proctime_col >= 0 ? 0 : in.watermark_bound_ms);

        node = spate_name(spate_assign_timestamps_and_watermarks(node, &wm), "WatermarkAssigner");
    }
    if (pc->explain) {
        char *code = sql_program_describe(p);

        if (proctime_col >= 0)
            fprintf(pc->explain, "%*sWatermarkAssigner(proctime=[%s], watermark=[%s])\n",
                    pc->depth * 3, "", p->output[proctime_col].name, p->output[proctime_col].name);
        else if (p->rowtime >= 0)
            fprintf(pc->explain, "%*sWatermarkAssigner(rowtime=[%s], watermark=[%s - %lld ms])\n",
                    pc->depth * 3, "", p->input[p->rowtime].name, p->input[p->rowtime].name,
                    (long long)in.watermark_bound_ms);
        fprintf(pc->explain, "%*sCalc(select=[", pc->depth * 3, "");
        for (int i = 0; i < p->noutput; i++)
            fprintf(pc->explain, "%s%s", i ? ", " : "", p->output[i].name);
        fprintf(pc->explain, "]%s)\n%s", p->filter >= 0 ? ", where=[...]" : "", code);
        fputs(below_text ? below_text : "", pc->explain);
        free(code);
    }
    free(below_text);
    sql_relation_release(rel);
    rel->stream = node;
    rel->format = SQL_FORMAT_ROW;
    rel->cols = out_cols;
    rel->ncols = p->noutput;
    rel->rowtime = proctime_col;
    rel->proctime = proctime_col >= 0;
    rel->watermark_bound_ms = 0;
    sql_relation_release(&in);
    sql_program_free(p);
    return 0;
fail:
    free(below_text);
    for (int i = 0; i < c.nconsts; i++)
        free(c.consts[i].sval);
    free(c.consts);
    sql_relation_release(&in);
    sql_program_free(p);
    return rc;
}

int
sql_plan_keyed_calc(struct sql_plan_context *pc, struct sql_relation *in, json_t *targets,
                    json_t *where, int nkey, char *below_text, struct sql_relation *rel)
{
    struct calc_request req = { targets, where, SQL_FORMAT_ROW,      NULL,
                                true,    nkey,  sql_kind_column(in), "ON" };

    return plan_calc(pc, in, &req, below_text, rel);
}

int
sql_kind_column(const struct sql_relation *r)
{
    for (int i = 0; r->updating && i < r->ncols; i++)
        if (!strcmp(r->cols[i].name, "$kind"))
            return i;
    return -1;
}

/* Whether the query's output takes updates: a query over it (its operators
 * consume changelogs), print and blackhole, and the upsert sinks. */
static bool
takes_updates(enum sql_format output, const struct sql_table *sink)
{
    return output == SQL_FORMAT_PRINT || output == SQL_FORMAT_NONE || output == SQL_FORMAT_ROW ||
           (sink != NULL && sql_connector_upsert(sink));
}

/* An updating query (why: the operator that makes it one) under a query
 * (output ROW) or into a sink that takes insertions only: the error, and
 * what (final) would make each row final. */
static int
refuse_updating(struct sql_plan_context *pc, json_t *at, enum sql_format output,
                const struct sql_table *sink, const char *why, const char *final)
{
    if (output == SQL_FORMAT_ROW)
        return plan_error(pc, at, SPATE_ENOTSUP,
                          "not supported: a query over an updating query (%s, in a subquery or "
                          "view)",
                          why);
    return plan_error(pc, at, SPATE_ENOTSUP,
                      "not supported: table '%s' (connector '%s') takes insertions only, and "
                      "this query updates its rows (%s); an upsert sink takes the updates "
                      "('upsert-kafka', or 'filesystem' with \"sink.changelog-mode\" = 'upsert', "
                      "each with a PRIMARY KEY), so does print, and %s makes each row final",
                      sink ? sink->name : "?", sink ? sql_table_option(sink, "connector") : "?",
                      why, final);
}

/* ---- GROUP BY and windows ---- */

static const char *
sval_of(json_t *node)
{
    return json_string_value(json_object_get(json_object_get(node, "String"), "sval"));
}

/* The last name of a ColumnRef node ({"ColumnRef": ...}), or NULL. */
static const char *
column_name(json_t *node)
{
    json_t *f = json_object_get(json_object_get(node, "ColumnRef"), "fields");

    return f ? sval_of(json_array_get(f, json_array_size(f) - 1)) : NULL;
}

static bool
is_window_column(const char *name)
{
    return name && (!strcmp(name, "window_start") || !strcmp(name, "window_end") ||
                    !strcmp(name, "window_time"));
}

/* The aggregate a FuncCall node calls, or SQL_AGG_KIND_COUNT when it is no
 * aggregate. */
static enum sql_agg_kind
aggregate_of(json_t *node)
{
    json_t *fc = json_object_get(node, "FuncCall"), *names;
    const char *name;

    if (fc == NULL)
        return SQL_AGG_KIND_COUNT;
    names = json_object_get(fc, "funcname");
    name = sval_of(json_array_get(names, json_array_size(names) - 1));
    if (name == NULL)
        return SQL_AGG_KIND_COUNT;
    if (!strcasecmp(name, "count"))
        return json_is_true(json_object_get(fc, "agg_star"))       ? SQL_AGG_COUNT_STAR
               : json_is_true(json_object_get(fc, "agg_distinct")) ? SQL_AGG_COUNT_DISTINCT
                                                                   : SQL_AGG_COUNT;
    if (!strcasecmp(name, "sum"))
        return SQL_AGG_SUM;
    if (!strcasecmp(name, "avg"))
        return SQL_AGG_AVG;
    if (!strcasecmp(name, "min"))
        return SQL_AGG_MIN;
    if (!strcasecmp(name, "max"))
        return SQL_AGG_MAX;
    return SQL_AGG_KIND_COUNT;
}

/* The first node in node (itself first) that match says is one, or NULL. */
static json_t *
find_first(json_t *node, bool (*match)(json_t *node))
{
    const char *key;
    json_t *v, *found;
    size_t i;

    if (json_is_array(node)) {
        json_array_foreach(node, i, v) if ((found = find_first(v, match)) != NULL) return found;
        return NULL;
    }
    if (!json_is_object(node))
        return NULL;
    if (match(node))
        return node;
    json_object_foreach(node, key, v) if ((found = find_first(v, match)) != NULL) return found;
    return NULL;
}

static bool
is_aggregate(json_t *node)
{
    return aggregate_of(node) != SQL_AGG_KIND_COUNT;
}

/* The first aggregate call in node, or NULL. */
static json_t *
find_aggregate(json_t *node)
{
    return find_first(node, is_aggregate);
}

/* Whether two expressions are the same, their places aside (a column by
 * its name alone). */
static bool
same_expr(json_t *a, json_t *b)
{
    const char *key;
    json_t *v;
    size_t i;

    if (column_name(a) != NULL || column_name(b) != NULL)
        return column_name(a) && column_name(b) && !strcmp(column_name(a), column_name(b));
    if (json_is_array(a) && json_is_array(b)) {
        if (json_array_size(a) != json_array_size(b))
            return false;
        json_array_foreach(a, i, v) if (!same_expr(v, json_array_get(b, i))) return false;
        return true;
    }
    if (json_is_object(a) && json_is_object(b)) {
        size_t na = json_object_size(a) - (json_object_get(a, "location") != NULL);
        size_t nb = json_object_size(b) - (json_object_get(b, "location") != NULL);

        if (na != nb)
            return false;
        json_object_foreach(a, key, v) if (strcmp(key, "location") != 0 &&
                                           !same_expr(v, json_object_get(b, key))) return false;
        return true;
    }
    return json_equal(a, b);
}

/* An aggregation being planned: the GROUP BY expressions and the calls
 * the SELECT list and HAVING make, which the rewrite turns into columns
 * of the aggregate's output ($gN, $aggN). */
struct agg_plan {
    json_t **groups; /* borrowed from the statement */
    int ngroup;
    struct agg_call_plan {
        enum sql_agg_kind kind;
        json_t *arg, *filter; /* referenced */
        json_t *node;         /* the call, a copy for errors */
    } * calls;
    int ncalls;
    bool windowed;
};

static void
agg_plan_release(struct agg_plan *ap)
{
    for (int i = 0; i < ap->ncalls; i++) {
        json_decref(ap->calls[i].arg);
        json_decref(ap->calls[i].filter);
        json_decref(ap->calls[i].node);
    }
    free(ap->calls);
    free(ap->groups);
}

/* Makes node (an expression node, in place) a reference to column name. */
static void
become_column(json_t *node, const char *name)
{
    int loc = sql_location(node);
    json_t *ref = json_pack("{s:[{s:{s:s}}]}", "fields", "String", "sval", name);

    json_object_clear(node);
    json_object_set_new(ref, "location", json_integer(loc));
    json_object_set_new(node, "ColumnRef", ref);
}

/* Rewrites an expression of the SELECT list or HAVING over the
 * aggregate's output: a GROUP BY expression becomes its column, an
 * aggregate call its result's, and any other column is an error. */
static int
rewrite(struct sql_plan_context *pc, struct agg_plan *ap, json_t *node)
{
    enum sql_agg_kind kind;
    const char *key, *col;
    json_t *v;
    size_t i;
    char name[32];
    int rc;

    if (json_is_array(node)) {
        json_array_foreach(node, i, v) if ((rc = rewrite(pc, ap, v)) != 0) return rc;
        return 0;
    }
    if (!json_is_object(node))
        return 0;
    for (int g = 0; g < ap->ngroup; g++)
        if (same_expr(node, ap->groups[g])) {
            snprintf(name, sizeof name, "$g%d", g);
            become_column(node, name);
            return 0;
        }
    if ((kind = aggregate_of(node)) != SQL_AGG_KIND_COUNT) {
        json_t *fc = json_object_get(node, "FuncCall"), *args = json_object_get(fc, "args");
        struct agg_call_plan *c;

        if (json_object_get(fc, "over"))
            return plan_error(pc, node, SPATE_ENOTSUP, "not supported: OVER windows");
        if (json_object_get(fc, "agg_order") ||
            json_is_true(json_object_get(fc, "agg_within_group")))
            return plan_error(pc, node, SPATE_ENOTSUP, "not supported: ORDER BY in an aggregate");
        if (json_is_true(json_object_get(fc, "agg_distinct")) && kind != SQL_AGG_COUNT_DISTINCT)
            return plan_error(pc, node, SPATE_ENOTSUP,
                              "not supported: DISTINCT in an aggregate other than COUNT");
        if (kind != SQL_AGG_COUNT_STAR && json_array_size(args) != 1)
            return plan_error(pc, node, SPATE_EINVAL, "an aggregate function takes one argument");
        if (find_aggregate(args) != NULL || find_aggregate(json_object_get(fc, "agg_filter")))
            return plan_error(pc, find_aggregate(args) ? find_aggregate(args) : node, SPATE_EINVAL,
                              "aggregate function calls cannot be nested");
        ap->calls = xrealloc(ap->calls, (size_t)(ap->ncalls + 1) * sizeof *ap->calls);
        c = &ap->calls[ap->ncalls];
        c->kind = kind;
        c->arg = json_incref(json_array_get(args, 0));
        c->filter = json_incref(json_object_get(fc, "agg_filter"));
        c->node = json_deep_copy(node);
        snprintf(name, sizeof name, "$agg%d", ap->ncalls++);
        become_column(node, name);
        return 0;
    }
    if ((col = column_name(node)) != NULL) {
        if (col[0] == '$' || (ap->windowed && is_window_column(col)))
            return 0;
        return plan_error(pc, node, SPATE_EINVAL,
                          "column '%s' is neither in GROUP BY nor in an aggregate function", col);
    }
    json_object_foreach(node, key, v) if ((rc = rewrite(pc, ap, v)) != 0) return rc;
    return 0;
}

/* The first node in node (itself first) that has a place in the
 * statement, or NULL. */
static json_t *
find_located(json_t *node)
{
    const char *key;
    json_t *v, *found;
    size_t i;

    if (json_is_object(node) && sql_location(node) >= 0)
        return node;
    if (json_is_array(node)) {
        json_array_foreach(node, i, v) if ((found = find_located(v)) != NULL) return found;
    } else if (json_is_object(node)) {
        json_object_foreach(node, key, v) if ((found = find_located(v)) != NULL) return found;
    }
    return NULL;
}

/* node, or the first node inside it with a place, for errors (a cast of
 * a literal has none). */
static json_t *
located(json_t *node)
{
    json_t *found = find_located(node);

    return found ? found : node;
}

/* A constant INTERVAL expression's milliseconds (a window's size). */
static int
constant_interval(struct sql_plan_context *pc, json_t *node, const char *what, int64_t *ms)
{
    struct sql_program *p = xcalloc(1, sizeof *p);
    struct sql_scope scope = { NULL, NULL, 0 };
    struct sql_compiler c;
    struct sql_operand o;
    struct sql_eval e;
    char b[32];
    int rc;

    sql_compiler_init(&c, p, &scope, pc->script, pc->offset, pc->err);
    rc = sql_compile(&c, node, &o);
    if (rc == 0 && o.type.id != SQL_INTERVAL)
        rc = plan_error(pc, located(node), SPATE_EINVAL, "a window's %s is an INTERVAL, not %s",
                        what, sql_type_name(&o.type, b));
    sql_compiler_finish(&c);
    if (rc == 0) {
        sql_eval_init(&e, p);
        sql_eval_begin(&e);
        sql_eval_run(&e);
        *ms = e.r[o.reg].null ? 0 : e.r[o.reg].i;
        sql_eval_release(&e);
        if (*ms <= 0)
            rc =
                plan_error(pc, located(node), SPATE_EINVAL, "a window's %s must be positive", what);
    }
    sql_program_free(p);
    return rc;
}

int
sql_plan_constant_interval(struct sql_plan_context *pc, json_t *node, const char *what, int64_t *ms)
{
    return constant_interval(pc, node, what, ms);
}

/* TUMBLE(t, ts, size), HOP(t, ts, slide, size), SESSION(t, ts, gap) in
 * FROM (Flink's TUMBLE(TABLE t, DESCRIPTOR(ts), size): PostgreSQL's grammar
 * has no TABLE argument; DESCRIPTOR(ts) is taken too): the table, its
 * window on its event time. */
static int
plan_window_tvf(struct sql_plan_context *pc, json_t *item, struct sql_relation *rel,
                struct sql_window *win)
{
    json_t *rf = json_object_get(item, "RangeFunction");
    json_t *fn = json_array_get(
        json_object_get(
            json_object_get(json_array_get(json_object_get(rf, "functions"), 0), "List"), "items"),
        0);
    json_t *fc = json_object_get(fn, "FuncCall"), *args = json_object_get(fc, "args"), *col;
    json_t *names = json_object_get(fc, "funcname");
    const char *name = sval_of(json_array_get(names, json_array_size(names) - 1));
    const char *alias =
        json_string_value(json_object_get(json_object_get(rf, "alias"), "aliasname"));
    const char *table, *time_col;
    size_t nargs;
    int rc;

    if (fn != NULL)
        item = located(fn);

    if (fc == NULL || name == NULL ||
        (strcasecmp(name, "tumble") && strcasecmp(name, "hop") && strcasecmp(name, "session")))
        return plan_error(pc, item, SPATE_ENOTSUP,
                          "not supported: table function '%s' in FROM (TUMBLE, HOP and SESSION "
                          "are)",
                          name ? name : "?");
    if (win == NULL)
        return plan_error(pc, item, SPATE_ENOTSUP,
                          "not supported: a window table function (%s) whose rows are not "
                          "aggregated (GROUP BY window_start, window_end)",
                          name);
    win->node = item;
    win->kind = !strcasecmp(name, "tumble") ? SQL_WINDOW_TUMBLE
                : !strcasecmp(name, "hop")  ? SQL_WINDOW_HOP
                                            : SQL_WINDOW_SESSION;
    nargs = win->kind == SQL_WINDOW_HOP ? 4 : 3;
    if (json_array_size(args) != nargs)
        return plan_error(pc, item, SPATE_EINVAL,
                          "%s takes %zu arguments: the table, its time column and %s", name, nargs,
                          win->kind == SQL_WINDOW_HOP       ? "the slide and size"
                          : win->kind == SQL_WINDOW_SESSION ? "the gap"
                                                            : "the size");
    table = column_name(json_array_get(args, 0));
    col = json_array_get(args, 1);
    if (json_object_get(col, "FuncCall") != NULL &&
        json_array_size(json_object_get(json_object_get(col, "FuncCall"), "args")) == 1)
        col = json_array_get(json_object_get(json_object_get(col, "FuncCall"), "args"), 0);
    time_col = column_name(col);
    if (table == NULL || time_col == NULL)
        return plan_error(pc, item, SPATE_EINVAL,
                          "%s's first argument names a table, its second a column "
                          "(DESCRIPTOR(col) or col)",
                          name);
    if ((rc = plan_table(pc, json_array_get(args, 0), table, alias ? alias : table, rel)) != 0)
        return rc;
    if ((rel->format == SQL_FORMAT_ROW && !rel->proctime) || rel->rowtime < 0)
        return plan_error(pc, json_array_get(args, 0), SPATE_ENOTSUP,
                          "not supported: a window over '%s', which has no event time (a table "
                          "with a WATERMARK) nor a PROCTIME() column",
                          table);
    if (strcmp(rel->cols[rel->rowtime].name, time_col) != 0)
        return plan_error(pc, col, SPATE_ENOTSUP,
                          "not supported: a window on '%s': windows are on the %s of '%s', "
                          "its %s column '%s'",
                          time_col, rel->proctime ? "processing time" : "event time", table,
                          rel->proctime ? "PROCTIME()" : "WATERMARK", rel->cols[rel->rowtime].name);
    if (win->kind == SQL_WINDOW_TUMBLE)
        return constant_interval(pc, json_array_get(args, 2), "size", &win->size_ms);
    if (win->kind == SQL_WINDOW_SESSION)
        return constant_interval(pc, json_array_get(args, 2), "gap", &win->gap_ms);
    if ((rc = constant_interval(pc, json_array_get(args, 2), "slide", &win->slide_ms)) != 0 ||
        (rc = constant_interval(pc, json_array_get(args, 3), "size", &win->size_ms)) != 0)
        return rc;
    if (win->size_ms % win->slide_ms != 0)
        return plan_error(pc, located(json_array_get(args, 3)), SPATE_ENOTSUP,
                          "not supported: a HOP window whose size is no multiple of its slide "
                          "(as in Flink)");
    return 0;
}

static const char *const agg_names[] = {
    [SQL_AGG_COUNT_STAR] = "COUNT(*)",
    [SQL_AGG_COUNT] = "COUNT",
    [SQL_AGG_COUNT_DISTINCT] = "COUNT(DISTINCT)",
    [SQL_AGG_SUM] = "SUM",
    [SQL_AGG_AVG] = "AVG",
    [SQL_AGG_MIN] = "MIN",
    [SQL_AGG_MAX] = "MAX",
};

/* Adds a SELECT item name = val (referenced) to the array targets. */
static void
add_target(json_t *targets, const char *name, json_t *val)
{
    json_array_append_new(targets,
                          json_pack("{s:{s:s,s:O}}", "ResTarget", "name", name, "val", val));
}

/* The FROM of a query whose plan puts nodes above it, planned into rel with
 * its EXPLAIN text in *text (NULL without EXPLAIN), four levels below the
 * query's last Calc. */
static int
plan_from_below(struct sql_plan_context *pc, json_t *select, struct sql_relation *rel,
                struct sql_window *win, char **text)
{
    FILE *explain = pc->explain;
    size_t len = 0;
    int rc;

    if (explain != NULL) {
        pc->explain = open_memstream(text, &len);
        pc->depth += 4;
    }
    rc = plan_from(pc, select, rel, win);
    if (explain != NULL) {
        fclose(pc->explain);
        pc->explain = explain;
        pc->depth -= 4;
    }
    return rc;
}

/* The first Calc of such a query, over in (from_text its EXPLAIN text,
 * taken), into out, with its own text in *text, three levels below the
 * last Calc. */
static int
plan_calc_below(struct sql_plan_context *pc, struct sql_relation *in,
                const struct calc_request *req, char *from_text, struct sql_relation *out,
                char **text)
{
    FILE *explain = pc->explain;
    size_t len = 0;
    int rc;

    if (explain != NULL) {
        pc->explain = open_memstream(text, &len);
        pc->depth += 3;
    }
    rc = plan_calc(pc, in, req, from_text, out);
    if (explain != NULL) {
        fclose(pc->explain);
        pc->explain = explain;
        pc->depth -= 3;
    }
    return rc;
}

/* SELECT ... GROUP BY (or with aggregates, or over a window table
 * function): a Calc that computes the group columns, the calls' arguments
 * and FILTERs and the group key; an exchange by that key; the aggregate
 * (OP_SQL_AGG); and a Calc of HAVING and the SELECT list over its output.
 * Unwindowed, the result is a changelog. */
static int
plan_aggregate(struct sql_plan_context *pc, json_t *select, enum sql_format output,
               const struct sql_table *sink, struct sql_relation *rel)
{
    json_t *targets = json_deep_copy(json_object_get(select, "targetList"));
    json_t *having = json_deep_copy(json_object_get(select, "havingClause"));
    json_t *group = json_object_get(select, "groupClause"), *where, *pre = json_array(), *g;
    struct sql_window win = { SQL_WINDOW_NONE, 0, 0, 0, NULL };
    struct sql_relation in = { 0 }, mid = { 0 }, agg = { 0 };
    struct sql_agg_spec spec = { 0 };
    struct agg_plan ap = { 0 };
    FILE *explain = pc->explain;
    char *from_text = NULL, *pre_text = NULL, *agg_text = NULL, *in_name = NULL;
    size_t agg_len = 0;
    bool seen_start = false, seen_end = false, in_updating;
    struct calc_request req = { 0 };
    const spate_type *fields[TYPES_ROW_MAX_FIELDS];
    struct spate_stream *node;
    struct sql_column *out_cols;
    int rc, nout, col;
    size_t i;

    rc = plan_from_below(pc, select, &in, &win, &from_text);
    if (rc != 0)
        goto out;
    in_updating = in.updating;
    if (in.updating && win.kind != SQL_WINDOW_NONE) {
        rc = plan_error(pc, select, SPATE_ENOTSUP,
                        "not supported: a window aggregate over an updating query (an outer "
                        "join or a GROUP BY without a window)");
        goto out;
    }
    in_name = in.name ? xstrdup(in.name) : NULL;
    ap.windowed = win.kind != SQL_WINDOW_NONE;
    ap.groups = xcalloc(json_array_size(group) + 1, sizeof *ap.groups);
    json_array_foreach(group, i, g)
    {
        const char *name = column_name(g);

        if (ap.windowed && is_window_column(name)) {
            seen_start |= !strcmp(name, "window_start");
            seen_end |= !strcmp(name, "window_end");
            continue;
        }
        if (json_object_get(g, "GroupingSet") != NULL) {
            rc = plan_error(pc, g, SPATE_ENOTSUP, "not supported: GROUPING SETS, ROLLUP and CUBE");
            goto out;
        }
        if (find_aggregate(g) != NULL) {
            rc = plan_error(pc, g, SPATE_EINVAL, "an aggregate function in GROUP BY");
            goto out;
        }
        if (json_object_get(g, "A_Const") != NULL) {
            rc = plan_error(pc, g, SPATE_ENOTSUP,
                            "not supported: GROUP BY a position or a constant (name the column "
                            "or the expression)");
            goto out;
        }
        ap.groups[ap.ngroup++] = g;
    }
    if (ap.windowed && !(seen_start && seen_end)) {
        rc = plan_error(pc, win.node, SPATE_ENOTSUP,
                        "not supported: a window table function whose rows are not grouped "
                        "by their window (GROUP BY window_start, window_end, ...)");
        goto out;
    }
    /* The SELECT list and HAVING over the aggregate's output. */
    json_array_foreach(targets, i, g)
    {
        json_t *rt = json_object_get(g, "ResTarget"), *val = json_object_get(rt, "val");

        if (column_name(val) == NULL && json_object_get(val, "ColumnRef") != NULL) {
            rc = plan_error(pc, val, SPATE_ENOTSUP, "not supported: * with GROUP BY");
            goto out;
        }
        if (json_object_get(rt, "name") == NULL) {
            char *name = output_name(rt, (int)i + 1);

            json_object_set_new(rt, "name", json_string_nocheck(name));
            free(name);
        }
        if ((rc = rewrite(pc, &ap, val)) != 0)
            goto out;
    }
    if (having != NULL && (rc = rewrite(pc, &ap, having)) != 0)
        goto out;
    if ((where = json_object_get(select, "whereClause")) != NULL && find_aggregate(where)) {
        rc = plan_error(pc, find_aggregate(where), SPATE_EINVAL,
                        "aggregate functions are not allowed in WHERE (HAVING filters groups)");
        goto out;
    }
    if (!ap.windowed && !takes_updates(output, sink)) {
        json_t *at = ap.ngroup > 0 ? ap.groups[0] : ap.ncalls > 0 ? ap.calls[0].node : select;

        rc = refuse_updating(pc, at, output, sink, "GroupAggregate: GROUP BY without a window",
                             "a window (TUMBLE, HOP, SESSION)");
        goto out;
    }
    /* The first Calc: group columns, then arguments and filters. */
    for (int k = 0; k < ap.ngroup; k++) {
        char name[32];

        snprintf(name, sizeof name, "$g%d", k);
        add_target(pre, name, ap.groups[k]);
    }
    spec.calls = xcalloc((size_t)ap.ncalls + 1, sizeof *spec.calls);
    spec.ncalls = ap.ncalls;
    col = 1 + ap.ngroup;
    for (int k = 0; k < ap.ncalls; k++) {
        char name[32];

        spec.calls[k].kind = ap.calls[k].kind;
        spec.calls[k].arg = spec.calls[k].filter = -1;
        if (ap.calls[k].arg != NULL) {
            snprintf(name, sizeof name, "$a%d", k);
            add_target(pre, name, ap.calls[k].arg);
            spec.calls[k].arg = col++;
        }
        if (ap.calls[k].filter != NULL) {
            snprintf(name, sizeof name, "$f%d", k);
            add_target(pre, name, ap.calls[k].filter);
            spec.calls[k].filter = col++;
        }
        if (ap.calls[k].kind == SQL_AGG_COUNT_DISTINCT && win.kind == SQL_WINDOW_SESSION) {
            rc = plan_error(pc, ap.calls[k].node, SPATE_ENOTSUP,
                            "not supported: COUNT(DISTINCT ...) in a SESSION window");
            goto out;
        }
    }
    req = (struct calc_request){ pre,  where,     SQL_FORMAT_ROW,       NULL,
                                 true, ap.ngroup, sql_kind_column(&in), "WHERE" };
    rc = plan_calc_below(pc, &in, &req, from_text, &mid, &pre_text);
    from_text = NULL;
    if (rc != 0)
        goto out;
    if (mid.ncols != col + (in_updating ? 1 : 0)) {
        rc = plan_error(pc, select, SPATE_EINVAL, "the aggregate's input has %d columns, not %d",
                        mid.ncols, col);
        goto out;
    }
    /* The aggregate. */
    spec.input = mid.cols;
    spec.ninput = mid.ncols;
    spec.ngroup = ap.ngroup;
    spec.window = win.kind;
    spec.size_ms = win.size_ms;
    spec.slide_ms = win.slide_ms;
    spec.gap_ms = win.gap_ms;
    for (int k = 0; k < spec.ncalls; k++) {
        struct sql_agg_call *c = &spec.calls[k];
        char b[32];

        if (sql_agg_result_type(c->kind, c->arg > 0 ? &mid.cols[c->arg].type : NULL,
                                &c->result.type) != 0) {
            rc = plan_error(pc, ap.calls[k].node, SPATE_ENOTSUP, "not supported: %s of %s",
                            agg_names[c->kind], sql_type_name(&mid.cols[c->arg].type, b));
            goto out;
        }
        if (c->filter > 0 && mid.cols[c->filter].type.id != SQL_BOOLEAN) {
            rc = plan_error(pc, ap.calls[k].node, SPATE_EINVAL,
                            "FILTER (WHERE ...) needs a BOOLEAN, not %s",
                            sql_type_name(&mid.cols[c->filter].type, b));
            goto out;
        }
        c->result.name = xasprintf("$agg%d", k);
    }
    out_cols = sql_agg_output(&spec, &nout);
    if (nout > TYPES_ROW_MAX_FIELDS) {
        rc = plan_error(pc, select, SPATE_ENOTSUP, "not supported: more than %d columns",
                        TYPES_ROW_MAX_FIELDS);
        for (int k = 0; k < nout; k++)
            free(out_cols[k].name);
        free(out_cols);
        goto out;
    }
    for (int k = 0; k < nout; k++)
        fields[k] = sql_type_spate(out_cols[k].type.id);
    {
        uint8_t *bytes;
        size_t len;

        sql_agg_spec_encode(&spec, &bytes, &len);
        struct spate_stream *keyed = spate_key_by_field(mid.stream, 1);
        enum ship_strategy part;

        node = stream_node_new(pc->env, OP_SQL_AGG, keyed,
                               env_own_type(pc->env, types_new_row(nout, fields)));
        stream_graph_resolve(keyed, &part, &node->key);
        node->opconf.sql.program = bytes;
        node->opconf.sql.program_len = len;
        spate_name(node, ap.windowed ? "WindowAggregate" : "GroupAggregate");
    }
    agg.stream = node;
    agg.format = SQL_FORMAT_ROW;
    agg.cols = out_cols;
    agg.ncols = nout;
    agg.name = in_name;
    in_name = NULL;
    agg.rowtime = -1;
    agg.updating = !ap.windowed;
    if (explain != NULL) {
        FILE *f = open_memstream(&agg_text, &agg_len);

        fprintf(f, "%*s%s(", (pc->depth + 1) * 3, "",
                ap.windowed ? "WindowAggregate" : "GroupAggregate");
        if (win.kind == SQL_WINDOW_TUMBLE)
            fprintf(f, "window=[TUMBLE(size=[%lld ms])], ", (long long)win.size_ms);
        else if (win.kind == SQL_WINDOW_HOP)
            fprintf(f, "window=[HOP(slide=[%lld ms], size=[%lld ms])], ", (long long)win.slide_ms,
                    (long long)win.size_ms);
        else if (win.kind == SQL_WINDOW_SESSION)
            fprintf(f, "window=[SESSION(gap=[%lld ms])], ", (long long)win.gap_ms);
        fprintf(f, "groupBy=[");
        for (int k = 0; k < ap.ngroup; k++)
            fprintf(f, "%s$g%d", k ? ", " : "", k);
        fprintf(f, "], select=[");
        for (int k = 0; k < spec.ncalls; k++)
            fprintf(f, "%s%s%s", k ? ", " : "", agg_names[spec.calls[k].kind],
                    spec.calls[k].filter > 0 ? " FILTER" : "");
        fprintf(f, "])\n%*sExchange(distribution=[hash[$key]])\n%s", (pc->depth + 2) * 3, "",
                pre_text ? pre_text : "");
        fclose(f);
    }
    /* The last Calc: HAVING and the SELECT list, the row kinds through. */
    req = (struct calc_request){ targets, having, output, sink, false, 0, 0, "HAVING" };
    rc = plan_calc(pc, &agg, &req, agg_text, rel);
    agg_text = NULL;
    if (rc == 0)
        rel->updating = !ap.windowed;
out:
    spec.input = NULL; /* mid's */
    spec.ninput = 0;
    for (int k = 0; k < spec.ncalls; k++)
        free(spec.calls[k].result.name);
    free(spec.calls);
    sql_relation_release(&in);
    sql_relation_release(&mid);
    sql_relation_release(&agg);
    agg_plan_release(&ap);
    json_decref(targets);
    json_decref(having);
    json_decref(pre);
    free(from_text);
    free(pre_text);
    free(agg_text);
    free(in_name);
    return rc;
}

/* ---- Top-N and deduplication ---- */

/* The rank function a name calls (ROW_NUMBER, RANK, DENSE_RANK), or -1. */
static int
rank_function_of(const char *name)
{
    static const char *const names[] = { "row_number", "rank", "dense_rank" };

    for (int i = 0; name != NULL && i < 3; i++)
        if (!strcasecmp(name, names[i]))
            return i;
    return -1;
}

/* The ROW_NUMBER() (RANK(), DENSE_RANK()) OVER (...) item of a SELECT
 * list, or NULL. */
static json_t *
row_number_target(json_t *select)
{
    json_t *t;
    size_t i;

    json_array_foreach(json_object_get(select, "targetList"), i, t)
    {
        json_t *fc =
            json_object_get(json_object_get(json_object_get(t, "ResTarget"), "val"), "FuncCall");
        json_t *names = json_object_get(fc, "funcname");
        const char *name = sval_of(json_array_get(names, json_array_size(names) - 1));

        if (fc != NULL && json_object_get(fc, "over") != NULL && rank_function_of(name) >= 0)
            return t;
    }
    return NULL;
}

/* SELECT ... FROM (SELECT ..., ROW_NUMBER() OVER (...) AS rn FROM ...)
 * WHERE rn <= N: the subquery, or NULL. */
static json_t *
rank_subquery(json_t *select)
{
    json_t *from = json_object_get(select, "fromClause");
    json_t *sub = json_object_get(
        json_object_get(json_object_get(json_array_get(from, 0), "RangeSubselect"), "subquery"),
        "SelectStmt");

    return json_array_size(from) == 1 && sub != NULL && row_number_target(sub) ? sub : NULL;
}

/* An integer literal's value. */
static bool
int_const(json_t *node, int64_t *v)
{
    json_t *c = json_object_get(node, "A_Const"), *iv = json_object_get(c, "ival");

    if (iv == NULL)
        return false;
    *v = json_integer_value(json_object_get(iv, "ival")); /* 0 is left out */
    return true;
}

/* Whether conjunct c bounds rn from above (rn <= N, rn < N, rn = 1,
 * N >= rn, N > rn, rn BETWEEN M AND N): the bound in *limit; *keep when c
 * also bounds it from below, a filter above the rank. */
static bool
rank_bound(json_t *c, const char *rn, int64_t *limit, bool *keep)
{
    json_t *e = json_object_get(c, "A_Expr"), *l = json_object_get(e, "lexpr");
    json_t *r = json_object_get(e, "rexpr"), *names = json_object_get(e, "name");
    const char *op = sval_of(json_array_get(names, 0));
    int64_t v;

    *keep = false;
    if (e != NULL && column_name(l) && !strcmp(column_name(l), rn) &&
        !strcmp(json_string_value(json_object_get(e, "kind")) ?: "", "AEXPR_BETWEEN") &&
        int_const(json_array_get(json_object_get(json_object_get(r, "List"), "items"), 1), &v)) {
        *limit = v;
        *keep = true;
        return true;
    }
    if (e == NULL || op == NULL || json_array_size(names) != 1 ||
        strcmp(json_string_value(json_object_get(e, "kind")) ?: "", "AEXPR_OP") != 0)
        return false;
    if (column_name(r) && !strcmp(column_name(r), rn) && int_const(l, &v)) {
        /* N >= rn is rn <= N */
        op = !strcmp(op, ">=") ? "<=" : !strcmp(op, ">") ? "<" : !strcmp(op, "=") ? "=" : "";
    } else if (!(column_name(l) && !strcmp(column_name(l), rn) && int_const(r, &v))) {
        return false;
    }
    if (!strcmp(op, "<="))
        *limit = v;
    else if (!strcmp(op, "<"))
        *limit = v - 1;
    else if (!strcmp(op, "=") && v == 1)
        *limit = 1;
    else
        return false;
    return true;
}

/* Whether node references column name (or is a *). */
static bool
references(json_t *node, const char *name)
{
    const char *key;
    json_t *v;
    size_t i;

    if (json_is_array(node)) {
        json_array_foreach(node, i, v) if (references(v, name)) return true;
        return false;
    }
    if (!json_is_object(node))
        return false;
    if (json_object_get(node, "ColumnRef") != NULL) {
        json_t *f = json_object_get(json_object_get(node, "ColumnRef"), "fields");

        return json_object_get(json_array_get(f, json_array_size(f) - 1), "A_Star") ||
               (column_name(node) && !strcmp(column_name(node), name));
    }
    json_object_foreach(node, key, v) if (references(v, name)) return true;
    return false;
}

/* SELECT ... FROM (SELECT ..., ROW_NUMBER() OVER (PARTITION BY p ORDER BY
 * o) AS rn FROM x WHERE w) WHERE rn <= N AND rest (Flink's Top-N; N = 1 is
 * deduplication): a Calc of the partition columns, the subquery's columns
 * and the ORDER BY's, keyed by the partition; the exchange by that key;
 * the rank (OP_SQL_RANK); and a Calc of rest and the SELECT list over its
 * output. Windowed (the partition holds window_end), the result is final
 * rows; else a changelog. */
static int
plan_rank(struct sql_plan_context *pc, json_t *select, enum sql_format output,
          const struct sql_table *sink, struct sql_relation *rel)
{
    json_t *from = json_array_get(json_object_get(select, "fromClause"), 0);
    json_t *sub = rank_subquery(select), *rn_target = row_number_target(sub);
    json_t *rt = json_object_get(rn_target, "ResTarget"), *fc;
    json_t *over, *parts, *orders, *where = json_object_get(select, "whereClause");
    json_t *conj, *rest = json_array(), *pre = json_array(), *g, *outer_where = NULL;
    const char *rn = json_string_value(json_object_get(rt, "name"));
    const char *alias = json_string_value(json_object_get(
        json_object_get(json_object_get(from, "RangeSubselect"), "alias"), "aliasname"));
    struct sql_relation in = { 0 }, mid = { 0 }, ranked = { 0 };
    struct sql_rank_spec spec = { 0 };
    struct calc_request req;
    FILE *explain = pc->explain;
    char *from_text = NULL, *pre_text = NULL, *rank_text = NULL;
    size_t rank_len = 0, i;
    const spate_type *fields[TYPES_ROW_MAX_FIELDS];
    struct sql_column *out_cols = NULL;
    struct spate_stream *node;
    int64_t limit = -1;
    bool in_updating = false;
    int rc, nout = 0, nrow;
    char name[32];

    fc = json_object_get(json_object_get(rt, "val"), "FuncCall");
    {
        json_t *names = json_object_get(fc, "funcname");

        spec.function = (enum sql_rank_function)rank_function_of(
            sval_of(json_array_get(names, json_array_size(names) - 1)));
    }
    over = json_object_get(fc, "over");
    parts = json_object_get(over, "partitionClause");
    orders = json_object_get(over, "orderClause");
    if (rn == NULL) {
        rc = plan_error(
            pc, rn_target, SPATE_EINVAL,
            "ROW_NUMBER() needs a name to be bounded by (ROW_NUMBER() OVER (...) AS rn)");
        goto out;
    }
    if (json_array_size(json_object_get(fc, "args")) > 0 || json_object_get(over, "name") ||
        json_object_get(over, "refname")) {
        rc = plan_error(pc, rn_target, SPATE_ENOTSUP,
                        "not supported: this ROW_NUMBER() (it takes no arguments and its own "
                        "OVER (PARTITION BY ... ORDER BY ...))");
        goto out;
    }
    if (json_array_size(orders) == 0) {
        rc = plan_error(pc, rn_target, SPATE_ENOTSUP,
                        "not supported: ROW_NUMBER() without ORDER BY in its OVER");
        goto out;
    }
    if ((rc = unsupported_clauses(pc, sub)) != 0)
        goto out;
    if (json_array_size(json_object_get(sub, "groupClause")) > 0 ||
        json_object_get(sub, "havingClause") != NULL ||
        find_aggregate(json_object_get(sub, "targetList")) != NULL) {
        rc = plan_error(pc, rn_target, SPATE_ENOTSUP,
                        "not supported: ROW_NUMBER() in a SELECT with GROUP BY or aggregates "
                        "(aggregate in a subquery below it)");
        goto out;
    }
    /* rn's bound, out of the outer WHERE's conjuncts. */
    conj = where == NULL ? json_array()
           : json_object_get(where, "BoolExpr") &&
                   !strcmp(json_string_value(
                               json_object_get(json_object_get(where, "BoolExpr"), "boolop"))
                               ?: "",
                           "AND_EXPR")
               ? json_incref(json_object_get(json_object_get(where, "BoolExpr"), "args"))
               : json_pack("[O]", where);
    json_array_foreach(conj, i, g)
    {
        int64_t bound;
        bool keep;

        if (rank_bound(g, rn, &bound, &keep))
            limit = limit < 0 ? bound : MIN(limit, bound);
        else
            keep = true; /* no bound: a filter above the rank */
        if (keep)
            json_array_append(rest, g);
    }
    json_decref(conj);
    if (limit < 0) {
        rc = plan_error(pc, where ? where : rn_target, SPATE_ENOTSUP,
                        "not supported: ROW_NUMBER() without an upper bound on '%s' in the WHERE "
                        "above it (WHERE %s <= N: Top-N; = 1: deduplication)",
                        rn, rn);
        goto out;
    }
    if (limit < 1 || limit > SQL_RANK_LIMIT_MAX) {
        rc = plan_error(pc, where, SPATE_ENOTSUP, "not supported: a Top-N of %lld rows (1 to %d)",
                        (long long)limit, SQL_RANK_LIMIT_MAX);
        goto out;
    }
    if (json_array_size(rest) == 1)
        outer_where = json_incref(json_array_get(rest, 0));
    else if (json_array_size(rest) > 1)
        outer_where = json_pack("{s:{s:s,s:O,s:i}}", "BoolExpr", "boolop", "AND_EXPR", "args", rest,
                                "location", -1);

    rc = plan_from_below(pc, sub, &in, NULL, &from_text);
    if (rc != 0)
        goto out;
    in_updating = in.updating;
    /* The first Calc: partition columns, the subquery's, the order's. */
    json_array_foreach(parts, i, g)
    {
        snprintf(name, sizeof name, "$p%zu", i);
        add_target(pre, name, g);
    }
    json_array_foreach(json_object_get(sub, "targetList"), i, g)
    {
        if (g != rn_target)
            json_array_append(pre, g);
    }
    json_array_foreach(orders, i, g)
    {
        snprintf(name, sizeof name, "$o%zu", i);
        add_target(pre, name, json_object_get(json_object_get(g, "SortBy"), "node"));
    }
    req = (struct calc_request){
        pre,  json_object_get(sub, "whereClause"), SQL_FORMAT_ROW,       NULL,
        true, (int)json_array_size(parts),         sql_kind_column(&in), "WHERE"
    };
    rc = plan_calc_below(pc, &in, &req, from_text, &mid, &pre_text);
    from_text = NULL;
    if (rc != 0)
        goto out;
    spec.npart = (int)json_array_size(parts);
    spec.norder = (int)json_array_size(orders);
    nrow = mid.ncols - 1 - spec.npart - spec.norder - (in_updating ? 1 : 0); /* $kind last */
    spec.input = mid.cols;
    spec.ninput = mid.ncols;
    spec.nrow = nrow;
    spec.limit = limit;
    spec.window_end = -1;
    spec.order = xcalloc((size_t)spec.norder + 1, sizeof *spec.order);
    json_array_foreach(orders, i, g)
    {
        json_t *sb = json_object_get(g, "SortBy");
        const char *dir = json_string_value(json_object_get(sb, "sortby_dir")) ?: "";
        const char *nulls = json_string_value(json_object_get(sb, "sortby_nulls")) ?: "";
        struct sql_rank_order *o = &spec.order[i];

        if (json_object_get(sb, "useOp") != NULL) {
            rc = plan_error(pc, located(sb), SPATE_ENOTSUP, "not supported: ORDER BY ... USING");
            goto out;
        }
        o->col = 1 + spec.npart + nrow + (int)i;
        o->desc = !strcmp(dir, "SORTBY_DESC");
        /* NULL is the smallest value (Flink's and SQLite's order) */
        o->nulls_first = !strcmp(nulls, "SORTBY_NULLS_FIRST")  ? true
                         : !strcmp(nulls, "SORTBY_NULLS_LAST") ? false
                                                               : !o->desc;
    }
    /* Deduplication on time DESC keeps the last row: a later one of the
     * same time replaces it (Flink's). */
    spec.last_wins_ties = limit == 1 && spec.norder == 1 && spec.order[0].desc &&
                          mid.cols[spec.order[0].col].type.id == SQL_TIMESTAMP;
    for (int k = 0; k < spec.npart; k++)
        if (column_name(json_array_get(parts, (size_t)k)) != NULL &&
            !strcmp(column_name(json_array_get(parts, (size_t)k)), "window_end") &&
            mid.cols[1 + k].type.id == SQL_TIMESTAMP)
            spec.window_end = 1 + k;
    spec.emit_rank =
        references(json_object_get(select, "targetList"), rn) || references(outer_where, rn);
    out_cols = sql_rank_output(&spec, rn, &nout);
    for (int k = 0; k < nout; k++)
        fields[k] = sql_type_spate(out_cols[k].type.id);
    {
        uint8_t *bytes;
        size_t len;
        struct spate_stream *keyed = spate_key_by_field(mid.stream, 1);
        enum ship_strategy part;

        sql_rank_spec_encode(&spec, &bytes, &len);
        node = stream_node_new(pc->env, OP_SQL_RANK, keyed,
                               env_own_type(pc->env, types_new_row(nout, fields)));
        stream_graph_resolve(keyed, &part, &node->key);
        node->opconf.sql.program = bytes;
        node->opconf.sql.program_len = len;
        spate_name(node, spec.window_end > 0 ? "WindowRank" : "Rank");
    }
    ranked.stream = node;
    ranked.format = SQL_FORMAT_ROW;
    ranked.cols = out_cols;
    ranked.ncols = nout;
    out_cols = NULL;
    ranked.name = alias ? xstrdup(alias) : NULL;
    ranked.rowtime = -1;
    ranked.updating = spec.window_end < 0;
    if (spec.window_end < 0 && !takes_updates(output, sink)) {
        rc = plan_error(pc, rn_target, SPATE_ENOTSUP,
                        "not supported: table '%s' (connector '%s') takes insertions "
                        "only, and this query updates its rows (Rank: a Top-N without a "
                        "window); an upsert sink takes the updates ('upsert-kafka', or "
                        "'filesystem' with \"sink.changelog-mode\" = 'upsert', each with a "
                        "PRIMARY KEY), so does print, and a Top-N per window (PARTITION "
                        "BY window_start, window_end) makes each row final",
                        sink ? sink->name : "?", sink ? sql_table_option(sink, "connector") : "?");
        goto out;
    }
    if (explain != NULL) {
        FILE *f = open_memstream(&rank_text, &rank_len);

        fprintf(f,
                "%*s%s(rankType=[%s], rankRange=[rankStart=1, rankEnd=%lld], "
                "partitionBy=[",
                (pc->depth + 1) * 3, "", spec.window_end > 0 ? "WindowRank" : "Rank",
                spec.function == SQL_RANK_RANK         ? "RANK"
                : spec.function == SQL_RANK_DENSE_RANK ? "DENSE_RANK"
                                                       : "ROW_NUMBER",
                (long long)limit);
        for (int k = 0; k < spec.npart; k++)
            fprintf(f, "%s$p%d", k ? ", " : "", k);
        fprintf(f, "], orderBy=[");
        for (int k = 0; k < spec.norder; k++)
            fprintf(f, "%s$o%d %s", k ? ", " : "", k, spec.order[k].desc ? "DESC" : "ASC");
        fprintf(f, "], select=[%s])\n%*sExchange(distribution=[hash[$key]])\n%s",
                spec.emit_rank ? rn : "*", (pc->depth + 2) * 3, "", pre_text ? pre_text : "");
        fclose(f);
    }
    /* The last Calc: the rest of WHERE and the SELECT list, the row kinds
     * through. */
    req = (struct calc_request){
        json_object_get(select, "targetList"), outer_where, output, sink, false, 0, 0, "WHERE"
    };
    rc = plan_calc(pc, &ranked, &req, rank_text, rel);
    rank_text = NULL;
    if (rc == 0)
        rel->updating = spec.window_end < 0;
out:
    spec.input = NULL; /* mid's */
    free(spec.order);
    if (out_cols != NULL) {
        for (int k = 0; k < nout; k++)
            free(out_cols[k].name);
        free(out_cols);
    }
    sql_relation_release(&in);
    sql_relation_release(&mid);
    sql_relation_release(&ranked);
    json_decref(rest);
    json_decref(pre);
    json_decref(outer_where);
    free(from_text);
    free(pre_text);
    free(rank_text);
    return rc;
}

/* ---- WITH and UNION ALL ---- */

/* WITH q AS (...), ... SELECT: the SELECT planned with the queries in
 * scope (pc->ctes: the last first, then those of the WITHs around). */
static int
plan_with(struct sql_plan_context *pc, json_t *select, enum sql_format output,
          const struct sql_table *sink, struct sql_relation *rel)
{
    json_t *with = json_object_get(select, "withClause");
    json_t *outer = pc->ctes, *scope, *bare;
    int rc;

    if (json_is_true(json_object_get(with, "recursive")))
        return plan_error(pc, with, SPATE_ENOTSUP, "not supported: WITH RECURSIVE");
    if (!json_is_array(json_object_get(with, "ctes")))
        return plan_error(pc, with, SPATE_EINVAL, "a WITH without queries");
    /* Last first: each query sees those after it. */
    scope = json_array();
    for (size_t i = json_array_size(json_object_get(with, "ctes")); i-- > 0;)
        json_array_append(scope, json_object_get(json_array_get(json_object_get(with, "ctes"), i),
                                                 "CommonTableExpr"));
    if (outer != NULL)
        json_array_extend(scope, outer);
    bare = json_copy(select);
    json_object_del(bare, "withClause");
    pc->ctes = scope;
    rc = sql_plan_select(pc, bare, output, sink, rel);
    pc->ctes = outer;
    json_decref(bare);
    json_decref(scope);
    return rc;
}

/* The SELECT * over rel that writes output (Flink's final projection). */
static json_t *
star_targets(void)
{
    return json_pack("[{s:{s:{s:{s:[{s:{}}]}}}}]", "ResTarget", "val", "ColumnRef", "fields",
                     "A_Star");
}

/* One side of a UNION ALL, its plan explained into *text. */
static int
plan_union_side(struct sql_plan_context *pc, json_t *side, struct sql_relation *rel, char **text)
{
    FILE *explain = pc->explain, *below = NULL;
    size_t len = 0;
    int rc;

    if (explain != NULL) {
        below = open_memstream(text, &len);
        pc->explain = below;
        pc->depth += 2;
    }
    rc = sql_plan_select(pc, side, SQL_FORMAT_ROW, NULL, rel);
    if (explain != NULL) {
        fclose(below);
        pc->explain = explain;
        pc->depth -= 2;
    }
    if (rc == 0 && rel->updating)
        rc = plan_error(pc, located(side), SPATE_ENOTSUP,
                        "not supported: UNION ALL of an updating query (GROUP BY without a "
                        "window, a Top-N)");
    return rc;
}

/* a UNION ALL b: both planned as rows of the same columns and types, one
 * stream of the two (Flink's Union), and a Calc that writes output. */
static int
plan_union(struct sql_plan_context *pc, json_t *select, enum sql_format output,
           const struct sql_table *sink, struct sql_relation *rel)
{
    static const char *const refused[] = { "sortClause", "limitCount", "limitOffset" };
    struct sql_relation l = { 0 }, r = { 0 }, u = { 0 };
    char *ltext = NULL, *rtext = NULL, *text = NULL;
    struct calc_request req;
    json_t *targets = NULL;
    int rc;

    if (!json_is_true(json_object_get(select, "all")))
        return plan_error(pc, located(json_object_get(select, "rarg")), SPATE_ENOTSUP,
                          "not supported: UNION without ALL (UNION ALL keeps every row)");
    for (size_t i = 0; i < ARRAY_SIZE(refused); i++)
        if (json_object_get(select, refused[i]) != NULL)
            return plan_error(pc, located(json_object_get(select, refused[i])), SPATE_ENOTSUP,
                              "not supported: %s on a stream",
                              i == 0   ? "ORDER BY"
                              : i == 1 ? "LIMIT"
                                       : "OFFSET");
    if ((rc = plan_union_side(pc, json_object_get(select, "larg"), &l, &ltext)) != 0 ||
        (rc = plan_union_side(pc, json_object_get(select, "rarg"), &r, &rtext)) != 0)
        goto out;
    if (l.ncols != r.ncols) {
        rc = plan_error(pc, located(json_object_get(select, "rarg")), SPATE_EINVAL,
                        "UNION ALL of %d columns and %d columns", l.ncols, r.ncols);
        goto out;
    }
    for (int i = 0; i < l.ncols; i++) {
        char b1[32], b2[32];

        if (l.cols[i].type.id != r.cols[i].type.id ||
            (l.cols[i].type.id == SQL_DECIMAL && l.cols[i].type.scale != r.cols[i].type.scale)) {
            rc = plan_error(pc, located(json_object_get(select, "rarg")), SPATE_EINVAL,
                            "type mismatch: UNION ALL's column %d ('%s') is %s on the left, %s "
                            "on the right (CAST one of them)",
                            i + 1, l.cols[i].name, sql_type_name(&l.cols[i].type, b1),
                            sql_type_name(&r.cols[i].type, b2));
            goto out;
        }
    }
    u.stream = spate_name(spate_union(l.stream, r.stream), "Union");
    u.format = SQL_FORMAT_ROW;
    u.cols = l.cols;
    u.ncols = l.ncols;
    l.cols = NULL;
    l.ncols = 0;
    u.rowtime = -1;
    if (pc->explain != NULL) {
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);

        fprintf(f, "%*sUnion(all=[true])\n%s%s", (pc->depth + 1) * 3, "", ltext ? ltext : "",
                rtext ? rtext : "");
        fclose(f);
    }
    targets = star_targets();
    req = (struct calc_request){ targets, NULL, output, sink, false, 0, -1, "WHERE" };
    rc = plan_calc(pc, &u, &req, text, rel);
    text = NULL;
out:
    sql_relation_release(&l);
    sql_relation_release(&r);
    sql_relation_release(&u);
    json_decref(targets);
    free(ltext);
    free(rtext);
    free(text);
    return rc;
}

/* ---- OVER aggregates ---- */

static bool
is_window_call(json_t *node)
{
    return json_object_get(json_object_get(node, "FuncCall"), "over") != NULL;
}

static bool
is_over_aggregate(json_t *node)
{
    return is_aggregate(node) && is_window_call(node);
}

/* The first aggregate call with an OVER in node, or NULL. */
static json_t *
find_over(json_t *node)
{
    return find_first(node, is_over_aggregate);
}

/* A SELECT without OVER aggregates: ROW_NUMBER() only as a Top-N's (the
 * planner found none), no other window function. */
static int
window_functions_placed(struct sql_plan_context *pc, json_t *select)
{
    json_t *w = find_first(json_object_get(select, "targetList"), is_window_call), *names;
    const char *name;

    if (w == NULL)
        w = find_first(json_object_get(select, "whereClause"), is_window_call);
    if (w == NULL)
        return 0;
    names = json_object_get(json_object_get(w, "FuncCall"), "funcname");
    name = sval_of(json_array_get(names, json_array_size(names) - 1));
    if (rank_function_of(name) == 0)
        return plan_error(
            pc, w, SPATE_ENOTSUP,
            "not supported: ROW_NUMBER() outside a subquery bounded in the "
            "WHERE above it (SELECT ... FROM (SELECT ..., ROW_NUMBER() OVER (...) AS rn "
            "FROM t) q WHERE rn <= N)");
    if (rank_function_of(name) > 0)
        return plan_error(pc, w, SPATE_ENOTSUP,
                          "not supported: %s() outside a subquery bounded in the WHERE above it "
                          "(as ROW_NUMBER()'s Top-N)",
                          name);
    return plan_error(pc, w, SPATE_ENOTSUP,
                      "not supported: window function %s() (ROW_NUMBER(), RANK() and "
                      "DENSE_RANK() for a Top-N; COUNT, SUM, AVG, MIN, MAX OVER)",
                      name ? name : "?");
}

/* An OVER being planned: its window (the first call's) and its calls. */
struct over_plan {
    json_t *over; /* referenced: the first call's */
    struct agg_call_plan *calls;
    int ncalls;
};

/* Rewrites the SELECT list's OVER calls into columns $overN of the OVER's
 * output, each call's window the first's. */
static int
rewrite_over(struct sql_plan_context *pc, struct over_plan *op, json_t *node)
{
    enum sql_agg_kind kind;
    const char *key;
    json_t *v;
    size_t i;
    char name[32];
    int rc;

    if (json_is_array(node)) {
        json_array_foreach(node, i, v) if ((rc = rewrite_over(pc, op, v)) != 0) return rc;
        return 0;
    }
    if (!json_is_object(node))
        return 0;
    if ((kind = aggregate_of(node)) != SQL_AGG_KIND_COUNT) {
        json_t *fc = json_object_get(node, "FuncCall"), *args = json_object_get(fc, "args");
        json_t *over = json_object_get(fc, "over");
        struct agg_call_plan *c;

        if (over == NULL)
            return plan_error(pc, node, SPATE_ENOTSUP,
                              "not supported: an aggregate without OVER beside OVER "
                              "aggregates");
        if (json_object_get(over, "refname") || json_object_get(over, "name"))
            return plan_error(pc, node, SPATE_ENOTSUP,
                              "not supported: a named WINDOW (write OVER (...) in place)");
        if (op->over == NULL)
            op->over = json_incref(over);
        else if (!same_expr(op->over, over))
            return plan_error(pc, node, SPATE_ENOTSUP,
                              "not supported: OVER windows that differ in one SELECT (as in "
                              "Flink, every OVER of a SELECT is the same)");
        if (json_object_get(fc, "agg_filter") || json_is_true(json_object_get(fc, "agg_distinct")))
            return plan_error(pc, node, SPATE_ENOTSUP,
                              "not supported: DISTINCT or FILTER in an OVER aggregate");
        if (kind != SQL_AGG_COUNT_STAR && json_array_size(args) != 1)
            return plan_error(pc, node, SPATE_EINVAL, "an aggregate function takes one argument");
        if (find_aggregate(args) != NULL)
            return plan_error(pc, find_aggregate(args), SPATE_EINVAL,
                              "aggregate function calls cannot be nested");
        op->calls = xrealloc(op->calls, (size_t)(op->ncalls + 1) * sizeof *op->calls);
        c = &op->calls[op->ncalls];
        c->kind = kind;
        c->arg = json_incref(json_array_get(args, 0));
        c->filter = NULL;
        c->node = json_deep_copy(node);
        snprintf(name, sizeof name, "$over%d", op->ncalls++);
        become_column(node, name);
        return 0;
    }
    json_object_foreach(node, key, v) if ((rc = rewrite_over(pc, op, v)) != 0) return rc;
    return 0;
}

/* PostgreSQL's frame options (nodes/parsenodes.h FRAMEOPTION_*). */
enum {
    FRAME_NONDEFAULT = 0x1,
    FRAME_RANGE = 0x2,
    FRAME_ROWS = 0x4,
    FRAME_START_UNBOUNDED_PRECEDING = 0x20,
    FRAME_END_CURRENT_ROW = 0x400,
    FRAME_START_OFFSET_PRECEDING = 0x800,
};

/* The OVER's frame: ROWS or RANGE, and how far back (-1: unbounded). */
static int
over_frame(struct sql_plan_context *pc, json_t *over, json_t *at, struct sql_over_spec *spec)
{
    int64_t opts = json_integer_value(json_object_get(over, "frameOptions"));
    int64_t known = FRAME_NONDEFAULT | FRAME_RANGE | FRAME_ROWS | 0x10 /* BETWEEN */ |
                    FRAME_START_UNBOUNDED_PRECEDING | FRAME_END_CURRENT_ROW |
                    FRAME_START_OFFSET_PRECEDING;
    json_t *start = json_object_get(over, "startOffset");

    spec->frame = opts & FRAME_ROWS ? SQL_OVER_ROWS : SQL_OVER_RANGE;
    spec->preceding = -1;
    if (!(opts & FRAME_NONDEFAULT)) /* RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW */
        return 0;
    if ((opts & ~known) != 0 || !(opts & FRAME_END_CURRENT_ROW) ||
        !(opts & (FRAME_RANGE | FRAME_ROWS)))
        return plan_error(pc, at, SPATE_ENOTSUP,
                          "not supported: this OVER frame (ROWS BETWEEN n PRECEDING AND CURRENT "
                          "ROW, RANGE BETWEEN INTERVAL ... PRECEDING AND CURRENT ROW, or "
                          "UNBOUNDED PRECEDING are)");
    if (opts & FRAME_START_UNBOUNDED_PRECEDING)
        return 0;
    if (spec->frame == SQL_OVER_RANGE)
        return constant_interval(pc, start, "OVER range", &spec->preceding);
    if (!int_const(start, &spec->preceding) || spec->preceding < 0)
        return plan_error(pc, located(start ? start : at), SPATE_EINVAL,
                          "ROWS BETWEEN n PRECEDING needs a constant n of 0 or more");
    return 0;
}

/* SELECT ..., agg(x) OVER (PARTITION BY p ORDER BY ts frame), ... FROM t
 * WHERE w (Flink's OverAggregate on event time): a Calc of the partition
 * columns, t's columns, the time and the calls' arguments, keyed by the
 * partition; the exchange by that key; the OVER (OP_SQL_OVER); and a Calc
 * of the SELECT list over t's columns and the calls' results. */
static int
plan_over(struct sql_plan_context *pc, json_t *select, enum sql_format output,
          const struct sql_table *sink, struct sql_relation *rel)
{
    json_t *targets = json_deep_copy(json_object_get(select, "targetList"));
    json_t *pre = json_array(), *parts, *orders, *order, *g, *star = star_targets();
    struct sql_relation in = { 0 }, mid = { 0 }, over_rel = { 0 };
    struct over_plan op = { 0 };
    struct sql_over_spec spec = { 0 };
    struct calc_request req;
    const spate_type *fields[TYPES_ROW_MAX_FIELDS];
    struct sql_column *out_cols = NULL;
    struct spate_stream *node;
    json_t *at = find_over(targets);
    const char *time_col;
    char name[32], *in_name = NULL, *from_text = NULL, *pre_text = NULL, *over_text = NULL;
    FILE *explain = pc->explain;
    size_t text_len = 0;
    int rc, nout = 0;
    size_t i;

    if (json_array_size(json_object_get(select, "groupClause")) > 0 ||
        json_object_get(select, "havingClause") != NULL) {
        rc = plan_error(pc, at, SPATE_ENOTSUP,
                        "not supported: OVER aggregates beside GROUP BY (aggregate in a "
                        "subquery below them)");
        goto out;
    }
    if ((rc = rewrite_over(pc, &op, targets)) != 0)
        goto out;
    parts = json_object_get(op.over, "partitionClause");
    orders = json_object_get(op.over, "orderClause");
    order = json_object_get(json_array_get(orders, 0), "SortBy");
    time_col = column_name(json_object_get(order, "node"));
    if (json_array_size(orders) != 1 || time_col == NULL ||
        !strcmp(json_string_value(json_object_get(order, "sortby_dir")) ?: "", "SORTBY_DESC")) {
        rc = plan_error(pc, at, SPATE_ENOTSUP,
                        "not supported: an OVER not ordered by the event time alone, ascending "
                        "(ORDER BY ts, the table's WATERMARK column)");
        goto out;
    }
    if ((rc = over_frame(pc, op.over, at, &spec)) != 0)
        goto out;
    rc = plan_from_below(pc, select, &in, NULL, &from_text);
    if (rc != 0)
        goto out;
    if (in.format == SQL_FORMAT_ROW || in.rowtime < 0 ||
        strcmp(in.cols[in.rowtime].name, time_col) != 0) {
        rc = plan_error(pc, json_object_get(order, "node"), SPATE_ENOTSUP,
                        "not supported: an OVER ordered by '%s', which is not the event time of "
                        "the table it reads (a table with a WATERMARK, in FROM)",
                        time_col);
        goto out;
    }
    /* The first Calc: partition columns, the table's, the time, the
     * arguments. */
    json_array_foreach(parts, i, g)
    {
        snprintf(name, sizeof name, "$p%zu", i);
        add_target(pre, name, g);
    }
    json_array_append(pre, json_array_get(star, 0));
    add_target(pre, "$time", json_object_get(order, "node"));
    for (int k = 0; k < op.ncalls; k++)
        if (op.calls[k].arg != NULL) {
            snprintf(name, sizeof name, "$a%d", k);
            add_target(pre, name, op.calls[k].arg);
        }
    req = (struct calc_request){ pre,
                                 json_object_get(select, "whereClause"),
                                 SQL_FORMAT_ROW,
                                 NULL,
                                 true,
                                 (int)json_array_size(parts),
                                 -1,
                                 "WHERE" };
    spec.nrow = in.ncols; /* in goes into the Calc */
    in_name = in.name ? xstrdup(in.name) : NULL;
    rc = plan_calc_below(pc, &in, &req, from_text, &mid, &pre_text);
    from_text = NULL;
    if (rc != 0)
        goto out;
    spec.input = mid.cols;
    spec.ninput = mid.ncols;
    spec.npart = (int)json_array_size(parts);
    spec.time = 1 + spec.npart + spec.nrow;
    spec.calls = xcalloc((size_t)op.ncalls + 1, sizeof *spec.calls);
    spec.ncalls = op.ncalls;
    for (int k = 0, arg = spec.time + 1; k < op.ncalls; k++) {
        struct sql_agg_call *c = &spec.calls[k];
        char b[32];

        c->kind = op.calls[k].kind;
        c->arg = op.calls[k].arg != NULL ? arg++ : -1;
        c->filter = -1;
        if (sql_agg_result_type(c->kind, c->arg > 0 ? &mid.cols[c->arg].type : NULL,
                                &c->result.type) != 0) {
            rc = plan_error(pc, op.calls[k].node, SPATE_ENOTSUP, "not supported: %s of %s",
                            agg_names[c->kind], sql_type_name(&mid.cols[c->arg].type, b));
            goto out;
        }
        c->result.name = xasprintf("$over%d", k);
    }
    out_cols = sql_over_output(&spec, &nout);
    if (nout > TYPES_ROW_MAX_FIELDS || mid.ncols > TYPES_ROW_MAX_FIELDS) {
        rc = plan_error(pc, at, SPATE_ENOTSUP, "not supported: more than %d columns",
                        TYPES_ROW_MAX_FIELDS);
        goto out;
    }
    for (int k = 0; k < nout; k++)
        fields[k] = sql_type_spate(out_cols[k].type.id);
    {
        uint8_t *bytes;
        size_t len;
        struct spate_stream *keyed = spate_key_by_field(mid.stream, 1);
        enum ship_strategy part;

        sql_over_spec_encode(&spec, &bytes, &len);
        node = stream_node_new(pc->env, OP_SQL_OVER, keyed,
                               env_own_type(pc->env, types_new_row(nout, fields)));
        stream_graph_resolve(keyed, &part, &node->key);
        node->opconf.sql.program = bytes;
        node->opconf.sql.program_len = len;
        spate_name(node, "OverAggregate");
    }
    over_rel.stream = node;
    over_rel.format = SQL_FORMAT_ROW;
    over_rel.cols = out_cols;
    over_rel.ncols = nout;
    out_cols = NULL;
    over_rel.name = in_name;
    in_name = NULL;
    over_rel.rowtime = -1;
    if (explain != NULL) {
        FILE *f = open_memstream(&over_text, &text_len);

        fprintf(f, "%*sOverAggregate(partitionBy=[", (pc->depth + 1) * 3, "");
        for (int k = 0; k < spec.npart; k++)
            fprintf(f, "%s$p%d", k ? ", " : "", k);
        fprintf(f, "], orderBy=[%s ASC], %s, preceding=[%lld], select=[", time_col,
                spec.frame == SQL_OVER_ROWS ? "ROWS" : "RANGE", (long long)spec.preceding);
        for (int k = 0; k < spec.ncalls; k++)
            fprintf(f, "%s%s", k ? ", " : "", agg_names[spec.calls[k].kind]);
        fprintf(f, "])\n%*sExchange(distribution=[hash[$key]])\n%s", (pc->depth + 2) * 3, "",
                pre_text ? pre_text : "");
        fclose(f);
    }
    req = (struct calc_request){ targets, NULL, output, sink, false, 0, -1, "WHERE" };
    rc = plan_calc(pc, &over_rel, &req, over_text, rel);
    over_text = NULL;
out:
    spec.input = NULL; /* mid's */
    for (int k = 0; k < spec.ncalls; k++)
        free(spec.calls[k].result.name);
    free(spec.calls);
    if (out_cols != NULL) {
        for (int k = 0; k < nout; k++)
            free(out_cols[k].name);
        free(out_cols);
    }
    for (int k = 0; k < op.ncalls; k++) {
        json_decref(op.calls[k].arg);
        json_decref(op.calls[k].node);
    }
    free(op.calls);
    json_decref(op.over);
    free(in_name);
    free(from_text);
    free(pre_text);
    free(over_text);
    sql_relation_release(&in);
    sql_relation_release(&mid);
    sql_relation_release(&over_rel);
    json_decref(targets);
    json_decref(pre);
    json_decref(star);
    return rc;
}

int
sql_plan_select(struct sql_plan_context *pc, json_t *select, enum sql_format output,
                const struct sql_table *sink, struct sql_relation *rel)
{
    json_t *from = json_object_get(select, "fromClause"), *moved;
    struct sql_relation in = { 0 };
    struct calc_request req;
    FILE *explain = pc->explain, *below = NULL;
    char *below_text = NULL;
    size_t below_len = 0;
    bool updating;
    int rc;

    if (select == NULL)
        return spate_error_set(pc->err, SPATE_ENOTSUP, "not supported: a query that is no SELECT");
    if (json_object_get(select, "withClause") != NULL)
        return plan_with(pc, select, output, sink, rel);
    if (!strcmp(json_string_value(json_object_get(select, "op")) ?: "", "SETOP_UNION"))
        return plan_union(pc, select, output, sink, rel);
    if ((rc = unsupported_clauses(pc, select)) != 0)
        return rc;
    if ((moved = sql_subqueries_into_joins(pc, select, &rc)) != NULL || rc != 0) {
        if (rc == 0)
            rc = sql_plan_select(pc, moved, output, sink, rel);
        json_decref(moved);
        return rc;
    }
    if ((moved = sql_join_where_into_on(select)) != NULL) {
        rc = sql_plan_select(pc, moved, output, sink, rel);
        json_decref(moved);
        return rc;
    }
    if (find_over(json_object_get(select, "targetList")) != NULL)
        return plan_over(pc, select, output, sink, rel);
    if ((rc = window_functions_placed(pc, select)) != 0)
        return rc;
    if (json_array_size(json_object_get(select, "groupClause")) > 0 ||
        json_object_get(select, "havingClause") != NULL ||
        find_aggregate(json_object_get(select, "targetList")) != NULL ||
        (json_array_size(from) == 1 && json_object_get(json_array_get(from, 0), "RangeFunction")))
        return plan_aggregate(pc, select, output, sink, rel);
    if (rank_subquery(select) != NULL)
        return plan_rank(pc, select, output, sink, rel);
    if (find_aggregate(json_object_get(select, "whereClause")) != NULL)
        return plan_error(pc, find_aggregate(json_object_get(select, "whereClause")), SPATE_EINVAL,
                          "aggregate functions are not allowed in WHERE (HAVING filters groups)");
    /* What is below this Calc is explained below it: kept until the Calc
     * line is out. */
    if (explain != NULL) {
        below = open_memstream(&below_text, &below_len);
        pc->explain = below;
        pc->depth++;
    }
    rc = plan_from(pc, select, &in, NULL);
    if (explain != NULL) {
        fclose(below);
        pc->explain = explain;
        pc->depth--;
    }
    if (rc != 0) {
        free(below_text);
        sql_relation_release(&in);
        return rc;
    }
    if (in.updating && !takes_updates(output, sink)) {
        free(below_text);
        sql_relation_release(&in);
        return refuse_updating(pc, select, output, sink,
                               "Join: an outer join, or GroupAggregate or Rank without a window, "
                               "below it",
                               "an interval or window join, or a window");
    }
    updating = in.updating;
    req = (struct calc_request){ json_object_get(select, "targetList"),
                                 json_object_get(select, "whereClause"),
                                 output,
                                 sink,
                                 false,
                                 0,
                                 sql_kind_column(&in),
                                 "WHERE" };
    rc = plan_calc(pc, &in, &req, below_text, rel);
    if (rc == 0)
        rel->updating = updating;
    return rc;
}

int
sql_plan_insert(struct sql_plan_context *pc, json_t *insert, char **job_name)
{
    json_t *rv = json_object_get(insert, "relation");
    json_t *sel = json_object_get(json_object_get(insert, "selectStmt"), "SelectStmt");
    const char *name = json_string_value(json_object_get(rv, "relname"));
    struct sql_relation rel = { 0 };
    enum sql_format format;
    struct sql_table *t;
    int rc;

    if (json_array_size(json_object_get(insert, "cols")) > 0)
        return plan_error(pc, json_array_get(json_object_get(insert, "cols"), 0), SPATE_ENOTSUP,
                          "not supported: INSERT with a column list");
    if (json_object_get(insert, "onConflictClause") || json_object_get(insert, "returningList"))
        return plan_error(pc, rv, SPATE_ENOTSUP, "not supported: ON CONFLICT and RETURNING");
    if (name == NULL || (t = sql_catalog_find(pc->catalog, name)) == NULL) {
        const char *near = name ? sql_catalog_nearest(pc->catalog, name) : NULL;

        if (near != NULL)
            return plan_error(pc, rv, SPATE_EINVAL, "table '%s' does not exist; did you mean '%s'?",
                              name, near);
        return plan_error(pc, rv, SPATE_EINVAL, "table '%s' does not exist", name ? name : "");
    }
    if (t->view)
        return plan_error(pc, rv, SPATE_EINVAL, "'%s' is a view: INSERT writes tables", name);
    if (sel == NULL)
        return plan_error(pc, rv, SPATE_ENOTSUP, "not supported: INSERT without a SELECT");
    if ((rc = sql_connector_sink_format(t, &format, pc->err)) != 0)
        return rc;
    if (pc->explain)
        fprintf(pc->explain, "Sink(table=[%s], connector=[%s])\n", t->name,
                sql_table_option(t, "connector"));
    pc->depth++;
    rc = sql_plan_select(pc, sel, format, t, &rel);
    pc->depth--;
    if (rc == 0)
        rc = sql_connector_sink(pc->env, t, rel.stream, pc->err);
    sql_relation_release(&rel);
    if (rc == 0)
        *job_name = xasprintf("insert-into_%s", t->name);
    return rc;
}

int
sql_plan_collect(struct sql_plan_context *pc, json_t *select)
{
    struct sql_relation rel = { 0 };
    int rc;

    if (pc->explain)
        fprintf(pc->explain, "Sink(table=[*collect*], connector=[print])\n");
    pc->depth++;
    rc = sql_plan_select(pc, select, SQL_FORMAT_PRINT, NULL, &rel);
    pc->depth--;
    if (rc == 0)
        spate_name(spate_sink_print(rel.stream), "collect");
    sql_relation_release(&rel);
    return rc;
}
