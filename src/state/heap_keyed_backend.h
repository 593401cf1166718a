/* The heap keyed state backend (Flink's HeapKeyedStateBackend and its
 * InternalTimerService), keyed_state_backend.h's first implementation: one
 * operator instance's states, each a state map per key group of the
 * subtask, scoped by the current key and namespace (a window, or none); and
 * its timers (timer_service.h), deduplicated per key group and fired in
 * timestamp order; a TTL in processing time, expired entries cleaned a few
 * per use; operator and broadcast state besides.
 * Entries are stored serialized, so snapshots and rescaling move bytes by
 * key group. The per-record calls are inline here (keyed_value_in_place,
 * keyed_current_at, keyed_backend_prefetch, ...): an operator that made a
 * heap backend calls them directly, the rest through the table. A snapshot
 * freezes every map copy-on-write and serializes the live timers per key
 * group (heap_snapshot.c writes them); a restore puts entries back one by
 * one and timers by key group. Task thread only. */
#ifndef SPATE_STATE_HEAP_KEYED_BACKEND_H
#define SPATE_STATE_HEAP_KEYED_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/bytes.h"
#include "core/key_group.h"
#include "core/util.h"
#include "state/keyed_state.h"
#include "state/keyed_state_backend.h"
#include "state/state_map.h"
#include "state/timer_service.h"

struct heap_keyed_backend;

/* A state of the heap backend. */
struct heap_state {
    struct spate_state base;
    struct heap_keyed_backend *backend; /* base.backend's */
    struct keyed_state maps;            /* per key group */
    int64_t ttl_ms;                     /* 0: no TTL (processing time) */
    void *tmp;                          /* a value of the type, for reduce and aggregate */
    void *tmp2;
    uint8_t *wbuf; /* a value being written, serialized */
    size_t wbuf_cap;
    bool plain;    /* values are their bytes (the type's plain): changed in place */
    bool fast;     /* keyed, no TTL: entries are found by keyed_entry, inline */
    bool in_place; /* fast and plain: values change where they are stored */
    uint32_t value_size, value_align_mask; /* the type's size and alignment - 1 */
};

/* keyed_backend_prefetch fetches a key's slot, and its heap block this
 * many calls later, when the slot is there to say where the block is. */
#define KEYED_PREFETCH_STAGE 4

struct heap_keyed_backend {
    struct keyed_state_backend base;
    struct state_key_context *key; /* the current key: the owner's */
    spate_ctx *user_ctx;
    struct heap_state *states;
    int nstates;
    struct key_group_range range; /* the subtask's key groups */
    struct timer_service timers;
    uint8_t *buf; /* scratch for composite keys and values */
    size_t buf_cap;
    /* keyed_backend_prefetch: the keys' hashes of its last calls. */
    uint64_t ahead[KEYED_PREFETCH_STAGE];
    unsigned nahead;
    /* The last namespace hashed, and its hash. */
    uint8_t ns_last[32];
    size_t ns_last_len; /* SIZE_MAX: none */
    uint64_t ns_last_hash;
    /* Processing time for TTL (the wall clock; tests put in their own). */
    int64_t (*now_ms)(void);
    bool has_ttl; /* some state has a TTL */
    /* TTL clean-up walks entries a few at a time, as state is used. */
    uint32_t cleanup_state, cleanup_group;
    size_t cleanup_slot;
};

extern const struct keyed_state_backend_ops heap_keyed_backend_ops;

/* A heap backend for config's states; 0, or an error (the parallelism and
 * max parallelism do not fit). Disposed by keyed_backend_release (the
 * table's dispose). */
int heap_keyed_backend_init(struct heap_keyed_backend *b, const struct keyed_backend_config *config,
                            spate_error *err);
void keyed_backend_release(struct heap_keyed_backend *b);

/* The heap backend whose interface is b (the caller made it). */
static inline struct heap_keyed_backend *
heap_keyed_backend_of(struct keyed_state_backend *b)
{
    return (struct heap_keyed_backend *)b;
}

/* The heap state st (of a heap backend). */
static inline struct heap_state *
heap_state_of(struct spate_state *st)
{
    return (struct heap_state *)st;
}

