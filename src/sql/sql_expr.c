/* The binder and compiler of SQL expressions (sql_expr.h). */
#include <ctype.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/alloc.h"
#include "core/nearest.h"
#include "core/util.h"
#include "sql/sql_catalog.h"
#include "sql/sql_expr.h"
#include "sql/sql_parser.h"
#include "sql/sql_udf.h"

/* ---- errors and names ---- */

int
sql_location(json_t *node)
{
    const char *key;
    json_t *v;

    if (!json_is_object(node))
        return -1;
    v = json_object_get(node, "location");
    if (json_is_integer(v))
        return (int)json_integer_value(v);
    json_object_foreach(node, key, v)
    {
        json_t *loc = json_object_get(v, "location");

        if (json_is_integer(loc))
            return (int)json_integer_value(loc);
    }
    return -1;
}

int
sql_error_in(spate_error *err, const char *script, size_t offset, json_t *node, int code,
             const char *fmt, ...)
{
    char msg[300];
    int loc = sql_location(node);
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return sql_error_at(err, code, script, offset + (size_t)(loc >= 0 ? loc : 0), "%s", msg);
}

const char *
sql_nearest(const char *name, const char *const *names, int n)
{
    return nearest_name(name, names, n > 0 ? (size_t)n : 0, MAX(2, (int)strlen(name) / 3));
}

/* ---- building the program ---- */

static int
new_reg(struct sql_compiler *c, const struct sql_type *t)
{
    struct sql_program *p = c->p;

    xgrow((void **)&p->regs, &c->regs_cap, (size_t)p->nregs + 1, sizeof *p->regs);
    p->regs[p->nregs] = *t;
    if (p->regs[p->nregs].id == SQL_VARCHAR)
        p->regs[p->nregs].precision = 0;
    return p->nregs++;
}

static struct sql_insn *
emit(struct sql_compiler *c, int op, int dst, int a, int b, int cc)
{
    struct sql_program *p = c->p;
    struct sql_insn *in;

    xgrow((void **)&p->code, &c->code_cap, (size_t)p->ncode + 1, sizeof *p->code);
    in = &p->code[p->ncode++];
    memset(in, 0, sizeof *in);
    in->op = (uint16_t)op;
    in->dst = (uint16_t)(dst < 0 ? 0 : dst);
    in->a = (uint16_t)(a < 0 ? 0 : a);
    in->b = (uint16_t)(b < 0 ? 0 : b);
    in->c = (uint16_t)(cc < 0 ? 0 : cc);
    return in;
}

static struct sql_insn *
emit_const(struct sql_compiler *c, int dst)
{
    struct sql_insn *in;

    xgrow((void **)&c->consts, &c->consts_cap, (size_t)c->nconsts + 1, sizeof *c->consts);
    in = &c->consts[c->nconsts++];
    memset(in, 0, sizeof *in);
    in->op = SQLOP_CONST;
    in->dst = (uint16_t)dst;
    return in;
}

static int
const_int(struct sql_compiler *c, enum sql_type_id id, int scale, int64_t v)
{
    struct sql_type t = { id, id == SQL_DECIMAL ? 18 : 0, scale, false };
    int r = new_reg(c, &t);

    emit_const(c, r)->imm = v;
    return r;
}

static int
const_null(struct sql_compiler *c, const struct sql_type *t)
{
    int r = new_reg(c, t);

    emit_const(c, r)->a = 1;
    return r;
}

static int
const_str(struct sql_compiler *c, const char *s, size_t len)
{
    struct sql_type t = { SQL_VARCHAR, 0, 0, false };
    int r = new_reg(c, &t);
    struct sql_insn *in = emit_const(c, r);

    in->sval = xstrndup(s, len);
    in->slen = len;
    return r;
}

void
sql_compiler_init(struct sql_compiler *c, struct sql_program *p, const struct sql_scope *scope,
                  const char *script, size_t offset, spate_error *err)
{
    memset(c, 0, sizeof *c);
    c->p = p;
    c->scope = scope;
    c->script = script;
    c->offset = offset;
    c->err = err;
    p->filter = -1;
    p->rowtime = -1;
    p->key_reg = -1;
    p->kind_reg = -1;
    for (int i = 0; i < scope->ncols; i++)
        new_reg(c, &scope->cols[i].type);
}

int
sql_compile_temp(struct sql_compiler *c, const struct sql_type *t)
{
    return new_reg(c, t);
}

void
sql_compiler_finish(struct sql_compiler *c)
{
    struct sql_program *p = c->p;
    int k = c->nconsts;

    xgrow((void **)&p->code, &c->code_cap, (size_t)p->ncode + (size_t)k + 1, sizeof *p->code);
    memmove(p->code + k, p->code, (size_t)p->ncode * sizeof *p->code);
    if (k > 0)
        memcpy(p->code, c->consts, (size_t)k * sizeof *p->code);
    p->ncode += k;
    for (int i = k; i < p->ncode; i++)
        if (p->code[i].op >= SQLOP_JMP && p->code[i].op <= SQLOP_JMP_IF_TRUE)
            p->code[i].imm += k;
    free(c->consts);
    c->consts = NULL;
    c->nconsts = 0;
}

/* Compiles to learn a node's type, then drops what it emitted. */
static int
type_of(struct sql_compiler *c, json_t *node, struct sql_operand *out)
{
    int ncode = c->p->ncode, nregs = c->p->nregs, nconsts = c->nconsts, rc;

    rc = sql_compile(c, node, out);
    for (int i = ncode; i < c->p->ncode; i++)
        free(c->p->code[i].sval);
    for (int i = nconsts; i < c->nconsts; i++)
        free(c->consts[i].sval);
    c->p->ncode = ncode;
    c->p->nregs = nregs;
    c->nconsts = nconsts;
    return rc;
}

/* ---- types ---- */

static const char *
tname(const struct sql_type *t, char buf[32])
{
    return sql_type_name(t, buf);
}

static int
numeric_rank(enum sql_type_id id)
{
    switch (id) {
    case SQL_INT:
        return 1;
    case SQL_BIGINT:
        return 2;
    case SQL_DECIMAL:
        return 3;
    case SQL_DOUBLE:
        return 4;
    default:
        return 0;
    }
}

/* The common type of two numeric types. */
static struct sql_type
numeric_common(const struct sql_type *a, const struct sql_type *b)
{
    struct sql_type t = numeric_rank(a->id) >= numeric_rank(b->id) ? *a : *b;

    if (t.id == SQL_DECIMAL) {
        int sa = a->id == SQL_DECIMAL ? a->scale : 0, sb = b->id == SQL_DECIMAL ? b->scale : 0;
        int ia = a->id == SQL_DECIMAL ? a->precision - a->scale : a->id == SQL_INT ? 10 : 18;
        int ib = b->id == SQL_DECIMAL ? b->precision - b->scale : b->id == SQL_INT ? 10 : 18;

        t.scale = MAX(sa, sb);
        t.precision = MIN(SQL_DECIMAL_MAX_PRECISION, MAX(ia, ib) + t.scale);
        if (t.precision < t.scale)
            t.precision = t.scale;
    }
    t.nullable = a->nullable || b->nullable;
    return t;
}

