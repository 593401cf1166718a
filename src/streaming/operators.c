/* The built-in operators (operator.h): map, filter, flat_map, process, the
 * keyed reduce and sum, the sinks and the sources. The per-record paths
 * (process, poll) allocate nothing: outputs go to storage made at open. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/util.h"
#include "state/state_map.h"
#include "state/heap_keyed_backend.h"
#include "streaming/keyed_run.h"
#include "streaming/keys.h"
#include "streaming/operator.h"
#include "streaming/types.h"
#include "streaming/watermark_generator.h"
#include "streaming/window_operator.h"

static const struct record_meta no_meta = { RECORD_NO_TIMESTAMP, 0, false };

/* Calls a user function's prologue: the scratch memory of the previous call
 * is free again. */
static inline void
before_call(struct stream_operator *op)
{
    if (op->ctx.scratch.used != 0)
        scratch_reset(&op->ctx.scratch);
}

static void *
out_storage(const struct spate_type *t)
{
    /* Aligned for any field; zeroed so that unset padding is stable. */
    return xcalloc(1, t->size ? (t->size + 15) & ~(size_t)15 : 16);
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
    m->out = out_storage(op->config->out_type);
    op->impl = m;
    return 0;
}

static void
map_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    struct map_impl *m = op->impl;

    before_call(op);
    record_meta_copy(&op->ctx.meta, meta);
    ((spate_map_fn)op->config->fn)(&op->ctx, rec, m->out);
    operator_emit(op, m->out, meta);
}

static void
map_close(struct stream_operator *op)
{
    struct map_impl *m = op->impl;

    if (m != NULL)
        free(m->out);
    free(m);
    op->impl = NULL;
}

static void
filter_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    before_call(op);
    record_meta_copy(&op->ctx.meta, meta);
    if (((spate_filter_fn)op->config->fn)(&op->ctx, rec))
        operator_emit(op, rec, meta);
}

static void
flat_map_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    before_call(op);
    record_meta_copy(&op->ctx.meta, meta);
    /* Keyed: the emitted records leave without the input's key hash. */
    op->ctx.meta.has_key_hash = false;
    ((spate_flat_map_fn)op->config->fn)(&op->ctx, rec);
}

/* ---- keyed process functions ---- */

static int
process_open(struct stream_operator *op, spate_error *err)
{
    struct heap_keyed_backend *b;

    if (op->config->key.kind == KEY_NONE && op->config->nstates == 0)
        return 0;
    b = xcalloc(1, sizeof *b);
    op->backend = &b->base;
    return operator_backend_init(op, b, NULL, 0, err);
}

static void
process_close(struct stream_operator *op)
{
    if (op->backend != NULL)
        op->backend->ops->dispose(op->backend);
    free(op->backend);
    op->backend = NULL;
    free(op->impl);
    op->impl = NULL;
}

static void
keyed_process_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    uint8_t scratch[256];
    spate_bytes key;

    before_call(op);
    record_meta_copy(&op->ctx.meta, meta);
    if (op->backend != NULL) {
        key = keys_extract(&op->config->key, op->config->in_type, &op->ctx, rec, scratch,
                           sizeof scratch);
        keyed_set_key(&op->ctx.keyctx, key,
                      meta->has_key_hash ? meta->key_hash : key_group_hash(key.data, key.len), NULL,
                      0);
    }
    op->ctx.meta.has_key_hash = false;
    ((spate_flat_map_fn)op->config->fn)(&op->ctx, rec);
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

    /* The backend is the heap backend process_open made. */
    if (op->backend != NULL && heap_keyed_backend_of(op->backend)->nstates > 0)
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
    void *on_timer = op->config->kind == OP_PROCESS ? op->config->fn2 : op->config->fn3;

    before_call(op);
    /* Records emitted by a timer carry its timestamp (event time). */
    op->ctx.meta.timestamp = t->event_time ? t->timestamp : RECORD_NO_TIMESTAMP;
    op->ctx.meta.has_key_hash = false;
    if (on_timer != NULL)
        ((spate_on_timer_fn)on_timer)(&op->ctx, t->timestamp, t->event_time);
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

    before_call(op);
    record_meta_copy(&op->ctx.meta, meta);
    op->ctx.meta.has_key_hash = false;
    ((spate_map_fn)op->config->fn)(&op->ctx, rec, m->out);
    operator_emit(op, m->out, &op->ctx.meta);
}

static void
co_map_process2(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    struct map_impl *m = op->impl;

    before_call(op);
    record_meta_copy(&op->ctx.meta, meta);
    op->ctx.meta.has_key_hash = false;
    ((spate_map_fn)op->config->fn2)(&op->ctx, rec, m->out);
    operator_emit(op, m->out, &op->ctx.meta);
}

static void
co_process_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    before_call(op);
    record_meta_copy(&op->ctx.meta, meta);
    co_set_key(op, 0, rec, meta);
    op->ctx.meta.has_key_hash = false;
    ((spate_flat_map_fn)op->config->fn)(&op->ctx, rec);
}

