/* Unit tests of src/sql: statement splitting and parse errors, SQL values
 * as text, LIKE, the compiler and evaluator (three-valued logic, NULL,
 * CASE), the checks a decoded program must pass before it runs, the
 * Nexmark generator's first events, DATE_FORMAT, and a C function's call
 * bound as the TaskManager's Calc binds it (examples/nexmark_udf). */
#include <criterion/criterion.h>
#include <string.h>

#include "core/alloc.h"
#include "proto/sql.pb-c.h"
#include "sql/sql_expr.h"
#include "sql/sql_nexmark.h"
#include "sql/sql_parser.h"
#include "sql/sql_program.h"
#include "sql/sql_types.h"
#include "sql/sql_udf.h"

Test(sql_parser, statements_split_outside_quotes_and_comments)
{
    const char *s = "SELECT ';' FROM t; -- a;b\n SELECT \"x;y\" /* ; */ FROM u;;  ";
    struct sql_stmt_text *st;
    int n;

    sql_split(s, &st, &n);
    cr_assert_eq(n, 2);
    cr_assert_eq(strncmp(s + st[0].offset, "SELECT ';' FROM t", st[0].len), 0);
    cr_assert(strstr(s + st[1].offset, "SELECT \"x;y\"") != NULL);
    free(st);
}

Test(sql_parser, a_syntax_error_names_line_and_column_with_a_caret)
{
    const char *s = "SELECT 1;\nSELECT a\n  FROM t WHER a > 1;";
    struct sql_stmt_text *st;
    struct sql_parsed p;
    spate_error err = { 0 };
    int n;

    sql_split(s, &st, &n);
    cr_assert_eq(n, 2);
    cr_assert_eq(sql_parse(s, &st[0], &p, &err), 0, "%s", err.message);
    sql_parsed_release(&p);
    cr_assert_eq(sql_parse(s, &st[1], &p, &err), SPATE_EINVAL);
    cr_assert_str_eq(err.message, "line 3, column 15: syntax error at or near \"a\"\n"
                                  "    FROM t WHER a > 1;\n"
                                  "                ^");
    free(st);
}

/* TABLE(TUMBLE(TABLE t, ...)): the two TABLEs go, the places stay, and
 * TABLE in a string or elsewhere is left alone. */
Test(sql_parser, flink_window_table_functions_are_read)
{
    const char *s = "SELECT 'TABLE(HOP(TABLE x' FROM TABLE ( TUMBLE(\n TABLE t, DESCRIPTOR(ts), "
                    "INTERVAL '1' SECOND)) AS w";
    struct sql_stmt_text st = { 0, strlen(s) };
    struct sql_parsed p;
    spate_error err = { 0 };
    json_t *from, *fc, *args;
    char *text;

    cr_assert_eq(sql_parse(s, &st, &p, &err), 0, "%s", err.message);
    from = json_array_get(json_object_get(json_object_get(p.tree, "SelectStmt"), "fromClause"), 0);
    fc = json_object_get(
        json_array_get(
            json_object_get(
                json_object_get(
                    json_array_get(
                        json_object_get(json_object_get(from, "RangeFunction"), "functions"), 0),
                    "List"),
                "items"),
            0),
        "FuncCall");
    args = json_object_get(fc, "args");
    cr_assert_eq(json_array_size(args), 3);
    /* t where it is in the script */
    cr_assert_eq(json_integer_value(json_object_get(
                     json_object_get(json_array_get(args, 0), "ColumnRef"), "location")),
                 (json_int_t)(strstr(s, " t,") + 1 - s));
    text = json_dumps(p.tree, 0);
    cr_assert(strstr(text, "TABLE(HOP(TABLE x") != NULL, "%s", text);
    free(text);
    sql_parsed_release(&p);
}