int
sql_compile_cast(struct sql_compiler *c, struct sql_operand *op, const struct sql_type *t,
                 int location)
{
    enum sql_type_id from = op->type.id, to = t->id;
    char b1[32], b2[32];
    int r;

    if (from == SQL_NULL) {
        op->reg = const_null(c, t);
        op->type = *t;
        op->type.nullable = true;
        return 0;
    }
    if (op->string_literal && to != SQL_VARCHAR) {
        /* 'text' meeting a type is read as one now, as PostgreSQL reads an
         * unknown-typed literal. */
        struct sql_value v;
        spate_error perr = { 0 };

        if (sql_value_parse(t, op->literal, op->literal_len, &v, &perr) != 0)
            return sql_error_at(c->err, SPATE_EINVAL, c->script,
                                c->offset + (size_t)(op->location >= 0 ? op->location : 0), "%s",
                                perr.message);
        if (sql_type_phys(to) == SQL_PHYS_DOUBLE) {
            r = new_reg(c, t);
            emit_const(c, r)->fimm = v.f;
        } else {
            r = const_int(c, to, t->scale, v.i);
            c->p->regs[r] = *t;
        }
        op->reg = r;
        op->type = *t;
        op->string_literal = false;
        return 0;
    }
    if (from == to && (from != SQL_DECIMAL || op->type.scale == t->scale)) {
        op->type = (struct sql_type){ to, t->precision ? t->precision : op->type.precision,
                                      t->scale, op->type.nullable };
        if (to == SQL_INT && from == SQL_INT)
            return 0;
        return 0;
    }
    r = new_reg(c, t);
    if (to == SQL_VARCHAR) {
        emit(c, SQLOP_TO_S, r, op->reg, -1, -1)->imm = from | op->type.scale << 8;
    } else if (from == SQL_VARCHAR) {
        emit(c, SQLOP_FROM_S, r, op->reg, -1, -1);
    } else if (numeric_rank(from) && numeric_rank(to)) {
        int fs = from == SQL_DECIMAL ? op->type.scale : 0, ts = to == SQL_DECIMAL ? t->scale : 0;

        if (to == SQL_DOUBLE) {
            emit(c, SQLOP_I2F, r, op->reg, -1, -1)->imm = fs;
        } else if (from == SQL_DOUBLE) {
            emit(c, SQLOP_F2I, r, op->reg, -1, -1)->imm = ts;
        } else if (fs != ts) {
            struct sql_insn *in = emit(c, SQLOP_RESCALE, r, op->reg, -1, ts);

            in->imm = fs;
            in->fimm = to != SQL_DECIMAL; /* to an integer: truncated, as Flink casts */
        } else {
            emit(c, SQLOP_COPY, r, op->reg, -1, -1);
        }
        if (to == SQL_INT && from != SQL_INT)
            emit(c, SQLOP_INT32, r, r, -1, -1);
    } else if ((from == SQL_BOOLEAN && (to == SQL_INT || to == SQL_BIGINT)) ||
               ((from == SQL_INT || from == SQL_BIGINT) && to == SQL_BOOLEAN)) {
        if (to == SQL_BOOLEAN) {
            int zero = const_int(c, SQL_BIGINT, 0, 0);

            emit(c, SQLOP_CMP_I, r, op->reg, zero, -1)->imm = SQL_NE;
        } else {
            emit(c, SQLOP_COPY, r, op->reg, -1, -1);
        }
    } else if (from == SQL_DATE && to == SQL_TIMESTAMP) {
        emit(c, SQLOP_MUL_I, r, op->reg, const_int(c, SQL_BIGINT, 0, 86400000), -1);
    } else if (from == SQL_TIMESTAMP && to == SQL_DATE) {
        /* Days, rounded toward minus infinity. */
        emit(c, SQLOP_EXTRACT, r, op->reg, -1, -1)->imm = SQL_F_EPOCH_DAY;
    } else {
        return sql_error_at(c->err, SPATE_EINVAL, c->script,
                            c->offset + (size_t)(location >= 0 ? location : 0),
                            "cannot cast %s to %s", tname(&op->type, b1), tname(t, b2));
    }
    op->reg = r;
    op->type = *t;
    op->type.nullable = true;
    op->string_literal = false;
    return 0;
}

int
sql_type_from_pg(struct sql_compiler *c, json_t *tn, struct sql_type *out)
{
    json_t *names = json_object_get(tn, "names"), *mods = json_object_get(tn, "typmods");
    const char *name = json_string_value(json_object_get(
        json_object_get(json_array_get(names, json_array_size(names) - 1), "String"), "sval"));
    int64_t m[2] = { -1, -1 };
    size_t nm = json_array_size(mods);

    memset(out, 0, sizeof *out);
    out->nullable = true;
    if (name == NULL)
        return sql_error_node(c, tn, SPATE_EINVAL, "a type without a name");
    if (json_array_size(json_object_get(tn, "arrayBounds")) > 0)
        return sql_error_node(c, tn, SPATE_ENOTSUP, "not supported: ARRAY types");
    for (size_t i = 0; i < nm && i < 2; i++) {
        json_t *v = json_object_get(json_object_get(json_array_get(mods, i), "A_Const"), "ival");

        m[i] = json_integer_value(json_object_get(v, "ival"));
    }
    if (!strcmp(name, "int4") || !strcmp(name, "int") || !strcmp(name, "integer") ||
        !strcmp(name, "int2") || !strcmp(name, "smallint") || !strcmp(name, "tinyint")) {
        out->id = SQL_INT;
    } else if (!strcmp(name, "int8") || !strcmp(name, "bigint")) {
        out->id = SQL_BIGINT;
    } else if (!strcmp(name, "float8") || !strcmp(name, "float4") || !strcmp(name, "double") ||
               !strcmp(name, "real") || !strcmp(name, "float")) {
        out->id = SQL_DOUBLE;
    } else if (!strcmp(name, "numeric") || !strcmp(name, "decimal")) {
        out->id = SQL_DECIMAL;
        out->precision = nm >= 1 ? (int)m[0] : 10;
        out->scale = nm >= 2 ? (int)m[1] : 0;
        if (out->precision < 1 || out->precision > SQL_DECIMAL_MAX_PRECISION || out->scale < 0 ||
            out->scale > out->precision)
            return sql_error_node(c, tn, SPATE_ENOTSUP,
                                  "not supported: DECIMAL(%d, %d): precision is 1 to %d, scale 0 "
                                  "to the precision",
                                  out->precision, out->scale, SQL_DECIMAL_MAX_PRECISION);
    } else if (!strcmp(name, "varchar") || !strcmp(name, "text") || !strcmp(name, "bpchar") ||
               !strcmp(name, "char") || !strcmp(name, "string")) {
        out->id = SQL_VARCHAR;
        out->precision = nm >= 1 && m[0] > 0 ? (int)m[0] : 0;
    } else if (!strcmp(name, "bool") || !strcmp(name, "boolean")) {
        out->id = SQL_BOOLEAN;
    } else if (!strcmp(name, "date")) {
        out->id = SQL_DATE;
    } else if (!strcmp(name, "timestamp")) {
        out->id = SQL_TIMESTAMP;
        out->precision = 3;
    } else if (!strcmp(name, "interval")) {
        out->id = SQL_INTERVAL;
        /* INTERVAL '10' SECOND: the field is the unit of a bare number. */
        out->scale = 0;
        if (nm >= 1 && m[0] > 0) {
            static const struct {
                int64_t mask, ms;
            } units[] = {
                { 1 << 3, 86400000 }, { 1 << 10, 3600000 }, { 1 << 11, 60000 }, { 1 << 12, 1000 }
            };

            for (size_t i = 0; i < ARRAY_SIZE(units); i++)
                if (m[0] == units[i].mask)
                    out->precision = (int)(units[i].ms / 1000); /* the unit, in seconds */
        }
    } else if (!strcmp(name, "timestamptz") || !strcmp(name, "time") || !strcmp(name, "timetz")) {
        return sql_error_node(c, tn, SPATE_ENOTSUP, "not supported: type %s", name);
    } else {
        return sql_error_node(c, tn, SPATE_ENOTSUP, "not supported: type '%s'", name);
    }
    return 0;
}

/* ---- expressions ---- */

static const char *
node_kind(json_t *node)
{
    const char *key;
    json_t *v;

    json_object_foreach(node, key, v)
    {
        return key;
    }
    return "?";
}

static const char *
sval(json_t *s)
{
    return json_string_value(json_object_get(json_object_get(s, "String"), "sval"));
}

/* A column of a join's scope: tab.col among tab's columns, col alone
 * among all, named by one table only. */
static int
compile_joined_column(struct sql_compiler *c, json_t *node, json_t *ref, const char *tab,
                      const char *col, struct sql_operand *out)
{
    const struct sql_scope *s = c->scope;
    bool tab_seen = tab == NULL;
    int found = -1;

    for (int i = 0; i < s->ncols; i++) {
        const char *q = c->qualifiers[i];

        if (tab != NULL && (q == NULL || strcmp(q, tab) != 0))
            continue;
        tab_seen = true;
        if (strcmp(s->cols[i].name, col) != 0)
            continue;
        if (found >= 0)
            return sql_error_node(c, node, SPATE_EINVAL,
                                  "column '%s' is ambiguous: both %s and %s have it; name it "
                                  "with its table",
                                  col, c->qualifiers[found] ? c->qualifiers[found] : "?",
                                  q ? q : "?");
        found = i;
    }
    if (!tab_seen)
        return sql_error_node(c, node, SPATE_EINVAL, "table '%s' is not in FROM", tab);
    if (found < 0)
        return sql_error_node(c, node, SPATE_EINVAL, "column '%s' does not exist in %s", col,
                              tab ? tab : "the join's tables");
    memset(out, 0, sizeof *out);
    out->reg = found;
    out->type = s->cols[found].type;
    out->location = sql_location(ref);
    return 0;
}

static int
compile_column(struct sql_compiler *c, json_t *node, json_t *ref, struct sql_operand *out)
{
    json_t *fields = json_object_get(ref, "fields");
    size_t n = json_array_size(fields);
    const struct sql_scope *s = c->scope;
    const char *col, *tab = NULL;
    const char *names[64];

    if (n == 0 || n > 2 || json_object_get(json_array_get(fields, n - 1), "A_Star"))
        return sql_error_node(c, node, SPATE_ENOTSUP, "not supported: * here");
    col = sval(json_array_get(fields, n - 1));
    if (n == 2)
        tab = sval(json_array_get(fields, 0));
    if (col == NULL)
        return sql_error_node(c, node, SPATE_EINVAL, "a column reference without a name");
    if (c->qualifiers != NULL)
        return compile_joined_column(c, node, ref, tab, col, out);
    if (tab != NULL && (s->table == NULL || strcmp(tab, s->table) != 0))
        return sql_error_node(c, node, SPATE_EINVAL, "table '%s' is not in FROM%s%s%s", tab,
                              s->table ? "; did you mean '" : "", s->table ? s->table : "",
                              s->table ? "'?" : "");
    for (int i = 0; i < s->ncols; i++)
        if (strcmp(s->cols[i].name, col) == 0) {
            memset(out, 0, sizeof *out);
            out->reg = i;
            out->type = s->cols[i].type;
            out->location = sql_location(ref);
            return 0;
        }
    for (int i = 0; i < s->ncols && i < 64; i++)
        names[i] = s->cols[i].name;
    {
        const char *near = sql_nearest(col, names, MIN(s->ncols, 64));

        if (near != NULL)
            return sql_error_node(c, node, SPATE_EINVAL,
                                  "column '%s' does not exist in %s; did you mean '%s'?", col,
                                  s->table ? s->table : "the input", near);
        return sql_error_node(c, node, SPATE_EINVAL, "column '%s' does not exist in %s", col,
                              s->table ? s->table : "the input");
    }
}

