/* OP_SQL_RANK (sql_rank.h): Top-N over rows keyed by their $key column
 * (the partition). Each partition keeps its top `limit` rows, in rank
 * order, in a ListState, and the last row of a full top in a ValueState,
 * which turns a row below it away without the list read. The input only
 * inserts, so a row that falls out of the top never comes back and is not
 * kept (Flink's AppendOnlyTopNFunction). Unwindowed, a row that enters the
 * top emits the change: with rn in the output, -U/+U of every rank it
 * moved (+I of a rank new to the partition); without it, +I of the row
 * and -D of the row it pushed out. Windowed (the partition holds a
 * window's end), the window's top rows are emitted as insertions when the
 * watermark passes its end, and a row whose window the watermark has
 * passed is dropped (Flink's WindowRankOperator). RANK(), DENSE_RANK()
 * and an updating input keep every row of the partition instead (Flink's
 * RetractableTopNFunction), the changes the difference of the top before
 * and after a row. Task thread only. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/key_group.h"
#include "core/log.h"
#include "core/util.h"
#include "proto/sql.pb-c.h"
#include "sql/sql_operators.h"
#include "sql/sql_rank.h"
#include "sql/sql_row.h"
#include "streaming/keys.h"
#include "streaming/operator.h"
#include "streaming/operator_config.h"
#include "streaming/types.h"

/* ---- the spec ---- */

void
sql_rank_spec_free(struct sql_rank_spec *s)
{
    if (s == NULL)
        return;
    for (int i = 0; i < s->ninput; i++)
        free(s->input[i].name);
    free(s->input);
    free(s->order);
    free(s);
}

void
sql_rank_spec_encode(const struct sql_rank_spec *s, uint8_t **out, size_t *len)
{
    Sqlplan__Rank r = SQLPLAN__RANK__INIT;

    r.n_input = (size_t)s->ninput;
    r.input = xcalloc((size_t)s->ninput + 1, sizeof *r.input);
    for (int i = 0; i < s->ninput; i++)
        r.input[i] = sql_column_encode(&s->input[i]);
    r.npart = s->npart;
    r.nrow = s->nrow;
    r.n_order = (size_t)s->norder;
    r.order = xcalloc((size_t)s->norder + 1, sizeof *r.order);
    for (int i = 0; i < s->norder; i++) {
        Sqlplan__RankOrder *o = xcalloc(1, sizeof *o);

        sqlplan__rank_order__init(o);
        o->col = s->order[i].col;
        o->desc = s->order[i].desc;
        o->nulls_first = s->order[i].nulls_first;
        r.order[i] = o;
    }
    r.limit = s->limit;
    r.emit_rank = s->emit_rank;
    r.last_wins_ties = s->last_wins_ties;
    r.window_end = s->window_end + 1;
    r.function = (int32_t)s->function;
    *len = sqlplan__rank__get_packed_size(&r);
    *out = xmalloc(*len + 1);
    sqlplan__rank__pack(&r, *out);
    for (int i = 0; i < s->ninput; i++)
        free(r.input[i]);
    for (int i = 0; i < s->norder; i++)
        free(r.order[i]);
    free(r.input);
    free(r.order);
}