/* Timers of the current key and namespace (timer_service.h's), called
 * directly by the operators that made the backend. */
static inline void
keyed_backend_register_timer(struct heap_keyed_backend *b, bool event_time, int64_t timestamp)
{
    timer_service_register(&b->timers, event_time, timestamp);
}

static inline void
keyed_backend_delete_timer(struct heap_keyed_backend *b, bool event_time, int64_t timestamp)
{
    timer_service_delete(&b->timers, event_time, timestamp);
}

/* ---- checkpoints (heap_snapshot.c writes and reads the state file) ---- */

/* The synchronous part of a snapshot of the backend: every state map frozen
 * (copy-on-write), the live timers serialized per key group. Readable on
 * any thread until released. */
struct keyed_backend_snapshot {
    uint32_t kg_start, kg_end;
    int nstates;
    const struct state_descriptor **decls;
    struct state_map_view *views; /* [state * nkg + (kg - kg_start)] */
    struct byte_buf *timers;      /* [kg - kg_start]: u32 count, then the timers */
};

void keyed_backend_snapshot(struct heap_keyed_backend *b, struct keyed_backend_snapshot *s);
void keyed_backend_snapshot_release(struct keyed_backend_snapshot *s);

/* heap_snapshot.c: the table's snapshot_write, snapshot_write_operator,
 * snapshot_metas, restore and restore_element. */
Checkpoint__KeyedStateHandle *keyed_backend_snapshot_write(struct keyed_state_snapshot *s,
                                                           struct state_file_writer *w,
                                                           const char *path);
void keyed_backend_snapshot_write_operator(struct keyed_state_snapshot *s,
                                           struct state_file_writer *w,
                                           Checkpoint__OperatorStateHandle *h);
Checkpoint__StateMeta **keyed_backend_snapshot_metas(const struct keyed_state_snapshot *s,
                                                     size_t *n);
int keyed_backend_restore(struct keyed_state_backend *b, const Checkpoint__OperatorSubtaskState *st,
                          const char *op_name, struct state_file_reader *r, spate_error *err);

/* One stored entry of state i of a restore (hash, key and value as the
 * state file has them): a backend's own; 0 or an error. */
typedef int (*keyed_restore_entry_fn)(void *arg, int i, uint64_t hash, const uint8_t *key,
                                      uint32_t key_len, const uint8_t *value, uint32_t value_len,
                                      spate_error *err);

/* keyed_backend_restore with the entries given to entry: for a backend
 * that keeps its keyed state elsewhere but its state declarations, key
 * groups and timers in the heap backend b. */
int keyed_backend_restore_to(struct heap_keyed_backend *b,
                             const Checkpoint__OperatorSubtaskState *st, const char *op_name,
                             struct state_file_reader *r, keyed_restore_entry_fn entry, void *arg,
                             spate_error *err);
bool keyed_backend_restore_element(struct spate_state *st, const uint8_t *bytes, size_t len);

/* Restore: one stored entry of state i, as it was written (hash and bytes). */
void keyed_backend_restore_entry(struct heap_keyed_backend *b, int i, uint64_t hash,
                                 const void *key, size_t key_len, const void *value,
                                 size_t value_len);
/* Restore: the serialized timers of one key group (keyed_backend_snapshot's
 * form); false when they are malformed. */
static inline bool
keyed_backend_restore_timers(struct heap_keyed_backend *b, const uint8_t *bytes, size_t len)
{
    return timer_service_restore(&b->timers, bytes, len);
}

/* The state named name (NULL when not declared). */
struct heap_state *keyed_backend_state(struct heap_keyed_backend *b, const char *name);

/* ---- the per-record path, inline ---- */

/* Writes the current key and namespace's part of an entry's key,
 * [u32 key length][key][u32 namespace length][namespace], into out;
 * returns its length. */
static inline size_t
keyed_composite_prefix(const struct state_key_context *ctx, uint8_t *out)
{
    uint32_t klen = (uint32_t)ctx->key.len, nlen = (uint32_t)ctx->ns_len;

    memcpy(out, &klen, 4);
    bytes_copy(out + 4, ctx->key.data, klen);
    memcpy(out + 4 + klen, &nlen, 4);
    if (nlen)
        bytes_copy(out + 8 + klen, ctx->ns, nlen);
    return 8 + klen + nlen;
}

