/* OP_SQL_CALC, SQL's fused projection and filter (Flink's Calc): a record
 * read into the program's input registers (a row, a CSV or JSON line, or
 * a data generator's index), the program run (sql_program.h), the WHERE
 * register tested, and the output emitted as a row or as a line of CSV,
 * JSON or Flink's print form. Keeps no state. Task thread only. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "connectors/connectors.h"
#include "core/alloc.h"
#include "core/util.h"
#include "sql/sql_operators.h"
#include "sql/sql_program.h"
#include "sql/sql_udf.h"
#include "streaming/operator.h"
#include "streaming/operator_config.h"
#include "streaming/types.h"

struct calc_impl {
    struct sql_program *p;
    struct sql_eval ev;
    const struct spate_type *out_type; /* SQL_FORMAT_ROW */
    void *out_rec;
    uint64_t bad_records;           /* skipped by ignore-parse-errors */
    struct sql_nexmark_gen nexmark; /* SQL_FORMAT_NEXMARK */
    int *nexmark_read;              /* the input columns the program reads, -1 after the last */
    int *not_null;                  /* outputs of a NOT NULL sink column, checked per row */
    int nnot_null;
};

static void calc_close(struct stream_operator *op);

static int
calc_open(struct stream_operator *op, spate_error *err)
{
    const struct sql_config *c = op->conf;
    const struct operator_settings *s = op->config;
    struct calc_impl *impl;
    struct sql_program *p;
    int rc;

    if ((rc = sql_program_decode(c->program, c->program_len, &p, err)) != 0)
        return spate_error_wrap(err, "operator '%s'", s->name ? s->name : "Calc");
    /* The records' types must be what the program reads and writes. */
    if ((p->input_format == SQL_FORMAT_ROW
             ? s->in_type == NULL || !s->in_type->nullable || s->in_type->nfields != p->ninput + 1
         : p->input_format == SQL_FORMAT_DATAGEN || p->input_format == SQL_FORMAT_NEXMARK
             ? s->in_type != spate_type_int64()
             : s->in_type != spate_type_string()) ||
        (p->output_format == SQL_FORMAT_ROW
             ? !s->out_type->nullable || s->out_type->nfields != p->noutput + 1
             : s->out_type != spate_type_string())) {
        sql_program_free(p);
        return spate_error_set(err, SPATE_EINVAL,
                               "operator '%s': its record types do not match its SQL program",
                               s->name ? s->name : "Calc");
    }
    if (p->input_format == SQL_FORMAT_ROW)
        for (int i = 0; i < p->ninput; i++)
            if (s->in_type->fields[i + 1] != sql_type_spate(p->input[i].type.id)) {
                sql_program_free(p);
                return spate_error_set(err, SPATE_EINVAL, "operator '%s': input column %d is no %s",
                                       s->name ? s->name : "Calc", i,
                                       s->in_type->fields[i + 1]->name);
            }
    if (p->output_format == SQL_FORMAT_ROW)
        for (int i = 0; i < p->noutput; i++)
            if (s->out_type->fields[i + 1] != sql_type_spate(p->output[i].type.id)) {
                sql_program_free(p);
                return spate_error_set(
                    err, SPATE_EINVAL, "operator '%s': output column %d is no %s",
                    s->name ? s->name : "Calc", i, s->out_type->fields[i + 1]->name);
            }
    impl = xcalloc(1, sizeof *impl);
    impl->p = p;
    impl->not_null = xcalloc((size_t)p->noutput + 1, sizeof *impl->not_null);
    for (int i = 0; i < p->noutput; i++)
        if (!p->output[i].type.nullable)
            impl->not_null[impl->nnot_null++] = i;
    sql_eval_init(&impl->ev, p);
    if (p->input_format == SQL_FORMAT_NEXMARK) {
        const char *why;
        int ok = sql_nexmark_gen_init(&impl->nexmark, &p->nexmark->config, &why), n = 0;
        bool *read = xcalloc((size_t)p->ninput + 1, sizeof *read);

        SPATE_ASSERT(ok == 0); /* sql_program_decode checked the configuration */
        /* Only the columns the program reads are filled in each record. */
        sql_program_inputs_read(p, read);
        impl->nexmark_read = xcalloc((size_t)p->ninput + 1, sizeof *impl->nexmark_read);
        for (int i = 0; i < p->ninput; i++)
            if (read[i])
                impl->nexmark_read[n++] = i;
        impl->nexmark_read[n] = -1;
        free(read);
    }
    if (p->output_format == SQL_FORMAT_ROW) {
        impl->out_type = s->out_type;
        impl->out_rec = operator_out_storage(s->out_type);
    }
    op->impl = impl;
    /* Functions in C load here, where the operator runs. */
    if ((rc = sql_udf_bind(&impl->ev, err)) != 0) {
        calc_close(op);
        return spate_error_wrap(err, "operator '%s'", s->name ? s->name : "Calc");
    }
    return 0;
}

