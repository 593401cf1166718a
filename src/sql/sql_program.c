/* SQL programs: encoding, the checks of a decoded one, and the evaluator
 * (sql_program.h). */
#include <ctype.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/util.h"
#include "proto/sql.pb-c.h"
#include "sql/sql_program.h"
#include "sql/sql_udf.h"

#define SQL_MAX_REGS  4096
#define SQL_MAX_CODE  65536
#define TYPES_ROW_MAX 63

/* ---- operand types ---- */

enum { T_NONE, T_I, T_F, T_S, T_ANY, T_B };

/* dst, a, b, c of each op; T_B is an int register of type BOOLEAN. */
static const uint8_t signatures[SQLOP_COUNT][4] = {
    [SQLOP_CONST] = { T_ANY, T_NONE, T_NONE, T_NONE },
    [SQLOP_COPY] = { T_ANY, T_ANY, T_NONE, T_NONE },
    [SQLOP_ADD_I] = { T_I, T_I, T_I, T_NONE },
    [SQLOP_SUB_I] = { T_I, T_I, T_I, T_NONE },
    [SQLOP_MUL_I] = { T_I, T_I, T_I, T_NONE },
    [SQLOP_DIV_I] = { T_I, T_I, T_I, T_NONE },
    [SQLOP_MOD_I] = { T_I, T_I, T_I, T_NONE },
    [SQLOP_NEG_I] = { T_I, T_I, T_NONE, T_NONE },
    [SQLOP_ABS_I] = { T_I, T_I, T_NONE, T_NONE },
    [SQLOP_ADD_F] = { T_F, T_F, T_F, T_NONE },
    [SQLOP_SUB_F] = { T_F, T_F, T_F, T_NONE },
    [SQLOP_MUL_F] = { T_F, T_F, T_F, T_NONE },
    [SQLOP_DIV_F] = { T_F, T_F, T_F, T_NONE },
    [SQLOP_MOD_F] = { T_F, T_F, T_F, T_NONE },
    [SQLOP_NEG_F] = { T_F, T_F, T_NONE, T_NONE },
    [SQLOP_ABS_F] = { T_F, T_F, T_NONE, T_NONE },
    [SQLOP_POW_F] = { T_F, T_F, T_F, T_NONE },
    [SQLOP_SQRT_F] = { T_F, T_F, T_NONE, T_NONE },
    [SQLOP_FLOOR_F] = { T_F, T_F, T_NONE, T_NONE },
    [SQLOP_CEIL_F] = { T_F, T_F, T_NONE, T_NONE },
    [SQLOP_ROUND_F] = { T_F, T_F, T_I, T_NONE },
    [SQLOP_ROUND_I] = { T_I, T_I, T_I, T_NONE },
    [SQLOP_I2F] = { T_F, T_I, T_NONE, T_NONE },
    [SQLOP_F2I] = { T_I, T_F, T_NONE, T_NONE },
    [SQLOP_RESCALE] = { T_I, T_I, T_NONE, T_NONE },
    [SQLOP_TO_S] = { T_S, T_ANY, T_NONE, T_NONE },
    [SQLOP_FROM_S] = { T_ANY, T_S, T_NONE, T_NONE },
    [SQLOP_INT32] = { T_I, T_I, T_NONE, T_NONE },
    [SQLOP_CMP_I] = { T_B, T_I, T_I, T_NONE },
    [SQLOP_CMP_F] = { T_B, T_F, T_F, T_NONE },
    [SQLOP_CMP_S] = { T_B, T_S, T_S, T_NONE },
    [SQLOP_AND] = { T_B, T_B, T_B, T_NONE },
    [SQLOP_OR] = { T_B, T_B, T_B, T_NONE },
    [SQLOP_NOT] = { T_B, T_B, T_NONE, T_NONE },
    [SQLOP_IS_NULL] = { T_B, T_ANY, T_NONE, T_NONE },
    [SQLOP_IS_NOT_NULL] = { T_B, T_ANY, T_NONE, T_NONE },
    [SQLOP_JMP] = { T_NONE, T_NONE, T_NONE, T_NONE },
    [SQLOP_JMP_UNLESS_TRUE] = { T_NONE, T_B, T_NONE, T_NONE },
    [SQLOP_JMP_IF_NOT_NULL] = { T_NONE, T_ANY, T_NONE, T_NONE },
    [SQLOP_JMP_IF_FALSE] = { T_NONE, T_B, T_NONE, T_NONE },
    [SQLOP_JMP_IF_TRUE] = { T_NONE, T_B, T_NONE, T_NONE },
    [SQLOP_LIKE] = { T_B, T_S, T_NONE, T_NONE },
    [SQLOP_CONCAT] = { T_S, T_S, T_S, T_NONE },
    [SQLOP_UPPER] = { T_S, T_S, T_NONE, T_NONE },
    [SQLOP_LOWER] = { T_S, T_S, T_NONE, T_NONE },
    [SQLOP_LENGTH] = { T_I, T_S, T_NONE, T_NONE },
    [SQLOP_SUBSTR] = { T_S, T_S, T_I, T_I },
    [SQLOP_TRIM] = { T_S, T_S, T_NONE, T_NONE },
    [SQLOP_REPLACE] = { T_S, T_S, T_S, T_S },
    [SQLOP_POSITION] = { T_I, T_S, T_S, T_NONE },
    [SQLOP_EXTRACT] = { T_I, T_I, T_NONE, T_NONE },
    [SQLOP_EXTRACT_D] = { T_I, T_I, T_NONE, T_NONE },
    [SQLOP_SPLIT_INDEX] = { T_S, T_S, T_S, T_I },
    [SQLOP_REGEXP_EXTRACT] = { T_S, T_S, T_I, T_NONE },
    [SQLOP_DATE_FORMAT] = { T_S, T_I, T_NONE, T_NONE },
    [SQLOP_PROCTIME] = { T_I, T_NONE, T_NONE, T_NONE },
    [SQLOP_UDF] = { T_ANY, T_ANY, T_NONE, T_NONE },
};

static const char *const op_names[SQLOP_COUNT] = {
    [SQLOP_CONST] = "const",
    [SQLOP_COPY] = "copy",
    [SQLOP_ADD_I] = "add.i",
    [SQLOP_SUB_I] = "sub.i",
    [SQLOP_MUL_I] = "mul.i",
    [SQLOP_DIV_I] = "div.i",
    [SQLOP_MOD_I] = "mod.i",
    [SQLOP_NEG_I] = "neg.i",
    [SQLOP_ABS_I] = "abs.i",
    [SQLOP_ADD_F] = "add.f",
    [SQLOP_SUB_F] = "sub.f",
    [SQLOP_MUL_F] = "mul.f",
    [SQLOP_DIV_F] = "div.f",
    [SQLOP_MOD_F] = "mod.f",
    [SQLOP_NEG_F] = "neg.f",
    [SQLOP_ABS_F] = "abs.f",
    [SQLOP_POW_F] = "pow.f",
    [SQLOP_SQRT_F] = "sqrt.f",
    [SQLOP_FLOOR_F] = "floor.f",
    [SQLOP_CEIL_F] = "ceil.f",
    [SQLOP_ROUND_F] = "round.f",
    [SQLOP_ROUND_I] = "round.i",
    [SQLOP_I2F] = "i2f",
    [SQLOP_F2I] = "f2i",
    [SQLOP_RESCALE] = "rescale",
    [SQLOP_TO_S] = "to_s",
    [SQLOP_FROM_S] = "from_s",
    [SQLOP_INT32] = "int32",
    [SQLOP_CMP_I] = "cmp.i",
    [SQLOP_CMP_F] = "cmp.f",
    [SQLOP_CMP_S] = "cmp.s",
    [SQLOP_AND] = "and",
    [SQLOP_OR] = "or",
    [SQLOP_NOT] = "not",
    [SQLOP_IS_NULL] = "is_null",
    [SQLOP_IS_NOT_NULL] = "is_not_null",
    [SQLOP_JMP] = "jmp",
    [SQLOP_JMP_UNLESS_TRUE] = "jmp_unless_true",
    [SQLOP_JMP_IF_NOT_NULL] = "jmp_if_not_null",
    [SQLOP_JMP_IF_FALSE] = "jmp_if_false",
    [SQLOP_JMP_IF_TRUE] = "jmp_if_true",
    [SQLOP_LIKE] = "like",
    [SQLOP_CONCAT] = "concat",
    [SQLOP_UPPER] = "upper",
    [SQLOP_LOWER] = "lower",
    [SQLOP_LENGTH] = "length",
    [SQLOP_SUBSTR] = "substr",
    [SQLOP_TRIM] = "trim",
    [SQLOP_REPLACE] = "replace",
    [SQLOP_POSITION] = "position",
    [SQLOP_EXTRACT] = "extract",
    [SQLOP_EXTRACT_D] = "extract.d",
    [SQLOP_SPLIT_INDEX] = "split_index",
    [SQLOP_REGEXP_EXTRACT] = "regexp_extract",
    [SQLOP_DATE_FORMAT] = "date_format",
    [SQLOP_PROCTIME] = "proctime",
    [SQLOP_UDF] = "udf",
};

