/* The planning of a JoinExpr in FROM (sql_planner.h's sql_plan_join): each
 * side planned as any FROM item; ON cut into its conjuncts — equalities of
 * an expression of one side with one of the other are the join's keys, a
 * conjunct of one side only that the join type lets go first is that
 * side's Calc's filter, window_start = window_start and window_end =
 * window_end make a window join, bounds on the difference of the two
 * sides' event times an interval join, and the rest is the join's
 * condition, checked per pair of rows; each side a Calc of [$key, keys,
 * its columns], an exchange by $key, and the join (sql_join.h) over both.
 * Client thread. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/config.h"
#include "core/util.h"
#include "sql/sql_expr.h"
#include "sql/sql_join.h"
#include "sql/sql_lookup.h"
#include "sql/sql_planner.h"
#include "streaming/stream_graph.h"
#include "streaming/types.h"

#define plan_error(pc, node, code, ...) \
    sql_error_in((pc)->err, (pc)->script, (pc)->offset, node, code, __VA_ARGS__)

static const char *const join_names[] = {
    [SQL_JOIN_INNER] = "InnerJoin",      [SQL_JOIN_LEFT] = "LeftOuterJoin",
    [SQL_JOIN_RIGHT] = "RightOuterJoin", [SQL_JOIN_FULL] = "FullOuterJoin",
    [SQL_JOIN_SEMI] = "LeftSemiJoin",    [SQL_JOIN_ANTI] = "LeftAntiJoin",
};

/* One side of the join as it is planned. */
struct side_plan {
    struct sql_relation rel; /* the FROM item */
    struct sql_window win;
    /* The columns ON and the rest of the query see: the item's own (its
     * $ columns aside), then window_start, window_end and window_time of a
     * window table function; each with its table. */
    struct sql_column *cols;
    char **quals;
    int ncols;
    int nown;       /* of them the item's own */
    int *own_index; /* of each own column in rel */
    json_t *keys;   /* the key expressions, in order */
    json_t *filters;
    struct sql_relation mid; /* after its Calc */
    char *text;              /* its explanation */
};

static void
side_release(struct side_plan *sp)
{
    for (int i = 0; i < sp->ncols; i++) {
        free(sp->cols[i].name);
        free(sp->quals[i]);
    }
    free(sp->cols);
    free(sp->quals);
    free(sp->own_index);
    json_decref(sp->keys);
    json_decref(sp->filters);
    sql_relation_release(&sp->rel);
    sql_relation_release(&sp->mid);
    free(sp->text);
}

static const char *
sval(json_t *node)
{
    return json_string_value(json_object_get(json_object_get(node, "String"), "sval"));
}

/* The columns of sp's FROM item as the join sees them. */
static void
side_columns(struct side_plan *sp)
{
    static const char *const win_cols[] = { "window_start", "window_end", "window_time" };
    const struct sql_relation *r = &sp->rel;
    int n = 0;

    sp->cols = xcalloc((size_t)r->ncols + 4, sizeof *sp->cols);
    sp->quals = xcalloc((size_t)r->ncols + 4, sizeof *sp->quals);
    sp->own_index = xcalloc((size_t)r->ncols + 1, sizeof *sp->own_index);
    for (int i = 0; i < r->ncols; i++) {
        const char *q = r->qualifiers ? r->qualifiers[i] : r->name;

        if (r->cols[i].name[0] == '$')
            continue;
        sp->own_index[n] = i;
        sp->cols[n].name = xstrdup(r->cols[i].name);
        sp->cols[n].type = r->cols[i].type;
        sp->quals[n++] = q ? xstrdup(q) : NULL;
    }
    sp->nown = n;
    for (int i = 0; sp->win.kind != SQL_WINDOW_NONE && i < 3; i++) {
        sp->cols[n].name = xstrdup(win_cols[i]);
        sp->cols[n].type = (struct sql_type){ SQL_TIMESTAMP, 3, 0, false };
        sp->quals[n++] = r->name ? xstrdup(r->name) : NULL;
    }
    sp->ncols = n;
}

/* The column of sp that tab.col (tab NULL: col alone) names, or -1. */
static int
side_find(const struct side_plan *sp, const char *tab, const char *col)
{
    for (int i = 0; i < sp->ncols; i++)
        if (strcmp(sp->cols[i].name, col) == 0 &&
            (tab == NULL || (sp->quals[i] != NULL && strcmp(sp->quals[i], tab) == 0)))
            return i;
    return -1;
}

/* What node refers to: *mask 1 for a column of the left side, 2 of the
 * right; *window whether a window column. A column both sides have and
 * that names no table is an error; one neither has is left to the
 * compiler's error. */
static int
refs_of(struct sql_plan_context *pc, const struct side_plan *sp, json_t *node, int *mask,
        bool *window)
{
    json_t *ref = json_object_get(node, "ColumnRef"), *v;
    const char *key;
    size_t i;
    int rc;

    if (ref != NULL) {
        json_t *f = json_object_get(ref, "fields");
        size_t n = json_array_size(f);
        const char *col = sval(json_array_get(f, n - 1));
        const char *tab = n == 2 ? sval(json_array_get(f, 0)) : NULL;
        int at[2];

        if (col == NULL)
            return 0;
        for (int s = 0; s < 2; s++)
            at[s] = side_find(&sp[s], tab, col);
        if (at[0] >= 0 && at[1] >= 0)
            return plan_error(pc, node, SPATE_EINVAL,
                              "column '%s' is ambiguous: both %s and %s have it; name it with "
                              "its table",
                              col, sp[0].rel.name ? sp[0].rel.name : "the left side",
                              sp[1].rel.name ? sp[1].rel.name : "the right side");
        for (int s = 0; s < 2; s++)
            if (at[s] >= 0) {
                *mask |= 1 << s;
                *window |= at[s] >= sp[s].nown;
            }
        return 0;
    }
    if (json_is_array(node)) {
        json_array_foreach(node, i, v) if ((rc = refs_of(pc, sp, v, mask, window)) != 0) return rc;
    } else if (json_is_object(node)) {
        json_object_foreach(node, key,
                            v) if ((rc = refs_of(pc, sp, v, mask, window)) != 0) return rc;
    }
    return 0;
}

