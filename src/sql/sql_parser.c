/* Parser glue over libpg_query (sql_parser.h). */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <pg_query.h>

#include "core/alloc.h"
#include "core/util.h"
#include "sql/sql_parser.h"

int
sql_error_at(spate_error *err, int code, const char *script, size_t offset, const char *fmt, ...)
{
    char msg[256];
    size_t line_start = 0, line_end, len = strlen(script);
    int line = 1, col, from, caret;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (offset > len)
        offset = len;
    for (size_t i = 0; i < offset; i++)
        if (script[i] == '\n') {
            line++;
            line_start = i + 1;
        }
    for (line_end = line_start; line_end < len && script[line_end] != '\n'; line_end++)
        ;
    col = (int)(offset - line_start) + 1;
    /* At most 100 characters of the line, the column among them. */
    from = col - 1 > 70 ? col - 1 - 70 : 0;
    caret = col - 1 - from;
    if (err == NULL)
        return code;
    return spate_error_set(err, code, "line %d, column %d: %s\n  %.*s\n  %*s^", line, col, msg,
                           (int)MIN(line_end - line_start - (size_t)from, 100),
                           script + line_start + from, caret, "");
}

/* Skips a quoted string or comment starting at s[i]; returns the index
 * after it (or i when there is none there). */
static size_t
skip_quoted(const char *s, size_t len, size_t i)
{
    char q = s[i];

    if (q == '\'' || q == '"') {
        for (i++; i < len; i++)
            if (s[i] == q) {
                if (i + 1 < len && s[i + 1] == q) {
                    i++; /* doubled quote */
                    continue;
                }
                return i + 1;
            }
        return len;
    }
    if (q == '-' && i + 1 < len && s[i + 1] == '-') {
        while (i < len && s[i] != '\n')
            i++;
        return i;
    }
    if (q == '/' && i + 1 < len && s[i + 1] == '*') {
        for (i += 2; i + 1 < len; i++)
            if (s[i] == '*' && s[i + 1] == '/')
                return i + 2;
        return len;
    }
    return i;
}

int
sql_is_blank(const char *s, size_t len)
{
    size_t i = 0;

    while (i < len) {
        size_t j;

        if (isspace((unsigned char)s[i])) {
            i++;
            continue;
        }
        j = skip_quoted(s, len, i);
        if (j == i || s[i] == '\'' || s[i] == '"')
            return 0;
        i = j;
    }
    return 1;
}

int
sql_split(const char *script, struct sql_stmt_text **out, int *n)
{
    size_t len = strlen(script), start = 0, i = 0, cap = 0;

    *out = NULL;
    *n = 0;
    while (i <= len) {
        size_t j = i < len ? skip_quoted(script, len, i) : i;

        if (j != i) {
            i = j;
            continue;
        }
        if (i == len || script[i] == ';') {
            if (!sql_is_blank(script + start, i - start)) {
                xgrow((void **)out, &cap, (size_t)*n + 1, sizeof **out);
                (*out)[*n].offset = start;
                (*out)[*n].len = i - start;
                (*n)++;
            }
            start = i + 1;
        }
        i++;
    }
    return 0;
}

/* The next word of s after *i (letters, digits, '_', '.', or a quoted
 * string without its quotes), malloc'd, or NULL. */
static char *
next_token(const char *s, size_t len, size_t *i)
{
    size_t b;

    while (*i < len && isspace((unsigned char)s[*i]))
        (*i)++;
    if (*i >= len)
        return NULL;
    if (s[*i] == '\'' || s[*i] == '"' || s[*i] == '`') {
        char q = s[*i];
        size_t e;

        b = ++(*i);
        for (e = b; e < len && s[e] != q; e++)
            ;
        if (e >= len)
            return NULL;
        *i = e + 1;
        return xstrndup(s + b, e - b);
    }
    b = *i;
    while (*i < len &&
           (isalnum((unsigned char)s[*i]) || s[*i] == '_' || s[*i] == '.' || s[*i] == '-'))
        (*i)++;
    if (*i == b) {
        (*i)++;
        return xstrndup(s + b, 1);
    }
    return xstrndup(s + b, *i - b);
}

