/* The heap keyed state backend (heap_keyed_backend.h). An entry's key in a state map
 * is [u32 key length][key][u32 namespace length][namespace][map key], so
 * (key, namespace, map key) triples never collide; its value is the
 * serialized value, after an 8-byte write time (ms) when the state has a TTL. */
#include <stdlib.h>
#include <string.h>
/* Inlined: composite keys hash a window's 16 bytes per record. */
#define XXH_INLINE_ALL
#include <xxhash.h>

#include "core/alloc.h"
#include "core/bytes.h"
#include "core/clock.h"
#include "core/util.h"
#include "state/heap_keyed_backend.h"

#define TTL_HEADER      8
#define CLEANUP_PER_USE 2

/* Values (and map keys) through their type's serializer. */
static inline size_t
ser_size(const struct state_type *t, const void *v)
{
    return t->ser->size(t->type, v);
}

static inline void
ser_write(const struct state_type *t, const void *v, uint8_t *out, size_t cap)
{
    t->ser->write(t->type, v, out, cap);
}

static inline int
ser_read(const struct state_type *t, const uint8_t *bytes, size_t len, void *v)
{
    return t->ser->read(t->type, bytes, len, v);
}

SPATE_NOINLINE uint8_t *
keyed_backend_buf_grow(struct heap_keyed_backend *b, size_t n)
{
    b->buf_cap = n * 2;
    b->buf = xrealloc(b->buf, b->buf_cap);
    return b->buf;
}

static inline void *
backend_buf(struct heap_keyed_backend *b, size_t n)
{
    return likely(n <= b->buf_cap) ? b->buf : keyed_backend_buf_grow(b, n);
}

/* ---- composite keys ---- */

static inline size_t
composite_prefix_len(const struct state_key_context *ctx)
{
    return 4 + ctx->key.len + 4 + ctx->ns_len;
}

uint64_t
keyed_ns_hash_slow(struct heap_keyed_backend *b, const void *ns, size_t len)
{
    uint64_t h = XXH3_64bits(ns, len);

    if (len <= sizeof b->ns_last) {
        memcpy(b->ns_last, ns, len);
        b->ns_last_len = len;
        b->ns_last_hash = h;
    }
    return h;
}

static inline uint64_t
composite_hash(struct heap_keyed_backend *b, const struct state_key_context *ctx, const void *extra,
               size_t extra_len)
{
    uint64_t h = keyed_composite_hash(ctx->key_hash,
                                      ctx->ns_len ? keyed_ns_hash(b, ctx->ns, ctx->ns_len) : 0);

    /* A map key spreads its entries too, keeping the key group's bits. */
    if (extra_len)
        h ^= XXH3_64bits(extra, extra_len) << 16;
    return h;
}

/* The key context that scopes st: the current key for keyed state, none
 * for operator and broadcast state. */
static inline const struct state_key_context *
scope_ctx(const struct heap_state *st, struct state_key_context *keyless)
{
    if (likely(st->base.desc.scope == SCOPE_KEYED))
        return st->backend->key;
    memset(keyless, 0, sizeof *keyless);
    keyless->key.data = "";
    return keyless;
}

/* A TTL entry that has expired is removed. */
static SPATE_NOINLINE struct state_entry *
state_entry_ttl(struct heap_state *st, struct state_map *map, struct state_entry *e, uint64_t hash,
                const uint8_t *key, size_t key_len)
{
    int64_t written;

    memcpy(&written, state_entry_value(e), 8);
    if (st->backend->now_ms() - written >= st->ttl_ms) {
        state_map_remove(map, hash, key, key_len);
        return NULL;
    }
    return e;
}

/* The current key's entry of st, honouring TTL (an expired entry is removed
 * and reported absent). map_key: the map state's key bytes, or NULL. The
 * composite key is left in the backend's buffer. */
static struct state_entry *
state_entry_for(struct heap_state *st, const void *map_key, size_t map_key_len, uint64_t *hash,
                size_t *key_len, struct state_map **mapp)
{
    struct heap_keyed_backend *b = st->backend;
    struct state_key_context keyless;
    const struct state_key_context *ctx = scope_ctx(st, &keyless);
    size_t plen = composite_prefix_len(ctx);
    uint8_t *key = backend_buf(b, plen + map_key_len);
    struct state_map *map = keyed_state_map(&st->maps, ctx->key_hash);
    struct state_entry *e;

    keyed_composite_prefix(ctx, key);
    if (map_key_len)
        memcpy(key + plen, map_key, map_key_len);
    *key_len = plen + map_key_len;
    *hash = composite_hash(b, ctx, map_key, map_key_len);
    *mapp = map;
    e = state_map_get(map, *hash, key, *key_len);
    if (e != NULL && st->ttl_ms != 0)
        e = state_entry_ttl(st, map, e, *hash, key, *key_len);
    return e;
}