Test(sql_parser, flink_set_and_describe_are_read)
{
    const char *s = "SET 'parallelism.default' = '4'; DESCRIBE t; RESET; SET 'a' 'b'";
    struct sql_stmt_text *st;
    struct sql_parsed p;
    spate_error err = { 0 };
    int n;

    sql_split(s, &st, &n);
    cr_assert_eq(n, 4);
    cr_assert_eq(sql_parse(s, &st[0], &p, &err), 0);
    cr_assert_eq(p.kind, SQL_STMT_SET);
    cr_assert_str_eq(p.key, "parallelism.default");
    cr_assert_str_eq(p.value, "4");
    sql_parsed_release(&p);
    cr_assert_eq(sql_parse(s, &st[1], &p, &err), 0);
    cr_assert_eq(p.kind, SQL_STMT_DESCRIBE);
    cr_assert_str_eq(p.key, "t");
    sql_parsed_release(&p);
    cr_assert_eq(sql_parse(s, &st[2], &p, &err), 0);
    cr_assert_eq(p.kind, SQL_STMT_RESET);
    sql_parsed_release(&p);
    cr_assert_eq(sql_parse(s, &st[3], &p, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "SET takes 'key' = 'value'") != NULL, "%s", err.message);
    free(st);
}

static void
roundtrip(enum sql_type_id id, int p, int s, const char *in, const char *want)
{
    struct sql_type t = { id, p, s, true };
    struct sql_value v;
    spate_error err = { 0 };
    char buf[64];

    cr_assert_eq(sql_value_parse(&t, in, strlen(in), &v, &err), 0, "%s: %s", in, err.message);
    sql_value_format(&t, &v, buf, sizeof buf);
    cr_assert_str_eq(buf, want, "%s", in);
}

Test(sql_types, values_read_and_write_as_text)
{
    roundtrip(SQL_INT, 0, 0, "-42", "-42");
    roundtrip(SQL_BIGINT, 0, 0, "9007199254740993", "9007199254740993");
    roundtrip(SQL_DOUBLE, 0, 0, "1", "1.0");
    roundtrip(SQL_DOUBLE, 0, 0, "0.1", "0.1");
    roundtrip(SQL_DECIMAL, 10, 2, "12.345", "12.35");
    roundtrip(SQL_DECIMAL, 10, 2, "-0.5", "-0.50");
    roundtrip(SQL_BOOLEAN, 0, 0, "TRUE", "true");
    roundtrip(SQL_DATE, 0, 0, "2024-02-29", "2024-02-29");
    roundtrip(SQL_DATE, 0, 0, "1969-12-31", "1969-12-31");
    roundtrip(SQL_TIMESTAMP, 3, 0, "2024-01-02 03:04:05.678", "2024-01-02 03:04:05.678");
    roundtrip(SQL_TIMESTAMP, 3, 0, "1960-01-01T00:00:00", "1960-01-01 00:00:00.000");
    roundtrip(SQL_INTERVAL, 0, 0, "10 seconds", "+0 00:00:10.000");
    roundtrip(SQL_INTERVAL, 0, 0, "1 day 2 hours", "+1 02:00:00.000");
}

Test(sql_types, bad_values_say_what_and_why)
{
    struct sql_type t = { SQL_INT, 0, 0, true }, d = { SQL_DATE, 0, 0, true };
    struct sql_type dec = { SQL_DECIMAL, 4, 2, true };
    struct sql_value v;
    spate_error err = { 0 };

    cr_assert_eq(sql_value_parse(&t, "12x", 3, &v, &err), SPATE_EINVAL);
    cr_assert_str_eq(err.message, "'12x' is not a INT");
    cr_assert_eq(sql_value_parse(&t, "3000000000", 10, &v, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "out of range") != NULL, "%s", err.message);
    cr_assert_eq(sql_value_parse(&d, "2023-02-29", 10, &v, &err), SPATE_EINVAL);
    cr_assert_eq(sql_value_parse(&dec, "123.4", 5, &v, &err), SPATE_EINVAL);
}

Test(sql_program, like_matches_percent_underscore_and_escape)
{
    cr_assert(sql_like("hello", 5, "h%o", 3, 0));
    cr_assert(sql_like("hello", 5, "_ell_", 5, 0));
    cr_assert(!sql_like("hello", 5, "h_o", 3, 0));
    cr_assert(sql_like("", 0, "%", 1, 0));
    cr_assert(sql_like("a%b", 3, "a!%b", 4, '!'));
    cr_assert(!sql_like("axb", 3, "a!%b", 4, '!'));
    cr_assert(sql_like("abcabc", 6, "%abc", 4, 0));
}

