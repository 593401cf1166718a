/* The binder and compiler of SQL expressions: PostgreSQL's parse tree
 * (JSON) of an expression, read against the columns in scope, typed with
 * SQL's rules (numeric promotion, NULL, string literals read as the type
 * they meet) and compiled straight into a program's registers and
 * instructions (sql_program.h). Errors point at the expression's place in
 * the script. Client thread (the planner's). */
#ifndef SPATE_SQL_SQL_EXPR_H
#define SPATE_SQL_SQL_EXPR_H

#include <stdbool.h>

#include <jansson.h>
#include <spate/spate.h>

#include "sql/sql_program.h"

/* The columns an expression may name: the input registers 0..ncols-1. */
struct sql_scope {
    const char *table; /* the table's name or alias; NULL: none */
    const struct sql_column *cols;
    int ncols;
};

struct sql_catalog;

/* A program being built. */
struct sql_compiler {
    struct sql_program *p;
    size_t regs_cap, code_cap;
    struct sql_insn *consts; /* put in front when the program is finished */
    int nconsts;
    size_t consts_cap;
    const struct sql_scope *scope;
    /* A join's scope: the table (or alias) of each of its columns, NULL for
     * one of none; NULL (as sql_compiler_init leaves it): every column is
     * the scope's table's. */
    char *const *qualifiers;
    const struct sql_catalog *catalog; /* its functions (CREATE FUNCTION); NULL: none */
    const char *script;                /* for errors: the whole script */
    size_t offset;                     /* where the statement starts in it */
    spate_error *err;
};

/* A compiled expression: its register and type. */
struct sql_operand {
    int reg;
    struct sql_type type;
    bool string_literal; /* 'text' not cast: it may be read as another type */
    const char *literal;
    size_t literal_len;
    int location;
};

/* Starts p with the scope's columns as its input registers. */
void sql_compiler_init(struct sql_compiler *c, struct sql_program *p, const struct sql_scope *scope,
                       const char *script, size_t offset, spate_error *err);
/* Compiles an expression; out->reg holds its value per record. */
int sql_compile(struct sql_compiler *c, json_t *node, struct sql_operand *out);
/* Converts op to type t (CAST's rules); "cannot cast" names both types. */
int sql_compile_cast(struct sql_compiler *c, struct sql_operand *op, const struct sql_type *t,
                     int location);
/* A register of type t that no instruction writes (the operator fills it). */
int sql_compile_temp(struct sql_compiler *c, const struct sql_type *t);
/* Puts the constants in front and fixes the jumps: the program is done. */
void sql_compiler_finish(struct sql_compiler *c);

/* A PostgreSQL TypeName node → a SQL type; "not supported: ..." else. */
int sql_type_from_pg(struct sql_compiler *c, json_t *type_name, struct sql_type *out);

/* The name among names nearest to name (edit distance at most a third of
 * its length, at least 2), or NULL. */
const char *sql_nearest(const char *name, const char *const *names, int n);

/* A node's "location" (from the statement's start), or -1. */
int sql_location(json_t *node);
/* An error at a node of the statement that starts at offset in script
 * (the node's location, else the statement's start). */
int sql_error_in(spate_error *err, const char *script, size_t offset, json_t *node, int code,
                 const char *fmt, ...) __attribute__((format(printf, 6, 7)));
#define sql_error_node(c, node, code, ...) \
    sql_error_in((c)->err, (c)->script, (c)->offset, node, code, __VA_ARGS__)

#endif