/* The conjuncts of ON (ANDs flattened) appended to out. */
static void
conjuncts(json_t *node, json_t *out)
{
    json_t *b = json_object_get(node, "BoolExpr");
    const char *op = json_string_value(json_object_get(b, "boolop"));
    json_t *v;
    size_t i;

    if (b != NULL && op != NULL && strcmp(op, "AND_EXPR") == 0) {
        json_array_foreach(json_object_get(b, "args"), i, v) conjuncts(v, out);
        return;
    }
    json_array_append(out, node);
}

static json_t *
and_of(json_t *list)
{
    if (json_array_size(list) == 0)
        return NULL;
    if (json_array_size(list) == 1)
        return json_incref(json_array_get(list, 0));
    return json_pack("{s:{s:s,s:O,s:i}}", "BoolExpr", "boolop", "AND_EXPR", "args", list,
                     "location", -1);
}

/* An A_Expr of operator op (kind AEXPR_OP), or NULL. */
static json_t *
binary_op(json_t *node, const char **op)
{
    json_t *e = json_object_get(node, "A_Expr");
    const char *kind = json_string_value(json_object_get(e, "kind"));

    if (e == NULL || kind == NULL || strcmp(kind, "AEXPR_OP") != 0 ||
        json_object_get(e, "lexpr") == NULL)
        return NULL;
    *op = sval(json_array_get(json_object_get(e, "name"), 0));
    return *op ? e : NULL;
}

/* node as side s's event time plus a constant: the side and the constant
 * (ms), or -1. */
static int
time_plus(struct sql_plan_context *pc, const struct side_plan *sp, json_t *node, int64_t *plus)
{
    json_t *ref = json_object_get(node, "ColumnRef"), *e;
    const char *op;

    *plus = 0;
    if (ref != NULL) {
        json_t *f = json_object_get(ref, "fields");
        size_t n = json_array_size(f);
        const char *col = sval(json_array_get(f, n - 1));
        const char *tab = n == 2 ? sval(json_array_get(f, 0)) : NULL;

        for (int s = 0; col != NULL && s < 2; s++) {
            int at = side_find(&sp[s], tab, col);

            if (at >= 0 && at < sp[s].nown && sp[s].rel.rowtime >= 0 &&
                sp[s].own_index[at] == sp[s].rel.rowtime && sp[s].rel.format != SQL_FORMAT_ROW)
                return s;
        }
        return -1;
    }
    if ((e = binary_op(node, &op)) != NULL && (!strcmp(op, "+") || !strcmp(op, "-"))) {
        int mask = 0, s;
        bool window = false;
        spate_error saved = *pc->err;

        if (refs_of(pc, sp, json_object_get(e, "rexpr"), &mask, &window) != 0 || mask != 0 ||
            (s = time_plus(pc, sp, json_object_get(e, "lexpr"), plus)) < 0 ||
            sql_plan_constant_interval(pc, json_object_get(e, "rexpr"), "bound", plus) != 0) {
            *pc->err = saved; /* no bound: an ordinary condition */
            return -1;
        }
        if (!strcmp(op, "-"))
            *plus = -*plus;
        return s;
    }
    return -1;
}

/* Bounds that conjunct c puts on left time - right time: *lower, *upper
 * narrowed. */
static void
time_bounds(struct sql_plan_context *pc, const struct side_plan *sp, json_t *c, int64_t *lower,
            int64_t *upper)
{
    json_t *e = json_object_get(c, "A_Expr");
    const char *kind = json_string_value(json_object_get(e, "kind")), *op;
    int64_t a, lo, hi;
    int x, y;

    if (kind != NULL && strcmp(kind, "AEXPR_BETWEEN") == 0) {
        json_t *items =
            json_object_get(json_object_get(json_object_get(e, "rexpr"), "List"), "items");

        /* x + a BETWEEN y + lo AND y + hi: x - y in [lo - a, hi - a] */
        if ((x = time_plus(pc, sp, json_object_get(e, "lexpr"), &a)) < 0 ||
            (y = time_plus(pc, sp, json_array_get(items, 0), &lo)) < 0 || y == x ||
            time_plus(pc, sp, json_array_get(items, 1), &hi) != y)
            return;
        lo -= a;
        hi -= a;
        if (x == 0) {
            *lower = MAX(*lower, lo);
            *upper = MIN(*upper, hi);
        } else {
            *lower = MAX(*lower, -hi);
            *upper = MIN(*upper, -lo);
        }
        return;
    }
    if ((e = binary_op(c, &op)) == NULL)
        return;
    {
        /* x + a op y + b: x - y op b - a */
        bool ge = !strcmp(op, ">=") || !strcmp(op, ">"), le = !strcmp(op, "<=") || !strcmp(op, "<");
        bool eq = !strcmp(op, "=");
        int64_t b, v;

        if ((!ge && !le && !eq) || (x = time_plus(pc, sp, json_object_get(e, "lexpr"), &a)) < 0 ||
            (y = time_plus(pc, sp, json_object_get(e, "rexpr"), &b)) < 0 || x == y)
            return;
        v = b - a;
        if (x == 1) { /* right - left op v: left - right, the other way, -v */
            bool t = ge;

            ge = le;
            le = t;
            v = -v;
        }
        if (ge || eq)
            *lower = MAX(*lower, v);
        if (le || eq)
            *upper = MIN(*upper, v);
    }
}

static json_t *
column_ref(const char *qual, const char *col)
{
    if (qual == NULL)
        return json_pack("{s:{s:[{s:{s:s}}],s:i}}", "ColumnRef", "fields", "String", "sval", col,
                         "location", -1);
    return json_pack("{s:{s:[{s:{s:s}},{s:{s:s}}],s:i}}", "ColumnRef", "fields", "String", "sval",
                     qual, "String", "sval", col, "location", -1);
}

static json_t *
res_target(const char *name, json_t *val)
{
    return json_pack("{s:{s:s,s:O,s:i}}", "ResTarget", "name", name, "val", val, "location", -1);
}

