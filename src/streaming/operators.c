/* The built-in operators (operator.h): map, filter, flat_map, process, the
 * keyed reduce and sum, the user function sink, timestamps/watermarks; and
 * operator_new, which makes any kind: these, windows, and the sources and
 * sinks of src/connectors/ by the task's connector table. The per-record
 * paths (process) allocate nothing: outputs go to storage made at open. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/util.h"
#include "state/state_map.h"
#include "state/heap_keyed_backend.h"
#include "streaming/keyed_run.h"
#include "streaming/keys.h"
#include "streaming/latency_stats.h"
#include "streaming/operator.h"
#include "streaming/operator_metrics.h"
#include "streaming/types.h"
#include "streaming/watermark_generator.h"
#include "streaming/window_operator.h"

static const struct record_meta no_meta = { RECORD_NO_TIMESTAMP, 0, false };

void *
operator_out_storage(const struct spate_type *t)
{
    /* Aligned for any field; zeroed so that unset padding is stable. */
    return xcalloc(1, t->size ? (t->size + 15) & ~(size_t)15 : 16);
}

/* The kind's configuration (operator_config.h), by family. */
static inline const struct function_config *
fn_conf(const struct stream_operator *op)
{
    return op->conf;
}

static inline const struct keyed_reduce_config *
reduce_conf(const struct stream_operator *op)
{
    return op->conf;
}

static inline const struct two_input_config *
two_conf(const struct stream_operator *op)
{
    return op->conf;
}

/* ---- runs through chained operators (operator_vtable.process_run) ---- */

/* op->run for records of type t, when t is plain; else none. */
static void
operator_run_open(struct stream_operator *op, const struct spate_type *t)
{
    struct operator_run *r;

    if (t == NULL || !t->plain || t->size == 0)
        return;
    r = xcalloc(1, sizeof *r);
    r->size = t->size;
    r->stride = (t->size + 15) & ~(size_t)15; /* aligned for any field */
    r->recs = xcalloc(OPERATOR_RUN, r->stride);
    op->run = r;
}

static void
operator_run_close(struct stream_operator *op)
{
    if (op->run != NULL)
        free(op->run->recs);
    free(op->run);
    op->run = NULL;
}

/* The context of a run's records: no key hash; each one's timestamp is
 * set before its call. */
static inline void
run_meta_begin(spate_ctx *ctx)
{
    ctx->meta.timestamp = RECORD_NO_TIMESTAMP;
    ctx->meta.key_hash = 0;
    ctx->meta.has_key_hash = false;
}

/* ---- map, filter, flat_map, process ---- */

struct map_impl {
    void *out;
};

static int
map_open(struct stream_operator *op, spate_error *err)
{
    struct map_impl *m = xcalloc(1, sizeof *m);

    UNUSED(err);
    m->out = operator_out_storage(op->config->out_type);
    op->impl = m;
    if (op->config->kind == OP_MAP)
        operator_run_open(op, op->config->out_type);
    return 0;
}

static void
map_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    struct map_impl *m = op->impl;

    operator_before_call(op);
    record_meta_copy(&op->ctx.meta, meta);
    fn_conf(op)->fn.map(&op->ctx, rec, m->out);
    operator_emit(op, m->out, meta);
}

/* A run through the map: each record's result into the run, which keeps
 * the records' timestamps, handed on by OPERATOR_RUN. */
static void
map_process_run(struct stream_operator *op, const uint8_t *recs, size_t stride, const int64_t *ts,
                int n)
{
    /* In locals: the calls may change any memory, not these. */
    spate_map_fn fn = fn_conf(op)->fn.map;
    spate_ctx *ctx = &op->ctx;
    struct output *out = op->out;
    uint8_t *run = op->run->recs;
    size_t out_stride = op->run->stride;

    op->records_out += (uint64_t)n;
    run_meta_begin(ctx);
    while (n > 0) {
        int m = MIN(n, OPERATOR_RUN);
        uint8_t *o = run;

        for (int i = 0; i < m; i++, recs += stride, o += out_stride) {
            ctx_before_call(ctx);
            if (ts != NULL)
                ctx->meta.timestamp = ts[i];
            fn(ctx, recs, o);
        }
        out->collect_run(out, run, out_stride, ts, m);
        if (ts != NULL)
            ts += m;
        n -= m;
    }
}

static void
map_close(struct stream_operator *op)
{
    struct map_impl *m = op->impl;

    if (m != NULL)
        free(m->out);
    free(m);
    op->impl = NULL;
    operator_run_close(op);
}

static int
filter_open(struct stream_operator *op, spate_error *err)
{
    UNUSED(err);
    operator_run_open(op, op->config->out_type);
    return 0;
}

static void
filter_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    operator_before_call(op);
    record_meta_copy(&op->ctx.meta, meta);
    if (fn_conf(op)->fn.filter(&op->ctx, rec))
        operator_emit(op, rec, meta);
}

/* Up to OPERATOR_RUN records of a run through the filter, stride bytes
 * apart, those that pass into r (out_stride apart) compacted with their
 * timestamps (timed); how many passed. Each record is copied and kept or
 * not by the count, with no branch on the predicate, which is as hard to
 * foresee as the data. Inlined with constant sizes: the copy is a few
 * moves. */