/* state_entry_for for the per-record path (windows, keyed functions):
 * keyed state without TTL and without a map key, found inline. */
static SPATE_INLINE struct state_entry *
keyed_entry(struct heap_state *st, uint64_t *hash, size_t *key_len, struct state_map **mapp)
{
    struct heap_keyed_backend *b = st->backend;
    const struct state_key_context *ctx = b->key;

    if (unlikely(!st->fast))
        return state_entry_for(st, NULL, 0, hash, key_len, mapp);
    *key_len = keyed_composite_prefix(ctx, backend_buf(b, composite_prefix_len(ctx)));
    *hash = composite_hash(b, ctx, NULL, 0);
    *mapp = keyed_state_map(&st->maps, ctx->key_hash);
    return state_map_get(*mapp, *hash, b->buf, *key_len);
}

/* The bytes of a plain value of st stored in e, in place when aligned for
 * the type, else copied into tmp (put them back with plain_put_back);
 * NULL when the stored value is not of the type's size. */
static inline void *
plain_value(struct heap_state *st, struct state_entry *e, void *tmp)
{
    size_t hdr = st->ttl_ms ? TTL_HEADER : 0;
    const struct state_type *t = &st->base.desc.value;
    uint8_t *p = state_entry_value(e) + hdr;

    if (e->value_len != hdr + t->size)
        return NULL;
    if (((uintptr_t)p & (t->align - 1)) == 0)
        return p;
    bytes_copy(tmp, p, t->size);
    return tmp;
}

/* After a change through plain_value: a copy goes back into the entry,
 * and a TTL's write time is renewed. */
static inline void
plain_put_back(struct heap_state *st, struct state_entry *e, const void *v)
{
    size_t hdr = st->ttl_ms ? TTL_HEADER : 0;
    uint8_t *p = state_entry_value(e) + hdr;

    if (v != p)
        bytes_copy(p, v, st->base.desc.value.size);
    if (hdr) {
        int64_t now = st->backend->now_ms();

        memcpy(state_entry_value(e), &now, 8);
    }
}

/* The entry of the current key, to be changed in place: copies a table or
 * block that a snapshot shares first. */
static inline struct state_entry *
own_entry(struct state_map *map, struct state_entry *e, uint64_t hash, const uint8_t *key,
          size_t key_len)
{
    if (map->shared)
        return state_map_get_mut(map, hash, key, key_len);
    state_map_own_entry(map, e);
    return e;
}

/* The per-record path of plain values (an accumulator of numbers): *e
 * owned first, then plain_value of it (put back with plain_put_back). */
static SPATE_INLINE void *
plain_begin(struct heap_state *st, struct state_map *map, struct state_entry **e, uint64_t hash,
            size_t key_len)
{
    if (unlikely(map->shared || map->base != NULL))
        *e = own_entry(map, *e, hash, st->backend->buf, key_len);
    return plain_value(st, *e, st->tmp);
}

void *
keyed_value_in_place_slow(struct heap_state *st)
{
    struct state_map *map;
    struct state_entry *e;
    uint64_t hash;
    size_t key_len;
    void *v;

    if (unlikely(!st->in_place))
        return NULL;
    e = keyed_entry(st, &hash, &key_len, &map);
    if (unlikely(e == NULL))
        return NULL;
    v = plain_begin(st, map, &e, hash, key_len);
    return likely(v != st->tmp) ? v : NULL; /* a copy would not be where it is stored */
}

/* The value bytes of an entry, past the TTL header. */
static inline const uint8_t *
entry_payload(const struct heap_state *st, const struct state_entry *e, size_t *len)
{
    size_t hdr = st->ttl_ms ? TTL_HEADER : 0;

    *len = e->value_len - hdr;
    return state_entry_value(e) + hdr;
}