static void
calc_close(struct stream_operator *op)
{
    struct calc_impl *impl = op->impl;

    if (impl == NULL)
        return;
    sql_eval_release(&impl->ev);
    if (impl->p->input_format == SQL_FORMAT_NEXMARK)
        sql_nexmark_gen_release(&impl->nexmark);
    free(impl->nexmark_read);
    sql_program_free(impl->p);
    free(impl->not_null);
    free(impl->out_rec);
    free(impl);
    op->impl = NULL;
}

/* ---- input ---- */

static void
read_row(struct calc_impl *impl, const uint8_t *rec, const struct spate_type *t)
{
    uint64_t nulls = *(const uint64_t *)rec;
    struct sql_value *r = impl->ev.r;

    for (int i = 0; i < impl->p->ninput; i++) {
        const uint8_t *v = rec + t->offsets[i + 1];

        r[i].null = (nulls >> i) & 1;
        switch (sql_type_phys(impl->p->input[i].type.id)) {
        case SQL_PHYS_INT:
            r[i].i = *(const int64_t *)v;
            break;
        case SQL_PHYS_DOUBLE:
            r[i].f = *(const double *)v;
            break;
        case SQL_PHYS_STRING:
            r[i].s.p = ((const spate_str *)v)->data;
            r[i].s.len = ((const spate_str *)v)->len;
            break;
        }
    }
}

/* A JSON value's text into register i. */
static int
read_text(struct calc_impl *impl, int i, const char *s, size_t len, spate_error *err)
{
    if (sql_value_parse(&impl->p->input[i].type, s, len, &impl->ev.r[i], err) != 0)
        return spate_error_wrap(err, "column '%s'", impl->p->input[i].name);
    return 0;
}

/* RFC 4180 (sql_csv_read), the fields into the input registers. */
static int
read_csv(struct calc_impl *impl, const char *s, size_t len, spate_error *err)
{
    const struct sql_program *p = impl->p;

    return sql_csv_read(p->input, p->ninput, p->csv_delimiter, s, len, impl->ev.r,
                        sql_eval_alloc(&impl->ev, len + 1), err);
}

static int
read_json(struct calc_impl *impl, const char *s, size_t len, spate_error *err)
{
    const struct sql_program *p = impl->p;
    json_error_t jerr;
    json_t *o = json_loadb(s, len, JSON_DECODE_ANY, &jerr);
    int rc = 0;

    if (!json_is_object(o)) {
        json_decref(o);
        return spate_error_set(err, SPATE_EINVAL, "not a JSON object: %s",
                               o == NULL ? jerr.text : "another value");
    }
    for (int i = 0; i < p->ninput && rc == 0; i++) {
        json_t *v = json_object_get(o, p->input[i].name);
        struct sql_value *r = &impl->ev.r[i];
        char buf[64];

        r->null = false;
        if (v == NULL || json_is_null(v)) {
            r->null = true;
        } else if (json_is_string(v)) {
            size_t n = json_string_length(v);
            char *copy = sql_eval_alloc(&impl->ev, n + 1);

            memcpy(copy, json_string_value(v), n);
            rc = read_text(impl, i, copy, n, err);
        } else if (json_is_boolean(v) && p->input[i].type.id == SQL_BOOLEAN) {
            r->i = json_is_true(v);
        } else if (json_is_integer(v)) {
            snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
            rc = read_text(impl, i, buf, strlen(buf), err);
            if (rc == 0 && p->input[i].type.id == SQL_VARCHAR) {
                char *copy = sql_eval_alloc(&impl->ev, strlen(buf));

                r->s.p = memcpy(copy, buf, strlen(buf));
            }
        } else if (json_is_real(v)) {
            snprintf(buf, sizeof buf, "%.17g", json_real_value(v));
            rc = read_text(impl, i, buf, strlen(buf), err);
            if (rc == 0 && p->input[i].type.id == SQL_VARCHAR) {
                char *copy = sql_eval_alloc(&impl->ev, strlen(buf));

                r->s.p = memcpy(copy, buf, strlen(buf));
            }
        } else {
            rc = spate_error_set(err, SPATE_EINVAL, "column '%s': a JSON %s is no value of it",
                                 p->input[i].name,
                                 json_is_object(v) ? "object"
                                                   : "array or "
                                                     "boolean");
        }
    }
    json_decref(o);
    return rc;
}