uint64_t keyed_ns_hash_slow(struct heap_keyed_backend *b, const void *ns, size_t len);

/* A namespace's hash: consecutive records mostly share their window, so
 * the last namespace's is kept. */
static inline uint64_t
keyed_ns_hash(struct heap_keyed_backend *b, const void *ns, size_t len)
{
    if (len == b->ns_last_len && bytes_equal(ns, b->ns_last, len))
        return b->ns_last_hash;
    return keyed_ns_hash_slow(b, ns, len);
}

void *keyed_value_in_place_slow(struct heap_state *st);

/* The hash of an entry of the current key (its hash key_hash) in the
 * namespace whose keyed_ns_hash is ns_hash (0: none). The key group comes
 * from the key's hash alone: the namespace only spreads a key's entries
 * inside the map. */
static inline uint64_t
keyed_composite_hash(uint64_t key_hash, uint64_t ns_hash)
{
    return key_hash ^ ns_hash << 16;
}

/* keyed_value_in_place of the entry whose key is ckey (len bytes, the
 * current key and namespace's keyed_composite_prefix) and whose hash is
 * keyed_composite_hash's: for a caller that keeps both from record to
 * record (a window's namespace part and hash change with the window). */
static SPATE_INLINE void *
keyed_value_in_place_at(struct heap_state *st, const uint8_t *ckey, size_t len, uint64_t hash)
{
    struct state_map *map = keyed_state_map(&st->maps, st->backend->key->key_hash);
    struct state_entry *e;
    uint8_t *v;

    if (unlikely(!st->in_place || map->shared || map->base != NULL))
        return keyed_value_in_place_slow(st);
    e = state_map_get(map, hash, ckey, len);
    if (unlikely(e == NULL || e->value_len != st->value_size))
        return NULL;
    v = state_entry_value(e);
    return likely(((uintptr_t)v & st->value_align_mask) == 0) ? v : NULL;
}

/* The per-record path of keyed state without TTL whose values are plain
 * (an accumulator of numbers): the current key's value bytes, aligned for
 * its type, to read and change where they are stored (a table or block a
 * snapshot shares is copied first); NULL when the key has none, or the
 * state's values are not kept that way: use the calls below. */
static SPATE_INLINE void *
keyed_value_in_place(struct heap_state *st)
{
    struct heap_keyed_backend *b = st->backend;
    const struct state_key_context *ctx = b->key;
    size_t len = 8 + ctx->key.len + ctx->ns_len;

    if (unlikely(len > b->buf_cap))
        return keyed_value_in_place_slow(st);
    keyed_composite_prefix(ctx, b->buf);
    return keyed_value_in_place_at(
        st, b->buf, len,
        keyed_composite_hash(ctx->key_hash,
                             ctx->ns_len ? keyed_ns_hash(b, ctx->ns, ctx->ns_len) : 0));
}

uint8_t *keyed_backend_buf_grow(struct heap_keyed_backend *b, size_t n);

/* Where the current key's entry of a keyed state without TTL is (no
 * namespace, or the current one): its map, hash and composite key (in the
 * backend's buffer, valid until the next call). For an operator that reads
 * and writes a ValueState's serialized bytes itself, as the keyed reduce
 * and sum do: state_map_get_mut and state_map_put at it. */
struct keyed_at {
    struct state_map *map;
    uint64_t hash;
    const uint8_t *key;
    size_t key_len;
};

static SPATE_INLINE void
keyed_current_at(struct heap_state *st, struct keyed_at *at)
{
    struct heap_keyed_backend *b = st->backend;
    const struct state_key_context *ctx = b->key;
    size_t len = 8 + ctx->key.len + ctx->ns_len;
    uint8_t *buf = likely(len <= b->buf_cap) ? b->buf : keyed_backend_buf_grow(b, len);

    at->key_len = keyed_composite_prefix(ctx, buf);
    at->key = buf;
    at->hash = keyed_composite_hash(ctx->key_hash,
                                    ctx->ns_len ? keyed_ns_hash(b, ctx->ns, ctx->ns_len) : 0);
    at->map = keyed_state_map(&st->maps, ctx->key_hash);
}

