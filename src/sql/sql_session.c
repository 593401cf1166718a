/* A SQL session (sql_session.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/alloc.h"
#include "core/util.h"
#include "sql/sql_catalog.h"
#include "sql/sql_connectors.h"
#include "sql/sql_expr.h"
#include "sql/sql_parser.h"
#include "sql/sql_planner.h"
#include "sql/sql_session.h"
#include "sql/sql_udf.h"
#include "streaming/job_graph.h"
#include "streaming/types.h"

struct sql_session {
    const struct config *base; /* the client's; RESET goes back to it */
    struct config *conf;
    struct executor executor;
    FILE *out;
    bool remote;
    struct sql_catalog catalog;
    /* A statement set being gathered (BEGIN STATEMENT SET ... END): its
     * INSERTs planned into one environment, run as one job at END. */
    struct spate_env *set_env;
    char *set_name;
};

struct sql_session *
sql_session_new(const struct sql_session_options *o)
{
    struct sql_session *s = xcalloc(1, sizeof *s);

    s->base = o->conf;
    s->conf = o->conf ? config_copy(o->conf) : config_new();
    s->executor = o->executor;
    s->remote = o->remote;
    s->out = o->out ? o->out : stdout;
    sql_catalog_init(&s->catalog);
    return s;
}

void
sql_session_free(struct sql_session *s)
{
    if (s == NULL)
        return;
    sql_catalog_release(&s->catalog);
    if (s->set_env != NULL)
        env_free(s->set_env);
    free(s->set_name);
    config_free(s->conf);
    free(s);
}

const struct config *
sql_session_config(const struct sql_session *s)
{
    return s->conf;
}

/* One statement being run. */
struct stmt {
    struct sql_session *s;
    const char *script;
    size_t offset;
    spate_error *err;
    const struct sql_parsed *parsed;
};

#define stmt_error(st, node, code, ...) \
    sql_error_in((st)->err, (st)->script, (st)->offset, node, code, __VA_ARGS__)

/* The text of a WITH option's value: a string, a number or a word. */
static char *
option_value(json_t *arg)
{
    json_t *v;

    if ((v = json_object_get(arg, "String")) != NULL)
        return xstrdup(json_string_value(json_object_get(v, "sval")));
    if ((v = json_object_get(arg, "Integer")) != NULL)
        return xasprintf("%lld", (long long)json_integer_value(json_object_get(v, "ival")));
    if ((v = json_object_get(arg, "Float")) != NULL)
        return xstrdup(json_string_value(json_object_get(v, "fval")));
    if ((v = json_object_get(arg, "Boolean")) != NULL)
        return xstrdup(json_is_true(json_object_get(v, "boolval")) ? "true" : "false");
    if ((v = json_object_get(arg, "TypeName")) != NULL) {
        json_t *names = json_object_get(v, "names");

        return xstrdup(json_string_value(json_object_get(
            json_object_get(json_array_get(names, json_array_size(names) - 1), "String"), "sval")));
    }
    return NULL;
}

/* An A_Const's value as text, or NULL. */
static char *
const_text(json_t *k)
{
    json_t *v;

    if ((v = json_object_get(k, "sval")) != NULL)
        return xstrdup(json_string_value(json_object_get(v, "sval")) ?: "");
    if ((v = json_object_get(k, "ival")) != NULL)
        return xasprintf("%lld", (long long)json_integer_value(json_object_get(v, "ival")));
    if ((v = json_object_get(k, "fval")) != NULL)
        return xstrdup(json_string_value(json_object_get(v, "fval")) ?: "");
    if ((v = json_object_get(k, "boolval")) != NULL)
        return xstrdup(json_is_true(json_object_get(v, "boolval")) ? "true" : "false");
    return NULL;
}

/* WITH (key = 'value', ...) into t's options. */
static int
read_options(struct stmt *st, json_t *opts, struct sql_table *t)
{
    for (size_t i = 0; i < json_array_size(opts); i++) {
        json_t *d = json_object_get(json_array_get(opts, i), "DefElem");
        const char *key = json_string_value(json_object_get(d, "defname"));
        char *val = option_value(json_object_get(d, "arg"));

        if (key == NULL || val == NULL) {
            free(val);
            return stmt_error(st, json_array_get(opts, i), SPATE_EINVAL,
                              "a WITH option is key = 'value'");
        }
        t->options = xrealloc(t->options, (size_t)(t->noptions + 1) * sizeof *t->options);
        t->options[t->noptions].key = xstrdup(key);
        t->options[t->noptions].value = val;
        t->noptions++;
    }
    return 0;
}