static void
co_process_process2(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    before_call(op);
    record_meta_copy(&op->ctx.meta, meta);
    co_set_key(op, 1, rec, meta);
    op->ctx.meta.has_key_hash = false;
    if (op->backend != NULL)
        op->backend->broadcast_writable = op->config->kind == OP_BROADCAST_PROCESS;
    ((spate_flat_map_fn)op->config->fn2)(&op->ctx, rec);
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
    struct heap_keyed_backend backend; /* op->backend: snapshots and restores it */
    struct state_decl decl;            /* KEYED_REDUCE_STATE: ValueState<out_type> */
    struct heap_state *value;
    void *acc;    /* the stored value, deserialized */
    void *out;    /* the reduce function's result */
    uint8_t *ser; /* its serialized form */
    size_t ser_cap;
    uint8_t key_scratch[256];
    /* sum: where the summed field starts, counted from the end of the
     * stored value (0: found by walking the value's fields). */
    size_t sum_tail;
};

static int
keyed_open(struct stream_operator *op, spate_error *err)
{
    struct keyed_impl *k = xcalloc(1, sizeof *k);
    int rc;

    op->impl = k;
    k->decl = (struct state_decl){
        KEYED_REDUCE_STATE, STATE_VALUE, op->config->out_type, NULL, NULL, { 0 }, 0, false,
        SCOPE_KEYED
    };
    op->backend = &k->backend.base;
    if ((rc = operator_backend_init(op, &k->backend, &k->decl, 1, err)) != 0)
        return rc;
    k->value = &k->backend.states[op->config->nstates];
    if (op->config->kind == OP_SUM)
        k->sum_tail =
            op->config->sum_field >= 0
                ? types_serialized_tail(op->config->out_type,
                                        op->config->out_type->offsets[op->config->sum_field])
                : 8;
    k->acc = out_storage(op->config->out_type);
    k->out = out_storage(op->config->out_type);
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
    if (op->backend == &k->backend.base)
        keyed_backend_release(&k->backend);
    op->backend = NULL;
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
    size_t n = types_serialize(t, rec, k->ser, k->ser_cap);

    if (n > k->ser_cap) {
        k->ser_cap = n * 2;
        k->ser = xrealloc(k->ser, k->ser_cap);
        n = types_serialize(t, rec, k->ser, k->ser_cap);
    }
    return n;
}

/* Makes the record's key current (its hash taken from the exchange when it
 * came with the record) and finds where its value is stored. */
static SPATE_INLINE void
keyed_lookup(struct stream_operator *op, struct keyed_impl *k, const void *rec,
             const struct record_meta *meta, struct keyed_at *at)
{
    spate_bytes key = keys_extract(&op->config->key, op->config->in_type, &op->ctx, rec,
                                   k->key_scratch, sizeof k->key_scratch);

    keyed_set_key(&op->ctx.keyctx, key,
                  meta->has_key_hash ? meta->key_hash : key_group_hash(key.data, key.len), NULL, 0);
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

    before_call(op);
    record_meta_copy(&op->ctx.meta, meta);
    keyed_lookup(op, k, rec, meta, &at);
    e = state_map_get(at.map, at.hash, at.key, at.key_len);
    if (e == NULL) {
        n = keyed_serialize(k, t, rec);
        state_map_put(at.map, at.hash, at.key, at.key_len, k->ser, n);
        operator_emit(op, rec, meta);
        return;
    }
    if (types_deserialize(t, state_entry_value(e), e->value_len, k->acc) != 0) {
        spate_ctx_fail(&op->ctx, "corrupt reduce state for a key of '%s'", op->ctx.task_name);
        return;
    }
    ((spate_reduce_fn)op->config->fn)(&op->ctx, k->acc, rec, k->out);
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

static void
sum_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    struct keyed_impl *k = op->impl;
    const struct spate_type *t = op->config->out_type;
    int field = op->config->sum_field;
    const struct spate_type *ft = field >= 0 ? t->fields[field] : t;
    const uint8_t *in_field = field >= 0 ? (const uint8_t *)rec + t->offsets[field] : rec;
    struct state_entry *e;
    struct keyed_at at;

    record_meta_copy(&op->ctx.meta, meta);
    keyed_lookup(op, k, rec, meta, &at);
    /* Changed in place below: a map a snapshot still reads is copied first. */
    e = state_map_get_mut(at.map, at.hash, at.key, at.key_len);
    if (e == NULL) {
        /* The stored value is the record: ValueState<out_type>. */
        size_t n = keyed_serialize(k, t, rec);

        e = state_map_put(at.map, at.hash, at.key, at.key_len, k->ser, n);
        if (types_deserialize(t, state_entry_value(e), e->value_len, k->out) != 0)
            goto corrupt;
    } else {
        uint8_t *v = state_entry_value(e);

        if (types_deserialize(t, v, e->value_len, k->out) != 0)
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

/* ---- sinks ---- */

struct print_impl {
    FILE *f; /* the TaskManager's: not closed here */
    char prefix[16];
    char *line;
    size_t cap;
};

static int
print_open_file(struct stream_operator *op, FILE *f)
{
    struct print_impl *p = xcalloc(1, sizeof *p);

    p->f = f;
    if (op->config->kind == OP_SINK_PRINT && op->ctx.parallelism > 1)
        snprintf(p->prefix, sizeof p->prefix, "%d> ", op->ctx.subtask + 1);
    p->cap = 4096;
    p->line = xmalloc(p->cap);
    op->impl = p;
    return 0;
}

static int
print_open(struct stream_operator *op, spate_error *err)
{
    UNUSED(err);
    return print_open_file(op, op->task->print_out ? op->task->print_out : stdout);
}

static void
print_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    struct print_impl *p = op->impl;
    int n;

    UNUSED(meta);
    n = types_format(op->config->in_type, rec, p->line, p->cap);
    if ((size_t)n >= p->cap) {
        p->cap = (size_t)n + 1;
        p->line = xrealloc(p->line, p->cap);
        n = types_format(op->config->in_type, rec, p->line, p->cap);
    }
    if (p->prefix[0])
        fputs(p->prefix, p->f);
    fwrite(p->line, 1, (size_t)n, p->f);
    fputc('\n', p->f);
}

static void
print_close(struct stream_operator *op)
{
    struct print_impl *p = op->impl;

    if (p == NULL)
        return;
    fflush(p->f);
    free(p->line);
    free(p);
    op->impl = NULL;
}

static void
sink_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    before_call(op);
    record_meta_copy(&op->ctx.meta, meta);
    ((spate_sink_fn)op->config->fn)(&op->ctx, rec);
}