/* Incremental TTL clean-up: looks at a few entries per state use. */
static SPATE_NOINLINE void
ttl_cleanup_walk(struct heap_keyed_backend *b)
{
    int64_t now = b->now_ms();

    for (int n = 0; n < CLEANUP_PER_USE; n++) {
        struct heap_state *st;
        struct state_map *map;
        uint32_t groups;

        if (b->nstates == 0)
            return;
        if (b->cleanup_state >= (uint32_t)b->nstates)
            b->cleanup_state = 0;
        st = &b->states[b->cleanup_state];
        if (st->ttl_ms == 0) {
            b->cleanup_state++;
            continue;
        }
        groups = st->maps.range.end - st->maps.range.start + 1;
        if (b->cleanup_group >= groups) {
            b->cleanup_group = 0;
            b->cleanup_state++;
            continue;
        }
        map = &st->maps.maps[b->cleanup_group];
        if (map->slots == NULL || b->cleanup_slot > map->mask) {
            b->cleanup_slot = 0;
            b->cleanup_group++;
            continue;
        }
        {
            struct state_entry *e = &map->slots[b->cleanup_slot];
            int64_t written;

            if (state_entry_used(e)) {
                memcpy(&written, state_entry_value(e), 8);
                if (now - written >= st->ttl_ms) {
                    /* Removal shifts entries back into this slot: look again. */
                    state_map_remove(map, e->hash, state_entry_key(e), state_entry_key_len(e));
                    continue;
                }
            }
        }
        b->cleanup_slot++;
    }
}

static inline void
ttl_cleanup_step(struct heap_keyed_backend *b)
{
    if (b->has_ttl) /* else nothing to clean, no clock to read */
        ttl_cleanup_walk(b);
}

/* Stores payload (len bytes) as the current key's value of st; e is the
 * key's entry when the caller found one (written in place when the size
 * stays: one lookup per update; not while a snapshot shares the map, and
 * not in a block the snapshot still reads). */
static struct state_entry *
state_store(struct heap_state *st, struct state_map *map, struct state_entry *e, uint64_t hash,
            const uint8_t *key, size_t key_len, const uint8_t *payload, size_t len)
{
    size_t hdr = st->ttl_ms ? TTL_HEADER : 0;

    if (e == NULL || e->value_len != hdr + len || map->shared)
        e = state_map_put(map, hash, key, key_len, NULL, hdr + len);
    else
        state_map_own_entry(map, e);

    if (hdr) {
        int64_t now = st->backend->now_ms();

        memcpy(state_entry_value(e), &now, 8);
    }
    memcpy(state_entry_value(e) + hdr, payload, len);
    return e;
}

/* Serializes rec of type t into the state's write buffer (not the
 * backend's, which holds the composite key). */
static uint8_t *
serialize_value(struct heap_state *st, const struct state_type *t, const void *rec, size_t *len)
{
    size_t n = ser_size(t, rec);

    if (n + 12 > st->wbuf_cap) {
        st->wbuf_cap = (n + 12) * 2;
        st->wbuf = xrealloc(st->wbuf, st->wbuf_cap);
    }
    /* 12 bytes of room in front for a list element's length and time. */
    ser_write(t, rec, st->wbuf + 12, n);
    *len = n;
    return st->wbuf + 12;
}

/* ---- set-up ---- */

static int64_t
clock_wall_ms_fn(void)
{
    return clock_wall_ms();
}

int
heap_keyed_backend_init(struct heap_keyed_backend *b, const struct keyed_backend_config *config,
                        spate_error *err)
{
    uint32_t maxp = (uint32_t)config->max_parallelism;
    struct key_group_range range;
    int rc = key_group_check(maxp, (uint32_t)config->parallelism, err);

    memset(b, 0, sizeof *b);
    b->base.ops = &heap_keyed_backend_ops;
    if (rc != 0)
        return rc;
    range = key_group_range_for_operator(maxp, (uint32_t)config->parallelism,
                                         (uint32_t)config->subtask);
    b->key = config->key;
    b->user_ctx = config->user_ctx;
    b->base.user_ctx = config->user_ctx;
    b->now_ms = config->now_ms != NULL ? config->now_ms : clock_wall_ms_fn;
    b->ns_last_len = SIZE_MAX;
    keyed_backend_buf_grow(b, 128);
    b->states = xcalloc((size_t)config->nstates + 1, sizeof *b->states);
    b->nstates = config->nstates;
    for (int i = 0; i < b->nstates; i++) {
        struct heap_state *st = &b->states[i];

        st->base.backend = &b->base;
        st->base.desc = config->states[i];
        st->backend = b;
        st->ttl_ms = st->base.desc.ttl_ms;
        st->plain = st->base.desc.value.plain;
        st->fast = st->base.desc.scope == SCOPE_KEYED && st->ttl_ms == 0;
        st->in_place = st->fast && st->plain;
        st->value_size = st->base.desc.value.size;
        st->value_align_mask = st->base.desc.value.align - 1;
        b->has_ttl |= st->ttl_ms != 0;
        keyed_state_init(&st->maps, maxp, range);
        st->tmp = xcalloc(1, st->base.desc.value.size + 16);
        st->tmp2 = xcalloc(1, st->base.desc.value.size + 16);
    }
    b->range = range;
    timer_service_init(&b->timers, maxp, range, config->key, config->wake_ns, config->owner);
    return 0;
}

