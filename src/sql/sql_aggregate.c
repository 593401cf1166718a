/* OP_SQL_AGG (sql_aggregate.h): GROUP BY over rows keyed by their $key
 * column. Each key's accumulators are one row in a ValueState, in the
 * window's namespace when windowed; COUNT(DISTINCT x) keeps the values seen
 * in a MapState beside it. Unwindowed, every row updates its group's
 * result and emits the change (+I, or -U then +U when the result changed),
 * as Flink's GroupAggregate does, and an updating input's -U and -D rows
 * are taken back out (a group left with no row deleted); in windows of
 * event time (TUMBLE, HOP, SESSION: merged per key, Flink's
 * MergingWindowSet) a window's result is emitted once, when the watermark
 * passes its end, and a row whose window the watermark has passed is
 * dropped, as Flink's WindowAggregate drops it. Task thread only. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/key_group.h"
#include "core/log.h"
#include "core/util.h"
#include "proto/sql.pb-c.h"
#include "sql/sql_aggregate.h"
#include "sql/sql_operators.h"
#include "sql/sql_row.h"
#include "streaming/keys.h"
#include "streaming/operator.h"
#include "streaming/operator_config.h"
#include "streaming/types.h"

/* ---- the spec ---- */

void
sql_agg_spec_free(struct sql_agg_spec *s)
{
    if (s == NULL)
        return;
    for (int i = 0; i < s->ninput; i++)
        free(s->input[i].name);
    for (int i = 0; i < s->ncalls; i++)
        free(s->calls[i].result.name);
    free(s->input);
    free(s->calls);
    free(s);
}

void
sql_agg_spec_encode(const struct sql_agg_spec *s, uint8_t **out, size_t *len)
{
    Sqlplan__Aggregate a = SQLPLAN__AGGREGATE__INIT;

    a.n_input = (size_t)s->ninput;
    a.input = xcalloc((size_t)s->ninput + 1, sizeof *a.input);
    for (int i = 0; i < s->ninput; i++)
        a.input[i] = sql_column_encode(&s->input[i]);
    a.ngroup = s->ngroup;
    a.n_calls = (size_t)s->ncalls;
    a.calls = xcalloc((size_t)s->ncalls + 1, sizeof *a.calls);
    for (int i = 0; i < s->ncalls; i++) {
        Sqlplan__AggCall *c = xcalloc(1, sizeof *c);

        sqlplan__agg_call__init(c);
        c->kind = s->calls[i].kind;
        c->arg = s->calls[i].arg + 1;
        c->filter = s->calls[i].filter + 1;
        c->result = sql_column_encode(&s->calls[i].result);
        a.calls[i] = c;
    }
    a.window = s->window;
    a.size_ms = s->size_ms;
    a.slide_ms = s->slide_ms;
    a.gap_ms = s->gap_ms;
    *len = sqlplan__aggregate__get_packed_size(&a);
    *out = xmalloc(*len + 1);
    sqlplan__aggregate__pack(&a, *out);
    for (int i = 0; i < s->ninput; i++)
        free(a.input[i]);
    for (int i = 0; i < s->ncalls; i++) {
        free(a.calls[i]->result);
        free(a.calls[i]);
    }
    free(a.input);
    free(a.calls);
}

int
sql_agg_result_type(enum sql_agg_kind kind, const struct sql_type *arg, struct sql_type *out)
{
    *out = (struct sql_type){ SQL_BIGINT, 0, 0, true };
    switch (kind) {
    case SQL_AGG_COUNT_STAR:
    case SQL_AGG_COUNT:
    case SQL_AGG_COUNT_DISTINCT:
        out->nullable = false;
        return 0;
    case SQL_AGG_SUM:
    case SQL_AGG_AVG:
        if (arg == NULL || !sql_type_is_numeric(arg->id))
            return SPATE_ENOTSUP;
        *out = *arg;
        if (kind == SQL_AGG_AVG && arg->id == SQL_DECIMAL)
            /* Flink's DECIMAL(38, max(6, s)), at spate's 18 digits */
            *out = (struct sql_type){ SQL_DECIMAL, SQL_DECIMAL_MAX_PRECISION, MAX(6, arg->scale),
                                      true };
        out->nullable = true;
        return 0;
    case SQL_AGG_MIN:
    case SQL_AGG_MAX:
        if (arg == NULL || arg->id == SQL_NULL)
            return SPATE_ENOTSUP;
        *out = *arg;
        out->nullable = true;
        return 0;
    default:
        return SPATE_ENOTSUP;
    }
}

static bool
type_valid(const struct sql_type *t)
{
    return t->id > SQL_NULL && t->id < SQL_TYPE_COUNT;
}