/* The entry of key (len bytes, whose hash is key_hash) in no namespace of
 * map, when its key and value are in its slot: state_map_get of the key
 * keyed_composite_prefix makes, [u32 len][key][u32 0], compared where the
 * slot holds it, none built (an entry's key is always such a prefix, so
 * its length and the first u32 say the second is 0). NULL: absent, or in
 * a heap block (state_map_get finds it). Table not NULL: map->slots. */
static SPATE_INLINE struct state_entry *
keyed_entry_inline_of(struct state_map *map, uint64_t key_hash, const void *key, uint32_t len)
{
    const uint8_t *tags = state_map_tags(map->slots, map->mask);
    uint8_t tag = state_map_tag(key_hash);

    for (size_t i = state_map_home_slot(key_hash, map->mask);; i = (i + 1) & map->mask) {
        uint8_t t = tags[i];

        if (t == tag) { /* the entry looked at only then (a tag is never 0) */
            struct state_entry *e = &map->slots[i];

            if (e->hash == key_hash && e->key_len1 == len + 9) {
                if (!state_entry_inline(e))
                    return NULL;
                if (bytes_load32(e->u.bytes) == len && bytes_equal(e->u.bytes + 4, key, len))
                    return e;
            }
        } else if (t == 0) {
            return NULL;
        }
    }
}

/* The map of state st that holds key_hash's entries (NULL: none yet, or
 * the state is not found inline). */
static SPATE_INLINE const struct state_map *
keyed_prefetch_map(const struct heap_state *st, uint64_t key_hash)
{
    const struct keyed_state *ks = &st->maps;
    uint32_t k = (uint32_t)(key_hash & ks->kg_mask) - ks->range.start;

    if (!st->fast || ks->kg_mask == 0 || k > ks->range.end - ks->range.start ||
        ks->maps[k].slots == NULL)
        return NULL;
    return &ks->maps[k];
}

/* Fetches what the per-record path will read for the key whose hash is
 * key_hash, in no namespace: the slot and tag of its entry in each keyed
 * state's map; and, for the key of KEYED_PREFETCH_STAGE calls before,
 * whose slot has come meanwhile, the heap block of an entry too large for
 * its slot (key and value both there). A keyed function's run calls it a
 * few records ahead: the state of many keys is far larger than the
 * caches, and each lookup's loads are most of its time. */
static SPATE_INLINE void
keyed_backend_prefetch(struct heap_keyed_backend *b, uint64_t key_hash)
{
    uint64_t before = b->ahead[b->nahead % KEYED_PREFETCH_STAGE];

    b->ahead[b->nahead++ % KEYED_PREFETCH_STAGE] = key_hash;
    for (int i = 0; i < b->nstates; i++) {
        const struct state_map *map;

        if ((map = keyed_prefetch_map(&b->states[i], key_hash)) != NULL)
            state_map_prefetch(map, key_hash);
        if ((map = keyed_prefetch_map(&b->states[i], before)) != NULL)
            state_map_prefetch_block(map, before);
    }
}

/* Window buffers: list states whose elements keep their timestamps. Adds
 * (these and the two below) return true when the current key and
 * namespace had no value: a window new for the key. */
bool keyed_list_add_timestamped(struct heap_state *st, int64_t timestamp, const void *rec);
bool keyed_reducing_add(struct heap_state *st, const void *value);
bool keyed_aggregating_add(struct heap_state *st, const void *in);
/* The next element and its timestamp (timestamped lists); it->st NULL:
 * the one record in memory [at, end), a pre-aggregated window result.
 * Reads only [at, end) and the state's descriptor: every backend's
 * list_next, whose list_iter points them at the list's bytes. */
bool keyed_list_next_timestamped(spate_iter *it, void *out, int64_t *timestamp);
/* Replaces the current key's list with the elements of the old one whose
 * keep[i] is set (timestamped lists: evictors). */
void keyed_list_retain(struct heap_state *st, const bool *keep, size_t count);
/* Whether the current key (and namespace) has a value in st. */
bool keyed_state_exists(struct heap_state *st);

#endif
