/* The per-key-group state map (state_map.h). Removal uses backward-shift
 * deletion, so there are no tombstones and lookups stay short. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "state/state_map.h"

/* The line before a table's slots: how many hold it (the map, views). */
struct table_header {
    _Atomic unsigned refs;
    char pad[64 - sizeof(unsigned)];
};

static inline struct table_header *
table_header(struct state_entry *slots)
{
    return (struct table_header *)slots - 1;
}

static struct state_entry *
table_new(size_t cap)
{
    struct table_header *h = xaligned_calloc(64, cap + 1, sizeof(struct state_entry));

    atomic_init(&h->refs, 1);
    return (struct state_entry *)(h + 1);
}

/* Drops one reference; the last frees the table and its heap blocks. */
static void
table_unref(struct state_entry *slots, size_t mask)
{
    if (slots == NULL ||
        atomic_fetch_sub_explicit(&table_header(slots)->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (size_t i = 0; i <= mask; i++)
        if (slots[i].used && !slots[i].inline_)
            free(slots[i].u.heap);
    free(table_header(slots));
}

void
state_map_init(struct state_map *m)
{
    m->slots = NULL;
    m->mask = 0;
    m->count = 0;
    m->shared = false;
}

void
state_map_release(struct state_map *m)
{
    table_unref(m->slots, m->mask);
    state_map_init(m);
}

void
state_map_freeze(struct state_map *m, struct state_map_view *v)
{
    v->slots = m->slots;
    v->mask = m->mask;
    v->count = m->count;
    if (m->slots != NULL) {
        atomic_fetch_add_explicit(&table_header(m->slots)->refs, 1, memory_order_relaxed);
        m->shared = true;
    }
}

void
state_map_view_release(struct state_map_view *v)
{
    table_unref(v->slots, v->mask);
    v->slots = NULL;
}

/* Before any change: a table a view still reads is copied (its heap blocks
 * too); one the views have let go of is the map's alone again. */
static void
state_map_unshare(struct state_map *m)
{
    struct state_entry *copy;

    m->shared = false;
    if (atomic_load_explicit(&table_header(m->slots)->refs, memory_order_acquire) == 1)
        return;
    copy = table_new(m->mask + 1);
    memcpy(copy, m->slots, (m->mask + 1) * sizeof *copy);
    for (size_t i = 0; i <= m->mask; i++) {
        struct state_entry *e = &copy[i];

        if (e->used && !e->inline_) {
            uint8_t *heap = xmalloc(e->key_len + e->value_len);

            memcpy(heap, e->u.heap, e->key_len + e->value_len);
            e->u.heap = heap;
        }
    }
    table_unref(m->slots, m->mask);
    m->slots = copy;
}

static inline void
state_map_own(struct state_map *m)
{
    if (m->shared)
        state_map_unshare(m);
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

struct state_entry *
state_map_get_mut(struct state_map *m, uint64_t hash, const void *key, size_t key_len)
{
    state_map_own(m);
    return state_map_get(m, hash, key, key_len);
}

static void
state_map_grow(struct state_map *m)
{
    size_t old_cap = m->slots ? m->mask + 1 : 0;
    size_t cap = old_cap ? old_cap * 2 : 8;
    struct state_entry *old = m->slots;

    m->slots = table_new(cap);
    m->mask = cap - 1;
    for (size_t j = 0; j < old_cap; j++) {
        size_t i;

        if (!old[j].used)
            continue;
        for (i = home_slot(old[j].hash, m->mask); m->slots[i].used; i = (i + 1) & m->mask)
            ;
        m->slots[i] = old[j];
    }
    if (old != NULL)
        free(table_header(old)); /* the entries moved: not table_unref */
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

    state_map_own(m);
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
    struct state_entry *e;
    size_t i, j;

    state_map_own(m);
    if ((e = state_map_get(m, hash, key, key_len)) == NULL)
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