/* Side s's Calc: [$key, its keys, its own columns], its filters, over its
 * FROM item; explained at depth (the exchange's) and below. */
static int
plan_side(struct sql_plan_context *pc, struct side_plan *sp, int nkey, char *from_text,
          bool exchange)
{
    json_t *targets = json_array(), *where = and_of(sp->filters);
    FILE *explain = pc->explain, *f = NULL;
    char *text = NULL;
    size_t len = 0;
    size_t i;
    json_t *k;
    int rc;

    json_array_foreach(sp->keys, i, k)
    {
        char name[32];

        snprintf(name, sizeof name, "$k%zu", i);
        json_array_append_new(targets, res_target(name, k));
    }
    for (int c = 0; c < sp->nown; c++) {
        json_t *ref = column_ref(sp->quals[c], sp->cols[c].name);

        json_array_append_new(targets, res_target(sp->cols[c].name, ref));
        json_decref(ref);
    }
    if (explain != NULL) {
        f = open_memstream(&text, &len);
        if (exchange)
            fprintf(f, "%*sExchange(distribution=[hash[$key]])\n", pc->depth * 3, "");
        pc->explain = f;
    }
    pc->depth += exchange;
    rc = sql_plan_keyed_calc(pc, &sp->rel, targets, where, nkey, from_text, &sp->mid);
    pc->depth -= exchange;
    if (explain != NULL) {
        fclose(f);
        pc->explain = explain;
        sp->text = text;
    }
    json_decref(targets);
    json_decref(where);
    return rc;
}

/* The table of a lookup join (JOIN t FOR SYSTEM_TIME AS OF ...), the
 * right side rarg: a filesystem table in CSV that the operator reads
 * itself, so no stream; its columns into sp. */
static int
lookup_side(struct sql_plan_context *pc, json_t *rarg, struct side_plan *sp,
            const struct sql_table **table)
{
    json_t *rv = json_object_get(rarg, "RangeVar");
    const char *name = json_string_value(json_object_get(rv, "relname"));
    const char *alias =
        json_string_value(json_object_get(json_object_get(rv, "alias"), "aliasname"));
    const struct sql_table *t = name ? sql_catalog_find(pc->catalog, name) : NULL;
    const char *conn = t ? sql_table_option(t, "connector") : NULL;
    const char *format = t ? sql_table_option(t, "format") : NULL;

    if (t == NULL)
        return plan_error(pc, rarg, SPATE_EINVAL, "table '%s' does not exist", name ? name : "?");
    if (t->view || conn == NULL || strcmp(conn, "filesystem") != 0 ||
        sql_table_option(t, "path") == NULL || format == NULL || strcmp(format, "csv") != 0)
        return plan_error(pc, rarg, SPATE_ENOTSUP,
                          "not supported: a lookup join (FOR SYSTEM_TIME AS OF) against '%s', "
                          "which is no filesystem table in CSV ('connector' = 'filesystem', "
                          "'path', 'format' = 'csv': the table a lookup join reads)",
                          name);
    *table = t;
    sp->rel.cols = xcalloc((size_t)t->ncols + 1, sizeof *sp->rel.cols);
    for (int i = 0; i < t->ncols; i++) {
        sp->rel.cols[i].name = xstrdup(t->cols[i].name);
        sp->rel.cols[i].type = t->cols[i].type;
    }
    sp->rel.ncols = t->ncols;
    sp->rel.name = xstrdup(alias ? alias : name);
    sp->rel.format = SQL_FORMAT_CSV;
    sp->rel.rowtime = -1;
    return 0;
}

/* A lookup join's AS OF: a PROCTIME() column of the left side, its
 * index there into *col. */
static int
lookup_as_of(struct sql_plan_context *pc, const struct side_plan *sp, json_t *rarg,
             const char *as_of, int *col)
{
    char *name = xstrdup(as_of), *dot;
    int at, n = 0;
    bool quoted = false;

    /* PostgreSQL's folding: unquoted names in lower case */
    for (const char *c = as_of; *c; c++) {
        if (*c == '"')
            quoted = !quoted;
        else
            name[n++] = quoted ? *c : (char)tolower((unsigned char)*c);
    }
    name[n] = 0;
    dot = strrchr(name, '.');
    if (dot != NULL)
        *dot = 0;
    at = side_find(&sp[0], dot ? name : NULL, dot ? dot + 1 : name);
    free(name);
    if (at < 0 || at >= sp[0].nown)
        return plan_error(pc, rarg, SPATE_EINVAL,
                          "FOR SYSTEM_TIME AS OF %s: no such column of the join's left side",
                          as_of);
    if (!sp[0].rel.proctime || sp[0].own_index[at] != sp[0].rel.rowtime)
        return plan_error(pc, rarg, SPATE_ENOTSUP,
                          "not supported: FOR SYSTEM_TIME AS OF %s, which is no PROCTIME() "
                          "column (a join with a versioned table as of an event time); a lookup "
                          "join is AS OF a processing time",
                          as_of);
    *col = at;
    return 0;
}

/* The lookup join's right side as the operator makes it: [$key, the keys
 * (the table's columns key_cols), the table's columns], into sp->mid. */
static void
lookup_columns(struct side_plan *sp, const int *key_cols, int nkey)
{
    struct sql_relation *m = &sp->mid;
    int n = 0;

    m->cols = xcalloc((size_t)(1 + nkey + sp->rel.ncols), sizeof *m->cols);
    m->cols[n].name = xstrdup("$key");
    m->cols[n++].type = (struct sql_type){ SQL_VARCHAR, 0, 0, false };
    for (int k = 0; k < nkey; k++) {
        char name[32];

        snprintf(name, sizeof name, "$k%d", k);
        m->cols[n].name = xstrdup(name);
        m->cols[n++].type = sp->rel.cols[key_cols[k]].type;
    }
    for (int i = 0; i < sp->rel.ncols; i++) {
        m->cols[n].name = xstrdup(sp->rel.cols[i].name);
        m->cols[n].type = sp->rel.cols[i].type;
        m->cols[n++].type.nullable = true;
    }
    m->ncols = n;
}

