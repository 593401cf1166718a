/* The session's catalog: tables (columns and their connector's WITH
 * options, by Flink's option names) and views (their query, planned where
 * they are used), found by name, with the nearest name suggested when one
 * is not. Belongs to its session (sql_session.h): one thread. */
#ifndef SPATE_SQL_SQL_CATALOG_H
#define SPATE_SQL_SQL_CATALOG_H

#include <stdbool.h>

#include <jansson.h>
#include <spate/spate.h>

#include "sql/sql_program.h"

struct sql_option {
    char *key, *value;
};

struct sql_table {
    char *name;
    bool view;
    bool temporary;
    struct sql_column *cols;
    int ncols;
    /* Event time (WATERMARK FOR rowtime AS rowtime - INTERVAL ...): the
     * TIMESTAMP(3) column records are stamped with, -1: none, and the
     * bounded out-of-orderness of the watermarks. */
    int rowtime;
    int64_t watermark_bound_ms;
    /* PRIMARY KEY (...) NOT ENFORCED: the key's columns, in its order
     * (what an upsert sink keys its rows by); npk 0: none. */
    int *pk;
    int npk;
    /* PARTITIONED BY (...): the columns a filesystem sink's directories
     * are named by, in their order; npartition 0: none. */
    int *partition;
    int npartition;
    struct sql_option *options; /* tables: WITH (...) */
    int noptions;
    /* views: the SELECT's parse tree and the script it was read from
     * (locations in the tree are from offset there) */
    json_t *query;
    char *script;
    size_t offset;
};

/* A scalar function in C (CREATE FUNCTION ... LANGUAGE C, sql_udf.h): the
 * library (an absolute path) and symbol its code is found by, its declared
 * argument and result types. */
struct sql_function {
    char *name;
    char *library, *symbol;
    struct sql_type args[8];
    int nargs;
    struct sql_type result;
};

struct sql_catalog {
    struct sql_table **tables;
    int n;
    size_t cap;
    struct sql_function **functions;
    int nfunctions;
    size_t functions_cap;
};

void sql_catalog_init(struct sql_catalog *c);
void sql_catalog_release(struct sql_catalog *c);
/* Takes t; SPATE_EEXIST when the name is taken. */
int sql_catalog_add(struct sql_catalog *c, struct sql_table *t, spate_error *err);
struct sql_table *sql_catalog_find(const struct sql_catalog *c, const char *name);
/* The name nearest to name, or NULL. */
const char *sql_catalog_nearest(const struct sql_catalog *c, const char *name);
/* Removes and frees the table; SPATE_ENOENT when there is none. */
int sql_catalog_drop(struct sql_catalog *c, const char *name);
void sql_table_free(struct sql_table *t);
/* Takes f; SPATE_EEXIST when the name is taken. */
int sql_catalog_add_function(struct sql_catalog *c, struct sql_function *f, spate_error *err);
const struct sql_function *sql_catalog_function(const struct sql_catalog *c, const char *name);
/* Removes and frees the function; SPATE_ENOENT when there is none. */
int sql_catalog_drop_function(struct sql_catalog *c, const char *name);
void sql_function_free(struct sql_function *f);
/* A WITH option's value, or NULL. */
const char *sql_table_option(const struct sql_table *t, const char *key);

#endif
