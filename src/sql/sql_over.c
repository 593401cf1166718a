/* OP_SQL_OVER (sql_over.h): aggregates over a frame of each row's
 * partition, rows keyed by their $key column (the partition), ordered by
 * event time. A row waits, in a ListState in the namespace of its time,
 * until the watermark passes that time (a timer); then the rows of that
 * time, in their order of arrival, join the partition's history (a
 * ListState) and each comes out with the aggregates of its frame: ROWS,
 * itself and the n rows before it; RANGE, the rows whose time is at most
 * the interval before its own, its peers of the same time included. The
 * history keeps what later frames need. A row at or below the watermark
 * when it comes is late and dropped (Flink's RowTimeRowsBoundedPreceding
 * and RowTimeRangeBoundedPreceding functions). Task thread only. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/key_group.h"
#include "core/log.h"
#include "core/util.h"
#include "proto/sql.pb-c.h"
#include "sql/sql_operators.h"
#include "sql/sql_over.h"
#include "sql/sql_row.h"
#include "streaming/keys.h"
#include "streaming/operator.h"
#include "streaming/operator_config.h"
#include "streaming/types.h"

/* ---- the spec ---- */

void
sql_over_spec_free(struct sql_over_spec *s)
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

/* The spec's columns and calls as an unwindowed aggregate's (borrowed). */
static struct sql_agg_spec
as_aggregate(const struct sql_over_spec *s)
{
    return (struct sql_agg_spec){ s->input,        s->ninput, s->npart, s->calls, s->ncalls,
                                  SQL_WINDOW_NONE, 0,         0,        0 };
}

void
sql_over_spec_encode(const struct sql_over_spec *s, uint8_t **out, size_t *len)
{
    Sqlplan__Over o = SQLPLAN__OVER__INIT;
    struct sql_agg_spec agg = as_aggregate(s);
    uint8_t *bytes;
    size_t n;

    sql_agg_spec_encode(&agg, &bytes, &n);
    o.aggregate = sqlplan__aggregate__unpack(NULL, n, bytes);
    o.nrow = s->nrow;
    o.frame = s->frame;
    o.preceding = s->preceding;
    o.time = s->time;
    *len = sqlplan__over__get_packed_size(&o);
    *out = xmalloc(*len + 1);
    sqlplan__over__pack(&o, *out);
    sqlplan__aggregate__free_unpacked(o.aggregate, NULL);
    free(bytes);
}

/* Beyond the aggregate's checks: the row in range, no DISTINCT or FILTER,
 * the time a TIMESTAMP, a frame. */
static int
check_spec(const struct sql_over_spec *s, spate_error *err)
{
    if (s->nrow < 0 || 1 + s->npart + s->nrow > s->ninput || s->ncalls < 1 ||
        s->nrow + s->ncalls + 1 > TYPES_ROW_MAX_FIELDS)
        return spate_error_set(err, SPATE_EINVAL, "malformed SQL OVER: its columns");
    for (int i = 0; i < s->ncalls; i++)
        if (s->calls[i].kind == SQL_AGG_COUNT_DISTINCT || s->calls[i].filter >= 0)
            return spate_error_set(err, SPATE_EINVAL, "malformed SQL OVER: call %d", i);
    if ((s->frame != SQL_OVER_ROWS && s->frame != SQL_OVER_RANGE) || s->preceding < -1 ||
        s->time < 1 || s->time >= s->ninput || s->input[s->time].type.id != SQL_TIMESTAMP)
        return spate_error_set(err, SPATE_EINVAL, "malformed SQL OVER: its frame");
    return 0;
}

