/* The heap backend's snapshots in the state file (heap_keyed_backend.h,
 * state_file.h): the asynchronous part, which writes what the synchronous
 * part froze, on the task's snapshot thread; and the restore of a subtask's
 * key groups and operator state elements, on the task thread, with every
 * length checked.
 *
 * The keyed section, key group by key group: u32 keyed states; per state
 * u32 entries, each state_file_entry's form; then u32 length and the key
 * group's timers as keyed_backend_snapshot serialized them. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/util.h"
#include "state/heap_keyed_backend.h"
#include "state/state_file.h"

/* Slots between a heap block's prefetch and its write. */
#define SNAPSHOT_PREFETCH 8

static bool
scope_keyed(const struct state_descriptor *d)
{
    return d->scope == SCOPE_KEYED;
}

static Checkpoint__DistributionMode
scope_mode(enum state_scope scope)
{
    switch (scope) {
    case SCOPE_UNION:
        return CHECKPOINT__DISTRIBUTION_MODE__UNION;
    case SCOPE_BROADCAST:
        return CHECKPOINT__DISTRIBUTION_MODE__BROADCAST;
    default:
        return CHECKPOINT__DISTRIBUTION_MODE__SPLIT_DISTRIBUTE;
    }
}

static size_t
count_keyed(const struct keyed_backend_snapshot *kb)
{
    size_t n = 0;

    for (int i = 0; i < kb->nstates; i++)
        n += scope_keyed(kb->decls[i]);
    return n;
}

/* The keyed section: key group by key group, each let go of once written
 * (the task's copies on write of that key group's state stop there). */
Checkpoint__KeyedStateHandle *
keyed_backend_snapshot_write(struct keyed_state_snapshot *s, struct state_file_writer *w,
                             const char *path)
{
    struct keyed_backend_snapshot *kb = (struct keyed_backend_snapshot *)s;
    Checkpoint__KeyedStateHandle *h = xcalloc(1, sizeof *h);
    uint32_t nkg = kb->kg_end - kb->kg_start + 1;
    uint64_t start = w->off;

    checkpoint__keyed_state_handle__init(h);
    h->path = xstrdup(path);
    h->key_group_start = kb->kg_start;
    h->key_group_end = kb->kg_end;
    h->n_offsets = nkg;
    h->offsets = xcalloc(nkg, sizeof *h->offsets);
    for (uint32_t k = 0; k < nkg; k++) {
        h->offsets[k] = w->off;
        state_file_u32(w, (uint32_t)count_keyed(kb));
        for (int i = 0; i < kb->nstates; i++) {
            const struct state_map_view *v = &kb->views[(size_t)i * nkg + k];

            if (!scope_keyed(kb->decls[i]))
                continue;
            state_file_u32(w, (uint32_t)v->count);
            for (size_t j = 0; v->slots != NULL && j <= v->mask; j++) {
                /* Heap blocks lie anywhere: ask for one a few slots ahead
                 * so that its miss overlaps the writes of these. */
                if (j + SNAPSHOT_PREFETCH <= v->mask) {
                    const struct state_entry *ahead = &v->slots[j + SNAPSHOT_PREFETCH];

                    if (state_entry_used(ahead) && !state_entry_inline(ahead))
                        __builtin_prefetch(ahead->u.heap);
                }
                if (state_entry_used(&v->slots[j]))
                    state_file_entry(w, &v->slots[j]);
            }
        }
        state_file_u32(w, (uint32_t)kb->timers[k].len);
        state_file_put(w, kb->timers[k].data, kb->timers[k].len);
        for (int i = 0; i < kb->nstates; i++)
            if (scope_keyed(kb->decls[i])) /* operator scope: snapshot_write_operator's */
                state_map_view_release(&kb->views[(size_t)i * nkg + k]);
    }
    h->length = w->off - start;
    return h;
}