static int
check_spec(const struct sql_agg_spec *s, spate_error *err)
{
    if (s->ninput < 1 || s->ninput > TYPES_ROW_MAX_FIELDS || s->ngroup < 0 ||
        s->ngroup >= s->ninput || s->ncalls > TYPES_ROW_MAX_FIELDS ||
        s->input[0].type.id != SQL_VARCHAR)
        return spate_error_set(err, SPATE_EINVAL, "malformed SQL aggregate: its columns");
    for (int i = 0; i < s->ninput; i++)
        if (!type_valid(&s->input[i].type))
            return spate_error_set(err, SPATE_EINVAL, "malformed SQL aggregate: column %d", i);
    for (int i = 0; i < s->ncalls; i++) {
        const struct sql_agg_call *c = &s->calls[i];
        struct sql_type want;

        if (c->kind >= SQL_AGG_KIND_COUNT || c->arg < -1 || c->arg >= s->ninput || c->arg == 0 ||
            (c->arg < 0) != (c->kind == SQL_AGG_COUNT_STAR) || c->filter < -1 || c->filter == 0 ||
            c->filter >= s->ninput ||
            (c->filter > 0 && s->input[c->filter].type.id != SQL_BOOLEAN) ||
            sql_agg_result_type(c->kind, c->arg > 0 ? &s->input[c->arg].type : NULL, &want) != 0 ||
            want.id != c->result.type.id || want.scale != c->result.type.scale)
            return spate_error_set(err, SPATE_EINVAL, "malformed SQL aggregate: call %d", i);
    }
    if ((s->window == SQL_WINDOW_TUMBLE && s->size_ms <= 0) ||
        (s->window == SQL_WINDOW_HOP && (s->size_ms <= 0 || s->slide_ms <= 0)) ||
        (s->window == SQL_WINDOW_SESSION && s->gap_ms <= 0) || s->window > SQL_WINDOW_SESSION)
        return spate_error_set(err, SPATE_EINVAL, "malformed SQL aggregate: its window");
    return 0;
}