/* ---- sources ---- */

struct collection_impl {
    const uint8_t *at, *end;
    uint64_t index;
    void *rec;
};

static int
collection_open(struct stream_operator *op, spate_error *err)
{
    struct collection_impl *c = xcalloc(1, sizeof *c);

    UNUSED(err);
    c->at = op->config->records;
    c->end = op->config->records + op->config->records_len;
    c->rec = out_storage(op->config->out_type);
    op->impl = c;
    return 0;
}

static enum source_status
collection_poll(struct stream_operator *op, int budget, spate_error *err)
{
    struct collection_impl *c = op->impl;
    struct source_run run;
    const char *corrupt = NULL;

    source_run_begin(&run, op);
    while (budget-- > 0 && c->at < c->end) {
        uint32_t len;

        memcpy(&len, c->at, 4);
        if (len > (size_t)(c->end - c->at - 4)) {
            corrupt = "data";
            break;
        }
        /* Subtask i of n takes every n-th record. */
        if (c->index++ % (uint64_t)op->ctx.parallelism == (uint64_t)op->ctx.subtask) {
            if (types_deserialize(op->config->out_type, c->at + 4, len, c->rec) != 0) {
                corrupt = "record";
                break;
            }
            source_run_emit(&run, c->rec);
        }
        c->at += 4 + len;
    }
    source_run_end(&run);
    if (corrupt != NULL) {
        spate_error_set(err, SPATE_EPROTO, "corrupt collection source %s", corrupt);
        return SOURCE_END;
    }
    return c->at < c->end ? SOURCE_MORE : SOURCE_END;
}

/* Checkpoints: u64 records seen, u64 byte offset. */
static void
collection_snapshot(struct stream_operator *op, int64_t checkpoint_id, struct byte_buf *out)
{
    struct collection_impl *c = op->impl;
    uint64_t off = (uint64_t)(c->at - op->config->records);

    uint8_t e[16];

    UNUSED(checkpoint_id);
    memcpy(e, &c->index, 8);
    memcpy(e + 8, &off, 8);
    op_state_add(out, e, sizeof e);
}

static int
collection_restore(struct stream_operator *op, const uint8_t *bytes, size_t len, spate_error *err)
{
    struct collection_impl *c = op->impl;
    uint64_t off;

    if (len != 16)
        return spate_error_set(err, SPATE_EPROTO, "malformed collection source state");
    memcpy(&c->index, bytes, 8);
    memcpy(&off, bytes + 8, 8);
    if (off > op->config->records_len)
        return spate_error_set(err, SPATE_EPROTO, "collection source state past its end");
    c->at = op->config->records + off;
    return 0;
}

static void
generic_free_close(struct stream_operator *op)
{
    struct collection_impl *c = op->impl;

    if (c != NULL)
        free(c->rec);
    free(op->impl);
    op->impl = NULL;
}

/* The generator's index space is cut into max-parallelism splits by residue
 * (split s has the indexes s, s + G, s + 2G, ...), so that its position can
 * move between subtasks on rescaling, as key groups do. A subtask emits its
 * splits' indexes in increasing order, round by round (round r holds the
 * indexes rG .. rG + G - 1): event time that follows the index stays
 * monotonous per subtask. */
struct gen_split {
    uint32_t split;
    uint64_t next; /* its next index */
};

