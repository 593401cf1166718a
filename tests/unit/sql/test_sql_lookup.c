/* Unit tests of src/sql's lookup join and what it stands on: its spec
 * survives its encoding and a decoded one is checked (a type other than
 * INNER or LEFT, a key column out of the table or of another type); the
 * parser marks the RangeVar of FOR SYSTEM_TIME AS OF with its column and
 * leaves the rest for PostgreSQL's grammar; a CSV line's fields, quotes,
 * NULLs and errors (sql_csv_read); a semi or anti join's output is the
 * left side's columns only. */
#include <criterion/criterion.h>
#include <string.h>

#include "core/alloc.h"
#include "sql/sql_lookup.h"
#include "sql/sql_parser.h"

static struct sql_column left[] = {
    { "$key", { SQL_VARCHAR, 0, 0, false } },
    { "$k0", { SQL_BIGINT, 0, 0, true } },
    { "id", { SQL_INT, 0, 0, false } },
};
/* [$key, the key, the table's columns: value, key] */
static struct sql_column right[] = {
    { "$key", { SQL_VARCHAR, 0, 0, false } },
    { "$k0", { SQL_BIGINT, 0, 0, true } },
    { "value", { SQL_VARCHAR, 0, 0, true } },
    { "key", { SQL_BIGINT, 0, 0, true } },
};

static struct sql_join_spec
valid_join(void)
{
    struct sql_join_spec j = { 0 };

    j.left = left;
    j.nleft = 3;
    j.right = right;
    j.nright = 4;
    j.nkey = 1;
    j.type = SQL_JOIN_LEFT;
    return j;
}

static int
decode(struct sql_join_spec *j, int key_col, struct sql_lookup_spec **out, spate_error *err)
{
    int key_cols[1] = { key_col };
    struct sql_lookup_spec s = { j, "/data/side_input.csv", ';', true, key_cols };
    uint8_t *bytes;
    size_t len;
    int rc;

    sql_lookup_spec_encode(&s, &bytes, &len);
    rc = sql_lookup_spec_decode(bytes, len, out, err);
    free(bytes);
    return rc;
}

Test(sql_lookup, a_spec_survives_its_encoding)
{
    struct sql_join_spec j = valid_join();
    struct sql_lookup_spec *out = NULL;
    spate_error err = { 0 };

    cr_assert_eq(decode(&j, 1, &out, &err), 0, "%s", err.message);
    cr_assert_str_eq(out->path, "/data/side_input.csv");
    cr_assert_eq(out->csv_delimiter, ';');
    cr_assert(out->ignore_parse_errors);
    cr_assert_eq(out->key_cols[0], 1);
    cr_assert_eq(out->join->type, SQL_JOIN_LEFT);
    cr_assert_eq(out->join->nright, 4);
    cr_assert_str_eq(out->join->right[2].name, "value");
    sql_lookup_spec_free(out);
}

Test(sql_lookup, a_broken_spec_is_refused)
{
    struct sql_join_spec j = valid_join();
    struct sql_lookup_spec *out = NULL;
    spate_error err = { 0 };

    /* the key's column: out of the table, or a VARCHAR for a BIGINT key */
    cr_assert_neq(decode(&j, 2, &out, &err), 0);
    cr_assert(strstr(err.message, "key 0") != NULL, "%s", err.message);
    cr_assert_neq(decode(&j, -1, &out, &err), 0);
    cr_assert_neq(decode(&j, 0, &out, &err), 0);
    cr_assert(strstr(err.message, "key 0") != NULL, "%s", err.message);
    /* RIGHT, FULL, SEMI: no lookup join */
    j.type = SQL_JOIN_RIGHT;
    cr_assert_neq(decode(&j, 1, &out, &err), 0);
    cr_assert(strstr(err.message, "its type or keys") != NULL, "%s", err.message);
    j.type = SQL_JOIN_SEMI;
    cr_assert_neq(decode(&j, 1, &out, &err), 0);
    j.type = SQL_JOIN_INNER;
    cr_assert_eq(decode(&j, 1, &out, &err), 0, "%s", err.message);
    sql_lookup_spec_free(out);
    cr_assert_neq(sql_lookup_spec_decode((const uint8_t *)"\xff\xff", 2, &out, &err), 0);
    cr_assert_null(out);
}

