/* Parser glue over libpg_query (the real PostgreSQL parser): a script cut
 * into statements, each parsed into PostgreSQL's parse tree as JSON
 * (jansson), and errors that point at their place: line, column and a
 * caret under the statement's text. Also the two statements PostgreSQL's
 * grammar lacks and Flink SQL has: SET 'key' = 'value' and DESCRIBE. Any
 * thread; no state. */
#ifndef SPATE_SQL_SQL_PARSER_H
#define SPATE_SQL_SQL_PARSER_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>
#include <spate/spate.h>

/* One statement of a script: where it is in the script, without its ';'. */
struct sql_stmt_text {
    size_t offset;
    size_t len;
};

/* Cuts script into statements at ';' outside quotes and comments; empty
 * statements are left out. *out is malloc'd. */
int sql_split(const char *script, struct sql_stmt_text **out, int *n);

/* Whether the statement has only blanks and comments left (an unfinished
 * one at the prompt still needs its ';'). */
int sql_is_blank(const char *text, size_t len);

enum sql_stmt_kind {
    SQL_STMT_PG,       /* PostgreSQL's grammar: *tree is the statement node */
    SQL_STMT_SET,      /* SET 'key' = 'value': *key and *value */
    SQL_STMT_RESET,    /* RESET 'key', or RESET: *key or NULL */
    SQL_STMT_DESCRIBE, /* DESCRIBE name: *key */
    /* A statement set (several INSERTs, one job): BEGIN STATEMENT SET, or
     * EXECUTE STATEMENT SET BEGIN followed by its first INSERT (then
     * *tree is that INSERT); END runs it. */
    SQL_STMT_SET_BEGIN,
    SQL_STMT_SET_END,
};

struct sql_parsed {
    enum sql_stmt_kind kind;
    json_t *tree; /* SQL_STMT_PG: {"SelectStmt": {...}}, owned */
    char *key, *value;
    /* Where the statement starts in the script: locations in the tree are
     * from here. */
    size_t offset;
    /* CREATE TABLE's WATERMARK FOR column AS expression (Flink's), which
     * PostgreSQL's grammar lacks: taken out of the text it parses (blanked,
     * so that locations stay), the column and where the expression is in
     * the script. */
    char *watermark_column;
    size_t watermark_at, watermark_len;
    /* CREATE TABLE's NOT ENFORCED (of a PRIMARY KEY), blanked as well. */
    bool not_enforced;
    /* CREATE TABLE's PARTITIONED BY (col, ...) after the column list
     * (Flink's; PostgreSQL's is PARTITION BY), blanked as well: the
     * columns as written (folded to lower case unless quoted) and where
     * the clause is in the script. */
    char **partition_columns;
    int npartition_columns;
    size_t partitioned_at;
};

/* Parses script's statement st. 0, or SPATE_EINVAL with an error that
 * names line, column and shows a caret. */
int sql_parse(const char *script, const struct sql_stmt_text *st, struct sql_parsed *out,
              spate_error *err);
void sql_parsed_release(struct sql_parsed *p);

/* Sets err to "line L, column C: <message>" followed by the line of
 * script at offset and a caret under the column. */
int sql_error_at(spate_error *err, int code, const char *script, size_t offset, const char *fmt,
                 ...) __attribute__((format(printf, 5, 6)));

#endif