void
keyed_backend_release(struct heap_keyed_backend *b)
{
    for (int i = 0; b->states != NULL && i < b->nstates; i++) {
        keyed_state_release(&b->states[i].maps);
        free(b->states[i].tmp);
        free(b->states[i].tmp2);
        free(b->states[i].wbuf);
    }
    free(b->states);
    timer_service_release(&b->timers);
    free(b->buf);
}

struct heap_state *
keyed_backend_state(struct heap_keyed_backend *b, const char *name)
{
    for (int i = 0; i < b->nstates; i++)
        if (strcmp(b->states[i].base.desc.name, name) == 0)
            return &b->states[i];
    return NULL;
}

/* ---- state calls (the table's) ---- */

static struct spate_state *
heap_state(struct keyed_state_backend *b, const char *name)
{
    struct heap_state *st = keyed_backend_state(heap_keyed_backend_of(b), name);

    return st != NULL ? &st->base : NULL;
}

static bool heap_map_next(spate_iter *it, void *key, void *value);

/* The stored value of the current key and namespace into out; with
 * result, an aggregate's result instead of its accumulator. */
static bool
value_read(struct heap_state *st, void *out, bool result)
{
    struct state_map *map;
    struct state_entry *e;
    const uint8_t *payload;
    uint64_t hash;
    size_t key_len, len;

    ttl_cleanup_step(st->backend);
    e = keyed_entry(st, &hash, &key_len, &map);
    if (e == NULL)
        return false;
    payload = entry_payload(st, e, &len);
    if (result && st->base.desc.kind == STATE_AGGREGATING) {
        if (ser_read(&st->base.desc.value, payload, len, st->tmp) != 0)
            return false;
        st->base.desc.agg.result(st->backend->user_ctx, st->tmp, out);
        return true;
    }
    return ser_read(&st->base.desc.value, payload, len, out) == 0;
}

static bool
heap_value_get(struct spate_state *base, void *out)
{
    return value_read(heap_state_of(base), out, true);
}

static bool
heap_value_get_internal(struct spate_state *base, void *out)
{
    return value_read(heap_state_of(base), out, false);
}

static void
heap_value_update(struct spate_state *base, const void *value)
{
    struct heap_state *st = heap_state_of(base);
    struct state_map *map;
    struct state_entry *e;
    uint8_t *payload;
    uint64_t hash;
    size_t key_len, len;

    ttl_cleanup_step(st->backend);
    e = keyed_entry(st, &hash, &key_len, &map);
    payload = serialize_value(st, &st->base.desc.value, value, &len);
    state_store(st, map, e, hash, st->backend->buf, key_len, payload, len);
}

static void
heap_clear(struct spate_state *base)
{
    struct heap_state *st = heap_state_of(base);
    struct state_map *map;
    uint64_t hash;
    size_t key_len;

    if (st->base.desc.kind == STATE_MAP) {
        /* Every entry of the current key and namespace. */
        spate_iter it;
        uint8_t *key = NULL;

        memset(&it, 0, sizeof it);
        it.st = base;
        while (heap_map_next(&it, NULL, NULL)) {
            struct state_key_context keyless;
            struct state_map *m = keyed_state_map(&st->maps, scope_ctx(st, &keyless)->key_hash);
            struct state_entry *e = &m->slots[it.slot - 1];

            key = xrealloc(key, state_entry_key_len(e));
            memcpy(key, state_entry_key(e), state_entry_key_len(e));
            state_map_remove(m, e->hash, key, state_entry_key_len(e));
            it.slot--; /* removal shifts entries back into this slot */
        }
        free(key);
        return;
    }
    if (state_entry_for(st, NULL, 0, &hash, &key_len, &map) != NULL)
        state_map_remove(map, hash, st->backend->buf, key_len);
}