static SPATE_INLINE int
filter_run_part(spate_ctx *ctx, spate_filter_fn fn, struct operator_run *r, const uint8_t *recs,
                const int64_t *ts, int n, size_t size, size_t stride, size_t out_stride, bool timed)
{
    uint8_t *o = r->recs;
    int64_t *kept = r->ts, *first = kept;

    for (int i = 0; i < n; i++, recs += stride) {
        int64_t t = timed ? ts[i] : RECORD_NO_TIMESTAMP;
        bool pass;

        ctx_before_call(ctx);
        ctx->meta.timestamp = t;
        pass = fn(ctx, recs);
        memcpy(o, recs, size);
        *kept = t;
        o += pass ? out_stride : 0;
        kept += pass;
    }
    return (int)(kept - first);
}

/* filter_run_part, with the size and strides constants for the common
 * plain sizes when the run's stride is the size rounded up to 16, as the
 * generator's and the operators' runs are. */
static int
filter_run_sized(spate_ctx *ctx, spate_filter_fn fn, struct operator_run *r, const uint8_t *recs,
                 size_t stride, const int64_t *ts, int n)
{
#define FILTER_RUN(size, in_stride, out_stride)                                               \
    (ts != NULL ? filter_run_part(ctx, fn, r, recs, ts, n, size, in_stride, out_stride, true) \
                : filter_run_part(ctx, fn, r, recs, NULL, n, size, in_stride, out_stride, false))
    if (stride == r->stride) {
        switch (r->size) {
        case 8:
            return FILTER_RUN(8, 16, 16);
        case 16:
            return FILTER_RUN(16, 16, 16);
        case 24:
            return FILTER_RUN(24, 32, 32);
        case 32:
            return FILTER_RUN(32, 32, 32);
        default:
            break;
        }
    }
    return FILTER_RUN(r->size, stride, r->stride);
#undef FILTER_RUN
}

/* A run through the filter: the records that pass handed on compacted, by
 * OPERATOR_RUN; none when none passes. */
static void
filter_process_run(struct stream_operator *op, const uint8_t *recs, size_t stride,
                   const int64_t *ts, int n)
{
    spate_filter_fn fn = fn_conf(op)->fn.filter;
    struct output *out = op->out;
    struct operator_run *r = op->run;

    run_meta_begin(&op->ctx);
    while (n > 0) {
        int m = MIN(n, OPERATOR_RUN), k = filter_run_sized(&op->ctx, fn, r, recs, stride, ts, m);

        recs += (size_t)m * stride;
        if (ts != NULL)
            ts += m;
        n -= m;
        if (k == 0)
            continue;
        op->records_out += (uint64_t)k;
        out->collect_run(out, r->recs, r->stride, ts != NULL ? r->ts : NULL, k);
    }
}

static void
filter_close(struct stream_operator *op)
{
    operator_run_close(op);
}

static void
flat_map_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    operator_before_call(op);
    record_meta_copy(&op->ctx.meta, meta);
    /* Keyed: the emitted records leave without the input's key hash. */
    op->ctx.meta.has_key_hash = false;
    fn_conf(op)->fn.flat_map(&op->ctx, rec);
}

/* ---- keyed process functions ---- */

static int
process_open(struct stream_operator *op, spate_error *err)
{
    if (op->config->key.kind == KEY_NONE && op->config->nstates == 0)
        return 0;
    return operator_backend_init(op, NULL, 0, err);
}

static void
process_close(struct stream_operator *op)
{
    operator_backend_free(op);
    free(op->impl);
    op->impl = NULL;
}

static void
keyed_process_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    uint8_t scratch[256];
    spate_bytes key;

    operator_before_call(op);
    record_meta_copy(&op->ctx.meta, meta);
    if (op->backend != NULL) {
        key = keys_extract(&op->config->key, op->config->in_type, &op->ctx, rec, scratch,
                           sizeof scratch);
        keyed_set_key(&op->ctx.keyctx, key,
                      meta->has_key_hash ? meta->key_hash : key_group_hash(key.data, key.len), NULL,
                      0);
    }
    op->ctx.meta.has_key_hash = false;
    ((const struct process_config *)op->conf)->fn(&op->ctx, rec);
}

static SPATE_INLINE void
process_ahead(const void *backend, uint64_t key_hash)
{
    /* The run's data is the operator's backend, which the lookahead keeps
     * its last hashes in. */
    keyed_backend_prefetch((struct heap_keyed_backend *)backend, key_hash);
}

/* A run of keyed records with keyed_process_process inlined, each key's
 * state fetched KEYED_RUN_AHEAD records ahead when the function has any. */
static int
keyed_process_keyed_run(struct stream_operator *op, void *in_rec, size_t plain, const uint8_t **pos,
                        const uint8_t *end, int max, bool timed)
{
    int k;

    /* The heap backend's state is fetched ahead. */
    if (op->backend != NULL && op->backend->ops == &heap_keyed_backend_ops &&
        heap_keyed_backend_of(op->backend)->nstates > 0)
        k = keyed_run_either(op, keyed_process_process, process_ahead,
                             heap_keyed_backend_of(op->backend), in_rec, plain, pos, end, max,
                             timed);
    else
        k = keyed_run_either(op, keyed_process_process, NULL, NULL, in_rec, plain, pos, end, max,
                             timed);
    op->records_in += (uint64_t)k;
    return k;
}