/* libpg_query's JSON leaves out an integer constant that is 0 or negative
 * ({"ival": {}}): its value is read from the statement's text instead,
 * where the constant starts (a '-', maybe spaces, digits). */
static int64_t
ival_from_text(struct sql_compiler *c, int location)
{
    const char *p;
    bool neg = false;
    int64_t v = 0;

    if (location < 0 || c->offset + (size_t)location >= strlen(c->script))
        return 0;
    p = c->script + c->offset + location;
    while (*p == '-' || *p == '+' || isspace((unsigned char)*p))
        neg ^= *p++ == '-';
    while (isdigit((unsigned char)*p))
        v = v * 10 + (*p++ - '0');
    return neg ? -v : v;
}

static int
compile_const(struct sql_compiler *c, json_t *k, struct sql_operand *out)
{
    json_t *v;

    memset(out, 0, sizeof *out);
    out->location = sql_location(k);
    if (json_is_true(json_object_get(k, "isnull"))) {
        out->type.id = SQL_NULL;
        out->type.nullable = true;
        out->reg = -1;
        return 0;
    }
    if ((v = json_object_get(k, "ival")) != NULL) {
        int64_t i = json_integer_value(json_object_get(v, "ival"));

        if (json_object_get(v, "ival") == NULL)
            i = ival_from_text(c, out->location);

        out->reg = const_int(c, SQL_INT, 0, i);
        out->type = (struct sql_type){ SQL_INT, 0, 0, false };
        return 0;
    }
    if ((v = json_object_get(k, "fval")) != NULL) {
        /* 1.5 is DECIMAL(2, 1), as in Flink SQL; beyond 18 digits or with an
         * exponent, DOUBLE. */
        const char *s = json_string_value(json_object_get(v, "fval"));
        const char *dot = strchr(s, '.');
        size_t len = strlen(s);
        int digits = 0, scale = dot ? (int)(len - (size_t)(dot - s) - 1) : 0;

        for (const char *q = s; *q; q++)
            digits += isdigit((unsigned char)*q) != 0;
        if (strpbrk(s, "eE") == NULL && digits <= SQL_DECIMAL_MAX_PRECISION) {
            struct sql_type t = { SQL_DECIMAL, MAX(digits, 1), scale, false };
            struct sql_value val;

            if (sql_value_parse(&t, s, len, &val, c->err) != 0)
                return SPATE_EINVAL;
            out->reg = const_int(c, SQL_DECIMAL, scale, val.i);
            c->p->regs[out->reg] = t;
            out->type = t;
        } else {
            struct sql_type t = { SQL_DOUBLE, 0, 0, false };

            out->reg = new_reg(c, &t);
            emit_const(c, out->reg)->fimm = strtod(s, NULL);
            out->type = t;
        }
        return 0;
    }
    if ((v = json_object_get(k, "boolval")) != NULL) {
        out->reg = const_int(c, SQL_BOOLEAN, 0, json_is_true(json_object_get(v, "boolval")));
        out->type = (struct sql_type){ SQL_BOOLEAN, 0, 0, false };
        return 0;
    }
    if ((v = json_object_get(k, "sval")) != NULL) {
        const char *s = json_string_value(json_object_get(v, "sval"));

        s = s ? s : "";
        out->reg = const_str(c, s, strlen(s));
        out->type = (struct sql_type){ SQL_VARCHAR, 0, 0, false };
        out->string_literal = true;
        out->literal = s;
        out->literal_len = strlen(s);
        return 0;
    }
    return sql_error_node(c, k, SPATE_ENOTSUP, "not supported: this constant");
}

/* Brings a and b to one type for a comparison or arithmetic; the error
 * names the operator and both types. */
static int
unify(struct sql_compiler *c, json_t *node, const char *opname, struct sql_operand *a,
      struct sql_operand *b)
{
    char b1[32], b2[32];
    struct sql_type t;

    if (a->type.id == SQL_NULL && b->type.id == SQL_NULL) {
        t = (struct sql_type){ SQL_VARCHAR, 0, 0, true };
        return sql_compile_cast(c, a, &t, -1) || sql_compile_cast(c, b, &t, -1);
    }
    if (a->type.id == SQL_NULL || (a->string_literal && !b->string_literal))
        return sql_compile_cast(c, a, &b->type, a->location);
    if (b->type.id == SQL_NULL || (b->string_literal && !a->string_literal))
        return sql_compile_cast(c, b, &a->type, b->location);
    if (numeric_rank(a->type.id) && numeric_rank(b->type.id)) {
        t = numeric_common(&a->type, &b->type);
        if (sql_compile_cast(c, a, &t, a->location) || sql_compile_cast(c, b, &t, b->location))
            return SPATE_EINVAL;
        return 0;
    }
    if (a->type.id == b->type.id)
        return 0;
    return sql_error_node(c, node, SPATE_EINVAL, "cannot apply '%s' to %s and %s", opname,
                          tname(&a->type, b1), tname(&b->type, b2));
}

static int
result(struct sql_compiler *c, struct sql_operand *out, enum sql_type_id id, bool nullable)
{
    struct sql_type t = { id, 0, 0, nullable };

    memset(out, 0, sizeof *out);
    out->type = t;
    out->reg = new_reg(c, &t);
    return out->reg;
}

static int
compile_compare(struct sql_compiler *c, json_t *node, const char *op, struct sql_operand *a,
                struct sql_operand *b, struct sql_operand *out)
{
    static const struct {
        const char *name;
        enum sql_cmp cmp;
    } ops[] = { { "=", SQL_EQ },  { "<>", SQL_NE }, { "!=", SQL_NE }, { "<", SQL_LT },
                { "<=", SQL_LE }, { ">", SQL_GT },  { ">=", SQL_GE } };
    enum sql_cmp cmp = SQL_EQ;
    bool nullable;
    int r, kind;

    for (size_t i = 0; i < ARRAY_SIZE(ops); i++)
        if (strcmp(op, ops[i].name) == 0)
            cmp = ops[i].cmp;
    if (unify(c, node, op, a, b) != 0)
        return SPATE_EINVAL;
    nullable = a->type.nullable || b->type.nullable;
    kind = sql_type_phys(a->type.id) == SQL_PHYS_DOUBLE   ? SQLOP_CMP_F
           : sql_type_phys(a->type.id) == SQL_PHYS_STRING ? SQLOP_CMP_S
                                                          : SQLOP_CMP_I;
    r = result(c, out, SQL_BOOLEAN, nullable);
    emit(c, kind, r, a->reg, b->reg, -1)->imm = cmp;
    return 0;
}

static int
compile_arith(struct sql_compiler *c, json_t *node, const char *op, struct sql_operand *a,
              struct sql_operand *b, struct sql_operand *out)
{
    enum sql_type_id ta = a->type.id, tb = b->type.id;
    bool nullable = a->type.nullable || b->type.nullable;
    char b1[32], b2[32];
    int r;

