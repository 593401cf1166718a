/* The spate_ctx functions user code calls (spate.h), the scratch allocator,
 * accumulators, and keyed state and timers through the operator's state
 * backend (state/keyed_state_backend.h), which operator_backend_init makes
 * from the operator's declared states. Task thread only. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "state/heap_keyed_backend.h"
#include "state/rocksdb_keyed_backend.h"
#include "state/state_backend.h"
#include "streaming/accumulators.h"
#include "streaming/operator.h"
#include "streaming/operator_metrics.h"
#include "streaming/types.h"

const void *
spate_ctx_params(const spate_ctx *ctx, size_t *len)
{
    if (len != NULL)
        *len = ctx->params_len;
    return ctx->params_len ? ctx->params : NULL;
}

int
spate_ctx_subtask_index(const spate_ctx *ctx)
{
    return ctx->subtask;
}

int
spate_ctx_parallelism(const spate_ctx *ctx)
{
    return ctx->parallelism;
}

int
spate_ctx_max_parallelism(const spate_ctx *ctx)
{
    return ctx->max_parallelism;
}

const char *
spate_ctx_task_name(const spate_ctx *ctx)
{
    return ctx->task_name;
}

void *
spate_ctx_user(const spate_ctx *ctx)
{
    return ctx->user;
}

void
spate_ctx_set_user(spate_ctx *ctx, void *user)
{
    ctx->user = user;
}

void
spate_emit(spate_ctx *ctx, const void *rec)
{
    ctx_settle(ctx);
    operator_emit(ctx->op, rec, &ctx->meta);
}

int64_t
spate_ctx_timestamp(const spate_ctx *ctx)
{
    ctx_settle(ctx);
    return ctx->meta.timestamp;
}

int64_t
spate_ctx_current_watermark(const spate_ctx *ctx)
{
    return ctx->op->current_watermark;
}

int64_t
spate_ctx_current_processing_time(const spate_ctx *ctx)
{
    (void)ctx;
    return clock_wall_ms();
}

spate_bytes
spate_ctx_current_key(const spate_ctx *ctx)
{
    ctx_settle(ctx);
    return ctx->keyctx.key;
}

void
spate_ctx_fail(spate_ctx *ctx, const char *fmt, ...)
{
    va_list ap;

    if (ctx->failure != NULL)
        return;
    va_start(ap, fmt);
    ctx->failure = xvasprintf(fmt, ap);
    va_end(ap);
}

spate_counter *
spate_ctx_counter(spate_ctx *ctx, const char *name)
{
    return accumulators_counter(ctx->accumulators, name);
}

void
spate_counter_add(spate_counter *counter, int64_t delta)
{
    counter->value += delta;
}

/* ---- scratch ---- */

#define SCRATCH_CHUNK 65536

void *
spate_ctx_alloc(spate_ctx *ctx, size_t size)
{
    struct scratch *s = &ctx->scratch;
    size_t at = (s->used + 15) & ~(size_t)15;

    if (s->chunk == NULL || at + size > s->cap) {
        size_t cap = size > SCRATCH_CHUNK ? size : SCRATCH_CHUNK;

        /* Records already handed out may point into the old chunk: keep it
         * until the call ends. */
        if (s->chunk != NULL) {
            s->old = xrealloc(s->old, (s->nold + 1) * sizeof *s->old);
            s->old[s->nold++] = s->chunk;
        }
        s->chunk = xmalloc(cap);
        s->cap = cap;
        at = 0;
    }
    s->used = at + size;
    return s->chunk + at;
}

void
scratch_reset(struct scratch *s)
{
    s->used = 0;
    if (s->nold != 0) {
        for (size_t i = 0; i < s->nold; i++)
            free(s->old[i]);
        free(s->old);
        s->old = NULL;
        s->nold = 0;
    }
}

void
scratch_release(struct scratch *s)
{
    scratch_reset(s);
    free(s->chunk);
    s->chunk = NULL;
    s->cap = 0;
}

/* ---- keyed state: the states' calls through their backend's table ---- */

spate_state *
spate_ctx_state(spate_ctx *ctx, const char *name)
{
    struct keyed_state_backend *b = ctx->op->backend;

    ctx_settle(ctx);
    return b != NULL ? b->ops->state(b, name) : NULL;
}

/* State is of the current key: the lazy key context settles first. */
static inline void
state_settle(const spate_state *st)
{
    ctx_settle(st->backend->user_ctx);
}