static uint64_t
mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Flink datagen's fields: sequence (start + index) or random in [min,
 * max] (strings: length random letters), deterministic in the index. */
static void
read_datagen(struct calc_impl *impl, int64_t index)
{
    const struct sql_program *p = impl->p;

    for (int i = 0; i < p->ninput; i++) {
        const struct sql_datagen_field *f = &p->datagen[i];
        const struct sql_type *t = &p->input[i].type;
        struct sql_value *r = &impl->ev.r[i];
        uint64_t h = mix64(p->datagen_seed ^ mix64((uint64_t)index * 64 + (uint64_t)i));

        r->null = f->null_rate > 0 && (double)(h >> 11) / 9007199254740992.0 < f->null_rate;
        if (r->null)
            continue;
        h = mix64(h);
        if (f->sequence) {
            int64_t v = f->start + index;

            if (t->id == SQL_VARCHAR) {
                char *s = sql_eval_alloc(&impl->ev, 24);

                r->s.p = s;
                r->s.len = (size_t)snprintf(s, 24, "%" PRId64, v);
            } else if (t->id == SQL_DOUBLE) {
                r->f = (double)v;
            } else {
                r->i = v;
            }
            continue;
        }
        switch (t->id) {
        case SQL_VARCHAR: {
            int64_t n = f->length > 0 ? f->length : 100;
            char *s = sql_eval_alloc(&impl->ev, (size_t)n);

            for (int64_t k = 0; k < n; k++) {
                if (k % 8 == 0)
                    h = mix64(h);
                s[k] = (char)('a' + (h >> (8 * (k % 8))) % 26);
            }
            r->s.p = s;
            r->s.len = (size_t)n;
            break;
        }
        case SQL_DOUBLE:
            r->f =
                (double)f->min + (double)(h >> 11) / 9007199254740992.0 * (double)(f->max - f->min);
            break;
        case SQL_BOOLEAN:
            r->i = h & 1;
            break;
        default: {
            uint64_t span = (uint64_t)(f->max - f->min) + 1;

            r->i = span == 0 ? (int64_t)h : f->min + (int64_t)(h % span);
            break;
        }
        }
    }
}

/* A nexmark event's fields, when it is of the table's kind (false: the
 * record is another kind's, skipped). */
static bool
read_nexmark(struct calc_impl *impl, int64_t index)
{
    const struct sql_program *p = impl->p;
    struct sql_nexmark_event ev;

    if (sql_nexmark_kind_of(&impl->nexmark, index) != p->nexmark->kind)
        return false;
    sql_nexmark_next(&impl->nexmark, index, &ev);
    for (const int *i = impl->nexmark_read; *i >= 0; i++) {
        struct sql_value *r = &impl->ev.r[*i];
        struct sql_nexmark_str str = { NULL, 0 };

        r->null = false;
        sql_nexmark_field_get(&ev, (enum sql_nexmark_field)p->nexmark->fields[*i], &r->i, &str);
        if (str.p != NULL) {
            r->s.p = str.p;
            r->s.len = str.len;
        }
    }
    return true;
}

/* ---- output ---- */