static void
process_fire(void *owner, const struct timer *t)
{
    struct stream_operator *op = owner;
    /* KeyedProcessFunction.onTimer; a two-input one keeps it third. */
    spate_on_timer_fn on_timer = op->config->kind == OP_PROCESS
                                     ? ((const struct process_config *)op->conf)->on_timer
                                     : two_conf(op)->on_timer;

    operator_before_call(op);
    /* Records emitted by a timer carry its timestamp (event time). */
    op->ctx.meta.timestamp = t->event_time ? t->timestamp : RECORD_NO_TIMESTAMP;
    op->ctx.meta.has_key_hash = false;
    if (on_timer != NULL)
        on_timer(&op->ctx, t->timestamp, t->event_time);
}

/* ---- two-input operators ---- */

/* Sets the key of a record of input `which` current (keyed operators). */
static void
co_set_key(struct stream_operator *op, int which, const void *rec, const struct record_meta *meta)
{
    const struct key_selector *k = which == 0 ? &op->config->key : &op->config->key2;
    const struct spate_type *t = which == 0 ? op->config->in_type : op->config->in_type2;
    uint8_t scratch[256];
    spate_bytes key;

    if (op->backend == NULL || k->kind == KEY_NONE)
        return;
    key = keys_extract(k, t, &op->ctx, rec, scratch, sizeof scratch);
    /* The key must outlive the scratch: keep it in call scratch. */
    if (key.data == scratch) {
        void *copy = spate_ctx_alloc(&op->ctx, key.len);

        memcpy(copy, scratch, key.len);
        key.data = copy;
    }
    keyed_set_key(&op->ctx.keyctx, key,
                  meta->has_key_hash ? meta->key_hash : key_group_hash(key.data, key.len), NULL, 0);
}

static void
co_map_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    struct map_impl *m = op->impl;

    operator_before_call(op);
    record_meta_copy(&op->ctx.meta, meta);
    op->ctx.meta.has_key_hash = false;
    ((spate_map_fn)two_conf(op)->fn1)(&op->ctx, rec, m->out);
    operator_emit(op, m->out, &op->ctx.meta);
}

static void
co_map_process2(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    struct map_impl *m = op->impl;

    operator_before_call(op);
    record_meta_copy(&op->ctx.meta, meta);
    op->ctx.meta.has_key_hash = false;
    ((spate_map_fn)two_conf(op)->fn2)(&op->ctx, rec, m->out);
    operator_emit(op, m->out, &op->ctx.meta);
}

static void
co_process_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    operator_before_call(op);
    record_meta_copy(&op->ctx.meta, meta);
    co_set_key(op, 0, rec, meta);
    op->ctx.meta.has_key_hash = false;
    ((spate_flat_map_fn)two_conf(op)->fn1)(&op->ctx, rec);
}

static void
co_process_process2(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    operator_before_call(op);
    record_meta_copy(&op->ctx.meta, meta);
    co_set_key(op, 1, rec, meta);
    op->ctx.meta.has_key_hash = false;
    if (op->backend != NULL)
        op->backend->broadcast_writable = op->config->kind == OP_BROADCAST_PROCESS;
    ((spate_flat_map_fn)two_conf(op)->fn2)(&op->ctx, rec);
    if (op->backend != NULL)
        op->backend->broadcast_writable = false;
}

static void
process_watermark(struct stream_operator *op, int64_t watermark)
{
    /* Timers see the new event time, as Flink's InternalTimerService. */
    op->current_watermark = watermark;
    if (op->backend != NULL)
        op->backend->ops->advance(op->backend, true, watermark, process_fire);
    op->out->emit_watermark(op->out, watermark);
}

static void
process_on_processing_time(struct stream_operator *op, uint64_t now)
{
    op->next_processing_ns = 0;
    if (op->backend != NULL)
        op->backend->ops->on_processing_time(op->backend, now, process_fire);
}

/* ---- keyed reduce and sum ---- */

/* The name of the ValueState that holds a keyed reduce's or sum's current
 * value per key, as Flink's StreamGroupedReduceOperator names its own. */
#define KEYED_REDUCE_STATE "_op_state"

struct keyed_impl {
    struct state_decl decl; /* KEYED_REDUCE_STATE: ValueState<out_type> */
    /* The state in op->backend: the heap backend's, found inline; or any
     * backend's, through its table (keyed_table_vtables). */
    struct heap_state *value;
    spate_state *value_st;
    void *acc;    /* the stored value, deserialized */
    void *out;    /* the reduce function's result */
    uint8_t *ser; /* its serialized form */
    /* out_type's serializer and deserializer, chosen once. */
    struct types_codec codec;
    size_t ser_cap;
    struct key_access key;
    uint8_t key_scratch[256];
    /* sum: where the summed field starts, counted from the end of the
     * stored value (0: found by walking the value's fields). */
    size_t sum_tail;
    /* sum of a pair, its key and the summed field (a word and its count):
     * the sum a record leads to is the record with the summed field
     * replaced, for the key's bytes are the other field's; so the stored
     * value is not read back into a record (sum_of_pair). */
    bool pair;
    /* A pair's: the record's size, its summed field's offset and type,
     * found once, not per record. */
    size_t pair_size, pair_off;
    const struct spate_type *pair_type;
    /* A pair of a string key and its count, on the heap backend: records
     * of their own lengths read where they are (sum_keyed_run_var); the
     * count's place in the serialized record: its first or last 8 bytes. */
    bool count_first;
};