/* SET 'k' = 'v', RESET ['k'], DESCRIBE name (and Flink's CREATE FUNCTION
 * f AS 'class', an error): 1 when handled (or an error), 0 when
 * PostgreSQL's grammar should read it. */
static int
parse_flink_statement(const char *script, const struct sql_stmt_text *st, struct sql_parsed *out,
                      spate_error *err, int *rc)
{
    const char *s = script + st->offset;
    size_t len = st->len, i = 0, at;
    char *word = next_token(s, len, &i), *key = NULL, *eq = NULL, *value = NULL, *rest = NULL;
    int handled = 0;

    if (word == NULL)
        return 0;
    if (strcasecmp(word, "END") == 0 && (rest = next_token(s, len, &i)) == NULL) {
        out->kind = SQL_STMT_SET_END;
        *rc = 0;
        handled = 1;
    } else if (strcasecmp(word, "BEGIN") == 0 || strcasecmp(word, "EXECUTE") == 0) {
        /* BEGIN STATEMENT SET | EXECUTE STATEMENT SET BEGIN <INSERT> */
        static const char *const words[] = { "STATEMENT", "SET", "BEGIN" };
        bool execute = strcasecmp(word, "EXECUTE") == 0;
        size_t n = execute ? 3 : 2, k = 0;

        for (; k < n; k++) {
            free(rest);
            if ((rest = next_token(s, len, &i)) == NULL || strcasecmp(rest, words[k]) != 0)
                break;
        }
        if (k < n)
            goto out; /* PostgreSQL's BEGIN or EXECUTE: its grammar says */
        handled = 1;
        out->kind = SQL_STMT_SET_BEGIN;
        *rc = 0;
        while (i < len && isspace((unsigned char)s[i]))
            i++;
        if (!sql_is_blank(s + i, len - i)) {
            struct sql_stmt_text inner = { st->offset + i, len - i };
            struct sql_parsed first;

            if (!execute) {
                *rc = sql_error_at(err, SPATE_EINVAL, script, st->offset + i,
                                   "BEGIN STATEMENT SET ends with ';'");
                goto out;
            }
            if ((*rc = sql_parse(script, &inner, &first, err)) != 0)
                goto out;
            out->tree = first.tree;
            out->offset = inner.offset; /* where the INSERT's locations count from */
            first.tree = NULL;
            sql_parsed_release(&first);
        }
    } else if (strcasecmp(word, "DESCRIBE") == 0 || strcasecmp(word, "DESC") == 0) {
        at = i;
        key = next_token(s, len, &i);
        rest = next_token(s, len, &i);
        handled = 1;
        if (key == NULL || rest != NULL) {
            *rc = sql_error_at(err, SPATE_EINVAL, script, st->offset + (key ? i : at),
                               "DESCRIBE takes one table or view name");
            goto out;
        }
        out->kind = SQL_STMT_DESCRIBE;
        out->key = key;
        key = NULL;
        *rc = 0;
    } else if (strcasecmp(word, "SET") == 0 || strcasecmp(word, "RESET") == 0) {
        size_t j = i;

        while (j < len && isspace((unsigned char)s[j]))
            j++;
        /* SET name = value (unquoted) is PostgreSQL's: its grammar reads it. */
        if (j < len && s[j] != '\'' && strcasecmp(word, "SET") == 0)
            goto out;
        handled = 1;
        at = i;
        key = next_token(s, len, &i);
        if (strcasecmp(word, "RESET") == 0) {
            rest = key ? next_token(s, len, &i) : NULL;
            if (rest != NULL) {
                *rc = sql_error_at(err, SPATE_EINVAL, script, st->offset + at,
                                   "RESET takes one quoted key, or none");
                goto out;
            }
            out->kind = SQL_STMT_RESET;
            out->key = key;
            key = NULL;
            *rc = 0;
            goto out;
        }
        if (key == NULL) {
            /* SET alone: list the session's settings. */
            out->kind = SQL_STMT_SET;
            *rc = 0;
            goto out;
        }
        at = i;
        eq = next_token(s, len, &i);
        at = eq ? i : at;
        value = eq ? next_token(s, len, &i) : NULL;
        rest = value ? next_token(s, len, &i) : NULL;
        if (eq == NULL || strcmp(eq, "=") != 0 || value == NULL || rest != NULL) {
            *rc = sql_error_at(err, SPATE_EINVAL, script, st->offset + at,
                               "SET takes 'key' = 'value'");
            goto out;
        }
        out->kind = SQL_STMT_SET;
        out->key = key;
        out->value = value;
        key = value = NULL;
        *rc = 0;
    } else if (strcasecmp(word, "CREATE") == 0) {
        /* Flink's CREATE [TEMPORARY [SYSTEM]] FUNCTION f AS 'class': said
         * so, where PostgreSQL's grammar would see a syntax error. */
        char *w[5] = { NULL };
        int n = 0, k = 0;

        while (n < 5 && (w[n] = next_token(s, len, &i)) != NULL)
            n++;
        while (k < n && (strcasecmp(w[k], "TEMPORARY") == 0 || strcasecmp(w[k], "SYSTEM") == 0))
            k++;
        if (k + 2 < n && strcasecmp(w[k], "FUNCTION") == 0 && strcasecmp(w[k + 2], "AS") == 0) {
            handled = 1;
            *rc = sql_error_at(err, SPATE_ENOTSUP, script, st->offset,
                               "not supported: a function from a Java class (Flink's CREATE "
                               "FUNCTION %s AS 'class'); spate's are in C: CREATE FUNCTION "
                               "%s(types) RETURNS type AS 'library.so', 'symbol' LANGUAGE C",
                               w[k + 1], w[k + 1]);
        }
        for (k = 0; k < n; k++)
            free(w[k]);
    }
out:
    free(word);
    free(key);
    free(eq);
    free(value);
    free(rest);
    return handled;
}