static int
check_spec(const struct sql_rank_spec *s, spate_error *err)
{
    if (s->ninput < 1 || s->ninput > TYPES_ROW_MAX_FIELDS || s->npart < 0 || s->nrow < 0 ||
        1 + s->npart + s->nrow > s->ninput || s->nrow + 2 > TYPES_ROW_MAX_FIELDS ||
        s->input[0].type.id != SQL_VARCHAR)
        return spate_error_set(err, SPATE_EINVAL, "malformed SQL rank: its columns");
    for (int i = 0; i < s->ninput; i++)
        if (s->input[i].type.id <= SQL_NULL || s->input[i].type.id >= SQL_TYPE_COUNT)
            return spate_error_set(err, SPATE_EINVAL, "malformed SQL rank: column %d", i);
    if (s->norder < 1 || s->norder > TYPES_ROW_MAX_FIELDS)
        return spate_error_set(err, SPATE_EINVAL, "malformed SQL rank: its ORDER BY");
    for (int i = 0; i < s->norder; i++)
        if (s->order[i].col < 1 || s->order[i].col >= s->ninput)
            return spate_error_set(err, SPATE_EINVAL, "malformed SQL rank: ORDER BY column %d", i);
    if (s->limit < 1 || s->limit > SQL_RANK_LIMIT_MAX)
        return spate_error_set(err, SPATE_EINVAL, "malformed SQL rank: its limit %" PRId64,
                               s->limit);
    if (s->window_end < -1 || s->window_end == 0 || s->window_end >= s->ninput ||
        (s->window_end > 0 && s->input[s->window_end].type.id != SQL_TIMESTAMP))
        return spate_error_set(err, SPATE_EINVAL, "malformed SQL rank: its window");
    if (s->function > SQL_RANK_DENSE_RANK)
        return spate_error_set(err, SPATE_EINVAL, "malformed SQL rank: its function");
    return 0;
}

