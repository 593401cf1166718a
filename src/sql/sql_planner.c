/* The planner (sql_planner.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/util.h"
#include "sql/sql_connectors.h"
#include "sql/sql_expr.h"
#include "sql/sql_parser.h"
#include "sql/sql_planner.h"
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

static int
plan_from(struct sql_plan_context *pc, json_t *select, struct sql_relation *rel)
{
    json_t *from = json_object_get(select, "fromClause"), *item, *rv;
    const char *name, *alias;
    struct sql_table *t;
    int rc;

    if (json_array_size(from) == 0)
        return plan_error(pc, select, SPATE_ENOTSUP,
                          "not supported: SELECT without FROM (a query reads a table)");
    item = json_array_get(from, 0);
    if (json_array_size(from) > 1 || json_object_get(item, "JoinExpr"))
        return plan_error(pc, json_array_get(from, json_array_size(from) > 1 ? 1 : 0),
                          SPATE_ENOTSUP, "not supported: joins (more than one table in FROM)");
    if (json_object_get(item, "RangeFunction"))
        return plan_error(pc, item, SPATE_ENOTSUP,
                          "not supported: table functions in FROM (TUMBLE, HOP, SESSION come "
                          "with windows)");
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
    if (name == NULL)
        return plan_error(pc, item, SPATE_EINVAL, "a table without a name");
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
        { "groupClause", "GROUP BY (aggregates come with windows)" },
        { "havingClause", "HAVING" },
        { "sortClause", "ORDER BY on a stream" },
        { "limitCount", "LIMIT" },
        { "limitOffset", "OFFSET" },
        { "distinctClause", "SELECT DISTINCT" },
        { "windowClause", "WINDOW" },
        { "withClause", "WITH (common table expressions)" },
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

int
sql_plan_select(struct sql_plan_context *pc, json_t *select, enum sql_format output,
                const struct sql_table *sink, struct sql_relation *rel)
{
    const struct sql_column *sink_cols = sink ? sink->cols : NULL;
    const char *sink_name = sink ? sink->name : NULL;
    int nsink_cols = sink ? sink->ncols : 0;
    struct sql_relation in = { 0 };
    struct sql_program *p = xcalloc(1, sizeof *p);
    struct sql_compiler c;
    struct sql_scope scope;
    json_t *targets = json_object_get(select, "targetList"), *where;
    const spate_type *out_type;
    struct spate_stream *node;
    uint8_t *bytes = NULL;
    size_t len = 0;
    struct sql_column *out_cols = NULL;
    int rc, n = 0;

    if (select == NULL)
        return spate_error_set(pc->err, SPATE_ENOTSUP, "not supported: a query that is no SELECT");
    FILE *explain = pc->explain, *below = NULL;
    char *below_text = NULL;
    size_t below_len = 0;

    if ((rc = unsupported_clauses(pc, select)) != 0) {
        free(p);
        return rc;
    }
    /* What is below this Calc is explained below it: kept until the Calc
     * line is out. */
    if (explain != NULL) {
        below = open_memstream(&below_text, &below_len);
        pc->explain = below;
        pc->depth++;
    }
    rc = plan_from(pc, select, &in);
    if (explain != NULL) {
        fclose(below);
        pc->explain = explain;
        pc->depth--;
    }
    if (rc != 0) {
        free(below_text);
        sql_relation_release(&in);
        free(p);
        return rc;
    }
    scope = (struct sql_scope){ in.name, in.cols, in.ncols };
    sql_compiler_init(&c, p, &scope, pc->script, pc->offset, pc->err);
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
    if ((where = json_object_get(select, "whereClause")) != NULL) {
        struct sql_operand w;
        char b1[32];

        if ((rc = sql_compile(&c, where, &w)) != 0)
            goto fail;
        if (w.type.id != SQL_BOOLEAN) {
            rc = plan_error(pc, where, SPATE_EINVAL, "WHERE needs a BOOLEAN, not %s",
                            sql_type_name(&w.type, b1));
            goto fail;
        }
        p->filter = w.reg;
    }
    for (size_t i = 0; i < json_array_size(targets); i++) {
        json_t *rt = json_object_get(json_array_get(targets, i), "ResTarget");
        json_t *val = json_object_get(rt, "val");
        json_t *ref = json_object_get(val, "ColumnRef");
        json_t *f = json_object_get(ref, "fields");

        if (ref != NULL && json_object_get(json_array_get(f, json_array_size(f) - 1), "A_Star")) {
            for (int k = 0; k < in.ncols; k++)
                add_output(p, k, in.cols[k].name, &in.cols[k].type);
            n += in.ncols;
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
        rc = plan_error(pc, select, SPATE_EINVAL, "a SELECT without columns");
        goto fail;
    }
    if (p->noutput > TYPES_ROW_MAX_FIELDS) {
        rc = plan_error(pc, select, SPATE_ENOTSUP, "not supported: more than %d columns",
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
        spate_watermark_strategy wm = spate_watermarks_bounded(NULL, in.watermark_bound_ms);

        node = spate_name(spate_assign_timestamps_and_watermarks(node, &wm), "WatermarkAssigner");
    }
    if (pc->explain) {
        char *code = sql_program_describe(p);

        if (p->rowtime >= 0)
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
