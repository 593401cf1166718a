/* Scalar functions written in C (sql_udf.h). */
#include <dlfcn.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "sql/sql_expr.h"
#include "sql/sql_udf.h"

/* spate_sql_value is sql_value and spate_sql_type is sql_type_id: a call
 * reads its arguments straight from the registers. */
_Static_assert(sizeof(spate_sql_value) == sizeof(struct sql_value), "spate_sql_value");
_Static_assert(offsetof(spate_sql_value, s.len) == offsetof(struct sql_value, s.len),
               "spate_sql_value");
_Static_assert(offsetof(spate_sql_value, null) == offsetof(struct sql_value, null),
               "spate_sql_value");
_Static_assert((int)SPATE_SQL_BOOLEAN == SQL_BOOLEAN && (int)SPATE_SQL_DECIMAL == SQL_DECIMAL &&
                   (int)SPATE_SQL_INTERVAL == SQL_INTERVAL,
               "spate_sql_type");

static const char *
type_text(int id)
{
    static const char *const names[] = {
        [SQL_BOOLEAN] = "BOOLEAN",   [SQL_INT] = "INT",
        [SQL_BIGINT] = "BIGINT",     [SQL_DOUBLE] = "DOUBLE",
        [SQL_DECIMAL] = "DECIMAL",   [SQL_VARCHAR] = "VARCHAR",
        [SQL_DATE] = "DATE",         [SQL_TIMESTAMP] = "TIMESTAMP",
        [SQL_INTERVAL] = "INTERVAL",
    };

    return id > 0 && id < SQL_TYPE_COUNT ? names[id] : "?";
}