/* Broadcast state is written only while the broadcast side is processed. */
static bool
state_writable(spate_state *st)
{
    if (st->desc.scope != SCOPE_BROADCAST || st->backend->broadcast_writable)
        return true;
    spate_ctx_fail(st->backend->user_ctx,
                   "broadcast state '%s' is read-only outside process_broadcast", st->desc.name);
    return false;
}

bool
spate_value_get(spate_state *st, void *out)
{
    state_settle(st);
    return st->backend->ops->value_get(st, out);
}

bool
state_value_get_internal(spate_state *st, void *out)
{
    state_settle(st);
    return st->backend->ops->value_get_internal(st, out);
}

void
spate_value_update(spate_state *st, const void *value)
{
    state_settle(st);
    st->backend->ops->value_update(st, value);
}

void
spate_state_clear(spate_state *st)
{
    state_settle(st);
    if (st->desc.kind == STATE_MAP && !state_writable(st))
        return;
    st->backend->ops->clear(st);
}

void
spate_list_add(spate_state *st, const void *value)
{
    state_settle(st);
    st->backend->ops->add(st, 0, value);
}

void
spate_list_iter(spate_state *st, spate_iter *it)
{
    state_settle(st);
    st->backend->ops->list_iter(st, it);
}

bool
spate_list_next(spate_iter *it, void *out)
{
    if (it->st == NULL) {
        /* One record in memory: a pre-aggregated window result. */
        if (it->at == NULL || it->at == it->end)
            return false;
        memcpy(out, it->at, (size_t)(it->end - it->at));
        it->at = it->end;
        return true;
    }
    return it->st->backend->ops->list_next(it, out, NULL);
}

bool
spate_map_get(spate_state *st, const void *key, void *value)
{
    state_settle(st);
    return st->backend->ops->map_get(st, key, value);
}

void
spate_map_put(spate_state *st, const void *key, const void *value)
{
    state_settle(st);
    if (state_writable(st))
        st->backend->ops->map_put(st, key, value);
}

bool
spate_map_remove(spate_state *st, const void *key)
{
    state_settle(st);
    return state_writable(st) && st->backend->ops->map_remove(st, key);
}

void
spate_map_iter(spate_state *st, spate_iter *it)
{
    state_settle(st);
    memset(it, 0, sizeof *it);
    it->st = st;
}

bool
spate_map_next(spate_iter *it, void *key, void *value)
{
    return it->st->backend->ops->map_next(it, key, value);
}

void
spate_reducing_add(spate_state *st, const void *value)
{
    state_settle(st);
    st->backend->ops->add(st, 0, value);
}

bool
spate_reducing_get(spate_state *st, void *out)
{
    state_settle(st);
    return st->backend->ops->value_get(st, out);
}

void
spate_aggregating_add(spate_state *st, const void *in)
{
    state_settle(st);
    st->backend->ops->add(st, 0, in);
}

bool
spate_aggregating_get(spate_state *st, void *out)
{
    state_settle(st);
    return st->backend->ops->value_get(st, out);
}

/* ---- timers ---- */

void
spate_timer_register_event_time(spate_ctx *ctx, int64_t timestamp)
{
    struct keyed_state_backend *b = ctx->op->backend;

    ctx_settle(ctx);
    if (b != NULL)
        b->ops->register_timer(b, true, timestamp);
}

void
spate_timer_register_processing_time(spate_ctx *ctx, int64_t timestamp)
{
    struct keyed_state_backend *b = ctx->op->backend;

    ctx_settle(ctx);
    if (b != NULL)
        b->ops->register_timer(b, false, timestamp);
}

void
spate_timer_delete_event_time(spate_ctx *ctx, int64_t timestamp)
{
    struct keyed_state_backend *b = ctx->op->backend;

    ctx_settle(ctx);
    if (b != NULL)
        b->ops->delete_timer(b, true, timestamp);
}

void
spate_timer_delete_processing_time(spate_ctx *ctx, int64_t timestamp)
{
    struct keyed_state_backend *b = ctx->op->backend;

    ctx_settle(ctx);
    if (b != NULL)
        b->ops->delete_timer(b, false, timestamp);
}

/* ---- an operator's keyed state backend ---- */

/* Record types as the backend's serializer (types.h). */
static size_t
type_ser_size(const void *type, const void *value)
{
    return types_serialized_size(type, value);
}

static size_t
type_ser_write(const void *type, const void *value, uint8_t *out, size_t cap)
{
    return types_serialize(type, value, out, cap);
}

static int
type_ser_read(const void *type, const uint8_t *bytes, size_t len, void *value)
{
    return types_deserialize(type, bytes, len, value);
}

static const struct state_serializer type_serializer = {
    .size = type_ser_size,
    .write = type_ser_write,
    .read = type_ser_read,
};