/* Compiles expr over columns (a INT, b BOOLEAN, s VARCHAR) into p. */
static int
compile(const char *expr, struct sql_program *p, int *reg, spate_error *err)
{
    static struct sql_column cols[] = { { "a", { SQL_INT, 0, 0, true } },
                                        { "b", { SQL_BOOLEAN, 0, 0, true } },
                                        { "s", { SQL_VARCHAR, 0, 0, true } } };
    struct sql_scope scope = { "t", cols, 3 };
    char *script = xasprintf("SELECT %s FROM t", expr);
    struct sql_stmt_text st = { 0, strlen(script) };
    struct sql_parsed parsed;
    struct sql_compiler c;
    struct sql_operand o;
    json_t *val;
    int rc;

    memset(p, 0, sizeof *p);
    if ((rc = sql_parse(script, &st, &parsed, err)) != 0) {
        free(script);
        return rc;
    }
    val = json_object_get(
        json_object_get(
            json_array_get(
                json_object_get(json_object_get(parsed.tree, "SelectStmt"), "targetList"), 0),
            "ResTarget"),
        "val");
    sql_compiler_init(&c, p, &scope, script, 0, err);
    p->input = cols;
    p->ninput = 3;
    rc = sql_compile(&c, val, &o);
    sql_compiler_finish(&c);
    *reg = o.reg;
    sql_parsed_release(&parsed);
    free(script);
    return rc;
}

/* expr's value (as text, "NULL") for a, b, s (NULL where a_null ...). */
static void
eval(const char *expr, const struct sql_value *in, char *out, size_t cap)
{
    struct sql_program p;
    struct sql_eval e;
    spate_error err = { 0 };
    int reg;

    cr_assert_eq(compile(expr, &p, &reg, &err), 0, "%s: %s", expr, err.message);
    sql_eval_init(&e, &p);
    sql_eval_begin(&e);
    for (int i = 0; i < 3; i++)
        e.r[i] = in[i];
    sql_eval_run(&e);
    if (e.r[reg].null)
        snprintf(out, cap, "NULL");
    else
        sql_value_format(&p.regs[reg], &e.r[reg], out, cap);
    sql_eval_release(&e);
    for (int i = 0; i < p.ncode; i++)
        free(p.code[i].sval);
    free(p.code);
    free(p.regs);
}

#define CHECK(expr, want)                        \
    do {                                         \
        char got[64];                            \
                                                 \
        eval(expr, row, got, sizeof got);        \
        cr_assert_str_eq(got, want, "%s", expr); \
    } while (0)

Test(sql_program, three_valued_logic_and_null)
{
    struct sql_value row[3] = { { .i = 5 }, { .null = true }, { .s = { "abc", 3 } } };

    CHECK("b AND a > 10", "false");
    CHECK("b AND a > 1", "NULL");
    CHECK("b OR a > 1", "true");
    CHECK("b OR a > 10", "NULL");
    CHECK("NOT b", "NULL");
    CHECK("b IS NULL", "true");
    CHECK("a IN (1, NULL)", "NULL");
    CHECK("a IN (5, NULL)", "true");
    CHECK("a NOT IN (1, NULL)", "NULL");
    CHECK("a / 0", "NULL");
    CHECK("COALESCE(NULL, a + 1)", "6");
    CHECK("CASE WHEN b THEN 1 WHEN a > 3 THEN 2 ELSE 3 END", "2");
    CHECK("CASE WHEN b THEN 1 END", "NULL");
    CHECK("NULLIF(a, 5)", "NULL");
    CHECK("s || '-' || a", "abc-5");
    CHECK("upper(substring(s, 2))", "BC");
    CHECK("a * 2147483647", "2147483643"); /* INT wraps at 32 bits, as Java's */
    CHECK("CAST(a AS DECIMAL(5, 2)) / 2", "2.5");
    CHECK("1.25 * 2", "2.50");
    CHECK("1.5 + a", "6.5");
    CHECK("DATE '2024-03-01' - 1", "2024-02-29");
    CHECK("TIMESTAMP '2024-03-01 10:00:00' + INTERVAL '90' MINUTE", "2024-03-01 11:30:00.000");
    CHECK("EXTRACT(HOUR FROM TIMESTAMP '2024-03-01 10:20:00')", "10");
    CHECK("CAST('12' AS INT) + a", "17");
    CHECK("CAST(s AS INT)", "NULL"); /* 'abc' at run time: NULL */
    CHECK("-a", "-5");
    CHECK("a - -3", "8");
}

