/* A state map: key bytes → value bytes, one per (state, key group), as
 * Flink's heap backend keeps a map per key group so that state moves between
 * subtasks by whole key groups. Open addressing with linear probing over the
 * keys' 64-bit hashes, which the caller computes once per record (or
 * carries with the record from the exchange), in Robin Hood order
 * (state_map.c), with a tag byte per slot that lookups scan. Owned by one
 * task thread.
 *
 * Snapshots are copy-on-write (Flink's CopyOnWriteStateMap, per map): a
 * freeze hands out a view of the current table, which from then on is
 * shared; the first change after it copies the table's slots (only this key
 * group's), not the heap blocks they point to: the new table shares them
 * with the frozen one (its base), and a block is copied only when its entry
 * changes while the base is still read (a block is shared when its
 * generation is older than the map's). Blocks the live table stopped using
 * wait in the retired list until the views let go of the base, then serve
 * the next snapshot's copies (spare blocks, not malloc and free). So the
 * synchronous part of a checkpoint costs O(maps), and a key costs a copy
 * only if it changes while its snapshot is being written. The view is read
 * and released on any thread (the snapshot writer). */
#ifndef SPATE_STATE_STATE_MAP_H
#define SPATE_STATE_STATE_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/bytes.h"
#include "core/util.h"

/* An entry: one slot of 64 bytes, a cache line. Key and value bytes live in
 * the slot when they fit (STATE_INLINE_BYTES together: a window's composite
 * key and a small accumulator do), else in a heap block the slot points to;
 * a lookup then touches one line, not two. */
#define STATE_INLINE_BYTES 48

struct state_entry {
    uint64_t hash;
    uint32_t key_len1; /* the key's length + 1; 0: an empty slot */
    uint32_t value_len;
    union {
        struct {
            uint8_t *heap;
            uint32_t heap_gen; /* the map generation the block was made in */
        };
        uint8_t bytes[STATE_INLINE_BYTES];
    } u;
};

_Static_assert(sizeof(struct state_entry) == 64, "a state entry is one cache line");

/* A heap block and its length. */
struct state_block {
    uint8_t *bytes;
    size_t len;
};

struct state_map {
    /* After a one-line header with the table's references; after the slots,
     * a byte per slot, its tag (state_map_tags). */
    struct state_entry *slots;
    size_t mask; /* capacity - 1; capacity a power of two, or 0 */
    size_t count;
    bool shared;              /* a view may still read slots: copy before any change */
    uint32_t gen;             /* blocks of another generation are the base's too */
    struct state_entry *base; /* the frozen table slots was copied from; NULL: none */
    size_t base_mask;
    struct state_block *retired; /* the base's blocks slots no longer uses */
    size_t nretired, retired_cap;
    struct state_block *spare; /* freed blocks kept for the next copies */
    size_t nspare, spare_cap;
    /* A base no view reads any more, kept for the next snapshot's copy of
     * the slots (no allocation and page faults per checkpoint); NULL: none. */
    struct state_entry *spare_slots;
    size_t spare_mask;
    /* state_map_tags(slots, mask) while slots is not NULL: read, not
     * computed, by the lookups. */
    uint8_t *tags;
    /* To 128 bytes: a key group's map is found by a shift, once or twice
     * per record. */
    uint8_t pad[8];
};

_Static_assert(sizeof(struct state_map) == 128, "a state map is 128 bytes");

/* A frozen table: what a snapshot writes. */
struct state_map_view {
    struct state_entry *slots; /* NULL: empty */
    size_t mask, count;
};

static inline bool
state_entry_used(const struct state_entry *e)
{
    return e->key_len1 != 0;
}

static inline uint32_t
state_entry_key_len(const struct state_entry *e)
{
    return e->key_len1 - 1;
}

/* Whether the bytes are in the slot: exactly when they fit. */
static inline bool
state_entry_inline(const struct state_entry *e)
{
    return (size_t)e->key_len1 - 1 + e->value_len <= STATE_INLINE_BYTES;
}

/* The key's bytes, then the value's. */
static inline uint8_t *
state_entry_key(const struct state_entry *e)
{
    return state_entry_inline(e) ? (uint8_t *)e->u.bytes : e->u.heap;
}

/* The value's bytes: unaligned (they follow the key), so copy, don't cast. */
static inline uint8_t *
state_entry_value(const struct state_entry *e)
{
    return state_entry_key(e) + state_entry_key_len(e);
}

