/* Scalar SQL functions in C (include/spate/sql_udf.h): the Nexmark
 * benchmark's count_char, which its query 14 calls,
 *
 *     CREATE FUNCTION count_char(VARCHAR, VARCHAR) RETURNS BIGINT
 *         AS 'build/examples/nexmark_udf.so', 'count_char' LANGUAGE C;
 *     SELECT count_char(extra, 'c') FROM bid;
 *
 * As the Nexmark repository's CountChar: how many times the first
 * character of the second string occurs in the first; a NULL string has
 * none. */
#include <string.h>

#include <spate/sql_udf.h>

/* The bytes of the UTF-8 character at s (1 for a byte that starts none). */
static size_t
char_len(const char *s, size_t len)
{
    unsigned char c = (unsigned char)s[0];
    size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;

    return n <= len ? n : 1;
}

static void
count_char_eval(spate_sql_call *call, const spate_sql_value *args, int nargs,
                spate_sql_value *result)
{
    const spate_sql_value *s = &args[0], *ch = &args[1];
    size_t n;

    (void)call;
    (void)nargs;
    if (ch->null || ch->s.len == 0)
        return; /* NULL: there is no character to count */
    result->null = false;
    result->i = 0;
    if (s->null)
        return;
    n = char_len(ch->s.p, ch->s.len);
    for (size_t i = 0; i + n <= s->s.len; i++)
        if (memcmp(s->s.p + i, ch->s.p, n) == 0) {
            result->i++;
            i += n - 1;
        }
}

SPATE_SQL_FUNCTION(count_char, count_char_eval, SPATE_SQL_BIGINT, false, SPATE_SQL_VARCHAR,
                   SPATE_SQL_VARCHAR);