/* "(VARCHAR, VARCHAR) RETURNS BIGINT" into buf. */
static const char *
signature_text(const int *args, int nargs, int result, char *buf, size_t cap)
{
    size_t o = (size_t)snprintf(buf, cap, "(");

    for (int i = 0; i < nargs && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%s", i ? ", " : "", type_text(args[i]));
    if (o < cap)
        snprintf(buf + o, cap - o, ") RETURNS %s", type_text(result));
    return buf;
}

/* The library's function under symbol, checked to be a description of
 * this version with types spate has, then against the types wanted. */
static int
load(const char *name, const char *library, const char *symbol, const int *args, int nargs,
     int result, void **handle, const spate_sql_function **out, spate_error *err)
{
    const spate_sql_function *f;
    int have[SPATE_SQL_UDF_MAX_ARGS];
    char b1[160], b2[160];
    const char *why;

    dlerror();
    if ((*handle = dlopen(library, RTLD_NOW | RTLD_LOCAL)) == NULL) {
        why = dlerror();
        return spate_error_set(err, SPATE_ENOENT, "function %s(): cannot load its library '%s': %s",
                               name, library, why ? why : "?");
    }
    f = dlsym(*handle, symbol);
    if (f == NULL) {
        dlclose(*handle);
        *handle = NULL;
        return spate_error_set(err, SPATE_ENOENT,
                               "function %s(): library '%s' has no symbol '%s' (a "
                               "spate_sql_function, include/spate/sql_udf.h)",
                               name, library, symbol);
    }
    if (f->version != SPATE_SQL_UDF_VERSION || f->nargs > SPATE_SQL_UDF_MAX_ARGS || f->fn == NULL ||
        f->result < SPATE_SQL_BOOLEAN || f->result > SPATE_SQL_INTERVAL)
        why = f->version != SPATE_SQL_UDF_VERSION ? "of another version of spate_sql_function"
                                                  : "no valid spate_sql_function";
    else
        why = NULL;
    for (int i = 0; why == NULL && i < f->nargs; i++)
        if (f->args[i] < SPATE_SQL_BOOLEAN || f->args[i] > SPATE_SQL_INTERVAL)
            why = "no valid spate_sql_function (an argument of an unknown type)";
    if (why != NULL) {
        dlclose(*handle);
        *handle = NULL;
        return spate_error_set(err, SPATE_EINVAL, "function %s(): symbol '%s' of '%s' is %s", name,
                               symbol, library, why);
    }
    for (int i = 0; i < f->nargs; i++)
        have[i] = f->args[i];
    if (f->nargs != nargs || f->result != result ||
        memcmp(have, args, sizeof *args * (size_t)nargs)) {
        /* The text before dlclose: f is the library's memory. */
        int rc = spate_error_set(err, SPATE_EINVAL,
                                 "function %s(): bad signature: '%s' of '%s' is %s, not %s as "
                                 "declared",
                                 name, symbol, library,
                                 signature_text(have, f->nargs, f->result, b1, sizeof b1),
                                 signature_text(args, nargs, result, b2, sizeof b2));

        dlclose(*handle);
        *handle = NULL;
        return rc;
    }
    *out = f;
    return 0;
}

/* ---- CREATE FUNCTION ---- */

static const char *
string_of(json_t *node)
{
    return json_string_value(json_object_get(json_object_get(node, "String"), "sval"));
}

/* A declared type (sql_type_from_pg, through a compiler of nothing). */
static int
type_of(json_t *type_name, const char *script, size_t offset, struct sql_type *t, spate_error *err)
{
    struct sql_program none = { 0 };
    struct sql_scope scope = { NULL, NULL, 0 };
    struct sql_compiler c;
    int rc;

    sql_compiler_init(&c, &none, &scope, script, offset, err);
    rc = sql_type_from_pg(&c, type_name, t);
    free(c.consts);
    free(none.regs);
    t->nullable = true;
    return rc;
}

int
sql_udf_create(struct sql_catalog *cat, json_t *stmt, const char *script, size_t offset,
               spate_error *err)
{
    json_t *names = json_object_get(stmt, "funcname"),
           *params = json_object_get(stmt, "parameters");
    json_t *opts = json_object_get(stmt, "options"), *as = NULL, *node;
    const char *name = string_of(json_array_get(names, json_array_size(names) - 1));
    const char *language = NULL, *library, *symbol;
    struct sql_function *f;
    int args[SQL_UDF_MAX_ARGS], rc = 0;
    const spate_sql_function *fn;
    char path[PATH_MAX];
    void *handle;
    size_t i;

    if (name == NULL || json_is_true(json_object_get(stmt, "is_procedure")))
        return sql_error_in(err, script, offset, NULL, SPATE_ENOTSUP,
                            "not supported: CREATE PROCEDURE");
    if (json_is_true(json_object_get(stmt, "replace")))
        return sql_error_in(err, script, offset, NULL, SPATE_ENOTSUP,
                            "not supported: CREATE OR REPLACE FUNCTION (DROP FUNCTION first)");
    json_array_foreach(opts, i, node)
    {
        json_t *d = json_object_get(node, "DefElem");
        const char *opt = json_string_value(json_object_get(d, "defname"));

        if (opt && !strcmp(opt, "as"))
            as = json_object_get(json_object_get(json_object_get(d, "arg"), "List"), "items");
        else if (opt && !strcmp(opt, "language"))
            language = string_of(json_object_get(d, "arg"));
        else if (opt && strcmp(opt, "strict") && strcmp(opt, "volatility"))
            return sql_error_in(err, script, offset, d, SPATE_ENOTSUP,
                                "not supported: %s in CREATE FUNCTION", opt);
    }
    if (json_object_get(stmt, "sql_body") != NULL)
        return sql_error_in(err, script, offset, NULL, SPATE_ENOTSUP,
                            "not supported: a function in SQL (BEGIN ATOMIC ... END)");
    if (language == NULL || strcasecmp(language, "c") != 0)
        return sql_error_in(err, script, offset, NULL, SPATE_ENOTSUP,
                            "not supported: functions in LANGUAGE %s (spate's are in C: "
                            "CREATE FUNCTION %s(types) RETURNS type AS 'library.so', 'symbol' "
                            "LANGUAGE C)",
                            language ? language : "SQL", name);
    library = string_of(json_array_get(as, 0));
    symbol = string_of(json_array_get(as, 1));
    if (library == NULL || symbol == NULL || json_array_size(as) != 2)
        return sql_error_in(err, script, offset, NULL, SPATE_EINVAL,
                            "function %s(): AS names its library and its symbol: AS "
                            "'library.so', 'symbol'",
                            name);
    if (json_object_get(stmt, "returnType") == NULL)
        return sql_error_in(err, script, offset, NULL, SPATE_EINVAL,
                            "function %s(): RETURNS names its result's type", name);
    if (json_array_size(params) > SQL_UDF_MAX_ARGS)
        return sql_error_in(err, script, offset, NULL, SPATE_ENOTSUP,
                            "not supported: a function of more than %d arguments",
                            SQL_UDF_MAX_ARGS);
    f = xcalloc(1, sizeof *f);
    f->name = xstrdup(name);
    json_array_foreach(params, i, node)
    {
        json_t *fp = json_object_get(node, "FunctionParameter");
        const char *mode = json_string_value(json_object_get(fp, "mode"));

        if (mode && strcmp(mode, "FUNC_PARAM_DEFAULT") && strcmp(mode, "FUNC_PARAM_IN")) {
            rc = sql_error_in(err, script, offset, node, SPATE_ENOTSUP,
                              "not supported: OUT, INOUT and VARIADIC parameters");
            break;
        }
        if ((rc = type_of(json_object_get(fp, "argType"), script, offset, &f->args[i], err)) != 0)
            break;
        args[i] = f->args[i].id;
        f->nargs++;
    }
    if (rc == 0)
        rc = type_of(json_object_get(stmt, "returnType"), script, offset, &f->result, err);
    if (rc != 0) {
        sql_function_free(f);
        return rc;
    }
    /* The TaskManagers load the library from the same path. */
    f->library = xstrdup(strchr(library, '/') && realpath(library, path) ? path : library);
    f->symbol = xstrdup(symbol);
    if ((rc = load(name, f->library, symbol, args, f->nargs, f->result.id, &handle, &fn, err)) ==
        0) {
        dlclose(handle);
        return sql_catalog_add_function(cat, f, err);
    }
    sql_function_free(f);
    {
        char why[SPATE_ERROR_MESSAGE_MAX];

        snprintf(why, sizeof why, "%s", err ? err->message : "");
        return sql_error_in(err, script, offset, NULL, rc, "%s", why);
    }
}

/* ---- calls ---- */

static char *
call_alloc(spate_sql_call *call, size_t n)
{
    return sql_eval_alloc(call->impl, n);
}

int
sql_udf_bind(struct sql_eval *e, spate_error *err)
{
    const struct sql_program *p = e->p;

    for (int pc = 0; pc < p->ncode; pc++) {
        const struct sql_insn *in = &p->code[pc];
        char symbol[256];
        const char *at;
        int args[SQL_UDF_MAX_ARGS], rc;

        if (in->op != SQLOP_UDF)
            continue;
        at = strchr(in->sval, '@'); /* sql_program_decode saw it */
        snprintf(symbol, sizeof symbol, "%.*s", (int)(at - in->sval), in->sval);
        for (int i = 0; i < in->imm; i++)
            args[i] = p->regs[in->a + i].id;
        if (e->udf == NULL)
            e->udf = xcalloc((size_t)p->ncode, sizeof *e->udf);
        if ((rc = load(symbol, at + 1, symbol, args, (int)in->imm, p->regs[in->dst].id,
                       &e->udf[pc].handle, &e->udf[pc].fn, err)) != 0) {
            sql_udf_unbind(e);
            return rc;
        }
    }
    return 0;
}

void
sql_udf_unbind(struct sql_eval *e)
{
    for (int pc = 0; e->udf != NULL && pc < e->p->ncode; pc++)
        if (e->udf[pc].handle != NULL)
            dlclose(e->udf[pc].handle);
    free(e->udf);
    e->udf = NULL;
}

void
sql_udf_call(struct sql_eval *e, int pc, struct sql_value *d)
{
    const struct sql_insn *in = &e->p->code[pc];
    const spate_sql_function *f = e->udf != NULL ? e->udf[pc].fn : NULL;
    const struct sql_value *args = &e->r[in->a];
    spate_sql_call call = { call_alloc, e };
    spate_sql_value r = { .null = true };

    d->null = true;
    if (f == NULL)
        return;
    for (int i = 0; f->strict && i < in->imm; i++)
        if (args[i].null)
            return;
    f->fn(&call, (const spate_sql_value *)args, (int)in->imm, &r);
    memcpy(d, &r, sizeof *d);
    if (!d->null && e->p->regs[in->dst].id == SQL_BOOLEAN)
        d->i = d->i != 0;
}