/* Appends text to the line being built in the arena. */
struct line {
    struct sql_eval *ev;
    char *buf;
    size_t len, cap;
};

static void
line_put(struct line *l, const char *s, size_t n)
{
    if (l->len + n > l->cap) {
        size_t cap = MAX(l->cap * 2, l->len + n + 64);
        char *b = sql_eval_alloc(l->ev, cap);

        if (l->len)
            memcpy(b, l->buf, l->len);
        l->buf = b;
        l->cap = cap;
    }
    memcpy(l->buf + l->len, s, n);
    l->len += n;
}

static void
line_value(struct line *l, const struct sql_type *t, const struct sql_value *v)
{
    char buf[64];
    int n;

    if (sql_type_phys(t->id) == SQL_PHYS_STRING) {
        line_put(l, v->s.p, v->s.len);
        return;
    }
    n = sql_value_format(t, v, buf, sizeof buf);
    line_put(l, buf, (size_t)MIN(n, (int)sizeof buf - 1));
}

/* Whether output column i names the bucket (a partition column). */
static bool
is_partition(const struct sql_program *p, int i)
{
    for (int k = 0; k < p->npartition; k++)
        if (p->partition[k] == i)
            return true;
    return false;
}

/* Appends s with the bytes a path must not hold as %XX: Flink's
 * PartitionPathUtils.escapePathName (control characters, '/', ':', '=',
 * '%' and the others its table holds). */
static void
line_path_escaped(struct line *l, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c < 0x20 || c == 0x7f || strchr("\"#%'*/:=?\\{[]^", c) != NULL) {
            char esc[4];

            snprintf(esc, sizeof esc, "%%%02X", c);
            line_put(l, esc, 3);
        } else {
            line_put(l, s + i, 1);
        }
    }
}

/* The row's bucket, Flink's partition path: name=value for each partition
 * column, separated by '/', a NULL or empty value Flink's default partition
 * name; then the newline that ends it. */
static void
write_bucket(struct line *l, const struct sql_program *p, const struct sql_value *r)
{
    static const char default_name[] = "__DEFAULT_PARTITION__";

    for (int k = 0; k < p->npartition; k++) {
        const struct sql_value *v = &r[p->outputs[p->partition[k]]];
        const struct sql_type *t = &p->output[p->partition[k]].type;
        const char *name = p->output[p->partition[k]].name;
        char buf[64];
        const char *s = buf;
        size_t n;

        if (k > 0)
            line_put(l, "/", 1);
        line_path_escaped(l, name, strlen(name));
        line_put(l, "=", 1);
        if (v->null) {
            n = 0;
        } else if (sql_type_phys(t->id) == SQL_PHYS_STRING) {
            s = v->s.p;
            n = v->s.len;
        } else {
            n = (size_t)MIN(sql_value_format(t, v, buf, sizeof buf), (int)sizeof buf - 1);
        }
        if (n == 0)
            line_put(l, default_name, sizeof default_name - 1);
        else
            line_path_escaped(l, s, n);
    }
    line_put(l, "\n", 1);
}

static void
write_csv(struct line *l, const struct sql_program *p, const struct sql_value *r)
{
    bool first = true;

    for (int i = 0; i < p->noutput; i++) {
        const struct sql_value *v = &r[p->outputs[i]];
        const struct sql_type *t = &p->output[i].type;

        if (is_partition(p, i))
            continue;
        if (!first)
            line_put(l, &p->csv_out_delimiter, 1);
        first = false;
        if (v->null)
            continue;
        if (t->id == SQL_VARCHAR &&
            (v->s.len == 0 || memchr(v->s.p, p->csv_out_delimiter, v->s.len) ||
             memchr(v->s.p, '"', v->s.len) || memchr(v->s.p, '\n', v->s.len) ||
             memchr(v->s.p, '\r', v->s.len))) {
            line_put(l, "\"", 1);
            for (size_t k = 0; k < v->s.len; k++)
                line_put(l, v->s.p[k] == '"' ? "\"\"" : v->s.p + k, v->s.p[k] == '"' ? 2 : 1);
            line_put(l, "\"", 1);
        } else {
            line_value(l, t, v);
        }
    }
}