/* The first RangeVar of tree with key forSystemTime, or NULL. */
static json_t *
temporal_range_var(json_t *tree)
{
    json_t *rv = json_object_get(tree, "RangeVar"), *v, *found;
    const char *key;
    size_t i;

    if (rv != NULL && json_object_get(rv, "forSystemTime") != NULL)
        return rv;
    if (json_is_array(tree)) {
        json_array_foreach(tree, i, v) if ((found = temporal_range_var(v)) != NULL) return found;
    } else if (json_is_object(tree)) {
        json_object_foreach(tree, key, v) if ((found = temporal_range_var(v)) != NULL) return found;
    }
    return NULL;
}

Test(sql_lookup, the_parser_marks_the_table_of_for_system_time_as_of)
{
    const char *script = "SELECT B.auction, S.value FROM (SELECT *, PROCTIME() AS p FROM bid) B\n"
                         "JOIN side_input FOR SYSTEM_TIME AS OF B.p AS S ON B.auction = S.key";
    struct sql_stmt_text st = { 0, strlen(script) };
    struct sql_parsed p;
    spate_error err = { 0 };
    json_t *rv;

    cr_assert_eq(sql_parse(script, &st, &p, &err), 0, "%s", err.message);
    rv = temporal_range_var(p.tree);
    cr_assert_not_null(rv);
    cr_assert_str_eq(json_string_value(json_object_get(rv, "relname")), "side_input");
    cr_assert_str_eq(json_string_value(json_object_get(rv, "forSystemTime")), "B.p");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(rv, "alias"), "aliasname")),
                     "s");
    /* its location the table's name, for errors */
    cr_assert_eq(json_integer_value(json_object_get(rv, "location")),
                 strstr(script, "side_input") - script);
    sql_parsed_release(&p);

    /* in quotes it is text, not a temporal join */
    script = "SELECT 'x FOR SYSTEM_TIME AS OF y' FROM t";
    st.len = strlen(script);
    cr_assert_eq(sql_parse(script, &st, &p, &err), 0, "%s", err.message);
    cr_assert_null(temporal_range_var(p.tree));
    sql_parsed_release(&p);
}

static const struct sql_column csv_cols[] = {
    { "k", { SQL_BIGINT, 0, 0, true } },
    { "v", { SQL_VARCHAR, 0, 0, true } },
    { "d", { SQL_DOUBLE, 0, 0, true } },
};

static int
csv(const char *line, struct sql_value *v, char *scratch, spate_error *err)
{
    return sql_csv_read(csv_cols, 3, ',', line, strlen(line), v, scratch, err);
}

Test(sql_lookup, a_csv_line_into_values)
{
    struct sql_value v[3];
    char scratch[64];
    spate_error err = { 0 };

    cr_assert_eq(csv("7,\"a,\"\"b\",2.5\r", v, scratch, &err), 0, "%s", err.message);
    cr_assert_eq(v[0].i, 7);
    cr_assert_eq(v[1].s.len, 4);
    cr_assert_eq(memcmp(v[1].s.p, "a,\"b", 4), 0);
    cr_assert_float_eq(v[2].f, 2.5, 1e-12);
    /* an empty field is NULL, a quoted empty one the empty string */
    cr_assert_eq(csv(",\"\",", v, scratch, &err), 0, "%s", err.message);
    cr_assert(v[0].null);
    cr_assert(!v[1].null);
    cr_assert_eq(v[1].s.len, 0);
    cr_assert(v[2].null);
    /* what is wrong, and where */
    cr_assert_neq(csv("x,a,1", v, scratch, &err), 0);
    cr_assert(strstr(err.message, "column 'k'") != NULL, "%s", err.message);
    cr_assert_neq(csv("1,a", v, scratch, &err), 0);
    cr_assert(strstr(err.message, "2 fields, not 3") != NULL, "%s", err.message);
    cr_assert_neq(csv("1,a,2,3", v, scratch, &err), 0);
    cr_assert(strstr(err.message, "more than 3 fields") != NULL, "%s", err.message);
    cr_assert_neq(csv("1,\"a,2", v, scratch, &err), 0);
    cr_assert(strstr(err.message, "not closed") != NULL, "%s", err.message);
}

Test(sql_lookup, a_semi_or_anti_joins_output_is_the_left_sides)
{
    struct sql_join_spec j = valid_join();
    struct sql_column *out;
    int n;

    for (int t = SQL_JOIN_SEMI; t <= SQL_JOIN_ANTI; t++) {
        j.type = (enum sql_join_type)t;
        out = sql_join_output(&j, &n);
        cr_assert_eq(n, 2, "$kind and id");
        cr_assert_str_eq(out[1].name, "id");
        for (int i = 0; i < n; i++)
            free(out[i].name);
        free(out);
    }
}