/* Appends a framed element ([u32 length][i64 time when timestamped][bytes]). */
/* Appends value; true when the list was empty (absent). */
static bool
list_append(struct heap_state *st, int64_t timestamp, const void *value)
{
    size_t tsz = st->base.desc.timestamped ? 8 : 0;
    struct state_map *map;
    struct state_entry *e;
    uint8_t *payload, *framed;
    uint64_t hash;
    size_t key_len, len, old;
    uint32_t n32;

    ttl_cleanup_step(st->backend);
    e = state_entry_for(st, NULL, 0, &hash, &key_len, &map);
    payload = serialize_value(st, &st->base.desc.value, value, &len);
    /* The write buffer keeps 12 bytes in front of the value for the frame. */
    framed = payload - 4 - tsz;
    n32 = (uint32_t)len;
    memcpy(framed, &n32, 4);
    if (tsz)
        memcpy(framed + 4, &timestamp, 8);
    if (e == NULL) {
        state_store(st, map, NULL, hash, st->backend->buf, key_len, framed, 4 + tsz + len);
        return true;
    }
    /* Grow in place: the old elements stay, the new one goes behind. */
    old = e->value_len;
    e = state_map_put(map, hash, st->backend->buf, key_len, NULL, old + 4 + tsz + len);
    memcpy(state_entry_value(e) + old, framed, 4 + tsz + len);
    if (st->ttl_ms) {
        int64_t now = st->backend->now_ms();

        memcpy(state_entry_value(e), &now, 8);
    }
    return false;
}

bool
keyed_list_add_timestamped(struct heap_state *st, int64_t timestamp, const void *rec)
{
    return list_append(st, timestamp, rec);
}

static void
heap_list_iter(struct spate_state *base, spate_iter *it)
{
    struct heap_state *st = heap_state_of(base);
    struct state_map *map;
    struct state_entry *e;
    uint64_t hash;
    size_t key_len, len;

    memset(it, 0, sizeof *it);
    it->st = base;
    e = state_entry_for(st, NULL, 0, &hash, &key_len, &map);
    if (e != NULL) {
        it->at = entry_payload(st, e, &len);
        it->end = it->at + len;
    }
}

bool
keyed_list_next_timestamped(spate_iter *it, void *out, int64_t *timestamp)
{
    size_t tsz;
    uint32_t n;

    if (it->st == NULL) {
        /* One record in memory: a pre-aggregated window result. */
        if (it->at == NULL || it->at == it->end)
            return false;
        memcpy(out, it->at, (size_t)(it->end - it->at));
        it->at = it->end;
        return true;
    }
    tsz = it->st->desc.timestamped ? 8 : 0;
    if (it->at == NULL || (size_t)(it->end - it->at) < 4 + tsz)
        return false;
    memcpy(&n, it->at, 4);
    if ((size_t)(it->end - it->at - 4 - tsz) < n)
        return false;
    if (timestamp != NULL && tsz)
        memcpy(timestamp, it->at + 4, 8);
    if (out != NULL && ser_read(&it->st->desc.value, it->at + 4 + tsz, n, out) != 0)
        return false;
    it->at += 4 + tsz + n;
    return true;
}

void
keyed_list_retain(struct heap_state *st, const bool *keep, size_t count)
{
    struct state_map *map;
    struct state_entry *e;
    uint64_t hash;
    size_t key_len, len, hdr = st->ttl_ms ? TTL_HEADER : 0, tsz = st->base.desc.timestamped ? 8 : 0;
    const uint8_t *at, *end;
    uint8_t *kept, *w;

    e = state_entry_for(st, NULL, 0, &hash, &key_len, &map);
    if (e == NULL)
        return;
    at = entry_payload(st, e, &len);
    end = at + len;
    kept = xmalloc(len ? len : 1);
    w = kept;
    for (size_t i = 0; i < count && end - at >= (ptrdiff_t)(4 + tsz); i++) {
        uint32_t n;

        memcpy(&n, at, 4);
        if (keep[i]) {
            memcpy(w, at, 4 + tsz + n);
            w += 4 + tsz + n;
        }
        at += 4 + tsz + n;
    }
    if (w == kept)
        state_map_remove(map, hash, st->backend->buf, key_len);
    else
        state_store(st, map, e, hash, st->backend->buf, key_len, kept, (size_t)(w - kept));
    free(kept);
    UNUSED(hdr);
}