/* WATERMARK FOR col AS expr: col a TIMESTAMP(3) of t, expr col or col
 * minus a constant interval (Flink's bounded out-of-orderness). The
 * expression is compiled from a copy of the script blanked but for it (so
 * that errors point into the script) and run for two rows, which must
 * give the same bound. */
static int
read_watermark(struct stmt *st, struct sql_table *t)
{
    const struct sql_parsed *p = st->parsed;
    size_t at = p ? p->watermark_at : 0, n = p ? p->watermark_len : 0;
    struct sql_scope scope = { t->name, t->cols, t->ncols };
    struct sql_stmt_text sel;
    struct sql_parsed parsed = { 0 };
    struct sql_program prog = { 0 };
    struct sql_compiler c;
    struct sql_operand o;
    struct sql_eval e;
    int64_t bound[2];
    char *copy;
    int rc;

    t->rowtime = -1;
    if (p == NULL || p->watermark_column == NULL)
        return 0;
    for (int i = 0; i < t->ncols; i++)
        if (strcmp(t->cols[i].name, p->watermark_column) == 0)
            t->rowtime = i;
    if (t->rowtime < 0 || t->cols[t->rowtime].type.id != SQL_TIMESTAMP) {
        char b[32];

        return sql_error_at(st->err, SPATE_EINVAL, st->script, at,
                            t->rowtime < 0 ? "the watermark's column '%s' is not in table '%s'"
                                           : "the watermark's column '%s' of '%s' is %s, not "
                                             "TIMESTAMP(3)",
                            p->watermark_column, t->name,
                            t->rowtime < 0 ? "" : sql_type_name(&t->cols[t->rowtime].type, b));
    }
    copy = xstrdup(st->script);
    for (size_t i = 0; copy[i]; i++)
        if ((i < at || i >= at + n) && copy[i] != '\n')
            copy[i] = ' ';
    memcpy(copy + at - 7, "SELECT ", 7); /* "WATERMARK FOR x AS " is before it */
    sel = (struct sql_stmt_text){ at - 7, n + 7 };
    rc = sql_parse(copy, &sel, &parsed, st->err);
    if (rc == 0) {
        json_t *target = json_object_get(
            json_object_get(
                json_array_get(
                    json_object_get(json_object_get(parsed.tree, "SelectStmt"), "targetList"), 0),
                "ResTarget"),
            "val");

        /* The original script: the expression's text is the same there, and
         * its errors show the statement as written. */
        sql_compiler_init(&c, &prog, &scope, st->script, at - 7, st->err);
        prog.input = t->cols;
        prog.ninput = t->ncols;
        if ((rc = sql_compile(&c, target, &o)) == 0 && o.type.id != SQL_TIMESTAMP)
            rc = sql_error_at(st->err, SPATE_EINVAL, st->script, at,
                              "a watermark expression gives a TIMESTAMP(3)");
        sql_compiler_finish(&c);
        for (int k = 0; rc == 0 && k < 2; k++) {
            sql_eval_init(&e, &prog);
            sql_eval_begin(&e);
            e.r[t->rowtime].null = false;
            e.r[t->rowtime].i = k ? 1700000000000 : 1600000000000;
            sql_eval_run(&e);
            bound[k] = e.r[o.reg].null ? -1 : e.r[t->rowtime].i - e.r[o.reg].i;
            sql_eval_release(&e);
        }
        if (rc == 0 && (bound[0] != bound[1] || bound[0] < 0))
            rc = sql_error_at(st->err, SPATE_ENOTSUP, st->script, at,
                              "not supported: a watermark other than column or column - "
                              "INTERVAL '...'");
        t->watermark_bound_ms = rc == 0 ? bound[0] : 0;
        for (int k = 0; k < prog.ncode; k++)
            free(prog.code[k].sval);
        free(prog.code);
        free(prog.regs);
    }
    sql_parsed_release(&parsed);
    free(copy);
    return rc;
}

/* PARTITIONED BY (a, ...): each a column of t, once. */
static int
read_partitioning(struct stmt *st, struct sql_table *t)
{
    const struct sql_parsed *p = st->parsed;

    if (p == NULL || p->npartition_columns == 0)
        return 0;
    t->partition = xcalloc((size_t)p->npartition_columns, sizeof *t->partition);
    for (int i = 0; i < p->npartition_columns; i++) {
        int c = -1;

        for (int k = 0; k < t->ncols; k++)
            if (strcmp(t->cols[k].name, p->partition_columns[i]) == 0)
                c = k;
        for (int k = 0; c >= 0 && k < t->npartition; k++)
            if (t->partition[k] == c)
                return sql_error_at(st->err, SPATE_EINVAL, st->script, p->partitioned_at,
                                    "table '%s' is partitioned by column '%s' twice", t->name,
                                    p->partition_columns[i]);
        if (c < 0)
            return sql_error_at(st->err, SPATE_EINVAL, st->script, p->partitioned_at,
                                "the partition column '%s' is not a column of table '%s'",
                                p->partition_columns[i], t->name);
        t->partition[t->npartition++] = c;
    }
    return 0;
}