/* Whether a sum's records are pairs of the key (field or string field,
 * read in place) and the summed field of fixed size at the stored
 * value's end. */
static bool
sum_of_pair(const struct stream_operator *op, const struct keyed_impl *k, int field)
{
    const struct spate_type *t = op->config->out_type;
    int other = 1 - field;

    if (t->kind != TYPE_TUPLE || t->nfields != 2 || field < 0 || k->sum_tail != 8 ||
        !types_same(t, op->config->in_type))
        return false;
    if (k->key.string)
        return t->fields[other]->kind == TYPE_STRING && k->key.offset == t->offsets[other];
    return k->key.len != 0 && t->fields[other]->plain && k->key.offset == t->offsets[other] &&
           k->key.len == t->fields[other]->size;
}

static const struct operator_vtable keyed_table_vtables[2];
static const struct operator_vtable sum_words_vtable;

static int
keyed_open(struct stream_operator *op, spate_error *err)
{
    struct keyed_impl *k = xcalloc(1, sizeof *k);
    int field = reduce_conf(op)->sum_field;
    int rc;

    op->impl = k;
    keys_access_init(&k->key, &op->config->key, op->config->in_type);
    k->decl = (struct state_decl){
        KEYED_REDUCE_STATE, STATE_VALUE, op->config->out_type, NULL, NULL, { 0 }, 0, false,
        SCOPE_KEYED
    };
    if ((rc = operator_backend_init(op, &k->decl, 1, err)) != 0)
        return rc;
    k->value_st = op->backend->ops->state(op->backend, KEYED_REDUCE_STATE);
    if (op->backend->ops == &heap_keyed_backend_ops)
        k->value = heap_state_of(k->value_st);
    else
        op->vt = &keyed_table_vtables[op->config->kind == OP_SUM];
    if (op->config->kind == OP_SUM)
        k->sum_tail = field >= 0 ? types_serialized_tail(op->config->out_type,
                                                         op->config->out_type->offsets[field])
                                 : 8;
    k->pair = op->config->kind == OP_SUM && sum_of_pair(op, k, field);
    if (k->pair) {
        k->pair_size = op->config->out_type->size;
        k->pair_off = op->config->out_type->offsets[field];
        k->pair_type = op->config->out_type->fields[field];
    }
    if (k->pair && k->value != NULL && k->value->fast && k->key.string &&
        op->config->in_type->one_string &&
        op->config->in_type->str1.pre_len + op->config->in_type->str1.post_len == 8) {
        k->count_first = op->config->in_type->str1.pre_len == 8;
        op->vt = &sum_words_vtable;
    }
    k->codec = types_codec_of(op->config->out_type);
    k->acc = operator_out_storage(op->config->out_type);
    k->out = operator_out_storage(op->config->out_type);
    k->ser_cap = 256;
    k->ser = xmalloc(k->ser_cap);
    return 0;
}

static void
keyed_close(struct stream_operator *op)
{
    struct keyed_impl *k = op->impl;

    if (k == NULL)
        return;
    operator_backend_free(op);
    free(k->acc);
    free(k->out);
    free(k->ser);
    free(k);
    op->impl = NULL;
}

/* Serializes rec into k->ser, growing it; returns the length. */
static size_t
keyed_serialize(struct keyed_impl *k, const struct spate_type *t, const void *rec)
{
    size_t n = k->codec.serialize(t, rec, k->ser, k->ser_cap);

    if (n > k->ser_cap) {
        k->ser_cap = n * 2;
        k->ser = xrealloc(k->ser, k->ser_cap);
        n = k->codec.serialize(t, rec, k->ser, k->ser_cap);
    }
    return n;
}

/* Makes the record's key current (its hash taken from the exchange when it
 * came with the record). */
static SPATE_INLINE void
keyed_set_current(struct stream_operator *op, struct keyed_impl *k, const void *rec,
                  const struct record_meta *meta)
{
    spate_bytes key = keys_get(&k->key, &op->ctx, rec, k->key_scratch, sizeof k->key_scratch);

    keyed_set_key(&op->ctx.keyctx, key,
                  meta->has_key_hash ? meta->key_hash : key_group_hash(key.data, key.len), NULL, 0);
}

/* keyed_set_current, and where the key's value is stored (the heap). */
static SPATE_INLINE void
keyed_lookup(struct stream_operator *op, struct keyed_impl *k, const void *rec,
             const struct record_meta *meta, struct keyed_at *at)
{
    keyed_set_current(op, k, rec, meta);
    keyed_current_at(k->value, at);
}