struct generator_impl {
    struct gen_split *splits; /* owned, by split id */
    uint32_t nsplits, at;     /* at: the split whose turn it is */
    uint64_t round;           /* current round: indexes round * G + split */
    uint64_t g;               /* G: the number of splits */
    uint64_t emitted;         /* by this subtask */
    uint64_t start_ns;
    double rate; /* per second, this subtask's share; 0: unlimited */
    void *rec;
    bool restored; /* splits came from a checkpoint: start over from them */
    /* A fresh start's splits, in ascending order, all in the same round:
     * a round is the splits in order, with no search, and their next
     * indexes follow from round and at (generator_aligned_next). A
     * restore, and the last round of a bounded source, leave them to the
     * general path. */
    bool aligned;
};

static int
generator_open(struct stream_operator *op, spate_error *err)
{
    struct generator_impl *g = xcalloc(1, sizeof *g);
    uint32_t lo, hi;

    UNUSED(err);
    g->g = (uint64_t)op->ctx.max_parallelism;
    /* The splits of a fresh start: a contiguous range, as key groups. */
    lo = (uint32_t)(((uint64_t)op->ctx.subtask * g->g + (uint64_t)op->ctx.parallelism - 1) /
                    (uint64_t)op->ctx.parallelism);
    hi = (uint32_t)((((uint64_t)op->ctx.subtask + 1) * g->g - 1) / (uint64_t)op->ctx.parallelism);
    g->splits = xcalloc(hi >= lo ? hi - lo + 1 : 1, sizeof *g->splits);
    for (uint32_t s = lo; s <= hi && lo <= hi; s++)
        g->splits[g->nsplits++] = (struct gen_split){ s, s };
    g->rate = op->config->rate * (double)g->nsplits / (double)g->g;
    g->start_ns = clock_mono_ns();
    g->rec = out_storage(op->config->out_type);
    g->aligned = true;
    op->impl = g;
    return 0;
}

/* The next index to emit (advancing the round as needed); false when every
 * split is past count. */
static bool
generator_next(struct generator_impl *g, uint64_t count, struct gen_split **out)
{
    for (;;) {
        uint64_t lowest = UINT64_MAX;

        for (; g->at < g->nsplits; g->at++) {
            struct gen_split *s = &g->splits[g->at];

            if (count != 0 && s->next >= count)
                continue;
            if (s->next == g->round * g->g + s->split) {
                *out = s;
                return true;
            }
        }
        /* The round is done: on to the lowest round a split still has
         * (a split's next index is round * G + split, split < G: the
         * lowest index is in the lowest round). */
        for (uint32_t i = 0; i < g->nsplits; i++)
            if (count == 0 || g->splits[i].next < count)
                lowest = MIN(lowest, g->splits[i].next);
        if (lowest == UINT64_MAX)
            return false;
        lowest /= g->g;
        g->round = lowest > g->round ? lowest : g->round + 1;
        g->at = 0;
    }
}

/* Aligned splits keep no next index of their own: split i is at
 * (round + 1) * G + split once the round passed it (i < at), else at
 * round * G + split. */
static uint64_t
generator_aligned_next(const struct generator_impl *g, uint32_t i)
{
    return (g->round + (i < g->at)) * g->g + g->splits[i].split;
}

/* Aligned no more: every split's next index written down. */
static void
generator_unalign(struct generator_impl *g)
{
    for (uint32_t i = 0; i < g->nsplits; i++)
        g->splits[i].next = generator_aligned_next(g, i);
    g->aligned = false;
}

/* Aligned splits: up to budget records of the round, the splits from at on
 * in order; the number emitted. The last round of a bounded source (a
 * split past limit) goes to the general path. */
static int
generator_run_aligned(struct stream_operator *op, struct generator_impl *g, spate_generator_fn gen,
                      uint64_t limit, int budget)
{
    /* In locals: the calls may change any memory, not these. */
    const struct gen_split *splits = g->splits, *s = splits + g->at;
    const struct gen_split *end = splits + MIN(g->nsplits, g->at + (uint32_t)budget);
    uint64_t base = g->round * g->g;
    void *rec = g->rec;
    struct source_run run;
    int n;

    /* Fresh splits ascend: the round's indexes below limit are a prefix. */
    while (end > s && base + end[-1].split >= limit)
        end--;
    if (end == s) {
        generator_unalign(g);
        return 0;
    }
    source_run_begin(&run, op);
    for (; s < end; s++) {
        before_call(op);
        gen(&op->ctx, base + s->split, rec);
        source_run_emit(&run, rec);
    }
    source_run_end(&run);
    n = (int)(s - splits) - (int)g->at;
    g->at = (uint32_t)(s - splits);
    if (g->at == g->nsplits) {
        g->at = 0;
        g->round++;
    }
    return n;
}

