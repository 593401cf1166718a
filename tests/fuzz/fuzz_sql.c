/* libFuzzer target: a SQL script as `spate sql` reads it, in a session that
 * plans only (no executor): statements cut, parsed by libpg_query, bound,
 * compiled and planned, EXPLAIN's plan and JobGraph built; tables of every
 * connector SQL plans are there to read from. No script may crash, leak or
 * read out of bounds: each gets a result or an error. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sql/sql_session.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char prelude[] =
    "CREATE TABLE t (a INT, b BIGINT, x DOUBLE PRECISION, s VARCHAR, f BOOLEAN, "
    "d DECIMAL(10, 2), day DATE, ts TIMESTAMP(3), i INTERVAL) WITH (connector = 'datagen', "
    "\"number-of-rows\" = '10');\n"
    "CREATE TABLE c (a INT, s VARCHAR) WITH (connector = 'filesystem', path = '/nonexistent', "
    "format = 'csv');\n"
    "CREATE TABLE p (a INT, s VARCHAR) WITH (connector = 'print');\n";

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct sql_session_options o = { 0 };
    struct sql_session *s;
    spate_error err = { 0 };
    FILE *out = fopen("/dev/null", "w");
    char *script;

    if (size > 1 << 16 || out == NULL) {
        if (out != NULL)
            fclose(out);
        return 0;
    }
    script = malloc(sizeof prelude + size);
    memcpy(script, prelude, sizeof prelude - 1);
    memcpy(script + sizeof prelude - 1, data, size);
    script[sizeof prelude - 1 + size] = '\0';
    o.out = out;
    s = sql_session_new(&o);
    sql_session_run(s, script, &err);
    sql_session_free(s);
    free(script);
    fclose(out);
    return 0;
}