/* Where keyword (followed by a space) is in text at parenthesis depth
 * depth, outside quotes, or len; *comma gets the last ',' at that depth
 * before it (SIZE_MAX: none). */
static size_t
find_keyword(const char *text, size_t len, const char *keyword, int depth, size_t *comma)
{
    size_t n = strlen(keyword);
    int d = 0;

    *comma = SIZE_MAX;
    for (size_t i = 0; i < len; i++) {
        size_t j = skip_quoted(text, len, i);

        if (j != i) {
            i = j - 1;
            continue;
        }
        if (text[i] == '(')
            d++;
        else if (text[i] == ')')
            d--;
        else if (d == depth && text[i] == ',')
            *comma = i;
        else if (d == depth && len - i > n && strncasecmp(text + i, keyword, n) == 0 &&
                 (i == 0 || !isalnum((unsigned char)text[i - 1])) &&
                 isspace((unsigned char)text[i + n]))
            return i;
    }
    return len;
}

/* In a CREATE TABLE's text, WATERMARK FOR col AS expr at the column list's
 * level: out gets the column and the expression's place (offsets into
 * text), and the clause with the comma before it is blanked in text. 0, 1
 * when there was none, or SPATE_EINVAL. */
static int
take_watermark(char *text, size_t len, size_t base, const char *script, struct sql_parsed *out,
               spate_error *err)
{
    size_t comma, i = find_keyword(text, len, "WATERMARK", 1, &comma), start, e;
    int depth;

    if (i >= len)
        return 1;
    start = i;
    {
        size_t k = i + 9;
        char *word, *col, *as;

        bool quoted;

        word = next_token(text, len, &k);
        while (k < len && isspace((unsigned char)text[k]))
            k++;
        quoted = k < len && text[k] == '"';
        col = next_token(text, len, &k);
        as = next_token(text, len, &k);
        /* PostgreSQL's identifiers: folded to lower case unless quoted. */
        for (char *q = col; !quoted && q != NULL && *q; q++)
            *q = (char)tolower((unsigned char)*q);
        if (word == NULL || strcasecmp(word, "FOR") != 0 || col == NULL || as == NULL ||
            strcasecmp(as, "AS") != 0) {
            free(word);
            free(col);
            free(as);
            return sql_error_at(err, SPATE_EINVAL, script, base + start,
                                "a watermark is WATERMARK FOR column AS expression");
        }
        free(word);
        free(as);
        out->watermark_column = col;
        i = k;
    }
    /* The expression runs to the next ',' or the ')' of the column list. */
    for (e = i, depth = 1; e < len; e++) {
        size_t j = skip_quoted(text, len, e);

        if (j != e) {
            e = j - 1;
            continue;
        }
        if (text[e] == '(')
            depth++;
        else if (text[e] == ')' && --depth == 0)
            break;
        else if (text[e] == ',' && depth == 1)
            break;
    }
    out->watermark_at = base + i;
    out->watermark_len = e - i;
    if (comma != SIZE_MAX && comma < start)
        start = comma;
    memset(text + start, ' ', e - start);
    return 0;
}

