/* OP_SQL_JOIN (sql_join.h): a two-input operator over rows keyed by their
 * $key column. Each side's rows are a ListState per key, each row stored
 * with its event time and how many rows of the other side it has matched
 * (what an outer join's NULL padding depends on).
 *
 * Regular joins (Flink's StreamingJoinOperator): a row joins every row of
 * the other side stored under its key, then is stored itself, until the
 * state's TTL (table.exec.state.ttl) takes it. An outer side's row that
 * matches nothing is emitted padded with NULLs (+I); when a row of the
 * other side matches it later, that padded row is retracted (-D) before
 * the joined one (+I), as Flink does: the output is a changelog. An
 * updating input's -U or -D removes one stored row alike and retracts (-D)
 * the rows it joined; an outer row whose last match goes is padded again.
 *
 * Interval joins (Flink's RowTimeIntervalJoin): left time - right time
 * within [lower, upper]; a row is stored only while a row of the other side
 * that is not late could still match it, and a timer at that time drops it
 * (an outer side's row that matched nothing is emitted padded then): the
 * output holds insertions only.
 *
 * Window joins (Flink's WindowJoinOperator): each side's rows are stored in
 * their TUMBLE or HOP windows (the namespace) and joined when the watermark
 * passes the window's end; rows of a window already complete are dropped.
 * SESSION windows are each side's rows of a key (no namespace) cut into
 * sessions when a timer at a row's time + gap - 1 fires: the sessions
 * the watermark closed join those of the other side with the same start
 * and end, and go.
 *
 * Semi and anti joins (Flink's SemiAntiJoin: IN, EXISTS, NOT IN, NOT
 * EXISTS) are regular joins that emit the left side's rows only: a semi
 * join a left row once, when its first match comes (insertions only); an
 * anti join a left row that matches nothing at once, retracted (-D) when
 * its first match comes, as an outer join's padded row is.
 *
 * Rows whose key has a NULL never match (NULL = NULL is not true). Task
 * thread only. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/key_group.h"
#include "core/log.h"
#include "core/util.h"
#include "proto/sql.pb-c.h"
#include "sql/sql_join.h"
#include "sql/sql_operators.h"
#include "sql/sql_row.h"
#include "streaming/keys.h"
#include "streaming/operator.h"
#include "streaming/operator_config.h"
#include "streaming/types.h"

/* ---- the spec ---- */

void
sql_join_spec_free(struct sql_join_spec *s)
{
    if (s == NULL)
        return;
    for (int i = 0; i < s->nleft; i++)
        free(s->left[i].name);
    for (int i = 0; i < s->nright; i++)
        free(s->right[i].name);
    free(s->left);
    free(s->right);
    free(s->residual);
    free(s);
}

static Sqlplan__Column **
columns_encode(const struct sql_column *c, int n)
{
    Sqlplan__Column **out = xcalloc((size_t)n + 1, sizeof *out);

    for (int i = 0; i < n; i++)
        out[i] = sql_column_encode(&c[i]);
    return out;
}

static void
columns_encoded_free(Sqlplan__Column **c, int n)
{
    for (int i = 0; i < n; i++)
        free(c[i]);
    free(c);
}

void
sql_join_spec_encode(const struct sql_join_spec *s, uint8_t **out, size_t *len)
{
    Sqlplan__Join j = SQLPLAN__JOIN__INIT;

    j.n_left = (size_t)s->nleft;
    j.left = columns_encode(s->left, s->nleft);
    j.n_right = (size_t)s->nright;
    j.right = columns_encode(s->right, s->nright);
    j.nkey = s->nkey;
    j.type = s->type;
    j.residual.data = s->residual;
    j.residual.len = s->residual_len;
    j.ttl_ms = s->ttl_ms;
    j.time = s->time;
    j.lower_ms = s->lower_ms;
    j.upper_ms = s->upper_ms;
    j.window = s->window;
    j.size_ms = s->size_ms;
    j.slide_ms = s->slide_ms;
    *len = sqlplan__join__get_packed_size(&j);
    *out = xmalloc(*len + 1);
    sqlplan__join__pack(&j, *out);
    columns_encoded_free(j.left, s->nleft);
    columns_encoded_free(j.right, s->nright);
}

static bool
type_valid(const struct sql_type *t)
{
    return t->id > SQL_NULL && t->id < SQL_TYPE_COUNT;
}

/* Whether keys of types a and b encode alike (sql_key_encode). */
static bool
keys_alike(const struct sql_type *a, const struct sql_type *b)
{
    if (sql_type_phys(a->id) != sql_type_phys(b->id))
        return false;
    if (a->id == SQL_DECIMAL || b->id == SQL_DECIMAL)
        return a->id == b->id && a->scale == b->scale;
    return true;
}