static int
phys_of(const struct sql_type *t)
{
    switch (sql_type_phys(t->id)) {
    case SQL_PHYS_DOUBLE:
        return T_F;
    case SQL_PHYS_STRING:
        return T_S;
    default:
        return T_I;
    }
}

static bool
operand_ok(const struct sql_program *p, int want, int reg)
{
    if (want == T_NONE)
        return true;
    if (reg < 0 || reg >= p->nregs)
        return false;
    if (want == T_ANY)
        return true;
    if (want == T_B)
        return p->regs[reg].id == SQL_BOOLEAN;
    return phys_of(&p->regs[reg]) == want;
}

static bool
is_jump(int op)
{
    return op >= SQLOP_JMP && op <= SQLOP_JMP_IF_TRUE;
}

static int
bad_program(spate_error *err, const char *what, int at)
{
    return spate_error_set(err, SPATE_EINVAL, "malformed SQL program: %s (instruction %d)", what,
                           at);
}

static bool
type_ok(const struct sql_type *t)
{
    if (t->id <= SQL_NULL || t->id >= SQL_TYPE_COUNT)
        return false;
    if (t->id == SQL_DECIMAL)
        return t->precision >= 1 && t->precision <= SQL_DECIMAL_MAX_PRECISION && t->scale >= 0 &&
               t->scale <= t->precision;
    return t->precision >= 0 && t->scale >= 0 && t->scale <= SQL_DECIMAL_MAX_PRECISION;
}

/* A nexmark table's: a kind, each input column one of its fields of the
 * column's type, a configuration that generates. */
static int
check_nexmark(const struct sql_program *p, spate_error *err)
{
    const struct sql_nexmark_source *n = p->nexmark;
    struct sql_nexmark_gen g;
    const char *why;

    if ((n != NULL) != (p->input_format == SQL_FORMAT_NEXMARK))
        return bad_program(err, "nexmark settings without their format, or the other way", -1);
    if (n == NULL)
        return 0;
    if (n->kind < SQL_NEXMARK_PERSON || n->kind > SQL_NEXMARK_BID)
        return bad_program(err, "unknown nexmark event kind", -1);
    for (int i = 0; i < p->ninput; i++) {
        enum sql_nexmark_value v = SQL_NEXMARK_BIGINT;
        int f = n->fields[i];

        if (f < 0 || sql_nexmark_field_find(n->kind, p->input[i].name, &v) != f ||
            (v == SQL_NEXMARK_BIGINT && p->input[i].type.id != SQL_BIGINT) ||
            (v == SQL_NEXMARK_VARCHAR && p->input[i].type.id != SQL_VARCHAR) ||
            (v == SQL_NEXMARK_TIMESTAMP && p->input[i].type.id != SQL_TIMESTAMP))
            return bad_program(err, "nexmark column that is no field of its event", -1);
    }
    if (sql_nexmark_gen_init(&g, &n->config, &why) != 0)
        return spate_error_set(err, SPATE_EINVAL, "malformed SQL program: nexmark: %s", why);
    sql_nexmark_gen_release(&g);
    return 0;
}