Test(sql_program, compile_errors_name_what_is_wrong)
{
    struct sql_program p;
    spate_error err = { 0 };
    int reg;

    cr_assert_eq(compile("a + s", &p, &reg, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "cannot apply '+' to INT and VARCHAR") != NULL, "%s",
              err.message);
    free(p.regs);
    free(p.code);
    cr_assert_neq(compile("aa + 1", &p, &reg, &err), 0);
    cr_assert(strstr(err.message, "column 'aa' does not exist in t; did you mean 'a'?") != NULL,
              "%s", err.message);
    free(p.regs);
    free(p.code);
    cr_assert_eq(compile("greatest(a, 1)", &p, &reg, &err), SPATE_ENOTSUP);
    cr_assert(strstr(err.message, "not supported: GREATEST") != NULL, "%s", err.message);
    free(p.regs);
    free(p.code);
}

/* A valid program's bytes, then each field broken in turn. */
static Sqlplan__Calc *
valid_calc(void)
{
    struct sql_program p;
    spate_error err = { 0 };
    uint8_t *bytes;
    size_t len;
    int reg;
    Sqlplan__Calc *c;

    cr_assert_eq(compile("CASE WHEN a > 1 THEN upper(s) END", &p, &reg, &err), 0);
    p.input_format = SQL_FORMAT_ROW;
    p.output_format = SQL_FORMAT_ROW;
    p.filter = -1;
    p.noutput = 1;
    p.outputs = &reg;
    p.output = (struct sql_column[]){ { "o", { SQL_VARCHAR, 0, 0, true } } };
    sql_program_encode(&p, &bytes, &len, &err);
    c = sqlplan__calc__unpack(NULL, len, bytes);
    cr_assert_not_null(c);
    free(bytes);
    for (int i = 0; i < p.ncode; i++)
        free(p.code[i].sval);
    free(p.code);
    free(p.regs);
    return c;
}

static int
decode(Sqlplan__Calc *c, spate_error *err)
{
    size_t len = sqlplan__calc__get_packed_size(c);
    uint8_t *bytes = xmalloc(len);
    struct sql_program *p = NULL;
    int rc;

    sqlplan__calc__pack(c, bytes);
    rc = sql_program_decode(bytes, len, &p, err);
    sql_program_free(p);
    free(bytes);
    return rc;
}

Test(sql_program, a_decoded_program_is_checked_before_it_runs)
{
    Sqlplan__Calc *c = valid_calc();
    spate_error err = { 0 };
    uint8_t junk[] = { 0xff, 0xff, 0xff };
    struct sql_program *p;
    size_t last = c->n_program - 1;
    int32_t saved;

    cr_assert_eq(decode(c, &err), 0, "%s", err.message);
    cr_assert_eq(sql_program_decode(junk, sizeof junk, &p, &err), SPATE_EINVAL);
    /* A register out of range. */
    saved = c->program[last]->a;
    c->program[last]->a = 9999;
    cr_assert_eq(decode(c, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "operand out of range or of the wrong type") != NULL);
    c->program[last]->a = saved;
    /* A string instruction reading an int register: its type is checked. */
    for (size_t i = 0; i < c->n_program; i++)
        if (c->program[i]->op == SQLOP_UPPER) {
            saved = c->program[i]->a;
            c->program[i]->a = 0; /* column a, an INT */
            cr_assert_eq(decode(c, &err), SPATE_EINVAL);
            c->program[i]->a = saved;
        }
    /* A jump backwards. */
    for (size_t i = 0; i < c->n_program; i++)
        if (c->program[i]->op == SQLOP_JMP_UNLESS_TRUE) {
            int64_t target = c->program[i]->imm;

            c->program[i]->imm = 0;
            cr_assert_eq(decode(c, &err), SPATE_EINVAL);
            cr_assert(strstr(err.message, "jump backwards") != NULL, "%s", err.message);
            c->program[i]->imm = target;
        }
    /* An unknown op and an output whose type is not its register's. */
    c->program[last]->op = 999;
    cr_assert_eq(decode(c, &err), SPATE_EINVAL);
    c->program[last]->op = SQLOP_COPY;
    c->output[0]->type = SQL_INT;
    cr_assert_eq(decode(c, &err), SPATE_EINVAL);
    sqlplan__calc__free_unpacked(c, NULL);
}