    /* Time arithmetic: TIMESTAMP ± INTERVAL, DATE ± INT, differences. */
    if ((ta == SQL_TIMESTAMP && tb == SQL_INTERVAL && (*op == '+' || *op == '-')) ||
        (ta == SQL_INTERVAL && tb == SQL_TIMESTAMP && *op == '+')) {
        r = result(c, out, SQL_TIMESTAMP, nullable);
        emit(c, *op == '+' ? SQLOP_ADD_I : SQLOP_SUB_I, r, a->reg, b->reg, -1);
        return 0;
    }
    if (ta == SQL_DATE && (tb == SQL_INT || tb == SQL_BIGINT) && (*op == '+' || *op == '-')) {
        r = result(c, out, SQL_DATE, nullable);
        emit(c, *op == '+' ? SQLOP_ADD_I : SQLOP_SUB_I, r, a->reg, b->reg, -1);
        return 0;
    }
    if (ta == tb && (ta == SQL_TIMESTAMP || ta == SQL_DATE) && *op == '-') {
        r = result(c, out, ta == SQL_DATE ? SQL_INT : SQL_INTERVAL, nullable);
        emit(c, SQLOP_SUB_I, r, a->reg, b->reg, -1);
        return 0;
    }
    if (ta == SQL_INTERVAL && tb == SQL_INTERVAL && (*op == '+' || *op == '-')) {
        r = result(c, out, SQL_INTERVAL, nullable);
        emit(c, *op == '+' ? SQLOP_ADD_I : SQLOP_SUB_I, r, a->reg, b->reg, -1);
        return 0;
    }
    if (ta == SQL_INTERVAL && (tb == SQL_INT || tb == SQL_BIGINT) && (*op == '*' || *op == '/')) {
        r = result(c, out, SQL_INTERVAL, nullable);
        emit(c, *op == '*' ? SQLOP_MUL_I : SQLOP_DIV_I, r, a->reg, b->reg, -1);
        return 0;
    }
    if (a->string_literal && numeric_rank(tb) && sql_compile_cast(c, a, &b->type, a->location))
        return SPATE_EINVAL;
    if (b->string_literal && numeric_rank(ta) && sql_compile_cast(c, b, &a->type, b->location))
        return SPATE_EINVAL;
    if (a->type.id == SQL_NULL && b->type.id == SQL_NULL) {
        struct sql_type t = { SQL_INT, 0, 0, true };

        sql_compile_cast(c, a, &t, -1);
        sql_compile_cast(c, b, &t, -1);
    }
    if (a->type.id == SQL_NULL)
        sql_compile_cast(c, a, &b->type, -1);
    if (b->type.id == SQL_NULL)
        sql_compile_cast(c, b, &a->type, -1);
    ta = a->type.id;
    tb = b->type.id;
    if (!numeric_rank(ta) || !numeric_rank(tb))
        return sql_error_node(c, node, SPATE_EINVAL, "cannot apply '%s' to %s and %s", op,
                              tname(&a->type, b1), tname(&b->type, b2));
    nullable = true;
    if (ta == SQL_DECIMAL || tb == SQL_DECIMAL) {
        if (*op == '+' || *op == '-' || *op == '%') {
            struct sql_type t = numeric_common(&a->type, &b->type);

            if (t.id == SQL_DECIMAL) {
                if (t.precision < SQL_DECIMAL_MAX_PRECISION)
                    t.precision++;
                if (sql_compile_cast(c, a, &t, -1) || sql_compile_cast(c, b, &t, -1))
                    return SPATE_EINVAL;
                out->type = t;
                memset(out, 0, sizeof *out);
                out->type = t;
                out->reg = new_reg(c, &t);
                emit(c,
                     *op == '+'   ? SQLOP_ADD_I
                     : *op == '-' ? SQLOP_SUB_I
                                  : SQLOP_MOD_I,
                     out->reg, a->reg, b->reg, -1);
                return 0;
            }
        } else if (*op == '*' && ta != SQL_DOUBLE && tb != SQL_DOUBLE) {
            struct sql_type da = a->type, db = b->type;

            if (ta != SQL_DECIMAL)
                da = (struct sql_type){ SQL_DECIMAL, ta == SQL_INT ? 10 : 18, 0, true };
            if (tb != SQL_DECIMAL)
                db = (struct sql_type){ SQL_DECIMAL, tb == SQL_INT ? 10 : 18, 0, true };
            if (da.scale + db.scale <= SQL_DECIMAL_MAX_PRECISION) {
                struct sql_type t = { SQL_DECIMAL,
                                      MIN(SQL_DECIMAL_MAX_PRECISION, da.precision + db.precision),
                                      da.scale + db.scale, true };

                if (t.precision < t.scale)
                    t.precision = t.scale;
                if (sql_compile_cast(c, a, &da, -1) || sql_compile_cast(c, b, &db, -1))
                    return SPATE_EINVAL;
                memset(out, 0, sizeof *out);
                out->type = t;
                out->reg = new_reg(c, &t);
                emit(c, SQLOP_MUL_I, out->reg, a->reg, b->reg, -1);
                return 0;
            }
        }
        /* Division and the rest: in DOUBLE. */
        {
            struct sql_type t = { SQL_DOUBLE, 0, 0, true };

            if (sql_compile_cast(c, a, &t, -1) || sql_compile_cast(c, b, &t, -1))
                return SPATE_EINVAL;
        }
    } else if (unify(c, node, op, a, b) != 0) {
        return SPATE_EINVAL;
    }
    {
        bool f = a->type.id == SQL_DOUBLE;
        int kind;

        switch (*op) {
        case '+':
            kind = f ? SQLOP_ADD_F : SQLOP_ADD_I;
            break;
        case '-':
            kind = f ? SQLOP_SUB_F : SQLOP_SUB_I;
            break;
        case '*':
            kind = f ? SQLOP_MUL_F : SQLOP_MUL_I;
            break;
        case '/':
            kind = f ? SQLOP_DIV_F : SQLOP_DIV_I;
            break;
        case '%':
            kind = f ? SQLOP_MOD_F : SQLOP_MOD_I;
            break;
        default:
            return sql_error_node(c, node, SPATE_ENOTSUP, "not supported: operator '%s'", op);
        }
        memset(out, 0, sizeof *out);
        out->type = a->type;
        out->type.nullable = true;
        out->reg = new_reg(c, &out->type);
        emit(c, kind, out->reg, a->reg, b->reg, -1);
        if (out->type.id == SQL_INT && kind != SQLOP_DIV_I && kind != SQLOP_MOD_I)
            emit(c, SQLOP_INT32, out->reg, out->reg, -1, -1);
    }
    return 0;
}

/* An operand that must be of type id (BIGINT: any integer): NULL and, for
 * BOOLEAN, a string literal are converted; anything else is an error that
 * names what needs it and the type it got. */
static int
need_type(struct sql_compiler *c, json_t *node, struct sql_operand *a, enum sql_type_id id,
          const char *what)
{
    static const char *const wanted[SQL_TYPE_COUNT] = {
        [SQL_BOOLEAN] = "BOOLEAN", [SQL_VARCHAR] = "VARCHAR", [SQL_BIGINT] = "an integer"
    };
    struct sql_type t = { id, 0, 0, true };
    char b1[32];

    if (a->type.id == SQL_NULL || (id == SQL_BOOLEAN && a->string_literal))
        return sql_compile_cast(c, a, &t, a->location);
    if (a->type.id != id && !(id == SQL_BIGINT && a->type.id == SQL_INT))
        return sql_error_node(c, node, SPATE_EINVAL, "%s needs %s, not %s", what, wanted[id],
                              tname(&a->type, b1));
    return 0;
}

#define need_bool(c, node, a, what)   need_type(c, node, a, SQL_BOOLEAN, what)
#define need_string(c, node, a, what) need_type(c, node, a, SQL_VARCHAR, what)
#define need_int(c, node, a, what)    need_type(c, node, a, SQL_BIGINT, what)

static int compile_bool_list(struct sql_compiler *c, json_t *node, int op, json_t *args,
                             struct sql_operand *out);

/* NOT out, for the NOT forms of IN, BETWEEN and LIKE. */
static int
negate_if(struct sql_compiler *c, struct sql_operand *out, bool negated)
{
    if (negated) {
        int n = new_reg(c, &out->type);

        emit(c, SQLOP_NOT, n, out->reg, -1, -1);
        out->reg = n;
    }
    return 0;
}

static int
compile_in(struct sql_compiler *c, json_t *node, json_t *e, bool negated, struct sql_operand *out)
{
    json_t *list = json_object_get(json_object_get(e, "rexpr"), "List");
    json_t *items = json_object_get(list, "items");
    struct sql_operand a, b, cmp, acc = { 0 };
    size_t i;

    if (!json_is_array(items) || json_array_size(items) == 0)
        return sql_error_node(c, node, SPATE_ENOTSUP, "not supported: IN with a subquery");
    for (i = 0; i < json_array_size(items); i++) {
        if (sql_compile(c, json_object_get(e, "lexpr"), &a) != 0 ||
            sql_compile(c, json_array_get(items, i), &b) != 0 ||
            compile_compare(c, node, "=", &a, &b, &cmp) != 0)
            return SPATE_EINVAL;
        if (i == 0) {
            acc = cmp;
        } else {
            int r = new_reg(c, &cmp.type);

            emit(c, SQLOP_OR, r, acc.reg, cmp.reg, -1);
            acc.reg = r;
            acc.type.nullable = acc.type.nullable || cmp.type.nullable;
        }
    }
    *out = acc;
    return negate_if(c, out, negated);
}

static int
compile_between(struct sql_compiler *c, json_t *node, json_t *e, bool negated,
                struct sql_operand *out)
{
    json_t *items = json_object_get(json_object_get(json_object_get(e, "rexpr"), "List"), "items");
    struct sql_operand a, lo, hi, c1, c2;
    int r;

    if (json_array_size(items) != 2)
        return sql_error_node(c, node, SPATE_EINVAL, "BETWEEN needs two bounds");
    if (sql_compile(c, json_object_get(e, "lexpr"), &a) != 0 ||
        sql_compile(c, json_array_get(items, 0), &lo) != 0 ||
        compile_compare(c, node, ">=", &a, &lo, &c1) != 0 ||
        sql_compile(c, json_object_get(e, "lexpr"), &a) != 0 ||
        sql_compile(c, json_array_get(items, 1), &hi) != 0 ||
        compile_compare(c, node, "<=", &a, &hi, &c2) != 0)
        return SPATE_EINVAL;
    r = result(c, out, SQL_BOOLEAN, true);
    emit(c, SQLOP_AND, r, c1.reg, c2.reg, -1);
    return negate_if(c, out, negated);
}