bool
keyed_state_exists(struct heap_state *st)
{
    struct state_map *map;
    uint64_t hash;
    size_t key_len;

    return state_entry_for(st, NULL, 0, &hash, &key_len, &map) != NULL;
}

/* The serialized map key of st (into a fresh buffer). */
static uint8_t *
map_key_bytes(struct heap_state *st, const void *key, size_t *len)
{
    size_t n = ser_size(&st->base.desc.key, key);
    uint8_t *out = xmalloc(n ? n : 1);

    ser_write(&st->base.desc.key, key, out, n);
    *len = n;
    return out;
}

static bool
heap_map_get(struct spate_state *base, const void *key, void *value)
{
    struct heap_state *st = heap_state_of(base);
    struct state_map *map;
    struct state_entry *e;
    const uint8_t *payload;
    uint64_t hash;
    size_t klen, key_len, len;
    uint8_t *k = map_key_bytes(st, key, &klen);
    bool found = false;

    e = state_entry_for(st, k, klen, &hash, &key_len, &map);
    if (e != NULL) {
        payload = entry_payload(st, e, &len);
        found = value == NULL || ser_read(&st->base.desc.value, payload, len, value) == 0;
    }
    free(k);
    return found;
}

static void
heap_map_put(struct spate_state *base, const void *key, const void *value)
{
    struct heap_state *st = heap_state_of(base);
    struct state_map *map;
    struct state_entry *e;
    uint8_t *payload, *k;
    uint64_t hash;
    size_t klen, key_len, len;

    ttl_cleanup_step(st->backend);
    k = map_key_bytes(st, key, &klen);
    e = state_entry_for(st, k, klen, &hash, &key_len, &map);
    payload = serialize_value(st, &st->base.desc.value, value, &len);
    state_store(st, map, e, hash, st->backend->buf, key_len, payload, len);
    free(k);
}

static bool
heap_map_remove(struct spate_state *base, const void *key)
{
    struct heap_state *st = heap_state_of(base);
    struct state_map *map;
    uint64_t hash;
    size_t klen, key_len;
    uint8_t *k;
    bool found = false;

    k = map_key_bytes(st, key, &klen);
    if (state_entry_for(st, k, klen, &hash, &key_len, &map) != NULL)
        found = state_map_remove(map, hash, st->backend->buf, key_len) == 1;
    free(k);
    return found;
}

/* Walks the key group's map for entries of the current key and namespace:
 * map state keeps no per-key index, so iteration costs a scan of the key
 * group (as a prefix scan would in RocksDB). */
static bool
heap_map_next(spate_iter *it, void *key, void *value)
{
    struct heap_state *st = heap_state_of(it->st);
    struct state_key_context keyless;
    const struct state_key_context *ctx = scope_ctx(st, &keyless);
    struct state_map *map = keyed_state_map(&st->maps, ctx->key_hash);
    size_t plen = composite_prefix_len(ctx);
    uint8_t *prefix = backend_buf(st->backend, plen);

    keyed_composite_prefix(ctx, prefix);
    while (map->slots != NULL && it->slot <= map->mask) {
        struct state_entry *e = &map->slots[it->slot++];
        const uint8_t *payload;
        size_t len;

        if (!state_entry_used(e) || state_entry_key_len(e) < plen ||
            memcmp(state_entry_key(e), prefix, plen) != 0)
            continue;
        if (st->ttl_ms != 0) {
            int64_t written;

            memcpy(&written, state_entry_value(e), 8);
            if (st->backend->now_ms() - written >= st->ttl_ms)
                continue;
        }
        if (key != NULL && ser_read(&st->base.desc.key, state_entry_key(e) + plen,
                                    state_entry_key_len(e) - plen, key) != 0)
            continue;
        payload = entry_payload(st, e, &len);
        if (value != NULL && ser_read(&st->base.desc.value, payload, len, value) != 0)
            continue;
        return true;
    }
    return false;
}