int
sql_over_spec_decode(const uint8_t *bytes, size_t len, struct sql_over_spec **out, spate_error *err)
{
    Sqlplan__Over *o = sqlplan__over__unpack(NULL, len, bytes);
    struct sql_agg_spec *agg = NULL;
    struct sql_over_spec *s;
    uint8_t *abytes;
    size_t alen;
    int rc;

    *out = NULL;
    if (o == NULL || o->aggregate == NULL) {
        sqlplan__over__free_unpacked(o, NULL);
        return spate_error_set(err, SPATE_EINVAL, "malformed SQL OVER: no Over message");
    }
    alen = sqlplan__aggregate__get_packed_size(o->aggregate);
    abytes = xmalloc(alen + 1);
    sqlplan__aggregate__pack(o->aggregate, abytes);
    rc = sql_agg_spec_decode(abytes, alen, &agg, err);
    free(abytes);
    if (rc == 0 && agg->window != SQL_WINDOW_NONE)
        rc = spate_error_set(err, SPATE_EINVAL, "malformed SQL OVER: a window");
    if (rc != 0) {
        sql_agg_spec_free(agg);
        sqlplan__over__free_unpacked(o, NULL);
        return spate_error_wrap(err, "SQL OVER");
    }
    s = xcalloc(1, sizeof *s);
    s->input = agg->input; /* taken */
    s->ninput = agg->ninput;
    s->npart = agg->ngroup;
    s->calls = agg->calls;
    s->ncalls = agg->ncalls;
    free(agg);
    s->nrow = o->nrow;
    s->frame = (enum sql_over_frame)o->frame;
    s->preceding = o->preceding;
    s->time = o->time;
    sqlplan__over__free_unpacked(o, NULL);
    if ((rc = check_spec(s, err)) != 0) {
        sql_over_spec_free(s);
        return rc;
    }
    *out = s;
    return 0;
}

struct sql_column *
sql_over_output(const struct sql_over_spec *s, int *n)
{
    struct sql_column *out = xcalloc((size_t)s->nrow + (size_t)s->ncalls + 1, sizeof *out);
    int k = 0;

    for (int i = 0; i < s->nrow; i++) {
        out[k].name = xstrdup(s->input[1 + s->npart + i].name);
        out[k++].type = s->input[1 + s->npart + i].type;
    }
    for (int i = 0; i < s->ncalls; i++) {
        out[k].name = xstrdup(s->calls[i].result.name);
        out[k++].type = s->calls[i].result.type;
    }
    *n = k;
    return out;
}

/* ---- the operator ---- */

#define OVER_PENDING_STATE "sql-over-pending"
#define OVER_ROWS_STATE    "sql-over-rows"

/* Rows read from a list state, their strings copied into an arena of
 * their own (the state may reuse the memory they were read into). */
struct row_set {
    struct sql_value *v; /* n rows of ninput values */
    int64_t *ts;         /* each row's time */
    size_t n, cap;
    char *strings;
    size_t strings_used, strings_cap;
};

struct over_impl {
    struct sql_over_spec *s;
    struct sql_type *in_types, *out_types;
    int nout;
    const struct spate_type *in_type, *out_type;
    void *stored, *out_rec;
    struct sql_value out[TYPES_ROW_MAX_FIELDS];
    struct row_set pending, history;
    struct state_decl decls[2];
    spate_state *pending_st, *rows_st;
    uint8_t key_scratch[256];
    uint64_t late;
};

static void
row_set_free(struct row_set *r)
{
    free(r->v);
    free(r->ts);
    free(r->strings);
}

static void
free_impl(struct over_impl *o)
{
    sql_over_spec_free(o->s);
    free(o->in_types);
    free(o->out_types);
    free(o->stored);
    free(o->out_rec);
    row_set_free(&o->pending);
    row_set_free(&o->history);
    free(o);
}