void state_map_init(struct state_map *m);
void state_map_release(struct state_map *m);

/* A slot's tag: 0 for an empty one, else the top 7 bits of its entry's
 * hash with the top bit set. Lookups scan the tags, a byte per slot, and
 * read only the entries whose tag matches: probing past other entries
 * (other windows of the key group, waiting to fire) touches no cache line
 * of theirs. */
static inline uint8_t
state_map_tag(uint64_t hash)
{
    return (uint8_t)(0x80 | hash >> 57);
}

/* The tags of a table of mask + 1 slots. */
static inline uint8_t *
state_map_tags(struct state_entry *slots, size_t mask)
{
    return (uint8_t *)(slots + mask + 1);
}

/* The home slot. Key groups are hash % max parallelism, so all keys of one
 * map share the hash's low bits: index by the high ones (a key's XXH3
 * there, and a namespace's or map key's hash shifted in by 16). */
static inline size_t
state_map_home_slot(uint64_t hash, size_t mask)
{
    return (size_t)(hash >> 32) & mask;
}

/* Fetches the slot and tag where a lookup of hash starts, for a caller
 * that will look it up a few records later. A map with no table yet
 * (slots and tags NULL, mask 0) gives addresses near 0, computed as
 * integers, and a prefetch never faults: a lookahead needs no test. */
static SPATE_INLINE void
state_map_prefetch(const struct state_map *m, uint64_t hash)
{
    size_t slot = state_map_home_slot(hash, m->mask);

    __builtin_prefetch((const void *)((uintptr_t)m->slots + slot * sizeof(struct state_entry)), 0,
                       3);
    __builtin_prefetch((const void *)((uintptr_t)m->tags + slot), 0, 3);
}

/* After state_map_prefetch of hash has had time to arrive: fetches the
 * heap block of its entry when key and value are too large for the slot
 * (the lookup compares the key there). Looks at the first few slots of
 * the probe only, by tag and hash, touching no block. */
static SPATE_INLINE void
state_map_prefetch_block(const struct state_map *m, uint64_t hash)
{
    const uint8_t *tags = m->tags;
    uint8_t tag = state_map_tag(hash);
    size_t slot = state_map_home_slot(hash, m->mask);

    for (int probe = 0; probe < 4 && tags[slot] != 0; probe++, slot = (slot + 1) & m->mask) {
        const struct state_entry *e = &m->slots[slot];

        if (tags[slot] == tag && e->hash == hash) {
            if (!state_entry_inline(e)) {
                __builtin_prefetch(e->u.heap, 0, 3);
                __builtin_prefetch(e->u.heap + 64, 0, 3);
            }
            return;
        }
    }
}

static inline bool
state_entry_is(const struct state_entry *e, uint64_t hash, const void *key, size_t key_len)
{
    return e->hash == hash && e->key_len1 == key_len + 1 &&
           bytes_equal(state_entry_key(e), key, key_len);
}

/* The entry for key, or NULL: for reading only. Inline: once per record. */
static SPATE_INLINE struct state_entry *
state_map_get(struct state_map *m, uint64_t hash, const void *key, size_t key_len)
{
    const uint8_t *tags;
    uint8_t tag = state_map_tag(hash);

    if (m->slots == NULL)
        return NULL;
    tags = m->tags;
    for (size_t i = state_map_home_slot(hash, m->mask);; i = (i + 1) & m->mask) {
        if (tags[i] == 0)
            return NULL;
        if (tags[i] == tag && state_entry_is(&m->slots[i], hash, key, key_len))
            return &m->slots[i];
    }
}

/* The word of an inline entry's two lengths as its slot keeps them (the
 * key's + 1, then the value's), compared at once by the lookups below. */
static inline uint64_t
state_map_inline_lens(uint32_t key_len, uint32_t value_len)
{
    uint32_t len2[2] = { key_len + 1, value_len };
    uint64_t lens;

    _Static_assert(offsetof(struct state_entry, value_len) ==
                       offsetof(struct state_entry, key_len1) + 4,
                   "the lengths are one word, key_len1 first");
    memcpy(&lens, len2, 8);
    return lens;
}

/* state_map_get of an entry whose key (key_len bytes) and value
 * (value_len bytes) are both in its slot (key_len + value_len at most
 * STATE_INLINE_BYTES): both lengths compared at once, the key where it
 * is, the value at u.bytes + key_len. NULL: absent, or of another shape. */