/* In a CREATE TABLE's text, Flink's NOT ENFORCED after a PRIMARY KEY,
 * which PostgreSQL's grammar lacks: blanked (locations stay), and noted in
 * out. */
static void
take_not_enforced(char *text, size_t len, struct sql_parsed *out)
{
    for (size_t i = 0; i < len; i++) {
        size_t j = skip_quoted(text, len, i), k;

        if (j != i) {
            i = j - 1;
            continue;
        }
        if (strncasecmp(text + i, "NOT", 3) != 0 || (i > 0 && isalnum((unsigned char)text[i - 1])))
            continue;
        for (k = i + 3; k < len && isspace((unsigned char)text[k]); k++)
            ;
        if (k == i + 3 || len - k < 8 || strncasecmp(text + k, "ENFORCED", 8) != 0 ||
            (k + 8 < len && isalnum((unsigned char)text[k + 8])))
            continue;
        memset(text + i, ' ', k + 8 - i);
        out->not_enforced = true;
        i = k + 7;
    }
}

/* In a CREATE TABLE's text, Flink's PARTITIONED BY (col, ...) after the
 * column list: the columns go to out and the clause is blanked in text.
 * 0, or SPATE_EINVAL. */
static int
take_partitioned_by(char *text, size_t len, size_t base, const char *script, struct sql_parsed *out,
                    spate_error *err)
{
    size_t comma, i = find_keyword(text, len, "PARTITIONED", 0, &comma), start, k;

    if (i >= len)
        return 0;
    start = i;
    k = i + 11;
    {
        char *by = next_token(text, len, &k), *open = next_token(text, len, &k);
        bool ok = by != NULL && strcasecmp(by, "BY") == 0 && open != NULL && strcmp(open, "(") == 0;

        free(by);
        free(open);
        if (!ok)
            return sql_error_at(err, SPATE_EINVAL, script, base + start,
                                "a partitioning is PARTITIONED BY (column, ...)");
    }
    for (;;) {
        char *col, *sep;
        bool quoted;

        while (k < len && isspace((unsigned char)text[k]))
            k++;
        quoted = k < len && (text[k] == '"' || text[k] == '`');
        col = next_token(text, len, &k);
        sep = next_token(text, len, &k);
        if (col == NULL || sep == NULL ||
            (!quoted && !isalpha((unsigned char)col[0]) && col[0] != '_') ||
            (strcmp(sep, ",") != 0 && strcmp(sep, ")") != 0)) {
            free(col);
            free(sep);
            return sql_error_at(err, SPATE_EINVAL, script, base + start,
                                "a partitioning is PARTITIONED BY (column, ...)");
        }
        for (char *q = col; !quoted && *q; q++)
            *q = (char)tolower((unsigned char)*q);
        out->partition_columns = xrealloc(out->partition_columns,
                                          (size_t)(out->npartition_columns + 1) * sizeof(char *));
        out->partition_columns[out->npartition_columns++] = col;
        if (strcmp(sep, ")") == 0) {
            free(sep);
            break;
        }
        free(sep);
    }
    out->partitioned_at = base + start;
    memset(text + start, ' ', k - start);
    return 0;
}

/* Whether the statement is a CREATE, after its blanks and comments. */
static bool
starts_with_create(const char *text, size_t len)
{
    size_t i = 0, j;

    for (;;) {
        while (i < len && isspace((unsigned char)text[i]))
            i++;
        if (i >= len || (text[i] != '-' && text[i] != '/') || (j = skip_quoted(text, len, i)) == i)
            break;
        i = j;
    }
    return len - i >= 6 && strncasecmp(text + i, "CREATE", 6) == 0;
}