static int
compile_like(struct sql_compiler *c, json_t *node, json_t *e, bool negated, struct sql_operand *out)
{
    json_t *rex = json_object_get(e, "rexpr");
    json_t *k = json_object_get(rex, "A_Const");
    const char *pat = json_string_value(json_object_get(json_object_get(k, "sval"), "sval"));
    struct sql_operand a;
    struct sql_insn *in;
    int r;

    if (pat == NULL)
        return sql_error_node(c, node, SPATE_ENOTSUP,
                              "not supported: LIKE with a pattern that is not a string constant");
    if (sql_compile(c, json_object_get(e, "lexpr"), &a) != 0 ||
        need_string(c, node, &a, "LIKE") != 0)
        return SPATE_EINVAL;
    r = result(c, out, SQL_BOOLEAN, a.type.nullable);
    in = emit(c, SQLOP_LIKE, r, a.reg, -1, -1);
    in->sval = xstrdup(pat);
    in->slen = strlen(pat);
    return negate_if(c, out, negated);
}

static int
compile_aexpr(struct sql_compiler *c, json_t *node, json_t *e, struct sql_operand *out)
{
    const char *kind = json_string_value(json_object_get(e, "kind"));
    const char *op = sval(json_array_get(json_object_get(e, "name"), 0));
    json_t *l = json_object_get(e, "lexpr"), *r = json_object_get(e, "rexpr");
    struct sql_operand a, b;

    if (kind == NULL || op == NULL)
        return sql_error_node(c, node, SPATE_EINVAL, "an operator without a name");
    if (strcmp(kind, "AEXPR_IN") == 0)
        return compile_in(c, node, e, strcmp(op, "<>") == 0, out);
    if (strcmp(kind, "AEXPR_BETWEEN") == 0 || strcmp(kind, "AEXPR_NOT_BETWEEN") == 0)
        return compile_between(c, node, e, strcmp(kind, "AEXPR_NOT_BETWEEN") == 0, out);
    if (strcmp(kind, "AEXPR_LIKE") == 0)
        return compile_like(c, node, e, strcmp(op, "!~~") == 0, out);
    if (strcmp(kind, "AEXPR_NULLIF") == 0) {
        /* NULLIF(a, b): CASE WHEN a = b THEN NULL ELSE a END */
        struct sql_operand eq, a2;
        int dst, at;

        if (sql_compile(c, l, &a) != 0 || sql_compile(c, r, &b) != 0 ||
            compile_compare(c, node, "=", &a, &b, &eq) != 0 || sql_compile(c, l, &a2) != 0)
            return SPATE_EINVAL;
        if (a2.type.id == SQL_NULL || a2.string_literal) {
            struct sql_type t = { SQL_VARCHAR, 0, 0, true };

            sql_compile_cast(c, &a2, &t, -1);
        }
        dst = new_reg(c, &a2.type);
        emit(c, SQLOP_COPY, dst, a2.reg, -1, -1);
        at = c->p->ncode;
        emit(c, SQLOP_JMP_UNLESS_TRUE, -1, eq.reg, -1, -1);
        emit(c, SQLOP_COPY, dst, const_null(c, &a2.type), -1, -1);
        c->p->code[at].imm = c->p->ncode; /* emit may have moved the code */
        *out = a2;
        out->reg = dst;
        out->type.nullable = true;
        out->string_literal = false;
        return 0;
    }
    if (strcmp(kind, "AEXPR_OP") != 0)
        return sql_error_node(c, node, SPATE_ENOTSUP, "not supported: %s", kind + 6);
    if (l == NULL) {
        /* Unary: -x, +x */
        if (sql_compile(c, r, &a) != 0)
            return SPATE_EINVAL;
        if (strcmp(op, "+") == 0 && numeric_rank(a.type.id)) {
            *out = a;
            return 0;
        }
        if (strcmp(op, "-") == 0 && (numeric_rank(a.type.id) || a.type.id == SQL_INTERVAL)) {
            int dst = new_reg(c, &a.type);

            emit(c, a.type.id == SQL_DOUBLE ? SQLOP_NEG_F : SQLOP_NEG_I, dst, a.reg, -1, -1);
            *out = a;
            out->reg = dst;
            return 0;
        }
        {
            char b1[32];

            return sql_error_node(c, node, SPATE_EINVAL, "cannot apply unary '%s' to %s", op,
                                  tname(&a.type, b1));
        }
    }
    if (sql_compile(c, l, &a) != 0 || sql_compile(c, r, &b) != 0)
        return SPATE_EINVAL;
    if (!strcmp(op, "=") || !strcmp(op, "<>") || !strcmp(op, "!=") || !strcmp(op, "<") ||
        !strcmp(op, "<=") || !strcmp(op, ">") || !strcmp(op, ">="))
        return compile_compare(c, node, op, &a, &b, out);
    if (!strcmp(op, "+") || !strcmp(op, "-") || !strcmp(op, "*") || !strcmp(op, "/") ||
        !strcmp(op, "%"))
        return compile_arith(c, node, op, &a, &b, out);
    if (!strcmp(op, "||")) {
        struct sql_type t = { SQL_VARCHAR, 0, 0, true };
        int dst;

        if (sql_compile_cast(c, &a, &t, -1) || sql_compile_cast(c, &b, &t, -1))
            return SPATE_EINVAL;
        dst = result(c, out, SQL_VARCHAR, a.type.nullable || b.type.nullable);
        emit(c, SQLOP_CONCAT, dst, a.reg, b.reg, -1);
        return 0;
    }
    return sql_error_node(c, node, SPATE_ENOTSUP, "not supported: operator '%s'", op);
}

static int
compile_bool_list(struct sql_compiler *c, json_t *node, int op, json_t *args,
                  struct sql_operand *out)
{
    struct sql_operand acc = { 0 }, x;

    for (size_t i = 0; i < json_array_size(args); i++) {
        if (sql_compile(c, json_array_get(args, i), &x) != 0 ||
            need_bool(c, node, &x, op == SQLOP_AND ? "AND" : "OR") != 0)
            return SPATE_EINVAL;
        if (i == 0) {
            acc = x;
        } else {
            struct sql_type t = { SQL_BOOLEAN, 0, 0, acc.type.nullable || x.type.nullable };
            int r = new_reg(c, &t);

            emit(c, op, r, acc.reg, x.reg, -1);
            acc.reg = r;
            acc.type = t;
            acc.string_literal = false;
        }
    }
    *out = acc;
    return 0;
}

/* The common result type of CASE or COALESCE branches. */
static int
common_type(struct sql_compiler *c, json_t *node, json_t **nodes, int n, struct sql_type *t,
            const char *what)
{
    bool any = false;
    char b1[32], b2[32];

    memset(t, 0, sizeof *t);
    for (int i = 0; i < n; i++) {
        struct sql_operand o;

        if (nodes[i] == NULL)
            continue;
        if (type_of(c, nodes[i], &o) != 0)
            return SPATE_EINVAL;
        if (o.type.id == SQL_NULL)
            continue;
        if (!any) {
            *t = o.type;
            any = true;
        } else if (numeric_rank(t->id) && numeric_rank(o.type.id)) {
            *t = numeric_common(t, &o.type);
        } else if (t->id != o.type.id) {
            return sql_error_node(c, nodes[i], SPATE_EINVAL, "%s branches of %s and %s", what,
                                  tname(t, b1), tname(&o.type, b2));
        }
    }
    if (!any)
        *t = (struct sql_type){ SQL_VARCHAR, 0, 0, true };
    t->nullable = true;
    UNUSED(node);
    return 0;
}

/* Compiles node as a value of type t into register dst. */
static int
copy_as(struct sql_compiler *c, json_t *node, const struct sql_type *t, int dst)
{
    struct sql_operand v;
    int rc;

    if ((rc = sql_compile(c, node, &v)) != 0 || (rc = sql_compile_cast(c, &v, t, v.location)) != 0)
        return rc;
    emit(c, SQLOP_COPY, dst, v.reg, -1, -1);
    return 0;
}

/* The n jumps at ends land here, where out is register dst of type t. */
static void
land(struct sql_compiler *c, const int *ends, int n, int dst, const struct sql_type *t,
     struct sql_operand *out)
{
    for (int i = 0; i < n; i++)
        c->p->code[ends[i]].imm = c->p->ncode;
    memset(out, 0, sizeof *out);
    out->reg = dst;
    out->type = *t;
}