/* Everything a decoded program must satisfy before it runs. */
static int
check_program(const struct sql_program *p, spate_error *err)
{
    bool consts = true;
    int rc;

    if (p->ninput < 0 || p->ninput > TYPES_ROW_MAX || p->noutput < 1 ||
        p->noutput > TYPES_ROW_MAX || p->nregs < p->ninput || p->nregs > SQL_MAX_REGS ||
        p->ncode > SQL_MAX_CODE)
        return bad_program(err, "too many or too few columns, registers or instructions", -1);
    if ((p->input_format > SQL_FORMAT_DATAGEN && p->input_format != SQL_FORMAT_NEXMARK) ||
        p->output_format < SQL_FORMAT_ROW || p->output_format > SQL_FORMAT_NONE ||
        p->output_format == SQL_FORMAT_DATAGEN)
        return bad_program(err, "unknown format", -1);
    if (p->changelog && p->output_format != SQL_FORMAT_CSV && p->output_format != SQL_FORMAT_JSON)
        return bad_program(err, "a changelog output that is no CSV or JSON line", -1);
    if (p->npartition > 0 &&
        (p->changelog || p->npartition >= p->noutput ||
         (p->output_format != SQL_FORMAT_CSV && p->output_format != SQL_FORMAT_JSON)))
        return bad_program(err, "partition columns of an output that is no CSV or JSON line", -1);
    for (int i = 0; i < p->npartition; i++)
        if (p->partition[i] < 0 || p->partition[i] >= p->noutput)
            return bad_program(err, "partition column out of range", -1);
    if ((rc = check_nexmark(p, err)) != 0)
        return rc;
    for (int i = 0; i < p->nregs; i++)
        if (!type_ok(&p->regs[i]))
            return bad_program(err, "register of an unknown type", -1);
    for (int i = 0; i < p->ninput; i++)
        if (p->input[i].type.id != p->regs[i].id || p->input[i].type.scale != p->regs[i].scale)
            return bad_program(err, "input column and its register disagree", -1);
    for (int i = 0; i < p->ncode; i++) {
        const struct sql_insn *in = &p->code[i];
        const uint8_t *sig;

        if (in->op >= SQLOP_COUNT)
            return bad_program(err, "unknown instruction", i);
        sig = signatures[in->op];
        if (!operand_ok(p, sig[0], in->dst) || !operand_ok(p, sig[1], in->a) ||
            !operand_ok(p, sig[2], in->b) || !operand_ok(p, sig[3], in->c))
            return bad_program(err, "operand out of range or of the wrong type", i);
        if (in->op == SQLOP_CONST) {
            if (!consts)
                return bad_program(err, "constant after the first instruction", i);
            if (in->dst < p->ninput)
                return bad_program(err, "constant written over an input column", i);
            continue;
        }
        consts = false;
        if (sig[0] != T_NONE && in->dst < p->ninput)
            return bad_program(err, "instruction writes an input column", i);
        if (in->op == SQLOP_COPY && phys_of(&p->regs[in->dst]) != phys_of(&p->regs[in->a]))
            return bad_program(err, "copy between registers of different kinds", i);
        if (in->op == SQLOP_TO_S && (in->imm != (p->regs[in->a].id | p->regs[in->a].scale << 8)))
            return bad_program(err, "to_s of a register of another type", i);
        if (is_jump(in->op) && (in->imm <= i || in->imm > p->ncode))
            return bad_program(err, "jump backwards or out of the program", i);
        if ((in->op == SQLOP_CMP_I || in->op == SQLOP_CMP_F || in->op == SQLOP_CMP_S) &&
            (in->imm < SQL_EQ || in->imm > SQL_GE))
            return bad_program(err, "unknown comparison", i);
        if ((in->op == SQLOP_EXTRACT || in->op == SQLOP_EXTRACT_D) &&
            (in->imm < SQL_F_YEAR || in->imm > SQL_F_EPOCH_DAY))
            return bad_program(err, "unknown date field", i);
        if (in->op == SQLOP_REGEXP_EXTRACT) {
            regex_t re;

            if (in->sval == NULL || regcomp(&re, in->sval, REG_EXTENDED) != 0)
                return bad_program(err, "regular expression that does not compile", i);
            regfree(&re);
        }
        if (in->op == SQLOP_DATE_FORMAT &&
            (in->sval == NULL || sql_date_format_check(in->sval) != NULL))
            return bad_program(err, "date format that is not supported", i);
        if (in->op == SQLOP_UDF &&
            (in->sval == NULL || strchr(in->sval, '@') == NULL || in->imm < 0 ||
             in->imm > SQL_UDF_MAX_ARGS || in->a + in->imm > p->nregs))
            return bad_program(err,
                               "function call without a function or with its arguments "
                               "out of range",
                               i);
        if ((in->op == SQLOP_RESCALE && (in->imm < 0 || in->imm > 18 || in->c > 18)) ||
            ((in->op == SQLOP_I2F || in->op == SQLOP_F2I || in->op == SQLOP_ROUND_I) &&
             (in->imm < 0 || in->imm > 18)))
            return bad_program(err, "scale out of range", i);
    }
    if (p->rowtime != -1 &&
        (p->rowtime < 0 || p->rowtime >= p->nregs || p->regs[p->rowtime].id != SQL_TIMESTAMP))
        return bad_program(err, "rowtime that is no TIMESTAMP register", -1);
    if (p->filter != -1 &&
        (p->filter < 0 || p->filter >= p->nregs || p->regs[p->filter].id != SQL_BOOLEAN))
        return bad_program(err, "filter that is no BOOLEAN register", -1);
    for (int i = 0; i < p->noutput; i++)
        if (p->outputs[i] < 0 || p->outputs[i] >= p->nregs ||
            p->regs[p->outputs[i]].id != p->output[i].type.id)
            return bad_program(err, "output column and its register disagree", -1);
    if (p->nkey > TYPES_ROW_MAX ||
        (p->key_reg != -1 && (p->key_reg < p->ninput || p->key_reg >= p->nregs ||
                              p->regs[p->key_reg].id != SQL_VARCHAR)) ||
        (p->key_reg == -1 && p->nkey != 0))
        return bad_program(err, "group key register that is no VARCHAR temporary", -1);
    for (int i = 0; i < p->nkey; i++)
        if (p->key_regs[i] < 0 || p->key_regs[i] >= p->nregs)
            return bad_program(err, "group key of a register out of range", -1);
    for (int i = 0; p->key_reg >= 0 && i < p->ncode; i++)
        if (signatures[p->code[i].op][0] != T_NONE && p->code[i].dst == p->key_reg)
            return bad_program(err, "instruction writes the group key", i);
    if (p->kind_reg != -1 &&
        (p->kind_reg < 0 || p->kind_reg >= p->ninput || p->regs[p->kind_reg].id != SQL_INT))
        return bad_program(err, "row kind that is no INT input column", -1);
    return 0;
}

void
sql_program_inputs_read(const struct sql_program *p, bool *read)
{
    for (int i = 0; i < p->ninput; i++)
        read[i] = false;
#define READ(reg)                        \
    if ((reg) >= 0 && (reg) < p->ninput) \
        read[(reg)] = true;
    for (int i = 0; i < p->ncode; i++) {
        const struct sql_insn *in = &p->code[i];
        const uint8_t *sig = signatures[in->op];

        if (sig[1] != T_NONE)
            READ(in->a)
        if (sig[2] != T_NONE)
            READ(in->b)
        if (sig[3] != T_NONE)
            READ(in->c)
    }
    for (int i = 0; i < p->noutput; i++)
        READ(p->outputs[i])
    READ(p->filter)
    READ(p->rowtime)
#undef READ
}

/* A compiled REGEXP_EXTRACT pattern and a literal every match contains,
 * looked for first: most strings that do not match are turned away by a
 * memmem, not by the regular expression machine. */
struct sql_regex {
    regex_t re;
    char literal[64];
    size_t literal_len;
};

/* A character that stands for itself anywhere outside a bracket. */
static bool
regex_plain(char c)
{
    return c != '\0' && (isalnum((unsigned char)c) || strchr(" _=-/:@&,;'\"<>!%#~`", c) != NULL);
}

/* The longest run of plain characters at the pattern's top level (outside
 * groups and bracket expressions) that every match contains; none when
 * the pattern may alternate at its top. A form not read here (a
 * backslash or a bracket inside a group, a class in a bracket) ends the
 * reading. Conservative: a character a quantifier follows is left out. */
static void
regex_literal(const char *pat, struct sql_regex *out)
{
    char run[sizeof out->literal];
    size_t n = 0, i = 0;

    out->literal_len = 0;
    for (;;) {
        char c = pat[i];

        if (regex_plain(c) && strchr("*?{", pat[i + 1]) == NULL) {
            if (n < sizeof run)
                run[n++] = c;
            i++;
            if (pat[i] != '+')
                continue;
        }
        if (n > out->literal_len) {
            memcpy(out->literal, run, n);
            out->literal_len = n;
        }
        n = 0;
        c = pat[i];
        if (c == '\0')
            return;
        if (c == '|')
            break; /* alternatives at the top: no run is needed */
        if (c == '\\') {
            if (pat[i + 1] == '\0')
                return;
            i += 2; /* an escape: not read, it ends the run */
        } else if (c == '{') {
            while (pat[i] != '\0' && pat[i] != '}')
                i++;
        } else if (c == '[') {
            /* [ ^? ]? ... ]: no escapes inside; give up on [: classes */
            i += 1 + (pat[i + 1] == '^');
            i += pat[i] == ']';
            while (pat[i] != '\0' && pat[i] != ']' && pat[i] != '[')
                i++;
            if (pat[i] != ']')
                break;
            i++;
        } else if (c == '(') {
            int depth = 0;

            for (; pat[i] != '\0'; i++) {
                if (pat[i] == '\\' || pat[i] == '[')
                    goto none; /* not read inside a group */
                if (pat[i] == '(')
                    depth++;
                else if (pat[i] == ')' && --depth == 0)
                    break;
            }
            if (pat[i] == '\0')
                return;
            i++;
        } else {
            i++; /* . ^ $ * ? + ) } ]: specials, they end the run */
        }
    }
none:
    /* Read up to i, with no alternatives at the top there: the run found
     * is needed unless an alternative may follow. */
    if (strchr(pat + i, '|') != NULL)
        out->literal_len = 0;
}

const char *
sql_row_kind_string(int64_t kind)
{
    static const char *const kinds[] = { "+I", "-U", "+U", "-D" };

    return kind >= 0 && kind < 4 ? kinds[kind] : "+I";
}