int
sql_rank_spec_decode(const uint8_t *bytes, size_t len, struct sql_rank_spec **out, spate_error *err)
{
    Sqlplan__Rank *r = sqlplan__rank__unpack(NULL, len, bytes);
    struct sql_rank_spec *s;
    int rc;

    *out = NULL;
    if (r == NULL)
        return spate_error_set(err, SPATE_EINVAL, "malformed SQL rank: no Rank message");
    if (r->n_input > TYPES_ROW_MAX_FIELDS || r->n_order > TYPES_ROW_MAX_FIELDS) {
        sqlplan__rank__free_unpacked(r, NULL);
        return spate_error_set(err, SPATE_EINVAL, "malformed SQL rank: too many columns");
    }
    s = xcalloc(1, sizeof *s);
    s->ninput = (int)r->n_input;
    s->input = xcalloc(r->n_input + 1, sizeof *s->input);
    for (size_t i = 0; i < r->n_input; i++)
        sql_column_decode(r->input[i], &s->input[i]);
    s->npart = r->npart;
    s->nrow = r->nrow;
    s->norder = (int)r->n_order;
    s->order = xcalloc(r->n_order + 1, sizeof *s->order);
    for (size_t i = 0; i < r->n_order; i++)
        s->order[i] = (struct sql_rank_order){ r->order[i]->col, r->order[i]->desc,
                                               r->order[i]->nulls_first };
    s->limit = r->limit;
    s->emit_rank = r->emit_rank;
    s->last_wins_ties = r->last_wins_ties;
    s->window_end = r->window_end - 1;
    s->function = r->function >= 0 && r->function <= SQL_RANK_DENSE_RANK
                      ? (enum sql_rank_function)r->function
                      : SQL_RANK_DENSE_RANK + 1;
    sqlplan__rank__free_unpacked(r, NULL);
    if ((rc = check_spec(s, err)) != 0) {
        sql_rank_spec_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

struct sql_column *
sql_rank_output(const struct sql_rank_spec *s, const char *rank_name, int *n)
{
    struct sql_column *out = xcalloc((size_t)s->nrow + 3, sizeof *out);
    int k = 0;

    out[k].name = xstrdup("$kind");
    out[k++].type = (struct sql_type){ SQL_INT, 0, 0, false };
    for (int i = 0; i < s->nrow; i++) {
        out[k].name = xstrdup(s->input[1 + s->npart + i].name);
        out[k++].type = s->input[1 + s->npart + i].type;
    }
    if (s->emit_rank) {
        out[k].name = xstrdup(rank_name ? rank_name : "rn");
        out[k++].type = (struct sql_type){ SQL_BIGINT, 0, 0, false };
    }
    *n = k;
    return out;
}

/* ---- the operator ---- */

#define RANK_STATE      "sql-rank"
#define RANK_LAST_STATE "sql-rank-last"

struct rank_impl {
    struct sql_rank_spec *s;
    struct sql_type *in_types, *out_types;
    int nout;
    const struct spate_type *in_type, *out_type;
    void *stored; /* a row read from or written to the state */
    void *out_rec;
    struct sql_value out[TYPES_ROW_MAX_FIELDS];
    /* The partition's rows, in rank order, limit of them at most: ninput
     * values each (room for rows_cap rows), strings copied into
     * `strings`. */
    struct sql_value *rows;
    int nrows, rows_cap;
    char *strings;
    size_t strings_used, strings_cap;
    struct state_decl decls[2];
    spate_state *st;
    /* The last of a full top (absent while the top is not full): a row
     * that does not rank before it is turned away without the top's rows
     * read. */
    spate_state *last_st;
    uint8_t key_scratch[256];
    uint64_t late; /* rows dropped: their window was already emitted */
    /* Every row of a partition kept, in rank order, not only its top
     * (Flink's RetractableTopNFunction): for an updating input (its $kind
     * column, the last: kind_col), whose -U/-D may take a row of the top
     * away, and for RANK() and DENSE_RANK(), whose top holds every row tied
     * at its last rank. Unwindowed, a row's changes are the difference of
     * the top before it (prev, its numbers prev_rank) and after (ranks). */
    bool full;
    int kind_col;
    struct sql_value *prev;
    int64_t *prev_rank, *ranks;
    bool *kept;
    int full_cap;
};

static void
free_impl(struct rank_impl *r)
{
    sql_rank_spec_free(r->s);
    free(r->in_types);
    free(r->out_types);
    free(r->stored);
    free(r->out_rec);
    free(r->rows);
    free(r->strings);
    free(r->prev);
    free(r->prev_rank);
    free(r->ranks);
    free(r->kept);
    free(r);
}

static int
rank_open(struct stream_operator *op, spate_error *err)
{
    const struct sql_config *c = op->conf;
    const struct operator_settings *set = op->config;
    const char *name = set->name ? set->name : "Rank";
    struct rank_impl *r = xcalloc(1, sizeof *r);
    struct sql_column *out;
    bool ok;
    int rc;

    if ((rc = sql_rank_spec_decode(c->program, c->program_len, &r->s, err)) != 0) {
        free_impl(r);
        return spate_error_wrap(err, "operator '%s'", name);
    }
    out = sql_rank_output(r->s, NULL, &r->nout);
    ok = set->in_type != NULL && set->in_type->nullable &&
         set->in_type->nfields == r->s->ninput + 1 && set->out_type->nullable &&
         set->out_type->nfields == r->nout + 1 && set->key.kind == KEY_FIELD && set->key.field == 1;
    for (int i = 0; ok && i < r->s->ninput; i++)
        ok = set->in_type->fields[i + 1] == sql_type_spate(r->s->input[i].type.id);
    for (int i = 0; ok && i < r->nout; i++)
        ok = set->out_type->fields[i + 1] == sql_type_spate(out[i].type.id);
    r->in_types = xcalloc((size_t)r->s->ninput + 1, sizeof *r->in_types);
    for (int i = 0; i < r->s->ninput; i++)
        r->in_types[i] = r->s->input[i].type;
    r->out_types = xcalloc((size_t)r->nout + 1, sizeof *r->out_types);
    for (int i = 0; i < r->nout; i++) {
        r->out_types[i] = out[i].type;
        free(out[i].name);
    }
    free(out);
    if (!ok) {
        free_impl(r);
        return spate_error_set(err, SPATE_EINVAL,
                               "operator '%s': its record types or key do not match its rank",
                               name);
    }
    r->kind_col = !strcmp(r->s->input[r->s->ninput - 1].name, "$kind") ? r->s->ninput - 1 : -1;
    r->full = r->kind_col >= 0 || r->s->function != SQL_RANK_ROW_NUMBER;
    r->in_type = set->in_type;
    r->out_type = set->out_type;
    r->stored = operator_out_storage(set->in_type);
    r->out_rec = operator_out_storage(set->out_type);
    r->decls[0] = (struct state_decl){ RANK_STATE, STATE_LIST, set->in_type, NULL,       NULL,
                                       { 0 },      0,          false,        SCOPE_KEYED };
    r->decls[1] = (struct state_decl){ RANK_LAST_STATE, STATE_VALUE, set->in_type, NULL,       NULL,
                                       { 0 },           0,           false,        SCOPE_KEYED };
    op->impl = r;
    if ((rc = operator_backend_init(op, r->decls, 2, err)) != 0)
        return rc;
    r->st = op->backend->ops->state(op->backend, RANK_STATE);
    r->last_st = op->backend->ops->state(op->backend, RANK_LAST_STATE);
    return 0;
}

static void
rank_close(struct stream_operator *op)
{
    struct rank_impl *r = op->impl;

    if (r == NULL)
        return;
    if (r->late > 0)
        SPATE_LOG_INFO("sql", "task=%s dropped %" PRIu64 " late rows", op->ctx.task_name, r->late);
    operator_backend_free(op);
    free_impl(r);
    op->impl = NULL;
}

/* n bytes of the arena, which rows_load grew to hold them. */
static char *
strings_alloc(struct rank_impl *r, size_t n)
{
    r->strings_used += n;
    return r->strings + r->strings_used - n;
}

/* Room for n rows. */
static void
rows_reserve(struct rank_impl *r, int n)
{
    if (n <= r->rows_cap)
        return;
    r->rows_cap = MAX(n, 2 * r->rows_cap);
    r->rows = xrealloc(r->rows, (size_t)r->rows_cap * (size_t)r->s->ninput * sizeof *r->rows);
}

/* Copies the strings of row v (ninput values) into the arena. */
static void
strings_copy(struct rank_impl *r, struct sql_value *v)
{
    for (int i = 0; i < r->s->ninput; i++) {
        char *copy;

        if (v[i].null || sql_type_phys(r->in_types[i].id) != SQL_PHYS_STRING || v[i].s.len == 0)
            continue;
        copy = strings_alloc(r, v[i].s.len);
        memcpy(copy, v[i].s.p, v[i].s.len);
        v[i].s.p = copy;
    }
}

/* The bytes of the strings of row v. */
static size_t
strings_size(const struct rank_impl *r, const struct sql_value *v)
{
    size_t n = 0;

    for (int i = 0; i < r->s->ninput; i++)
        if (!v[i].null && sql_type_phys(r->in_types[i].id) == SQL_PHYS_STRING)
            n += v[i].s.len;
    return n;
}

static struct sql_value *
row_at(struct rank_impl *r, int i)
{
    return &r->rows[(size_t)i * (size_t)r->s->ninput];
}

/* The current key's (and window's) rows into r->rows, in rank order. The
 * arena is made room for them first: their strings are copied while the
 * state's iterator may reuse the memory they were read into. */
static void
rows_load(struct rank_impl *r)
{
    spate_iter it;

    r->nrows = 0;
    r->strings_used = 0;
    spate_list_iter(r->st, &it);
    while ((r->full || r->nrows < r->s->limit) && spate_list_next(&it, r->stored)) {
        struct sql_value *v;
        size_t need;

        rows_reserve(r, r->nrows + 1);
        v = row_at(r, r->nrows++);
        sql_row_read(r->in_type, r->stored, r->in_types, r->s->ninput, v);
        need = strings_size(r, v);
        if (r->strings_used + need > r->strings_cap) {
            /* grow, and read the partition again into the larger arena */
            r->strings_cap = MAX(2 * r->strings_cap, r->strings_used + 2 * need + 256);
            r->strings = xrealloc(r->strings, r->strings_cap);
            rows_load(r);
            return;
        }
        strings_copy(r, v);
    }
}

static void
rows_store(struct rank_impl *r)
{
    spate_state_clear(r->st);
    for (int i = 0; i < r->nrows; i++) {
        sql_row_write(r->in_type, r->stored, r->in_types, r->s->ninput, row_at(r, i));
        spate_list_add(r->st, r->stored);
    }
}

/* Orders row x before (< 0) or after (> 0) row y by the ORDER BY, NULL
 * first or last as asked. */
static int
rank_cmp(const struct rank_impl *r, const struct sql_value *x, const struct sql_value *y)
{
    for (int i = 0; i < r->s->norder; i++) {
        const struct sql_rank_order *o = &r->s->order[i];
        const struct sql_value *a = &x[o->col], *b = &y[o->col];
        int c;

        if (a->null || b->null) {
            if (a->null == b->null)
                continue;
            return a->null == o->nulls_first ? -1 : 1;
        }
        c = sql_value_cmp(&r->in_types[o->col], a, b);
        if (c != 0)
            return o->desc ? -c : c;
    }
    return 0;
}

/* Emits row v (its row columns) as kind, with rank rn. */
static void
emit(struct stream_operator *op, struct rank_impl *r, enum sql_row_kind kind,
     const struct sql_value *v, int64_t rn, int64_t timestamp)
{
    struct record_meta m = { timestamp, 0, false };
    int k = 0;

    r->out[k++] = (struct sql_value){ .i = kind, .null = false };
    for (int i = 0; i < r->s->nrow; i++)
        r->out[k++] = v[1 + r->s->npart + i];
    if (r->s->emit_rank)
        r->out[k++] = (struct sql_value){ .i = rn, .null = false };
    sql_row_write(r->out_type, r->out_rec, r->out_types, r->nout, r->out);
    operator_emit(op, r->out_rec, &m);
}

static void
set_ns(struct stream_operator *op, const int64_t *end)
{
    op->ctx.keyctx.ns = end;
    op->ctx.keyctx.ns_len = end ? sizeof *end : 0;
}

/* Where row in goes among the partition's rows. */
static int
position_of(const struct rank_impl *r, const struct sql_value *in)
{
    int p = 0;

    while (p < r->nrows) {
        int c = rank_cmp(r, in, &r->rows[(size_t)p * (size_t)r->s->ninput]);

        if (c < 0 || (c == 0 && r->s->last_wins_ties))
            break;
        p++;
    }
    return p;
}

/* Whether row in ranks after the last row of the current key's full top
 * (an equal one too, unless it wins ties). */
static bool
below_full_top(struct rank_impl *r, const struct sql_value *in)
{
    struct sql_value last[TYPES_ROW_MAX_FIELDS];
    int c;

    if (!spate_value_get(r->last_st, r->stored))
        return false;
    sql_row_read(r->in_type, r->stored, r->in_types, r->s->ninput, last);
    c = rank_cmp(r, in, last);
    return c > 0 || (c == 0 && !r->s->last_wins_ties);
}

/* ---- every row kept: RANK, DENSE_RANK, an updating input ---- */

/* Room for n rows in the top's copies. */
static void
full_reserve(struct rank_impl *r, int n)
{
    if (n <= r->full_cap)
        return;
    r->full_cap = MAX(n, 2 * r->full_cap);
    r->prev = xrealloc(r->prev, (size_t)r->full_cap * (size_t)r->s->ninput * sizeof *r->prev);
    r->prev_rank = xrealloc(r->prev_rank, (size_t)r->full_cap * sizeof *r->prev_rank);
    r->ranks = xrealloc(r->ranks, (size_t)r->full_cap * sizeof *r->ranks);
    r->kept = xrealloc(r->kept, (size_t)r->full_cap * sizeof *r->kept);
}

/* The numbers of the partition's rows, in rank order, into rank (room
 * for them reserved); how many of them are in the top (numbered limit at
 * most). */
static int
full_number(struct rank_impl *r, int64_t *rank)
{
    const struct sql_rank_spec *s = r->s;
    int n;

    for (n = 0; n < r->nrows; n++) {
        if (n == 0)
            rank[n] = 1;
        else if (s->function != SQL_RANK_ROW_NUMBER &&
                 rank_cmp(r, row_at(r, n), row_at(r, n - 1)) == 0)
            rank[n] = rank[n - 1]; /* tied */
        else
            rank[n] = s->function == SQL_RANK_DENSE_RANK ? rank[n - 1] + 1 : n + 1;
        if (rank[n] > s->limit)
            break;
    }
    return n;
}

/* Whether rows x and y are the same row (their kinds aside). */
static bool
same_row(const struct rank_impl *r, const struct sql_value *x, const struct sql_value *y)
{
    for (int i = 0; i < r->s->ninput; i++)
        if (i != r->kind_col && !sql_value_same(&r->in_types[i], &x[i], &y[i]))
            return false;
    return true;
}

/* The changes from the top that was (nprev rows of prev) to the one that
 * is (nnow rows): with rn, each position's row or number that changed
 * (-U/+U), those that came (+I) or went (-D); without it, the rows that
 * went (-D) and came (+I). */
static void
full_emit(struct stream_operator *op, struct rank_impl *r, int nprev, int nnow, int64_t ts)
{
    const size_t w = (size_t)r->s->ninput;

    if (r->s->emit_rank) {
        for (int i = 0; i < MAX(nprev, nnow); i++) {
            const struct sql_value *was = i < nprev ? &r->prev[i * w] : NULL;
            const struct sql_value *is = i < nnow ? row_at(r, i) : NULL;

            if (was && is && r->prev_rank[i] == r->ranks[i] && same_row(r, was, is))
                continue;
            if (was)
                emit(op, r, is ? SQL_UPDATE_BEFORE : SQL_DELETE, was, r->prev_rank[i], ts);
            if (is)
                emit(op, r, was ? SQL_UPDATE_AFTER : SQL_INSERT, is, r->ranks[i], ts);
        }
        return;
    }
    memset(r->kept, 0, (size_t)nnow * sizeof *r->kept);
    for (int i = 0; i < nprev; i++) {
        int j = 0;

        while (j < nnow && (r->kept[j] || !same_row(r, &r->prev[i * w], row_at(r, j))))
            j++;
        if (j < nnow)
            r->kept[j] = true;
        else
            emit(op, r, SQL_DELETE, &r->prev[i * w], 0, ts);
    }
    for (int j = 0; j < nnow; j++)
        if (!r->kept[j])
            emit(op, r, SQL_INSERT, row_at(r, j), 0, ts);
}

/* Row in into (or, a -U/-D, out of) the current key's rows; unwindowed,
 * the changes to its top emitted; windowed (end), a new window's timer. */
static void
full_process(struct stream_operator *op, struct rank_impl *r, const struct sql_value *in,
             int64_t ts, int64_t end)
{
    const struct sql_rank_spec *s = r->s;
    const size_t w = (size_t)s->ninput;
    bool retract = r->kind_col >= 0 &&
                   (in[r->kind_col].i == SQL_UPDATE_BEFORE || in[r->kind_col].i == SQL_DELETE);
    int nprev = 0, p;

    rows_load(r);
    full_reserve(r, r->nrows + 1);
    if (s->window_end > 0 && r->nrows == 0 && !retract)
        op->backend->ops->register_timer(op->backend, true, end - 1);
    if (s->window_end < 0) {
        nprev = full_number(r, r->prev_rank);
        if (nprev > 0) /* (rows is NULL before the first row) */
            memcpy(r->prev, r->rows, (size_t)nprev * w * sizeof *in);
    }
    if (retract) {
        for (p = 0; p < r->nrows && !same_row(r, row_at(r, p), in); p++)
            ;
        if (p == r->nrows)
            return; /* a retraction of a row not there */
        memmove(row_at(r, p), row_at(r, p + 1), (size_t)(r->nrows - p - 1) * w * sizeof *in);
        r->nrows--;
    } else {
        p = position_of(r, in);
        rows_reserve(r, r->nrows + 1);
        memmove(row_at(r, p + 1), row_at(r, p), (size_t)(r->nrows - p) * w * sizeof *in);
        memcpy(row_at(r, p), in, w * sizeof *in);
        r->nrows++;
    }
    rows_store(r);
    if (s->window_end < 0)
        full_emit(op, r, nprev, full_number(r, r->ranks), ts);
}

/* Unwindowed: the changes a row that enters the top at p makes, rows[]
 * still as before it. */
static void
emit_changes(struct stream_operator *op, struct rank_impl *r, const struct sql_value *in, int p,
             int64_t ts)
{
    if (!r->s->emit_rank) {
        emit(op, r, SQL_INSERT, in, 0, ts);
        if (r->nrows == r->s->limit)
            emit(op, r, SQL_DELETE, row_at(r, r->nrows - 1), 0, ts);
        return;
    }
    /* each rank from p down takes the row above it (the new row at p) */
    for (int k = p; k <= r->nrows && k < r->s->limit; k++) {
        const struct sql_value *now = k == p ? in : row_at(r, k - 1);

        if (k < r->nrows) {
            emit(op, r, SQL_UPDATE_BEFORE, row_at(r, k), k + 1, ts);
            emit(op, r, SQL_UPDATE_AFTER, now, k + 1, ts);
        } else {
            emit(op, r, SQL_INSERT, now, k + 1, ts);
        }
    }
}

static void
rank_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    struct rank_impl *r = op->impl;
    const struct sql_rank_spec *s = r->s;
    struct sql_value in[TYPES_ROW_MAX_FIELDS];
    int64_t end = 0;
    int p;

    sql_row_read(op->config->in_type, rec, r->in_types, s->ninput, in);
    sql_row_set_key(op, rec, meta, r->key_scratch, sizeof r->key_scratch);
    if (s->window_end > 0) {
        if (in[s->window_end].null || in[s->window_end].i - 1 <= op->current_watermark) {
            r->late++;
            return;
        }
        end = in[s->window_end].i;
        set_ns(op, &end);
    }
    if (r->full) {
        full_process(op, r, in, meta->timestamp, end);
        set_ns(op, NULL);
        return;
    }
    if (below_full_top(r, in)) {
        set_ns(op, NULL);
        return; /* never in the top, as no row leaves above it */
    }
    rows_load(r);
    p = position_of(r, in);
    if (p >= s->limit) { /* (a full top's last row, when not kept, is read here) */
        set_ns(op, NULL);
        return;
    }
    if (s->window_end > 0 && r->nrows == 0)
        op->backend->ops->register_timer(op->backend, true, end - 1);
    if (s->window_end < 0)
        emit_changes(op, r, in, p, meta->timestamp);
    /* The new row at p, the last one out when the top was full. */
    if (r->nrows == s->limit)
        r->nrows--;
    rows_reserve(r, r->nrows + 1);
    memmove(row_at(r, p + 1), row_at(r, p),
            (size_t)(r->nrows - p) * (size_t)s->ninput * sizeof *in);
    memcpy(row_at(r, p), in, (size_t)s->ninput * sizeof *in);
    r->nrows++;
    rows_store(r);
    if (r->nrows == s->limit) {
        sql_row_write(r->in_type, r->stored, r->in_types, s->ninput, row_at(r, r->nrows - 1));
        spate_value_update(r->last_st, r->stored);
    }
    set_ns(op, NULL);
}

/* A window's end passed: its top rows, then its state goes. */
static void
rank_fire(void *owner, const struct timer *t)
{
    struct stream_operator *op = owner;
    struct rank_impl *r = op->impl;
    int64_t end;

    if (t->ns_len != sizeof end || !t->event_time)
        return;
    memcpy(&end, t->data + t->key_len, sizeof end);
    set_ns(op, &end);
    rows_load(r);
    if (r->full) {
        int n;

        full_reserve(r, r->nrows);
        n = full_number(r, r->ranks);

        for (int i = 0; i < n; i++)
            emit(op, r, SQL_INSERT, row_at(r, i), r->ranks[i], end - 1);
    } else {
        for (int i = 0; i < r->nrows; i++)
            emit(op, r, SQL_INSERT, row_at(r, i), i + 1, end - 1);
    }
    spate_state_clear(r->st);
    spate_state_clear(r->last_st);
    set_ns(op, NULL);
}

static void
rank_watermark(struct stream_operator *op, int64_t watermark)
{
    op->current_watermark = watermark;
    if (((struct rank_impl *)op->impl)->s->window_end > 0)
        op->backend->ops->advance(op->backend, true, watermark, rank_fire);
    op->out->emit_watermark(op->out, watermark);
}

const struct operator_vtable sql_rank_vtable = {
    .state = OPERATOR_KEYED_STATE,
    .open = rank_open,
    .process = rank_process,
    .close = rank_close,
    .process_watermark = rank_watermark,
};