static bool
word_at(const char *text, size_t len, size_t i, const char *word)
{
    size_t n = strlen(word);

    return i + n <= len && strncasecmp(text + i, word, n) == 0 &&
           (i == 0 || !(isalnum((unsigned char)text[i - 1]) || text[i - 1] == '_')) &&
           (i + n == len || !(isalnum((unsigned char)text[i + n]) || text[i + n] == '_'));
}

/* Where the parenthesis opened at text[open] closes (len: nowhere). */
static size_t
closing(const char *text, size_t len, size_t open)
{
    int depth = 0;

    for (size_t i = open; i < len; i++) {
        size_t j = skip_quoted(text, len, i);

        if (j != i) {
            i = j - 1;
            continue;
        }
        if (text[i] == '(')
            depth++;
        else if (text[i] == ')' && --depth == 0)
            return i;
    }
    return len;
}

/* Flink's window table functions, TABLE(TUMBLE(TABLE t, ...)): the outer
 * TABLE( ... ) and the TABLE before the table's name are blanked, which
 * leaves the form PostgreSQL's grammar reads, TUMBLE(t, ...), its places
 * unchanged for errors. */
static void
take_window_tables(char *text, size_t len)
{
    static const char *const fns[] = { "TUMBLE", "HOP", "SESSION", "CUMULATE" };

    for (size_t i = 0; i < len; i++) {
        size_t j = skip_quoted(text, len, i), k, fn = SIZE_MAX;

        if (j != i) {
            i = j - 1;
            continue;
        }
        for (size_t f = 0; f < ARRAY_SIZE(fns); f++)
            if (word_at(text, len, i, fns[f]))
                fn = strlen(fns[f]);
        if (fn == SIZE_MAX)
            continue;
        for (k = i + fn; k < len && isspace((unsigned char)text[k]); k++)
            ;
        if (k >= len || text[k] != '(')
            continue;
        /* TABLE t as the first argument */
        for (j = k + 1; j < len && isspace((unsigned char)text[j]); j++)
            ;
        if (word_at(text, len, j, "TABLE"))
            memset(text + j, ' ', 5);
        /* TABLE( around the call */
        for (j = i; j > 0 && isspace((unsigned char)text[j - 1]); j--)
            ;
        if (j > 0 && text[j - 1] == '(') {
            size_t open = j - 1, end = closing(text, len, open);

            for (j = open; j > 0 && isspace((unsigned char)text[j - 1]); j--)
                ;
            if (j >= 5 && word_at(text, len, j - 5, "TABLE") && end < len) {
                memset(text + j - 5, ' ', 5);
                text[open] = ' ';
                text[end] = ' ';
            }
        }
        i += fn - 1;
    }
}

/* Flink's temporal join, JOIN t FOR SYSTEM_TIME AS OF s.col [AS] x, which
 * PostgreSQL's grammar lacks: FOR SYSTEM_TIME AS OF and its column are
 * blanked, and where the table's name starts (its RangeVar's location)
 * and the column's name ([table.]column) are kept in at (a JSON object of
 * location to name), which the tree's RangeVar gets once parsed. */
static void
take_temporal(char *text, size_t len, json_t *at)
{
    static const char *const words[] = { "FOR", "SYSTEM_TIME", "AS", "OF" };

    for (size_t i = 0; i < len; i++) {
        size_t j = skip_quoted(text, len, i), k = i, b, e, t;
        char key[32];

        if (j != i) {
            i = j - 1;
            continue;
        }
        for (size_t w = 0; w < ARRAY_SIZE(words); w++) {
            if (!word_at(text, len, k, words[w]))
                break;
            k += strlen(words[w]);
            while (k < len && isspace((unsigned char)text[k]))
                k++;
            if (w + 1 < ARRAY_SIZE(words))
                continue;
            /* the column: [table.]name, words and dots */
            for (b = e = k; e < len && (isalnum((unsigned char)text[e]) || text[e] == '_' ||
                                        text[e] == '.' || text[e] == '"');
                 e++)
                ;
            /* the table's name before FOR */
            for (t = i; t > 0 && isspace((unsigned char)text[t - 1]); t--)
                ;
            while (t > 0 && !isspace((unsigned char)text[t - 1]) && text[t - 1] != '(' &&
                   text[t - 1] != ',')
                t--;
            if (e == b)
                break;
            snprintf(key, sizeof key, "%zu", t);
            json_object_set_new(at, key, json_stringn(text + b, e - b));
            memset(text + i, ' ', e - i);
            i = e - 1;
        }
    }
}