static void
reduce_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    struct keyed_impl *k = op->impl;
    const struct spate_type *t = op->config->out_type;
    struct state_entry *e;
    struct keyed_at at;
    size_t n;

    operator_before_call(op);
    record_meta_copy(&op->ctx.meta, meta);
    keyed_lookup(op, k, rec, meta, &at);
    e = state_map_get(at.map, at.hash, at.key, at.key_len);
    if (e == NULL) {
        n = keyed_serialize(k, t, rec);
        state_map_put(at.map, at.hash, at.key, at.key_len, k->ser, n);
        operator_emit(op, rec, meta);
        return;
    }
    if (k->codec.deserialize(t, state_entry_value(e), e->value_len, k->acc) != 0) {
        spate_ctx_fail(&op->ctx, "corrupt reduce state for a key of '%s'", op->ctx.task_name);
        return;
    }
    reduce_conf(op)->reduce(&op->ctx, k->acc, rec, k->out);
    /* The result may point into the stored value: serialize it first. The
     * function may have used state: the key's place is found again. */
    n = keyed_serialize(k, t, k->out);
    keyed_current_at(k->value, &at);
    state_map_put(at.map, at.hash, at.key, at.key_len, k->ser, n);
    operator_emit(op, k->out, meta);
}

/* Adds the summed field of rec to the value v stored for its key (the
 * serialized record, whose field at byte off of it), where it is stored. */
static SPATE_INLINE void
sum_add(const struct spate_type *ft, uint8_t *v, size_t off, const uint8_t *in_field)
{
    if (ft->kind == TYPE_INT64) {
        int64_t a, b;

        memcpy(&a, v + off, 8);
        memcpy(&b, in_field, 8);
        a = (int64_t)((uint64_t)a + (uint64_t)b); /* wraps like Java's long */
        memcpy(v + off, &a, 8);
    } else {
        double a, b;

        memcpy(&a, v + off, 8);
        memcpy(&b, in_field, 8);
        a += b;
        memcpy(v + off, &a, 8);
    }
}

/* sum_process of a pair whose key has a stored value: the sum in place at
 * the value's end, the result the record with the sum in its field. */
static SPATE_INLINE void
sum_pair_add(struct keyed_impl *k, struct state_entry *e, const void *rec)
{
    uint8_t *sum = state_entry_value(e) + e->value_len - 8;

    sum_add(k->pair_type, sum, 0, (const uint8_t *)rec + k->pair_off);
    bytes_copy(k->out, rec, k->pair_size);
    memcpy((uint8_t *)k->out + k->pair_off, sum, 8);
}

static void
sum_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    struct keyed_impl *k = op->impl;
    const struct spate_type *t;
    int field;
    const struct spate_type *ft;
    const uint8_t *in_field;
    struct state_entry *e;
    struct keyed_at at;

    record_meta_copy(&op->ctx.meta, meta);
    keyed_lookup(op, k, rec, meta, &at);
    /* Changed in place below: a map a snapshot still reads is copied first. */
    e = state_map_get_mut(at.map, at.hash, at.key, at.key_len);
    if (k->pair && e != NULL) {
        if (unlikely(e->value_len < 8))
            goto corrupt;
        sum_pair_add(k, e, rec);
        operator_emit(op, k->out, meta);
        return;
    }
    t = op->config->out_type;
    field = reduce_conf(op)->sum_field;
    ft = field >= 0 ? t->fields[field] : t;
    in_field = field >= 0 ? (const uint8_t *)rec + t->offsets[field] : rec;
    if (e == NULL) {
        /* The stored value is the record: ValueState<out_type>. */
        size_t n = keyed_serialize(k, t, rec);

        e = state_map_put(at.map, at.hash, at.key, at.key_len, k->ser, n);
        if (k->codec.deserialize(t, state_entry_value(e), e->value_len, k->out) != 0)
            goto corrupt;
    } else {
        uint8_t *v = state_entry_value(e);

        if (k->codec.deserialize(t, v, e->value_len, k->out) != 0)
            goto corrupt;
        /* Only the summed field's 8 bytes change: in the stored value, and
         * in the deserialized record (the rest of which points into it). */
        sum_add(ft, v,
                k->sum_tail ? e->value_len - k->sum_tail
                            : types_serialized_offset(t, k->out, t->offsets[field]),
                in_field);
        sum_add(ft, (uint8_t *)k->out, field >= 0 ? t->offsets[field] : 0, in_field);
    }
    operator_emit(op, k->out, meta);
    return;
corrupt:
    spate_ctx_fail(&op->ctx, "corrupt sum state for a key of '%s'", op->ctx.task_name);
}

/* What sum_keyed_run_var reads for every record, read once per run: the
 * emit may change any memory, so that fields read through op would be
 * read again per record. */
struct sum_words {
    struct keyed_state *ks;              /* the sum's state's maps */
    uint32_t kg_mask, kg_start, kg_last; /* key groups: the range's, less start */
    uint8_t *out;
    size_t word_off, count_off; /* in out */
    bool count_first, doubles;
    void *in_rec;
};

/* sum_keyed_run_var's find: the map of the key's state, its slot and tag
 * fetched (NULL: a key group outside the subtask's, or no entry yet). */
static SPATE_INLINE const void *
sum_words_find(const void *data, uint64_t key_hash)
{
    const struct sum_words *w = data;
    uint32_t i = (uint32_t)(key_hash & w->kg_mask) - w->kg_start;
    const struct state_map *map;

    if (i > w->kg_last || (map = &w->ks->maps[i])->slots == NULL)
        return NULL;
    state_map_prefetch(map, key_hash);
    return map;
}

/* sum_keyed_run_var's per record (its body, the record's serialized
 * bytes): a word and its count, the count added where the word's sum is
 * stored, in its slot, and the sum emitted (the operator has no user
 * function: its context's record and key are not set); anything else (a
 * new word, an entry in a heap block, a table a snapshot shares, a word
 * of 128 bytes or more) by sum_process, the record deserialized. */
