/* SQL types and values (sql_types.h). */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/util.h"
#include "sql/sql_program.h"
#include "sql/sql_types.h"
#include "streaming/types.h"

const spate_type *
sql_type_spate(enum sql_type_id id)
{
    switch (sql_type_phys(id)) {
    case SQL_PHYS_DOUBLE:
        return spate_type_double();
    case SQL_PHYS_STRING:
        return spate_type_string();
    default:
        return spate_type_int64();
    }
}

bool
sql_type_is_numeric(enum sql_type_id id)
{
    return id == SQL_INT || id == SQL_BIGINT || id == SQL_DOUBLE || id == SQL_DECIMAL;
}

const char *
sql_type_name(const struct sql_type *t, char buf[32])
{
    static const char *const names[SQL_TYPE_COUNT] = {
        [SQL_NULL] = "NULL",         [SQL_BOOLEAN] = "BOOLEAN", [SQL_INT] = "INT",
        [SQL_BIGINT] = "BIGINT",     [SQL_DOUBLE] = "DOUBLE",   [SQL_DECIMAL] = "DECIMAL",
        [SQL_VARCHAR] = "VARCHAR",   [SQL_DATE] = "DATE",       [SQL_TIMESTAMP] = "TIMESTAMP(3)",
        [SQL_INTERVAL] = "INTERVAL",
    };

    if (t->id == SQL_DECIMAL)
        snprintf(buf, 32, "DECIMAL(%d, %d)", t->precision, t->scale);
    else if (t->id == SQL_VARCHAR && t->precision > 0)
        snprintf(buf, 32, "VARCHAR(%d)", t->precision);
    else
        snprintf(buf, 32, "%s", (unsigned)t->id < SQL_TYPE_COUNT ? names[t->id] : "?");
    return buf;
}

int64_t
sql_pow10(int n)
{
    int64_t p = 1;

    /* At most 10^18, the largest in an int64: scales are checked to be at
     * most 18 where they are read, this keeps a slip from overflowing. */
    for (n = n > 18 ? 18 : n; n > 0; n--)
        p *= 10;
    return p;
}

