/* The keyed state backend (keyed_backend.h). An entry's key in a state map
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
#include "streaming/keyed_backend.h"
#include "streaming/types.h"

#define TTL_HEADER      8
#define CLEANUP_PER_USE 2

SPATE_NOINLINE uint8_t *
keyed_backend_buf_grow(struct keyed_backend *b, size_t n)
{
    b->buf_cap = n * 2;
    b->buf = xrealloc(b->buf, b->buf_cap);
    return b->buf;
}

static inline void *
backend_buf(struct keyed_backend *b, size_t n)
{
    return likely(n <= b->buf_cap) ? b->buf : keyed_backend_buf_grow(b, n);
}

/* ---- composite keys ---- */

static inline size_t
composite_prefix_len(const spate_ctx *ctx)
{
    return 4 + ctx->key.len + 4 + ctx->ns_len;
}

uint64_t
keyed_ns_hash_slow(struct keyed_backend *b, const void *ns, size_t len)
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
composite_hash(struct keyed_backend *b, const spate_ctx *ctx, const void *extra, size_t extra_len)
{
    uint64_t h = keyed_composite_hash(ctx->key_hash,
                                      ctx->ns_len ? keyed_ns_hash(b, ctx->ns, ctx->ns_len) : 0);

    /* A map key spreads its entries too, keeping the key group's bits. */
    if (extra_len)
        h ^= XXH3_64bits(extra, extra_len) << 16;
    return h;
}

/* The context whose key scopes st: the current key for keyed state, none
 * for operator and broadcast state. */
static inline const spate_ctx *
scope_ctx(const struct spate_state *st, spate_ctx *keyless)
{
    const spate_ctx *ctx = &st->backend->op->ctx;

    if (likely(st->decl->scope == SCOPE_KEYED))
        return ctx;
    memset(keyless, 0, sizeof *keyless);
    keyless->key.data = "";
    return keyless;
}

/* Broadcast state is written only while the broadcast side is processed. */
static bool
writable(struct spate_state *st)
{
    if (st->decl->scope != SCOPE_BROADCAST || st->backend->broadcast_writable)
        return true;
    spate_ctx_fail(&st->backend->op->ctx,
                   "broadcast state '%s' is read-only outside process_broadcast", st->decl->name);
    return false;
}