static SPATE_INLINE struct state_entry *
state_map_get_inline(struct state_map *m, uint64_t hash, const void *key, uint32_t key_len,
                     uint32_t value_len)
{
    const uint8_t *tags;
    uint8_t tag = state_map_tag(hash);
    uint64_t lens = state_map_inline_lens(key_len, value_len);

    if (m->slots == NULL)
        return NULL;
    tags = m->tags;
    for (size_t i = state_map_home_slot(hash, m->mask);; i = (i + 1) & m->mask) {
        uint8_t t = tags[i];

        if (t == tag) { /* the entry looked at only then (a tag is never 0) */
            struct state_entry *e = &m->slots[i];

            if (e->hash == hash && bytes_load64((const uint8_t *)&e->key_len1) == lens &&
                bytes_equal(e->u.bytes, key, key_len))
                return e;
        } else if (t == 0) {
            return NULL;
        }
    }
}

/* state_map_get_inline of an entry whose key is [u32 8][8 bytes key][...],
 * of the lengths lens (state_map_inline_lens, computed once by a caller
 * that looks up many), comparing hash, lengths and those 8 bytes only:
 * for a caller that knows no other entry of this hash has that key with
 * another rest (a window whose namespace hash no other live window's
 * shares). */
static SPATE_INLINE struct state_entry *
state_map_get_inline_key8(struct state_map *m, uint64_t hash, uint64_t key8, uint64_t lens)
{
    const uint8_t *tags;
    uint8_t tag = state_map_tag(hash);

    if (m->slots == NULL)
        return NULL;
    tags = m->tags;
    /* The tag first, as state_map_get_inline. */
    for (size_t i = state_map_home_slot(hash, m->mask);; i = (i + 1) & m->mask) {
        uint8_t t = tags[i];

        if (t == tag) {
            struct state_entry *e = &m->slots[i];

            if (e->hash == hash && bytes_load64((const uint8_t *)&e->key_len1) == lens &&
                bytes_load64(e->u.bytes + 4) == key8)
                return e;
        } else if (t == 0) {
            return NULL;
        }
    }
}

void state_map_copy_block(struct state_map *m, struct state_entry *e);
/* A map a view shares becomes the map's own before any change (copying its
 * slots if a view still reads them). */
void state_map_unshare(struct state_map *m);

/* Before the bytes of e (from state_map_get on a map that is not shared)
 * change in place: a heap block the base still holds is copied. */
static inline void
state_map_own_entry(struct state_map *m, struct state_entry *e)
{
    if (m->base != NULL && !state_entry_inline(e) && e->u.heap_gen != m->gen)
        state_map_copy_block(m, e);
}

/* state_map_get, for changing its value bytes in place (copies a shared
 * table and a shared block). Inline: once per record of a keyed sum. */
static SPATE_INLINE struct state_entry *
state_map_get_mut(struct state_map *m, uint64_t hash, const void *key, size_t key_len)
{
    struct state_entry *e;

    if (unlikely(m->shared))
        state_map_unshare(m);
    if ((e = state_map_get(m, hash, key, key_len)) != NULL)
        state_map_own_entry(m, e);
    return e;
}
/* Sets key's value (copying both; a NULL value leaves value_len bytes for the
 * caller to fill); returns the entry, valid until the next put or remove. */
struct state_entry *state_map_put(struct state_map *m, uint64_t hash, const void *key,
                                  size_t key_len, const void *value, size_t value_len);
/* Removes key; 1 if it was there. */
int state_map_remove(struct state_map *m, uint64_t hash, const void *key, size_t key_len);

/* Removes every entry for which fn (which may read it, and nothing else
 * of the map) returns true, asking once for each entry it removes (again,
 * maybe, for one it kept); returns how many. */
size_t state_map_remove_if(struct state_map *m, bool (*fn)(const struct state_entry *e, void *data),
                           void *data);

/* Freezes the current table into v (task thread); the map copies it on its
 * next change. Release every view. */
void state_map_freeze(struct state_map *m, struct state_map_view *v);
/* Any thread. */
void state_map_view_release(struct state_map_view *v);

/* Visits every entry (order unspecified); stop when fn returns non-zero. */
int state_map_foreach(struct state_map *m, int (*fn)(struct state_entry *e, void *data),
                      void *data);

#endif