/* Howard Hinnant's days_from_civil and civil_from_days. */
int64_t
sql_days_from_civil(int64_t y, unsigned m, unsigned d)
{
    int64_t era;
    unsigned yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = (unsigned)(y - era * 400);
    doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

void
sql_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    int64_t era;
    unsigned doe, yoe, doy, mp;

    z = z > ((int64_t)1 << 40)    ? ((int64_t)1 << 40)
        : z < -((int64_t)1 << 40) ? -((int64_t)1 << 40)
                                  : z;
    z += 719468;
    era = (z >= 0 ? z : z - 146096) / 146097;
    doe = (unsigned)(z - era * 146097);
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static int
bad_value(const struct sql_type *t, const char *text, size_t len, spate_error *err, const char *why)
{
    char tn[32];

    return spate_error_set(err, SPATE_EINVAL, "'%.*s' is not a %s%s%s", (int)MIN(len, 64), text,
                           sql_type_name(t, tn), why ? ": " : "", why ? why : "");
}

/* Reads up to n digits as a number; returns the digits read. */
static size_t
digits(const char *s, size_t len, size_t max, int64_t *out)
{
    size_t i = 0;
    int64_t v = 0;

    for (; i < len && i < max && isdigit((unsigned char)s[i]); i++)
        v = v * 10 + (s[i] - '0');
    *out = v;
    return i;
}

static bool
parse_date(const char *s, size_t len, size_t *used, int64_t *days)
{
    int64_t y, mo, d;
    size_t i = 0, n;

    if ((n = digits(s, len, 4, &y)) != 4)
        return false;
    i += n;
    if (i >= len || s[i++] != '-' || (n = digits(s + i, len - i, 2, &mo)) < 1)
        return false;
    i += n;
    if (i >= len || s[i++] != '-' || (n = digits(s + i, len - i, 2, &d)) < 1)
        return false;
    i += n;
    if (mo < 1 || mo > 12 || d < 1 || d > 31)
        return false;
    *days = sql_days_from_civil(y, (unsigned)mo, (unsigned)d);
    {
        int64_t yy;
        unsigned mm, dd;

        sql_civil_from_days(*days, &yy, &mm, &dd);
        if (mm != (unsigned)mo || dd != (unsigned)d)
            return false; /* 2021-02-30 */
    }
    *used = i;
    return true;
}

/* "HH:MM[:SS[.fff]]" → milliseconds. */
static bool
parse_time(const char *s, size_t len, size_t *used, int64_t *ms)
{
    int64_t h, mi, sec = 0, frac = 0;
    size_t i = 0, n;

    if ((n = digits(s, len, 2, &h)) < 1)
        return false;
    i += n;
    if (i >= len || s[i++] != ':' || (n = digits(s + i, len - i, 2, &mi)) != 2)
        return false;
    i += n;
    if (i < len && s[i] == ':') {
        i++;
        if ((n = digits(s + i, len - i, 2, &sec)) != 2)
            return false;
        i += n;
        if (i < len && s[i] == '.') {
            int64_t f;

            i++;
            n = digits(s + i, len - i, 9, &f);
            if (n == 0)
                return false;
            i += n;
            /* To milliseconds, truncated as TIMESTAMP(3) keeps them. */
            frac = n >= 3 ? f / sql_pow10((int)n - 3) : f * sql_pow10(3 - (int)n);
        }
    }
    if (h > 23 || mi > 59 || sec > 59)
        return false;
    *ms = ((h * 60 + mi) * 60 + sec) * 1000 + frac;
    *used = i;
    return true;
}

static bool
parse_decimal(const char *s, size_t len, int scale, int precision, int64_t *out)
{
    size_t i = 0;
    bool neg = false, any = false;
    int64_t v = 0;
    int intdigits = 0, fdigits = 0;
    int round_digit = -1;

    if (i < len && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    for (; i < len && isdigit((unsigned char)s[i]); i++) {
        any = true;
        if (v == 0 && s[i] == '0')
            continue;
        if (++intdigits > precision - scale)
            return false;
        v = v * 10 + (s[i] - '0');
    }
    if (i < len && s[i] == '.') {
        for (i++; i < len && isdigit((unsigned char)s[i]); i++) {
            any = true;
            if (fdigits < scale) {
                v = v * 10 + (s[i] - '0');
                fdigits++;
            } else if (round_digit < 0) {
                round_digit = s[i] - '0';
            }
        }
    }
    if (!any || i != len)
        return false;
    for (; fdigits < scale; fdigits++)
        v *= 10;
    if (round_digit >= 5)
        v++; /* half away from zero, as PostgreSQL rounds numeric */
    if (v >= sql_pow10(precision))
        return false;
    *out = neg ? -v : v;
    return true;
}

/* "10 seconds", "5 minute", "1 day", "2 hours", "100 milliseconds", a bare
 * number of seconds, or "HH:MM:SS". */
static bool
parse_interval(const char *s, size_t len, int64_t *ms)
{
    static const struct {
        const char *unit;
        int64_t ms;
    } units[] = {
        { "millisecond", 1 }, { "ms", 1 },         { "second", 1000 }, { "sec", 1000 },
        { "s", 1000 },        { "minute", 60000 }, { "min", 60000 },   { "hour", 3600000 },
        { "h", 3600000 },     { "day", 86400000 }, { "d", 86400000 },
    };
    size_t i = 0, used;
    int64_t total = 0;
    bool any = false;

    while (i < len) {
        bool neg = false;
        int64_t n;
        size_t k, ulen;

        while (i < len && isspace((unsigned char)s[i]))
            i++;
        if (i == len)
            break;
        if (s[i] == '-' || s[i] == '+')
            neg = s[i++] == '-';
        if (parse_time(s + i, len - i, &used, &n) && (i + used == len || s[i + used] == ' ')) {
            total += neg ? -n : n;
            i += used;
            any = true;
            continue;
        }
        k = digits(s + i, len - i, 15, &n);
        if (k == 0)
            return false;
        i += k;
        while (i < len && isspace((unsigned char)s[i]))
            i++;
        for (ulen = 0; i + ulen < len && isalpha((unsigned char)s[i + ulen]); ulen++)
            ;
        if (ulen == 0) {
            n *= 1000; /* seconds */
        } else {
            size_t u, base = ulen;
            bool found = false;

            if (base > 1 && (s[i + base - 1] == 's' || s[i + base - 1] == 'S'))
                base--; /* plural */
            for (u = 0; u < ARRAY_SIZE(units) && !found; u++)
                if ((strlen(units[u].unit) == base &&
                     strncasecmp(units[u].unit, s + i, base) == 0) ||
                    (strlen(units[u].unit) == ulen &&
                     strncasecmp(units[u].unit, s + i, ulen) == 0)) {
                    n *= units[u].ms;
                    found = true;
                }
            if (!found)
                return false;
            i += ulen;
        }
        total += neg ? -n : n;
        any = true;
    }
    *ms = total;
    return any;
}

int
sql_value_parse(const struct sql_type *t, const char *text, size_t len, struct sql_value *v,
                spate_error *err)
{
    char buf[64];
    char *end;
    size_t used;

    v->null = false;
    switch (t->id) {
    case SQL_VARCHAR:
        v->s.p = text;
        v->s.len = len;
        return 0;
    case SQL_BOOLEAN:
        if ((len == 4 && strncasecmp(text, "true", 4) == 0) ||
            (len == 1 && (*text == 't' || *text == 'T' || *text == '1')))
            v->i = 1;
        else if ((len == 5 && strncasecmp(text, "false", 5) == 0) ||
                 (len == 1 && (*text == 'f' || *text == 'F' || *text == '0')))
            v->i = 0;
        else
            return bad_value(t, text, len, err, NULL);
        return 0;
    default:
        break;
    }
    while (len > 0 && isspace((unsigned char)*text))
        text++, len--;
    while (len > 0 && isspace((unsigned char)text[len - 1]))
        len--;
    if (len == 0 || len >= sizeof buf)
        return bad_value(t, text, len, err, len ? "too long" : "empty");
    memcpy(buf, text, len);
    buf[len] = '\0';
    switch (t->id) {
    case SQL_INT:
    case SQL_BIGINT:
        errno = 0;
        v->i = strtoll(buf, &end, 10);
        if (*end != '\0' || errno != 0 ||
            (t->id == SQL_INT && (v->i < INT32_MIN || v->i > INT32_MAX)))
            return bad_value(t, text, len, err, errno || *end == '\0' ? "out of range" : NULL);
        return 0;
    case SQL_DOUBLE:
        v->f = strtod(buf, &end);
        if (*end != '\0')
            return bad_value(t, text, len, err, NULL);
        return 0;
    case SQL_DECIMAL:
        if (!parse_decimal(buf, len, t->scale, t->precision, &v->i))
            return bad_value(t, text, len, err, NULL);
        return 0;
    case SQL_DATE:
        if (!parse_date(buf, len, &used, &v->i) || used != len)
            return bad_value(t, text, len, err, "dates are YYYY-MM-DD");
        return 0;
    case SQL_TIMESTAMP: {
        int64_t days, ms = 0;

        if (!parse_date(buf, len, &used, &days))
            return bad_value(t, text, len, err, "timestamps are YYYY-MM-DD HH:MM:SS[.fff]");
        if (used < len) {
            size_t tu;

            if ((buf[used] != ' ' && buf[used] != 'T') ||
                !parse_time(buf + used + 1, len - used - 1, &tu, &ms) || used + 1 + tu != len)
                return bad_value(t, text, len, err, "timestamps are YYYY-MM-DD HH:MM:SS[.fff]");
        }
        v->i = days * 86400000 + ms;
        return 0;
    }
    case SQL_INTERVAL:
        if (!parse_interval(buf, len, &v->i))
            return bad_value(t, text, len, err, "intervals are as '10 seconds' or 'HH:MM:SS'");
        return 0;
    default:
        return bad_value(t, text, len, err, "no value has this type");
    }
}

/* Shortest text that reads back as d, with ".0" on integers (Java's form,
 * which Flink prints) and Flink's names for the special values. */
static int
format_double(double d, char *buf, size_t cap)
{
    char tmp[64];

    if (isnan(d))
        return snprintf(buf, cap, "NaN");
    if (isinf(d))
        return snprintf(buf, cap, d > 0 ? "Infinity" : "-Infinity");
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, d);
        if (strtod(tmp, NULL) == d)
            break;
    }
    if (strpbrk(tmp, ".eEn") == NULL)
        strcat(tmp, ".0");
    return snprintf(buf, cap, "%s", tmp);
}