/* The residual condition over the join's output columns, compiled into
 * spec's program. */
static int
plan_residual(struct sql_plan_context *pc, const struct side_plan *sp, json_t *cond,
              struct sql_join_spec *spec)
{
    struct sql_program *p = xcalloc(1, sizeof *p);
    struct sql_column *cols;
    char **quals;
    struct sql_compiler c;
    struct sql_scope scope;
    struct sql_operand o;
    char b[32];
    int n = 0, rc;

    cols = xcalloc((size_t)(sp[0].ncols + sp[1].ncols + 1), sizeof *cols);
    quals = xcalloc((size_t)(sp[0].ncols + sp[1].ncols + 1), sizeof *quals);
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < sp[s].ncols; i++) {
            cols[n] = sp[s].cols[i];
            quals[n++] = sp[s].quals[i];
        }
    scope = (struct sql_scope){ NULL, cols, n };
    sql_compiler_init(&c, p, &scope, pc->script, pc->offset, pc->err);
    c.qualifiers = quals;
    p->input_format = SQL_FORMAT_ROW;
    p->output_format = SQL_FORMAT_ROW;
    p->ninput = n;
    p->input = xcalloc((size_t)n + 1, sizeof *p->input);
    for (int i = 0; i < n; i++) {
        p->input[i].name = xstrdup(cols[i].name);
        p->input[i].type = cols[i].type;
    }
    p->rowtime = -1;
    rc = sql_compile(&c, cond, &o);
    if (rc == 0 && o.type.id != SQL_BOOLEAN)
        rc = plan_error(pc, cond, SPATE_EINVAL, "ON needs a BOOLEAN, not %s",
                        sql_type_name(&o.type, b));
    if (rc == 0) {
        p->filter = o.reg;
        p->outputs = xcalloc(2, sizeof *p->outputs);
        p->output = xcalloc(2, sizeof *p->output);
        p->outputs[0] = o.reg;
        p->output[0].name = xstrdup("$on");
        p->output[0].type = o.type;
        p->noutput = 1;
        sql_compiler_finish(&c);
        rc = sql_program_encode(p, &spec->residual, &spec->residual_len, pc->err);
    } else {
        for (int i = 0; i < c.nconsts; i++)
            free(c.consts[i].sval);
        free(c.consts);
    }
    sql_program_free(p);
    free(cols);
    free(quals);
    return rc;
}

static bool
semi_or_anti(enum sql_join_type t)
{
    return t == SQL_JOIN_SEMI || t == SQL_JOIN_ANTI;
}

static enum sql_join_type
join_type_of(const char *t)
{
    if (t != NULL && !strcmp(t, "JOIN_LEFT"))
        return SQL_JOIN_LEFT;
    if (t != NULL && !strcmp(t, "JOIN_RIGHT"))
        return SQL_JOIN_RIGHT;
    if (t != NULL && !strcmp(t, "JOIN_FULL"))
        return SQL_JOIN_FULL;
    if (t != NULL && !strcmp(t, "JOIN_SEMI"))
        return SQL_JOIN_SEMI;
    if (t != NULL && !strcmp(t, "JOIN_ANTI"))
        return SQL_JOIN_ANTI;
    return SQL_JOIN_INNER;
}

/* The join's output: its columns and their tables, into rel. */
static void
join_relation(const struct side_plan *sp, const struct sql_join_spec *spec,
              struct spate_stream *node, struct sql_relation *rel)
{
    int n;

    sql_relation_release(rel);
    rel->stream = node;
    rel->format = SQL_FORMAT_ROW;
    rel->cols = sql_join_output(spec, &n);
    rel->ncols = n;
    rel->qualifiers = xcalloc((size_t)n + 1, sizeof *rel->qualifiers);
    n = 1;
    for (int s = 0; s < (semi_or_anti(spec->type) ? 1 : 2); s++)
        for (int i = 0; i < sp[s].ncols; i++)
            rel->qualifiers[n++] = sp[s].quals[i] ? xstrdup(sp[s].quals[i]) : NULL;
    rel->rowtime = -1;
    rel->updating = spec->time == SQL_JOIN_REGULAR && spec->type != SQL_JOIN_INNER &&
                    spec->type != SQL_JOIN_SEMI;
}

/* The name a FROM item goes by (its alias, or its table's name), or NULL. */
static const char *
item_name(json_t *item)
{
    json_t *rv = json_object_get(item, "RangeVar"), *alias;

    if (rv == NULL)
        rv = json_object_get(item, "RangeSubselect");
    if (rv == NULL)
        rv = json_object_get(item, "RangeFunction");
    alias = json_object_get(rv, "alias");
    if (alias != NULL)
        return json_string_value(json_object_get(alias, "aliasname"));
    return json_string_value(json_object_get(rv, "relname"));
}

/* Whether node refers to a column of a table other than inner (by name:
 * tab.col with tab not inner), as a correlated subquery's condition does. */
static bool
refers_outside(json_t *node, const char *inner)
{
    json_t *ref = json_object_get(node, "ColumnRef"), *v;
    const char *key;
    size_t i;

    if (ref != NULL) {
        json_t *f = json_object_get(ref, "fields");
        const char *tab = json_array_size(f) == 2 ? sval(json_array_get(f, 0)) : NULL;

        return tab != NULL && (inner == NULL || strcmp(tab, inner) != 0);
    }
    if (json_is_array(node)) {
        json_array_foreach(node, i, v) if (refers_outside(v, inner)) return true;
    } else if (json_is_object(node)) {
        json_object_foreach(node, key, v) if (refers_outside(v, inner)) return true;
    }
    return false;
}

static json_t *
null_test(json_t *arg)
{
    return json_pack("{s:{s:O,s:s,s:i}}", "NullTest", "arg", arg, "nulltesttype", "IS_NULL",
                     "location", -1);
}

static json_t *
or_of(json_t *a, json_t *b, json_t *c)
{
    return json_pack("{s:{s:s,s:[o,o,o],s:i}}", "BoolExpr", "boolop", "OR_EXPR", "args", a, b, c,
                     "location", -1);
}