static int
compile_case(struct sql_compiler *c, json_t *node, json_t *e, struct sql_operand *out)
{
    json_t *args = json_object_get(e, "args"), *arg = json_object_get(e, "arg");
    json_t *def = json_object_get(e, "defresult");
    int n = (int)json_array_size(args), dst;
    json_t **results = xcalloc((size_t)n + 1, sizeof *results);
    struct sql_type t;
    int *ends = xcalloc((size_t)n + 1, sizeof *ends);
    int rc = 0;

    for (int i = 0; i < n; i++)
        results[i] =
            json_object_get(json_object_get(json_array_get(args, i), "CaseWhen"), "result");
    results[n] = def;
    if ((rc = common_type(c, node, results, n + 1, &t, "CASE")) != 0)
        goto out;
    dst = new_reg(c, &t);
    for (int i = 0; i < n; i++) {
        json_t *w = json_object_get(json_array_get(args, i), "CaseWhen");
        struct sql_operand cond, val, x;
        struct sql_insn *skip;

        if (arg != NULL) {
            if ((rc = sql_compile(c, arg, &x)) ||
                (rc = sql_compile(c, json_object_get(w, "expr"), &val)) ||
                (rc = compile_compare(c, node, "=", &x, &val, &cond)))
                goto out;
        } else if ((rc = sql_compile(c, json_object_get(w, "expr"), &cond)) ||
                   (rc = need_bool(c, node, &cond, "CASE WHEN"))) {
            goto out;
        }
        skip = emit(c, SQLOP_JMP_UNLESS_TRUE, -1, cond.reg, -1, -1);
        {
            int at = (int)(skip - c->p->code);

            if ((rc = copy_as(c, results[i], &t, dst)) != 0)
                goto out;
            ends[i] = c->p->ncode;
            emit(c, SQLOP_JMP, -1, -1, -1, -1);
            c->p->code[at].imm = c->p->ncode;
        }
    }
    if (def != NULL && (rc = copy_as(c, def, &t, dst)) != 0)
        goto out;
    if (def == NULL)
        emit(c, SQLOP_COPY, dst, const_null(c, &t), -1, -1);
    land(c, ends, n, dst, &t, out);
out:
    free(results);
    free(ends);
    return rc;
}

static int
compile_coalesce(struct sql_compiler *c, json_t *node, json_t *e, struct sql_operand *out)
{
    json_t *args = json_object_get(e, "args");
    int n = (int)json_array_size(args), dst, rc = 0;
    json_t **nodes = xcalloc((size_t)n + 1, sizeof *nodes);
    int *ends = xcalloc((size_t)n + 1, sizeof *ends);
    struct sql_type t;

    for (int i = 0; i < n; i++)
        nodes[i] = json_array_get(args, i);
    if ((rc = common_type(c, node, nodes, n, &t, "COALESCE")) != 0)
        goto out;
    dst = new_reg(c, &t);
    for (int i = 0; i < n; i++) {
        if ((rc = copy_as(c, nodes[i], &t, dst)) != 0)
            goto out;
        ends[i] = c->p->ncode;
        emit(c, SQLOP_JMP_IF_NOT_NULL, -1, dst, -1, -1);
    }
    land(c, ends, n, dst, &t, out);
out:
    free(nodes);
    free(ends);
    return rc;
}

static int
field_of(const char *name)
{
    static const char *const names[] = {
        [SQL_F_YEAR] = "year",
        [SQL_F_MONTH] = "month",
        [SQL_F_DAY] = "day",
        [SQL_F_HOUR] = "hour",
        [SQL_F_MINUTE] = "minute",
        [SQL_F_SECOND] = "second",
        [SQL_F_MILLISECOND] = "milliseconds",
        [SQL_F_DOW] = "dow",
        [SQL_F_DOY] = "doy",
        [SQL_F_EPOCH] = "epoch",
    };

    for (size_t i = 0; i < ARRAY_SIZE(names); i++)
        if (strcasecmp(name, names[i]) == 0)
            return (int)i;
    return -1;
}

static const char *const function_names[] = {
    "upper",     "lower",       "length",     "char_length", "character_length",
    "substring", "substr",      "btrim",      "ltrim",       "rtrim",
    "trim",      "concat",      "abs",        "round",       "floor",
    "ceil",      "ceiling",     "mod",        "power",       "sqrt",
    "replace",   "position",    "strpos",     "extract",     "date_part",
    "year",      "month",       "dayofmonth", "hour",        "minute",
    "second",    "date_format", "proctime",
};

static int
compile_extract(struct sql_compiler *c, json_t *node, int field, struct sql_operand *a,
                struct sql_operand *out)
{
    char b1[32];
    int dst;

    if (a->type.id == SQL_NULL || a->string_literal) {
        struct sql_type t = { SQL_TIMESTAMP, 3, 0, true };

        if (sql_compile_cast(c, a, &t, a->location) != 0)
            return SPATE_EINVAL;
    }
    if (a->type.id != SQL_TIMESTAMP && a->type.id != SQL_DATE)
        return sql_error_node(c, node, SPATE_EINVAL, "EXTRACT needs a DATE or TIMESTAMP, not %s",
                              tname(&a->type, b1));
    dst = result(c, out, SQL_BIGINT, a->type.nullable);
    emit(c, a->type.id == SQL_DATE ? SQLOP_EXTRACT_D : SQLOP_EXTRACT, dst, a->reg, -1, -1)->imm =
        field;
    return 0;
}

/* A call of a function in C (CREATE FUNCTION, sql_udf.h): the arguments
 * cast to the declared types and copied into registers in a row, the
 * call's instruction reads them from there. */
static int
compile_udf(struct sql_compiler *c, json_t *node, const struct sql_function *f, json_t *args,
            struct sql_operand *out)
{
    struct sql_operand a[SQL_UDF_MAX_ARGS];
    size_t n = json_array_size(args);
    struct sql_insn *in;
    int first, dst;

    if ((int)n != f->nargs)
        return sql_error_node(c, node, SPATE_EINVAL, "function %s() takes %d arguments, not %zu",
                              f->name, f->nargs, n);
    for (size_t i = 0; i < n; i++)
        if (sql_compile(c, json_array_get(args, i), &a[i]) != 0 ||
            sql_compile_cast(c, &a[i], &f->args[i], a[i].location) != 0)
            return SPATE_EINVAL;
    first = c->p->nregs;
    for (size_t i = 0; i < n; i++)
        emit(c, SQLOP_COPY, new_reg(c, &f->args[i]), a[i].reg, -1, -1);
    dst = result(c, out, f->result.id, true);
    out->type = f->result;
    c->p->regs[dst].precision = f->result.id == SQL_VARCHAR ? 0 : f->result.precision;
    c->p->regs[dst].scale = f->result.scale;
    in = emit(c, SQLOP_UDF, dst, n ? first : dst, -1, -1);
    in->imm = (int64_t)n;
    in->slen = strlen(f->symbol) + 1 + strlen(f->library);
    in->sval = xmalloc(in->slen + 1);
    snprintf(in->sval, in->slen + 1, "%s@%s", f->symbol, f->library);
    return 0;
}