void
keyed_backend_snapshot_write_operator(struct keyed_state_snapshot *s, struct state_file_writer *w,
                                      Checkpoint__OperatorStateHandle *h)
{
    struct keyed_backend_snapshot *kb = (struct keyed_backend_snapshot *)s;
    uint32_t nkg = kb->kg_end - kb->kg_start + 1;

    for (int i = 0; i < kb->nstates; i++) {
        const struct state_descriptor *d = kb->decls[i];
        Checkpoint__OperatorStateEntry *e;

        if (scope_keyed(d))
            continue;
        e = state_file_operator_entry(d->name, scope_mode(d->scope));
        for (uint32_t k = 0; k < nkg; k++) {
            const struct state_map_view *v = &kb->views[(size_t)i * nkg + k];

            for (size_t j = 0; v->slots != NULL && j <= v->mask; j++) {
                const struct state_entry *se = &v->slots[j];

                if (!state_entry_used(se))
                    continue;
                state_file_add_offset(e, w->off);
                state_file_u32(w, 16 + state_entry_key_len(se) + se->value_len);
                state_file_entry(w, se);
            }
        }
        h->states = xrealloc(h->states, (h->n_states + 1) * sizeof *h->states);
        h->states[h->n_states++] = e;
    }
}

Checkpoint__StateMeta **
keyed_backend_snapshot_metas(const struct keyed_state_snapshot *s, size_t *n)
{
    const struct keyed_backend_snapshot *kb = (const struct keyed_backend_snapshot *)s;
    Checkpoint__StateMeta **m = xcalloc((size_t)kb->nstates + 1, sizeof *m);

    *n = 0;
    for (int i = 0; i < kb->nstates; i++) {
        const struct state_descriptor *d = kb->decls[i];
        Checkpoint__StateMeta *sm;

        if (!scope_keyed(d))
            continue;
        sm = xcalloc(1, sizeof *sm);
        checkpoint__state_meta__init(sm);
        sm->name = xstrdup(d->name);
        sm->kind = d->kind;
        sm->type_name = xstrdup(d->value.name);
        sm->type_version = d->value.version;
        sm->key_type_name = xstrdup(d->key.ser != NULL ? d->key.name : "");
        sm->key_type_version = d->key.ser != NULL ? d->key.version : 0;
        m[(*n)++] = sm;
    }
    return m;
}

/* ---- restore ---- */

/* Which of the backend's states each keyed state of the file is; checks
 * that the kinds and types still match. */
static int
map_states(const struct heap_keyed_backend *b, const Checkpoint__OperatorSubtaskState *st,
           const char *op_name, int *index, spate_error *err)
{
    for (size_t i = 0; i < st->n_states; i++) {
        const Checkpoint__StateMeta *m = st->states[i];
        const struct state_descriptor *d;
        int found = -1;

        for (int k = 0; k < b->nstates; k++)
            if (strcmp(b->states[k].base.desc.name, m->name) == 0)
                found = k;
        if (found < 0)
            return spate_error_set(err, SPATE_EINVAL,
                                   "the checkpoint has keyed state '%s' of operator '%s', which "
                                   "it no longer declares",
                                   m->name, op_name);
        d = &b->states[found].base.desc;
        if ((int)d->kind != m->kind || strcmp(d->value.name, m->type_name) != 0 ||
            d->value.version != m->type_version)
            return spate_error_set(err, SPATE_EINVAL,
                                   "state '%s' of operator '%s' was written as %s state of "
                                   "%s version %d and is now %s state of %s version %d",
                                   m->name, op_name, state_kind_name(m->kind), m->type_name,
                                   m->type_version, state_kind_name((int)d->kind), d->value.name,
                                   d->value.version);
        index[i] = found;
    }
    return 0;
}

/* Where a restore puts the entries it reads. */
struct restore_sink {
    keyed_restore_entry_fn entry;
    void *arg;
};

static int
restore_key_group(struct heap_keyed_backend *b, struct state_file *f, uint64_t off, uint64_t len,
                  const int *index, size_t nmeta, const struct restore_sink *sink, spate_error *err)
{
    struct state_file_cursor c;
    uint32_t nstates, tlen;
    uint8_t *buf;
    int rc;

    if ((rc = state_file_read(f, off, len, &buf, err)) != 0)
        return rc;
    c = (struct state_file_cursor){ buf, buf + len };
    if (!state_file_cursor_u32(&c, &nstates) || nstates != nmeta) {
        rc = state_file_corrupt(f, off, "a key group with the wrong number of states", err);
        goto out;
    }
    for (uint32_t s = 0; s < nstates; s++) {
        uint32_t count;

        if (!state_file_cursor_u32(&c, &count)) {
            rc = state_file_corrupt(f, off, "a truncated key group", err);
            goto out;
        }
        for (uint32_t e = 0; e < count; e++) {
            const uint8_t *key, *value;
            uint32_t klen, vlen;
            uint64_t hash;

            if (!state_file_cursor_entry(&c, &hash, &key, &klen, &value, &vlen)) {
                rc = state_file_corrupt(f, off, "a truncated state entry", err);
                goto out;
            }
            if ((rc = sink->entry(sink->arg, index[s], hash, key, klen, value, vlen, err)) != 0)
                goto out;
        }
    }
    if (!state_file_cursor_u32(&c, &tlen) || (size_t)(c.end - c.p) != tlen ||
        !keyed_backend_restore_timers(b, c.p, tlen))
        rc = state_file_corrupt(f, off, "malformed timers", err);
out:
    free(buf);
    return rc;
}

