/* The per-key-group state map (state_map.h). Removal uses backward-shift
 * deletion, so there are no tombstones and lookups stay short. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/bytes.h"
#include "core/util.h"
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

/* The bytes of a table's slots and tags. */
static inline size_t
table_bytes(size_t cap)
{
    return cap * sizeof(struct state_entry) + cap;
}

/* A table of cap empty slots, or (copy) a copy of copy's (slots and tags). */
static struct state_entry *
table_new(size_t cap, const struct state_entry *copy)
{
    /* In lines: the header, the slots, the tags. */
    size_t lines = 1 + cap + (cap + sizeof(struct state_entry) - 1) / sizeof(struct state_entry);
    struct table_header *h = copy != NULL ? xaligned_alloc(64, lines, sizeof(struct state_entry))
                                          : xaligned_calloc(64, lines, sizeof(struct state_entry));

    atomic_init(&h->refs, 1);
    if (copy != NULL)
        memcpy(h + 1, copy, table_bytes(cap));
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
        if (state_entry_used(&slots[i]) && !state_entry_inline(&slots[i]))
            free(slots[i].u.heap);
    free(table_header(slots));
}

void
state_map_init(struct state_map *m)
{
    memset(m, 0, sizeof *m);
}

/* A new block of n bytes, of the map's generation: a spare one of that
 * length when there is one. */
static inline void
block_new(struct state_map *m, struct state_entry *e, size_t n)
{
    if (m->nspare > 0 && m->spare[m->nspare - 1].len == n)
        e->u.heap = m->spare[--m->nspare].bytes;
    else
        e->u.heap = xmalloc(n);
    e->u.heap_gen = m->gen;
}

static inline bool
block_shared(const struct state_map *m, const struct state_entry *e)
{
    return m->base != NULL && !state_entry_inline(e) && e->u.heap_gen != m->gen;
}

/* When no view reads the base any more: its blocks the live table let go
 * of become spares (as many as the map has entries; the rest are freed),
 * the others are the live table's alone. */
static void
state_map_settle(struct state_map *m)
{
    size_t keep;

    if (m->base == NULL ||
        atomic_load_explicit(&table_header(m->base)->refs, memory_order_acquire) != 1)
        return;
    keep = m->nspare >= m->count ? 0 : MIN(m->nretired, m->count - m->nspare);
    if (keep > 0) {
        if (m->nspare + keep > m->spare_cap) {
            m->spare_cap = m->nspare + keep;
            m->spare = xrealloc(m->spare, m->spare_cap * sizeof *m->spare);
        }
        memcpy(m->spare + m->nspare, m->retired, keep * sizeof *m->retired);
        m->nspare += keep;
    }
    for (size_t i = keep; i < m->nretired; i++)
        free(m->retired[i].bytes);
    m->nretired = 0;
    /* Not its blocks: those left are the live table's. The table serves
     * the next copy of the slots, unless they have grown since. */
    if (m->spare_slots == NULL && m->base_mask == m->mask) {
        m->spare_slots = m->base;
        m->spare_mask = m->base_mask;
    } else {
        free(table_header(m->base));
    }
    m->base = NULL;
}

/* The list of retired blocks is full: the views may have let go of the
 * base meanwhile. */
static inline void
state_map_maybe_settle(struct state_map *m)
{
    if (m->nretired == m->retired_cap)
        state_map_settle(m);
}

/* A block (len bytes) of the base the live table no longer uses. */
static void
block_retire(struct state_map *m, uint8_t *block, size_t len)
{
    if (m->nretired == m->retired_cap) {
        m->retired_cap = m->retired_cap ? m->retired_cap * 2 : 64;
        m->retired = xrealloc(m->retired, m->retired_cap * sizeof *m->retired);
    }
    m->retired[m->nretired++] = (struct state_block){ block, len };
}

/* The block of e leaves the live table (replaced or removed). */
static void
block_drop(struct state_map *m, struct state_entry *e)
{
    state_map_maybe_settle(m);
    if (block_shared(m, e))
        block_retire(m, e->u.heap, state_entry_key_len(e) + e->value_len);
    else
        free(e->u.heap);
}

void
state_map_copy_block(struct state_map *m, struct state_entry *e)
{
    size_t n = state_entry_key_len(e) + e->value_len;
    uint8_t *old = e->u.heap;

    /* The snapshot writer lets go of each key group as soon as it is
     * written: from then on the map's blocks are its own again. */
    state_map_settle(m);
    if (!block_shared(m, e))
        return; /* the snapshot let go of it meanwhile */
    block_retire(m, old, n);
    block_new(m, e, n);
    memcpy(e->u.heap, old, n);
}

/* The views still read the base while a new snapshot is taken: the live
 * table stops sharing blocks with it (copying them), and the base, whose
 * blocks are now all retired ones, frees them when its last view goes. */
