/* Scalar functions written in C (CREATE FUNCTION ... LANGUAGE C; the
 * public side is include/spate/sql_udf.h): the DDL that puts one in the
 * catalog after loading its library and checking its description against
 * the declared types, and the binding of a program's calls where it runs
 * (the TaskManager's Calc), checked again against the registers' types. A
 * call is the instruction SQLOP_UDF (sql_program.h); its function comes
 * from the library by "symbol@library". */
#ifndef SPATE_SQL_SQL_UDF_H
#define SPATE_SQL_SQL_UDF_H

#include <jansson.h>
#include <spate/spate.h>
#include <spate/sql_udf.h>

#include "sql/sql_catalog.h"
#include "sql/sql_program.h"

#define SQL_UDF_MAX_ARGS SPATE_SQL_UDF_MAX_ARGS

/* CREATE FUNCTION name(types) RETURNS type AS 'library', 'symbol'
 * LANGUAGE C [STRICT]: the function into cat, its library loaded and
 * checked. stmt is the CreateFunctionStmt of the statement at offset in
 * script (for errors). */
int sql_udf_create(struct sql_catalog *cat, json_t *stmt, const char *script, size_t offset,
                   spate_error *err);

/* A bound call: the library's handle and its function. */
struct sql_udf_binding {
    void *handle;
    const spate_sql_function *fn;
};

/* Loads the function of each of e's UDF instructions and checks its types
 * against the instruction's registers; an error names the function, the
 * library and what is wrong. */
int sql_udf_bind(struct sql_eval *e, spate_error *err);
void sql_udf_unbind(struct sql_eval *e);
/* Runs the call at instruction pc into d (NULL when not bound). */
void sql_udf_call(struct sql_eval *e, int pc, struct sql_value *d);

#endif