static json_t *
equals(json_t *l, json_t *r)
{
    return json_pack("{s:{s:s,s:[{s:{s:s}}],s:O,s:O,s:i}}", "A_Expr", "kind", "AEXPR_OP", "name",
                     "String", "sval", "=", "lexpr", l, "rexpr", r, "location", -1);
}

/* One conjunct of WHERE as a semi or anti join of *from (replaced by the
 * join) with its subquery: x IN (SELECT y ...) a semi join on x = y, NOT
 * IN an anti join on x = y OR x IS NULL OR y IS NULL (SQL's NOT IN: no row
 * when the subquery gives a NULL), [NOT] EXISTS (SELECT ... FROM t WHERE
 * ...) on the conditions of its WHERE that name the tables outside;
 * *done whether it was one. 0 or an error. */
static int
subquery_join(struct sql_plan_context *pc, json_t *c, json_t **from, int n, bool *done)
{
    json_t *link = json_object_get(c, "SubLink"), *b = json_object_get(c, "BoolExpr");
    json_t *sub, *copy, *quals, *rsub, *where;
    const char *type, *op = NULL;
    bool not = false;
    char alias[32];

    *done = false;
    if (b != NULL && !strcmp(json_string_value(json_object_get(b, "boolop")) ?: "", "NOT_EXPR") &&
        json_array_size(json_object_get(b, "args")) == 1) {
        link = json_object_get(json_array_get(json_object_get(b, "args"), 0), "SubLink");
        not = true;
    }
    type = json_string_value(json_object_get(link, "subLinkType"));
    sub = json_object_get(json_object_get(link, "subselect"), "SelectStmt");
    if (link == NULL || type == NULL || sub == NULL)
        return 0;
    if (json_object_get(link, "operName") != NULL)
        op = sval(json_array_get(json_object_get(link, "operName"), 0));
    snprintf(alias, sizeof alias, "$subquery%d", n);
    copy = json_deep_copy(sub);
    if (!strcmp(type, "ANY_SUBLINK") && (op == NULL || !strcmp(op, "="))) {
        json_t *test = json_object_get(link, "testexpr");
        json_t *targets = json_object_get(copy, "targetList"), *y;

        if (json_object_get(test, "RowExpr") != NULL || json_array_size(targets) != 1) {
            json_decref(copy);
            return plan_error(pc, c, SPATE_ENOTSUP,
                              "not supported: IN of more than one column (x IN (SELECT y ...) "
                              "is)");
        }
        json_object_set_new(json_object_get(json_array_get(targets, 0), "ResTarget"), "name",
                            json_string("in$"));
        y = column_ref(alias, "in$");
        quals = equals(test, y);
        if (not )
            quals = or_of(quals, null_test(test), null_test(y));
        json_decref(y);
    } else if (!strcmp(type, "EXISTS_SUBLINK")) {
        json_t *inner = json_array_get(json_object_get(copy, "fromClause"), 0);
        json_t *all = json_array(), *kept = json_array(), *moved = json_array(), *x;
        const char *name = item_name(inner);
        size_t i;

        if (json_array_size(json_object_get(copy, "fromClause")) != 1 || name == NULL ||
            json_array_size(json_object_get(copy, "groupClause")) > 0 ||
            json_object_get(copy, "havingClause") != NULL) {
            json_decref(copy);
            json_decref(all);
            json_decref(kept);
            json_decref(moved);
            return plan_error(pc, c, SPATE_ENOTSUP,
                              "not supported: EXISTS over other than one table, view or "
                              "subquery without GROUP BY");
        }
        snprintf(alias, sizeof alias, "%s", name);
        if ((where = json_object_get(copy, "whereClause")) != NULL)
            conjuncts(where, all);
        json_array_foreach(all, i, x) json_array_append(refers_outside(x, name) ? moved : kept, x);
        /* the subquery's columns, all of them, for the conditions moved */
        json_object_set_new(copy, "targetList",
                            json_pack("[{s:{s:{s:{s:[{s:{}}],s:i}},s:i}}]", "ResTarget", "val",
                                      "ColumnRef", "fields", "A_Star", "location", -1, "location",
                                      -1));
        if (json_array_size(kept) > 0)
            json_object_set_new(copy, "whereClause", and_of(kept));
        else
            json_object_del(copy, "whereClause");
        quals = and_of(moved);
        if (quals == NULL) /* uncorrelated: every row meets every row */
            quals =
                json_pack("{s:{s:{s:b},s:i}}", "A_Const", "boolval", "boolval", 1, "location", -1);
        json_decref(all);
        json_decref(kept);
        json_decref(moved);
    } else {
        json_decref(copy);
        return 0;
    }
    rsub = json_pack("{s:{s:{s:o},s:{s:s}}}", "RangeSubselect", "subquery", "SelectStmt", copy,
                     "alias", "aliasname", alias);
    *from = json_pack("{s:{s:s,s:o,s:o,s:o}}", "JoinExpr", "jointype",
                      not ? "JOIN_ANTI" : "JOIN_SEMI", "larg", *from, "rarg", rsub, "quals", quals);
    *done = true;
    return 0;
}

/* Whether node has an object key named key anywhere. */
static bool
has_key(json_t *node, const char *key)
{
    json_t *v;
    const char *k;
    size_t i;

    if (json_is_array(node)) {
        json_array_foreach(node, i, v) if (has_key(v, key)) return true;
    } else if (json_is_object(node)) {
        json_object_foreach(node, k, v) if (!strcmp(k, key) || has_key(v, key)) return true;
    }
    return false;
}