Test(sql_parser, statement_sets_begin_and_end)
{
    const char *s = "EXECUTE STATEMENT SET\nBEGIN\nINSERT INTO a SELECT x FROM b; END; "
                    "BEGIN STATEMENT SET; BEGIN";
    struct sql_stmt_text *st;
    struct sql_parsed p;
    spate_error err = { 0 };
    int n;

    sql_split(s, &st, &n);
    cr_assert_eq(n, 4);
    cr_assert_eq(sql_parse(s, &st[0], &p, &err), 0, "%s", err.message);
    cr_assert_eq(p.kind, SQL_STMT_SET_BEGIN);
    cr_assert_not_null(json_object_get(p.tree, "InsertStmt"));
    cr_assert_eq(p.offset, (size_t)(strstr(s, "INSERT") - s));
    sql_parsed_release(&p);
    cr_assert_eq(sql_parse(s, &st[1], &p, &err), 0);
    cr_assert_eq(p.kind, SQL_STMT_SET_END);
    sql_parsed_release(&p);
    cr_assert_eq(sql_parse(s, &st[2], &p, &err), 0);
    cr_assert_eq(p.kind, SQL_STMT_SET_BEGIN);
    cr_assert_null(p.tree);
    sql_parsed_release(&p);
    /* PostgreSQL's own BEGIN: its grammar reads it (and the session says
     * it is not supported). */
    cr_assert_eq(sql_parse(s, &st[3], &p, &err), 0);
    cr_assert_eq(p.kind, SQL_STMT_PG);
    sql_parsed_release(&p);
    free(st);
}

/* A nexmark table's Calc: its settings are checked when decoded (the
 * kind, each column's field and type, a configuration that generates). */
Test(sql_program, a_nexmark_program_is_checked_before_it_runs)
{
    struct sql_column in[] = { { "price", { SQL_BIGINT, 0, 0, true } },
                               { "URL", { SQL_VARCHAR, 0, 0, true } } };
    struct sql_type regs[] = { in[0].type, in[1].type };
    int fields[] = { SQL_NEXMARK_F_PRICE, SQL_NEXMARK_F_URL }, outputs[] = { 0 };
    struct sql_nexmark_source nx = { .kind = SQL_NEXMARK_BID, .fields = fields };
    struct sql_program p = { .input_format = SQL_FORMAT_NEXMARK,
                             .output_format = SQL_FORMAT_ROW,
                             .input = in,
                             .ninput = 2,
                             .nexmark = &nx,
                             .regs = regs,
                             .nregs = 2,
                             .filter = -1,
                             .rowtime = -1,
                             .key_reg = -1,
                             .kind_reg = -1,
                             .outputs = outputs,
                             .output = in,
                             .noutput = 1 };
    spate_error err = { 0 };
    Sqlplan__Calc *c;
    Sqlplan__Nexmark *saved;
    uint8_t *bytes;
    size_t len;

    sql_nexmark_config_default(&nx.config);
    cr_assert_eq(sql_program_encode(&p, &bytes, &len, &err), 0);
    c = sqlplan__calc__unpack(NULL, len, bytes);
    free(bytes);
    cr_assert_not_null(c);
    cr_assert_eq(decode(c, &err), 0, "%s", err.message);
    /* a column read as another field, or a field of another kind */
    c->nexmark->fields[0] = SQL_NEXMARK_F_URL;
    cr_assert_eq(decode(c, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "nexmark column that is no field of its event") != NULL);
    c->nexmark->fields[0] = SQL_NEXMARK_F_PRICE;
    c->nexmark->kind = SQL_NEXMARK_PERSON;
    cr_assert_eq(decode(c, &err), SPATE_EINVAL);
    c->nexmark->kind = 7;
    cr_assert_eq(decode(c, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "unknown nexmark event kind") != NULL, "%s", err.message);
    c->nexmark->kind = SQL_NEXMARK_BID;
    /* a column's type that is not its field's */
    c->input[0]->type = SQL_INT;
    c->reg_types[0] = SQL_INT;
    cr_assert_eq(decode(c, &err), SPATE_EINVAL);
    c->input[0]->type = SQL_BIGINT;
    c->reg_types[0] = SQL_BIGINT;
    /* a configuration that cannot generate */
    c->nexmark->bid_proportion = 0;
    cr_assert_eq(decode(c, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "each proportion is at least 1") != NULL, "%s", err.message);
    c->nexmark->bid_proportion = 46;
    /* the format without its settings */
    saved = c->nexmark;
    c->nexmark = NULL;
    cr_assert_eq(decode(c, &err), SPATE_EINVAL);
    c->nexmark = saved;
    cr_assert_eq(decode(c, &err), 0, "%s", err.message);
    sqlplan__calc__free_unpacked(c, NULL);
}

