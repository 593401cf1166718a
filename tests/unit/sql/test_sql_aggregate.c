/* Unit tests of src/sql's aggregation: a spec survives its encoding, a
 * decoded spec is checked before an operator runs it (each field broken in
 * turn), result types are Flink's, and group keys keep NULL apart from
 * every value. */
#include <criterion/criterion.h>
#include <string.h>

#include "core/alloc.h"
#include "proto/sql.pb-c.h"
#include "sql/sql_aggregate.h"
#include "sql/sql_program.h"

static struct sql_column input[] = {
    { "$key", { SQL_VARCHAR, 0, 0, false } }, { "$g0", { SQL_VARCHAR, 0, 0, true } },
    { "$a0", { SQL_INT, 0, 0, true } },       { "$f0", { SQL_BOOLEAN, 0, 0, true } },
    { "$a1", { SQL_DOUBLE, 0, 0, true } },
};

static struct sql_agg_spec
valid_spec(struct sql_agg_call *calls)
{
    calls[0] = (struct sql_agg_call){ SQL_AGG_SUM, 2, 3, { "$agg0", { SQL_INT, 0, 0, true } } };
    calls[1] = (struct sql_agg_call){ SQL_AGG_AVG, 4, -1, { "$agg1", { SQL_DOUBLE, 0, 0, true } } };
    calls[2] = (struct sql_agg_call){
        SQL_AGG_COUNT_STAR, -1, -1, { "$agg2", { SQL_BIGINT, 0, 0, false } }
    };
    return (struct sql_agg_spec){ input, 5, 1, calls, 3, SQL_WINDOW_HOP, 10000, 5000, 0 };
}

static int
decode(const struct sql_agg_spec *s, spate_error *err)
{
    struct sql_agg_spec *out = NULL;
    uint8_t *bytes;
    size_t len;
    int rc;

    sql_agg_spec_encode(s, &bytes, &len);
    rc = sql_agg_spec_decode(bytes, len, &out, err);
    sql_agg_spec_free(out);
    free(bytes);
    return rc;
}

Test(sql_aggregate, a_spec_survives_its_encoding)
{
    struct sql_agg_call calls[3];
    struct sql_agg_spec s = valid_spec(calls), *out = NULL;
    spate_error err = { 0 };
    uint8_t *bytes;
    size_t len;
    struct sql_column *cols;
    int n;

    sql_agg_spec_encode(&s, &bytes, &len);
    cr_assert_eq(sql_agg_spec_decode(bytes, len, &out, &err), 0, "%s", err.message);
    cr_assert_eq(out->ninput, 5);
    cr_assert_eq(out->ngroup, 1);
    cr_assert_eq(out->ncalls, 3);
    cr_assert_eq(out->calls[0].filter, 3);
    cr_assert_eq(out->calls[2].arg, -1);
    cr_assert_eq(out->window, SQL_WINDOW_HOP);
    cr_assert_eq(out->slide_ms, 5000);
    /* $kind, the group, the window's three, the calls' three */
    cols = sql_agg_output(out, &n);
    cr_assert_eq(n, 8);
    cr_assert_str_eq(cols[0].name, "$kind");
    cr_assert_str_eq(cols[2].name, "window_start");
    cr_assert_str_eq(cols[4].name, "window_time");
    cr_assert_str_eq(cols[7].name, "$agg2");
    for (int i = 0; i < n; i++)
        free(cols[i].name);
    free(cols);
    sql_agg_spec_free(out);
    free(bytes);
}

Test(sql_aggregate, a_decoded_spec_is_checked_before_it_runs)
{
    struct sql_agg_call calls[3];
    struct sql_agg_spec s;
    spate_error err = { 0 };

    s = valid_spec(calls);
    cr_assert_eq(decode(&s, &err), 0, "%s", err.message);
    s.ngroup = 5; /* no room for the key */
    cr_assert_eq(decode(&s, &err), SPATE_EINVAL);
    s = valid_spec(calls);
    calls[0].arg = 7; /* out of range */
    cr_assert_eq(decode(&s, &err), SPATE_EINVAL);
    s = valid_spec(calls);
    calls[0].filter = 2; /* no BOOLEAN */
    cr_assert_eq(decode(&s, &err), SPATE_EINVAL);
    s = valid_spec(calls);
    calls[0].result.type.id = SQL_VARCHAR; /* not SUM's type */
    cr_assert_eq(decode(&s, &err), SPATE_EINVAL);
    s = valid_spec(calls);
    calls[2].arg = 2; /* COUNT(*) takes none */
    cr_assert_eq(decode(&s, &err), SPATE_EINVAL);
    s = valid_spec(calls);
    s.slide_ms = 0;
    cr_assert_eq(decode(&s, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "window") != NULL, "%s", err.message);
    s = valid_spec(calls);
    s.window = (enum sql_window_kind)9;
    cr_assert_eq(decode(&s, &err), SPATE_EINVAL);
    cr_assert_eq(
        sql_agg_spec_decode((const uint8_t *)"\xff\xff", 2, &(struct sql_agg_spec *){ 0 }, &err),
        SPATE_EINVAL);
}

Test(sql_aggregate, result_types_are_flinks)
{
    struct sql_type t, dec = { SQL_DECIMAL, 10, 2, true }, str = { SQL_VARCHAR, 0, 0, true };

    cr_assert_eq(sql_agg_result_type(SQL_AGG_COUNT, &str, &t), 0);
    cr_assert(t.id == SQL_BIGINT && !t.nullable);
    cr_assert_eq(sql_agg_result_type(SQL_AGG_SUM, &dec, &t), 0);
    cr_assert(t.id == SQL_DECIMAL && t.scale == 2 && t.nullable);
    cr_assert_eq(sql_agg_result_type(SQL_AGG_AVG, &dec, &t), 0);
    cr_assert(t.id == SQL_DECIMAL && t.precision == 18 && t.scale == 6 && t.nullable);
    dec.scale = 8;
    cr_assert_eq(sql_agg_result_type(SQL_AGG_AVG, &dec, &t), 0);
    cr_assert(t.id == SQL_DECIMAL && t.scale == 8);
    cr_assert_eq(sql_agg_result_type(SQL_AGG_MAX, &str, &t), 0);
    cr_assert_eq(t.id, SQL_VARCHAR);
    cr_assert_eq(sql_agg_result_type(SQL_AGG_SUM, &str, &t), SPATE_ENOTSUP);
}

Test(sql_aggregate, a_group_key_keeps_null_apart)
{
    struct sql_type types[2] = { { SQL_VARCHAR, 0, 0, true }, { SQL_BIGINT, 0, 0, true } };
    struct sql_value a[2] = { { .s = { "ab", 2 } }, { .i = 0, .null = true } };
    struct sql_value b[2] = { { .s = { "a", 1 } }, { .i = 0 } };
    int regs[2] = { 0, 1 };
    char ka[64], kb[64];
    size_t la = sql_key_encode(types, a, regs, 2, ka), lb = sql_key_encode(types, b, regs, 2, kb);

    cr_assert_eq(la, sql_key_size(types, a, regs, 2));
    cr_assert_eq(lb, sql_key_size(types, b, regs, 2));
    cr_assert(la != lb || memcmp(ka, kb, la) != 0);
    b[0].s.p = "ab";
    b[0].s.len = 2;
    lb = sql_key_encode(types, b, regs, 2, kb);
    cr_assert(la != lb || memcmp(ka, kb, la) != 0, "NULL and 0 made the same key");
    b[1].null = true;
    lb = sql_key_encode(types, b, regs, 2, kb);
    cr_assert(la == lb && memcmp(ka, kb, la) == 0);
}