json_t *
sql_subqueries_into_joins(struct sql_plan_context *pc, json_t *select, int *rc)
{
    json_t *from = json_object_get(select, "fromClause"), *where, *all, *kept, *c, *item, *out;
    size_t i;
    int n = 0;

    *rc = 0;
    if ((where = json_object_get(select, "whereClause")) == NULL || json_array_size(from) != 1 ||
        !has_key(where, "SubLink"))
        return NULL;
    all = json_array();
    kept = json_array();
    conjuncts(where, all);
    item = json_incref(json_array_get(from, 0));
    json_array_foreach(all, i, c)
    {
        bool done;

        if ((*rc = subquery_join(pc, c, &item, n, &done)) != 0)
            break;
        if (done)
            n++;
        else
            json_array_append(kept, c);
    }
    out = NULL;
    if (*rc == 0 && n > 0) {
        out = json_copy(select);
        json_object_set_new(out, "fromClause", json_pack("[O]", item));
        if (json_array_size(kept) > 0)
            json_object_set_new(out, "whereClause", and_of(kept));
        else
            json_object_del(out, "whereClause");
    }
    json_decref(item);
    json_decref(all);
    json_decref(kept);
    return out;
}

json_t *
sql_join_where_into_on(json_t *select)
{
    json_t *from = json_object_get(select, "fromClause");
    json_t *je = json_object_get(json_array_get(from, 0), "JoinExpr");
    json_t *where = json_object_get(select, "whereClause"), *quals, *moved, *on, *item;
    const char *type = json_string_value(json_object_get(je, "jointype"));

    if (json_array_size(from) != 1 || je == NULL || where == NULL || type == NULL ||
        strcmp(type, "JOIN_INNER") != 0 || (quals = json_object_get(je, "quals")) == NULL)
        return NULL;
    on = json_copy(je);
    json_object_set_new(on, "quals",
                        json_pack("{s:{s:s,s:[O,O],s:i}}", "BoolExpr", "boolop", "AND_EXPR", "args",
                                  quals, where, "location", -1));
    item = json_pack("{s:o}", "JoinExpr", on);
    moved = json_copy(select);
    json_object_set_new(moved, "fromClause", json_pack("[o]", item));
    json_object_del(moved, "whereClause");
    return moved;
}