static struct state_type
state_type_of(const struct spate_type *t)
{
    if (t == NULL)
        return (struct state_type){ .align = 1 };
    return (struct state_type){
        .ser = &type_serializer,
        .type = t,
        .name = t->name != NULL ? t->name : "",
        .version = t->version,
        .size = (uint32_t)t->size,
        .align = (uint32_t)t->align,
        .plain = t->plain,
    };
}

static struct state_descriptor
state_descriptor_of(const struct state_decl *d)
{
    return (struct state_descriptor){
        .name = d->name,
        .kind = d->kind,
        .scope = d->scope,
        .timestamped = d->timestamped,
        .ttl_ms = d->ttl_ms,
        .value = state_type_of(d->type),
        .key = state_type_of(d->key_type),
        .reduce = d->reduce,
        .agg = d->agg,
    };
}

/* A state call that cannot return an error failed: the task fails. */
static void
backend_fail(spate_ctx *ctx, const char *message)
{
    spate_ctx_fail(ctx, "state of '%s': %s", ctx->task_name, message);
}

#define NATIVE_METRICS_INTERVAL_NS 1000000000ull

/* The gauges of the native RocksDB metrics the configuration asks for,
 * "rocksdb.<name>" in op's group (Flink's RocksDBNativeMetricMonitor),
 * read first when the task next looks. */
static void
native_metrics_open(struct stream_operator *op)
{
    const struct state_backend_options *o = op->task->state_backend;

    if (o == NULL || o->type != STATE_BACKEND_ROCKSDB || o->native_metrics == 0 ||
        op->task->metrics == NULL)
        return;
    op->native_metrics = xcalloc(ROCKSDB_NATIVE_METRIC_COUNT, sizeof *op->native_metrics);
    for (int i = 0; i < ROCKSDB_NATIVE_METRIC_COUNT; i++) {
        char name[64];

        if (!(o->native_metrics & (1u << i)))
            continue;
        snprintf(name, sizeof name, "rocksdb.%s", rocksdb_native_metrics[i]);
        op->native_metrics[i] = operator_metrics_gauge(op, name, NULL);
    }
    op->native_metrics_ns = 0;
}

int
operator_backend_init(struct stream_operator *op, const struct state_decl *extra, int nextra,
                      spate_error *err)
{
    const struct operator_settings *n = op->config;
    int count = n->nstates + nextra;
    struct state_descriptor *descs = xcalloc((size_t)count + 1, sizeof *descs);
    struct keyed_backend_config c = {
        .states = descs,
        .nstates = count,
        .key = &op->ctx.keyctx,
        .user_ctx = &op->ctx,
        .max_parallelism = op->ctx.max_parallelism,
        .parallelism = op->task->parallelism,
        .subtask = op->task->subtask,
        .wake_ns = &op->next_processing_ns,
        .owner = op,
        .fail = backend_fail,
    };
    int rc;

    for (int i = 0; i < count; i++)
        descs[i] = state_descriptor_of(i < n->nstates ? &n->states[i] : &extra[i - n->nstates]);
    rc = state_backend_create(op->task->state_backend, &c, op->ctx.task_name, &op->backend, err);
    free(descs);
    if (rc != 0)
        return spate_error_wrap(err, "the state of '%s'", op->ctx.task_name);
    native_metrics_open(op);
    return 0;
}

void
operator_backend_metrics(struct stream_operator *op, uint64_t now_ns)
{
    if (op->native_metrics == NULL || now_ns < op->native_metrics_ns || op->backend == NULL)
        return;
    for (int i = 0; i < ROCKSDB_NATIVE_METRIC_COUNT; i++) {
        uint64_t v;

        if (op->native_metrics[i] != NULL &&
            rocksdb_keyed_backend_native_metric(op->backend, i, &v))
            metric_value_set(op->native_metrics[i], (double)v);
    }
    op->native_metrics_ns = now_ns + NATIVE_METRICS_INTERVAL_NS;
}

void
operator_backend_free(struct stream_operator *op)
{
    free(op->native_metrics);
    op->native_metrics = NULL;
    if (op->backend == NULL)
        return;
    op->backend->ops->dispose(op->backend);
    free(op->backend);
    op->backend = NULL;
}

/* ---- side outputs and the typed current key ---- */