size_t
sql_key_size(const struct sql_type *types, const struct sql_value *v, const int *regs, int n)
{
    size_t len = 0;

    for (int i = 0; i < n; i++) {
        const struct sql_value *x = &v[regs[i]];

        len += 1 + (x->null                                               ? 0
                    : sql_type_phys(types[regs[i]].id) == SQL_PHYS_STRING ? 4 + x->s.len
                                                                          : 8);
    }
    return len;
}

size_t
sql_key_encode(const struct sql_type *types, const struct sql_value *v, const int *regs, int n,
               char *out)
{
    size_t len = 0;

    for (int i = 0; i < n; i++) {
        const struct sql_value *x = &v[regs[i]];

        out[len++] = x->null ? 0 : 1;
        if (x->null)
            continue;
        if (sql_type_phys(types[regs[i]].id) == SQL_PHYS_STRING) {
            uint32_t l = (uint32_t)x->s.len;

            memcpy(out + len, &l, 4);
            if (x->s.len)
                memcpy(out + len + 4, x->s.p, x->s.len);
            len += 4 + x->s.len;
        } else {
            memcpy(out + len, &x->i, 8); /* a double's bits alike */
            len += 8;
        }
    }
    return len;
}

/* ---- encoding ---- */

Sqlplan__Column *
sql_column_encode(const struct sql_column *c)
{
    Sqlplan__Column *pc = xcalloc(1, sizeof *pc);

    sqlplan__column__init(pc);
    pc->name = c->name;
    pc->type = c->type.id;
    pc->precision = c->type.precision;
    pc->scale = c->type.scale;
    pc->nullable = c->type.nullable;
    return pc;
}

static int32_t
pack_type(const struct sql_type *t)
{
    return (int32_t)t->id | t->scale << 8 | t->precision << 16;
}

static struct sql_type
unpack_type(int32_t v)
{
    struct sql_type t = { (enum sql_type_id)(v & 0xff), (v >> 16) & 0x7fff, (v >> 8) & 0xff, true };

    return t;
}

int
sql_program_encode(const struct sql_program *p, uint8_t **out, size_t *len, spate_error *err)
{
    Sqlplan__Calc c = SQLPLAN__CALC__INIT;
    Sqlplan__Nexmark nexmark;
    char delim[2] = { p->csv_delimiter, 0 }, out_delim[2] = { p->csv_out_delimiter, 0 };

    UNUSED(err);
    c.input_format = p->input_format;
    c.output_format = p->output_format;
    c.changelog = p->changelog;
    c.n_input = (size_t)p->ninput;
    c.input = xcalloc((size_t)p->ninput + 1, sizeof *c.input);
    for (int i = 0; i < p->ninput; i++)
        c.input[i] = sql_column_encode(&p->input[i]);
    if (p->datagen != NULL) {
        c.n_datagen = (size_t)p->ninput;
        c.datagen = xcalloc((size_t)p->ninput + 1, sizeof *c.datagen);
        for (int i = 0; i < p->ninput; i++) {
            Sqlplan__DatagenField *f = xcalloc(1, sizeof *f);

            sqlplan__datagen_field__init(f);
            f->sequence = p->datagen[i].sequence;
            f->min = p->datagen[i].min;
            f->max = p->datagen[i].max;
            f->length = p->datagen[i].length;
            f->start = p->datagen[i].start;
            f->end = p->datagen[i].end;
            f->null_rate = p->datagen[i].null_rate;
            c.datagen[i] = f;
        }
    }
    c.datagen_seed = (int64_t)p->datagen_seed;
    if (p->nexmark != NULL) {
        const struct sql_nexmark_config *g = &p->nexmark->config;

        sqlplan__nexmark__init(&nexmark);
        nexmark.kind = p->nexmark->kind;
        nexmark.n_fields = (size_t)p->ninput;
        nexmark.fields = p->nexmark->fields;
        nexmark.first_event_rate = g->first_event_rate;
        nexmark.person_proportion = g->person_proportion;
        nexmark.auction_proportion = g->auction_proportion;
        nexmark.bid_proportion = g->bid_proportion;
        nexmark.avg_person_size = g->avg_person_size;
        nexmark.avg_auction_size = g->avg_auction_size;
        nexmark.avg_bid_size = g->avg_bid_size;
        nexmark.hot_auction_ratio = g->hot_auction_ratio;
        nexmark.hot_bidders_ratio = g->hot_bidders_ratio;
        nexmark.hot_sellers_ratio = g->hot_sellers_ratio;
        nexmark.num_in_flight_auctions = g->num_in_flight_auctions;
        nexmark.num_active_people = g->num_active_people;
        nexmark.base_time = g->base_time_ms;
        c.nexmark = &nexmark;
    }
    c.csv_delimiter = delim;
    c.csv_out_delimiter = out_delim;
    c.ignore_parse_errors = p->ignore_parse_errors;
    c.n_reg_types = (size_t)p->nregs;
    c.reg_types = xcalloc((size_t)p->nregs + 1, sizeof *c.reg_types);
    for (int i = 0; i < p->nregs; i++)
        c.reg_types[i] = pack_type(&p->regs[i]);
    c.n_program = (size_t)p->ncode;
    c.program = xcalloc((size_t)p->ncode + 1, sizeof *c.program);
    for (int i = 0; i < p->ncode; i++) {
        Sqlplan__Insn *in = xcalloc(1, sizeof *in);
        const struct sql_insn *s = &p->code[i];

        sqlplan__insn__init(in);
        in->op = s->op;
        in->dst = s->dst;
        in->a = s->a;
        in->b = s->b;
        in->c = s->c;
        in->imm = s->imm;
        in->fimm = s->fimm;
        in->sval.data = (uint8_t *)s->sval;
        in->sval.len = s->slen;
        c.program[i] = in;
    }
    c.filter = p->filter;
    c.rowtime = p->rowtime + 1; /* 0, proto's default, is none */
    c.n_key_regs = (size_t)p->nkey;
    c.key_regs = (int32_t *)p->key_regs;
    c.key_reg = p->key_reg + 1;
    c.kind_reg = p->kind_reg + 1;
    c.n_partition = (size_t)p->npartition;
    c.partition = (int32_t *)p->partition;
    c.n_outputs = (size_t)p->noutput;
    c.outputs = xcalloc((size_t)p->noutput + 1, sizeof *c.outputs);
    c.n_output = (size_t)p->noutput;
    c.output = xcalloc((size_t)p->noutput + 1, sizeof *c.output);
    for (int i = 0; i < p->noutput; i++) {
        c.outputs[i] = p->outputs[i];
        c.output[i] = sql_column_encode(&p->output[i]);
    }
    *len = sqlplan__calc__get_packed_size(&c);
    *out = xmalloc(*len);
    sqlplan__calc__pack(&c, *out);
    for (size_t i = 0; i < c.n_input; i++)
        free(c.input[i]);
    for (size_t i = 0; i < c.n_datagen; i++)
        free(c.datagen[i]);
    for (size_t i = 0; i < c.n_program; i++)
        free(c.program[i]);
    for (size_t i = 0; i < c.n_output; i++)
        free(c.output[i]);
    free(c.input);
    free(c.datagen);
    free(c.reg_types);
    free(c.program);
    free(c.outputs);
    free(c.output);
    return 0;
}

void
sql_column_decode(const Sqlplan__Column *pc, struct sql_column *c)
{
    c->name = xstrdup(pc->name ? pc->name : "");
    c->type.id = (enum sql_type_id)pc->type;
    c->type.precision = pc->precision;
    c->type.scale = pc->scale;
    c->type.nullable = pc->nullable;
}

