/* The per-key-group state map (state_map.h). Removal uses backward-shift
 * deletion, so there are no tombstones and lookups stay short. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "state/state_map.h"

void
state_map_init(struct state_map *m)
{
    m->slots = NULL;
    m->mask = 0;
    m->count = 0;
}

void
state_map_release(struct state_map *m)
{
    if (m->slots != NULL) {
        for (size_t i = 0; i <= m->mask; i++)
            if (m->slots[i].used && !m->slots[i].inline_)
                free(m->slots[i].u.heap);
        free(m->slots);
    }
    state_map_init(m);
}

/* The home slot. Key groups are hash % max parallelism, so all keys of one
 * map share the hash's low bits: index by the high ones. */
static inline size_t
home_slot(uint64_t hash, size_t mask)
{
    return (size_t)(hash >> 32 ^ hash >> 13) & mask;
}

static inline int
entry_is(struct state_entry *e, uint64_t hash, const void *key, size_t key_len)
{
    return e->hash == hash && e->key_len == key_len &&
           memcmp(state_entry_key(e), key, key_len) == 0;
}

struct state_entry *
state_map_get(struct state_map *m, uint64_t hash, const void *key, size_t key_len)
{
    size_t i;

    if (m->slots == NULL)
        return NULL;
    for (i = home_slot(hash, m->mask);; i = (i + 1) & m->mask) {
        struct state_entry *e = &m->slots[i];

        if (!e->used)
            return NULL;
        if (entry_is(e, hash, key, key_len))
            return e;
    }
}

static void
state_map_grow(struct state_map *m)
{
    size_t old_cap = m->slots ? m->mask + 1 : 0;
    size_t cap = old_cap ? old_cap * 2 : 8;
    struct state_entry *old = m->slots;

    m->slots = xaligned_calloc(64, cap, sizeof *m->slots);
    m->mask = cap - 1;
    for (size_t j = 0; j < old_cap; j++) {
        size_t i;

        if (!old[j].used)
            continue;
        for (i = home_slot(old[j].hash, m->mask); m->slots[i].used; i = (i + 1) & m->mask)
            ;
        m->slots[i] = old[j];
    }
    free(old);
}

/* Makes room for key_len + value_len bytes in e, keeping the key and as
 * much of the old value as fits (callers grow values in place). */
static void
entry_resize(struct state_entry *e, size_t key_len, size_t value_len)
{
    size_t need = key_len + value_len;
    size_t keep = key_len + (e->value_len < value_len ? e->value_len : value_len);

    if (need <= STATE_INLINE_BYTES) {
        if (!e->inline_) {
            uint8_t *heap = e->u.heap;

            memcpy(e->u.bytes, heap, keep);
            free(heap);
            e->inline_ = 1;
        }
    } else if (e->inline_) {
        uint8_t *heap = xmalloc(need);

        memcpy(heap, e->u.bytes, keep);
        e->u.heap = heap;
        e->inline_ = 0;
    } else if (e->value_len != value_len) {
        e->u.heap = xrealloc(e->u.heap, need);
    }
}

struct state_entry *
state_map_put(struct state_map *m, uint64_t hash, const void *key, size_t key_len,
              const void *value, size_t value_len)
{
    struct state_entry *e;
    size_t i;

    /* Load at most 3/4. */
    if (m->slots == NULL || (m->count + 1) * 4 > (m->mask + 1) * 3)
        state_map_grow(m);
    for (i = home_slot(hash, m->mask);; i = (i + 1) & m->mask) {
        e = &m->slots[i];
        if (!e->used || entry_is(e, hash, key, key_len))
            break;
    }
    if (!e->used) {
        e->used = 1;
        e->hash = hash;
        e->key_len = (uint32_t)key_len;
        if (key_len + value_len <= STATE_INLINE_BYTES) {
            e->inline_ = 1;
        } else {
            e->inline_ = 0;
            e->u.heap = xmalloc(key_len + value_len);
        }
        memcpy(state_entry_key(e), key, key_len);
        m->count++;
    } else {
        entry_resize(e, key_len, value_len);
    }
    e->value_len = (uint32_t)value_len;
    if (value != NULL && value_len)
        memcpy(state_entry_value(e), value, value_len);
    return e;
}

int
state_map_remove(struct state_map *m, uint64_t hash, const void *key, size_t key_len)
{
    struct state_entry *e = state_map_get(m, hash, key, key_len);
    size_t i, j;

    if (e == NULL)
        return 0;
    if (!e->inline_)
        free(e->u.heap);
    e->used = 0;
    m->count--;
    /* Shift back the entries that probed past the freed slot. */
    i = (size_t)(e - m->slots);
    for (j = (i + 1) & m->mask; m->slots[j].used; j = (j + 1) & m->mask) {
        size_t home = home_slot(m->slots[j].hash, m->mask);

        /* Entry j may move to i unless its home lies cyclically in (i, j]. */
        if (((j - home) & m->mask) >= ((j - i) & m->mask)) {
            m->slots[i] = m->slots[j];
            m->slots[j].used = 0;
            i = j;
        }
    }
    return 1;
}

int
state_map_foreach(struct state_map *m, int (*fn)(struct state_entry *e, void *data), void *data)
{
    if (m->slots == NULL)
        return 0;
    for (size_t i = 0; i <= m->mask; i++) {
        int rc;

        if (m->slots[i].used && (rc = fn(&m->slots[i], data)) != 0)
            return rc;
    }
    return 0;
}