/* The generator's first events, as the Nexmark repository's generator
 * makes them (held to tests/e2e/nexmark_ref.py's port of it, and that to
 * the JDK, by e2e/nexmark): event 0 an auction, 2 a bid. */
Test(sql_nexmark, the_first_events_are_the_references)
{
    struct sql_nexmark_config c;
    struct sql_nexmark_gen g;
    struct sql_nexmark_event ev;
    const char *why;

    sql_nexmark_config_default(&c);
    cr_assert_eq(sql_nexmark_gen_init(&g, &c, &why), 0);
    cr_assert_eq(sql_nexmark_kind_of(&g, 0), SQL_NEXMARK_AUCTION);
    cr_assert_eq(sql_nexmark_kind_of(&g, 47), SQL_NEXMARK_BID);
    cr_assert_eq(sql_nexmark_kind_of(&g, 48), SQL_NEXMARK_PERSON); /* event id 50 */
    cr_assert_eq(sql_nexmark_kind_of(&g, 49), SQL_NEXMARK_AUCTION);
    sql_nexmark_next(&g, 2, &ev);
    cr_assert_eq(ev.kind, SQL_NEXMARK_BID);
    cr_assert_eq(ev.bid.auction, 1000);
    cr_assert_eq(ev.bid.bidder, 2001);
    cr_assert_eq(ev.bid.price, 32530001);
    cr_assert_eq(ev.bid.channel.len, 6);
    cr_assert(memcmp(ev.bid.channel.p, "Google", 6) == 0);
    cr_assert_eq(ev.date_time, 0); /* (2 + 1) * 100 us at 10,000 a second, in ms */
    sql_nexmark_gen_release(&g);
    c.person_proportion = 0;
    cr_assert_eq(sql_nexmark_gen_init(&g, &c, &why), -1);
    cr_assert_str_eq(why, "each proportion is at least 1");
}

Test(sql_program, date_format_writes_javas_pattern_letters)
{
    struct sql_value row[3] = { { .i = 5 }, { .null = true }, { .s = { "abc", 3 } } };
    char buf[64];

    CHECK("DATE_FORMAT(TIMESTAMP '2024-02-29 13:05:09.007', 'yyyy-MM-dd HH:mm:ss.SSS')",
          "2024-02-29 13:05:09.007");
    CHECK("DATE_FORMAT(TIMESTAMP '2024-02-09 03:05:00', 'y/M/d H ''o''''clock'' yy')",
          "2024/2/9 3 o'clock 24");
    CHECK("DATE_FORMAT(DATE '1969-12-31', 'dd.MM.yyyy HH:mm')", "31.12.1969 00:00");
    CHECK("DATE_FORMAT(CAST(NULL AS TIMESTAMP), 'yyyy')", "NULL");
    /* a text longer than the evaluator's buffer for it */
    cr_assert_eq(sql_date_format("yyyy-MM-dd", 0, buf, sizeof buf), 10);
    cr_assert_str_eq(buf, "1970-01-01");
    cr_assert_eq(sql_date_format("'0123456789'yyyy", 0, buf, 4), 14);
    cr_assert_str_eq(sql_date_format_check("yyyy-MM-dd EEE"), "E");
    cr_assert_null(sql_date_format_check("yyyy-MM-dd'T'HH"));
}

