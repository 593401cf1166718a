/* A state map: key bytes → value bytes, one per (state, key group), as
 * Flink's heap backend keeps a map per key group so that state moves between
 * subtasks by whole key groups. Open addressing with linear probing over the
 * keys' 64-bit hashes, which the caller computes once per record. Owned by
 * one task thread.
 *
 * Snapshots are copy-on-write (Flink's CopyOnWriteStateMap, per map): a
 * freeze hands out a view of the current table, which from then on is
 * shared; the first change after it copies the table (only this key group's),
 * so the synchronous part of a checkpoint costs O(maps), not O(state). The
 * view is read and released on any thread (the snapshot writer). */
#ifndef SPATE_STATE_STATE_MAP_H
#define SPATE_STATE_STATE_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An entry: one slot of 64 bytes, a cache line. Key and value bytes live in
 * the slot when they fit (STATE_INLINE_BYTES together), else in a heap block
 * the slot points to; a lookup then touches one line, not two. */
#define STATE_INLINE_BYTES 40

struct state_entry {
    uint64_t hash;
    uint32_t key_len;
    uint32_t value_len;
    uint8_t used;    /* 0: an empty slot */
    uint8_t inline_; /* the bytes are in u.bytes */
    union {
        uint8_t *heap;
        uint8_t bytes[STATE_INLINE_BYTES];
    } u;
};

_Static_assert(sizeof(struct state_entry) == 64, "a state entry is one cache line");

struct state_map {
    struct state_entry *slots; /* after a one-line header with the table's references */
    size_t mask;               /* capacity - 1; capacity a power of two, or 0 */
    size_t count;
    bool shared; /* a view may still read slots: copy before any change */
};

/* A frozen table: what a snapshot writes. */
struct state_map_view {
    struct state_entry *slots; /* NULL: empty */
    size_t mask, count;
};

/* The key's bytes, then the value's. */
static inline uint8_t *
state_entry_key(const struct state_entry *e)
{
    return e->inline_ ? (uint8_t *)e->u.bytes : e->u.heap;
}

/* The value's bytes: unaligned (they follow the key), so copy, don't cast. */
static inline uint8_t *
state_entry_value(const struct state_entry *e)
{
    return state_entry_key(e) + e->key_len;
}

void state_map_init(struct state_map *m);
void state_map_release(struct state_map *m);

/* The entry for key, or NULL: for reading only. */
struct state_entry *state_map_get(struct state_map *m, uint64_t hash, const void *key,
                                  size_t key_len);
/* The same, for changing its value bytes in place (copies a shared table). */
struct state_entry *state_map_get_mut(struct state_map *m, uint64_t hash, const void *key,
                                      size_t key_len);
/* Sets key's value (copying both; a NULL value leaves value_len bytes for the
 * caller to fill); returns the entry, valid until the next put or remove. */
struct state_entry *state_map_put(struct state_map *m, uint64_t hash, const void *key,
                                  size_t key_len, const void *value, size_t value_len);
/* Removes key; 1 if it was there. */
int state_map_remove(struct state_map *m, uint64_t hash, const void *key, size_t key_len);

/* Freezes the current table into v (task thread); the map copies it on its
 * next change. Release every view. */
void state_map_freeze(struct state_map *m, struct state_map_view *v);
/* Any thread. */
void state_map_view_release(struct state_map_view *v);

/* Visits every entry (order unspecified); stop when fn returns non-zero. */
int state_map_foreach(struct state_map *m, int (*fn)(struct state_entry *e, void *data),
                      void *data);

#endif