static void
state_map_detach(struct state_map *m)
{
    for (size_t i = 0; i <= m->mask; i++) {
        struct state_entry *e = &m->slots[i];

        if (state_entry_used(e) && block_shared(m, e)) {
            uint8_t *old = e->u.heap;
            size_t n = state_entry_key_len(e) + e->value_len;

            block_new(m, e, n);
            memcpy(e->u.heap, old, n);
        }
    }
    m->nretired = 0;
    table_unref(m->base, m->base_mask);
    m->base = NULL;
}

void
state_map_release(struct state_map *m)
{
    if (m->base != NULL) {
        /* The live table is not frozen (a freeze detaches the base first):
         * its own blocks go now, the shared and retired ones with the base. */
        for (size_t i = 0; i <= m->mask; i++)
            if (state_entry_used(&m->slots[i]) && !state_entry_inline(&m->slots[i]) &&
                !block_shared(m, &m->slots[i]))
                free(m->slots[i].u.heap);
        free(table_header(m->slots));
        table_unref(m->base, m->base_mask);
    } else {
        table_unref(m->slots, m->mask);
    }
    free(m->retired);
    for (size_t i = 0; i < m->nspare; i++)
        free(m->spare[i].bytes);
    free(m->spare);
    if (m->spare_slots != NULL)
        free(table_header(m->spare_slots));
    state_map_init(m);
}

