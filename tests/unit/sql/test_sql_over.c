/* Unit tests of src/sql's OVER spec: it survives its encoding, its output
 * is the row and the calls' results, and a decoded spec is checked before
 * an operator runs it (each field broken in turn). */
#include <criterion/criterion.h>
#include <string.h>

#include "sql/sql_over.h"

static struct sql_column input[] = {
    { "$key", { SQL_VARCHAR, 0, 0, false } }, { "$p0", { SQL_VARCHAR, 0, 0, true } },
    { "id", { SQL_INT, 0, 0, true } },        { "$time", { SQL_TIMESTAMP, 3, 0, true } },
    { "$a0", { SQL_DOUBLE, 0, 0, true } },
};

static struct sql_over_spec
valid_spec(struct sql_agg_call *calls)
{
    calls[0] =
        (struct sql_agg_call){ SQL_AGG_AVG, 4, -1, { "$over0", { SQL_DOUBLE, 0, 0, true } } };
    calls[1] = (struct sql_agg_call){
        SQL_AGG_COUNT_STAR, -1, -1, { "$over1", { SQL_BIGINT, 0, 0, false } }
    };
    return (struct sql_over_spec){ input, 5, 1, 1, calls, 2, SQL_OVER_RANGE, 5000, 3 };
}

static int
decode(const struct sql_over_spec *s, spate_error *err)
{
    struct sql_over_spec *out = NULL;
    uint8_t *bytes;
    size_t len;
    int rc;

    sql_over_spec_encode(s, &bytes, &len);
    rc = sql_over_spec_decode(bytes, len, &out, err);
    sql_over_spec_free(out);
    free(bytes);
    return rc;
}

Test(sql_over, a_spec_survives_its_encoding)
{
    struct sql_agg_call calls[2];
    struct sql_over_spec s = valid_spec(calls), *out = NULL;
    spate_error err = { 0 };
    struct sql_column *cols;
    uint8_t *bytes;
    size_t len;
    int n;

    sql_over_spec_encode(&s, &bytes, &len);
    cr_assert_eq(sql_over_spec_decode(bytes, len, &out, &err), 0, "%s", err.message);
    cr_assert_eq(out->frame, SQL_OVER_RANGE);
    cr_assert_eq(out->preceding, 5000);
    cr_assert_eq(out->time, 3);
    cr_assert_eq(out->calls[0].arg, 4);
    cr_assert_eq(out->calls[1].arg, -1);
    /* the row's column, the calls' two */
    cols = sql_over_output(out, &n);
    cr_assert_eq(n, 3);
    cr_assert_str_eq(cols[0].name, "id");
    cr_assert_str_eq(cols[2].name, "$over1");
    for (int i = 0; i < n; i++)
        free(cols[i].name);
    free(cols);
    sql_over_spec_free(out);
    free(bytes);
}

Test(sql_over, a_decoded_spec_is_checked_before_it_runs)
{
    struct sql_agg_call calls[2];
    struct sql_over_spec s;
    spate_error err = { 0 };

    s = valid_spec(calls);
    cr_assert_eq(decode(&s, &err), 0, "%s", err.message);
    s.time = 2; /* an INT is no event time */
    cr_assert_eq(decode(&s, &err), SPATE_EINVAL);
    s = valid_spec(calls);
    calls[0].arg = 9; /* out of range */
    cr_assert_eq(decode(&s, &err), SPATE_EINVAL);
    s = valid_spec(calls);
    calls[0].kind = SQL_AGG_COUNT_DISTINCT; /* not over a frame */
    calls[0].result.type = (struct sql_type){ SQL_BIGINT, 0, 0, false };
    cr_assert_eq(decode(&s, &err), SPATE_EINVAL);
    s = valid_spec(calls);
    s.preceding = -2;
    cr_assert_eq(decode(&s, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "frame") != NULL, "%s", err.message);
    s = valid_spec(calls);
    s.ncalls = 0;
    cr_assert_eq(decode(&s, &err), SPATE_EINVAL);
    cr_assert_eq(
        sql_over_spec_decode((const uint8_t *)"\xff\xff", 2, &(struct sql_over_spec *){ 0 }, &err),
        SPATE_EINVAL);
}