static void
write_json(struct line *l, const struct sql_program *p, const struct sql_value *r)
{
    bool first = true;

    line_put(l, "{", 1);
    for (int i = 0; i < p->noutput; i++) {
        const struct sql_value *v = &r[p->outputs[i]];
        const struct sql_type *t = &p->output[i].type;
        json_t *j;
        char *s;

        if (is_partition(p, i))
            continue;
        if (!first)
            line_put(l, ",", 1);
        first = false;
        j = json_string(p->output[i].name);
        s = json_dumps(j, JSON_ENCODE_ANY);
        json_decref(j);
        line_put(l, s, strlen(s));
        free(s);
        line_put(l, ":", 1);
        if (v->null) {
            line_put(l, "null", 4);
        } else if (t->id == SQL_VARCHAR) {
            j = json_stringn_nocheck(v->s.p, v->s.len);
            s = json_dumps(j, JSON_ENCODE_ANY);
            json_decref(j);
            line_put(l, s, strlen(s));
            free(s);
        } else if (t->id == SQL_DATE || t->id == SQL_TIMESTAMP || t->id == SQL_INTERVAL) {
            line_put(l, "\"", 1);
            line_value(l, t, v);
            line_put(l, "\"", 1);
        } else if (t->id == SQL_DOUBLE && !isfinite(v->f)) {
            line_put(l, "null", 4); /* JSON has no NaN */
        } else {
            line_value(l, t, v);
        }
    }
    line_put(l, "}", 1);
}

static void
write_print(struct line *l, const struct sql_program *p, const struct sql_value *r)
{
    line_put(l, p->kind_reg >= 0 ? sql_row_kind_string(r[p->kind_reg].i) : "+I", 2);
    line_put(l, "[", 1);
    for (int i = 0; i < p->noutput; i++) {
        const struct sql_value *v = &r[p->outputs[i]];

        if (i > 0)
            line_put(l, ", ", 2);
        if (v->null)
            line_put(l, "null", 4);
        else
            line_value(l, &p->output[i].type, v);
    }
    line_put(l, "]", 1);
}

static void
write_row(struct calc_impl *impl, const struct sql_value *r)
{
    const struct sql_program *p = impl->p;
    const struct spate_type *t = impl->out_type;
    uint8_t *rec = impl->out_rec;
    uint64_t nulls = 0;

    for (int i = 0; i < p->noutput; i++) {
        const struct sql_value *v = &r[p->outputs[i]];
        uint8_t *at = rec + t->offsets[i + 1];

        if (v->null) {
            nulls |= 1ULL << i;
            memset(at, 0, t->fields[i + 1]->size);
            continue;
        }
        switch (sql_type_phys(p->output[i].type.id)) {
        case SQL_PHYS_INT:
            *(int64_t *)at = v->i;
            break;
        case SQL_PHYS_DOUBLE:
            *(double *)at = v->f;
            break;
        case SQL_PHYS_STRING:
            ((spate_str *)at)->data = v->s.p;
            ((spate_str *)at)->len = v->s.len;
            break;
        }
    }
    *(uint64_t *)rec = nulls;
}