static enum source_status
generator_poll(struct stream_operator *op, int budget, spate_error *err)
{
    struct generator_impl *g = op->impl;
    uint64_t count = op->config->count;
    spate_generator_fn gen = (spate_generator_fn)op->config->fn;
    struct gen_split *s;

    UNUSED(err);
    if (unlikely(op->restored && !g->restored)) {
        /* Restored with none of the checkpoint's splits (more subtasks
         * than splits left running): it owns none. */
        g->restored = true;
        g->nsplits = 0;
    }
    if (g->nsplits == 0) {
        if (count != 0)
            return SOURCE_END;
        op->wait_until_ns = clock_mono_ns() + 1000000000u; /* owns nothing: idle */
        return SOURCE_WAITING;
    }
    if (g->rate > 0) {
        /* Emit no more than the rate allows by now. */
        double allowed = (double)(clock_mono_ns() - g->start_ns) / 1e9 * g->rate + 1;

        if ((double)g->emitted >= allowed) {
            op->wait_until_ns = g->start_ns + (uint64_t)((double)(g->emitted) / g->rate * 1e9);
            return SOURCE_WAITING;
        }
        if ((double)budget > allowed - (double)g->emitted)
            budget = (int)(allowed - (double)g->emitted) + 1;
    }
    while (budget > 0) {
        uint64_t base, limit = count != 0 ? count : UINT64_MAX;
        int n = 0;

        if (g->aligned) {
            n = generator_run_aligned(op, g, gen, limit, budget);
            g->emitted += (uint64_t)n;
            budget -= n;
            continue;
        }
        if (!generator_next(g, count, &s))
            return SOURCE_END;
        /* The run of splits from s on that are at this round: their
         * indexes follow each other (base + split), emitted without
         * looking for the next split each time. */
        base = g->round * g->g;
        {
            /* In locals: the calls may change any memory, not these. The
             * run is measured first, then emitted without a check each. */
            struct gen_split *splits = g->splits;
            uint32_t at = g->at, end = MIN(g->nsplits, at + (uint32_t)budget), run = at;
            uint64_t step = g->g;
            void *rec = g->rec;
            struct source_run out;

            while (run < end && splits[run].next == base + splits[run].split &&
                   splits[run].next < limit)
                run++;
            source_run_begin(&out, op);
            for (; at < run; at++) {
                s = &splits[at];
                before_call(op);
                gen(&op->ctx, s->next, rec);
                source_run_emit(&out, rec);
                s->next += step;
            }
            source_run_end(&out);
            n = (int)(at - g->at);
            g->at = at;
        }
        g->emitted += (uint64_t)n;
        budget -= n;
    }
    return SOURCE_MORE;
}

/* Checkpoints: one element per owned split, u32 split and u64 next index,
 * so that the splits spread over another parallelism on restore. */
static void
generator_snapshot(struct stream_operator *op, int64_t checkpoint_id, struct byte_buf *out)
{
    struct generator_impl *g = op->impl;

    UNUSED(checkpoint_id);
    for (uint32_t i = 0; i < g->nsplits; i++) {
        uint64_t next = g->aligned ? generator_aligned_next(g, i) : g->splits[i].next;
        uint8_t e[12];

        memcpy(e, &g->splits[i].split, 4);
        memcpy(e + 4, &next, 8);
        op_state_add(out, e, sizeof e);
    }
}

static int
generator_restore(struct stream_operator *op, const uint8_t *bytes, size_t len, spate_error *err)
{
    struct generator_impl *g = op->impl;
    struct gen_split s;

    if (len != 12)
        return spate_error_set(err, SPATE_EPROTO, "malformed generator source state");
    memcpy(&s.split, bytes, 4);
    memcpy(&s.next, bytes + 4, 8);
    if (s.split >= g->g || s.next % g->g != s.split)
        return spate_error_set(err, SPATE_EINVAL,
                               "generator source state of split %u at %llu does not fit %llu "
                               "splits (was the max parallelism changed?)",
                               s.split, (unsigned long long)s.next, (unsigned long long)g->g);
    if (!g->restored) {
        /* The checkpoint's splits replace the fresh start's. */
        g->restored = true;
        g->aligned = false; /* their next indexes are theirs */
        g->nsplits = 0;
        g->emitted = 0;
    }
    g->splits = xrealloc(g->splits, (g->nsplits + 1) * sizeof *g->splits);
    g->splits[g->nsplits++] = s;
    g->emitted += (s.next - s.split) / g->g;
    g->round = 0;
    g->at = 0;
    g->rate = op->config->rate * (double)g->nsplits / (double)g->g;
    /* The rate continues from here, as if the emitted records took their time. */
    if (g->rate > 0)
        g->start_ns = clock_mono_ns() - (uint64_t)((double)g->emitted / g->rate * 1e9);
    return 0;
}

static void
generator_close(struct stream_operator *op)
{
    struct generator_impl *g = op->impl;

    if (g != NULL) {
        free(g->rec);
        free(g->splits);
    }
    free(g);
    op->impl = NULL;
}