/* A TTL entry that has expired is removed. */
static SPATE_NOINLINE struct state_entry *
state_entry_ttl(struct spate_state *st, struct state_map *map, struct state_entry *e, uint64_t hash,
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
state_entry_for(struct spate_state *st, const void *map_key, size_t map_key_len, uint64_t *hash,
                size_t *key_len, struct state_map **mapp)
{
    struct keyed_backend *b = st->backend;
    spate_ctx keyless;
    const spate_ctx *ctx = scope_ctx(st, &keyless);
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
keyed_entry(struct spate_state *st, uint64_t *hash, size_t *key_len, struct state_map **mapp)
{
    struct keyed_backend *b = st->backend;
    const spate_ctx *ctx = &b->op->ctx;

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
plain_value(struct spate_state *st, struct state_entry *e, void *tmp)
{
    size_t hdr = st->ttl_ms ? TTL_HEADER : 0;
    const struct spate_type *t = st->decl->type;
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
plain_put_back(struct spate_state *st, struct state_entry *e, const void *v)
{
    size_t hdr = st->ttl_ms ? TTL_HEADER : 0;
    uint8_t *p = state_entry_value(e) + hdr;

    if (v != p)
        bytes_copy(p, v, st->decl->type->size);
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
plain_begin(struct spate_state *st, struct state_map *map, struct state_entry **e, uint64_t hash,
            size_t key_len)
{
    if (unlikely(map->shared || map->base != NULL))
        *e = own_entry(map, *e, hash, st->backend->buf, key_len);
    return plain_value(st, *e, st->tmp);
}

void *
keyed_value_in_place_slow(struct spate_state *st)
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
entry_payload(const struct spate_state *st, const struct state_entry *e, size_t *len)
{
    size_t hdr = st->ttl_ms ? TTL_HEADER : 0;

    *len = e->value_len - hdr;
    return state_entry_value(e) + hdr;
}

/* Incremental TTL clean-up: looks at a few entries per state use. */
static SPATE_NOINLINE void
ttl_cleanup_walk(struct keyed_backend *b)
{
    int64_t now = b->now_ms();

    for (int n = 0; n < CLEANUP_PER_USE; n++) {
        struct spate_state *st;
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
ttl_cleanup_step(struct keyed_backend *b)
{
    if (b->has_ttl) /* else nothing to clean, no clock to read */
        ttl_cleanup_walk(b);
}

/* Stores payload (len bytes) as the current key's value of st; e is the
 * key's entry when the caller found one (written in place when the size
 * stays: one lookup per update; not while a snapshot shares the map, and
 * not in a block the snapshot still reads). */
static struct state_entry *
state_store(struct spate_state *st, struct state_map *map, struct state_entry *e, uint64_t hash,
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
serialize_value(struct spate_state *st, const struct spate_type *t, const void *rec, size_t *len)
{
    size_t n = types_serialized_size(t, rec);

    if (n + 12 > st->wbuf_cap) {
        st->wbuf_cap = (n + 12) * 2;
        st->wbuf = xrealloc(st->wbuf, st->wbuf_cap);
    }
    /* 12 bytes of room in front for a list element's length and time. */
    types_serialize(t, rec, st->wbuf + 12, n);
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
keyed_backend_init(struct keyed_backend *b, struct stream_operator *op,
                   const struct state_decl *extra, int nextra, spate_error *err)
{
    const struct spate_stream *n = op->config;
    int rc;

    memset(b, 0, sizeof *b);
    b->op = op;
    b->now_ms = clock_wall_ms_fn;
    b->ns_last_len = SIZE_MAX;
    keyed_backend_buf_grow(b, 128);
    b->states = xcalloc((size_t)(n->nstates + nextra) + 1, sizeof *b->states);
    b->nstates = n->nstates + nextra;
    for (int i = 0; i < b->nstates; i++) {
        struct spate_state *st = &b->states[i];

        st->decl = i < n->nstates ? &n->states[i] : &extra[i - n->nstates];
        st->backend = b;
        st->ttl_ms = st->decl->ttl_ms;
        st->plain = st->decl->type->plain;
        st->fast = st->decl->scope == SCOPE_KEYED && st->ttl_ms == 0;
        st->in_place = st->fast && st->plain;
        st->value_size = (uint32_t)st->decl->type->size;
        st->value_align_mask = (uint32_t)st->decl->type->align - 1;
        b->has_ttl |= st->ttl_ms != 0;
        if ((rc = keyed_state_init(&st->maps, op->task, op->ctx.max_parallelism, err)) != 0)
            return rc;
        st->tmp = xcalloc(1, st->decl->type->size + 16);
        st->tmp2 = xcalloc(1, st->decl->type->size + 16);
    }
    return keyed_state_init(&b->timer_sets, op->task, op->ctx.max_parallelism, err);
}

static void
heap_release(struct timer_heap *h)
{
    for (size_t i = 0; i < h->count; i++)
        free(h->items[i].timer);
    free(h->items);
    memset(h, 0, sizeof *h);
}

void
keyed_backend_release(struct keyed_backend *b)
{
    for (int i = 0; b->states != NULL && i < b->nstates; i++) {
        keyed_state_release(&b->states[i].maps);
        free(b->states[i].tmp);
        free(b->states[i].tmp2);
        free(b->states[i].wbuf);
    }
    free(b->states);
    keyed_state_release(&b->timer_sets);
    heap_release(&b->event);
    heap_release(&b->processing);
    free(b->buf);
}

struct spate_state *
keyed_backend_state(struct keyed_backend *b, const char *name)
{
    for (int i = 0; i < b->nstates; i++)
        if (strcmp(b->states[i].decl->name, name) == 0)
            return &b->states[i];
    return NULL;
}

/* ---- the user's state calls ---- */

spate_state *
spate_ctx_state(spate_ctx *ctx, const char *name)
{
    return ctx->op->backend ? keyed_backend_state(ctx->op->backend, name) : NULL;
}

bool
spate_value_get(spate_state *st, void *out)
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
    if (st->decl->kind == STATE_AGGREGATING) {
        if (types_deserialize(st->decl->type, payload, len, st->tmp) != 0)
            return false;
        st->decl->agg.result(&st->backend->op->ctx, st->tmp, out);
        return true;
    }
    return types_deserialize(st->decl->type, payload, len, out) == 0;
}

void
spate_value_update(spate_state *st, const void *value)
{
    struct state_map *map;
    struct state_entry *e;
    uint8_t *payload;
    uint64_t hash;
    size_t key_len, len;

    ttl_cleanup_step(st->backend);
    e = keyed_entry(st, &hash, &key_len, &map);
    payload = serialize_value(st, st->decl->type, value, &len);
    state_store(st, map, e, hash, st->backend->buf, key_len, payload, len);
}

void
spate_state_clear(spate_state *st)
{
    struct state_map *map;
    uint64_t hash;
    size_t key_len;

    if (st->decl->kind == STATE_MAP) {
        /* Every entry of the current key and namespace. */
        spate_iter it;
        uint8_t *key = NULL;

        spate_map_iter(st, &it);
        if (!writable(st))
            return;
        while (spate_map_next(&it, NULL, NULL)) {
            spate_ctx keyless;
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
list_append(spate_state *st, int64_t timestamp, const void *value)
{
    size_t tsz = st->decl->timestamped ? 8 : 0;
    struct state_map *map;
    struct state_entry *e;
    uint8_t *payload, *framed;
    uint64_t hash;
    size_t key_len, len, old;
    uint32_t n32;

    ttl_cleanup_step(st->backend);
    e = state_entry_for(st, NULL, 0, &hash, &key_len, &map);
    payload = serialize_value(st, st->decl->type, value, &len);
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

void
spate_list_add(spate_state *st, const void *value)
{
    list_append(st, 0, value);
}

bool
keyed_list_add_timestamped(struct spate_state *st, int64_t timestamp, const void *rec)
{
    return list_append(st, timestamp, rec);
}

void
spate_list_iter(spate_state *st, spate_iter *it)
{
    struct state_map *map;
    struct state_entry *e;
    uint64_t hash;
    size_t key_len, len;

    memset(it, 0, sizeof *it);
    it->st = st;
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
    tsz = it->st->decl->timestamped ? 8 : 0;
    if (it->at == NULL || (size_t)(it->end - it->at) < 4 + tsz)
        return false;
    memcpy(&n, it->at, 4);
    if ((size_t)(it->end - it->at - 4 - tsz) < n)
        return false;
    if (timestamp != NULL && tsz)
        memcpy(timestamp, it->at + 4, 8);
    if (out != NULL && types_deserialize(it->st->decl->type, it->at + 4 + tsz, n, out) != 0)
        return false;
    it->at += 4 + tsz + n;
    return true;
}

bool
spate_list_next(spate_iter *it, void *out)
{
    return keyed_list_next_timestamped(it, out, NULL);
}

void
keyed_list_retain(struct spate_state *st, const bool *keep, size_t count)
{
    struct state_map *map;
    struct state_entry *e;
    uint64_t hash;
    size_t key_len, len, hdr = st->ttl_ms ? TTL_HEADER : 0, tsz = st->decl->timestamped ? 8 : 0;
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
keyed_state_exists(struct spate_state *st)
{
    struct state_map *map;
    uint64_t hash;
    size_t key_len;

    return state_entry_for(st, NULL, 0, &hash, &key_len, &map) != NULL;
}

/* The serialized map key of st (into a fresh buffer). */
static uint8_t *
map_key_bytes(spate_state *st, const void *key, size_t *len)
{
    size_t n = types_serialized_size(st->decl->key_type, key);
    uint8_t *out = xmalloc(n ? n : 1);

    types_serialize(st->decl->key_type, key, out, n);
    *len = n;
    return out;
}

bool
spate_map_get(spate_state *st, const void *key, void *value)
{
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
        found = value == NULL || types_deserialize(st->decl->type, payload, len, value) == 0;
    }
    free(k);
    return found;
}

void
spate_map_put(spate_state *st, const void *key, const void *value)
{
    struct state_map *map;
    struct state_entry *e;
    uint8_t *payload, *k;
    uint64_t hash;
    size_t klen, key_len, len;

    if (!writable(st))
        return;
    ttl_cleanup_step(st->backend);
    k = map_key_bytes(st, key, &klen);
    e = state_entry_for(st, k, klen, &hash, &key_len, &map);
    payload = serialize_value(st, st->decl->type, value, &len);
    state_store(st, map, e, hash, st->backend->buf, key_len, payload, len);
    free(k);
}

bool
spate_map_remove(spate_state *st, const void *key)
{
    struct state_map *map;
    uint64_t hash;
    size_t klen, key_len;
    uint8_t *k;
    bool found = false;

    if (!writable(st))
        return false;
    k = map_key_bytes(st, key, &klen);
    if (state_entry_for(st, k, klen, &hash, &key_len, &map) != NULL)
        found = state_map_remove(map, hash, st->backend->buf, key_len) == 1;
    free(k);
    return found;
}

void
spate_map_iter(spate_state *st, spate_iter *it)
{
    memset(it, 0, sizeof *it);
    it->st = st;
}

/* Walks the key group's map for entries of the current key and namespace:
 * map state keeps no per-key index, so iteration costs a scan of the key
 * group (as a prefix scan would in RocksDB). */
bool
spate_map_next(spate_iter *it, void *key, void *value)
{
    spate_state *st = it->st;
    spate_ctx keyless;
    const spate_ctx *ctx = scope_ctx(st, &keyless);
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
        if (key != NULL && types_deserialize(st->decl->key_type, state_entry_key(e) + plen,
                                             state_entry_key_len(e) - plen, key) != 0)
            continue;
        payload = entry_payload(st, e, &len);
        if (value != NULL && types_deserialize(st->decl->type, payload, len, value) != 0)
            continue;
        return true;
    }
    return false;
}

void
spate_reducing_add(spate_state *st, const void *value)
{
    keyed_reducing_add(st, value);
}

bool
keyed_reducing_add(struct spate_state *st, const void *value)
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
            st->decl->reduce(&st->backend->op->ctx, acc, value, st->tmp2);
            plain_put_back(st, e, st->tmp2);
            return false;
        }
    }
    if (e == NULL) {
        out = serialize_value(st, st->decl->type, value, &len);
    } else {
        payload = entry_payload(st, e, &len);
        if (types_deserialize(st->decl->type, payload, len, st->tmp) != 0)
            return false;
        st->decl->reduce(&st->backend->op->ctx, st->tmp, value, st->tmp2);
        /* The result may point into the stored value: serialize it first. */
        out = serialize_value(st, st->decl->type, st->tmp2, &len);
    }
    state_store(st, map, e, hash, st->backend->buf, key_len, out, len);
    return e == NULL;
}

bool
spate_reducing_get(spate_state *st, void *out)
{
    return spate_value_get(st, out);
}

void
spate_aggregating_add(spate_state *st, const void *in)
{
    keyed_aggregating_add(st, in);
}

bool
keyed_aggregating_add(struct spate_state *st, const void *in)
{
    const spate_aggregate *agg = &st->decl->agg;
    spate_ctx *ctx = &st->backend->op->ctx;
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
        memset(st->tmp, 0, st->decl->type->size);
        agg->create(ctx, st->tmp);
    } else {
        payload = entry_payload(st, e, &len);
        if (types_deserialize(st->decl->type, payload, len, st->tmp) != 0)
            return false;
    }
    agg->add(ctx, in, st->tmp);
    out = serialize_value(st, st->decl->type, st->tmp, &len);
    state_store(st, map, e, hash, st->backend->buf, key_len, out, len);
    return e == NULL;
}

bool
spate_aggregating_get(spate_state *st, void *out)
{
    return spate_value_get(st, out);
}

/* ---- timers ---- */

/* The heap orders its slots by the timestamp they carry beside the timer:
 * a sift reads the heap array only, not the timers it points to (scattered
 * in memory, a cache miss per level when thousands of keys' windows end). */
static void
heap_push(struct timer_heap *h, struct timer *t)
{
    size_t i;

    xgrow((void **)&h->items, &h->cap, h->count + 1, sizeof *h->items);
    i = h->count++;
    while (i > 0 && t->timestamp < h->items[(i - 1) / 2].timestamp) {
        h->items[i] = h->items[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->items[i] = (struct timer_slot){ t->timestamp, t };
}

static struct timer *
heap_pop(struct timer_heap *h)
{
    struct timer *top = h->items[0].timer;
    struct timer_slot last = h->items[--h->count];
    size_t i = 0;

    for (;;) {
        size_t c = 2 * i + 1;

        if (c >= h->count)
            break;
        if (c + 1 < h->count && h->items[c + 1].timestamp < h->items[c].timestamp)
            c++;
        if (!(h->items[c].timestamp < last.timestamp))
            break;
        h->items[i] = h->items[c];
        i = c;
    }
    if (h->count > 0)
        h->items[i] = last;
    return top;
}

/* The identity of a timer: [event][ts][klen][key][ns]. */
static size_t
timer_identity(struct keyed_backend *b, bool event_time, int64_t ts, const uint8_t *key,
               size_t klen, const void *ns, size_t nslen, uint64_t *hash, uint64_t key_hash)
{
    uint8_t *id = backend_buf(b, 1 + 8 + 4 + klen + nslen);
    uint32_t k32 = (uint32_t)klen;

    id[0] = event_time;
    memcpy(id + 1, &ts, 8);
    memcpy(id + 9, &k32, 4);
    memcpy(id + 13, key, klen);
    if (nslen)
        memcpy(id + 13 + klen, ns, nslen);
    *hash = key_hash ^ (XXH3_64bits(id, 13) << 16);
    return 13 + klen + nslen;
}

void
keyed_backend_register_timer(struct keyed_backend *b, bool event_time, int64_t timestamp)
{
    spate_ctx *ctx = &b->op->ctx;
    struct state_map *set = keyed_state_map(&b->timer_sets, ctx->key_hash);
    uint64_t hash;
    size_t n = timer_identity(b, event_time, timestamp, ctx->key.data, ctx->key.len, ctx->ns,
                              ctx->ns_len, &hash, ctx->key_hash);
    struct timer *t;

    if (state_map_get(set, hash, b->buf, n) != NULL)
        return; /* one timer per key, namespace and timestamp */
    state_map_put(set, hash, b->buf, n, "", 0);
    t = xmalloc(sizeof *t + ctx->key.len + ctx->ns_len);
    t->timestamp = timestamp;
    t->key_hash = ctx->key_hash;
    t->key_len = (uint32_t)ctx->key.len;
    t->ns_len = (uint32_t)ctx->ns_len;
    t->event_time = event_time;
    memcpy(t->data, ctx->key.data, ctx->key.len);
    if (ctx->ns_len)
        memcpy(t->data + ctx->key.len, ctx->ns, ctx->ns_len);
    heap_push(event_time ? &b->event : &b->processing, t);
    if (!event_time) {
        /* Wake the task for it: processing time is the wall clock. */
        int64_t in_ms = timestamp - clock_wall_ms();
        uint64_t at = clock_mono_ns() + (uint64_t)(in_ms > 0 ? in_ms : 0) * 1000000u;

        if (b->op->next_processing_ns == 0 || at < b->op->next_processing_ns)
            b->op->next_processing_ns = at;
    }
}

void
keyed_backend_delete_timer(struct keyed_backend *b, bool event_time, int64_t timestamp)
{
    spate_ctx *ctx = &b->op->ctx;
    struct state_map *set = keyed_state_map(&b->timer_sets, ctx->key_hash);
    uint64_t hash;
    size_t n = timer_identity(b, event_time, timestamp, ctx->key.data, ctx->key.len, ctx->ns,
                              ctx->ns_len, &hash, ctx->key_hash);

    /* The heap keeps the timer; it is skipped when it comes up. */
    state_map_remove(set, hash, b->buf, n);
}

void
keyed_backend_advance(struct keyed_backend *b, bool event_time, int64_t time,
                      void (*fire)(struct stream_operator *op, const struct timer *t))
{
    struct timer_heap *h = event_time ? &b->event : &b->processing;

    while (h->count > 0 && h->items[0].timestamp <= time) {
        struct timer *t = heap_pop(h);
        struct state_map *set = keyed_state_map(&b->timer_sets, t->key_hash);
        uint64_t hash;
        size_t n = timer_identity(b, t->event_time, t->timestamp, t->data, t->key_len,
                                  t->data + t->key_len, t->ns_len, &hash, t->key_hash);

        if (state_map_remove(set, hash, b->buf, n) == 1) {
            keyed_backend_set_key(b->op, (spate_bytes){ t->data, t->key_len }, t->key_hash,
                                  t->ns_len ? t->data + t->key_len : NULL, t->ns_len);
            fire(b->op, t);
        }
        free(t);
    }
}

int64_t
keyed_backend_next_processing_time(const struct keyed_backend *b)
{
    return b->processing.count ? b->processing.items[0].timestamp : INT64_MAX;
}

void
keyed_backend_on_processing_time(struct keyed_backend *b, uint64_t now,
                                 void (*fire)(struct stream_operator *op, const struct timer *t))
{
    struct stream_operator *op = b->op;
    int64_t next;

    op->next_processing_ns = 0;
    keyed_backend_advance(b, false, clock_wall_ms(), fire);
    next = keyed_backend_next_processing_time(b);
    if (next != INT64_MAX) {
        int64_t in_ms = next - clock_wall_ms();

        op->next_processing_ns = now + (uint64_t)(in_ms > 0 ? in_ms : 0) * 1000000u;
    }
}

/* ---- the user's timer calls ---- */

void
spate_timer_register_event_time(spate_ctx *ctx, int64_t timestamp)
{
    if (ctx->op->backend != NULL)
        keyed_backend_register_timer(ctx->op->backend, true, timestamp);
}

void
spate_timer_register_processing_time(spate_ctx *ctx, int64_t timestamp)
{
    if (ctx->op->backend != NULL)
        keyed_backend_register_timer(ctx->op->backend, false, timestamp);
}

void
spate_timer_delete_event_time(spate_ctx *ctx, int64_t timestamp)
{
    if (ctx->op->backend != NULL)
        keyed_backend_delete_timer(ctx->op->backend, true, timestamp);
}

void
spate_timer_delete_processing_time(spate_ctx *ctx, int64_t timestamp)
{
    if (ctx->op->backend != NULL)
        keyed_backend_delete_timer(ctx->op->backend, false, timestamp);
}

/* ---- checkpoints ---- */

static void
bb_put(struct byte_buf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 64;
        b->data = xrealloc(b->data, b->cap);
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

/* One live timer: u8 event time, i64 timestamp, u64 key hash, u32 key
 * length, u32 namespace length, key and namespace bytes. */
static void
snapshot_timers(struct keyed_backend *b, const struct timer_heap *h,
                struct keyed_backend_snapshot *s)
{
    for (size_t i = 0; i < h->count; i++) {
        const struct timer *t = h->items[i].timer;
        struct state_map *set = keyed_state_map(&b->timer_sets, t->key_hash);
        uint32_t kg = (uint32_t)(set - b->timer_sets.maps) + s->kg_start;
        struct byte_buf *out = &s->timers[kg - s->kg_start];
        uint64_t hash;
        size_t n = timer_identity(b, t->event_time, t->timestamp, t->data, t->key_len,
                                  t->data + t->key_len, t->ns_len, &hash, t->key_hash);
        uint8_t et = t->event_time;
        uint32_t count;

        if (state_map_get(set, hash, b->buf, n) == NULL)
            continue; /* deleted: only its heap entry is left */
        bb_put(out, &et, 1);
        bb_put(out, &t->timestamp, 8);
        bb_put(out, &t->key_hash, 8);
        bb_put(out, &t->key_len, 4);
        bb_put(out, &t->ns_len, 4);
        bb_put(out, t->data, t->key_len + t->ns_len);
        memcpy(&count, out->data, 4);
        count++;
        memcpy(out->data, &count, 4);
    }
}

void
keyed_backend_snapshot(struct keyed_backend *b, struct keyed_backend_snapshot *s)
{
    uint32_t nkg = b->timer_sets.range.end - b->timer_sets.range.start + 1;
    uint32_t zero = 0;

    s->kg_start = b->timer_sets.range.start;
    s->kg_end = b->timer_sets.range.end;
    s->nstates = b->nstates;
    s->decls = xcalloc((size_t)b->nstates + 1, sizeof *s->decls);
    s->views = xcalloc((size_t)b->nstates * nkg + 1, sizeof *s->views);
    s->timers = xcalloc(nkg, sizeof *s->timers);
    for (int i = 0; i < b->nstates; i++) {
        s->decls[i] = b->states[i].decl;
        for (uint32_t k = 0; k < nkg; k++)
            state_map_freeze(&b->states[i].maps.maps[k], &s->views[(size_t)i * nkg + k]);
    }
    for (uint32_t k = 0; k < nkg; k++)
        bb_put(&s->timers[k], &zero, 4);
    snapshot_timers(b, &b->event, s);
    snapshot_timers(b, &b->processing, s);
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
keyed_backend_restore_entry(struct keyed_backend *b, int i, uint64_t hash, const void *key,
                            size_t key_len, const void *value, size_t value_len)
{
    struct spate_state *st = &b->states[i];
    /* The hash's low bits are the key's key group (composite_hash keeps them). */
    struct state_map *map = keyed_state_map(&st->maps, hash);
    struct state_entry *e;
    size_t hdr = st->ttl_ms ? TTL_HEADER : 0, old;

    if (st->decl->kind != STATE_LIST || st->decl->scope == SCOPE_KEYED ||
        (e = state_map_get(map, hash, key, key_len)) == NULL || value_len < hdr) {
        state_map_put(map, hash, key, key_len, value, value_len);
        return;
    }
    /* Operator list state from several subtasks (rescaling): one list. */
    old = e->value_len;
    e = state_map_put(map, hash, key, key_len, NULL, old + value_len - hdr);
    memcpy(state_entry_value(e) + old, (const uint8_t *)value + hdr, value_len - hdr);
}

int
keyed_backend_restore_timers(struct keyed_backend *b, const uint8_t *p, size_t len)
{
    const uint8_t *end = p + len;
    uint32_t count;

    if (len < 4)
        return -1;
    memcpy(&count, p, 4);
    p += 4;
    for (uint32_t i = 0; i < count; i++) {
        uint8_t et;
        int64_t ts;
        uint64_t key_hash;
        uint32_t klen, nslen;

        if (end - p < 25)
            return -1;
        et = p[0];
        memcpy(&ts, p + 1, 8);
        memcpy(&key_hash, p + 9, 8);
        memcpy(&klen, p + 17, 4);
        memcpy(&nslen, p + 21, 4);
        p += 25;
        if ((size_t)(end - p) < (size_t)klen + nslen || et > 1)
            return -1;
        keyed_backend_set_key(b->op, (spate_bytes){ p, klen }, key_hash, nslen ? p + klen : NULL,
                              nslen);
        keyed_backend_register_timer(b, et == 1, ts);
        p += klen + nslen;
    }
    keyed_backend_set_key(b->op, (spate_bytes){ "", 0 }, 0, NULL, 0);
    return p == end ? 0 : -1;
}