/* PRIMARY KEY (a, ...) NOT ENFORCED, a table constraint or a column's
 * (Flink's: the key is not checked, only what upsert sinks key by; its
 * columns NOT NULL). One at most; NOT ENFORCED required, as Flink does. */
static int
read_primary_key(struct stmt *st, json_t *elts, struct sql_table *t)
{
    for (size_t i = 0; i < json_array_size(elts); i++) {
        json_t *e = json_array_get(elts, i), *cd = json_object_get(e, "ColumnDef");
        json_t *cons = cd ? json_object_get(cd, "constraints") : NULL;
        json_t *single = json_object_get(e, "Constraint");

        for (size_t k = 0; single != NULL || k < json_array_size(cons); k++) {
            json_t *cn = single ? single : json_object_get(json_array_get(cons, k), "Constraint");
            json_t *keys = json_object_get(cn, "keys");
            const char *ct = json_string_value(json_object_get(cn, "contype"));
            size_t nkeys = single ? json_array_size(keys) : 1;

            single = NULL;
            if (ct == NULL || strcmp(ct, "CONSTR_PRIMARY") != 0)
                continue;
            if (t->npk > 0)
                return stmt_error(st, cn, SPATE_EINVAL, "table '%s' has more than one PRIMARY KEY",
                                  t->name);
            if (st->parsed == NULL || !st->parsed->not_enforced)
                return stmt_error(st, cn, SPATE_EINVAL,
                                  "table '%s': a PRIMARY KEY is NOT ENFORCED (spate does not own "
                                  "the data, so it cannot enforce the key: write PRIMARY KEY "
                                  "(...) NOT ENFORCED)",
                                  t->name);
            t->pk = xcalloc(nkeys + 1, sizeof *t->pk);
            for (size_t n = 0; n < nkeys; n++) {
                const char *col =
                    cd ? json_string_value(json_object_get(cd, "colname"))
                       : json_string_value(json_object_get(
                             json_object_get(json_array_get(keys, n), "String"), "sval"));
                int c = -1;

                for (int j = 0; col != NULL && j < t->ncols; j++)
                    if (strcmp(t->cols[j].name, col) == 0)
                        c = j;
                if (c < 0)
                    return stmt_error(st, cn, SPATE_EINVAL,
                                      "table '%s': the PRIMARY KEY's column '%s' is not one of "
                                      "its columns",
                                      t->name, col ? col : "?");
                for (int j = 0; j < t->npk; j++)
                    if (t->pk[j] == c)
                        return stmt_error(st, cn, SPATE_EINVAL,
                                          "table '%s': column '%s' twice in the PRIMARY KEY",
                                          t->name, col);
                t->cols[c].type.nullable = false;
                t->pk[t->npk++] = c;
            }
        }
    }
    return 0;
}