/* Line sources (socket, file) share a line splitter over a read buffer. */
struct lines_impl {
    int fd;
    uint8_t *buf;
    size_t len, cap;
    bool eof;
    /* file splits */
    uint64_t split_end; /* absolute offset where this split's last line may start */
    uint64_t pos;       /* absolute offset of buf[0] */
    bool in_split;
    bool skip_first;
    char *path; /* the split's file */
    /* Restored splits not started yet: a subtask of a job resumed at a
     * lower parallelism gets the splits in progress of several. */
    struct split_at *restored;
    size_t nrestored, restored_cap;
};

/* Where a split is being read: the absolute offset of the next line (or
 * of the byte before the split's first line), and of the last byte a line
 * of it may start at. */
struct split_at {
    char *path;
    uint64_t pos, split_end;
    bool skip_first;
};

/* Emits complete lines in buf (up to budget); returns how many it emitted. */
static int
lines_emit(struct stream_operator *op, struct lines_impl *l, int budget, bool flush_tail)
{
    size_t start = 0;
    int emitted = 0;
    struct source_run run;

    source_run_begin(&run, op);
    while (emitted < budget) {
        uint8_t *nl = memchr(l->buf + start, '\n', l->len - start);
        size_t end;
        spate_str line;

        if (nl == NULL) {
            if (!flush_tail || start == l->len)
                break;
            end = l->len;
        } else {
            end = (size_t)(nl - l->buf);
        }
        if (l->in_split && l->pos + start > l->split_end) {
            /* Lines starting after the split's end belong to the next one. */
            l->len = start;
            l->in_split = false;
            break;
        }
        line.data = (const char *)l->buf + start;
        line.len = end - start;
        if (line.len > 0 && line.data[line.len - 1] == '\r')
            line.len--;
        if (l->skip_first) {
            l->skip_first = false;
        } else {
            source_run_emit(&run, &line);
            emitted++;
        }
        start = nl ? end + 1 : end;
    }
    source_run_end(&run);
    memmove(l->buf, l->buf + start, l->len - start);
    l->len -= start;
    l->pos += start;
    return emitted;
}

static int
lines_fill(struct lines_impl *l, spate_error *err, const char *what)
{
    ssize_t n;

    if (l->len == l->cap) {
        l->cap *= 2;
        l->buf = xrealloc(l->buf, l->cap);
    }
    n = read(l->fd, l->buf + l->len, l->cap - l->len);
    if (n < 0) {
        if (errno == EAGAIN || errno == EINTR)
            return 0;
        return spate_error_set(err, -errno, "cannot read %s: %s", what, spate_strerror(-errno));
    }
    if (n == 0)
        l->eof = true;
    l->len += (size_t)n;
    return (int)n;
}

static struct lines_impl *
lines_new(void)
{
    struct lines_impl *l = xcalloc(1, sizeof *l);

    l->fd = -1;
    l->cap = 1 << 20;
    l->buf = xmalloc(l->cap);
    return l;
}

static void
lines_close(struct stream_operator *op)
{
    struct lines_impl *l = op->impl;

    if (l == NULL)
        return;
    if (l->fd >= 0)
        close(l->fd);
    free(l->buf);
    free(l->path);
    for (size_t i = 0; i < l->nrestored; i++)
        free(l->restored[i].path);
    free(l->restored);
    free(l);
    op->impl = NULL;
}