static int
over_open(struct stream_operator *op, spate_error *err)
{
    const struct sql_config *c = op->conf;
    const struct operator_settings *set = op->config;
    const char *name = set->name ? set->name : "OverAggregate";
    struct over_impl *o = xcalloc(1, sizeof *o);
    struct sql_column *out;
    bool ok;
    int rc;

    if ((rc = sql_over_spec_decode(c->program, c->program_len, &o->s, err)) != 0) {
        free_impl(o);
        return spate_error_wrap(err, "operator '%s'", name);
    }
    out = sql_over_output(o->s, &o->nout);
    ok = set->in_type != NULL && set->in_type->nullable &&
         set->in_type->nfields == o->s->ninput + 1 && set->out_type->nullable &&
         set->out_type->nfields == o->nout + 1 && set->key.kind == KEY_FIELD && set->key.field == 1;
    for (int i = 0; ok && i < o->s->ninput; i++)
        ok = set->in_type->fields[i + 1] == sql_type_spate(o->s->input[i].type.id);
    for (int i = 0; ok && i < o->nout; i++)
        ok = set->out_type->fields[i + 1] == sql_type_spate(out[i].type.id);
    o->in_types = xcalloc((size_t)o->s->ninput + 1, sizeof *o->in_types);
    for (int i = 0; i < o->s->ninput; i++)
        o->in_types[i] = o->s->input[i].type;
    o->out_types = xcalloc((size_t)o->nout + 1, sizeof *o->out_types);
    for (int i = 0; i < o->nout; i++) {
        o->out_types[i] = out[i].type;
        free(out[i].name);
    }
    free(out);
    if (!ok) {
        free_impl(o);
        return spate_error_set(err, SPATE_EINVAL,
                               "operator '%s': its record types or key do not match its OVER",
                               name);
    }
    o->in_type = set->in_type;
    o->out_type = set->out_type;
    o->stored = operator_out_storage(set->in_type);
    o->out_rec = operator_out_storage(set->out_type);
    o->decls[0] = (struct state_decl){
        OVER_PENDING_STATE, STATE_LIST, set->in_type, NULL, NULL, { 0 }, 0, false, SCOPE_KEYED
    };
    o->decls[1] = (struct state_decl){ OVER_ROWS_STATE, STATE_LIST, set->in_type, NULL,       NULL,
                                       { 0 },           0,          false,        SCOPE_KEYED };
    op->impl = o;
    if ((rc = operator_backend_init(op, o->decls, 2, err)) != 0)
        return rc;
    o->pending_st = op->backend->ops->state(op->backend, OVER_PENDING_STATE);
    o->rows_st = op->backend->ops->state(op->backend, OVER_ROWS_STATE);
    return 0;
}

static void
over_close(struct stream_operator *op)
{
    struct over_impl *o = op->impl;

    if (o == NULL)
        return;
    if (o->late > 0)
        SPATE_LOG_INFO("sql", "task=%s dropped %" PRIu64 " late rows", op->ctx.task_name, o->late);
    operator_backend_free(op);
    free_impl(o);
    op->impl = NULL;
}

static struct sql_value *
row_of(const struct over_impl *o, const struct row_set *r, size_t i)
{
    return &r->v[i * (size_t)o->s->ninput];
}

/* Appends row v (strings copied) of time ts to r. */
static void
row_set_add(const struct over_impl *o, struct row_set *r, const struct sql_value *v, int64_t ts)
{
    struct sql_value *to;
    size_t need = 0;

    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 16;
        r->v = xrealloc(r->v, r->cap * (size_t)o->s->ninput * sizeof *r->v);
        r->ts = xrealloc(r->ts, r->cap * sizeof *r->ts);
    }
    for (int i = 0; i < o->s->ninput; i++)
        if (!v[i].null && sql_type_phys(o->in_types[i].id) == SQL_PHYS_STRING)
            need += v[i].s.len;
    if (r->strings_used + need > r->strings_cap) {
        /* a larger arena, the rows' strings moved into it */
        size_t cap = MAX(2 * r->strings_cap, r->strings_used + need + 256);
        char *moved = xmalloc(cap);

        for (size_t k = 0; k < r->n; k++)
            for (int i = 0; i < o->s->ninput; i++) {
                struct sql_value *x = &row_of(o, r, k)[i];

                if (!x->null && sql_type_phys(o->in_types[i].id) == SQL_PHYS_STRING && x->s.len > 0)
                    x->s.p = moved + (x->s.p - r->strings);
            }
        if (r->strings_used)
            memcpy(moved, r->strings, r->strings_used);
        free(r->strings);
        r->strings = moved;
        r->strings_cap = cap;
    }
    to = row_of(o, r, r->n);
    memcpy(to, v, (size_t)o->s->ninput * sizeof *v);
    for (int i = 0; i < o->s->ninput; i++)
        if (!to[i].null && sql_type_phys(o->in_types[i].id) == SQL_PHYS_STRING && to[i].s.len > 0) {
            memcpy(r->strings + r->strings_used, to[i].s.p, to[i].s.len);
            to[i].s.p = r->strings + r->strings_used;
            r->strings_used += to[i].s.len;
        }
    r->ts[r->n++] = ts;
}