static int
create_table(struct stmt *st, json_t *node, json_t *cs)
{
    const char *name =
        json_string_value(json_object_get(json_object_get(cs, "relation"), "relname"));
    json_t *elts = json_object_get(cs, "tableElts"), *opts = json_object_get(cs, "options");
    struct sql_program dummy = { 0 };
    struct sql_scope none = { 0 };
    struct sql_compiler c;
    struct sql_table *t;
    int rc;

    if (name == NULL)
        return stmt_error(st, node, SPATE_EINVAL, "CREATE TABLE needs a name");
    if (json_object_get(cs, "inhRelations") || json_object_get(cs, "partbound") ||
        json_object_get(cs, "partspec"))
        return stmt_error(st, node, SPATE_ENOTSUP,
                          "not supported: INHERITS and PARTITION in CREATE TABLE");
    if (json_array_size(elts) == 0)
        return stmt_error(st, node, SPATE_EINVAL, "table '%s' needs columns", name);
    if (json_array_size(elts) > TYPES_ROW_MAX_FIELDS)
        return stmt_error(st, node, SPATE_ENOTSUP, "not supported: more than %d columns",
                          TYPES_ROW_MAX_FIELDS);
    if (sql_catalog_find(&st->s->catalog, name) != NULL) {
        if (json_is_true(json_object_get(cs, "if_not_exists")))
            return 0;
        return stmt_error(st, node, SPATE_EEXIST, "table or view '%s' exists already", name);
    }
    t = xcalloc(1, sizeof *t);
    t->name = xstrdup(name);
    t->temporary =
        strcmp(json_string_value(json_object_get(json_object_get(cs, "relation"), "relpersistence"))
                   ?: "p",
               "t") == 0;
    t->cols = xcalloc(json_array_size(elts) + 1, sizeof *t->cols);
    sql_compiler_init(&c, &dummy, &none, st->script, st->offset, st->err);
    for (size_t i = 0; i < json_array_size(elts); i++) {
        json_t *e = json_array_get(elts, i), *cd = json_object_get(e, "ColumnDef");
        json_t *cons;
        const char *col;

        if (cd == NULL) {
            json_t *cn = json_object_get(e, "Constraint");
            const char *ct = json_string_value(json_object_get(cn, "contype"));

            if (ct == NULL || strcmp(ct, "CONSTR_PRIMARY") != 0) {
                rc = stmt_error(st, e, SPATE_ENOTSUP,
                                "not supported: table constraint %s in CREATE TABLE (PRIMARY "
                                "KEY (...) NOT ENFORCED is)",
                                ct ? ct + 7 : "?");
                goto fail;
            }
            continue; /* read once every column is */
        }
        col = json_string_value(json_object_get(cd, "colname"));
        for (int k = 0; k < t->ncols; k++)
            if (strcmp(t->cols[k].name, col) == 0) {
                rc = stmt_error(st, e, SPATE_EINVAL, "column '%s' twice in table '%s'", col, name);
                goto fail;
            }
        if ((rc = sql_type_from_pg(&c, json_object_get(cd, "typeName"), &t->cols[t->ncols].type)) !=
            0)
            goto fail;
        if (t->cols[t->ncols].type.id == SQL_INTERVAL)
            t->cols[t->ncols].type.precision = 0;
        t->cols[t->ncols].name = xstrdup(col);
        t->ncols++;
        cons = json_object_get(cd, "constraints");
        for (size_t k = 0; k < json_array_size(cons); k++) {
            json_t *cn = json_object_get(json_array_get(cons, k), "Constraint");
            const char *ct = json_string_value(json_object_get(cn, "contype"));

            if (ct && strcmp(ct, "CONSTR_NOTNULL") == 0) {
                t->cols[t->ncols - 1].type.nullable = false;
            } else if (ct && strcmp(ct, "CONSTR_NULL") == 0) {
                t->cols[t->ncols - 1].type.nullable = true;
            } else if (ct && strcmp(ct, "CONSTR_PRIMARY") == 0) {
                continue; /* read_primary_key */
            } else {
                rc = stmt_error(st, json_array_get(cons, k), SPATE_ENOTSUP,
                                "not supported: column constraint %s", ct ? ct + 7 : "?");
                goto fail;
            }
        }
    }
    if ((rc = read_options(st, opts, t)) != 0 || (rc = read_watermark(st, t)) != 0 ||
        (rc = read_primary_key(st, elts, t)) != 0 || (rc = read_partitioning(st, t)) != 0)
        goto fail;
    if ((rc = sql_connector_check(t, st->err)) != 0) {
        stmt_error(st, node, rc, "%s", st->err->message);
        goto fail;
    }
    free(c.consts);
    free(dummy.regs);
    fprintf(st->s->out, "[INFO] Execute statement succeeded.\n");
    return sql_catalog_add(&st->s->catalog, t, st->err);
fail:
    free(c.consts);
    free(dummy.regs);
    sql_table_free(t);
    return rc;
}

/* The columns a query gives, planned into a graph that is thrown away:
 * its errors come now. */
static int
query_columns(struct stmt *st, json_t *select, struct sql_relation *rel)
{
    struct spate_env *env = env_new(st->s->conf, NULL);
    struct sql_plan_context pc = { &st->s->catalog, env, st->script, st->offset, NULL, 0,
                                   st->err,         NULL };
    int rc = sql_plan_select(&pc, select, SQL_FORMAT_ROW, NULL, rel);

    env_free(env);
    if (rc != 0)
        sql_relation_release(rel);
    return rc;
}

static int run_query(struct stmt *st, json_t *node, json_t *q, bool explain);

/* CREATE TABLE name WITH (...) AS SELECT: the table of the query's columns,
 * then INSERT INTO it (Flink's CREATE TABLE AS SELECT). */