static SPATE_INLINE bool
sum_words_one(struct stream_operator *op, const void *data, const void *found, const uint8_t *body,
              size_t len, const struct record_meta *meta)
{
    const struct sum_words *w = data;
    struct state_map *map = (struct state_map *)found;
    struct state_entry *e;
    spate_str word;
    const uint8_t *count;
    uint8_t *sum;

    if (w->count_first) { /* (count, word): the word last, no length */
        word = (spate_str){ (const char *)body + 8, len - 8 };
        count = body;
    } else { /* (word, count): a length byte when under 128 */
        word = (spate_str){ (const char *)body + 1, len - 9 };
        count = body + len - 8;
    }
    if (likely(map != NULL && !map->shared && len >= 9 &&
               (w->count_first || (body[0] < 0x80 && body[0] == len - 9))) &&
        (e = keyed_entry_inline_of(map, meta->key_hash, word.data, (uint32_t)word.len)) != NULL &&
        likely(e->value_len >= 8)) {
        sum = e->u.bytes + state_entry_key_len(e) + e->value_len - 8;
        if (w->doubles) {
            double a, b;

            memcpy(&a, sum, 8);
            memcpy(&b, count, 8);
            a += b;
            memcpy(sum, &a, 8);
        } else {
            uint64_t a, b;

            memcpy(&a, sum, 8);
            memcpy(&b, count, 8);
            a += b; /* wraps like Java's long */
            memcpy(sum, &a, 8);
        }
        memcpy(w->out + w->word_off, &word, sizeof word);
        memcpy(w->out + w->count_off, sum, 8);
        operator_emit(op, w->out, meta);
        return true;
    }
    if (((struct keyed_impl *)op->impl)
            ->codec.deserialize(op->config->in_type, body, len, w->in_rec) != 0)
        return false;
    sum_process(op, w->in_rec, meta);
    return true;
}

/* A run of words and their counts with sum_words_one inlined: no record
 * deserialized, no composite key built, no call per record but the
 * emit. */
static int
sum_keyed_run_var(struct stream_operator *op, void *in_rec, const uint8_t **pos, const uint8_t *end,
                  int max)
{
    struct keyed_impl *k = op->impl;
    struct keyed_state *ks = &k->value->maps;
    struct sum_words w = {
        .ks = ks,
        .kg_mask = ks->kg_mask,
        .kg_start = ks->range.start,
        .kg_last = ks->range.end - ks->range.start,
        .out = k->out,
        .word_off = k->key.offset,
        .count_off = k->pair_off,
        .count_first = k->count_first,
        .doubles = k->pair_type->kind == TYPE_DOUBLE,
        .in_rec = in_rec,
    };
    int n;

    /* A max parallelism not a power of two: no fetch ahead, each record
     * by sum_process (its key group by division). */
    if (ks->kg_mask == 0)
        w.kg_last = 0, w.kg_start = 1;
    n = keyed_run_bodies(op, sum_words_one, sum_words_find, &w, pos, end, max);
    op->records_in += (uint64_t)n;
    return n;
}

/* keyed_open's table for a sum of words on the heap backend. */
static const struct operator_vtable sum_words_vtable = {
    .state = OPERATOR_KEYED_STATE,
    .open = keyed_open,
    .process = sum_process,
    .process_keyed_run_var = sum_keyed_run_var,
    .close = keyed_close,
};

/* Keyed reduce and sum on a backend other than the heap: the value through
 * the backend's table. */
static void
reduce_process_table(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    struct keyed_impl *k = op->impl;
    const struct keyed_state_backend_ops *ops = op->backend->ops;

    operator_before_call(op);
    record_meta_copy(&op->ctx.meta, meta);
    keyed_set_current(op, k, rec, meta);
    if (!ops->value_get(k->value_st, k->acc)) {
        ops->value_update(k->value_st, rec);
        operator_emit(op, rec, meta);
        return;
    }
    reduce_conf(op)->reduce(&op->ctx, k->acc, rec, k->out);
    /* The function may have used state: the key is made current again. */
    keyed_set_current(op, k, rec, meta);
    ops->value_update(k->value_st, k->out);
    operator_emit(op, k->out, meta);
}

static void
sum_process_table(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    struct keyed_impl *k = op->impl;
    const struct keyed_state_backend_ops *ops = op->backend->ops;
    const struct spate_type *t = op->config->out_type;
    int field = reduce_conf(op)->sum_field;
    const struct spate_type *ft = field >= 0 ? t->fields[field] : t;

    record_meta_copy(&op->ctx.meta, meta);
    keyed_set_current(op, k, rec, meta);
    if (!ops->value_get(k->value_st, k->out)) {
        /* The stored value is the record: ValueState<out_type>. */
        ops->value_update(k->value_st, rec);
        operator_emit(op, rec, meta);
        return;
    }
    sum_add(ft, (uint8_t *)k->out, field >= 0 ? t->offsets[field] : 0,
            field >= 0 ? (const uint8_t *)rec + t->offsets[field] : rec);
    ops->value_update(k->value_st, k->out);
    operator_emit(op, k->out, meta);
}