/* The list state st of the current key (and namespace) into r. */
static void
row_set_load(struct over_impl *o, struct row_set *r, spate_state *st)
{
    spate_iter it;
    struct sql_value v[TYPES_ROW_MAX_FIELDS];

    r->n = 0;
    r->strings_used = 0;
    spate_list_iter(st, &it);
    while (spate_list_next(&it, o->stored)) {
        sql_row_read(o->in_type, o->stored, o->in_types, o->s->ninput, v);
        row_set_add(o, r, v, v[o->s->time].i);
    }
}

static void
set_ns(struct stream_operator *op, const int64_t *ts)
{
    op->ctx.keyctx.ns = ts;
    op->ctx.keyctx.ns_len = ts ? sizeof *ts : 0;
}

static void
over_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    struct over_impl *o = op->impl;
    int64_t ts = meta->timestamp;
    spate_iter it;

    /* (the record's timestamp is its time column's value, NULL as none) */
    if (ts == RECORD_NO_TIMESTAMP || ts <= op->current_watermark) {
        o->late++; /* its time passed (or it has none): Flink drops it */
        return;
    }
    sql_row_set_key(op, rec, meta, o->key_scratch, sizeof o->key_scratch);
    set_ns(op, &ts);
    spate_list_iter(o->pending_st, &it);
    if (!spate_list_next(&it, o->stored))
        op->backend->ops->register_timer(op->backend, true, ts);
    spate_list_add(o->pending_st, rec);
    set_ns(op, NULL);
}

/* The aggregate of call c over rows [lo, hi) of the history into *r. */
static void
aggregate(const struct over_impl *o, const struct sql_agg_call *c, size_t lo, size_t hi,
          struct sql_value *r)
{
    const struct sql_type *t = c->arg > 0 ? &o->in_types[c->arg] : NULL;
    int64_t count = 0;
    struct sql_value acc = { .i = 0, .null = true };

    for (size_t k = lo; k < hi; k++) {
        const struct sql_value *v = c->arg > 0 ? &row_of(o, &o->history, k)[c->arg] : NULL;

        if (v != NULL && v->null)
            continue;
        count++;
        if (c->kind == SQL_AGG_SUM || c->kind == SQL_AGG_AVG) {
            if (acc.null)
                acc = *v;
            else if (sql_type_phys(t->id) == SQL_PHYS_DOUBLE)
                acc.f += v->f;
            else
                acc.i = (int64_t)((uint64_t)acc.i + (uint64_t)v->i);
        } else if (c->kind == SQL_AGG_MIN || c->kind == SQL_AGG_MAX) {
            int cmp = acc.null ? 0 : sql_value_cmp(t, v, &acc);

            if (acc.null || (c->kind == SQL_AGG_MAX ? cmp > 0 : cmp < 0))
                acc = *v;
        }
    }
    if (c->kind == SQL_AGG_COUNT_STAR || c->kind == SQL_AGG_COUNT) {
        *r = (struct sql_value){ .i = count, .null = false };
        return;
    }
    *r = acc;
    if (c->kind == SQL_AGG_AVG && !acc.null) {
        if (t->id == SQL_DOUBLE)
            r->f = acc.f / (double)count;
        else if (t->id == SQL_DECIMAL)
            r->f = (double)acc.i / (double)sql_pow10(t->scale) / (double)count;
        else
            r->i = acc.i / count; /* Flink's AVG of integers is an integer */
    }
    if (!r->null && c->result.type.id == SQL_INT)
        r->i = (int32_t)(uint32_t)(uint64_t)r->i; /* INT wraps as Java's int */
}