static int
check_spec(const struct sql_join_spec *s, spate_error *err)
{
    /* Stored: the input's columns, its time, whether it matched. */
    if (s->nkey < 0 || s->nleft < s->nkey + 1 || s->nright < s->nkey + 1 ||
        s->nleft + 2 > TYPES_ROW_MAX_FIELDS || s->nright + 2 > TYPES_ROW_MAX_FIELDS ||
        s->left[0].type.id != SQL_VARCHAR || s->right[0].type.id != SQL_VARCHAR)
        return spate_error_set(err, SPATE_EINVAL, "malformed SQL join: its columns");
    for (int i = 0; i < s->nleft; i++)
        if (!type_valid(&s->left[i].type))
            return spate_error_set(err, SPATE_EINVAL, "malformed SQL join: left column %d", i);
    for (int i = 0; i < s->nright; i++)
        if (!type_valid(&s->right[i].type))
            return spate_error_set(err, SPATE_EINVAL, "malformed SQL join: right column %d", i);
    for (int i = 1; i <= s->nkey; i++)
        if (!keys_alike(&s->left[i].type, &s->right[i].type))
            return spate_error_set(err, SPATE_EINVAL, "malformed SQL join: key %d", i);
    if (s->type > SQL_JOIN_ANTI || s->time > SQL_JOIN_WINDOW || s->ttl_ms < 0 ||
        (s->time == SQL_JOIN_INTERVAL && s->lower_ms > s->upper_ms) ||
        (s->time == SQL_JOIN_WINDOW &&
         !((s->window == SQL_WINDOW_TUMBLE && s->size_ms > 0) ||
           (s->window == SQL_WINDOW_SESSION && s->size_ms > 0) ||
           (s->window == SQL_WINDOW_HOP && s->size_ms > 0 && s->slide_ms > 0))))
        return spate_error_set(err, SPATE_EINVAL, "malformed SQL join: its type or time");
    return 0;
}

static struct sql_column *
columns_decode(Sqlplan__Column **c, size_t n)
{
    struct sql_column *out = xcalloc(n + 1, sizeof *out);

    for (size_t i = 0; i < n; i++)
        sql_column_decode(c[i], &out[i]);
    return out;
}