int
sql_value_format(const struct sql_type *t, const struct sql_value *v, char *buf, size_t cap)
{
    switch (t->id) {
    case SQL_BOOLEAN:
        return snprintf(buf, cap, "%s", v->i ? "true" : "false");
    case SQL_INT:
    case SQL_BIGINT:
        return snprintf(buf, cap, "%" PRId64, v->i);
    case SQL_DOUBLE:
        return format_double(v->f, buf, cap);
    case SQL_DECIMAL: {
        uint64_t a = v->i < 0 ? -(uint64_t)v->i : (uint64_t)v->i;
        uint64_t p = (uint64_t)sql_pow10(t->scale);

        if (t->scale == 0)
            return snprintf(buf, cap, "%s%" PRIu64, v->i < 0 ? "-" : "", a);
        return snprintf(buf, cap, "%s%" PRIu64 ".%0*" PRIu64, v->i < 0 ? "-" : "", a / p, t->scale,
                        a % p);
    }
    case SQL_VARCHAR:
        return snprintf(buf, cap, "%.*s", (int)v->s.len, v->s.p);
    case SQL_DATE: {
        int64_t y;
        unsigned m, d;

        sql_civil_from_days(v->i, &y, &m, &d);
        return snprintf(buf, cap, "%04" PRId64 "-%02u-%02u", y, m, d);
    }
    case SQL_TIMESTAMP: {
        int64_t days = sql_floor_div(v->i, 86400000);
        int64_t ms = v->i - days * 86400000, y;
        unsigned m, d;

        sql_civil_from_days(days, &y, &m, &d);
        return snprintf(buf, cap, "%04" PRId64 "-%02u-%02u %02d:%02d:%02d.%03d", y, m, d,
                        (int)(ms / 3600000), (int)(ms / 60000 % 60), (int)(ms / 1000 % 60),
                        (int)(ms % 1000));
    }
    case SQL_INTERVAL: {
        uint64_t a = v->i < 0 ? -(uint64_t)v->i : (uint64_t)v->i;

        /* Flink's form of a day-time interval: +D HH:MM:SS.fff */
        return snprintf(buf, cap, "%c%" PRIu64 " %02d:%02d:%02d.%03d", v->i < 0 ? '-' : '+',
                        a / 86400000, (int)(a / 3600000 % 24), (int)(a / 60000 % 60),
                        (int)(a / 1000 % 60), (int)(a % 1000));
    }
    default:
        return snprintf(buf, cap, "NULL");
    }
}