int
sql_agg_spec_decode(const uint8_t *bytes, size_t len, struct sql_agg_spec **out, spate_error *err)
{
    Sqlplan__Aggregate *a = sqlplan__aggregate__unpack(NULL, len, bytes);
    struct sql_agg_spec *s;
    int rc;

    *out = NULL;
    if (a == NULL)
        return spate_error_set(err, SPATE_EINVAL, "malformed SQL aggregate: no Aggregate message");
    if (a->n_input > TYPES_ROW_MAX_FIELDS || a->n_calls > TYPES_ROW_MAX_FIELDS) {
        sqlplan__aggregate__free_unpacked(a, NULL);
        return spate_error_set(err, SPATE_EINVAL, "malformed SQL aggregate: too many columns");
    }
    s = xcalloc(1, sizeof *s);
    s->ninput = (int)a->n_input;
    s->input = xcalloc(a->n_input + 1, sizeof *s->input);
    for (size_t i = 0; i < a->n_input; i++)
        sql_column_decode(a->input[i], &s->input[i]);
    s->ngroup = a->ngroup;
    s->ncalls = (int)a->n_calls;
    s->calls = xcalloc(a->n_calls + 1, sizeof *s->calls);
    for (size_t i = 0; i < a->n_calls; i++) {
        s->calls[i].kind =
            a->calls[i]->kind >= 0 ? (enum sql_agg_kind)a->calls[i]->kind : SQL_AGG_KIND_COUNT;
        s->calls[i].arg = a->calls[i]->arg - 1;
        s->calls[i].filter = a->calls[i]->filter - 1;
        if (a->calls[i]->result != NULL)
            sql_column_decode(a->calls[i]->result, &s->calls[i].result);
        else
            s->calls[i].result.name = xstrdup("");
    }
    s->window = a->window >= 0 ? (enum sql_window_kind)a->window : SQL_WINDOW_SESSION + 1;
    s->size_ms = a->size_ms;
    s->slide_ms = a->slide_ms;
    s->gap_ms = a->gap_ms;
    sqlplan__aggregate__free_unpacked(a, NULL);
    if ((rc = check_spec(s, err)) != 0) {
        sql_agg_spec_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

struct sql_column *
sql_agg_output(const struct sql_agg_spec *s, int *n)
{
    struct sql_column *out = xcalloc((size_t)s->ninput + (size_t)s->ncalls + 5, sizeof *out);
    int k = 0;

    out[k].name = xstrdup("$kind");
    out[k++].type = (struct sql_type){ SQL_INT, 0, 0, false };
    for (int i = 1; i <= s->ngroup; i++) {
        out[k].name = xstrdup(s->input[i].name);
        out[k++].type = s->input[i].type;
    }
    if (s->window != SQL_WINDOW_NONE) {
        static const char *const names[] = { "window_start", "window_end", "window_time" };

        for (int i = 0; i < 3; i++) {
            out[k].name = xstrdup(names[i]);
            out[k++].type = (struct sql_type){ SQL_TIMESTAMP, 3, 0, false };
        }
    }
    for (int i = 0; i < s->ncalls; i++) {
        out[k].name = xstrdup(s->calls[i].result.name);
        out[k++].type = s->calls[i].result.type;
    }
    *n = k;
    return out;
}

/* ---- the operator ---- */

#define AGG_ACC_STATE      "sql-acc"
#define AGG_DISTINCT_STATE "sql-distinct"
#define AGG_SESSIONS_STATE "sql-sessions"

struct agg_impl {
    struct sql_agg_spec *s;
    /* The accumulator row: the group columns, then each call's slots from
     * slot[i] (COUNT: the count; SUM, MIN, MAX: the value, NULL for none;
     * AVG: the sum, then the count), last the group's rows (a row has a
     * column even with no group columns and no calls). */
    struct sql_type *acc_cols;
    int nacc;
    int *slot;
    struct spate_type *acc_type;
    void *acc_rec;
    struct sql_value *acc, *acc2;    /* the accumulator being updated; one merged in */
    struct spate_type *session_type; /* (start, end) */
    const struct spate_type *out_type;
    void *out_old, *out_new;
    struct sql_value *res_old, *res_new;
    struct sql_type *in_types, *out_types; /* the columns' types, in order */
    int nout;
    struct state_decl decls[3];
    spate_state *acc_st, *distinct_st, *sessions_st;
    uint8_t key_scratch[256];
    char *buf; /* a distinct value's key, strings copied while sessions merge */
    size_t buf_cap;
    /* Strings of the accumulators, copied out of the state (whose next
     * call may reuse the memory they were read into: RocksDB's) until the
     * row is done: a chunk, and the chunks a row outgrew. */
    char *strings;
    size_t strings_used, strings_cap;
    char **old;
    size_t nold, old_cap;
    bool acc_strings;       /* the accumulator has string columns */
    int64_t (*sessions)[2]; /* a key's sessions, read while a row merges them */
    size_t sessions_cap;
    uint64_t late;     /* rows dropped: their window was already complete */
    bool has_distinct; /* a COUNT(DISTINCT), or MIN/MAX retracting: values in distinct_st */
    /* An updating input: its $kind column (the last), -1 for none. Its
     * -U and -D rows are taken back out of the accumulators (Flink's
     * retracting aggregate functions): SUM keeps a count of its values
     * beside the sum, MIN and MAX each value's count in distinct_st
     * (MaxWithRetractAggFunction's MapState), read again when the extreme
     * goes. */
    int kind_col;
};

static const struct spate_type *
phys_type(const struct sql_type *t)
{
    return sql_type_spate(t->id);
}

static void
free_impl(struct agg_impl *a)
{
    sql_agg_spec_free(a->s);
    free(a->acc_cols);
    free(a->slot);
    types_free(a->acc_type);
    types_free(a->session_type);
    free(a->acc_rec);
    free(a->acc);
    free(a->acc2);
    free(a->out_old);
    free(a->out_new);
    free(a->res_old);
    free(a->res_new);
    free(a->in_types);
    free(a->out_types);
    free(a->buf);
    for (size_t i = 0; i < a->nold; i++)
        free(a->old[i]);
    free(a->old);
    free(a->strings);
    free(a->sessions);
    free(a);
}

static int
agg_open(struct stream_operator *op, spate_error *err)
{
    const struct sql_config *c = op->conf;
    const struct operator_settings *set = op->config;
    const char *name = set->name ? set->name : "GroupAggregate";
    const struct spate_type *fields[TYPES_ROW_MAX_FIELDS];
    struct agg_impl *a;
    struct sql_column *out;
    bool ok;
    int rc, k = 0;

    a = xcalloc(1, sizeof *a);
    if ((rc = sql_agg_spec_decode(c->program, c->program_len, &a->s, err)) != 0) {
        free_impl(a);
        return spate_error_wrap(err, "operator '%s'", name);
    }
    out = sql_agg_output(a->s, &a->nout);
    ok = set->in_type != NULL && set->in_type->nullable &&
         set->in_type->nfields == a->s->ninput + 1 && set->out_type->nullable &&
         set->out_type->nfields == a->nout + 1 && set->key.kind == KEY_FIELD && set->key.field == 1;
    for (int i = 0; ok && i < a->s->ninput; i++)
        ok = set->in_type->fields[i + 1] == phys_type(&a->s->input[i].type);
    for (int i = 0; ok && i < a->nout; i++)
        ok = set->out_type->fields[i + 1] == phys_type(&out[i].type);
    a->in_types = xcalloc((size_t)a->s->ninput + 1, sizeof *a->in_types);
    for (int i = 0; i < a->s->ninput; i++)
        a->in_types[i] = a->s->input[i].type;
    a->out_types = xcalloc((size_t)a->nout + 1, sizeof *a->out_types);
    for (int i = 0; i < a->nout; i++) {
        a->out_types[i] = out[i].type;
        free(out[i].name);
    }
    free(out);
    if (!ok) {
        free_impl(a);
        return spate_error_set(err, SPATE_EINVAL,
                               "operator '%s': its record types or key do not match its "
                               "aggregate",
                               name);
    }
    a->kind_col = a->s->ninput > 1 && !strcmp(a->s->input[a->s->ninput - 1].name, "$kind")
                      ? a->s->ninput - 1
                      : -1;
    /* The accumulator row. */
    a->acc_cols = xcalloc((size_t)a->s->ngroup + 2 * (size_t)a->s->ncalls + 2, sizeof *a->acc_cols);
    a->slot = xcalloc((size_t)a->s->ncalls + 1, sizeof *a->slot);
    for (int i = 1; i <= a->s->ngroup; i++)
        a->acc_cols[k++] = a->s->input[i].type;
    for (int i = 0; i < a->s->ncalls; i++) {
        const struct sql_agg_call *call = &a->s->calls[i];
        struct sql_type count = { SQL_BIGINT, 0, 0, false };

        a->slot[i] = k;
        switch (call->kind) {
        case SQL_AGG_MIN:
        case SQL_AGG_MAX:
            a->acc_cols[k++] = a->s->input[call->arg].type;
            a->has_distinct |= a->kind_col >= 0;
            break;
        case SQL_AGG_SUM:
            a->acc_cols[k++] = a->s->input[call->arg].type;
            if (a->kind_col >= 0)
                a->acc_cols[k++] = count; /* its values: NULL when none is left */
            break;
        case SQL_AGG_AVG:
            a->acc_cols[k++] = a->s->input[call->arg].type;
            a->acc_cols[k++] = count;
            break;
        default:
            a->acc_cols[k++] = count;
            a->has_distinct |= call->kind == SQL_AGG_COUNT_DISTINCT;
            break;
        }
    }
    a->acc_cols[k++] = (struct sql_type){ SQL_BIGINT, 0, 0, false };
    a->nacc = k;
    if (k > TYPES_ROW_MAX_FIELDS) {
        free_impl(a);
        return spate_error_set(err, SPATE_ENOTSUP,
                               "operator '%s': not supported: more than %d accumulator columns",
                               name, TYPES_ROW_MAX_FIELDS);
    }
    for (int i = 0; i < k; i++) {
        fields[i] = phys_type(&a->acc_cols[i]);
        a->acc_strings |= sql_type_phys(a->acc_cols[i].id) == SQL_PHYS_STRING;
    }
    a->acc_type = types_new_row(k, fields);
    a->acc_rec = operator_out_storage(a->acc_type);
    a->acc = xcalloc((size_t)k + 1, sizeof *a->acc);
    a->acc2 = xcalloc((size_t)k + 1, sizeof *a->acc2);
    a->out_type = set->out_type;
    a->out_old = operator_out_storage(set->out_type);
    a->out_new = operator_out_storage(set->out_type);
    a->res_old = xcalloc((size_t)a->nout + 1, sizeof *a->res_old);
    a->res_new = xcalloc((size_t)a->nout + 1, sizeof *a->res_new);
    {
        const spate_type *se[2] = { spate_type_int64(), spate_type_int64() };

        a->session_type = types_new_tuple(2, se);
    }
    a->decls[0] = (struct state_decl){ AGG_ACC_STATE, STATE_VALUE, a->acc_type, NULL,       NULL,
                                       { 0 },         0,           false,       SCOPE_KEYED };
    a->decls[1] = (struct state_decl){ AGG_DISTINCT_STATE,
                                       STATE_MAP,
                                       spate_type_int64(),
                                       spate_type_string(),
                                       NULL,
                                       { 0 },
                                       0,
                                       false,
                                       SCOPE_KEYED };
    a->decls[2] = (struct state_decl){
        AGG_SESSIONS_STATE, STATE_LIST, a->session_type, NULL, NULL, { 0 }, 0, false, SCOPE_KEYED
    };
    op->impl = a;
    if ((rc = operator_backend_init(op, a->decls, 3, err)) != 0)
        return rc;
    a->acc_st = op->backend->ops->state(op->backend, AGG_ACC_STATE);
    a->distinct_st = op->backend->ops->state(op->backend, AGG_DISTINCT_STATE);
    a->sessions_st = op->backend->ops->state(op->backend, AGG_SESSIONS_STATE);
    return 0;
}

static void
agg_close(struct stream_operator *op)
{
    struct agg_impl *a = op->impl;

    if (a == NULL)
        return;
    if (a->late > 0)
        SPATE_LOG_INFO("sql", "task=%s dropped %" PRIu64 " late rows", op->ctx.task_name, a->late);
    operator_backend_free(op);
    free_impl(a);
    op->impl = NULL;
}

/* A new group's accumulator: its group values from the record, counts 0,
 * the rest NULL. */
static void
acc_init(struct agg_impl *a, const struct sql_value *in, struct sql_value *acc)
{
    const struct sql_agg_spec *s = a->s;

    for (int i = 0; i < s->ngroup; i++)
        acc[i] = in[i + 1];
    /* SUM, MIN, MAX: none yet, whether or not their argument can be NULL */
    for (int i = s->ngroup; i < a->nacc; i++)
        acc[i] = (struct sql_value){ .i = 0, .null = true };
    acc[a->nacc - 1].null = false;
    for (int i = 0; i < s->ncalls; i++) {
        enum sql_agg_kind k = s->calls[i].kind;

        if (k == SQL_AGG_COUNT_STAR || k == SQL_AGG_COUNT || k == SQL_AGG_COUNT_DISTINCT)
            acc[a->slot[i]] = (struct sql_value){ .i = 0, .null = false };
        else if (k == SQL_AGG_AVG || (k == SQL_AGG_SUM && a->kind_col >= 0))
            acc[a->slot[i] + 1] = (struct sql_value){ .i = 0, .null = false };
    }
}

/* acc += v, or acc -= v when sign is negative (a retraction). */
static void
sum_into(const struct sql_type *t, struct sql_value *acc, const struct sql_value *v, int sign)
{
    bool dbl = sql_type_phys(t->id) == SQL_PHYS_DOUBLE;

    if (acc->null) {
        *acc = (struct sql_value){ .i = 0, .null = false };
        if (dbl)
            acc->f = 0;
    }
    if (dbl)
        acc->f += sign < 0 ? -v->f : v->f;
    else if (sign < 0)
        acc->i = (int64_t)((uint64_t)acc->i - (uint64_t)v->i);
    else
        acc->i = (int64_t)((uint64_t)acc->i + (uint64_t)v->i);
}

static void
extreme_into(const struct sql_type *t, bool max, struct sql_value *acc, const struct sql_value *v)
{
    int c;

    if (v->null)
        return;
    c = acc->null ? 1 : sql_value_cmp(t, v, acc);
    if (acc->null || (max ? c > 0 : c < 0))
        *acc = *v;
}

static char *strings_alloc(struct agg_impl *a, size_t n);

/* The key in distinct_st of value v of call i: the call's index, then the
 * value's bytes. */
static spate_str
value_key(struct agg_impl *a, int i, const struct sql_type *t, const struct sql_value *v)
{
    size_t n = 1 + (sql_type_phys(t->id) == SQL_PHYS_STRING ? v->s.len : 8);

    if (n > a->buf_cap) {
        a->buf_cap = n * 2;
        a->buf = xrealloc(a->buf, a->buf_cap);
    }
    a->buf[0] = (char)i;
    if (sql_type_phys(t->id) == SQL_PHYS_STRING) {
        if (v->s.len)
            memcpy(a->buf + 1, v->s.p, v->s.len);
    } else {
        memcpy(a->buf + 1, &v->i, 8);
    }
    return (spate_str){ a->buf, n };
}

/* Counts value v of call i among the group's (and window's) values once
 * more (sign > 0) or once less; whether it came (a first) or went (the
 * last). Only an updating input needs each value's count, to know when a
 * retraction takes its last row; over an insert-only one a value is only
 * seen or not, and one seen before is not written again (a read per row,
 * not a read and a write). */
static bool
value_count(struct agg_impl *a, int i, const struct sql_type *t, const struct sql_value *v,
            int sign)
{
    spate_str key = value_key(a, i, t, v);
    int64_t seen = 0;
    bool there = spate_map_get(a->distinct_st, &key, &seen);

    if (a->kind_col < 0) {
        if (there)
            return false;
        seen = 1;
        spate_map_put(a->distinct_st, &key, &seen);
        return true;
    }
    if (sign < 0 && seen <= 0)
        return false; /* not there: a retraction of a row never added */
    seen += sign < 0 ? -1 : 1;
    if (seen == 0)
        spate_map_remove(a->distinct_st, &key);
    else
        spate_map_put(a->distinct_st, &key, &seen);
    return sign < 0 ? seen == 0 : seen == 1;
}

/* MIN or MAX of call i once its extreme went: the extreme of the values
 * still counted (NULL: none), their strings copied. */
static void
extreme_reread(struct agg_impl *a, int i, const struct sql_type *t, bool max,
               struct sql_value *slot)
{
    spate_iter it;
    spate_str key;
    int64_t n;

    *slot = (struct sql_value){ .i = 0, .null = true };
    spate_map_iter(a->distinct_st, &it);
    while (spate_map_next(&it, &key, &n)) {
        struct sql_value v = { .i = 0, .null = false };

        if (key.len < 1 || key.data[0] != (char)i || n <= 0)
            continue;
        if (sql_type_phys(t->id) == SQL_PHYS_STRING) {
            char *copy = strings_alloc(a, key.len);

            memcpy(copy, key.data + 1, key.len - 1);
            v.s.p = copy;
            v.s.len = key.len - 1;
        } else if (key.len == 9) {
            memcpy(&v.i, key.data + 1, 8);
        } else {
            continue;
        }
        extreme_into(t, max, slot, &v);
    }
}

/* Adds the input row in to the accumulator (sign > 0), or takes it back
 * out (a retraction). */
static void
acc_add(struct agg_impl *a, const struct sql_value *in, struct sql_value *acc, int sign)
{
    const struct sql_agg_spec *s = a->s;
    int64_t d = sign < 0 ? -1 : 1;

    acc[a->nacc - 1].i += d;
    for (int i = 0; i < s->ncalls; i++) {
        const struct sql_agg_call *c = &s->calls[i];
        struct sql_value *slot = &acc[a->slot[i]];
        const struct sql_value *v = c->arg > 0 ? &in[c->arg] : NULL;
        const struct sql_type *t = c->arg > 0 ? &s->input[c->arg].type : NULL;
        bool max = c->kind == SQL_AGG_MAX;

        if (c->filter > 0 && (in[c->filter].null || !in[c->filter].i))
            continue;
        switch (c->kind) {
        case SQL_AGG_COUNT_STAR:
            slot->i += d;
            break;
        case SQL_AGG_COUNT:
            slot->i += v->null ? 0 : d;
            break;
        case SQL_AGG_COUNT_DISTINCT:
            if (!v->null && value_count(a, i, t, v, sign))
                slot->i += d;
            break;
        case SQL_AGG_SUM:
            if (!v->null) {
                sum_into(t, slot, v, sign);
                if (a->kind_col >= 0)
                    slot[1].i += d;
            }
            if (a->kind_col >= 0 && slot[1].i == 0)
                slot->null = true; /* no value left: SUM is NULL */
            break;
        case SQL_AGG_AVG:
            if (!v->null) {
                sum_into(t, slot, v, sign);
                slot[1].i += d;
            }
            break;
        case SQL_AGG_MIN:
        case SQL_AGG_MAX:
            if (a->kind_col < 0) {
                extreme_into(t, max, slot, v);
            } else if (!v->null && value_count(a, i, t, v, sign) && sign < 0 && !slot->null &&
                       sql_value_cmp(t, v, slot) == 0) {
                extreme_reread(a, i, t, max, slot);
            } else if (sign > 0) {
                extreme_into(t, max, slot, v);
            }
            break;
        default:
            break;
        }
    }
}

/* Merges accumulator m into acc (sessions that a row joined). */
static void
acc_merge(struct agg_impl *a, struct sql_value *acc, const struct sql_value *m)
{
    const struct sql_agg_spec *s = a->s;

    acc[a->nacc - 1].i += m[a->nacc - 1].i;
    for (int i = 0; i < s->ncalls; i++) {
        const struct sql_agg_call *c = &s->calls[i];
        struct sql_value *slot = &acc[a->slot[i]];
        const struct sql_value *from = &m[a->slot[i]];
        const struct sql_type *t = c->arg > 0 ? &s->input[c->arg].type : NULL;

        switch (c->kind) {
        case SQL_AGG_SUM:
            if (!from->null)
                sum_into(t, slot, from, 1);
            break;
        case SQL_AGG_AVG:
            if (!from->null)
                sum_into(t, slot, from, 1);
            slot[1].i += from[1].i;
            break;
        case SQL_AGG_MIN:
        case SQL_AGG_MAX:
            extreme_into(t, c->kind == SQL_AGG_MAX, slot, from);
            break;
        default: /* counts (COUNT DISTINCT is refused in sessions) */
            slot->i += from->i;
            break;
        }
    }
}

/* The output row of an accumulator: kind, groups, the window's columns
 * (win NULL: none), the results. */
static void
result_row(struct agg_impl *a, const struct sql_value *acc, enum sql_row_kind kind,
           const int64_t *win, struct sql_value *res)
{
    const struct sql_agg_spec *s = a->s;
    int k = 0;

    res[k++] = (struct sql_value){ .i = kind, .null = false };
    for (int i = 0; i < s->ngroup; i++)
        res[k++] = acc[i];
    if (s->window != SQL_WINDOW_NONE) {
        res[k++] = (struct sql_value){ .i = win[0], .null = false };
        res[k++] = (struct sql_value){ .i = win[1], .null = false };
        res[k++] = (struct sql_value){ .i = win[1] - 1, .null = false };
    }
    for (int i = 0; i < s->ncalls; i++) {
        const struct sql_agg_call *c = &s->calls[i];
        const struct sql_value *slot = &acc[a->slot[i]];
        struct sql_value *r = &res[k++];

        *r = *slot;
        if (c->kind == SQL_AGG_AVG) {
            const struct sql_type *t = &s->input[c->arg].type;

            if (slot[1].i == 0 || slot->null) {
                r->null = true;
            } else if (t->id == SQL_DOUBLE) {
                r->f = slot->f / (double)slot[1].i;
            } else if (t->id == SQL_DECIMAL) {
                /* sum / count at the result's scale, half up (Java's
                 * BigDecimal.divide, HALF_UP) */
                __int128 num = (__int128)slot->i * sql_pow10(c->result.type.scale - t->scale);
                __int128 q = num / slot[1].i, rem = num % slot[1].i;

                if (2 * (rem < 0 ? -rem : rem) >= slot[1].i)
                    q += num < 0 ? -1 : 1;
                r->null = q > INT64_MAX || q < INT64_MIN; /* past 18 digits */
                r->i = (int64_t)q;
            } else {
                r->i = slot->i / slot[1].i; /* Flink's AVG of integers is an integer */
            }
        }
        if (!r->null && c->result.type.id == SQL_INT)
            r->i = (int32_t)(uint32_t)(uint64_t)r->i; /* INT wraps as Java's int */
    }
}

static void
emit_row(struct stream_operator *op, void *rec, const struct sql_value *res, int64_t timestamp)
{
    struct agg_impl *a = op->impl;
    struct record_meta m = { timestamp, 0, false };

    sql_row_write(a->out_type, rec, a->out_types, a->nout, res);
    operator_emit(op, rec, &m);
}

static void
set_ns(struct stream_operator *op, const int64_t *win)
{
    op->ctx.keyctx.ns = win;
    op->ctx.keyctx.ns_len = win ? 2 * sizeof(int64_t) : 0;
}

/* Room for n bytes of a string kept until the row is done. */
static char *
strings_alloc(struct agg_impl *a, size_t n)
{
    if (a->strings_used + n > a->strings_cap) {
        if (a->strings != NULL) {
            if (a->nold == a->old_cap) {
                a->old_cap = a->old_cap ? a->old_cap * 2 : 8;
                a->old = xrealloc(a->old, a->old_cap * sizeof *a->old);
            }
            a->old[a->nold++] = a->strings;
        }
        a->strings_cap = MAX(a->strings_cap * 2, n + 256);
        a->strings = xmalloc(a->strings_cap);
        a->strings_used = 0;
    }
    a->strings_used += n;
    return a->strings + a->strings_used - n;
}

/* A new row: the previous row's strings go. */
static void
strings_reset(struct agg_impl *a)
{
    for (size_t i = 0; i < a->nold; i++)
        free(a->old[i]);
    a->nold = 0;
    a->strings_used = 0;
}

/* The current key's (and namespace's) accumulator into acc, its strings
 * copied; false when it has none. */
static bool
acc_load(struct agg_impl *a, struct sql_value *acc)
{
    if (!spate_value_get(a->acc_st, a->acc_rec))
        return false;
    sql_row_read(a->acc_type, a->acc_rec, a->acc_cols, a->nacc, acc);
    for (int i = 0; a->acc_strings && i < a->nacc; i++) {
        char *copy;

        if (acc[i].null || sql_type_phys(a->acc_cols[i].id) != SQL_PHYS_STRING)
            continue;
        copy = strings_alloc(a, acc[i].s.len + 1);
        if (acc[i].s.len)
            memcpy(copy, acc[i].s.p, acc[i].s.len);
        acc[i].s.p = copy;
    }
    return true;
}

/* Unwindowed: the group's result changes with every row (Flink's
 * GroupAggFunction): +I for a new group, else -U and +U when it changed. */
static void
group_process(struct stream_operator *op, struct agg_impl *a, const struct sql_value *in,
              const struct record_meta *meta)
{
    bool existed = acc_load(a, a->acc);
    bool same = existed;
    int sign = 1;

    if (a->kind_col >= 0 &&
        (in[a->kind_col].i == SQL_UPDATE_BEFORE || in[a->kind_col].i == SQL_DELETE)) {
        sign = -1;
        if (!existed)
            return; /* a retraction of a group not there (its state expired) */
    }

    if (existed) {
        result_row(a, a->acc, SQL_UPDATE_BEFORE, NULL, a->res_old);
    } else {
        acc_init(a, in, a->acc);
    }
    acc_add(a, in, a->acc, sign);
    if (a->acc[a->nacc - 1].i <= 0) {
        /* its last row taken back: the group's result is deleted, its
         * state goes (Flink's GroupAggFunction) */
        a->res_old[0].i = SQL_DELETE;
        emit_row(op, a->out_old, a->res_old, meta->timestamp);
        spate_state_clear(a->acc_st);
        if (a->has_distinct)
            spate_state_clear(a->distinct_st);
        return;
    }
    result_row(a, a->acc, existed ? SQL_UPDATE_AFTER : SQL_INSERT, NULL, a->res_new);
    for (int i = 1; same && i < a->nout; i++)
        same = sql_value_same(&a->out_types[i], &a->res_old[i], &a->res_new[i]);
    /* Emitted before the state is written: the old result's strings may
     * point into the stored value. */
    if (!same) {
        if (existed)
            emit_row(op, a->out_old, a->res_old, meta->timestamp);
        emit_row(op, a->out_new, a->res_new, meta->timestamp);
    }
    sql_row_write(a->acc_type, a->acc_rec, a->acc_cols, a->nacc, a->acc);
    spate_value_update(a->acc_st, a->acc_rec);
}

/* Adds the row to window win of the current key; its timer at the end. */
static void
window_add(struct stream_operator *op, struct agg_impl *a, const struct sql_value *in,
           const int64_t *win)
{
    set_ns(op, win);
    if (!acc_load(a, a->acc)) {
        acc_init(a, in, a->acc);
        op->backend->ops->register_timer(op->backend, true, win[1] - 1);
    }
    acc_add(a, in, a->acc, 1);
    sql_row_write(a->acc_type, a->acc_rec, a->acc_cols, a->nacc, a->acc);
    spate_value_update(a->acc_st, a->acc_rec);
}

/* SESSION: the row's window [ts, ts + gap) merged with the key's sessions
 * it overlaps, their accumulators merged into the new one's. */
/* The current key's sessions into a->sessions; their number. */
static size_t
sessions_read(struct stream_operator *op, struct agg_impl *a)
{
    spate_iter it;
    int64_t se[2];
    size_t n = 0;

    set_ns(op, NULL);
    spate_list_iter(a->sessions_st, &it);
    while (spate_list_next(&it, se)) {
        if (n == a->sessions_cap) {
            a->sessions_cap = a->sessions_cap ? a->sessions_cap * 2 : 16;
            a->sessions = xrealloc(a->sessions, a->sessions_cap * sizeof *a->sessions);
        }
        memcpy(a->sessions[n++], se, sizeof se);
    }
    return n;
}

/* The current key's sessions: those of a->sessions[0 .. n) not merged away
 * (end INT64_MIN), and win (NULL: none). */
static void
sessions_write(struct stream_operator *op, struct agg_impl *a, size_t n, const int64_t *win)
{
    set_ns(op, NULL);
    spate_state_clear(a->sessions_st);
    for (size_t i = 0; i < n; i++)
        if (a->sessions[i][1] != INT64_MIN)
            spate_list_add(a->sessions_st, a->sessions[i]);
    if (win != NULL)
        spate_list_add(a->sessions_st, win);
}

static void
session_process(struct stream_operator *op, struct agg_impl *a, const struct sql_value *in,
                int64_t ts)
{
    int64_t win[2] = { ts, ts + a->s->gap_ms }, (*all)[2];
    size_t n = sessions_read(op, a);
    bool any = false;

    all = a->sessions;
    /* Until nothing more overlaps: a session the grown window reaches may
     * come before the one that grew it. */
    for (bool grew = true; grew;) {
        grew = false;
        for (size_t i = 0; i < n; i++)
            if (all[i][0] < win[1] && win[0] < all[i][1] &&
                (all[i][0] < win[0] || all[i][1] > win[1] || !any)) {
                win[0] = MIN(win[0], all[i][0]);
                win[1] = MAX(win[1], all[i][1]);
                any = grew = true;
            }
    }
    /* Only a row that joins no session can make a late one. */
    if (!any && win[1] - 1 <= op->current_watermark) {
        a->late++;
        return;
    }
    acc_init(a, in, a->acc);
    for (size_t i = 0; i < n; i++) {
        if (!(all[i][0] < win[1] && win[0] < all[i][1]))
            continue;
        set_ns(op, all[i]);
        if (acc_load(a, a->acc2))
            acc_merge(a, a->acc, a->acc2);
        spate_state_clear(a->acc_st);
        op->backend->ops->delete_timer(op->backend, true, all[i][1] - 1);
        all[i][0] = all[i][1] = INT64_MIN; /* merged away */
    }
    set_ns(op, win);
    acc_add(a, in, a->acc, 1);
    sql_row_write(a->acc_type, a->acc_rec, a->acc_cols, a->nacc, a->acc);
    spate_value_update(a->acc_st, a->acc_rec);
    op->backend->ops->register_timer(op->backend, true, win[1] - 1);
    sessions_write(op, a, n, win);
}

static void
agg_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    struct agg_impl *a = op->impl;
    const struct sql_agg_spec *s = a->s;
    struct sql_value in[TYPES_ROW_MAX_FIELDS];
    int64_t ts = meta->timestamp, win[2];

    strings_reset(a);
    sql_row_read(op->config->in_type, rec, a->in_types, s->ninput, in);
    sql_row_set_key(op, rec, meta, a->key_scratch, sizeof a->key_scratch);
    if (s->window == SQL_WINDOW_NONE) {
        group_process(op, a, in, meta);
        return;
    }
    if (ts == RECORD_NO_TIMESTAMP) {
        a->late++; /* a NULL rowtime belongs to no window */
        return;
    }
    if (s->window == SQL_WINDOW_SESSION) {
        session_process(op, a, in, ts);
        return;
    }
    if (s->window == SQL_WINDOW_TUMBLE) {
        win[0] = sql_floor_div(ts, s->size_ms) * s->size_ms;
        win[1] = win[0] + s->size_ms;
        if (win[1] - 1 <= op->current_watermark)
            a->late++;
        else
            window_add(op, a, in, win);
        return;
    }
    /* HOP: every window of size that slides by slide and holds ts, from the
     * last that starts (Flink's SlidingEventTimeWindows). */
    for (int64_t start = sql_floor_div(ts, s->slide_ms) * s->slide_ms; start > ts - s->size_ms;
         start -= s->slide_ms) {
        win[0] = start;
        win[1] = start + s->size_ms;
        if (win[1] - 1 <= op->current_watermark)
            a->late++;
        else
            window_add(op, a, in, win);
    }
}

/* A window's end passed: its result, then its state goes. */
static void
agg_fire(void *owner, const struct timer *t)
{
    struct stream_operator *op = owner;
    struct agg_impl *a = op->impl;
    int64_t win[2];

    if (t->ns_len != sizeof win || !t->event_time)
        return;
    memcpy(win, t->data + t->key_len, sizeof win);
    strings_reset(a);
    set_ns(op, win);
    if (acc_load(a, a->acc)) {
        result_row(a, a->acc, SQL_INSERT, win, a->res_new);
        emit_row(op, a->out_new, a->res_new, win[1] - 1);
    }
    spate_state_clear(a->acc_st);
    if (a->has_distinct)
        spate_state_clear(a->distinct_st);
    if (a->s->window == SQL_WINDOW_SESSION) {
        size_t n = sessions_read(op, a);

        for (size_t i = 0; i < n; i++)
            if (a->sessions[i][0] == win[0] && a->sessions[i][1] == win[1])
                a->sessions[i][1] = INT64_MIN; /* fired */
        sessions_write(op, a, n, NULL);
    }
}

static void
agg_watermark(struct stream_operator *op, int64_t watermark)
{
    /* Fire first, then let event time move on: Flink's order. */
    op->current_watermark = watermark;
    if (((struct agg_impl *)op->impl)->s->window != SQL_WINDOW_NONE)
        op->backend->ops->advance(op->backend, true, watermark, agg_fire);
    op->out->emit_watermark(op->out, watermark);
}

const struct operator_vtable sql_agg_vtable = {
    .state = OPERATOR_KEYED_STATE,
    .open = agg_open,
    .process = agg_process,
    .close = agg_close,
    .process_watermark = agg_watermark,
};
