/* SQL's types (BOOLEAN, INT, BIGINT, DOUBLE, DECIMAL(p, s), VARCHAR, DATE,
 * TIMESTAMP(3), INTERVAL) and their values: what the binder types
 * expressions with, how each travels in a row (streaming/types.h: int64,
 * double or string, NULL in the row's bitmap), and their text forms, read
 * and written as PostgreSQL and Flink write them. Plain data: any thread. */
#ifndef SPATE_SQL_SQL_TYPES_H
#define SPATE_SQL_SQL_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <spate/spate.h>

enum sql_type_id {
    SQL_NULL, /* the type of a bare NULL literal, before it is cast */
    SQL_BOOLEAN,
    SQL_INT,
    SQL_BIGINT,
    SQL_DOUBLE,
    SQL_DECIMAL,   /* an int64 of value * 10^scale, precision at most 18 */
    SQL_VARCHAR,   /* precision: its length, 0 for none (TEXT) */
    SQL_DATE,      /* days since 1970-01-01 */
    SQL_TIMESTAMP, /* milliseconds since 1970-01-01 00:00:00, no time zone */
    SQL_INTERVAL,  /* milliseconds */
    SQL_TYPE_COUNT,
};

struct sql_type {
    enum sql_type_id id;
    int precision;
    int scale;
    bool nullable;
};

#define SQL_DECIMAL_MAX_PRECISION 18

/* What a value of the type is in a row: SPATE's int64, double or string. */
enum sql_phys { SQL_PHYS_INT, SQL_PHYS_DOUBLE, SQL_PHYS_STRING };

/* Inline: every column of every row read, written or compared asks it. */
static inline enum sql_phys
sql_type_phys(enum sql_type_id id)
{
    if (id == SQL_DOUBLE)
        return SQL_PHYS_DOUBLE;
    if (id == SQL_VARCHAR)
        return SQL_PHYS_STRING;
    return SQL_PHYS_INT;
}

const spate_type *sql_type_spate(enum sql_type_id id);
/* The type's SQL name, e.g. "DECIMAL(10, 2)", "VARCHAR"; buf of 32 bytes. */
const char *sql_type_name(const struct sql_type *t, char buf[32]);
bool sql_type_is_numeric(enum sql_type_id id);

/* A value as the evaluator holds it. */
struct sql_value {
    union {
        int64_t i;
        double f;
        struct {
            const char *p;
            size_t len;
        } s;
    };
    bool null;
};

int64_t sql_pow10(int n);

/* Text → value of type t ("" is no NULL: the caller decides); strings
 * point into text. 0, or SPATE_EINVAL with err saying what is wrong. */
int sql_value_parse(const struct sql_type *t, const char *text, size_t len, struct sql_value *v,
                    spate_error *err);
/* A line of CSV (RFC 4180: fields cut at delim outside quotes, "" a
 * quote) into the values v of the n columns cols: an empty unquoted field
 * is NULL; strings point into s or into scratch (len bytes of room), where
 * quoted fields are unquoted. 0, or SPATE_EINVAL with err naming the
 * column and what is wrong. */
struct sql_column;
int sql_csv_read(const struct sql_column *cols, int n, char delim, const char *s, size_t len,
                 struct sql_value *v, char *scratch, spate_error *err);
/* Value → text (no quotes; "NULL" is the caller's): like snprintf. */
int sql_value_format(const struct sql_type *t, const struct sql_value *v, char *buf, size_t cap);

/* a / b rounded toward minus infinity (b > 0), for any a. */
static inline int64_t
sql_floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;

    return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* Dates: days since the epoch ↔ y-m-d (proleptic Gregorian); days beyond
 * ±2^40 (about 3 billion years) are taken as that bound. */
int64_t sql_days_from_civil(int64_t y, unsigned m, unsigned d);
void sql_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d);

/* The wall clock in ms since the epoch: PROCTIME(). */
int64_t sql_proctime_ms(void);

/* Flink's DATE_FORMAT: a TIMESTAMP (ms) written by a Java SimpleDateFormat
 * pattern of the letters y, M, d, H, m, s, S ('text' quoted, '' a quote,
 * other characters as they are) into buf: like snprintf. */
int sql_date_format(const char *pattern, int64_t ms, char *buf, size_t cap);
/* NULL when pattern is one sql_date_format writes, else the letter that is
 * not supported (or the quote left open), in a static string. */
const char *sql_date_format_check(const char *pattern);

#endif