/* Each RangeVar of tree whose location at names: its "forSystemTime". */
static void
mark_temporal(json_t *tree, json_t *at)
{
    json_t *rv = json_object_get(tree, "RangeVar"), *v;
    const char *key;
    size_t i;

    if (rv != NULL) {
        char loc[32];

        snprintf(loc, sizeof loc, "%lld",
                 (long long)json_integer_value(json_object_get(rv, "location")));
        if ((v = json_object_get(at, loc)) != NULL)
            json_object_set(rv, "forSystemTime", v);
        return;
    }
    if (json_is_array(tree)) {
        json_array_foreach(tree, i, v) mark_temporal(v, at);
    } else if (json_is_object(tree)) {
        json_object_foreach(tree, key, v) mark_temporal(v, at);
    }
}

static int
parse_statement(const char *script, const struct sql_stmt_text *st, struct sql_parsed *out,
                spate_error *err)
{
    char *text = xstrndup(script + st->offset, st->len);
    PgQueryParseResult r;
    json_t *root, *stmts, *stmt, *temporal;
    json_error_t jerr;
    int rc = 0;

    memset(out, 0, sizeof *out);
    out->offset = st->offset;
    if (parse_flink_statement(script, st, out, err, &rc)) {
        free(text);
        return rc;
    }
    if (starts_with_create(text, st->len) &&
        (rc = take_watermark(text, st->len, st->offset, script, out, err)) < 0) {
        free(text);
        return rc;
    }
    if (starts_with_create(text, st->len) &&
        (rc = take_partitioned_by(text, st->len, st->offset, script, out, err)) < 0) {
        free(text);
        return rc;
    }
    if (starts_with_create(text, st->len))
        take_not_enforced(text, st->len, out);
    rc = 0;
    take_window_tables(text, st->len);
    temporal = json_object();
    take_temporal(text, st->len, temporal);
    r = pg_query_parse(text);
    free(text);
    if (r.error != NULL) {
        size_t pos = r.error->cursorpos > 0 ? (size_t)r.error->cursorpos - 1 : 0;

        rc = sql_error_at(err, SPATE_EINVAL, script, st->offset + pos, "%s", r.error->message);
        pg_query_free_parse_result(r);
        json_decref(temporal);
        return rc;
    }
    root = json_loads(r.parse_tree, 0, &jerr);
    pg_query_free_parse_result(r);
    stmts = json_object_get(root, "stmts");
    if (!json_is_array(stmts) || json_array_size(stmts) != 1 ||
        !json_is_object(stmt = json_object_get(json_array_get(stmts, 0), "stmt"))) {
        json_decref(root);
        json_decref(temporal);
        return sql_error_at(err, SPATE_EINVAL, script, st->offset, "one statement expected here");
    }
    mark_temporal(stmt, temporal);
    json_decref(temporal);
    out->kind = SQL_STMT_PG;
    out->tree = json_incref(stmt);
    json_decref(root);
    return 0;
}

int
sql_parse(const char *script, const struct sql_stmt_text *st, struct sql_parsed *out,
          spate_error *err)
{
    int rc = parse_statement(script, st, out, err);

    /* A failed parse leaves nothing to release. */
    if (rc != 0)
        sql_parsed_release(out);
    return rc;
}

void
sql_parsed_release(struct sql_parsed *p)
{
    json_decref(p->tree);
    free(p->watermark_column);
    for (int i = 0; i < p->npartition_columns; i++)
        free(p->partition_columns[i]);
    free(p->partition_columns);
    free(p->key);
    free(p->value);
    memset(p, 0, sizeof *p);
}