static int
heap_restore_entry(void *arg, int i, uint64_t hash, const uint8_t *key, uint32_t key_len,
                   const uint8_t *value, uint32_t value_len, spate_error *err)
{
    UNUSED(err);
    keyed_backend_restore_entry(arg, i, hash, key, key_len, value, value_len);
    return 0;
}

int
keyed_backend_restore(struct keyed_state_backend *kb, const Checkpoint__OperatorSubtaskState *st,
                      const char *op_name, struct state_file_reader *r, spate_error *err)
{
    struct heap_keyed_backend *b = heap_keyed_backend_of(kb);

    /* Its entries are in RocksDB's files, which only RocksDB reads. */
    for (size_t k = 0; k < st->n_keyed; k++)
        if (st->keyed[k]->n_files > 0)
            return spate_error_set(err, SPATE_EINVAL,
                                   "the keyed state of operator '%s' is an incremental RocksDB "
                                   "checkpoint ('%s'), which the hashmap backend cannot read: "
                                   "restore it with state.backend.type rocksdb, or move "
                                   "backends through a savepoint",
                                   op_name, st->keyed[k]->path);
    return keyed_backend_restore_to(b, st, op_name, r, heap_restore_entry, b, err);
}

int
keyed_backend_restore_to(struct heap_keyed_backend *b, const Checkpoint__OperatorSubtaskState *st,
                         const char *op_name, struct state_file_reader *r,
                         keyed_restore_entry_fn entry, void *arg, spate_error *err)
{
    struct restore_sink sink = { entry, arg };
    int *index = xcalloc(st->n_states + 1, sizeof *index);
    int rc;

    if ((rc = map_states(b, st, op_name, index, err)) != 0)
        goto out;
    for (size_t h = 0; h < st->n_keyed; h++) {
        const Checkpoint__KeyedStateHandle *kh = st->keyed[h];
        uint32_t lo = MAX(kh->key_group_start, b->range.start);
        uint32_t hi = MIN(kh->key_group_end, b->range.end);
        uint64_t section_end;
        struct state_file *f;

        if (kh->key_group_end < kh->key_group_start ||
            kh->n_offsets != (size_t)(kh->key_group_end - kh->key_group_start) + 1) {
            rc = spate_error_set(err, SPATE_EPROTO, "malformed key group offsets for '%s'",
                                 kh->path);
            goto out;
        }
        if ((rc = state_file_open(r, kh->path, &f, err)) != 0)
            goto out;
        section_end = kh->offsets[0] + kh->length;
        for (uint32_t kg = lo; kg <= hi && lo <= hi; kg++) {
            uint32_t k = kg - kh->key_group_start;
            uint64_t next = k + 1 < kh->n_offsets ? kh->offsets[k + 1] : section_end;

            if (next < kh->offsets[k]) {
                rc = state_file_corrupt(f, kh->offsets[k], "key group offsets out of order", err);
                goto out;
            }
            if ((rc = restore_key_group(b, f, kh->offsets[k], next - kh->offsets[k], index,
                                        st->n_states, &sink, err)) != 0)
                goto out;
        }
    }
out:
    free(index);
    return rc;
}

bool
keyed_backend_restore_element(struct spate_state *st, const uint8_t *bytes, size_t len)
{
    struct heap_state *hs = heap_state_of(st);
    struct state_file_cursor c = { bytes, bytes + len };
    const uint8_t *key, *value;
    uint32_t klen, vlen;
    uint64_t hash;

    if (!state_file_cursor_entry(&c, &hash, &key, &klen, &value, &vlen) || c.p != c.end)
        return false;
    keyed_backend_restore_entry(hs->backend, (int)(hs - hs->backend->states), hash, key, klen,
                                value, vlen);
    return true;
}