int
sql_program_decode(const uint8_t *bytes, size_t len, struct sql_program **out, spate_error *err)
{
    Sqlplan__Calc *c = sqlplan__calc__unpack(NULL, len, bytes);
    struct sql_program *p;
    int rc;

    *out = NULL;
    if (c == NULL)
        return spate_error_set(err, SPATE_EINVAL, "malformed SQL program: not a Calc message");
    if (c->n_input > TYPES_ROW_MAX || c->n_output > TYPES_ROW_MAX ||
        c->n_reg_types > SQL_MAX_REGS || c->n_program > SQL_MAX_CODE ||
        c->n_outputs != c->n_output || (c->n_datagen != 0 && c->n_datagen != c->n_input)) {
        sqlplan__calc__free_unpacked(c, NULL);
        return bad_program(err, "counts that do not match", -1);
    }
    p = xcalloc(1, sizeof *p);
    p->input_format = (enum sql_format)c->input_format;
    p->output_format = (enum sql_format)c->output_format;
    p->changelog = c->changelog;
    p->ninput = (int)c->n_input;
    p->input = xcalloc(c->n_input + 1, sizeof *p->input);
    for (size_t i = 0; i < c->n_input; i++)
        sql_column_decode(c->input[i], &p->input[i]);
    if (c->n_datagen) {
        p->datagen = xcalloc(c->n_datagen, sizeof *p->datagen);
        for (size_t i = 0; i < c->n_datagen; i++) {
            const Sqlplan__DatagenField *f = c->datagen[i];

            p->datagen[i] = (struct sql_datagen_field){ f->sequence, f->min, f->max,      f->length,
                                                        f->start,    f->end, f->null_rate };
        }
    }
    p->datagen_seed = (uint64_t)c->datagen_seed;
    if (c->nexmark != NULL) {
        const Sqlplan__Nexmark *n = c->nexmark;

        p->nexmark = xcalloc(1, sizeof *p->nexmark);
        p->nexmark->kind = (enum sql_nexmark_kind)n->kind;
        p->nexmark->fields = xcalloc(c->n_input + 1, sizeof *p->nexmark->fields);
        for (size_t i = 0; i < c->n_input; i++)
            p->nexmark->fields[i] = i < n->n_fields ? n->fields[i] : -1;
        p->nexmark->config = (struct sql_nexmark_config){
            .first_event_rate = n->first_event_rate,
            .person_proportion = n->person_proportion,
            .auction_proportion = n->auction_proportion,
            .bid_proportion = n->bid_proportion,
            .avg_person_size = n->avg_person_size,
            .avg_auction_size = n->avg_auction_size,
            .avg_bid_size = n->avg_bid_size,
            .hot_auction_ratio = n->hot_auction_ratio,
            .hot_bidders_ratio = n->hot_bidders_ratio,
            .hot_sellers_ratio = n->hot_sellers_ratio,
            .num_in_flight_auctions = n->num_in_flight_auctions,
            .num_active_people = n->num_active_people,
            .base_time_ms = n->base_time,
        };
    }
    p->csv_delimiter = c->csv_delimiter && c->csv_delimiter[0] ? c->csv_delimiter[0] : ',';
    p->csv_out_delimiter =
        c->csv_out_delimiter && c->csv_out_delimiter[0] ? c->csv_out_delimiter[0] : ',';
    p->ignore_parse_errors = c->ignore_parse_errors;
    p->nregs = (int)c->n_reg_types;
    p->regs = xcalloc(c->n_reg_types + 1, sizeof *p->regs);
    for (size_t i = 0; i < c->n_reg_types; i++)
        p->regs[i] = unpack_type(c->reg_types[i]);
    p->ncode = (int)c->n_program;
    p->code = xcalloc(c->n_program + 1, sizeof *p->code);
    for (size_t i = 0; i < c->n_program; i++) {
        const Sqlplan__Insn *in = c->program[i];
        struct sql_insn *s = &p->code[i];
        bool range = in->op >= 0 && in->op < SQLOP_COUNT && in->dst >= 0 && in->dst < 65536 &&
                     in->a >= 0 && in->a < 65536 && in->b >= 0 && in->b < 65536 && in->c >= -1 &&
                     in->c < 65536;

        s->op = range ? (uint16_t)in->op : SQLOP_COUNT;
        s->dst = (uint16_t)in->dst;
        s->a = (uint16_t)in->a;
        s->b = (uint16_t)in->b;
        s->c = (uint16_t)(in->c < 0 ? 0 : in->c);
        s->imm = in->imm;
        s->fimm = in->fimm;
        if (in->sval.len) {
            s->sval = xmalloc(in->sval.len + 1);
            memcpy(s->sval, in->sval.data, in->sval.len);
            s->sval[in->sval.len] = '\0';
            s->slen = in->sval.len;
        }
    }
    p->filter = c->filter;
    p->rowtime = c->rowtime - 1;
    p->key_reg = c->key_reg - 1;
    p->kind_reg = c->kind_reg - 1;
    p->nkey = c->n_key_regs <= TYPES_ROW_MAX ? (int)c->n_key_regs : TYPES_ROW_MAX + 1;
    p->key_regs = xcalloc(c->n_key_regs + 1, sizeof *p->key_regs);
    for (size_t i = 0; i < c->n_key_regs && i <= TYPES_ROW_MAX; i++)
        p->key_regs[i] = c->key_regs[i];
    p->npartition = c->n_partition <= TYPES_ROW_MAX ? (int)c->n_partition : TYPES_ROW_MAX;
    p->partition = xcalloc((size_t)p->npartition + 1, sizeof *p->partition);
    for (int i = 0; i < p->npartition; i++)
        p->partition[i] = c->partition[i];
    p->noutput = (int)c->n_output;
    p->outputs = xcalloc(c->n_output + 1, sizeof *p->outputs);
    p->output = xcalloc(c->n_output + 1, sizeof *p->output);
    for (size_t i = 0; i < c->n_output; i++) {
        p->outputs[i] = c->outputs[i];
        sql_column_decode(c->output[i], &p->output[i]);
    }
    sqlplan__calc__free_unpacked(c, NULL);
    if ((rc = check_program(p, err)) != 0) {
        sql_program_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

void
sql_nexmark_source_free(struct sql_nexmark_source *s)
{
    if (s != NULL)
        free(s->fields);
    free(s);
}

void
sql_program_free(struct sql_program *p)
{
    if (p == NULL)
        return;
    for (int i = 0; i < p->ninput; i++)
        free(p->input[i].name);
    for (int i = 0; i < p->noutput; i++)
        free(p->output[i].name);
    for (int i = 0; i < p->ncode; i++)
        free(p->code[i].sval);
    free(p->input);
    free(p->datagen);
    sql_nexmark_source_free(p->nexmark);
    free(p->key_regs);
    free(p->partition);
    free(p->regs);
    free(p->code);
    free(p->outputs);
    free(p->output);
    free(p);
}

char *
sql_program_describe(const struct sql_program *p)
{
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);

    for (int i = 0; i < p->ncode; i++) {
        const struct sql_insn *in = &p->code[i];
        const uint8_t *sig = signatures[in->op];

        fprintf(f, "    %3d  %-16s", i, op_names[in->op]);
        if (sig[0] != T_NONE)
            fprintf(f, " r%d", in->dst);
        if (sig[1] != T_NONE)
            fprintf(f, " r%d", in->a);
        if (sig[2] != T_NONE)
            fprintf(f, " r%d", in->b);
        if (sig[3] != T_NONE)
            fprintf(f, " r%d", in->c);
        if (in->op == SQLOP_CONST) {
            struct sql_value v = { .null = in->a == 1 };
            char buf[128];

            if (v.null) {
                fprintf(f, " NULL");
            } else if (sql_type_phys(p->regs[in->dst].id) == SQL_PHYS_STRING) {
                fprintf(f, " '%.*s'", (int)MIN(in->slen, 60), in->sval ? in->sval : "");
            } else {
                if (sql_type_phys(p->regs[in->dst].id) == SQL_PHYS_DOUBLE)
                    v.f = in->fimm;
                else
                    v.i = in->imm;
                sql_value_format(&p->regs[in->dst], &v, buf, sizeof buf);
                fprintf(f, " %s", buf);
            }
        } else if (is_jump(in->op)) {
            fprintf(f, " -> %lld", (long long)in->imm);
        } else if (in->op == SQLOP_LIKE || in->op == SQLOP_REGEXP_EXTRACT ||
                   in->op == SQLOP_DATE_FORMAT || in->op == SQLOP_UDF) {
            fprintf(f, " '%.*s'", (int)MIN(in->slen, 60), in->sval ? in->sval : "");
            if (in->op == SQLOP_UDF)
                fprintf(f, " #%lld", (long long)in->imm);
        } else if (in->imm != 0) {
            fprintf(f, " #%lld", (long long)in->imm);
        }
        fputc('\n', f);
    }
    fclose(f);
    return out;
}

/* ---- evaluation ---- */

#define ARENA_CHUNK 65536

static void arena_reset(struct sql_eval *e);

int
sql_eval_init(struct sql_eval *e, const struct sql_program *p)
{
    memset(e, 0, sizeof *e);
    e->p = p;
    e->r = xcalloc((size_t)p->nregs + 1, sizeof *e->r);
    for (int i = 0; i < p->nregs; i++)
        e->r[i].null = true;
    e->cap = ARENA_CHUNK;
    e->arena = xmalloc(e->cap);
    /* The regular expressions, once (sql_program_decode saw each compile). */
    for (int i = 0; i < p->ncode; i++)
        if (p->code[i].op == SQLOP_REGEXP_EXTRACT) {
            int rc;

            struct sql_regex *re;

            if (e->regex == NULL)
                e->regex = xcalloc((size_t)p->ncode, sizeof(struct sql_regex));
            re = (struct sql_regex *)e->regex + i;
            rc = regcomp(&re->re, p->code[i].sval, REG_EXTENDED);
            regex_literal(p->code[i].sval, re);
            SPATE_ASSERT(rc == 0);
        }
    /* The constants, once. */
    for (e->start = 0; e->start < p->ncode && p->code[e->start].op == SQLOP_CONST; e->start++) {
        const struct sql_insn *in = &p->code[e->start];
        struct sql_value *d = &e->r[in->dst];

        d->null = in->a == 1;
        switch (sql_type_phys(p->regs[in->dst].id)) {
        case SQL_PHYS_DOUBLE:
            d->f = in->fimm;
            break;
        case SQL_PHYS_STRING:
            d->s.p = in->sval ? in->sval : "";
            d->s.len = in->slen;
            break;
        default:
            d->i = in->imm;
            break;
        }
    }
    return 0;
}

void
sql_eval_release(struct sql_eval *e)
{
    for (int i = 0; e->regex != NULL && i < e->p->ncode; i++)
        if (e->p->code[i].op == SQLOP_REGEXP_EXTRACT)
            regfree(&((struct sql_regex *)e->regex + i)->re);
    free(e->regex);
    sql_udf_unbind(e);
    free(e->r);
    arena_reset(e);
    free(e->old);
    free(e->arena);
    memset(e, 0, sizeof *e);
}

char *
sql_eval_alloc(struct sql_eval *e, size_t n)
{
    char *p;

    n = (n + 7) & ~(size_t)7;
    if (e->used + n > e->cap) {
        /* A new chunk: strings already made in the old one stay valid
         * until the record ends, when the old chunks go. */
        size_t cap = MAX(n, (size_t)ARENA_CHUNK);

        xgrow((void **)&e->old, &e->old_cap, e->nold + 1, sizeof *e->old);
        e->old[e->nold++] = e->arena;
        e->arena = xmalloc(cap);
        e->cap = cap;
        e->used = 0;
    }
    p = e->arena + e->used;
    e->used += n;
    return p;
}

static void
arena_reset(struct sql_eval *e)
{
    for (size_t i = 0; i < e->nold; i++)
        free(e->old[i]);
    e->nold = 0;
    e->used = 0;
}

void
sql_eval_begin(struct sql_eval *e)
{
    if (e->nold != 0 || e->used != 0)
        arena_reset(e);
}

bool
sql_like(const char *s, size_t slen, const char *pat, size_t plen, char escape)
{
    size_t si = 0, pi = 0, star_p = SIZE_MAX, star_s = 0;

    /* Iterative matching with backtracking to the last %. Bytes, not
     * characters: _ matches one byte of a multi-byte character. */
    while (si < slen) {
        if (pi < plen && pat[pi] == '%') {
            star_p = ++pi;
            star_s = si;
            continue;
        }
        if (pi < plen) {
            char pc = pat[pi];
            bool lit = false;

            if (escape && pc == escape && pi + 1 < plen) {
                pc = pat[pi + 1];
                lit = true;
            }
            if ((!lit && pc == '_') || pc == s[si]) {
                si++;
                pi += lit ? 2 : 1;
                continue;
            }
        }
        if (star_p == SIZE_MAX)
            return false;
        pi = star_p;
        si = ++star_s;
    }
    while (pi < plen && pat[pi] == '%')
        pi++;
    return pi == plen;
}

static size_t
utf8_len(const char *s, size_t n)
{
    size_t c = 0;

    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xc0) != 0x80;
    return c;
}