/* A program calling count_char(a, b) over two VARCHAR inputs, by
 * "symbol@library", its result a register of type result. */
static void
udf_program(struct sql_program *p, const char *symbol_at_library, enum sql_type_id first,
            enum sql_type_id result)
{
    static struct sql_type regs[3];

    memset(p, 0, sizeof *p);
    regs[0] = (struct sql_type){ first, 0, 0, true };
    regs[1] = (struct sql_type){ SQL_VARCHAR, 0, 0, true };
    regs[2] = (struct sql_type){ result, 0, 0, true };
    p->regs = regs;
    p->nregs = 3;
    p->ninput = 2;
    p->code = xcalloc(1, sizeof *p->code);
    p->code[0] = (struct sql_insn){ .op = SQLOP_UDF, .dst = 2, .a = 0, .imm = 2 };
    p->code[0].sval = (char *)symbol_at_library;
    p->ncode = 1;
    p->filter = p->rowtime = p->key_reg = p->kind_reg = -1;
}

Test(sql_udf, a_call_is_bound_where_it_runs_and_checked_there)
{
    struct sql_program p;
    struct sql_eval e;
    spate_error err = { 0 };

    udf_program(&p, "count_char@" NEXMARK_UDF, SQL_VARCHAR, SQL_BIGINT);
    sql_eval_init(&e, &p);
    /* unbound: NULL, never a call through nothing */
    sql_eval_begin(&e);
    e.r[0] = (struct sql_value){ .s = { "cacao", 5 } };
    e.r[1] = (struct sql_value){ .s = { "c", 1 } };
    sql_eval_run(&e);
    cr_assert(e.r[2].null);
    cr_assert_eq(sql_udf_bind(&e, &err), 0, "%s", err.message);
    sql_eval_run(&e);
    cr_assert(!e.r[2].null);
    cr_assert_eq(e.r[2].i, 2);
    e.r[0].null = true; /* count_char is not strict: a NULL string has none */
    sql_eval_run(&e);
    cr_assert(!e.r[2].null && e.r[2].i == 0);
    sql_eval_release(&e);
    free(p.code);

    udf_program(&p, "count_char@/nonexistent/udf.so", SQL_VARCHAR, SQL_BIGINT);
    sql_eval_init(&e, &p);
    cr_assert_eq(sql_udf_bind(&e, &err), SPATE_ENOENT);
    cr_assert(strstr(err.message, "function count_char(): cannot load its library "
                                  "'/nonexistent/udf.so'"),
              "%s", err.message);
    sql_eval_release(&e);
    free(p.code);

    udf_program(&p, "count_chars@" NEXMARK_UDF, SQL_VARCHAR, SQL_BIGINT);
    sql_eval_init(&e, &p);
    cr_assert_eq(sql_udf_bind(&e, &err), SPATE_ENOENT);
    cr_assert(strstr(err.message, "has no symbol 'count_chars'"), "%s", err.message);
    sql_eval_release(&e);
    free(p.code);

    udf_program(&p, "count_char@" NEXMARK_UDF, SQL_BIGINT, SQL_INT);
    sql_eval_init(&e, &p);
    cr_assert_eq(sql_udf_bind(&e, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "bad signature: 'count_char' of '" NEXMARK_UDF
                                  "' is (VARCHAR, VARCHAR) RETURNS BIGINT, not (BIGINT, VARCHAR) "
                                  "RETURNS INT as declared"),
              "%s", err.message);
    sql_eval_release(&e);
    free(p.code);
}