void
spate_ctx_output(spate_ctx *ctx, spate_tag tag, const void *rec)
{
    struct stream_operator *op = ctx->op;

    ctx_settle(ctx);
    if (tag.id == 0) {
        spate_ctx_fail(ctx,
                       "spate_ctx_output in '%s': not a tag made by "
                       "spate_output_tag (are the function's spate_params set?)",
                       ctx->task_name);
        return;
    }
    /* A handful of tags at most: a scan beats any map. */
    for (int i = 0; i < op->nsides; i++) {
        if (op->sides[i].id == tag.id) {
            op->sides[i].out->collect(op->sides[i].out, rec, &ctx->meta);
            return;
        }
    }
    /* A side output nobody reads: dropped, as in Flink. */
}

/* The type of the current key of ctx's operator: the record's or the
 * field's; NULL for a key_by function's bytes or no key. */
static const struct spate_type *
current_key_type(const spate_ctx *ctx)
{
    const struct operator_settings *c = ctx->op->config;

    switch (c->key.kind) {
    case KEY_VALUE:
        return c->in_type;
    case KEY_FIELD:
        return c->in_type->fields[c->key.field];
    default:
        return NULL;
    }
}

/* Keys of the type are its in-memory bytes (types_key_bytes). */
static bool
fixed_size(const struct spate_type *t)
{
    return t->kind == TYPE_INT64 || t->kind == TYPE_DOUBLE || (t->kind != TYPE_STRING && t->plain);
}

/* The current key's bytes when its type is want; else fails the task with
 * the reason and gives NULL. */
static const void *
key_of_type(spate_ctx *ctx, const struct spate_type *want, const char *what, spate_bytes *key)
{
    const struct spate_type *have = current_key_type(ctx);
    char h[256], w[256];

    *key = spate_ctx_current_key(ctx);
    if (have != NULL && key->data != NULL && types_same(have, want) &&
        (!fixed_size(want) || key->len == want->size))
        return key->data;
    types_describe(want, w, sizeof w);
    if (ctx->op->config->key.kind == KEY_NONE)
        spate_ctx_fail(ctx, "%s in '%s': the operator is not keyed", what, ctx->task_name);
    else if (have == NULL)
        spate_ctx_fail(ctx,
                       "%s in '%s': the key comes from a key_by function, as bytes: read it "
                       "with spate_ctx_current_key",
                       what, ctx->task_name);
    else if (key->data == NULL)
        spate_ctx_fail(ctx, "%s in '%s': no key is current here", what, ctx->task_name);
    else if (types_same(have, want))
        spate_ctx_fail(ctx, "%s in '%s': the key's %zu bytes are no %s (a key_by function's key?)",
                       what, ctx->task_name, key->len, w);
    else {
        types_describe(have, h, sizeof h);
        spate_ctx_fail(ctx, "%s in '%s': the key is %s, not %s", what, ctx->task_name, h, w);
    }
    return NULL;
}

int64_t
spate_ctx_current_key_int64(spate_ctx *ctx)
{
    spate_bytes key;
    int64_t v = 0;

    if (key_of_type(ctx, spate_type_int64(), "spate_ctx_current_key_int64", &key) != NULL)
        memcpy(&v, key.data, sizeof v);
    return v;
}

double
spate_ctx_current_key_double(spate_ctx *ctx)
{
    spate_bytes key;
    double v = 0;

    if (key_of_type(ctx, spate_type_double(), "spate_ctx_current_key_double", &key) != NULL)
        memcpy(&v, key.data, sizeof v);
    return v;
}

spate_str
spate_ctx_current_key_string(spate_ctx *ctx)
{
    spate_bytes key;

    if (key_of_type(ctx, spate_type_string(), "spate_ctx_current_key_string", &key) == NULL)
        return (spate_str){ "", 0 };
    return (spate_str){ key.data, key.len };
}

bool
spate_ctx_current_key_as(spate_ctx *ctx, const spate_type *type, void *out)
{
    spate_bytes key;

    if (type == NULL || out == NULL) {
        spate_ctx_fail(ctx, "spate_ctx_current_key_as in '%s': no type or no storage",
                       ctx->task_name);
        return false;
    }
    if (key_of_type(ctx, type, "spate_ctx_current_key_as", &key) == NULL)
        return false;
    /* The key's bytes are types_key_bytes': a string's bytes, a number's or
     * a plain record's memory, or else the serialized record. */
    if (type->kind == TYPE_STRING) {
        *(spate_str *)out = (spate_str){ key.data, key.len };
        return true;
    }
    if (type->kind == TYPE_INT64 || type->kind == TYPE_DOUBLE || type->plain) {
        memcpy(out, key.data, type->size);
        return true;
    }
    if (types_deserialize(type, key.data, key.len, out) != 0) {
        spate_ctx_fail(ctx, "spate_ctx_current_key_as in '%s': the key does not read as %s",
                       ctx->task_name, type->name);
        return false;
    }
    return true;
}