int64_t
sql_proctime_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- DATE_FORMAT ---- */

const char *
sql_date_format_check(const char *pattern)
{
    static char bad[4];

    for (const char *q = pattern; *q; q++) {
        if (*q == '\'') {
            if (q[1] == '\'') {
                q++;
                continue;
            }
            /* quoted text, in which '' is a quote */
            for (q++; *q && (*q != '\'' || q[1] == '\''); q++)
                q += *q == '\'';
            if (*q == '\0')
                return "' (a quote not closed)";
            continue;
        }
        if (isalpha((unsigned char)*q) && strchr("yMdHmsS", *q) == NULL) {
            snprintf(bad, sizeof bad, "%c", *q);
            return bad;
        }
    }
    return NULL;
}

/* Writes c at buf[*o] when there is room (and one byte for the NUL). */
static void
put_char(char *buf, size_t cap, size_t *o, char c)
{
    if (*o + 1 < cap)
        buf[*o] = c;
    (*o)++;
}

/* v in decimal, zero-padded to width characters (the sign included), as
 * printf's %0*lld. */
static void
put_number(char *buf, size_t cap, size_t *o, int64_t v, int width)
{
    char digits[24];
    uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
    int n = 0;

    do {
        digits[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u > 0);
    if (v < 0) {
        put_char(buf, cap, o, '-');
        width--;
    }
    for (int i = n; i < width; i++)
        put_char(buf, cap, o, '0');
    while (n > 0)
        put_char(buf, cap, o, digits[--n]);
}

int
sql_date_format(const char *pattern, int64_t ms, char *buf, size_t cap)
{
    int64_t days = sql_floor_div(ms, 86400000), y;
    int64_t t = ms - days * 86400000;
    unsigned mo, d;
    size_t o = 0;

    sql_civil_from_days(days, &y, &mo, &d);
    for (const char *q = pattern; *q;) {
        char ch = *q;
        int n = 0;

        if (ch == '\'') {
            if (q[1] == '\'') {
                put_char(buf, cap, &o, '\'');
                q += 2;
                continue;
            }
            for (q++; *q && (*q != '\'' || q[1] == '\''); q++) {
                put_char(buf, cap, &o, *q);
                q += *q == '\'';
            }
            q += *q != 0;
            continue;
        }
        while (q[n] == ch)
            n++;
        q += n;
        switch (ch) {
        case 'y':
            put_number(buf, cap, &o, n == 2 ? (y % 100 + 100) % 100 : y, n);
            break;
        case 'M':
            put_number(buf, cap, &o, mo, n);
            break;
        case 'd':
            put_number(buf, cap, &o, d, n);
            break;
        case 'H':
            put_number(buf, cap, &o, t / 3600000, n);
            break;
        case 'm':
            put_number(buf, cap, &o, t / 60000 % 60, n);
            break;
        case 's':
            put_number(buf, cap, &o, t / 1000 % 60, n);
            break;
        case 'S':
            put_number(buf, cap, &o, t % 1000, n);
            break;
        default:
            for (int i = 0; i < n; i++)
                put_char(buf, cap, &o, ch);
            break;
        }
    }
    if (cap > 0)
        buf[MIN(o, cap - 1)] = '\0';
    return (int)o;
}

/* A field's text into v: an empty unquoted field is NULL. */
static int
csv_field(const struct sql_column *col, const char *s, size_t len, bool quoted, struct sql_value *v,
          spate_error *err)
{
    if (len == 0 && !quoted) {
        v->null = true;
        return 0;
    }
    if (sql_value_parse(&col->type, s, len, v, err) != 0)
        return spate_error_wrap(err, "column '%s'", col->name);
    return 0;
}

int
sql_csv_read(const struct sql_column *cols, int n, char delim, const char *s, size_t len,
             struct sql_value *v, char *scratch, spate_error *err)
{
    size_t i = 0;
    int col = 0;

    if (len > 0 && s[len - 1] == '\r')
        len--;
    for (;;) {
        if (col >= n)
            return spate_error_set(err, SPATE_EINVAL, "more than %d fields", n);
        if (i < len && s[i] == '"') {
            char *out = scratch;
            size_t k = 0;
            bool closed = false;

            for (i++; i < len; i++) {
                if (s[i] == '"') {
                    if (i + 1 < len && s[i + 1] == '"') {
                        out[k++] = '"';
                        i++;
                        continue;
                    }
                    closed = true;
                    i++;
                    break;
                }
                out[k++] = s[i];
            }
            scratch += k;
            if (!closed || (i < len && s[i] != delim))
                return spate_error_set(err, SPATE_EINVAL,
                                       "a quoted field of column '%s' is "
                                       "not closed where it ends",
                                       cols[col].name);
            if (csv_field(&cols[col], out, k, true, &v[col], err) != 0)
                return SPATE_EINVAL;
        } else {
            size_t b = i;

            while (i < len && s[i] != delim)
                i++;
            if (csv_field(&cols[col], s + b, i - b, false, &v[col], err) != 0)
                return SPATE_EINVAL;
        }
        col++;
        if (i >= len)
            break;
        i++; /* the delimiter */
        if (i == len) {
            /* a trailing delimiter: one more, empty field */
            if (col >= n)
                return spate_error_set(err, SPATE_EINVAL, "more than %d fields", n);
            v[col++].null = true;
            break;
        }
    }
    if (col != n)
        return spate_error_set(err, SPATE_EINVAL, "%d fields, not %d", col, n);
    return 0;
}