void
state_map_freeze(struct state_map *m, struct state_map_view *v)
{
    if (m->base != NULL) {
        state_map_settle(m);
        if (m->base != NULL)
            state_map_detach(m);
    }
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

/* Before any change: a table a view still reads becomes the base of a copy
 * of its slots (sharing its blocks); one the views have let go of is the
 * map's alone again. */
void
state_map_unshare(struct state_map *m)
{
    struct state_entry *copy;

    m->shared = false;
    if (atomic_load_explicit(&table_header(m->slots)->refs, memory_order_acquire) == 1)
        return;
    if (m->spare_slots != NULL && m->spare_mask == m->mask) {
        copy = m->spare_slots;
        m->spare_slots = NULL;
        atomic_init(&table_header(copy)->refs, 1);
        memcpy(copy, m->slots, table_bytes(m->mask + 1));
    } else {
        copy = table_new(m->mask + 1, m->slots);
    }
    m->base = m->slots; /* the map's reference to it is now the base's */
    m->base_mask = m->mask;
    m->slots = copy;
    m->tags = state_map_tags(copy, m->mask);
    m->gen++;
}

static inline void
state_map_own(struct state_map *m)
{
    if (m->shared)
        state_map_unshare(m);
}

/* Entries are kept in Robin Hood order: each cluster sorted by home slot.
 * A new entry goes before the first entry of its cluster that sits nearer
 * to its own home than the new one would there, and the rest of the
 * cluster moves one slot on; removal shifts back. Lookups so find recent
 * entries as near their home as old ones: with plain linear probing the
 * newest come last in their cluster, and a window's state, all new,
 * paid whole clusters (2.6 probes per lookup at load 0.5, each a cache
 * line, against 1.5). */
static inline size_t
probe_distance(const struct state_entry *e, size_t i, size_t mask)
{
    return (i - state_map_home_slot(e->hash, mask)) & mask;
}

/* Empties slot i for a new entry by moving the entries from i to the end
 * of their cluster one slot on. */
static void
make_room(struct state_entry *slots, size_t mask, size_t i)
{
    uint8_t *tags = state_map_tags(slots, mask);
    size_t j = i;

    while (tags[j] != 0)
        j = (j + 1) & mask;
    while (j != i) {
        size_t p = (j - 1) & mask;

        slots[j] = slots[p];
        tags[j] = tags[p];
        j = p;
    }
    slots[i].key_len1 = 0;
    tags[i] = 0;
}

/* The slot, emptied, where an entry of hash goes (no entry of its key is
 * in the table). */
static size_t
slot_for_new(struct state_entry *slots, size_t mask, uint64_t hash)
{
    size_t i = state_map_home_slot(hash, mask);

    for (size_t dist = 0; state_entry_used(&slots[i]); i = (i + 1) & mask, dist++)
        if (probe_distance(&slots[i], i, mask) < dist) {
            make_room(slots, mask, i);
            break;
        }
    return i;
}

static void
state_map_grow(struct state_map *m)
{
    size_t old_cap = m->slots ? m->mask + 1 : 0;
    size_t cap = old_cap ? old_cap * 2 : 8;
    struct state_entry *old = m->slots;

    if (m->spare_slots != NULL) {
        free(table_header(m->spare_slots)); /* of the old size */
        m->spare_slots = NULL;
    }
    m->slots = table_new(cap, NULL);
    m->mask = cap - 1;
    m->tags = state_map_tags(m->slots, m->mask);
    for (size_t j = 0; j < old_cap; j++)
        if (state_entry_used(&old[j])) {
            size_t i = slot_for_new(m->slots, m->mask, old[j].hash);

            m->slots[i] = old[j];
            state_map_tags(m->slots, m->mask)[i] = state_map_tag(old[j].hash);
        }
    if (old != NULL)
        free(table_header(old)); /* the entries moved: not table_unref */
}

/* Makes room for value_len value bytes in e (whose value has value_len
 * bytes now), keeping the key and as much of the old value as fits: callers
 * grow values in place. The bytes move between slot and heap as they stop
 * or start to fit. */
static void
entry_resize(struct state_map *m, struct state_entry *e, size_t value_len)
{
    size_t key_len = state_entry_key_len(e);
    size_t keep = key_len + (e->value_len < value_len ? e->value_len : value_len);
    bool was_inline = state_entry_inline(e), now_inline = key_len + value_len <= STATE_INLINE_BYTES;

    if (was_inline && !now_inline) {
        uint8_t bytes[STATE_INLINE_BYTES];

        memcpy(bytes, e->u.bytes, keep);
        block_new(m, e, key_len + value_len);
        memcpy(e->u.heap, bytes, keep);
    } else if (!was_inline && now_inline) {
        struct state_entry old = *e;

        memcpy(e->u.bytes, old.u.heap, keep);
        block_drop(m, &old);
    } else if (!was_inline && e->value_len != value_len) {
        e->u.heap = xrealloc(e->u.heap, key_len + value_len);
    }
    e->value_len = (uint32_t)value_len;
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
    i = state_map_home_slot(hash, m->mask);
    for (size_t dist = 0;; i = (i + 1) & m->mask, dist++) {
        e = &m->slots[i];
        if (!state_entry_used(e) || state_entry_is(e, hash, key, key_len))
            break;
        if (probe_distance(e, i, m->mask) < dist) {
            /* The key would sit here in Robin Hood order: it is absent. */
            make_room(m->slots, m->mask, i);
            break;
        }
    }
    if (!state_entry_used(e)) {
        state_map_tags(m->slots, m->mask)[i] = state_map_tag(hash);
        e->hash = hash;
        e->key_len1 = (uint32_t)key_len + 1;
        e->value_len = (uint32_t)value_len;
        if (!state_entry_inline(e))
            block_new(m, e, key_len + value_len);
        memcpy(state_entry_key(e), key, key_len);
        m->count++;
    } else {
        state_map_own_entry(m, e);
        entry_resize(m, e, value_len);
    }
    if (value != NULL && value_len)
        memcpy(state_entry_value(e), value, value_len);
    return e;
}

/* Empties slot i (used) and shifts back the entries that probed past it. */
static void
remove_slot(struct state_map *m, size_t i)
{
    uint8_t *tags = state_map_tags(m->slots, m->mask);
    struct state_entry *e = &m->slots[i];

    if (!state_entry_inline(e))
        block_drop(m, e);
    e->key_len1 = 0;
    tags[i] = 0;
    m->count--;
    for (size_t j = (i + 1) & m->mask; tags[j] != 0; j = (j + 1) & m->mask) {
        size_t home = state_map_home_slot(m->slots[j].hash, m->mask);

        /* Entry j may move to i unless its home lies cyclically in (i, j]. */
        if (((j - home) & m->mask) >= ((j - i) & m->mask)) {
            m->slots[i] = m->slots[j];
            tags[i] = tags[j];
            m->slots[j].key_len1 = 0;
            tags[j] = 0;
            i = j;
        }
    }
}

int
state_map_remove(struct state_map *m, uint64_t hash, const void *key, size_t key_len)
{
    struct state_entry *e;

    state_map_own(m);
    if ((e = state_map_get(m, hash, key, key_len)) == NULL)
        return 0;
    remove_slot(m, (size_t)(e - m->slots));
    return 1;
}

/* A removal shifts entries back into the slot it emptied, which is then
 * visited again; entries only move towards the slot being visited, so an
 * entry not yet visited never lands behind it (a cluster wrapping past
 * the table's end brings visited entries back, which fn keeps again). */
size_t
state_map_remove_if(struct state_map *m, bool (*fn)(const struct state_entry *e, void *data),
                    void *data)
{
    size_t removed = 0;

    if (m->slots == NULL || m->count == 0)
        return 0;
    state_map_own(m);
    for (size_t i = 0; i <= m->mask && m->count > 0; i++)
        while (state_entry_used(&m->slots[i]) && fn(&m->slots[i], data)) {
            remove_slot(m, i);
            removed++;
        }
    return removed;
}

int
state_map_foreach(struct state_map *m, int (*fn)(struct state_entry *e, void *data), void *data)
{
    if (m->slots == NULL)
        return 0;
    for (size_t i = 0; i <= m->mask; i++) {
        int rc;

        if (state_entry_used(&m->slots[i]) && (rc = fn(&m->slots[i], data)) != 0)
            return rc;
    }
    return 0;
}