static int
socket_open(struct stream_operator *op, spate_error *err)
{
    struct lines_impl *l = lines_new();
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
    struct addrinfo *res = NULL, *ai;
    char port[16];
    int rc;

    op->impl = l;
    snprintf(port, sizeof port, "%d", op->config->port);
    if ((rc = getaddrinfo(op->config->host, port, &hints, &res)) != 0)
        return spate_error_set(err, SPATE_EINVAL, "cannot resolve '%s': %s", op->config->host,
                               gai_strerror(rc));
    for (ai = res; ai != NULL; ai = ai->ai_next) {
        l->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
        if (l->fd >= 0 && connect(l->fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        rc = -errno;
        if (l->fd >= 0)
            close(l->fd);
        l->fd = -1;
    }
    freeaddrinfo(res);
    if (l->fd < 0)
        return spate_error_set(err, rc ? rc : SPATE_ECONNREFUSED,
                               "cannot connect to socket source %s:%d: %s", op->config->host,
                               op->config->port, spate_strerror(rc));
    fcntl(l->fd, F_SETFL, fcntl(l->fd, F_GETFL) | O_NONBLOCK);
    op->wait_fd = l->fd;
    return 0;
}

static enum source_status
socket_poll(struct stream_operator *op, int budget, spate_error *err)
{
    struct lines_impl *l = op->impl;
    int n;

    if (lines_emit(op, l, budget, false) > 0)
        return SOURCE_MORE;
    n = lines_fill(l, err, "the socket source");
    if (n < 0)
        return SOURCE_END;
    if (l->eof) {
        lines_emit(op, l, budget, true);
        return l->len ? SOURCE_MORE : SOURCE_END;
    }
    return n > 0 ? SOURCE_MORE : SOURCE_WAITING;
}

static int
file_open(struct stream_operator *op, spate_error *err)
{
    UNUSED(err);
    op->impl = lines_new();
    return 0;
}

/* Reads the split at `at` from its position on (taking its path). */
static int
file_split_open(struct lines_impl *l, struct split_at *at, spate_error *err)
{
    int rc;

    if (l->fd >= 0)
        close(l->fd);
    free(l->path);
    l->path = at->path;
    if ((l->fd = open(l->path, O_RDONLY | O_CLOEXEC)) < 0 ||
        lseek(l->fd, (off_t)at->pos, SEEK_SET) < 0) {
        rc = spate_error_set(err, -errno, "cannot read input file '%s' at %llu: %s", l->path,
                             (unsigned long long)at->pos, spate_strerror(-errno));
        return rc;
    }
    l->pos = at->pos;
    l->split_end = at->split_end;
    l->skip_first = at->skip_first;
    l->len = 0;
    l->eof = false;
    l->in_split = true;
    return 0;
}

/* Starts the next split with lines in it: a restored one, else one from
 * the JobMaster's assigner; 1 when there are no more. A split owns the
 * lines that start in [start, start + length): reading begins one byte
 * early and drops everything up to the first newline, which belongs to
 * the split before (Hadoop's line splits). */
static int
file_next_split(struct stream_operator *op, struct lines_impl *l, spate_error *err)
{
    struct split_at at;
    uint64_t start = 0, length = 0;
    int rc;

    if (l->nrestored > 0)
        return file_split_open(l, &l->restored[--l->nrestored], err);
    if (op->task->next_split == NULL)
        return spate_error_set(err, SPATE_ESTATE, "no input split provider for '%s'",
                               op->ctx.task_name);
    do {
        rc = op->task->next_split(op->task->split_data, op->index, &at.path, &start, &length, err);
        if (rc != 0)
            return rc;
        if (length == 0)
            free(at.path);
    } while (length == 0);
    at.skip_first = start > 0;
    at.pos = start > 0 ? start - 1 : 0;
    at.split_end = start + length - 1;
    return file_split_open(l, &at, err);
}

static void
file_snapshot_split(struct byte_buf *out, const struct split_at *at)
{
    uint32_t plen = (uint32_t)strlen(at->path);
    size_t n = 1 + 8 + 8 + 1 + 4 + plen;
    uint8_t *e = xmalloc(n);

    e[0] = 1;
    memcpy(e + 1, &at->pos, 8);
    memcpy(e + 9, &at->split_end, 8);
    e[17] = at->skip_first;
    memcpy(e + 18, &plen, 4);
    memcpy(e + 22, at->path, plen);
    op_state_add(out, e, n);
    free(e);
}

/* Checkpoints: an element per split in progress or restored and not
 * started (the bytes read but not yet emitted are read again): u8 1, u64
 * position, u64 split end, u8 skip first, u32 path length, path; or one
 * element u8 0 when there is none (between splits: the JobMaster's
 * assigner has the rest). On rescaling the elements spread over the new
 * subtasks. */
static void
file_snapshot(struct stream_operator *op, int64_t checkpoint_id, struct byte_buf *out)
{
    struct lines_impl *l = op->impl;
    uint8_t none = 0;

    UNUSED(checkpoint_id);
    if (l->in_split)
        file_snapshot_split(out,
                            &(struct split_at){ l->path, l->pos, l->split_end, l->skip_first });
    for (size_t i = 0; i < l->nrestored; i++)
        file_snapshot_split(out, &l->restored[i]);
    if (!l->in_split && l->nrestored == 0)
        op_state_add(out, &none, 1);
}

/* One element of the state: a split to read before asking for new ones. */
static int
file_restore(struct stream_operator *op, const uint8_t *bytes, size_t len, spate_error *err)
{
    struct lines_impl *l = op->impl;
    struct split_at *at;
    uint32_t plen;

    if (len == 1 && bytes[0] == 0)
        return 0;
    if (len < 22 || bytes[0] != 1 || (memcpy(&plen, bytes + 18, 4), len != 22 + (size_t)plen))
        return spate_error_set(err, SPATE_EPROTO,
                               "malformed file source state: an element of %zu bytes", len);
    xgrow((void **)&l->restored, &l->restored_cap, l->nrestored + 1, sizeof *l->restored);
    at = &l->restored[l->nrestored++];
    memcpy(&at->pos, bytes + 1, 8);
    memcpy(&at->split_end, bytes + 9, 8);
    at->skip_first = bytes[17] != 0;
    at->path = xstrndup((const char *)bytes + 22, plen);
    return 0;
}

static enum source_status
file_poll(struct stream_operator *op, int budget, spate_error *err)
{
    struct lines_impl *l = op->impl;

    if (!l->in_split && file_next_split(op, l, err) != 0)
        return SOURCE_END; /* no more splits, or err says why */
    if (lines_emit(op, l, budget, l->eof) > 0 || !l->in_split)
        return SOURCE_MORE;
    if (l->eof) {
        l->in_split = false;
        return SOURCE_MORE;
    }
    if (lines_fill(l, err, "an input file") < 0)
        return SOURCE_END;
    return SOURCE_MORE;
}

/* ---- timestamps and watermarks (the generator: watermark_generator.h) ---- */

static void
assign_process(struct stream_operator *op, const void *rec, const struct record_meta *meta)
{
    struct watermark_generator *g = op->watermarks;
    struct record_meta *m = &op->ctx.meta; /* the input's, then the record's own */

    before_call(op);
    record_meta_copy(m, meta);
    m->timestamp = watermark_generator_on_event(op, g, rec, m->timestamp);
    operator_emit(op, rec, m);
    if (unlikely(g->watermark_fn != NULL))
        watermark_generator_punctuated(op, g, rec, m->timestamp);
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

static const struct operator_vtable vtables[] = {
    [OP_SOURCE_COLLECTION] = { .state = OPERATOR_OWN_STATE,
                               .open = collection_open,
                               .close = generic_free_close,
                               .poll = collection_poll,
                               .snapshot_state = collection_snapshot,
                               .restore_state = collection_restore },
    [OP_SOURCE_GENERATOR] = { .state = OPERATOR_OWN_STATE,
                              .open = generator_open,
                              .close = generator_close,
                              .poll = generator_poll,
                              .snapshot_state = generator_snapshot,
                              .restore_state = generator_restore },
    [OP_SOURCE_SOCKET] = { .state = OPERATOR_STATELESS,
                           .open = socket_open,
                           .close = lines_close,
                           .poll = socket_poll },
    [OP_SOURCE_FILE] = { .state = OPERATOR_OWN_STATE,
                         .open = file_open,
                         .close = lines_close,
                         .poll = file_poll,
                         .snapshot_state = file_snapshot,
                         .restore_state = file_restore },
    [OP_MAP] = { .state = OPERATOR_STATELESS,
                 .open = map_open,
                 .process = map_process,
                 .close = map_close },
    [OP_FILTER] = { .state = OPERATOR_STATELESS,
                    .open = nothing_open,
                    .process = filter_process,
                    .close = nothing_close },
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
    [OP_SINK_PRINT] = { .state = OPERATOR_STATELESS,
                        .open = print_open,
                        .process = print_process,
                        .close = print_close },
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
    const struct spate_stream *c = op->config;
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

int
operator_new(const struct spate_stream *config, int index, const struct task_info *task,
             struct output *out, struct stream_operator **opp, spate_error *err)
{
    struct stream_operator *op;
    int rc;

    if (stream_node_is_virtual(config) ||
        (config->kind >= ARRAY_SIZE(vtables) && config->kind != OP_WINDOW))
        return spate_error_set(err, SPATE_EINVAL, "operator kind %d cannot run", config->kind);
    op = xcalloc(1, sizeof *op);
    op->vt = config->kind == OP_WINDOW ? &window_operator_vtable : &vtables[config->kind];
    if (config->kind == OP_SINK_FILE)
        op->vt = &file_sink_vtable; /* file_sink.c, with checkpoints or without */
    op->config = config;
    op->index = index;
    op->task = task;
    op->out = out;
    op->wait_fd = -1;
    op->current_watermark = INT64_MIN;
    op->ctx.op = op;
    op->ctx.params = config->params;
    op->ctx.params_len = config->params_len;
    op->ctx.subtask = task->subtask;
    op->ctx.parallelism = task->parallelism;
    op->ctx.max_parallelism = task->max_parallelism;
    op->ctx.task_name = task->task_name;
    op->ctx.meta = no_meta;
    op->ctx.accumulators = task->accumulators;
    if (config->wm.set ? config->kind != OP_ASSIGN_TIMESTAMPS && !stream_node_is_source(config)
                       : config->kind == OP_ASSIGN_TIMESTAMPS) {
        free(op);
        return spate_error_set(err, SPATE_EINVAL,
                               "operator '%s' (%s): a watermark strategy belongs to sources and "
                               "timestamps/watermarks operators, and the latter need one",
                               config->name ? config->name : "", operator_kind_name(config->kind));
    }
    if (config->wm.set)
        op->watermarks = watermark_generator_new(op, &config->wm);
    if ((rc = op->vt->open(op, err)) != 0)
        goto fail;
    if (config->nstates > 0 && op->backend == NULL) {
        /* Operator state on an operator of another kind (a source, a map). */
        struct heap_keyed_backend *b = xcalloc(1, sizeof *b);

        op->backend = &b->base;
        op->owns_backend = true;
        if ((rc = operator_backend_init(op, b, NULL, 0, err)) != 0)
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
    if (op->owns_backend) {
        op->backend->ops->dispose(op->backend);
        free(op->backend);
        op->backend = NULL;
    }
    watermark_generator_free(op->watermarks);
    free(op->sides);
    scratch_release(&op->ctx.scratch);
    free(op->ctx.failure);
    free(op);
}