static int
create_table_as(struct stmt *st, json_t *node, json_t *cs)
{
    json_t *into = json_object_get(cs, "into"), *q = json_object_get(cs, "query");
    const char *name = json_string_value(json_object_get(json_object_get(into, "rel"), "relname"));
    struct sql_relation rel = { 0 };
    struct sql_table *t;
    json_t *insert;
    int rc;

    if (name == NULL || json_object_get(q, "SelectStmt") == NULL)
        return stmt_error(st, node, SPATE_ENOTSUP, "not supported: this CREATE TABLE AS");
    if (json_array_size(json_object_get(into, "colNames")) > 0)
        return stmt_error(st, node, SPATE_ENOTSUP,
                          "not supported: a column list in CREATE TABLE AS");
    if (sql_catalog_find(&st->s->catalog, name) != NULL)
        return stmt_error(st, node, SPATE_EEXIST, "table or view '%s' exists already", name);
    if ((rc = query_columns(st, json_object_get(q, "SelectStmt"), &rel)) != 0)
        return rc;
    t = xcalloc(1, sizeof *t);
    t->name = xstrdup(name);
    t->rowtime = -1;
    t->cols = rel.cols;
    t->ncols = rel.ncols;
    rel.cols = NULL;
    rel.ncols = 0;
    sql_relation_release(&rel);
    if ((rc = read_options(st, json_object_get(into, "options"), t)) != 0 ||
        (rc = sql_connector_check(t, st->err)) != 0 ||
        (rc = sql_catalog_add(&st->s->catalog, t, st->err)) != 0) {
        if (rc != SPATE_EEXIST)
            sql_table_free(t);
        return rc;
    }
    insert =
        json_pack("{s:{s:{s:s}, s:O}}", "InsertStmt", "relation", "relname", name, "selectStmt", q);
    rc = run_query(st, node, insert, false);
    json_decref(insert);
    return rc;
}

static int
create_view(struct stmt *st, json_t *node, json_t *vs)
{
    const char *name = json_string_value(json_object_get(json_object_get(vs, "view"), "relname"));
    json_t *q = json_object_get(vs, "query");
    struct sql_table *t;
    struct sql_relation rel = { 0 };
    int rc;

    if (name == NULL || json_object_get(q, "SelectStmt") == NULL)
        return stmt_error(st, node, SPATE_ENOTSUP, "not supported: this view");
    if (json_array_size(json_object_get(vs, "aliases")) > 0)
        return stmt_error(st, node, SPATE_ENOTSUP, "not supported: a view's column list");
    if (sql_catalog_find(&st->s->catalog, name) != NULL &&
        !json_is_true(json_object_get(vs, "replace")))
        return stmt_error(st, node, SPATE_EEXIST, "table or view '%s' exists already", name);
    if ((rc = query_columns(st, json_object_get(q, "SelectStmt"), &rel)) != 0)
        return rc;
    sql_catalog_drop(&st->s->catalog, name);
    t = xcalloc(1, sizeof *t);
    t->name = xstrdup(name);
    t->rowtime = -1;
    t->view = true;
    t->temporary = true;
    t->cols = rel.cols;
    t->ncols = rel.ncols;
    rel.cols = NULL;
    rel.ncols = 0;
    sql_relation_release(&rel);
    t->query = json_incref(q);
    t->script = xstrdup(st->script);
    t->offset = st->offset;
    fprintf(st->s->out, "[INFO] Execute statement succeeded.\n");
    return sql_catalog_add(&st->s->catalog, t, st->err);
}

/* DROP FUNCTION [IF EXISTS] f[(types)], ...: by name (one function a name). */
static int
drop_functions(struct stmt *st, json_t *node, json_t *ds)
{
    json_t *objs = json_object_get(ds, "objects");

    for (size_t i = 0; i < json_array_size(objs); i++) {
        json_t *names =
            json_object_get(json_object_get(json_array_get(objs, i), "ObjectWithArgs"), "objname");
        const char *name = json_string_value(json_object_get(
            json_object_get(json_array_get(names, json_array_size(names) - 1), "String"), "sval"));

        if ((name == NULL || sql_catalog_drop_function(&st->s->catalog, name) != 0) &&
            !json_is_true(json_object_get(ds, "missing_ok")))
            return stmt_error(st, node, SPATE_ENOENT, "function '%s' does not exist",
                              name ? name : "");
    }
    fprintf(st->s->out, "[INFO] Execute statement succeeded.\n");
    return 0;
}