int
sql_plan_join(struct sql_plan_context *pc, json_t *item, struct sql_relation *rel)
{
    json_t *je = json_object_get(item, "JoinExpr"), *quals = json_object_get(je, "quals");
    struct side_plan sp[2] = { 0 };
    struct sql_join_spec spec = { 0 };
    json_t *all = json_array(), *residual = json_array(), *c;
    FILE *explain = pc->explain, *f = NULL;
    char *from_text[2] = { NULL, NULL };
    int64_t lower = INT64_MIN, upper = INT64_MAX;
    bool seen_start = false, seen_end = false, updating[2] = { false, false };
    const spate_type *fields[TYPES_ROW_MAX_FIELDS];
    struct sql_column *out_cols;
    struct spate_stream *node, *keyed[2];
    json_t *rv = json_object_get(json_object_get(je, "rarg"), "RangeVar");
    const char *as_of = json_string_value(json_object_get(rv, "forSystemTime"));
    const struct sql_table *lookup_table = NULL;
    int key_cols[TYPES_ROW_MAX_FIELDS], proctime_col = -1;
    size_t i;
    int rc = 0, nout;

    spec.type = join_type_of(json_string_value(json_object_get(je, "jointype")));
    if (json_is_true(json_object_get(je, "isNatural")) ||
        json_array_size(json_object_get(je, "usingClause")) > 0) {
        rc = plan_error(pc, item, SPATE_ENOTSUP,
                        "not supported: NATURAL JOIN and JOIN ... USING (name the columns in ON)");
        goto out;
    }
    if (quals == NULL) {
        rc = plan_error(pc, json_object_get(je, "rarg"), SPATE_ENOTSUP,
                        "not supported: a join without ON (a cross join): a streaming join "
                        "needs an equality of a column of each side");
        goto out;
    }
    /* The sides, explained three levels below the join. */
    for (int s = 0; s < 2; s++) {
        size_t len = 0;

        if (explain != NULL) {
            pc->explain = f = open_memstream(&from_text[s], &len);
            pc->depth += 3;
        }
        if (s == 1 && as_of != NULL)
            rc = lookup_side(pc, json_object_get(je, "rarg"), &sp[s], &lookup_table);
        else
            rc = sql_plan_from_item(pc, json_object_get(je, s == 0 ? "larg" : "rarg"), &sp[s].rel,
                                    &sp[s].win);
        if (explain != NULL) {
            fclose(f);
            pc->explain = explain;
            pc->depth -= 3;
        }
        if (rc != 0)
            goto out;
        updating[s] = sp[s].rel.updating;
        side_columns(&sp[s]);
        sp[s].keys = json_array();
        sp[s].filters = json_array();
    }
    if ((sp[0].win.kind != SQL_WINDOW_NONE) != (sp[1].win.kind != SQL_WINDOW_NONE) ||
        (sp[0].win.kind != SQL_WINDOW_NONE &&
         (sp[0].win.kind != sp[1].win.kind || sp[0].win.size_ms != sp[1].win.size_ms ||
          sp[0].win.slide_ms != sp[1].win.slide_ms))) {
        rc = plan_error(pc, sp[0].win.node ? sp[0].win.node : sp[1].win.node, SPATE_ENOTSUP,
                        "not supported: a join of a window table function with anything but "
                        "the same window of the other side (a window join)");
        goto out;
    }
    if (as_of != NULL) {
        if (spec.type != SQL_JOIN_INNER && spec.type != SQL_JOIN_LEFT) {
            rc = plan_error(pc, item, SPATE_ENOTSUP,
                            "not supported: a lookup join (FOR SYSTEM_TIME AS OF) other than "
                            "INNER or LEFT");
            goto out;
        }
        if (updating[0]) {
            rc = plan_error(pc, json_object_get(je, "larg"), SPATE_ENOTSUP,
                            "not supported: a lookup join (FOR SYSTEM_TIME AS OF) of an "
                            "updating query");
            goto out;
        }
        if ((rc = lookup_as_of(pc, sp, json_object_get(je, "rarg"), as_of, &proctime_col)) != 0)
            goto out;
    }
    if (sp[0].win.kind != SQL_WINDOW_NONE && semi_or_anti(spec.type)) {
        rc = plan_error(pc, sp[0].win.node, SPATE_ENOTSUP,
                        "not supported: IN or EXISTS over window table functions");
        goto out;
    }
    if (sp[0].win.kind == SQL_WINDOW_SESSION && sp[0].win.gap_ms != sp[1].win.gap_ms) {
        rc = plan_error(pc, sp[1].win.node, SPATE_ENOTSUP,
                        "not supported: a window join of SESSION windows of different gaps");
        goto out;
    }
    /* ON, conjunct by conjunct. */
    conjuncts(quals, all);
    json_array_foreach(all, i, c)
    {
        const char *op;
        json_t *e = binary_op(c, &op);
        int mask = 0;
        bool window = false;

        if ((rc = refs_of(pc, sp, c, &mask, &window)) != 0)
            goto out;
        if (e != NULL && !strcmp(op, "=")) {
            int ml = 0, mr = 0;
            bool wl = false, wr = false;
            json_t *l = json_object_get(e, "lexpr"), *r = json_object_get(e, "rexpr");

            refs_of(pc, sp, l, &ml, &wl);
            refs_of(pc, sp, r, &mr, &wr);
            if (((ml == 1 && mr == 2) || (ml == 2 && mr == 1)) && !wl && !wr) {
                json_t *rk = ml == 1 ? r : l;
                json_t *kf = json_object_get(json_object_get(rk, "ColumnRef"), "fields");
                size_t nf = json_array_size(kf);

                if (as_of != NULL) {
                    /* the table's side of a lookup key: one of its columns */
                    const char *col = nf > 0 ? sval(json_array_get(kf, nf - 1)) : NULL;
                    int at =
                        col ? side_find(&sp[1], nf == 2 ? sval(json_array_get(kf, 0)) : NULL, col)
                            : -1;

                    if (at < 0) {
                        rc = plan_error(pc, rk, SPATE_ENOTSUP,
                                        "not supported: a lookup join's key that is no column "
                                        "of table '%s' (its side of = must be one)",
                                        lookup_table->name);
                        goto out;
                    }
                    key_cols[json_array_size(sp[1].keys)] = sp[1].own_index[at];
                }
                json_array_append(sp[0].keys, ml == 1 ? l : r);
                json_array_append(sp[1].keys, ml == 1 ? r : l);
                continue;
            }
            if (((ml == 1 && mr == 2) || (ml == 2 && mr == 1)) && wl && wr &&
                json_object_get(l, "ColumnRef") && json_object_get(r, "ColumnRef")) {
                json_t *fl = json_object_get(json_object_get(l, "ColumnRef"), "fields");
                json_t *fr = json_object_get(json_object_get(r, "ColumnRef"), "fields");
                const char *cl = sval(json_array_get(fl, json_array_size(fl) - 1));
                const char *cr = sval(json_array_get(fr, json_array_size(fr) - 1));

                if (cl && cr && !strcmp(cl, cr) && !strcmp(cl, "window_start")) {
                    seen_start = true;
                    continue;
                }
                if (cl && cr && !strcmp(cl, cr) && !strcmp(cl, "window_end")) {
                    seen_end = true;
                    continue;
                }
            }
        }
        if (!window && mask == 1 &&
            (spec.type == SQL_JOIN_INNER || spec.type == SQL_JOIN_RIGHT ||
             spec.type == SQL_JOIN_SEMI)) {
            json_array_append(sp[0].filters, c);
            continue;
        }
        if (!window && mask == 2 && as_of == NULL &&
            (spec.type == SQL_JOIN_INNER || spec.type == SQL_JOIN_LEFT ||
             semi_or_anti(spec.type))) {
            json_array_append(sp[1].filters, c);
            continue;
        }
        time_bounds(pc, sp, c, &lower, &upper);
        json_array_append(residual, c);
    }
    if (json_array_size(sp[0].keys) == 0 && !semi_or_anti(spec.type)) {
        rc = plan_error(pc, quals, SPATE_ENOTSUP,
                        "not supported: a join whose ON has no equality of an expression of "
                        "each side (a streaming join is keyed by them)");
        goto out;
    }
    if (sp[0].win.kind != SQL_WINDOW_NONE && !(seen_start && seen_end)) {
        rc = plan_error(pc, quals, SPATE_ENOTSUP,
                        "not supported: a window join whose ON does not join window_start and "
                        "window_end of both sides");
        goto out;
    }
    /* Each side's Calc and exchange. */
    spec.nkey = (int)json_array_size(sp[0].keys);
    if (as_of != NULL)
        lookup_columns(&sp[1], key_cols, spec.nkey);
    for (int s = 0; s < (as_of != NULL ? 1 : 2); s++) {
        pc->depth++;
        rc = plan_side(pc, &sp[s], spec.nkey, from_text[s], as_of == NULL);
        from_text[s] = NULL;
        pc->depth--;
        if (rc != 0)
            goto out;
    }
    for (int k = 1; k <= spec.nkey; k++) {
        const struct sql_type *a = &sp[0].mid.cols[k].type, *b = &sp[1].mid.cols[k].type;
        char b1[32], b2[32];

        if (sql_type_phys(a->id) != sql_type_phys(b->id) ||
            ((a->id == SQL_DECIMAL || b->id == SQL_DECIMAL) &&
             (a->id != b->id || a->scale != b->scale))) {
            rc = plan_error(pc, json_array_get(sp[0].keys, (size_t)k - 1), SPATE_ENOTSUP,
                            "not supported: join keys of types %s and %s (CAST one to the "
                            "other's type)",
                            sql_type_name(a, b1), sql_type_name(b, b2));
            goto out;
        }
    }
    /* The join. */
    spec.left = sp[0].mid.cols;
    spec.nleft = sp[0].mid.ncols;
    spec.right = sp[1].mid.cols;
    spec.nright = sp[1].mid.ncols;
    if (sp[0].win.kind != SQL_WINDOW_NONE) {
        spec.time = SQL_JOIN_WINDOW;
        spec.window = sp[0].win.kind;
        spec.size_ms = sp[0].win.kind == SQL_WINDOW_SESSION ? sp[0].win.gap_ms : sp[0].win.size_ms;
        spec.slide_ms = sp[0].win.slide_ms;
    } else if (lower != INT64_MIN && upper != INT64_MAX && !semi_or_anti(spec.type)) {
        if (lower > upper) {
            rc = plan_error(pc, quals, SPATE_EINVAL,
                            "the time bounds of this join can never hold (left time - right "
                            "time between %lld and %lld ms)",
                            (long long)lower, (long long)upper);
            goto out;
        }
        spec.time = SQL_JOIN_INTERVAL;
        spec.lower_ms = lower;
        spec.upper_ms = upper;
    } else if (as_of != NULL) {
        spec.time = SQL_JOIN_REGULAR; /* nothing kept: no TTL */
    } else {
        spec.time = SQL_JOIN_REGULAR;
        if ((rc = config_get_duration_ms(pc->env->conf, CFG(TABLE_EXEC_STATE_TTL), &spec.ttl_ms,
                                         pc->err)) != 0)
            goto out;
    }
    if ((updating[0] || updating[1]) && spec.time != SQL_JOIN_REGULAR) {
        /* their rows go by time, not by what retracts them */
        rc = plan_error(pc, json_object_get(je, updating[0] ? "larg" : "rarg"), SPATE_ENOTSUP,
                        "not supported: an %s join of an updating query (an outer join or a "
                        "GROUP BY without a window); a regular join (no time bounds) takes it",
                        spec.time == SQL_JOIN_WINDOW ? "window" : "interval");
        goto out;
    }
    if (json_array_size(residual) > 0) {
        json_t *cond = and_of(residual);

        rc = plan_residual(pc, sp, cond, &spec);
        json_decref(cond);
        if (rc != 0)
            goto out;
    }
    out_cols = sql_join_output(&spec, &nout);
    if (nout > TYPES_ROW_MAX_FIELDS || spec.nleft + 2 > TYPES_ROW_MAX_FIELDS ||
        spec.nright + 2 > TYPES_ROW_MAX_FIELDS) {
        for (int k = 0; k < nout; k++)
            free(out_cols[k].name);
        free(out_cols);
        rc = plan_error(pc, item, SPATE_ENOTSUP, "not supported: a join of more than %d columns",
                        TYPES_ROW_MAX_FIELDS - 2);
        goto out;
    }
    for (int k = 0; k < nout; k++) {
        fields[k] = sql_type_spate(out_cols[k].type.id);
        free(out_cols[k].name);
    }
    free(out_cols);
    if (as_of != NULL) {
        struct sql_lookup_spec ls = { &spec, NULL, ',', false, key_cols };
        const char *delim = sql_table_option(lookup_table, "csv.field-delimiter");
        const char *ignore = sql_table_option(lookup_table, "csv.ignore-parse-errors");
        uint8_t *bytes;
        size_t len;

        ls.path = (char *)sql_table_option(lookup_table, "path");
        ls.csv_delimiter = delim && delim[0] ? delim[0] : ',';
        ls.ignore_parse_errors = ignore != NULL && strcmp(ignore, "true") == 0;
        sql_lookup_spec_encode(&ls, &bytes, &len);
        node = stream_node_new(pc->env, OP_SQL_LOOKUP_JOIN, sp[0].mid.stream,
                               env_own_type(pc->env, types_new_row(nout, fields)));
        node->opconf.sql.program = bytes;
        node->opconf.sql.program_len = len;
        spate_name(node, "LookupJoin");
        if (explain != NULL)
            fprintf(explain, "%*sLookupJoin(table=[%s], joinType=[%s], keys=[%d]%s)\n%s",
                    pc->depth * 3, "", lookup_table->name, join_names[spec.type], spec.nkey,
                    spec.residual ? ", where=[...]" : "", sp[0].text ? sp[0].text : "");
    } else {
        static const char *const kinds[] = { "Join", "IntervalJoin", "WindowJoin" };
        enum ship_strategy part;
        uint8_t *bytes;
        size_t len;

        for (int s = 0; s < 2; s++)
            keyed[s] = spate_key_by_field(sp[s].mid.stream, 1);
        sql_join_spec_encode(&spec, &bytes, &len);
        node = stream_node_new(pc->env, OP_SQL_JOIN, keyed[0],
                               env_own_type(pc->env, types_new_row(nout, fields)));
        node->input2 = keyed[1];
        node->in_type2 = sp[1].mid.stream->out_type;
        stream_graph_resolve(keyed[0], &part, &node->key);
        stream_graph_resolve(keyed[1], &part, &node->key2);
        node->opconf.sql.program = bytes;
        node->opconf.sql.program_len = len;
        spate_name(node, kinds[spec.time]);
        if (explain != NULL) {
            fprintf(explain, "%*s%s(joinType=[%s], keys=[%d]", pc->depth * 3, "", kinds[spec.time],
                    join_names[spec.type], spec.nkey);
            if (spec.time == SQL_JOIN_INTERVAL)
                fprintf(explain, ", between=[%lld ms, %lld ms]", (long long)spec.lower_ms,
                        (long long)spec.upper_ms);
            if (spec.time == SQL_JOIN_REGULAR && spec.ttl_ms > 0)
                fprintf(explain, ", ttl=[%lld ms]", (long long)spec.ttl_ms);
            fprintf(explain, "%s)\n%s%s", spec.residual ? ", where=[...]" : "",
                    sp[0].text ? sp[0].text : "", sp[1].text ? sp[1].text : "");
        }
    }
    join_relation(sp, &spec, node, rel);
    rel->updating |= updating[0] || updating[1]; /* retractions through: a changelog */
    if (as_of != NULL) {
        /* each row joined once, as it comes: insertions, still stamped with
         * their processing time (a lookup join's output keeps it) */
        rel->updating = false;
        rel->rowtime = 1 + proctime_col;
        rel->proctime = true;
    }
out:
    free(spec.residual);
    free(from_text[0]);
    free(from_text[1]);
    side_release(&sp[0]);
    side_release(&sp[1]);
    json_decref(all);
    json_decref(residual);
    return rc;
}