static int
compile_func(struct sql_compiler *c, json_t *node, json_t *f, struct sql_operand *out)
{
    json_t *names = json_object_get(f, "funcname"), *args = json_object_get(f, "args");
    const char *name = sval(json_array_get(names, json_array_size(names) - 1));
    size_t n = json_array_size(args);
    struct sql_operand a[3];
    char lname[64];
    bool nullable = false;
    int dst;

    if (name == NULL)
        return sql_error_node(c, node, SPATE_EINVAL, "a function without a name");
    snprintf(lname, sizeof lname, "%s", name);
    for (char *q = lname; *q; q++)
        *q = (char)tolower((unsigned char)*q);
    if (json_object_get(f, "agg_star") || json_object_get(f, "over") ||
        json_object_get(f, "agg_filter") || json_is_true(json_object_get(f, "agg_distinct")) ||
        !strcmp(lname, "count") || !strcmp(lname, "sum") || !strcmp(lname, "min") ||
        !strcmp(lname, "max") || !strcmp(lname, "avg"))
        return sql_error_node(c, node, SPATE_ENOTSUP,
                              "not supported: aggregate function %s() here (aggregates go in "
                              "the SELECT list and HAVING)",
                              lname);
    if (c->catalog != NULL && sql_catalog_function(c->catalog, lname) != NULL)
        return compile_udf(c, node, sql_catalog_function(c->catalog, lname), args, out);
    if (!strcmp(lname, "proctime")) {
        if (n != 0)
            return sql_error_node(c, node, SPATE_EINVAL, "PROCTIME() takes no arguments");
        dst = result(c, out, SQL_TIMESTAMP, false);
        out->type.precision = c->p->regs[dst].precision = 3; /* TIMESTAMP(3) */
        emit(c, SQLOP_PROCTIME, dst, -1, -1, -1);
        return 0;
    }
    if ((!strcmp(lname, "extract") || !strcmp(lname, "date_part")) && n == 2) {
        json_t *k = json_object_get(json_array_get(args, 0), "A_Const");
        const char *fld = json_string_value(json_object_get(json_object_get(k, "sval"), "sval"));
        int field = fld ? field_of(fld) : -1;

        if (field < 0)
            return sql_error_node(c, node, SPATE_ENOTSUP, "not supported: EXTRACT(%s ...)",
                                  fld ? fld : "?");
        if (sql_compile(c, json_array_get(args, 1), &a[0]) != 0)
            return SPATE_EINVAL;
        return compile_extract(c, node, field, &a[0], out);
    }
    if (n > 3)
        return sql_error_node(c, node, SPATE_ENOTSUP, "not supported: %s() with %zu arguments",
                              lname, n);
    for (size_t i = 0; i < n; i++) {
        if (sql_compile(c, json_array_get(args, i), &a[i]) != 0)
            return SPATE_EINVAL;
        nullable = nullable || a[i].type.nullable || a[i].type.id == SQL_NULL;
    }
#define ARGS(lo, hi)                                                                           \
    if (n < (lo) || n > (hi))                                                                  \
        return sql_error_node(c, node, SPATE_EINVAL, "%s() takes %d to %d arguments, not %zu", \
                              lname, lo, hi, n);
    if (!strcmp(lname, "upper") || !strcmp(lname, "lower")) {
        ARGS(1, 1)
        if (need_string(c, node, &a[0], lname))
            return SPATE_EINVAL;
        dst = result(c, out, SQL_VARCHAR, nullable);
        emit(c, lname[0] == 'u' ? SQLOP_UPPER : SQLOP_LOWER, dst, a[0].reg, -1, -1);
        return 0;
    }
    if (!strcmp(lname, "length") || !strcmp(lname, "char_length") ||
        !strcmp(lname, "character_length")) {
        ARGS(1, 1)
        if (need_string(c, node, &a[0], lname))
            return SPATE_EINVAL;
        dst = result(c, out, SQL_INT, nullable);
        emit(c, SQLOP_LENGTH, dst, a[0].reg, -1, -1);
        return 0;
    }
    if (!strcmp(lname, "substring") || !strcmp(lname, "substr")) {
        ARGS(2, 3)
        if (need_string(c, node, &a[0], lname) || need_int(c, node, &a[1], lname) ||
            (n == 3 && need_int(c, node, &a[2], lname)))
            return SPATE_EINVAL;
        dst = result(c, out, SQL_VARCHAR, nullable);
        /* imm 1: to the end (c then only fills its slot with an int). */
        emit(c, SQLOP_SUBSTR, dst, a[0].reg, a[1].reg, n == 3 ? a[2].reg : a[1].reg)->imm = n == 2;
        return 0;
    }
    if (!strcmp(lname, "btrim") || !strcmp(lname, "ltrim") || !strcmp(lname, "rtrim") ||
        !strcmp(lname, "trim")) {
        ARGS(1, 1)
        if (need_string(c, node, &a[0], lname))
            return SPATE_EINVAL;
        dst = result(c, out, SQL_VARCHAR, nullable);
        emit(c, SQLOP_TRIM, dst, a[0].reg, -1, -1)->imm = lname[0] == 'l'   ? 1
                                                          : lname[0] == 'r' ? 2
                                                                            : 3;
        return 0;
    }
    if (!strcmp(lname, "concat")) {
        struct sql_type t = { SQL_VARCHAR, 0, 0, true };
        int acc = -1;

        if (n == 0)
            return sql_error_node(c, node, SPATE_EINVAL, "concat() needs arguments");
        /* PostgreSQL's concat skips NULLs. */
        for (size_t i = 0; i < n; i++) {
            int empty = const_str(c, "", 0), v = new_reg(c, &t);
            struct insn_j;

            if (sql_compile_cast(c, &a[i], &t, -1))
                return SPATE_EINVAL;
            emit(c, SQLOP_COPY, v, a[i].reg, -1, -1);
            emit(c, SQLOP_JMP_IF_NOT_NULL, -1, v, -1, -1)->imm = c->p->ncode + 2;
            emit(c, SQLOP_COPY, v, empty, -1, -1);
            if (acc < 0) {
                acc = v;
            } else {
                int r = new_reg(c, &t);

                emit(c, SQLOP_CONCAT, r, acc, v, -1);
                acc = r;
            }
        }
        memset(out, 0, sizeof *out);
        out->reg = acc;
        out->type = t;
        out->type.nullable = false;
        return 0;
    }
    if (!strcmp(lname, "replace")) {
        ARGS(3, 3)
        for (int i = 0; i < 3; i++)
            if (need_string(c, node, &a[i], lname))
                return SPATE_EINVAL;
        dst = result(c, out, SQL_VARCHAR, nullable);
        emit(c, SQLOP_REPLACE, dst, a[0].reg, a[1].reg, a[2].reg);
        return 0;
    }
    if (!strcmp(lname, "split_index")) {
        ARGS(3, 3)
        if (need_string(c, node, &a[0], lname) || need_string(c, node, &a[1], lname) ||
            need_int(c, node, &a[2], lname))
            return SPATE_EINVAL;
        dst = result(c, out, SQL_VARCHAR, true); /* NULL past the last piece */
        emit(c, SQLOP_SPLIT_INDEX, dst, a[0].reg, a[1].reg, a[2].reg);
        return 0;
    }
    if (!strcmp(lname, "regexp_extract")) {
        json_t *k = json_object_get(json_array_get(args, 1), "A_Const");
        const char *pat = json_string_value(json_object_get(json_object_get(k, "sval"), "sval"));
        struct sql_insn *in;
        regex_t re;
        int rc;

        ARGS(2, 3)
        if (pat == NULL)
            return sql_error_node(c, node, SPATE_ENOTSUP,
                                  "not supported: regexp_extract() with a pattern that is not a "
                                  "string constant");
        if ((rc = regcomp(&re, pat, REG_EXTENDED)) != 0) {
            char why[128];

            regerror(rc, &re, why, sizeof why);
            return sql_error_node(c, node, SPATE_EINVAL, "regexp_extract(): pattern '%s': %s", pat,
                                  why);
        }
        regfree(&re);
        if (need_string(c, node, &a[0], lname) || (n == 3 && need_int(c, node, &a[2], lname)))
            return SPATE_EINVAL;
        dst = result(c, out, SQL_VARCHAR, true); /* NULL without a match */
        in = emit(c, SQLOP_REGEXP_EXTRACT, dst, a[0].reg,
                  n == 3 ? a[2].reg : const_int(c, SQL_INT, 0, 0), -1);
        in->sval = xstrdup(pat);
        in->slen = strlen(pat);
        return 0;
    }
    if (!strcmp(lname, "date_format")) {
        json_t *k = json_object_get(json_array_get(args, 1), "A_Const");
        const char *pat = json_string_value(json_object_get(json_object_get(k, "sval"), "sval"));
        const char *bad = pat ? sql_date_format_check(pat) : NULL;
        struct sql_type ts = { SQL_TIMESTAMP, 3, 0, true };
        struct sql_insn *in;

        ARGS(2, 2)
        if (pat == NULL)
            return sql_error_node(c, node, SPATE_ENOTSUP,
                                  "not supported: DATE_FORMAT() with a format that is not a "
                                  "string constant");
        if (bad != NULL)
            return sql_error_node(c, node, SPATE_ENOTSUP,
                                  "not supported: DATE_FORMAT()'s pattern letter %s (spate's: y, "
                                  "M, d, H, m, s, S)",
                                  bad);
        if (a[0].type.id != SQL_TIMESTAMP && a[0].type.id != SQL_DATE && a[0].type.id != SQL_NULL &&
            !a[0].string_literal && a[0].type.id != SQL_VARCHAR) {
            char b1[32];

            return sql_error_node(c, node, SPATE_EINVAL, "DATE_FORMAT() needs a TIMESTAMP, not %s",
                                  tname(&a[0].type, b1));
        }
        if (a[0].type.id != SQL_TIMESTAMP && sql_compile_cast(c, &a[0], &ts, a[0].location) != 0)
            return SPATE_EINVAL;
        dst = result(c, out, SQL_VARCHAR, a[0].type.nullable);
        in = emit(c, SQLOP_DATE_FORMAT, dst, a[0].reg, -1, -1);
        in->sval = xstrdup(pat);
        in->slen = strlen(pat);
        return 0;
    }
    if (!strcmp(lname, "position") || !strcmp(lname, "strpos")) {
        ARGS(2, 2)
        if (need_string(c, node, &a[0], lname) || need_string(c, node, &a[1], lname))
            return SPATE_EINVAL;
        dst = result(c, out, SQL_INT, nullable);
        /* position(b IN a) reaches us as position(a, b) */
        emit(c, SQLOP_POSITION, dst, a[0].reg, a[1].reg, -1);
        return 0;
    }
    if (!strcmp(lname, "abs")) {
        ARGS(1, 1)
        if (!numeric_rank(a[0].type.id))
            return need_int(c, node, &a[0], lname);
        dst = new_reg(c, &a[0].type);
        emit(c, a[0].type.id == SQL_DOUBLE ? SQLOP_ABS_F : SQLOP_ABS_I, dst, a[0].reg, -1, -1);
        *out = a[0];
        out->reg = dst;
        return 0;
    }
    if (!strcmp(lname, "round")) {
        ARGS(1, 2)
        if (n == 1)
            a[1].reg = const_int(c, SQL_BIGINT, 0, 0);
        else if (need_int(c, node, &a[1], lname))
            return SPATE_EINVAL;
        if (a[0].type.id == SQL_DECIMAL) {
            dst = new_reg(c, &a[0].type);
            emit(c, SQLOP_ROUND_I, dst, a[0].reg, a[1].reg, -1)->imm = a[0].type.scale;
            *out = a[0];
            out->reg = dst;
            return 0;
        }
        if (a[0].type.id == SQL_INT || a[0].type.id == SQL_BIGINT) {
            *out = a[0];
            return 0;
        }
    }
    if (!strcmp(lname, "round") || !strcmp(lname, "floor") || !strcmp(lname, "ceil") ||
        !strcmp(lname, "ceiling") || !strcmp(lname, "sqrt") || !strcmp(lname, "power") ||
        !strcmp(lname, "mod")) {
        struct sql_type t = { SQL_DOUBLE, 0, 0, true };
        int op;

        if (!strcmp(lname, "mod")) {
            ARGS(2, 2)
            return compile_arith(c, node, "%", &a[0], &a[1], out);
        }
        if ((lname[0] == 'f' || lname[0] == 'c') && n == 1 &&
            (a[0].type.id == SQL_INT || a[0].type.id == SQL_BIGINT)) {
            *out = a[0];
            return 0;
        }
        ARGS(lname[0] == 'p' ? 2 : 1, lname[0] == 'r' ? 2 : lname[0] == 'p' ? 2 : 1)
        if (!numeric_rank(a[0].type.id) && a[0].type.id != SQL_NULL) {
            char b1[32];

            return sql_error_node(c, node, SPATE_EINVAL, "%s() needs a number, not %s", lname,
                                  tname(&a[0].type, b1));
        }
        if (sql_compile_cast(c, &a[0], &t, -1) ||
            (lname[0] == 'p' && sql_compile_cast(c, &a[1], &t, -1)))
            return SPATE_EINVAL;
        op = lname[0] == 'r'   ? SQLOP_ROUND_F
             : lname[0] == 'f' ? SQLOP_FLOOR_F
             : lname[0] == 'c' ? SQLOP_CEIL_F
             : lname[1] == 'q' ? SQLOP_SQRT_F
                               : SQLOP_POW_F;
        dst = result(c, out, SQL_DOUBLE, true);
        emit(c, op, dst, a[0].reg, op == SQLOP_ROUND_F || op == SQLOP_POW_F ? a[1].reg : -1, -1);
        return 0;
    }
    if (!strcmp(lname, "year") || !strcmp(lname, "month") || !strcmp(lname, "dayofmonth") ||
        !strcmp(lname, "hour") || !strcmp(lname, "minute") || !strcmp(lname, "second")) {
        ARGS(1, 1)
        return compile_extract(c, node, field_of(!strcmp(lname, "dayofmonth") ? "day" : lname),
                               &a[0], out);
    }
    {
        const char *near = sql_nearest(lname, function_names, (int)ARRAY_SIZE(function_names));

        if (near != NULL)
            return sql_error_node(c, node, SPATE_EINVAL,
                                  "function %s() does not exist; did you mean %s()?", lname, near);
        return sql_error_node(c, node, SPATE_ENOTSUP, "not supported: function %s()", lname);
    }
}