static int
drop(struct stmt *st, json_t *node, json_t *ds)
{
    const char *type = json_string_value(json_object_get(ds, "removeType"));
    json_t *objs = json_object_get(ds, "objects");
    bool view = type && strcmp(type, "OBJECT_VIEW") == 0;

    if (type && strcmp(type, "OBJECT_FUNCTION") == 0)
        return drop_functions(st, node, ds);
    if (!view && !(type && strcmp(type, "OBJECT_TABLE") == 0))
        return stmt_error(st, node, SPATE_ENOTSUP, "not supported: DROP %s", type ? type + 7 : "?");
    for (size_t i = 0; i < json_array_size(objs); i++) {
        json_t *items = json_object_get(json_object_get(json_array_get(objs, i), "List"), "items");
        const char *name = json_string_value(json_object_get(
            json_object_get(json_array_get(items, json_array_size(items) - 1), "String"), "sval"));
        struct sql_table *t = name ? sql_catalog_find(&st->s->catalog, name) : NULL;

        if (t == NULL) {
            if (json_is_true(json_object_get(ds, "missing_ok")))
                continue;
            return stmt_error(st, node, SPATE_ENOENT, "%s '%s' does not exist",
                              view ? "view" : "table", name ? name : "");
        }
        if (t->view != view)
            return stmt_error(st, node, SPATE_EINVAL, "'%s' is a %s: DROP %s", name,
                              t->view ? "view" : "table", t->view ? "VIEW" : "TABLE");
        sql_catalog_drop(&st->s->catalog, name);
    }
    fprintf(st->s->out, "[INFO] Execute statement succeeded.\n");
    return 0;
}

static void
show_tables(struct stmt *st)
{
    FILE *o = st->s->out;
    size_t w = strlen("table name");

    for (int i = 0; i < st->s->catalog.n; i++)
        w = MAX(w, strlen(st->s->catalog.tables[i]->name));
    if (st->s->catalog.n == 0) {
        fprintf(o, "Empty set\n");
        return;
    }
    fprintf(o, "+-%.*s-+\n| %-*s |\n+-%.*s-+\n", (int)w,
            "--------------------------------------------------------------------------------",
            (int)w, "table name", (int)w,
            "--------------------------------------------------------------------------------");
    for (int i = 0; i < st->s->catalog.n; i++)
        fprintf(o, "| %-*s |\n", (int)w, st->s->catalog.tables[i]->name);
    fprintf(o, "+-%.*s-+\n%d row%s in set\n", (int)w,
            "--------------------------------------------------------------------------------",
            st->s->catalog.n, st->s->catalog.n == 1 ? "" : "s");
}

static int
describe(struct stmt *st, const char *name)
{
    struct sql_table *t = sql_catalog_find(&st->s->catalog, name);
    FILE *o = st->s->out;

    if (t == NULL) {
        const char *near = sql_catalog_nearest(&st->s->catalog, name);

        if (near)
            return sql_error_at(st->err, SPATE_EINVAL, st->script, st->offset,
                                "table '%s' does not exist; did you mean '%s'?", name, near);
        return sql_error_at(st->err, SPATE_EINVAL, st->script, st->offset,
                            "table '%s' does not exist", name);
    }
    fprintf(o, "%-20s %-16s %-5s %s\n", "name", "type", "null", "watermark");
    for (int i = 0; i < t->ncols; i++) {
        char b[32], wm[64] = "";

        if (i == t->rowtime)
            snprintf(wm, sizeof wm, "%s - %lld ms", t->cols[i].name,
                     (long long)t->watermark_bound_ms);
        fprintf(o, "%-20s %-16s %-5s %s\n", t->cols[i].name, sql_type_name(&t->cols[i].type, b),
                t->cols[i].type.nullable ? "TRUE" : "FALSE", wm);
    }
    fprintf(o, "%d row%s in set\n", t->ncols, t->ncols == 1 ? "" : "s");
    return 0;
}

/* SET 'key' = 'value': the key must be one spate knows and the value one it
 * reads; the configuration is checked whole before the change stays. */
static int
set(struct stmt *st, const char *key, const char *value)
{
    struct config *next;
    spate_error cerr = { 0 };

    if (key == NULL) {
        for (size_t i = 0; i < config_count(st->s->conf); i++) {
            const char *k, *v, *origin;

            config_entry(st->s->conf, i, &k, &v, &origin);
            if (origin && strcmp(origin, "SET") == 0)
                fprintf(st->s->out, "'%s' = '%s'\n", k, v);
        }
        return 0;
    }
    next = config_copy(st->s->conf);
    config_set(next, key, value, "SET");
    if (config_validate(next, &cerr) != 0) {
        config_free(next);
        return sql_error_at(st->err, SPATE_ECONFIG, st->script, st->offset, "SET '%s': %s", key,
                            cerr.message);
    }
    config_free(st->s->conf);
    st->s->conf = next;
    fprintf(st->s->out, "[INFO] Execute statement succeeded.\n");
    return 0;
}

/* RESET: the client's configuration again, with every SET but key's (or
 * none). */
static void
reset(struct sql_session *s, const char *key)
{
    struct config *next = s->base ? config_copy(s->base) : config_new();

    for (size_t i = 0; key != NULL && i < config_count(s->conf); i++) {
        const char *k, *v, *origin;

        config_entry(s->conf, i, &k, &v, &origin);
        if (origin && strcmp(origin, "SET") == 0 && strcmp(k, key) != 0)
            config_set(next, k, v, "SET");
    }
    config_free(s->conf);
    s->conf = next;
}