bool
keyed_reducing_add(struct heap_state *st, const void *value)
{
    struct state_map *map;
    struct state_entry *e;
    const uint8_t *payload;
    uint8_t *out;
    uint64_t hash;
    size_t key_len, len;

    ttl_cleanup_step(st->backend);
    e = keyed_entry(st, &hash, &key_len, &map);
    if (likely(e != NULL && st->plain)) {
        /* A plain value is its bytes: reduced where it is stored. */
        void *acc = plain_begin(st, map, &e, hash, key_len);

        if (likely(acc != NULL)) {
            st->base.desc.reduce(st->backend->user_ctx, acc, value, st->tmp2);
            plain_put_back(st, e, st->tmp2);
            return false;
        }
    }
    if (e == NULL) {
        out = serialize_value(st, &st->base.desc.value, value, &len);
    } else {
        payload = entry_payload(st, e, &len);
        if (ser_read(&st->base.desc.value, payload, len, st->tmp) != 0)
            return false;
        st->base.desc.reduce(st->backend->user_ctx, st->tmp, value, st->tmp2);
        /* The result may point into the stored value: serialize it first. */
        out = serialize_value(st, &st->base.desc.value, st->tmp2, &len);
    }
    state_store(st, map, e, hash, st->backend->buf, key_len, out, len);
    return e == NULL;
}

bool
keyed_aggregating_add(struct heap_state *st, const void *in)
{
    const spate_aggregate *agg = &st->base.desc.agg;
    spate_ctx *ctx = st->backend->user_ctx;
    struct state_map *map;
    struct state_entry *e;
    const uint8_t *payload;
    uint8_t *out;
    uint64_t hash;
    size_t key_len, len;

    ttl_cleanup_step(st->backend);
    e = keyed_entry(st, &hash, &key_len, &map);
    if (likely(e != NULL && st->plain)) {
        /* A plain accumulator is its bytes: added to where it is stored. */
        void *acc = plain_begin(st, map, &e, hash, key_len);

        if (likely(acc != NULL)) {
            agg->add(ctx, in, acc);
            plain_put_back(st, e, acc);
            return false;
        }
    }
    if (e == NULL) {
        memset(st->tmp, 0, st->base.desc.value.size);
        agg->create(ctx, st->tmp);
    } else {
        payload = entry_payload(st, e, &len);
        if (ser_read(&st->base.desc.value, payload, len, st->tmp) != 0)
            return false;
    }
    agg->add(ctx, in, st->tmp);
    out = serialize_value(st, &st->base.desc.value, st->tmp, &len);
    state_store(st, map, e, hash, st->backend->buf, key_len, out, len);
    return e == NULL;
}

static bool
heap_add(struct spate_state *base, int64_t timestamp, const void *value)
{
    struct heap_state *st = heap_state_of(base);

    switch (st->base.desc.kind) {
    case STATE_LIST:
        return list_append(st, timestamp, value);
    case STATE_REDUCING:
        return keyed_reducing_add(st, value);
    case STATE_AGGREGATING:
        return keyed_aggregating_add(st, value);
    default:
        SPATE_ASSERT(!"add on a state that is no list, reducing or aggregating state");
        return false;
    }
}

static bool
heap_exists(struct spate_state *st)
{
    return keyed_state_exists(heap_state_of(st));
}

static void
heap_list_retain(struct spate_state *st, const bool *keep, size_t count)
{
    keyed_list_retain(heap_state_of(st), keep, count);
}

/* ---- timers (the table's) ---- */

static void
heap_register_timer(struct keyed_state_backend *b, bool event_time, int64_t timestamp)
{
    timer_service_register(&heap_keyed_backend_of(b)->timers, event_time, timestamp);
}

static void
heap_delete_timer(struct keyed_state_backend *b, bool event_time, int64_t timestamp)
{
    timer_service_delete(&heap_keyed_backend_of(b)->timers, event_time, timestamp);
}

static void
heap_advance(struct keyed_state_backend *b, bool event_time, int64_t time, keyed_timer_fire_fn fire)
{
    timer_service_advance(&heap_keyed_backend_of(b)->timers, event_time, time, fire);
}

static void
heap_on_processing_time(struct keyed_state_backend *b, uint64_t now, keyed_timer_fire_fn fire)
{
    timer_service_on_processing_time(&heap_keyed_backend_of(b)->timers, now, fire);
}

/* ---- checkpoints ---- */

