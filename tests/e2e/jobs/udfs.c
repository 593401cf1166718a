/* Scalar SQL functions in C for the SQL tests (include/spate/sql_udf.h):
 * each type in and out, strict and not, a string made in the call's
 * memory, three arguments, and descriptions that are wrong on purpose. */
#include <string.h>

#include <spate/sql_udf.h>

/* reverse_text(VARCHAR) RETURNS VARCHAR, strict: the bytes reversed, in
 * memory of the call. */
static void
reverse_text(spate_sql_call *call, const spate_sql_value *args, int nargs, spate_sql_value *result)
{
    char *out = call->alloc(call, args[0].s.len + 1);

    (void)nargs;
    for (size_t i = 0; i < args[0].s.len; i++)
        out[i] = args[0].s.p[args[0].s.len - 1 - i];
    result->null = false;
    result->s.p = out;
    result->s.len = args[0].s.len;
}
SPATE_SQL_FUNCTION(reverse_text_fn, reverse_text, SPATE_SQL_VARCHAR, true, SPATE_SQL_VARCHAR);

/* len_or_minus_one(VARCHAR) RETURNS INT, not strict: NULL is -1. */
static void
len_or_minus_one(spate_sql_call *call, const spate_sql_value *args, int nargs,
                 spate_sql_value *result)
{
    (void)call;
    (void)nargs;
    result->null = false;
    result->i = args[0].null ? -1 : (int64_t)args[0].s.len;
}
SPATE_SQL_FUNCTION(len_or_minus_one_fn, len_or_minus_one, SPATE_SQL_INT, false, SPATE_SQL_VARCHAR);

/* weighted(INT, INT, INT) RETURNS BIGINT, strict: a + 10 b + 100 c. */
static void
weighted(spate_sql_call *call, const spate_sql_value *args, int nargs, spate_sql_value *result)
{
    (void)call;
    (void)nargs;
    result->null = false;
    result->i = args[0].i + 10 * args[1].i + 100 * args[2].i;
}
SPATE_SQL_FUNCTION(weighted_fn, weighted, SPATE_SQL_BIGINT, true, SPATE_SQL_INT, SPATE_SQL_INT,
                   SPATE_SQL_INT);

/* halve(DOUBLE) RETURNS DOUBLE, strict. */
static void
halve(spate_sql_call *call, const spate_sql_value *args, int nargs, spate_sql_value *result)
{
    (void)call;
    (void)nargs;
    result->null = false;
    result->f = args[0].f / 2;
}
SPATE_SQL_FUNCTION(halve_fn, halve, SPATE_SQL_DOUBLE, true, SPATE_SQL_DOUBLE);

/* is_positive(DECIMAL) RETURNS BOOLEAN, not strict: NULL stays NULL. */
static void
is_positive(spate_sql_call *call, const spate_sql_value *args, int nargs, spate_sql_value *result)
{
    (void)call;
    (void)nargs;
    if (args[0].null)
        return;
    result->null = false;
    result->i = args[0].i > 0;
}
SPATE_SQL_FUNCTION(is_positive_fn, is_positive, SPATE_SQL_BOOLEAN, false, SPATE_SQL_DECIMAL);

/* next_day(TIMESTAMP) RETURNS TIMESTAMP, strict: 24 hours later. */
static void
next_day(spate_sql_call *call, const spate_sql_value *args, int nargs, spate_sql_value *result)
{
    (void)call;
    (void)nargs;
    result->null = false;
    result->i = args[0].i + 86400000;
}
SPATE_SQL_FUNCTION(next_day_fn, next_day, SPATE_SQL_TIMESTAMP, true, SPATE_SQL_TIMESTAMP);

/* A description of a later interface than spate's. */
__attribute__((visibility("default"))) const spate_sql_function from_the_future = {
    SPATE_SQL_UDF_VERSION + 1, SPATE_SQL_BIGINT, 1, { SPATE_SQL_BIGINT }, true, weighted,
};