/* The byte offset of character k (0-based) of s, or n. */
static size_t
utf8_offset(const char *s, size_t n, int64_t k)
{
    size_t i = 0;

    for (; i < n && k > 0; k--)
        for (i++; i < n && ((unsigned char)s[i] & 0xc0) == 0x80; i++)
            ;
    return i;
}

/* A field of a day (days since the epoch) and a time in it (ms). */
static int64_t
extract(int64_t days, int64_t in_day, int field)
{
    int64_t y;
    unsigned m, d;

    switch (field) {
    case SQL_F_HOUR:
        return in_day / 3600000;
    case SQL_F_MINUTE:
        return in_day / 60000 % 60;
    case SQL_F_SECOND:
        return in_day / 1000 % 60;
    case SQL_F_MILLISECOND:
        return in_day % 60000;
    case SQL_F_EPOCH: /* wrapping, as the arithmetic does */
        return (int64_t)((uint64_t)days * 86400 + (uint64_t)(in_day / 1000));
    case SQL_F_DOW:
        return ((days % 7) + 11) % 7; /* 1970-01-01 was a Thursday (4); Sunday is 0 */
    case SQL_F_EPOCH_DAY:
        return days;
    default:
        break;
    }
    sql_civil_from_days(days, &y, &m, &d);
    switch (field) {
    case SQL_F_YEAR:
        return y;
    case SQL_F_MONTH:
        return m;
    case SQL_F_DAY:
        return d;
    case SQL_F_DOY:
        return days - sql_days_from_civil(y, 1, 1) + 1;
    default:
        return 0;
    }
}

static int64_t
extract_ms(int64_t ms, int field)
{
    int64_t days = sql_floor_div(ms, 86400000);

    return extract(days, ms - days * 86400000, field);
}

static int
cmp_result(int c, int64_t how)
{
    switch (how) {
    case SQL_EQ:
        return c == 0;
    case SQL_NE:
        return c != 0;
    case SQL_LT:
        return c < 0;
    case SQL_LE:
        return c <= 0;
    case SQL_GT:
        return c > 0;
    default:
        return c >= 0;
    }
}

