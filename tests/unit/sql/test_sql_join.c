/* Unit tests of src/sql's join spec: it survives its encoding, a decoded
 * spec is checked before an operator runs it (each field broken in turn:
 * bad bytes, columns, keys of types that encode apart, the interval's
 * bounds, the window, a SESSION window's gap), and the output's columns
 * are each side's own, a window join's window columns, NULL where a side
 * can be padded. */
#include <criterion/criterion.h>
#include <string.h>

#include "core/alloc.h"
#include "sql/sql_join.h"

static struct sql_column left[] = {
    { "$key", { SQL_VARCHAR, 0, 0, false } },
    { "$k0", { SQL_INT, 0, 0, true } },
    { "id", { SQL_INT, 0, 0, false } },
    { "s", { SQL_VARCHAR, 0, 0, true } },
};
static struct sql_column right[] = {
    { "$key", { SQL_VARCHAR, 0, 0, false } },
    { "$k0", { SQL_BIGINT, 0, 0, true } },
    { "t", { SQL_TIMESTAMP, 3, 0, false } },
};

static struct sql_join_spec
valid_spec(void)
{
    struct sql_join_spec s = { 0 };

    s.left = left;
    s.nleft = 4;
    s.right = right;
    s.nright = 3;
    s.nkey = 1;
    s.type = SQL_JOIN_LEFT;
    s.time = SQL_JOIN_INTERVAL;
    s.lower_ms = -2000;
    s.upper_ms = 1000;
    return s;
}

static int
decode(const struct sql_join_spec *s, spate_error *err)
{
    struct sql_join_spec *out = NULL;
    uint8_t *bytes;
    size_t len;
    int rc;

    sql_join_spec_encode(s, &bytes, &len);
    rc = sql_join_spec_decode(bytes, len, &out, err);
    sql_join_spec_free(out);
    free(bytes);
    return rc;
}

Test(sql_join, a_spec_survives_its_encoding)
{
    struct sql_join_spec s = valid_spec(), *out = NULL;
    uint8_t residual[] = { 1, 2, 3 };
    spate_error err = { 0 };
    uint8_t *bytes;
    size_t len;

    s.residual = residual;
    s.residual_len = sizeof residual;
    sql_join_spec_encode(&s, &bytes, &len);
    cr_assert_eq(sql_join_spec_decode(bytes, len, &out, &err), 0, "%s", err.message);
    cr_assert_eq(out->nleft, 4);
    cr_assert_eq(out->nright, 3);
    cr_assert_str_eq(out->left[3].name, "s");
    cr_assert_eq(out->right[2].type.id, SQL_TIMESTAMP);
    cr_assert_eq(out->nkey, 1);
    cr_assert_eq(out->type, SQL_JOIN_LEFT);
    cr_assert_eq(out->time, SQL_JOIN_INTERVAL);
    cr_assert_eq(out->lower_ms, -2000);
    cr_assert_eq(out->upper_ms, 1000);
    cr_assert_eq(out->residual_len, sizeof residual);
    cr_assert_eq(memcmp(out->residual, residual, sizeof residual), 0);
    sql_join_spec_free(out);
    free(bytes);
}

Test(sql_join, a_broken_spec_is_refused_with_what_is_wrong)
{
    struct sql_join_spec s, *out = NULL;
    struct sql_column l2[4], r2[3];
    spate_error err = { 0 };
    static const uint8_t garbage[] = { 0xff, 0xff, 0xff, 0x0f };

    cr_assert_neq(sql_join_spec_decode(garbage, sizeof garbage, &out, &err), 0);
    cr_assert_null(out);
    cr_assert(strstr(err.message, "malformed SQL join") != NULL, "%s", err.message);

    s = valid_spec();
    s.nkey = 3; /* more keys than the right side has columns */
    cr_assert_neq(decode(&s, &err), 0);
    cr_assert(strstr(err.message, "its columns") != NULL, "%s", err.message);

    memcpy(l2, left, sizeof l2);
    l2[1].type = (struct sql_type){ SQL_DOUBLE, 0, 0, true }; /* encodes apart from BIGINT */
    s = valid_spec();
    s.left = l2;
    cr_assert_neq(decode(&s, &err), 0);
    cr_assert(strstr(err.message, "key 1") != NULL, "%s", err.message);

    memcpy(r2, right, sizeof r2);
    r2[0].type = (struct sql_type){ SQL_INT, 0, 0, false }; /* $key is no VARCHAR */
    s = valid_spec();
    s.right = r2;
    cr_assert_neq(decode(&s, &err), 0);

    s = valid_spec();
    s.lower_ms = 5000; /* above upper */
    cr_assert_neq(decode(&s, &err), 0);
    cr_assert(strstr(err.message, "its type or time") != NULL, "%s", err.message);

    s = valid_spec();
    s.time = SQL_JOIN_WINDOW;
    s.window = SQL_WINDOW_SESSION; /* its gap in size_ms */
    s.size_ms = 0;
    cr_assert_neq(decode(&s, &err), 0);
    s.size_ms = 1000;
    cr_assert_eq(decode(&s, &err), 0, "%s", err.message);

    s = valid_spec();
    s.time = SQL_JOIN_WINDOW;
    s.window = SQL_WINDOW_HOP;
    s.size_ms = 6000;
    s.slide_ms = 0;
    cr_assert_neq(decode(&s, &err), 0);
    s.slide_ms = 2000;
    cr_assert_eq(decode(&s, &err), 0, "%s", err.message);
}

Test(sql_join, the_output_has_each_sides_columns_null_where_padded)
{
    struct sql_join_spec s = valid_spec();
    struct sql_column *out;
    int n;

    s.time = SQL_JOIN_WINDOW;
    s.window = SQL_WINDOW_TUMBLE;
    s.size_ms = 5000;
    out = sql_join_output(&s, &n);
    /* $kind, id, s, 3 window columns, t, 3 window columns */
    cr_assert_eq(n, 10);
    cr_assert_str_eq(out[0].name, "$kind");
    cr_assert_str_eq(out[1].name, "id");
    cr_assert_not(out[1].type.nullable, "the left side of a LEFT JOIN is never padded");
    cr_assert_str_eq(out[3].name, "window_start");
    cr_assert_not(out[3].type.nullable);
    cr_assert_str_eq(out[6].name, "t");
    cr_assert(out[6].type.nullable, "the right side of a LEFT JOIN can be padded");
    cr_assert(out[7].type.nullable);
    for (int i = 0; i < n; i++)
        free(out[i].name);
    free(out);
}