/* Emits history row k with the aggregates of rows [lo, hi). */
static void
emit(struct stream_operator *op, struct over_impl *o, size_t k, size_t lo, size_t hi)
{
    const struct sql_value *v = row_of(o, &o->history, k);
    struct record_meta m = { o->history.ts[k], 0, false };
    int n = 0;

    for (int i = 0; i < o->s->nrow; i++)
        o->out[n++] = v[1 + o->s->npart + i];
    for (int i = 0; i < o->s->ncalls; i++)
        aggregate(o, &o->s->calls[i], lo, hi, &o->out[n++]);
    sql_row_write(o->out_type, o->out_rec, o->out_types, o->nout, o->out);
    operator_emit(op, o->out_rec, &m);
}

/* The watermark passed time ts of a key: its rows join the history, each
 * emitted with its frame's aggregates; the history keeps what frames
 * after ts need. */
static void
over_fire(void *owner, const struct timer *t)
{
    struct stream_operator *op = owner;
    struct over_impl *o = op->impl;
    const struct sql_over_spec *s = o->s;
    size_t first, lo, keep;
    int64_t ts;

    if (t->ns_len != sizeof ts || !t->event_time)
        return;
    memcpy(&ts, t->data + t->key_len, sizeof ts);
    set_ns(op, &ts);
    row_set_load(o, &o->pending, o->pending_st);
    spate_state_clear(o->pending_st);
    set_ns(op, NULL);
    row_set_load(o, &o->history, o->rows_st);
    first = o->history.n;
    for (size_t k = 0; k < o->pending.n; k++)
        row_set_add(o, &o->history, row_of(o, &o->pending, k), ts);
    lo = 0;
    if (s->frame == SQL_OVER_RANGE && s->preceding >= 0)
        while (lo < o->history.n && o->history.ts[lo] < ts - s->preceding)
            lo++;
    for (size_t k = first; k < o->history.n; k++) {
        if (s->frame == SQL_OVER_ROWS)
            emit(op, o, k,
                 s->preceding >= 0 && k > (size_t)s->preceding ? k - (size_t)s->preceding : 0,
                 k + 1);
        else
            emit(op, o, k, lo, o->history.n); /* the peers of the same time too */
    }
    /* What later frames need: ROWS, the last n rows; RANGE, the rows from
     * ts - preceding on (a later time's frame starts after it). */
    keep = 0;
    if (s->preceding >= 0 && s->frame == SQL_OVER_ROWS)
        keep = o->history.n > (size_t)s->preceding ? o->history.n - (size_t)s->preceding : 0;
    else if (s->preceding >= 0)
        keep = lo;
    spate_state_clear(o->rows_st);
    for (size_t k = keep; k < o->history.n; k++) {
        sql_row_write(o->in_type, o->stored, o->in_types, s->ninput, row_of(o, &o->history, k));
        spate_list_add(o->rows_st, o->stored);
    }
}

static void
over_watermark(struct stream_operator *op, int64_t watermark)
{
    op->current_watermark = watermark;
    op->backend->ops->advance(op->backend, true, watermark, over_fire);
    op->out->emit_watermark(op->out, watermark);
}

const struct operator_vtable sql_over_vtable = {
    .state = OPERATOR_KEYED_STATE,
    .open = over_open,
    .process = over_process,
    .close = over_close,
    .process_watermark = over_watermark,
};