/* INSERT, SELECT and EXPLAIN: planned into a new environment; run unless
 * explained. */
/* An INSERT inside a statement set: planned into the set's environment,
 * run at END with the others. */
static int
gather_insert(struct stmt *st, json_t *node, json_t *q)
{
    struct sql_plan_context pc = {
        &st->s->catalog, st->s->set_env, st->script, st->offset, NULL, 0, st->err, NULL
    };
    json_t *ins = json_object_get(q, "InsertStmt");
    char *name = NULL;
    int rc;

    if (ins == NULL)
        return stmt_error(st, node, SPATE_EINVAL,
                          "a statement set holds INSERT statements only (END runs it)");
    if ((rc = sql_plan_insert(&pc, ins, &name)) != 0)
        return rc;
    if (st->s->set_name == NULL) {
        st->s->set_name = name;
    } else {
        char *both = xasprintf("%s,%s", st->s->set_name, name + strlen("insert-into_"));

        free(st->s->set_name);
        free(name);
        st->s->set_name = both;
    }
    return 0;
}

static int
run_query(struct stmt *st, json_t *node, json_t *q, bool explain)
{
    struct spate_env *env;

    char *text = NULL, *job_name = NULL;
    size_t len = 0;
    FILE *ex = NULL;
    struct sql_plan_context pc = { &st->s->catalog, NULL, st->script, st->offset, NULL, 0,
                                   st->err,         NULL };
    json_t *ins = json_object_get(q, "InsertStmt"), *sel = json_object_get(q, "SelectStmt");
    int rc;

    if (st->s->set_env != NULL && !explain)
        return gather_insert(st, node, q);
    env = env_new(st->s->conf, explain ? NULL : &st->s->executor);
    pc.env = env;
    if (explain)
        pc.explain = ex = open_memstream(&text, &len);
    if (ins != NULL) {
        rc = sql_plan_insert(&pc, ins, &job_name);
    } else if (sel != NULL && st->s->remote && !explain) {
        rc = stmt_error(st, node, SPATE_ENOTSUP,
                        "not supported: a SELECT's rows from a cluster (-m): they would print "
                        "on its TaskManagers; INSERT INTO a table, or run with --local");
    } else if (sel != NULL) {
        rc = sql_plan_collect(&pc, sel);
        job_name = xstrdup("collect");
    } else {
        rc = stmt_error(st, node, SPATE_ENOTSUP, "not supported: EXPLAIN of this statement");
    }
    if (ex != NULL)
        fclose(ex);
    if (rc == 0 && explain) {
        struct job_graph *jg = NULL;

        if ((rc = job_graph_build(env, job_name, &jg, st->err)) == 0) {
            json_t *plan = job_graph_plan_json(jg);
            char *j = json_dumps(plan, JSON_INDENT(2) | JSON_PRESERVE_ORDER);

            fprintf(st->s->out, "== Logical Plan ==\n%s\n== JobGraph ==\n%s\n", text, j);
            free(j);
            json_decref(plan);
            job_graph_free(jg);
        }
    } else if (rc == 0) {
        if (st->s->executor.execute == NULL)
            rc = spate_error_set(st->err, SPATE_ESTATE, "this session plans only: it runs no jobs");
        else if ((rc = spate_execute(env, job_name)) == SPATE_ECANCELED && sel != NULL)
            /* Ctrl-C ends a SELECT's rows, as in Flink's SQL client. */
            rc = fprintf(st->s->out, "[INFO] Query cancelled.\n") < 0 ? SPATE_EIO : 0;
        else if (rc != 0)
            spate_error_set(st->err, rc, "%s", spate_env_error(env)->message);
    }
    free(text);
    free(job_name);
    env_free(env);
    return rc;
}

