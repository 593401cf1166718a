/* Scalar SQL functions written in C, for spate SQL's
 *
 *     CREATE FUNCTION count_char(VARCHAR, VARCHAR) RETURNS BIGINT
 *         AS '/path/libmy_udfs.so', 'count_char' LANGUAGE C;
 *
 * (PostgreSQL's form of a C function: the library, then the symbol). The
 * library exports the symbol as a spate_sql_function, which describes the
 * function (its argument and result types) and points at its code:
 *
 *     static void count_char(spate_sql_call *call, const spate_sql_value *args,
 *                            int nargs, spate_sql_value *result) { ... }
 *
 *     SPATE_SQL_FUNCTION(count_char, count_char, SPATE_SQL_BIGINT, true,
 *                        SPATE_SQL_VARCHAR, SPATE_SQL_VARCHAR);
 *
 * The session loads the library when the function is created and checks
 * the declared types against the description; each TaskManager that runs
 * a query calling it loads it again, from the same path, when the
 * operator opens, and checks it again. The function runs on the task
 * thread, once per record: it must not block and keeps no state between
 * calls (a library's globals are shared by every task of the process).
 * It needs only this header: no link with libspate. See docs/sql.md. */
#ifndef SPATE_SQL_UDF_H
#define SPATE_SQL_UDF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this interface a library was built for. */
#define SPATE_SQL_UDF_VERSION  1
#define SPATE_SQL_UDF_MAX_ARGS 8

/* SQL types, and how a value of each is held in a spate_sql_value. */
enum spate_sql_type {
    SPATE_SQL_BOOLEAN = 1, /* i: 0 or 1 */
    SPATE_SQL_INT,         /* i (32-bit values) */
    SPATE_SQL_BIGINT,      /* i */
    SPATE_SQL_DOUBLE,      /* f */
    SPATE_SQL_DECIMAL,     /* i: value * 10^scale, at the scale declared in CREATE FUNCTION */
    SPATE_SQL_VARCHAR,     /* s: bytes (UTF-8), not NUL-terminated */
    SPATE_SQL_DATE,        /* i: days since 1970-01-01 */
    SPATE_SQL_TIMESTAMP,   /* i: milliseconds since 1970-01-01 00:00:00 */
    SPATE_SQL_INTERVAL,    /* i: milliseconds */
};

/* A SQL value; null: SQL's NULL (the other members are then meaningless). */
typedef struct spate_sql_value {
    union {
        int64_t i;
        double f;
        struct {
            const char *p;
            size_t len;
        } s;
    };
    bool null;
} spate_sql_value;

/* One call's context. A VARCHAR result points into an argument, into
 * static memory, or into call->alloc(call, n): n bytes that stay valid
 * until the record is done. */
typedef struct spate_sql_call spate_sql_call;
struct spate_sql_call {
    char *(*alloc)(spate_sql_call *call, size_t n);
    void *impl; /* spate's */
};

/* The function: args[nargs] of the described types; *result, of the
 * result type, starts NULL. */
typedef void (*spate_sql_scalar_fn)(spate_sql_call *call, const spate_sql_value *args, int nargs,
                                    spate_sql_value *result);

/* What the library exports under the symbol CREATE FUNCTION names. */
typedef struct spate_sql_function {
    uint32_t version; /* SPATE_SQL_UDF_VERSION */
    uint8_t result;   /* enum spate_sql_type */
    uint8_t nargs;
    uint8_t args[SPATE_SQL_UDF_MAX_ARGS];
    /* true: a NULL argument gives NULL without a call (PostgreSQL's
     * STRICT); false: the function sees NULLs. */
    bool strict;
    spate_sql_scalar_fn fn;
} spate_sql_function;

/* Exports symbol as the description of fn. */
#define SPATE_SQL_FUNCTION(symbol, fn_, result_, strict_, ...)                 \
    __attribute__((visibility("default"))) const spate_sql_function symbol = { \
        SPATE_SQL_UDF_VERSION,                                                 \
        (result_),                                                             \
        (uint8_t)(sizeof((uint8_t[]){ __VA_ARGS__ }) / sizeof(uint8_t)),       \
        { __VA_ARGS__ },                                                       \
        (strict_),                                                             \
        (fn_),                                                                 \
    }

#ifdef __cplusplus
}
#endif

#endif