/* Rounds v (of scale from) to scale to, half away from zero. */
static int64_t
rescale(int64_t v, int from, int to)
{
    if (to >= from)
        return (int64_t)((uint64_t)v * (uint64_t)sql_pow10(to - from));
    {
        int64_t p = sql_pow10(from - to), q = v / p, r = v % p;

        if (r * 2 >= p)
            q++;
        else if (r * 2 <= -p)
            q--;
        return q;
    }
}

static void
to_string(struct sql_eval *e, const struct sql_insn *in, struct sql_value *d,
          const struct sql_value *a)
{
    struct sql_type t = { (enum sql_type_id)(in->imm & 0xff), 18, (int)((in->imm >> 8) & 0xff),
                          true };
    char buf[64];
    int n;

    if (t.id == SQL_VARCHAR) {
        d->s = a->s;
        return;
    }
    n = sql_value_format(&t, a, buf, sizeof buf);
    d->s.len = (size_t)MIN(n, (int)sizeof buf - 1);
    d->s.p = memcpy(sql_eval_alloc(e, d->s.len), buf, d->s.len);
}

void
sql_eval_run(struct sql_eval *e)
{
    const struct sql_program *p = e->p;
    struct sql_value *r = e->r;
    const struct sql_insn *code = p->code;
    int n = p->ncode;

    for (int pc = e->start; pc < n; pc++) {
        const struct sql_insn *in = &code[pc];
        struct sql_value *d = &r[in->dst];
        const struct sql_value *a = &r[in->a], *b = &r[in->b], *c = &r[in->c];

        switch ((enum sql_op)in->op) {
        case SQLOP_CONST:
            break;
        case SQLOP_COPY:
            *d = *a;
            break;
#define BIN_I(expr)                                      \
    if (!(d->null = a->null || b->null)) {               \
        uint64_t x = (uint64_t)a->i, y = (uint64_t)b->i; \
        d->i = (int64_t)(expr);                          \
    }                                                    \
    break;
        case SQLOP_ADD_I:
            BIN_I(x + y)
        case SQLOP_SUB_I:
            BIN_I(x - y)
        case SQLOP_MUL_I:
            BIN_I(x * y)
        case SQLOP_DIV_I:
            if (!(d->null = a->null || b->null || b->i == 0))
                d->i = (b->i == -1) ? (int64_t)(0 - (uint64_t)a->i) : a->i / b->i;
            break;
        case SQLOP_MOD_I:
            if (!(d->null = a->null || b->null || b->i == 0))
                d->i = b->i == -1 ? 0 : a->i % b->i;
            break;
        case SQLOP_NEG_I:
            if (!(d->null = a->null))
                d->i = (int64_t)(0 - (uint64_t)a->i);
            break;
        case SQLOP_ABS_I:
            if (!(d->null = a->null))
                d->i = a->i < 0 ? (int64_t)(0 - (uint64_t)a->i) : a->i;
            break;
#define BIN_F(expr)                      \
    if (!(d->null = a->null || b->null)) \
        d->f = (expr);                   \
    break;
        case SQLOP_ADD_F:
            BIN_F(a->f + b->f)
        case SQLOP_SUB_F:
            BIN_F(a->f - b->f)
        case SQLOP_MUL_F:
            BIN_F(a->f * b->f)
        case SQLOP_DIV_F:
            if (!(d->null = a->null || b->null || b->f == 0))
                d->f = a->f / b->f;
            break;
        case SQLOP_MOD_F:
            if (!(d->null = a->null || b->null || b->f == 0))
                d->f = fmod(a->f, b->f);
            break;
        case SQLOP_POW_F:
            BIN_F(pow(a->f, b->f))
        case SQLOP_NEG_F:
            if (!(d->null = a->null))
                d->f = -a->f;
            break;
        case SQLOP_ABS_F:
            if (!(d->null = a->null))
                d->f = fabs(a->f);
            break;
        case SQLOP_SQRT_F:
            if (!(d->null = a->null || a->f < 0))
                d->f = sqrt(a->f);
            break;
        case SQLOP_FLOOR_F:
            if (!(d->null = a->null))
                d->f = floor(a->f);
            break;
        case SQLOP_CEIL_F:
            if (!(d->null = a->null))
                d->f = ceil(a->f);
            break;
        case SQLOP_ROUND_F:
            if (!(d->null = a->null || b->null)) {
                double m = pow(10, (double)b->i);

                d->f = round(a->f * m) / m;
            }
            break;
        case SQLOP_ROUND_I:
            if (!(d->null = a->null || b->null)) {
                int digits = b->i < 0 ? 0 : b->i > in->imm ? (int)in->imm : (int)b->i;

                d->i = rescale(rescale(a->i, (int)in->imm, digits), digits, (int)in->imm);
            }
            break;
        case SQLOP_I2F:
            if (!(d->null = a->null))
                d->f = in->imm ? (double)a->i / (double)sql_pow10((int)in->imm) : (double)a->i;
            break;
        case SQLOP_F2I:
            if (!(d->null = a->null || isnan(a->f) ||
                            fabs(a->f * (double)sql_pow10((int)in->imm)) >= 9.2e18))
                d->i = in->imm ? (int64_t)llround(a->f * (double)sql_pow10((int)in->imm))
                               : (int64_t)a->f;
            break;
        case SQLOP_RESCALE:
            if (!(d->null = a->null))
                d->i = in->fimm != 0 && in->c < in->imm ? a->i / sql_pow10((int)in->imm - in->c)
                                                        : rescale(a->i, (int)in->imm, in->c);
            break;
        case SQLOP_TO_S:
            if (!(d->null = a->null))
                to_string(e, in, d, a);
            break;
        case SQLOP_FROM_S:
            if (!(d->null = a->null)) {
                struct sql_value v;

                if (sql_value_parse(&p->regs[in->dst], a->s.p, a->s.len, &v, NULL) != 0)
                    d->null = true;
                else
                    *d = v;
            }
            break;
        case SQLOP_INT32:
            if (!(d->null = a->null))
                d->i = (int32_t)(uint32_t)(uint64_t)a->i;
            break;
        case SQLOP_CMP_I:
            if (!(d->null = a->null || b->null))
                d->i = cmp_result((a->i > b->i) - (a->i < b->i), in->imm);
            break;
        case SQLOP_CMP_F:
            if (!(d->null = a->null || b->null))
                d->i = cmp_result((a->f > b->f) - (a->f < b->f), in->imm);
            break;
        case SQLOP_CMP_S:
            if (!(d->null = a->null || b->null)) {
                size_t m = MIN(a->s.len, b->s.len);
                int k = m ? memcmp(a->s.p, b->s.p, m) : 0;

                if (k == 0)
                    k = (a->s.len > b->s.len) - (a->s.len < b->s.len);
                d->i = cmp_result(k, in->imm);
            }
            break;
        case SQLOP_AND:
            /* FALSE wins over NULL. */
            if ((!a->null && !a->i) || (!b->null && !b->i)) {
                d->null = false;
                d->i = 0;
            } else {
                d->null = a->null || b->null;
                d->i = 1;
            }
            break;
        case SQLOP_OR:
            if ((!a->null && a->i) || (!b->null && b->i)) {
                d->null = false;
                d->i = 1;
            } else {
                d->null = a->null || b->null;
                d->i = 0;
            }
            break;
        case SQLOP_NOT:
            if (!(d->null = a->null))
                d->i = !a->i;
            break;
        case SQLOP_IS_NULL:
            d->null = false;
            d->i = a->null;
            break;
        case SQLOP_IS_NOT_NULL:
            d->null = false;
            d->i = !a->null;
            break;
        case SQLOP_JMP:
            pc = (int)in->imm - 1;
            break;
        case SQLOP_JMP_UNLESS_TRUE:
            if (a->null || !a->i)
                pc = (int)in->imm - 1;
            break;
        case SQLOP_JMP_IF_NOT_NULL:
            if (!a->null)
                pc = (int)in->imm - 1;
            break;
        case SQLOP_JMP_IF_FALSE:
            if (!a->null && !a->i)
                pc = (int)in->imm - 1;
            break;
        case SQLOP_JMP_IF_TRUE:
            if (!a->null && a->i)
                pc = (int)in->imm - 1;
            break;
        case SQLOP_LIKE:
            if (!(d->null = a->null))
                d->i = sql_like(a->s.p, a->s.len, in->sval, in->slen, (char)in->imm);
            break;
        case SQLOP_CONCAT:
            if (!(d->null = a->null || b->null)) {
                char *s = sql_eval_alloc(e, a->s.len + b->s.len);

                if (a->s.len)
                    memcpy(s, a->s.p, a->s.len);
                if (b->s.len)
                    memcpy(s + a->s.len, b->s.p, b->s.len);
                d->s.p = s;
                d->s.len = a->s.len + b->s.len;
            }
            break;
        case SQLOP_UPPER:
        case SQLOP_LOWER:
            if (!(d->null = a->null)) {
                char *s = sql_eval_alloc(e, a->s.len);

                for (size_t i = 0; i < a->s.len; i++)
                    s[i] = (char)(in->op == SQLOP_UPPER ? toupper((unsigned char)a->s.p[i])
                                                        : tolower((unsigned char)a->s.p[i]));
                d->s.p = s;
                d->s.len = a->s.len;
            }
            break;
        case SQLOP_LENGTH:
            if (!(d->null = a->null))
                d->i = (int64_t)utf8_len(a->s.p, a->s.len);
            break;
        case SQLOP_SUBSTR:
            if (!(d->null = a->null || b->null || (!in->imm && c->null))) {
                /* PostgreSQL's: characters from b (1-based, may be <= 0) for c. */
                int64_t from = b->i, end;
                size_t o1, o2;

                if (!in->imm && c->i < 0) {
                    d->null = true;
                    break;
                }
                if (in->imm || __builtin_add_overflow(from, c->i, &end))
                    end = INT64_MAX; /* to the end */
                if (from < 1)
                    from = 1;
                o1 = utf8_offset(a->s.p, a->s.len, from - 1);
                o2 = end == INT64_MAX ? a->s.len
                     : end <= from    ? o1
                                      : utf8_offset(a->s.p, a->s.len, end - 1);
                d->s.p = a->s.p + o1;
                d->s.len = o2 > o1 ? o2 - o1 : 0;
            }
            break;
        case SQLOP_TRIM:
            if (!(d->null = a->null)) {
                const char *s = a->s.p;
                size_t len = a->s.len;

                while ((in->imm & 1) && len > 0 && *s == ' ')
                    s++, len--;
                while ((in->imm & 2) && len > 0 && s[len - 1] == ' ')
                    len--;
                d->s.p = s;
                d->s.len = len;
            }
            break;
        case SQLOP_REPLACE:
            if (!(d->null = a->null || b->null || c->null)) {
                size_t cnt = 0, i, o = 0;
                char *s;

                if (b->s.len == 0) {
                    d->s = a->s;
                    break;
                }
                for (i = 0; i + b->s.len <= a->s.len;)
                    if (memcmp(a->s.p + i, b->s.p, b->s.len) == 0) {
                        cnt++;
                        i += b->s.len;
                    } else {
                        i++;
                    }
                s = sql_eval_alloc(e, a->s.len + cnt * c->s.len);
                for (i = 0; i < a->s.len;)
                    if (i + b->s.len <= a->s.len && memcmp(a->s.p + i, b->s.p, b->s.len) == 0) {
                        if (c->s.len)
                            memcpy(s + o, c->s.p, c->s.len);
                        o += c->s.len;
                        i += b->s.len;
                    } else {
                        s[o++] = a->s.p[i++];
                    }
                d->s.p = s;
                d->s.len = o;
            }
            break;
        case SQLOP_POSITION:
            if (!(d->null = a->null || b->null)) {
                d->i = 0;
                for (size_t i = 0; i + b->s.len <= a->s.len; i++)
                    if (memcmp(a->s.p + i, b->s.p, b->s.len) == 0) {
                        d->i = (int64_t)utf8_len(a->s.p, i) + 1;
                        break;
                    }
            }
            break;
        case SQLOP_EXTRACT:
            if (!(d->null = a->null))
                d->i = extract_ms(a->i, (int)in->imm);
            break;
        case SQLOP_EXTRACT_D:
            if (!(d->null = a->null))
                d->i = extract(a->i, 0, (int)in->imm);
            break;
        case SQLOP_SPLIT_INDEX:
            /* Flink's: the pieces between each whole b, empty ones kept;
             * NULL for a negative index or one past the last. */
            if (!(d->null = a->null || b->null || c->null || c->i < 0 || a->s.len == 0)) {
                const char *s = a->s.p, *end = s + a->s.len, *at;
                int64_t k = c->i;

                for (;;) {
                    at = b->s.len ? memmem(s, (size_t)(end - s), b->s.p, b->s.len) : NULL;
                    if (k == 0 || at == NULL)
                        break;
                    s = at + b->s.len;
                    k--;
                }
                if (k > 0) {
                    d->null = true;
                    break;
                }
                d->s.p = s;
                d->s.len = (size_t)((at ? at : end) - s);
            }
            break;
        case SQLOP_REGEXP_EXTRACT:
            if (!(d->null = a->null || b->null)) {
                const struct sql_regex *re = (const struct sql_regex *)e->regex + pc;
                int64_t g = b->i;
                regmatch_t m[10];

                char *str;

                if (g < 0 || g > (int64_t)re->re.re_nsub || g >= 10 ||
                    (re->literal_len > 0 &&
                     memmem(a->s.p, a->s.len, re->literal, re->literal_len) == NULL)) {
                    d->null = true;
                    break;
                }
                /* A string ends with a NUL for regexec (whose interceptors
                 * read to it); REG_STARTEND: NULs inside are matched. */
                str = sql_eval_alloc(e, a->s.len + 1);
                if (a->s.len > 0)
                    memcpy(str, a->s.p, a->s.len);
                str[a->s.len] = '\0';
                m[0].rm_so = 0;
                m[0].rm_eo = (regoff_t)a->s.len;
                if (regexec(&re->re, str, 10, m, REG_STARTEND) != 0 || m[g].rm_so < 0) {
                    d->null = true;
                    break;
                }
                d->s.p = a->s.p + m[g].rm_so;
                d->s.len = (size_t)(m[g].rm_eo - m[g].rm_so);
            }
            break;
        case SQLOP_DATE_FORMAT:
            if (!(d->null = a->null)) {
                char buf[128];
                int k = sql_date_format(in->sval, a->i, buf, sizeof buf);
                char *str = sql_eval_alloc(e, (size_t)k + 1);

                if ((size_t)k >= sizeof buf)
                    sql_date_format(in->sval, a->i, str, (size_t)k + 1);
                else
                    memcpy(str, buf, (size_t)k);
                d->s.p = str;
                d->s.len = (size_t)k;
            }
            break;
        case SQLOP_PROCTIME:
            d->null = false;
            d->i = sql_proctime_ms();
            break;
        case SQLOP_UDF:
            sql_udf_call(e, pc, d);
            break;
        case SQLOP_COUNT:
            break;
        }
    }
}