static void
calc_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    struct calc_impl *impl = op->impl;
    const struct sql_program *p = impl->p;
    struct sql_eval *ev = &impl->ev;
    struct record_meta stamped;
    spate_error err; /* set by the line formats' readers when they fail */
    int64_t kind;
    int rc = 0;

    sql_eval_begin(ev); /* the previous record's strings go */
    switch (p->input_format) {
    case SQL_FORMAT_ROW:
        read_row(impl, rec, op->config->in_type);
        break;
    case SQL_FORMAT_CSV:
        rc = read_csv(impl, ((const spate_str *)rec)->data, ((const spate_str *)rec)->len, &err);
        break;
    case SQL_FORMAT_JSON:
        rc = read_json(impl, ((const spate_str *)rec)->data, ((const spate_str *)rec)->len, &err);
        break;
    case SQL_FORMAT_DATAGEN:
        read_datagen(impl, *(const int64_t *)rec);
        break;
    case SQL_FORMAT_NEXMARK:
        if (!read_nexmark(impl, *(const int64_t *)rec))
            return;
        break;
    default:
        break;
    }
    if (rc != 0) {
        const spate_str *line = rec;

        if (p->ignore_parse_errors) {
            impl->bad_records++;
            return;
        }
        spate_ctx_fail(&op->ctx,
                       "%s line '%.*s%s': %s (set '%s.ignore-parse-errors' = 'true' "
                       "to skip such lines)",
                       p->input_format == SQL_FORMAT_CSV ? "CSV" : "JSON", (int)MIN(line->len, 80),
                       line->data, line->len > 80 ? "..." : "", err.message,
                       p->input_format == SQL_FORMAT_CSV ? "csv" : "json");
        return;
    }
    sql_eval_run(ev);
    kind = p->kind_reg >= 0 ? ev->r[p->kind_reg].i : SQL_INSERT;
    if (p->filter >= 0 && (ev->r[p->filter].null || !ev->r[p->filter].i)) {
        /* An upsert sink drops -U: a +U that the filter drops must delete
         * its key's row, which the -U before it would have retracted. */
        if (!p->changelog || kind != SQL_UPDATE_AFTER)
            return;
        kind = SQL_DELETE;
    }
    if (p->key_reg >= 0) {
        /* GROUP BY's key, which the exchange after this Calc keys by. */
        struct sql_value *k = &ev->r[p->key_reg];
        char *b = sql_eval_alloc(ev, sql_key_size(p->regs, ev->r, p->key_regs, p->nkey) + 1);

        k->s.len = sql_key_encode(p->regs, ev->r, p->key_regs, p->nkey, b);
        k->s.p = b;
        k->null = false;
    }
    for (int i = 0; i < impl->nnot_null; i++)
        if (ev->r[p->outputs[impl->not_null[i]]].null) {
            /* Flink's table.exec.sink.not-null-enforcer, ERROR. */
            spate_ctx_fail(&op->ctx,
                           "column '%s' is NOT NULL, however, a null value is being written "
                           "into it",
                           p->output[impl->not_null[i]].name);
            return;
        }
    if (p->rowtime >= 0) {
        /* Event time: the record carries its rowtime. */
        const struct sql_value *t = &ev->r[p->rowtime];

        record_meta_copy(&stamped, meta);
        stamped.timestamp = t->null ? RECORD_NO_TIMESTAMP : t->i;
        meta = &stamped;
    }
    if (p->output_format == SQL_FORMAT_ROW) {
        write_row(impl, ev->r);
        operator_emit(op, impl->out_rec, meta);
    } else if (p->output_format != SQL_FORMAT_NONE) {
        struct line l = { ev, NULL, 0, 0 };
        spate_str s;

        if (p->changelog)
            line_put(&l, sql_row_kind_string(kind), 2);
        if (p->npartition > 0)
            write_bucket(&l, p, ev->r);
        if (p->output_format == SQL_FORMAT_CSV)
            write_csv(&l, p, ev->r);
        else if (p->output_format == SQL_FORMAT_JSON)
            write_json(&l, p, ev->r);
        else
            write_print(&l, p, ev->r);
        s.data = l.buf ? l.buf : "";
        s.len = l.len;
        operator_emit(op, &s, meta);
    } else {
        op->records_out++; /* blackhole: counted, dropped */
    }
}

const struct operator_vtable sql_calc_vtable = {
    .state = OPERATOR_STATELESS,
    .open = calc_open,
    .process = calc_process,
    .close = calc_close,
};

static const struct connector_entry sql_entries[] = {
    { OP_SQL_CALC, &sql_calc_vtable }, { OP_SQL_AGG, &sql_agg_vtable },
    { OP_SQL_JOIN, &sql_join_vtable }, { OP_SQL_RANK, &sql_rank_vtable },
    { OP_SQL_OVER, &sql_over_vtable }, { OP_SQL_LOOKUP_JOIN, &sql_lookup_join_vtable },
};

const struct connector_table *
sql_operator_table(void)
{
    static const struct connector_table table = { sql_entries, ARRAY_SIZE(sql_entries),
                                                  &connectors_builtin_table };

    return &table;
}