void
byte_buf_put(struct byte_buf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 64;
        b->data = xrealloc(b->data, b->cap);
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

void
keyed_backend_snapshot(struct heap_keyed_backend *b, struct keyed_backend_snapshot *s)
{
    uint32_t nkg = b->range.end - b->range.start + 1;

    s->kg_start = b->range.start;
    s->kg_end = b->range.end;
    s->nstates = b->nstates;
    s->decls = xcalloc((size_t)b->nstates + 1, sizeof *s->decls);
    s->views = xcalloc((size_t)b->nstates * nkg + 1, sizeof *s->views);
    s->timers = xcalloc(nkg, sizeof *s->timers);
    for (int i = 0; i < b->nstates; i++) {
        s->decls[i] = &b->states[i].base.desc;
        for (uint32_t k = 0; k < nkg; k++)
            state_map_freeze(&b->states[i].maps.maps[k], &s->views[(size_t)i * nkg + k]);
    }
    timer_service_snapshot(&b->timers, s->timers);
}

void
keyed_backend_snapshot_release(struct keyed_backend_snapshot *s)
{
    uint32_t nkg = s->kg_end - s->kg_start + 1;

    for (size_t i = 0; s->views != NULL && i < (size_t)s->nstates * nkg; i++)
        state_map_view_release(&s->views[i]);
    for (uint32_t k = 0; s->timers != NULL && k < nkg; k++)
        free(s->timers[k].data);
    free(s->views);
    free(s->timers);
    free(s->decls);
    memset(s, 0, sizeof *s);
}

void
keyed_backend_restore_entry(struct heap_keyed_backend *b, int i, uint64_t hash, const void *key,
                            size_t key_len, const void *value, size_t value_len)
{
    struct heap_state *st = &b->states[i];
    /* The hash's low bits are the key's key group (composite_hash keeps them). */
    struct state_map *map = keyed_state_map(&st->maps, hash);
    struct state_entry *e;
    size_t hdr = st->ttl_ms ? TTL_HEADER : 0, old;

    if (st->base.desc.kind != STATE_LIST || st->base.desc.scope == SCOPE_KEYED ||
        (e = state_map_get(map, hash, key, key_len)) == NULL || value_len < hdr) {
        state_map_put(map, hash, key, key_len, value, value_len);
        return;
    }
    /* Operator list state from several subtasks (rescaling): one list. */
    old = e->value_len;
    e = state_map_put(map, hash, key, key_len, NULL, old + value_len - hdr);
    memcpy(state_entry_value(e) + old, (const uint8_t *)value + hdr, value_len - hdr);
}

/* ---- the table ---- */

static struct keyed_state_snapshot *
heap_snapshot(struct keyed_state_backend *b, const struct keyed_snapshot_request *req)
{
    struct keyed_backend_snapshot *s = xcalloc(1, sizeof *s);

    UNUSED(req); /* the heap's are whole, always */
    keyed_backend_snapshot(heap_keyed_backend_of(b), s);
    return (struct keyed_state_snapshot *)s;
}

static void
heap_snapshot_release(struct keyed_state_snapshot *s)
{
    if (s == NULL)
        return;
    keyed_backend_snapshot_release((struct keyed_backend_snapshot *)s);
    free(s);
}

static void
heap_dispose(struct keyed_state_backend *b)
{
    keyed_backend_release(heap_keyed_backend_of(b));
}

const struct keyed_state_backend_ops heap_keyed_backend_ops = {
    .name = "heap",
    .state = heap_state,
    .value_get = heap_value_get,
    .value_get_internal = heap_value_get_internal,
    .value_update = heap_value_update,
    .add = heap_add,
    .clear = heap_clear,
    .exists = heap_exists,
    .list_iter = heap_list_iter,
    .list_next = keyed_list_next_timestamped,
    .list_retain = heap_list_retain,
    .map_get = heap_map_get,
    .map_put = heap_map_put,
    .map_remove = heap_map_remove,
    .map_next = heap_map_next,
    .register_timer = heap_register_timer,
    .delete_timer = heap_delete_timer,
    .advance = heap_advance,
    .on_processing_time = heap_on_processing_time,
    .snapshot = heap_snapshot,
    .snapshot_write = keyed_backend_snapshot_write,
    .snapshot_write_operator = keyed_backend_snapshot_write_operator,
    .snapshot_metas = keyed_backend_snapshot_metas,
    .snapshot_release = heap_snapshot_release,
    .restore = keyed_backend_restore,
    .restore_element = keyed_backend_restore_element,
    .dispose = heap_dispose,
};