static int
run_pg(struct stmt *st, json_t *tree)
{
    const char *kind = NULL;
    json_t *v;

    json_object_foreach(tree, kind, v)
    {
        break;
    }
    if (kind == NULL)
        return stmt_error(st, tree, SPATE_EINVAL, "an empty statement");
    if (!strcmp(kind, "CreateStmt"))
        return create_table(st, tree, v);
    if (!strcmp(kind, "CreateTableAsStmt"))
        return create_table_as(st, tree, v);
    if (!strcmp(kind, "ViewStmt"))
        return create_view(st, tree, v);
    if (!strcmp(kind, "DropStmt"))
        return drop(st, tree, v);
    if (!strcmp(kind, "CreateFunctionStmt")) {
        int rc = sql_udf_create(&st->s->catalog, v, st->script, st->offset, st->err);

        if (rc == 0)
            fprintf(st->s->out, "[INFO] Execute statement succeeded.\n");
        return rc;
    }
    if (!strcmp(kind, "InsertStmt") || !strcmp(kind, "SelectStmt"))
        return run_query(st, tree, tree, false);
    if (!strcmp(kind, "ExplainStmt"))
        return run_query(st, tree, json_object_get(v, "query"), true);
    if (!strcmp(kind, "VariableShowStmt")) {
        const char *what = json_string_value(json_object_get(v, "name"));

        if (what && (!strcasecmp(what, "tables") || !strcasecmp(what, "views"))) {
            show_tables(st);
            return 0;
        }
        return stmt_error(st, tree, SPATE_ENOTSUP, "not supported: SHOW %s", what ? what : "");
    }
    if (!strcmp(kind, "VariableSetStmt")) {
        /* SET name = value, PostgreSQL's form of SET 'name' = 'value' */
        const char *name = json_string_value(json_object_get(v, "name"));
        json_t *k = json_object_get(json_array_get(json_object_get(v, "args"), 0), "A_Const");
        char *val = const_text(k);
        int rc;

        if (name == NULL || val == NULL || json_array_size(json_object_get(v, "args")) != 1) {
            free(val);
            return stmt_error(st, tree, SPATE_ENOTSUP,
                              "not supported: this SET (write SET 'key' = 'value')");
        }
        rc = set(st, name, val);
        free(val);
        return rc;
    }
    return stmt_error(st, tree, SPATE_ENOTSUP, "not supported: %s",
                      !strcmp(kind, "UpdateStmt")   ? "UPDATE"
                      : !strcmp(kind, "DeleteStmt") ? "DELETE"
                                                    : kind);
}

/* END: the statement set's INSERTs as one job. */
static int
run_set(struct sql_session *s, const char *script, size_t offset, spate_error *err)
{
    struct spate_env *env = s->set_env;
    char *name = s->set_name;
    int rc;

    s->set_env = NULL;
    s->set_name = NULL;
    if (env == NULL)
        return sql_error_at(err, SPATE_EINVAL, script, offset, "END without BEGIN STATEMENT SET");
    if (name == NULL)
        rc = sql_error_at(err, SPATE_EINVAL, script, offset,
                          "an empty statement set: no INSERT to run");
    else if (s->executor.execute == NULL)
        rc = spate_error_set(err, SPATE_ESTATE, "this session plans only: it runs no jobs");
    else if ((rc = spate_execute(env, name)) != 0)
        spate_error_set(err, rc, "%s", spate_env_error(env)->message);
    env_free(env);
    free(name);
    return rc;
}

int
sql_session_run(struct sql_session *s, const char *script, spate_error *err)
{
    struct sql_stmt_text *stmts;
    int n, rc = 0;

    sql_split(script, &stmts, &n);
    for (int i = 0; i < n && rc == 0; i++) {
        struct sql_parsed p;
        struct stmt st = { s, script, stmts[i].offset, err, NULL };

        if ((rc = sql_parse(script, &stmts[i], &p, err)) != 0)
            break;
        if (s->set_env != NULL && p.kind != SQL_STMT_SET_END &&
            !(p.kind == SQL_STMT_PG && json_object_get(p.tree, "InsertStmt") != NULL)) {
            rc = sql_error_at(err, SPATE_EINVAL, script, stmts[i].offset,
                              "a statement set holds INSERT statements only (END runs it)");
            sql_parsed_release(&p);
            break;
        }
        st.parsed = &p;
        switch (p.kind) {
        case SQL_STMT_PG:
            rc = run_pg(&st, p.tree);
            break;
        case SQL_STMT_SET:
            rc = set(&st, p.key, p.value);
            break;
        case SQL_STMT_RESET:
            reset(s, p.key);
            fprintf(s->out, "[INFO] Execute statement succeeded.\n");
            rc = 0;
            break;
        case SQL_STMT_DESCRIBE:
            rc = describe(&st, p.key);
            break;
        case SQL_STMT_SET_BEGIN:
            if (s->set_env != NULL) {
                rc = sql_error_at(err, SPATE_EINVAL, script, stmts[i].offset,
                                  "a statement set is open already (END runs it)");
                break;
            }
            s->set_env = env_new(s->conf, &s->executor);
            if (p.tree != NULL) {
                st.offset = p.offset;
                rc = gather_insert(&st, p.tree, p.tree);
            }
            break;
        case SQL_STMT_SET_END:
            rc = run_set(s, script, stmts[i].offset, err);
            break;
        }
        sql_parsed_release(&p);
    }
    free(stmts);
    fflush(s->out);
    return rc;
}

bool
sql_session_in_set(const struct sql_session *s)
{
    return s->set_env != NULL;
}