int
sql_join_spec_decode(const uint8_t *bytes, size_t len, struct sql_join_spec **out, spate_error *err)
{
    Sqlplan__Join *j = sqlplan__join__unpack(NULL, len, bytes);
    struct sql_join_spec *s;
    int rc;

    *out = NULL;
    if (j == NULL)
        return spate_error_set(err, SPATE_EINVAL, "malformed SQL join: no Join message");
    if (j->n_left > TYPES_ROW_MAX_FIELDS || j->n_right > TYPES_ROW_MAX_FIELDS) {
        sqlplan__join__free_unpacked(j, NULL);
        return spate_error_set(err, SPATE_EINVAL, "malformed SQL join: too many columns");
    }
    s = xcalloc(1, sizeof *s);
    s->nleft = (int)j->n_left;
    s->left = columns_decode(j->left, j->n_left);
    s->nright = (int)j->n_right;
    s->right = columns_decode(j->right, j->n_right);
    s->nkey = j->nkey;
    s->type = j->type >= 0 ? (enum sql_join_type)j->type : SQL_JOIN_ANTI + 1;
    if (j->residual.len > 0) {
        s->residual = xmalloc(j->residual.len);
        memcpy(s->residual, j->residual.data, j->residual.len);
        s->residual_len = j->residual.len;
    }
    s->ttl_ms = j->ttl_ms;
    s->time = j->time >= 0 ? (enum sql_join_time)j->time : SQL_JOIN_WINDOW + 1;
    s->lower_ms = j->lower_ms;
    s->upper_ms = j->upper_ms;
    s->window = j->window >= 0 ? (enum sql_window_kind)j->window : SQL_WINDOW_SESSION + 1;
    s->size_ms = j->size_ms;
    s->slide_ms = j->slide_ms;
    sqlplan__join__free_unpacked(j, NULL);
    if ((rc = check_spec(s, err)) != 0) {
        sql_join_spec_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

static const char *const window_columns[] = { "window_start", "window_end", "window_time" };

/* A side's columns in the output: NULL when the side can be padded. */
static void
side_output(const struct sql_join_spec *s, const struct sql_column *in, int nin, bool padded,
            struct sql_column *out, int *k)
{
    for (int i = 1 + s->nkey; i < nin; i++) {
        if (!strcmp(in[i].name, "$kind"))
            continue; /* an updating side's row kind: the output has its own */
        out[*k].name = xstrdup(in[i].name);
        out[*k].type = in[i].type;
        out[(*k)++].type.nullable |= padded;
    }
    for (int i = 0; s->time == SQL_JOIN_WINDOW && i < 3; i++) {
        out[*k].name = xstrdup(window_columns[i]);
        out[(*k)++].type = (struct sql_type){ SQL_TIMESTAMP, 3, 0, padded };
    }
}

struct sql_column *
sql_join_output(const struct sql_join_spec *s, int *n)
{
    struct sql_column *out = xcalloc((size_t)s->nleft + (size_t)s->nright + 8, sizeof *out);
    int k = 0;

    out[k].name = xstrdup("$kind");
    out[k++].type = (struct sql_type){ SQL_INT, 0, 0, false };
    side_output(s, s->left, s->nleft, s->type == SQL_JOIN_RIGHT || s->type == SQL_JOIN_FULL, out,
                &k);
    if (s->type != SQL_JOIN_SEMI && s->type != SQL_JOIN_ANTI)
        side_output(s, s->right, s->nright, s->type == SQL_JOIN_LEFT || s->type == SQL_JOIN_FULL,
                    out, &k);
    *n = k;
    return out;
}

int
sql_join_residual_open(const struct sql_join_spec *s, const struct sql_type *out_types, int nout,
                       struct sql_program **p, struct sql_eval *ev, const char *name,
                       spate_error *err)
{
    int rc;

    if ((rc = sql_program_decode(s->residual, s->residual_len, p, err)) != 0)
        return spate_error_wrap(err, "operator '%s': its condition", name);
    if ((*p)->ninput != nout - 1 || (*p)->filter < 0)
        return spate_error_set(err, SPATE_EINVAL,
                               "operator '%s': its condition does not read its columns", name);
    for (int i = 0; i < (*p)->ninput; i++)
        if (sql_type_phys((*p)->input[i].type.id) != sql_type_phys(out_types[i + 1].id))
            return spate_error_set(err, SPATE_EINVAL,
                                   "operator '%s': its condition reads column %d as another type",
                                   name, i);
    if ((rc = sql_eval_init(ev, *p)) != 0)
        return spate_error_set(err, rc, "operator '%s': its condition", name);
    return 0;
}

/* ---- the operator ---- */

/* One input: its rows as stored, and the current key's (and window's)
 * rows copied out of the state while a row of the other side meets them. */
struct join_side {
    const char *state_name;
    const struct spate_type *in_type;
    const struct key_selector *key;
    bool outer;   /* its rows that match nothing are emitted padded with NULLs */
    int ninput;   /* $key, the keys, its own columns */
    int kind_col; /* an updating side's $kind column (its last), -1: none */
    int nstored;
    struct sql_type *types; /* stored: the input's columns, then time and matched */
    struct spate_type *stored_type;
    void *stored_rec;
    struct state_decl decl;
    spate_state *st;
    uint8_t *buf; /* the rows serialized */
    size_t len, cap;
    struct sql_value *rows; /* nrows * nstored values, strings into buf */
    size_t nrows, rows_cap;
    bool *gone; /* rows dropped while they are rewritten */
};

struct join_impl {
    struct sql_join_spec *s;
    struct join_side side[2];
    const struct spate_type *out_type;
    struct sql_type *out_types;
    int nout;
    void *out_rec;
    /* A pair of rows as the rest of ON reads them: both sides' columns
     * (npair, $kind first), of which the output is the first nout (a
     * semi or anti join's: the left side's). */
    struct sql_value *res;
    struct sql_type *pair_types;
    int npair;
    struct sql_program *residual;
    struct sql_eval eval;
    bool has_eval;
    int64_t win[2]; /* the current namespace */
    uint8_t key_scratch[256];
    uint64_t late; /* rows of a complete window, or with no event time */
};

#define COL_TIME(sd)    ((sd)->ninput)
#define COL_MATCHED(sd) ((sd)->ninput + 1)

static void
side_free(struct join_side *sd)
{
    free(sd->types);
    types_free(sd->stored_type);
    free(sd->stored_rec);
    free(sd->buf);
    free(sd->rows);
    free(sd->gone);
}

static void
free_impl(struct join_impl *j)
{
    sql_join_spec_free(j->s);
    side_free(&j->side[0]);
    side_free(&j->side[1]);
    free(j->out_types);
    free(j->pair_types);
    free(j->out_rec);
    free(j->res);
    if (j->has_eval)
        sql_eval_release(&j->eval);
    sql_program_free(j->residual);
    free(j);
}

static bool
side_init(struct join_side *sd, const char *state_name, const struct sql_column *cols, int n,
          const struct spate_type *in_type, const struct key_selector *key, bool outer,
          int64_t ttl_ms)
{
    const struct spate_type *fields[TYPES_ROW_MAX_FIELDS];
    bool ok;

    sd->state_name = state_name;
    sd->in_type = in_type;
    sd->key = key;
    sd->outer = outer;
    sd->ninput = n;
    sd->nstored = n + 2;
    sd->kind_col = n > 1 && !strcmp(cols[n - 1].name, "$kind") ? n - 1 : -1;
    ok = in_type != NULL && in_type->nullable && in_type->nfields == n + 1 &&
         key->kind == KEY_FIELD && key->field == 1;
    sd->types = xcalloc((size_t)sd->nstored, sizeof *sd->types);
    for (int i = 0; i < n; i++) {
        sd->types[i] = cols[i].type;
        fields[i] = sql_type_spate(cols[i].type.id);
        ok = ok && in_type->fields[i + 1] == fields[i];
    }
    sd->types[n] = sd->types[n + 1] = (struct sql_type){ SQL_BIGINT, 0, 0, false };
    fields[n] = fields[n + 1] = spate_type_int64();
    sd->stored_type = types_new_row(sd->nstored, fields);
    sd->stored_rec = operator_out_storage(sd->stored_type);
    sd->decl = (struct state_decl){
        (char *)state_name, STATE_LIST, sd->stored_type, NULL, NULL, { 0 }, ttl_ms, false,
        SCOPE_KEYED
    };
    return ok;
}

static int
join_open(struct stream_operator *op, spate_error *err)
{
    const struct sql_config *c = op->conf;
    const struct operator_settings *set = op->config;
    const char *name = set->name ? set->name : "Join";
    struct join_impl *j = xcalloc(1, sizeof *j);
    struct state_decl decls[2];
    struct sql_column *out;
    bool ok;
    int rc;

    op->impl = j;
    if ((rc = sql_join_spec_decode(c->program, c->program_len, &j->s, err)) != 0)
        return spate_error_wrap(err, "operator '%s'", name);
    ok = side_init(&j->side[0], "sql-join-left", j->s->left, j->s->nleft, set->in_type, &set->key,
                   j->s->type == SQL_JOIN_LEFT || j->s->type == SQL_JOIN_FULL ||
                       j->s->type == SQL_JOIN_ANTI,
                   j->s->time == SQL_JOIN_REGULAR ? j->s->ttl_ms : 0);
    ok &= side_init(&j->side[1], "sql-join-right", j->s->right, j->s->nright, set->in_type2,
                    &set->key2, j->s->type == SQL_JOIN_RIGHT || j->s->type == SQL_JOIN_FULL,
                    j->s->time == SQL_JOIN_REGULAR ? j->s->ttl_ms : 0);
    out = sql_join_output(j->s, &j->nout);
    ok = ok && set->out_type->nullable && set->out_type->nfields == j->nout + 1;
    j->out_types = xcalloc((size_t)j->nout, sizeof *j->out_types);
    for (int i = 0; i < j->nout; i++) {
        j->out_types[i] = out[i].type;
        ok = ok && set->out_type->fields[i + 1] == sql_type_spate(out[i].type.id);
        free(out[i].name);
    }
    free(out);
    if (!ok)
        return spate_error_set(err, SPATE_EINVAL,
                               "operator '%s': its record types or keys do not match its join",
                               name);
    {
        struct sql_join_spec pair = *j->s;

        pair.type = SQL_JOIN_FULL;
        out = sql_join_output(&pair, &j->npair);
        j->pair_types = xcalloc((size_t)j->npair, sizeof *j->pair_types);
        for (int i = 0; i < j->npair; i++) {
            j->pair_types[i] = out[i].type;
            free(out[i].name);
        }
        free(out);
    }
    if (j->s->residual != NULL) {
        if ((rc = sql_join_residual_open(j->s, j->pair_types, j->npair, &j->residual, &j->eval,
                                         name, err)) != 0)
            return rc;
        j->has_eval = true;
    }
    j->out_type = set->out_type;
    j->out_rec = operator_out_storage(set->out_type);
    j->res = xcalloc((size_t)j->npair, sizeof *j->res);
    decls[0] = j->side[0].decl;
    decls[1] = j->side[1].decl;
    if ((rc = operator_backend_init(op, decls, 2, err)) != 0)
        return rc;
    for (int i = 0; i < 2; i++)
        j->side[i].st = op->backend->ops->state(op->backend, j->side[i].state_name);
    return 0;
}

static void
join_close(struct stream_operator *op)
{
    struct join_impl *j = op->impl;

    if (j == NULL)
        return;
    if (j->late > 0)
        SPATE_LOG_INFO("sql", "task=%s join dropped %" PRIu64 " late rows", op->ctx.task_name,
                       j->late);
    if (op->backend != NULL)
        operator_backend_free(op);
    free_impl(j);
    op->impl = NULL;
}

static void
set_ns(struct stream_operator *op, struct join_impl *j, const int64_t *win)
{
    if (win != NULL && win != j->win)
        memcpy(j->win, win, sizeof j->win);
    op->ctx.keyctx.ns = win ? j->win : NULL;
    op->ctx.keyctx.ns_len = win ? sizeof j->win : 0;
}

/* The current key's (and namespace's) rows of sd into sd->rows. */
static void
side_load(struct join_side *sd)
{
    spate_iter it;

    sd->len = sd->nrows = 0;
    spate_list_iter(sd->st, &it);
    while (spate_list_next(&it, sd->stored_rec)) {
        size_t n = types_serialized_size(sd->stored_type, sd->stored_rec);

        if (sd->len + n > sd->cap) {
            sd->cap = MAX(sd->cap * 2, sd->len + n + 256);
            sd->buf = xrealloc(sd->buf, sd->cap);
        }
        types_serialize(sd->stored_type, sd->stored_rec, sd->buf + sd->len, n);
        sd->len += n;
        if (sd->nrows == sd->rows_cap) {
            sd->rows_cap = sd->rows_cap ? sd->rows_cap * 2 : 16;
            sd->rows = xrealloc(sd->rows, sd->rows_cap * (size_t)sd->nstored * sizeof *sd->rows);
            sd->gone = xrealloc(sd->gone, sd->rows_cap * sizeof *sd->gone);
        }
        /* its length for now; read once the buffer stops moving */
        sd->rows[sd->nrows * (size_t)sd->nstored].i = (int64_t)n;
        sd->nrows++;
    }
    for (size_t k = 0, off = 0; k < sd->nrows; k++) {
        struct sql_value *v = &sd->rows[k * (size_t)sd->nstored];
        size_t n = (size_t)v[0].i;

        types_deserialize(sd->stored_type, sd->buf + off, n, sd->stored_rec);
        sql_row_read(sd->stored_type, sd->stored_rec, sd->types, sd->nstored, v);
        sd->gone[k] = false;
        off += n;
    }
}

static void
side_add(struct join_side *sd, const struct sql_value *v)
{
    sql_row_write(sd->stored_type, sd->stored_rec, sd->types, sd->nstored, v);
    spate_list_add(sd->st, sd->stored_rec);
}

/* The current key's rows of sd: those loaded, less the gone ones. */
static void
side_rewrite(struct join_side *sd)
{
    spate_state_clear(sd->st);
    for (size_t k = 0; k < sd->nrows; k++)
        if (!sd->gone[k])
            side_add(sd, &sd->rows[k * (size_t)sd->nstored]);
}

static bool
key_has_null(const struct join_impl *j, const struct sql_value *v)
{
    for (int i = 1; i <= j->s->nkey; i++)
        if (v[i].null)
            return true;
    return false;
}

/* The output row of l and r (either NULL: padded) into j->res. */
static void
result_row(struct join_impl *j, enum sql_row_kind kind, const struct sql_value *l,
           const struct sql_value *r)
{
    const struct sql_value *sides[2] = { l, r };
    int k = 0;

    j->res[k++] = (struct sql_value){ .i = kind, .null = false };
    for (int s = 0; s < 2; s++) {
        const struct join_side *sd = &j->side[s];

        for (int i = 1 + j->s->nkey; i < sd->ninput; i++)
            if (i != sd->kind_col)
                j->res[k++] = sides[s] ? sides[s][i] : (struct sql_value){ .i = 0, .null = true };
        if (j->s->time == SQL_JOIN_WINDOW) {
            int64_t w[3] = { j->win[0], j->win[1], j->win[1] - 1 };

            for (int i = 0; i < 3; i++)
                j->res[k++] = sides[s] ? (struct sql_value){ .i = w[i], .null = false }
                                       : (struct sql_value){ .i = 0, .null = true };
        }
    }
}

/* Whether l and r meet the rest of ON (their keys are equal and not NULL). */
static bool
matches(struct join_impl *j, const struct sql_value *l, const struct sql_value *r)
{
    const struct sql_value *f;

    if (j->residual == NULL)
        return true;
    result_row(j, SQL_INSERT, l, r);
    sql_eval_begin(&j->eval);
    memcpy(j->eval.r, j->res + 1, (size_t)(j->npair - 1) * sizeof *j->res);
    sql_eval_run(&j->eval);
    f = &j->eval.r[j->residual->filter];
    return !f->null && f->i != 0;
}

static void
emit(struct stream_operator *op, struct join_impl *j, enum sql_row_kind kind,
     const struct sql_value *l, const struct sql_value *r, int64_t timestamp)
{
    struct record_meta m = { timestamp, 0, false };

    result_row(j, kind, l, r);
    sql_row_write(j->out_type, j->out_rec, j->out_types, j->nout, j->res);
    operator_emit(op, j->out_rec, &m);
}

/* Emits x of side s, padded with NULLs on the other side. */
static void
emit_padded(struct stream_operator *op, struct join_impl *j, int s, enum sql_row_kind kind,
            const struct sql_value *x, int64_t timestamp)
{
    emit(op, j, kind, s == 0 ? x : NULL, s == 0 ? NULL : x, timestamp);
}

/* Joins row x of side s with the other side's rows loaded: each match
 * emitted, an outer row of the other side counted matched once more (its
 * padded row retracted first when retract and it matched nothing yet);
 * how many x matched. */
static int64_t
probe(struct stream_operator *op, struct join_impl *j, int s, const struct sql_value *x, int64_t ts,
      bool retract)
{
    struct join_side *o = &j->side[1 - s];
    bool dirty = false;
    int64_t matched = 0;

    for (size_t k = 0; k < o->nrows; k++) {
        struct sql_value *y = &o->rows[k * (size_t)o->nstored];
        const struct sql_value *l = s == 0 ? x : y, *r = s == 0 ? y : x;

        if (!matches(j, l, r))
            continue;
        matched++;
        if (o->outer) {
            if (retract && y[COL_MATCHED(o)].i == 0)
                emit_padded(op, j, 1 - s, SQL_DELETE, y, ts);
            y[COL_MATCHED(o)].i++;
            dirty = true;
        }
        if (j->s->type == SQL_JOIN_SEMI && s == 1 && y[COL_MATCHED(o)].i == 0) {
            /* a left row's first match: the row, once */
            emit_padded(op, j, 0, SQL_INSERT, y, ts);
            y[COL_MATCHED(o)].i = 1;
            dirty = true;
        }
        if (j->s->type != SQL_JOIN_SEMI && j->s->type != SQL_JOIN_ANTI)
            emit(op, j, SQL_INSERT, l, r, ts);
    }
    if (dirty)
        side_rewrite(o);
    return matched;
}

/* Whether stored rows x and y of sd hold the same row (their kinds,
 * times and matches aside). */
static bool
same_row(const struct join_side *sd, const struct sql_value *x, const struct sql_value *y)
{
    for (int i = 0; i < sd->ninput; i++)
        if (i != sd->kind_col && !sql_value_same(&sd->types[i], &x[i], &y[i]))
            return false;
    return true;
}

/* A regular join's retraction (-U or -D) of row x of side s, under its
 * key (Flink's StreamingJoinOperator on a retract message): one stored row
 * alike goes, each row it joined is retracted (-D), and an outer row of
 * the other side it was the last match of comes back padded (+I); x
 * padded is retracted when x is outer and matched nothing. */
static void
retract_row(struct stream_operator *op, struct join_impl *j, int s, const struct sql_value *x,
            int64_t ts)
{
    struct join_side *sd = &j->side[s], *o = &j->side[1 - s];
    bool dirty = false, matched = false;
    size_t k;

    side_load(sd);
    for (k = 0; k < sd->nrows && !same_row(sd, &sd->rows[k * (size_t)sd->nstored], x); k++)
        ;
    if (k == sd->nrows)
        return; /* never stored, or gone with the state's TTL */
    sd->gone[k] = true;
    side_rewrite(sd);
    side_load(o);
    for (size_t m = 0; m < o->nrows; m++) {
        struct sql_value *y = &o->rows[m * (size_t)o->nstored];
        const struct sql_value *l = s == 0 ? x : y, *r = s == 0 ? y : x;

        if (!matches(j, l, r))
            continue;
        matched = true;
        emit(op, j, SQL_DELETE, l, r, ts);
        if (o->outer && y[COL_MATCHED(o)].i > 0) {
            dirty = true;
            if (--y[COL_MATCHED(o)].i == 0)
                emit_padded(op, j, 1 - s, SQL_INSERT, y, ts);
        }
    }
    if (dirty)
        side_rewrite(o);
    if (sd->outer && !matched)
        emit_padded(op, j, s, SQL_DELETE, x, ts);
}

/* The time after which a row of side s at ts meets no row of the other
 * side that is not late: left - right time is within [lower, upper]. */
static int64_t
interval_expiry(const struct join_impl *j, int s, int64_t ts)
{
    return s == 0 ? ts - j->s->lower_ms : ts + j->s->upper_ms;
}

static void
set_key(struct stream_operator *op, struct join_impl *j, struct join_side *sd, const void *rec,
        const struct record_meta *meta)
{
    spate_bytes key =
        keys_extract(sd->key, sd->in_type, &op->ctx, rec, j->key_scratch, sizeof j->key_scratch);

    keyed_set_key(&op->ctx.keyctx, key,
                  meta->has_key_hash ? meta->key_hash : key_group_hash(key.data, key.len), NULL, 0);
}

static void
window_add(struct stream_operator *op, struct join_impl *j, struct join_side *sd,
           struct sql_value *x, const int64_t *win)
{
    if (win[1] - 1 <= op->current_watermark) {
        j->late++;
        return;
    }
    set_ns(op, j, win);
    side_add(sd, x);
    op->backend->ops->register_timer(op->backend, true, win[1] - 1);
}

static void
join_row(struct stream_operator *op, int s, const void *rec, const struct record_meta *meta)
{
    struct join_impl *j = op->impl;
    struct join_side *sd = &j->side[s];
    struct sql_value x[TYPES_ROW_MAX_FIELDS];
    int64_t ts = meta->timestamp, expiry, win[2];
    int64_t matched;
    bool retract;

    sql_row_read(sd->in_type, rec, sd->types, sd->ninput, x);
    retract = sd->kind_col >= 0 &&
              (x[sd->kind_col].i == SQL_UPDATE_BEFORE || x[sd->kind_col].i == SQL_DELETE);
    x[COL_TIME(sd)] = (struct sql_value){ .i = ts, .null = false };
    x[COL_MATCHED(sd)] = (struct sql_value){ .i = 0, .null = false };
    set_key(op, j, sd, rec, meta);
    if (j->s->time != SQL_JOIN_REGULAR && ts == RECORD_NO_TIMESTAMP) {
        /* no event time: in no window; in no interval, so an outer side's
         * row matches nothing */
        if (j->s->time == SQL_JOIN_INTERVAL && sd->outer)
            emit_padded(op, j, s, SQL_INSERT, x, ts);
        else
            j->late++;
        return;
    }
    if (j->s->time == SQL_JOIN_WINDOW) {
        if (j->s->window == SQL_WINDOW_SESSION) {
            /* its session ends gap after the last row: at the earliest
             * ts + gap, when a timer looks at the key's sessions */
            if (ts + j->s->size_ms - 1 <= op->current_watermark) {
                j->late++;
                return;
            }
            set_ns(op, j, NULL);
            side_add(sd, x);
            op->backend->ops->register_timer(op->backend, true, ts + j->s->size_ms - 1);
            return;
        }
        if (j->s->window == SQL_WINDOW_TUMBLE) {
            win[0] = sql_floor_div(ts, j->s->size_ms) * j->s->size_ms;
            win[1] = win[0] + j->s->size_ms;
            window_add(op, j, sd, x, win);
            return;
        }
        for (int64_t start = sql_floor_div(ts, j->s->slide_ms) * j->s->slide_ms;
             start > ts - j->s->size_ms; start -= j->s->slide_ms) {
            win[0] = start;
            win[1] = start + j->s->size_ms;
            window_add(op, j, sd, x, win);
        }
        return;
    }
    if (key_has_null(j, x)) {
        if (sd->outer)
            emit_padded(op, j, s, retract ? SQL_DELETE : SQL_INSERT, x, ts);
        return;
    }
    set_ns(op, j, NULL);
    if (retract && j->s->time == SQL_JOIN_REGULAR) {
        retract_row(op, j, s, x, ts);
        return;
    }
    side_load(&j->side[1 - s]);
    matched = probe(op, j, s, x, ts, j->s->time == SQL_JOIN_REGULAR);
    x[COL_MATCHED(sd)].i = matched;
    if (j->s->time == SQL_JOIN_REGULAR) {
        if (sd->outer && !matched)
            emit_padded(op, j, s, SQL_INSERT, x, ts);
        if (j->s->type == SQL_JOIN_SEMI && s == 0 && matched)
            emit_padded(op, j, s, SQL_INSERT, x, ts);
        side_add(sd, x);
        return;
    }
    expiry = interval_expiry(j, s, ts);
    if (expiry <= op->current_watermark) {
        if (sd->outer && !matched)
            emit_padded(op, j, s, SQL_INSERT, x, ts);
        return;
    }
    side_add(sd, x);
    op->backend->ops->register_timer(op->backend, true, expiry);
}

static void
join_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    join_row(op, 0, rec, meta);
}

static void
join_process2(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    join_row(op, 1, rec, meta);
}

/* Interval: the current key's rows whose interval the watermark passed
 * go, an outer side's unmatched ones emitted padded. */
static void
interval_cleanup(struct stream_operator *op, struct join_impl *j)
{
    set_ns(op, j, NULL);
    for (int s = 0; s < 2; s++) {
        struct join_side *sd = &j->side[s];
        bool dropped = false;

        side_load(sd);
        for (size_t k = 0; k < sd->nrows; k++) {
            const struct sql_value *x = &sd->rows[k * (size_t)sd->nstored];
            int64_t ts = x[COL_TIME(sd)].i;

            if (interval_expiry(j, s, ts) > op->current_watermark)
                continue;
            if (sd->outer && x[COL_MATCHED(sd)].i == 0)
                emit_padded(op, j, s, SQL_INSERT, x, ts);
            sd->gone[k] = dropped = true;
        }
        if (dropped)
            side_rewrite(sd);
    }
}

/* Window: its rows joined, then they go. */
static void
window_fire(struct stream_operator *op, struct join_impl *j, const int64_t *win)
{
    struct join_side *l = &j->side[0], *r = &j->side[1];
    int64_t ts = win[1] - 1;

    set_ns(op, j, win);
    side_load(l);
    side_load(r);
    for (size_t a = 0; a < l->nrows; a++) {
        struct sql_value *x = &l->rows[a * (size_t)l->nstored];

        if (key_has_null(j, x))
            continue;
        for (size_t b = 0; b < r->nrows; b++) {
            struct sql_value *y = &r->rows[b * (size_t)r->nstored];

            if (!key_has_null(j, y) && matches(j, x, y)) {
                x[COL_MATCHED(l)].i = y[COL_MATCHED(r)].i = 1;
                emit(op, j, SQL_INSERT, x, y, ts);
            }
        }
    }
    for (int s = 0; s < 2; s++) {
        struct join_side *sd = &j->side[s];

        for (size_t k = 0; sd->outer && k < sd->nrows; k++)
            if (sd->rows[k * (size_t)sd->nstored + (size_t)COL_MATCHED(sd)].i == 0)
                emit_padded(op, j, s, SQL_INSERT, &sd->rows[k * (size_t)sd->nstored], ts);
        spate_state_clear(sd->st);
    }
}

/* A row of a side and its time, to sort a key's rows into sessions. */
struct timed_row {
    int64_t ts;
    size_t k;
};

static int
timed_cmp(const void *a, const void *b)
{
    const struct timed_row *x = a, *y = b;

    return x->ts < y->ts ? -1 : x->ts > y->ts ? 1 : (x->k > y->k) - (x->k < y->k);
}

/* sd's loaded rows in time order, each with its session (sess[i]: index
 * into starts/ends, the sessions of the key: a row within gap of the last
 * one goes on its session). */
static void
sessions_of(const struct join_side *sd, int64_t gap, struct timed_row *rows, int64_t *starts,
            int64_t *ends, size_t *sess)
{
    size_t n = 0;

    for (size_t k = 0; k < sd->nrows; k++)
        rows[k] =
            (struct timed_row){ sd->rows[k * (size_t)sd->nstored + (size_t)COL_TIME(sd)].i, k };
    qsort(rows, sd->nrows, sizeof *rows, timed_cmp);
    for (size_t i = 0; i < sd->nrows; i++) {
        if (n == 0 || rows[i].ts >= ends[n - 1]) {
            starts[n] = rows[i].ts;
            n++;
        }
        ends[n - 1] = rows[i].ts + gap;
        sess[i] = n - 1;
    }
}

/* SESSION: the current key's sessions of each side that the watermark
 * closed (their end - 1 passed); each left session's rows join the rows of
 * the right session of the same start and end, an outer side's unmatched
 * rows come padded, and the closed sessions' rows go. */
static void
session_fire(struct stream_operator *op, struct join_impl *j)
{
    struct join_side *sd[2] = { &j->side[0], &j->side[1] };
    struct timed_row *rows[2];
    int64_t *starts[2], *ends[2];
    size_t *sess[2];

    set_ns(op, j, NULL);
    for (int s = 0; s < 2; s++) {
        size_t n;

        side_load(sd[s]);
        n = sd[s]->nrows;
        rows[s] = xcalloc(n + 1, sizeof *rows[s]);
        starts[s] = xcalloc(n + 1, sizeof *starts[s]);
        ends[s] = xcalloc(n + 1, sizeof *ends[s]);
        sess[s] = xcalloc(n + 1, sizeof *sess[s]);
        sessions_of(sd[s], j->s->size_ms, rows[s], starts[s], ends[s], sess[s]);
    }
    for (size_t a = 0; a < sd[0]->nrows; a++) {
        size_t sa = sess[0][a];
        struct sql_value *x = &sd[0]->rows[rows[0][a].k * (size_t)sd[0]->nstored];

        if (ends[0][sa] - 1 > op->current_watermark || key_has_null(j, x))
            continue;
        j->win[0] = starts[0][sa];
        j->win[1] = ends[0][sa];
        for (size_t b = 0; b < sd[1]->nrows; b++) {
            size_t sb = sess[1][b];
            struct sql_value *y = &sd[1]->rows[rows[1][b].k * (size_t)sd[1]->nstored];

            if (starts[1][sb] == starts[0][sa] && ends[1][sb] == ends[0][sa] &&
                !key_has_null(j, y) && matches(j, x, y)) {
                x[COL_MATCHED(sd[0])].i = y[COL_MATCHED(sd[1])].i = 1;
                emit(op, j, SQL_INSERT, x, y, ends[0][sa] - 1);
            }
        }
    }
    for (int s = 0; s < 2; s++) {
        bool dropped = false;

        for (size_t i = 0; i < sd[s]->nrows; i++) {
            size_t k = rows[s][i].k, si = sess[s][i];
            struct sql_value *x = &sd[s]->rows[k * (size_t)sd[s]->nstored];

            if (ends[s][si] - 1 > op->current_watermark)
                continue;
            if (sd[s]->outer && x[COL_MATCHED(sd[s])].i == 0) {
                j->win[0] = starts[s][si];
                j->win[1] = ends[s][si];
                emit_padded(op, j, s, SQL_INSERT, x, ends[s][si] - 1);
            }
            sd[s]->gone[k] = dropped = true;
        }
        if (dropped)
            side_rewrite(sd[s]);
        free(rows[s]);
        free(starts[s]);
        free(ends[s]);
        free(sess[s]);
    }
}

static void
join_fire(void *owner, const struct timer *t)
{
    struct stream_operator *op = owner;
    struct join_impl *j = op->impl;
    int64_t win[2];

    if (!t->event_time)
        return;
    if (j->s->time == SQL_JOIN_INTERVAL && t->ns_len == 0) {
        interval_cleanup(op, j);
    } else if (j->s->time == SQL_JOIN_WINDOW && j->s->window == SQL_WINDOW_SESSION &&
               t->ns_len == 0) {
        session_fire(op, j);
    } else if (j->s->time == SQL_JOIN_WINDOW && t->ns_len == sizeof win) {
        memcpy(win, t->data + t->key_len, sizeof win);
        window_fire(op, j, win);
    }
}

static void
join_watermark(struct stream_operator *op, int64_t watermark)
{
    struct join_impl *j = op->impl;

    /* Fire first, then let event time move on: Flink's order. */
    op->current_watermark = watermark;
    if (j->s->time != SQL_JOIN_REGULAR)
        op->backend->ops->advance(op->backend, true, watermark, join_fire);
    op->out->emit_watermark(op->out, watermark);
}

const struct operator_vtable sql_join_vtable = {
    .state = OPERATOR_KEYED_STATE,
    .open = join_open,
    .process = join_process,
    .process2 = join_process2,
    .close = join_close,
    .process_watermark = join_watermark,
};