/* keyed_open replaces the kind's table with these on another backend. */
static const struct operator_vtable keyed_table_vtables[2] = {
    { .state = OPERATOR_KEYED_STATE,
      .open = keyed_open,
      .process = reduce_process_table,
      .close = keyed_close },
    { .state = OPERATOR_KEYED_STATE,
      .open = keyed_open,
      .process = sum_process_table,
      .close = keyed_close },
};

/* ---- the user function sink ---- */

static void
sink_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    operator_before_call(op);
    record_meta_copy(&op->ctx.meta, meta);
    fn_conf(op)->fn.sink(&op->ctx, rec);
}

/* ---- timestamps and watermarks (the generator: watermark_generator.h) ---- */

static void
assign_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    struct watermark_generator *g = op->watermarks;
    struct record_meta *m = &op->ctx.meta; /* the input's, then the record's own */

    operator_before_call(op);
    record_meta_copy(m, meta);
    m->timestamp = watermark_generator_on_event(op, g, rec, m->timestamp);
    operator_emit(op, rec, m);
    if (unlikely(g->watermark_fn != NULL))
        watermark_generator_punctuated(op, g, rec, m->timestamp);
    else if (unlikely(g->interval_ns == 0))
        watermark_generator_after_record(op, g);
}

static void
assign_watermark(struct stream_operator *op, int64_t watermark)
{
    /* Upstream watermarks are replaced by this operator's, but the end of
     * input (the max watermark) goes through. */
    if (watermark == RECORD_MAX_WATERMARK) {
        op->current_watermark = watermark;
        op->out->emit_watermark(op->out, watermark);
    }
}

/* ---- the table ---- */

static void
nothing_close(struct stream_operator *op)
{
    UNUSED(op);
}

static int
nothing_open(struct stream_operator *op, spate_error *err)
{
    UNUSED(op);
    UNUSED(err);
    return 0;
}

/* The kinds streaming runs itself; the sources' and sinks' are the task's
 * connector table's, the window's window_operator.c's. */
static const struct operator_vtable vtables[] = {
    [OP_MAP] = { .state = OPERATOR_STATELESS,
                 .open = map_open,
                 .process = map_process,
                 .process_run = map_process_run,
                 .close = map_close },
    [OP_FILTER] = { .state = OPERATOR_STATELESS,
                    .open = filter_open,
                    .process = filter_process,
                    .process_run = filter_process_run,
                    .close = filter_close },
    [OP_FLAT_MAP] = { .state = OPERATOR_STATELESS,
                      .open = nothing_open,
                      .process = flat_map_process,
                      .close = nothing_close },
    [OP_PROCESS] = { .state = OPERATOR_KEYED_STATE | OPERATOR_STATE_IF_KEYED,
                     .open = process_open,
                     .process = keyed_process_process,
                     .process_keyed_run = keyed_process_keyed_run,
                     .close = process_close,
                     .process_watermark = process_watermark,
                     .on_processing_time = process_on_processing_time },
    [OP_REDUCE] = { .state = OPERATOR_KEYED_STATE,
                    .open = keyed_open,
                    .process = reduce_process,
                    .close = keyed_close },
    [OP_SUM] = { .state = OPERATOR_KEYED_STATE,
                 .open = keyed_open,
                 .process = sum_process,
                 .close = keyed_close },
    [OP_SINK] = { .state = OPERATOR_STATELESS,
                  .open = nothing_open,
                  .process = sink_process,
                  .close = nothing_close },
    [OP_CO_MAP] = { .state = OPERATOR_STATELESS,
                    .open = map_open,
                    .process = co_map_process,
                    .process2 = co_map_process2,
                    .close = map_close },
    [OP_CO_PROCESS] = { .state = OPERATOR_KEYED_STATE | OPERATOR_STATE_IF_KEYED,
                        .open = process_open,
                        .process = co_process_process,
                        .process2 = co_process_process2,
                        .close = process_close,
                        .process_watermark = process_watermark,
                        .on_processing_time = process_on_processing_time },
    [OP_BROADCAST_PROCESS] = { .state = OPERATOR_KEYED_STATE | OPERATOR_STATE_IF_KEYED,
                               .open = process_open,
                               .process = co_process_process,
                               .process2 = co_process_process2,
                               .close = process_close,
                               .process_watermark = process_watermark,
                               .on_processing_time = process_on_processing_time },
    [OP_ASSIGN_TIMESTAMPS] = { .state = OPERATOR_STATELESS,
                               .open = nothing_open,
                               .process = assign_process,
                               .close = nothing_close,
                               .process_watermark = assign_watermark },
};

void
operator_on_processing_time(struct stream_operator *op, uint64_t now_ns)
{
    if (op->watermarks != NULL)
        watermark_generator_on_periodic(op, op->watermarks, now_ns);
    else if (op->vt->on_processing_time != NULL)
        op->vt->on_processing_time(op, now_ns);
}

void
operator_process_watermark(struct stream_operator *op, int64_t watermark)
{
    if (watermark <= op->current_watermark)
        return;
    metric_gauge_set(&op->input_watermark, watermark);
    if (op->vt->process_watermark != NULL) {
        op->vt->process_watermark(op, watermark);
    } else {
        op->current_watermark = watermark;
        op->out->emit_watermark(op->out, watermark);
    }
}

