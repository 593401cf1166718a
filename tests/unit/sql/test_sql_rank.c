/* Unit tests of src/sql's Top-N spec: it survives its encoding, its
 * output is the row and rn, and a decoded spec is checked before an
 * operator runs it (each field broken in turn). */
#include <criterion/criterion.h>
#include <string.h>

#include "sql/sql_rank.h"

static struct sql_column input[] = {
    { "$key", { SQL_VARCHAR, 0, 0, false } }, { "$p0", { SQL_TIMESTAMP, 3, 0, true } },
    { "id", { SQL_INT, 0, 0, true } },        { "s", { SQL_VARCHAR, 0, 0, true } },
    { "$o0", { SQL_DOUBLE, 0, 0, true } },    { "$o1", { SQL_INT, 0, 0, true } },
};

static struct sql_rank_spec
valid_spec(struct sql_rank_order *order)
{
    order[0] = (struct sql_rank_order){ 4, true, false };
    order[1] = (struct sql_rank_order){ 5, false, true };
    return (
        struct sql_rank_spec){ input, 6, 1, 2, order, 2, 3, true, false, 1, SQL_RANK_DENSE_RANK };
}

static int
decode(const struct sql_rank_spec *s, spate_error *err)
{
    struct sql_rank_spec *out = NULL;
    uint8_t *bytes;
    size_t len;
    int rc;

    sql_rank_spec_encode(s, &bytes, &len);
    rc = sql_rank_spec_decode(bytes, len, &out, err);
    sql_rank_spec_free(out);
    free(bytes);
    return rc;
}

Test(sql_rank, a_spec_survives_its_encoding)
{
    struct sql_rank_order order[2];
    struct sql_rank_spec s = valid_spec(order), *out = NULL;
    spate_error err = { 0 };
    struct sql_column *cols;
    uint8_t *bytes;
    size_t len;
    int n;

    sql_rank_spec_encode(&s, &bytes, &len);
    cr_assert_eq(sql_rank_spec_decode(bytes, len, &out, &err), 0, "%s", err.message);
    cr_assert_eq(out->npart, 1);
    cr_assert_eq(out->nrow, 2);
    cr_assert_eq(out->norder, 2);
    cr_assert(out->order[0].desc && !out->order[0].nulls_first);
    cr_assert(!out->order[1].desc && out->order[1].nulls_first);
    cr_assert_eq(out->limit, 3);
    cr_assert(out->emit_rank && !out->last_wins_ties);
    cr_assert_eq(out->window_end, 1);
    cr_assert_eq(out->function, SQL_RANK_DENSE_RANK);
    /* $kind, the row's two columns, rn */
    cols = sql_rank_output(out, "rank_number", &n);
    cr_assert_eq(n, 4);
    cr_assert_str_eq(cols[0].name, "$kind");
    cr_assert_str_eq(cols[1].name, "id");
    cr_assert_str_eq(cols[2].name, "s");
    cr_assert_str_eq(cols[3].name, "rank_number");
    cr_assert_eq(cols[3].type.id, SQL_BIGINT);
    for (int i = 0; i < n; i++)
        free(cols[i].name);
    free(cols);
    sql_rank_spec_free(out);
    free(bytes);
}

Test(sql_rank, a_decoded_spec_is_checked_before_it_runs)
{
    struct sql_rank_order order[2];
    struct sql_rank_spec s;
    spate_error err = { 0 };

    s = valid_spec(order);
    cr_assert_eq(decode(&s, &err), 0, "%s", err.message);
    s.nrow = 5; /* past the input */
    cr_assert_eq(decode(&s, &err), SPATE_EINVAL);
    s = valid_spec(order);
    order[1].col = 6; /* out of range */
    cr_assert_eq(decode(&s, &err), SPATE_EINVAL);
    s = valid_spec(order);
    order[0].col = 0; /* $key is no order */
    cr_assert_eq(decode(&s, &err), SPATE_EINVAL);
    s = valid_spec(order);
    s.norder = 0;
    cr_assert_eq(decode(&s, &err), SPATE_EINVAL);
    s = valid_spec(order);
    s.limit = 0;
    cr_assert_eq(decode(&s, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "limit") != NULL, "%s", err.message);
    s = valid_spec(order);
    s.window_end = 2; /* an INT is no window's end */
    cr_assert_eq(decode(&s, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "window") != NULL, "%s", err.message);
    s = valid_spec(order);
    s.function = (enum sql_rank_function)(SQL_RANK_DENSE_RANK + 1);
    cr_assert_eq(decode(&s, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "function") != NULL, "%s", err.message);
    cr_assert_eq(
        sql_rank_spec_decode((const uint8_t *)"\xff\xff", 2, &(struct sql_rank_spec *){ 0 }, &err),
        SPATE_EINVAL);
}