static int
compile_typecast(struct sql_compiler *c, json_t *node, json_t *tc, struct sql_operand *out)
{
    struct sql_type t;
    json_t *arg = json_object_get(tc, "arg");

    if (sql_type_from_pg(c, json_object_get(tc, "typeName"), &t) != 0 ||
        sql_compile(c, arg, out) != 0)
        return SPATE_EINVAL;
    if (t.id == SQL_INTERVAL && t.precision > 0 && out->string_literal) {
        /* INTERVAL '10' SECOND: a bare number in the given unit. */
        char *end;
        long long v = strtoll(out->literal, &end, 10);

        if (*end == '\0' && end != out->literal) {
            out->reg = const_int(c, SQL_INTERVAL, 0, v * t.precision * 1000);
            out->type = (struct sql_type){ SQL_INTERVAL, 0, 0, false };
            out->string_literal = false;
            return 0;
        }
    }
    if (t.id == SQL_INTERVAL)
        t.precision = 0;
    return sql_compile_cast(c, out, &t, sql_location(node));
}

int
sql_compile(struct sql_compiler *c, json_t *node, struct sql_operand *out)
{
    const char *kind;
    json_t *e;

    if (!json_is_object(node))
        return sql_error_at(c->err, SPATE_EINVAL, c->script, c->offset, "an expression is missing");
    kind = node_kind(node);
    e = json_object_get(node, kind);
    if (!strcmp(kind, "ColumnRef"))
        return compile_column(c, node, e, out);
    if (!strcmp(kind, "A_Const"))
        return compile_const(c, e, out);
    if (!strcmp(kind, "A_Expr"))
        return compile_aexpr(c, node, e, out);
    if (!strcmp(kind, "BoolExpr")) {
        const char *op = json_string_value(json_object_get(e, "boolop"));
        json_t *args = json_object_get(e, "args");

        if (op && !strcmp(op, "NOT_EXPR")) {
            struct sql_operand a;
            int dst;

            if (sql_compile(c, json_array_get(args, 0), &a) != 0 ||
                need_bool(c, node, &a, "NOT") != 0)
                return SPATE_EINVAL;
            dst = result(c, out, SQL_BOOLEAN, a.type.nullable);
            emit(c, SQLOP_NOT, dst, a.reg, -1, -1);
            return 0;
        }
        return compile_bool_list(c, node, op && !strcmp(op, "AND_EXPR") ? SQLOP_AND : SQLOP_OR,
                                 args, out);
    }
    if (!strcmp(kind, "NullTest")) {
        struct sql_operand a;
        const char *t = json_string_value(json_object_get(e, "nulltesttype"));
        int dst;

        if (sql_compile(c, json_object_get(e, "arg"), &a) != 0)
            return SPATE_EINVAL;
        if (a.type.id == SQL_NULL) {
            struct sql_type vt = { SQL_VARCHAR, 0, 0, true };

            sql_compile_cast(c, &a, &vt, -1);
        }
        dst = result(c, out, SQL_BOOLEAN, false);
        emit(c, t && !strcmp(t, "IS_NOT_NULL") ? SQLOP_IS_NOT_NULL : SQLOP_IS_NULL, dst, a.reg, -1,
             -1);
        return 0;
    }
    if (!strcmp(kind, "BooleanTest")) {
        /* IS [NOT] TRUE / FALSE / UNKNOWN: never NULL. */
        const char *t = json_string_value(json_object_get(e, "booltesttype"));
        struct sql_operand a;
        int dst, isnull, val, want;

        if (sql_compile(c, json_object_get(e, "arg"), &a) != 0 ||
            need_bool(c, node, &a, "IS TRUE") != 0 || t == NULL)
            return SPATE_EINVAL;
        dst = result(c, out, SQL_BOOLEAN, false);
        isnull = new_reg(c, &out->type);
        emit(c, SQLOP_IS_NULL, isnull, a.reg, -1, -1);
        if (strstr(t, "UNKNOWN")) {
            emit(c, strstr(t, "NOT") ? SQLOP_NOT : SQLOP_COPY, dst, isnull, -1, -1);
            return 0;
        }
        /* (a = want) IS TRUE, i.e. a is not NULL and a = want */
        want = const_int(c, SQL_BOOLEAN, 0, strstr(t, "TRUE") != NULL);
        val = new_reg(c, &out->type);
        emit(c, SQLOP_CMP_I, val, a.reg, want, -1)->imm = SQL_EQ;
        emit(c, SQLOP_JMP_IF_NOT_NULL, -1, val, -1, -1)->imm = c->p->ncode + 2;
        emit(c, SQLOP_COPY, val, const_int(c, SQL_BOOLEAN, 0, 0), -1, -1);
        emit(c, strstr(t, "NOT") ? SQLOP_NOT : SQLOP_COPY, dst, val, -1, -1);
        return 0;
    }
    if (!strcmp(kind, "CaseExpr"))
        return compile_case(c, node, e, out);
    if (!strcmp(kind, "CoalesceExpr"))
        return compile_coalesce(c, node, e, out);
    if (!strcmp(kind, "TypeCast"))
        return compile_typecast(c, node, e, out);
    if (!strcmp(kind, "FuncCall"))
        return compile_func(c, node, e, out);
    if (!strcmp(kind, "SubLink"))
        return sql_error_node(c, node, SPATE_ENOTSUP, "not supported: subqueries");
    if (!strcmp(kind, "ParamRef"))
        return sql_error_node(c, node, SPATE_ENOTSUP, "not supported: parameters ($n)");
    if (!strcmp(kind, "MinMaxExpr"))
        return sql_error_node(c, node, SPATE_ENOTSUP, "not supported: GREATEST and LEAST");
    if (!strcmp(kind, "SQLValueFunction"))
        return sql_error_node(c, node, SPATE_ENOTSUP,
                              "not supported: CURRENT_DATE, CURRENT_TIMESTAMP and their kin");
    return sql_error_node(c, node, SPATE_ENOTSUP, "not supported: %s", kind);
}