int
operator_check_state(const struct stream_operator *op, spate_error *err)
{
    const struct operator_settings *c = op->config;
    unsigned state = op->vt->state;
    const char *name = c->name ? c->name : operator_kind_name(c->kind);

    if (state == 0)
        return spate_error_set(err, SPATE_ESTATE,
                               "operator '%s' (%s): its kind declares no state (operator.h's "
                               "operator_state): a checkpoint cannot tell what to capture",
                               name, operator_kind_name(c->kind));
    if ((state & OPERATOR_STATE_IF_KEYED) && c->key.kind == KEY_NONE && c->nstates == 0)
        state &= ~(unsigned)OPERATOR_KEYED_STATE;
    if (((state & OPERATOR_KEYED_STATE) || c->nstates > 0) && op->backend == NULL)
        return spate_error_set(err, SPATE_ESTATE,
                               "operator '%s' (%s) holds keyed state outside a state backend: "
                               "a checkpoint cannot capture it",
                               name, operator_kind_name(c->kind));
    if ((state & OPERATOR_OWN_STATE) && op->vt->snapshot_state == NULL)
        return spate_error_set(err, SPATE_ESTATE,
                               "operator '%s' (%s) holds state of its own but cannot snapshot it",
                               name, operator_kind_name(c->kind));
    return 0;
}

/* The table of a kind: the window's, the task's connector table's for a
 * source or sink, or streaming's own; NULL when the kind cannot run. */
static const struct operator_vtable *
kind_vtable(const struct operator_settings *config, const struct task_info *task, spate_error *err)
{
    const struct connector_table *t = task->connectors;

    if (!operator_kind_runs(config->kind)) {
        spate_error_set(err, SPATE_EINVAL, "operator kind %d cannot run", (int)config->kind);
        return NULL;
    }
    if (config->kind == OP_WINDOW)
        return &window_operator_vtable;
    if (!operator_kind_is_external(config->kind))
        return &vtables[config->kind];
    for (; t != NULL; t = t->next)
        for (size_t i = 0; i < t->count; i++)
            if (t->entries[i].kind == config->kind && t->entries[i].vt != NULL)
                return t->entries[i].vt;
    spate_error_set(err, SPATE_EINVAL,
                    "no connector for kind '%s': the task's connector table (task_info."
                    "connectors) does not have it",
                    operator_kind_name(config->kind));
    return NULL;
}

int
operator_new(const struct operator_settings *config, int index, const struct task_info *task,
             struct output *out, struct stream_operator **opp, spate_error *err)
{
    const struct operator_vtable *vt = kind_vtable(config, task, err);
    struct stream_operator *op;
    int rc;

    if (vt == NULL)
        return SPATE_EINVAL;
    op = xcalloc(1, sizeof *op);
    op->vt = vt;
    op->config = config;
    op->conf = config->conf;
    op->index = index;
    op->task = task;
    op->out = out;
    op->wait_fd = -1;
    op->current_watermark = INT64_MIN;
    metric_gauge_set(&op->input_watermark, INT64_MIN);
    metric_gauge_set(&op->input_watermarks[0], INT64_MIN);
    metric_gauge_set(&op->input_watermarks[1], INT64_MIN);
    op->ctx.op = op;
    op->ctx.params = config->params;
    op->ctx.params_len = config->params_len;
    op->ctx.subtask = task->subtask;
    op->ctx.parallelism = task->parallelism;
    op->ctx.max_parallelism = task->max_parallelism;
    op->ctx.task_name = task->task_name;
    op->ctx.meta = no_meta;
    op->ctx.accumulators = task->accumulators;
    if (config->wm.set
            ? config->kind != OP_ASSIGN_TIMESTAMPS && !operator_kind_is_source(config->kind)
            : config->kind == OP_ASSIGN_TIMESTAMPS) {
        free(op);
        return spate_error_set(err, SPATE_EINVAL,
                               "operator '%s' (%s): a watermark strategy belongs to sources and "
                               "timestamps/watermarks operators, and the latter need one",
                               config->name ? config->name : "", operator_kind_name(config->kind));
    }
    if (config->wm.set)
        op->watermarks = watermark_generator_new(op, &config->wm);
    operator_metrics_open(op);
    if ((rc = op->vt->open(op, err)) != 0)
        goto fail;
    if (config->nstates > 0 && op->backend == NULL) {
        /* Operator state on an operator of another kind (a source, a map). */
        op->owns_backend = true;
        if ((rc = operator_backend_init(op, NULL, 0, err)) != 0)
            goto fail;
    }
    op->opened = true;
    if (config->open != NULL) {
        config->open(&op->ctx);
        if (op->ctx.failure != NULL) {
            rc = spate_error_set(err, SPATE_EUSER, "open of '%s' failed: %s",
                                 config->name ? config->name : operator_kind_name(config->kind),
                                 op->ctx.failure);
            goto fail;
        }
    }
    *opp = op;
    return 0;
fail:
    operator_free(op);
    return rc;
}

void
operator_free(struct stream_operator *op)
{
    if (op == NULL)
        return;
    if (op->opened && op->config->close != NULL)
        op->config->close(&op->ctx);
    op->vt->close(op);
    latency_stats_free(op->latency);
    operator_metrics_free(op->metrics);
    if (op->owns_backend)
        operator_backend_free(op);
    watermark_generator_free(op->watermarks);
    free(op->sides);
    scratch_release(&op->ctx.scratch);
    free(op->ctx.failure);
    free(op);
}
