/* The RocksDB keyed state backend (rocksdb_keyed_backend.h). */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/fs.h"
#include "core/key_group.h"
#include "core/log.h"
#include "core/plugin.h"
#include "core/tmp_dir.h"
#include "core/util.h"
#include "state/heap_keyed_backend.h"
#include "state/rocksdb_keyed_backend.h"
#include "state/rocksdb_keyed_backend_int.h"
#include "state/rocksdb_plugin.h"
#include "state/state_file.h"

#define TTL_HEADER 8

static const struct keyed_state_backend_ops rocksdb_keyed_backend_ops;

static inline struct rocksdb_keyed_backend *
rdb_backend_of(struct keyed_state_backend *b)
{
    return (struct rocksdb_keyed_backend *)b;
}

static inline struct rocksdb_state *
rdb_state_of(struct spate_state *st)
{
    return (struct rocksdb_state *)st;
}

static int64_t
clock_wall_ms_fn(void)
{
    return clock_wall_ms();
}

/* A RocksDB call failed (rc, the message in errbuf): the task fails. */
void
rdb_failed(struct rocksdb_keyed_backend *b, int rc)
{
    char msg[sizeof b->errbuf + 4096 + 64];

    if (rc == 0)
        return;
    /* A full disk names the working folder: RocksDB's message may name no
     * file (a flush's background error, reported by the next write). */
    if (rc == SPATE_ENOSPC)
        snprintf(msg, sizeof msg, "no space left under the RocksDB working folder '%s': %s", b->dir,
                 b->errbuf);
    else
        snprintf(msg, sizeof msg, "%s", b->errbuf);
    if (b->fail != NULL)
        b->fail(b->base.user_ctx, msg);
    else
        SPATE_LOG_ERROR("rocksdb", "state in '%s': %s", b->dir, msg);
}

/* ---- entry keys ---- */

static inline uint32_t
rdb_key_group(const struct rocksdb_keyed_backend *b, uint64_t hash)
{
    return b->kg_mask != 0 || b->max_parallelism == 1 ? (uint32_t)(hash & b->kg_mask)
                                                      : key_group_of_hash(hash, b->max_parallelism);
}

static inline void
kg_put(uint8_t *out, uint32_t kg)
{
    out[0] = (uint8_t)(kg >> 8);
    out[1] = (uint8_t)kg;
}

static inline uint8_t *
buf_room(struct byte_buf *buf, size_t n)
{
    if (n > buf->cap) {
        buf->cap = n * 2 + 64;
        buf->data = xrealloc(buf->data, buf->cap);
    }
    buf->len = n;
    return buf->data;
}

/* The current key and namespace's entry key of a keyed state, with the
 * map key bytes mk behind (mk_len 0: none), in b->k. */
static const uint8_t *
entry_key(struct rocksdb_keyed_backend *b, const void *mk, size_t mk_len, size_t *len)
{
    const struct state_key_context *ctx = b->key;
    size_t plen = 8 + ctx->key.len + ctx->ns_len;
    uint8_t *k = buf_room(&b->k, KG_BYTES + plen + mk_len);

    kg_put(k, rdb_key_group(b, ctx->key_hash));
    keyed_composite_prefix(ctx, k + KG_BYTES);
    if (mk_len)
        memcpy(k + KG_BYTES + plen, mk, mk_len);
    *len = KG_BYTES + plen + mk_len;
    return k;
}

/* The key just past every key that begins with prefix (len bytes; not
 * all 0xff), in out. */
static void
prefix_end(const uint8_t *prefix, size_t len, uint8_t *out, size_t *out_len)
{
    memcpy(out, prefix, len);
    while (len > 0 && out[len - 1] == 0xff)
        len--;
    out[len - 1]++;
    *out_len = len;
}

/* ---- values ---- */

static inline size_t
hdr_of(const struct rocksdb_state *st)
{
    return st->base.desc.ttl_ms ? TTL_HEADER : 0;
}

/* The payload of the entry at key (past a TTL's write time), valid until
 * the next read; NULL when there is none or it expired (then removed). */
static const uint8_t *
load(struct rocksdb_state *st, const uint8_t *key, size_t klen, size_t *len)
{
    struct rocksdb_keyed_backend *b = st->b;
    const uint8_t *v;
    size_t vlen, hdr = hdr_of(st);
    int rc = b->p->get(b->db, st->cf, key, klen, &v, &vlen, b->errbuf, sizeof b->errbuf);

    if (rc == SPATE_ENOENT)
        return NULL;
    if (rc != 0) {
        rdb_failed(b, rc);
        return NULL;
    }
    if (vlen < hdr)
        return NULL;
    if (hdr) {
        int64_t written;

        memcpy(&written, v, 8);
        if (b->now_ms() - written >= st->base.desc.ttl_ms) {
            rdb_failed(b, b->p->remove(b->db, st->cf, key, klen, b->errbuf, sizeof b->errbuf));
            return NULL;
        }
    }
    *len = vlen - hdr;
    return v + hdr;
}

/* Stores payload (len bytes: parts[0], then parts[1]) at key, after the
 * write time when the state has a TTL. */
static void
store2(struct rocksdb_state *st, const uint8_t *key, size_t klen, const void *a, size_t alen,
       const void *c, size_t clen)
{
    struct rocksdb_keyed_backend *b = st->b;
    size_t hdr = hdr_of(st);
    uint8_t *v = buf_room(&b->v, hdr + alen + clen);

    if (hdr) {
        int64_t now = b->now_ms();

        memcpy(v, &now, 8);
    }
    if (alen)
        memmove(v + hdr, a, alen);
    if (clen)
        memmove(v + hdr + alen, c, clen);
    rdb_failed(
        b, b->p->put(b->db, st->cf, key, klen, v, hdr + alen + clen, b->errbuf, sizeof b->errbuf));
}

static void
store(struct rocksdb_state *st, const uint8_t *key, size_t klen, const void *payload, size_t len)
{
    store2(st, key, klen, payload, len, NULL, 0);
}

/* Serializes value of type t into out (reused), returns its bytes. */
static const uint8_t *
serialize(const struct state_type *t, const void *value, struct byte_buf *out, size_t front,
          size_t *len)
{
    size_t n = t->ser->size(t->type, value);
    uint8_t *p = buf_room(out, front + n);

    t->ser->write(t->type, value, p + front, n);
    *len = n;
    return p + front;
}

/* ---- state calls (the table's); operator and broadcast state go to the
 * heap backend's ---- */

#define HEAP_OPS heap_keyed_backend_ops

static struct spate_state *
rdb_state(struct keyed_state_backend *kb, const char *name)
{
    struct rocksdb_keyed_backend *b = rdb_backend_of(kb);

    for (int i = 0; i < b->nstates; i++)
        if (strcmp(b->states[i].base.desc.name, name) == 0)
            return &b->states[i].base;
    return NULL;
}

/* The stored value of the current key and namespace into out; with
 * result, an aggregate's result instead of its accumulator. */
static bool
value_read(struct spate_state *base, void *out, bool result)
{
    struct rocksdb_state *st = rdb_state_of(base);
    const struct state_type *t = &base->desc.value;
    const uint8_t *v, *k;
    size_t klen, len;

    if (st->heap != NULL)
        return result ? HEAP_OPS.value_get(st->heap, out)
                      : HEAP_OPS.value_get_internal(st->heap, out);
    k = entry_key(st->b, NULL, 0, &klen);
    if ((v = load(st, k, klen, &len)) == NULL)
        return false;
    if (result && base->desc.kind == STATE_AGGREGATING) {
        if (t->ser->read(t->type, v, len, st->tmp) != 0)
            return false;
        base->desc.agg.result(st->b->base.user_ctx, st->tmp, out);
        return true;
    }
    return t->ser->read(t->type, v, len, out) == 0;
}

static bool
rdb_value_get(struct spate_state *base, void *out)
{
    return value_read(base, out, true);
}

static bool
rdb_value_get_internal(struct spate_state *base, void *out)
{
    return value_read(base, out, false);
}

static void
rdb_value_update(struct spate_state *base, const void *value)
{
    struct rocksdb_state *st = rdb_state_of(base);
    const uint8_t *k, *p;
    size_t klen, len;

    if (st->heap != NULL) {
        HEAP_OPS.value_update(st->heap, value);
        return;
    }
    k = entry_key(st->b, NULL, 0, &klen);
    p = serialize(&base->desc.value, value, &st->ser, 0, &len);
    store(st, k, klen, p, len);
}

/* A list element's frame: [u32 length][i64 time when timestamped][bytes].
 * Appended by a merge, without reading the list (a read would apply
 * every element merged since the last compaction: a window buffer of n
 * elements would cost n^2): true, the list may have been empty (callers
 * register timers with it, which are deduplicated). With a TTL the write
 * time is renewed: the list is read and written again. */
static bool
list_add(struct rocksdb_state *st, int64_t timestamp, const void *value)
{
    struct rocksdb_keyed_backend *b = st->b;
    size_t tsz = st->base.desc.timestamped ? 8 : 0, klen, len, old_len = 0;
    const uint8_t *k = entry_key(b, NULL, 0, &klen), *old;
    uint8_t *frame, *copy;
    uint32_t n32;

    serialize(&st->base.desc.value, value, &st->ser, 4 + tsz, &len);
    frame = st->ser.data;
    n32 = (uint32_t)len;
    memcpy(frame, &n32, 4);
    if (tsz)
        memcpy(frame + 4, &timestamp, 8);
    if (!hdr_of(st)) {
        rdb_failed(b, b->p->merge(b->db, st->cf, k, klen, frame, 4 + tsz + len, b->errbuf,
                                  sizeof b->errbuf));
        return true;
    }
    if ((old = load(st, k, klen, &old_len)) == NULL) {
        store(st, k, klen, frame, 4 + tsz + len);
        return true;
    }
    copy = xmalloc(old_len + 1);
    memcpy(copy, old, old_len);
    store2(st, k, klen, copy, old_len, frame, 4 + tsz + len);
    free(copy);
    return false;
}

static bool
reducing_add(struct rocksdb_state *st, const void *value)
{
    const struct state_type *t = &st->base.desc.value;
    const uint8_t *k, *v, *p;
    size_t klen, len;

    k = entry_key(st->b, NULL, 0, &klen);
    if ((v = load(st, k, klen, &len)) == NULL) {
        p = serialize(t, value, &st->ser, 0, &len);
        store(st, k, klen, p, len);
        return true;
    }
    if (t->ser->read(t->type, v, len, st->tmp) != 0)
        return false;
    st->base.desc.reduce(st->b->base.user_ctx, st->tmp, value, st->tmp2);
    p = serialize(t, st->tmp2, &st->ser, 0, &len);
    store(st, k, klen, p, len);
    return false;
}

static bool
aggregating_add(struct rocksdb_state *st, const void *in)
{
    const struct state_type *t = &st->base.desc.value;
    const spate_aggregate *agg = &st->base.desc.agg;
    spate_ctx *ctx = st->b->base.user_ctx;
    const uint8_t *k, *v, *p;
    size_t klen, len;
    bool fresh;

    k = entry_key(st->b, NULL, 0, &klen);
    v = load(st, k, klen, &len);
    if ((fresh = v == NULL)) {
        memset(st->tmp, 0, t->size);
        agg->create(ctx, st->tmp);
    } else if (t->ser->read(t->type, v, len, st->tmp) != 0) {
        return false;
    }
    agg->add(ctx, in, st->tmp);
    p = serialize(t, st->tmp, &st->ser, 0, &len);
    store(st, k, klen, p, len);
    return fresh;
}

static bool
rdb_add(struct spate_state *base, int64_t timestamp, const void *value)
{
    struct rocksdb_state *st = rdb_state_of(base);

    if (st->heap != NULL)
        return HEAP_OPS.add(st->heap, timestamp, value);
    switch (base->desc.kind) {
    case STATE_LIST:
        return list_add(st, timestamp, value);
    case STATE_REDUCING:
        return reducing_add(st, value);
    case STATE_AGGREGATING:
        return aggregating_add(st, value);
    default:
        SPATE_ASSERT(!"add on a state that is no list, reducing or aggregating state");
        return false;
    }
}

static void
rdb_clear(struct spate_state *base)
{
    struct rocksdb_state *st = rdb_state_of(base);
    struct rocksdb_keyed_backend *b = st->b;
    const uint8_t *k;
    size_t klen;

    if (st->heap != NULL) {
        HEAP_OPS.clear(st->heap);
        return;
    }
    k = entry_key(b, NULL, 0, &klen);
    if (base->desc.kind == STATE_MAP) {
        /* Every entry of the current key and namespace: a prefix. */
        uint8_t *end = xmalloc(klen);
        size_t end_len;

        prefix_end(k, klen, end, &end_len);
        rdb_failed(b, b->p->remove_range(b->db, st->cf, k, klen, end, end_len, b->errbuf,
                                         sizeof b->errbuf));
        free(end);
        return;
    }
    rdb_failed(b, b->p->remove(b->db, st->cf, k, klen, b->errbuf, sizeof b->errbuf));
}

static bool
rdb_exists(struct spate_state *base)
{
    struct rocksdb_state *st = rdb_state_of(base);
    const uint8_t *k;
    size_t klen, len;

    if (st->heap != NULL)
        return HEAP_OPS.exists(st->heap);
    k = entry_key(st->b, NULL, 0, &klen);
    return load(st, k, klen, &len) != NULL;
}

static void
rdb_list_iter(struct spate_state *base, spate_iter *it)
{
    struct rocksdb_state *st = rdb_state_of(base);
    const uint8_t *k, *v;
    size_t klen, len;

    if (st->heap != NULL) {
        HEAP_OPS.list_iter(st->heap, it);
        return;
    }
    memset(it, 0, sizeof *it);
    it->st = base;
    k = entry_key(st->b, NULL, 0, &klen);
    if ((v = load(st, k, klen, &len)) == NULL)
        return;
    /* A copy: the list's bytes must outlive the next read. */
    memcpy(buf_room(&st->read, len), v, len);
    it->at = st->read.data;
    it->end = st->read.data + len;
}

static void
rdb_list_retain(struct spate_state *base, const bool *keep, size_t count)
{
    struct rocksdb_state *st = rdb_state_of(base);
    size_t tsz = base->desc.timestamped ? 8 : 0, klen, len;
    const uint8_t *k, *at, *end;
    uint8_t *kept, *w;

    if (st->heap != NULL) {
        HEAP_OPS.list_retain(st->heap, keep, count);
        return;
    }
    k = entry_key(st->b, NULL, 0, &klen);
    if ((at = load(st, k, klen, &len)) == NULL)
        return;
    end = at + len;
    kept = xmalloc(len ? len : 1);
    w = kept;
    for (size_t i = 0; i < count && end - at >= (ptrdiff_t)(4 + tsz); i++) {
        uint32_t n;

        memcpy(&n, at, 4);
        if ((size_t)(end - at) < 4 + tsz + n)
            break;
        if (keep[i]) {
            memcpy(w, at, 4 + tsz + n);
            w += 4 + tsz + n;
        }
        at += 4 + tsz + n;
    }
    if (w == kept)
        rdb_failed(st->b, st->b->p->remove(st->b->db, st->cf, k, klen, st->b->errbuf,
                                           sizeof st->b->errbuf));
    else
        store(st, k, klen, kept, (size_t)(w - kept));
    free(kept);
}

/* The entry key of the current key and namespace with map key key. */
static const uint8_t *
map_entry_key(struct rocksdb_state *st, const void *key, size_t *klen)
{
    const struct state_type *t = &st->base.desc.key;
    size_t n = t->ser->size(t->type, key);
    uint8_t *mk = xmalloc(n ? n : 1);
    const uint8_t *k;

    t->ser->write(t->type, key, mk, n);
    k = entry_key(st->b, mk, n, klen);
    free(mk);
    return k;
}

static bool
rdb_map_get(struct spate_state *base, const void *key, void *value)
{
    struct rocksdb_state *st = rdb_state_of(base);
    const uint8_t *k, *v;
    size_t klen, len;

    if (st->heap != NULL)
        return HEAP_OPS.map_get(st->heap, key, value);
    k = map_entry_key(st, key, &klen);
    if ((v = load(st, k, klen, &len)) == NULL)
        return false;
    return value == NULL || base->desc.value.ser->read(base->desc.value.type, v, len, value) == 0;
}

static void
rdb_map_put(struct spate_state *base, const void *key, const void *value)
{
    struct rocksdb_state *st = rdb_state_of(base);
    const uint8_t *k, *p;
    size_t klen, len;

    if (st->heap != NULL) {
        HEAP_OPS.map_put(st->heap, key, value);
        return;
    }
    k = map_entry_key(st, key, &klen);
    p = serialize(&base->desc.value, value, &st->ser, 0, &len);
    store(st, k, klen, p, len);
}

static bool
rdb_map_remove(struct spate_state *base, const void *key)
{
    struct rocksdb_state *st = rdb_state_of(base);
    struct rocksdb_keyed_backend *b = st->b;
    const uint8_t *k;
    size_t klen, len;

    if (st->heap != NULL)
        return HEAP_OPS.map_remove(st->heap, key);
    k = map_entry_key(st, key, &klen);
    if (load(st, k, klen, &len) == NULL)
        return false;
    rdb_failed(b, b->p->remove(b->db, st->cf, k, klen, b->errbuf, sizeof b->errbuf));
    return true;
}

/* Reads the current key and namespace's map entries into st->read, each
 * [u32 map key length][map key][u32 value length][value]. */
static void
map_load(struct rocksdb_state *st)
{
    struct rocksdb_keyed_backend *b = st->b;
    size_t plen, end_len, hdr = hdr_of(st);
    const uint8_t *prefix = entry_key(b, NULL, 0, &plen);
    uint8_t *lo = xmalloc(plen), *hi = xmalloc(plen);
    int64_t now = hdr ? b->now_ms() : 0;
    struct rdb_iter *it;

    memcpy(lo, prefix, plen);
    prefix_end(lo, plen, hi, &end_len);
    st->read.len = 0;
    it = b->p->iter(b->db, st->cf, NULL, lo, plen, hi, end_len);
    for (; it != NULL && b->p->iter_valid(it); b->p->iter_next(it)) {
        size_t kl, vl;
        const uint8_t *k = b->p->iter_key(it, &kl), *v = b->p->iter_value(it, &vl);
        uint32_t n;

        if (kl < plen || vl < hdr)
            continue;
        if (hdr) {
            int64_t written;

            memcpy(&written, v, 8);
            if (now - written >= st->base.desc.ttl_ms)
                continue;
        }
        n = (uint32_t)(kl - plen);
        byte_buf_put(&st->read, &n, 4);
        byte_buf_put(&st->read, k + plen, n);
        n = (uint32_t)(vl - hdr);
        byte_buf_put(&st->read, &n, 4);
        byte_buf_put(&st->read, v + hdr, n);
    }
    if (it != NULL)
        rdb_failed(b, b->p->iter_status(it, b->errbuf, sizeof b->errbuf));
    b->p->iter_free(it);
    free(lo);
    free(hi);
}

static bool
rdb_map_next(spate_iter *it, void *key, void *value)
{
    struct rocksdb_state *st = rdb_state_of(it->st);
    const struct state_descriptor *d = &it->st->desc;

    if (st->heap != NULL) {
        spate_iter h = *it;
        bool more;

        h.st = st->heap;
        more = HEAP_OPS.map_next(&h, key, value);
        h.st = it->st;
        *it = h;
        return more;
    }
    if (it->slot == 0) {
        /* The first call: the entries as they are now. */
        map_load(st);
        it->at = st->read.data;
        it->end = st->read.data + st->read.len;
        it->slot = 1;
    }
    while (it->at != NULL && it->end - it->at >= 8) {
        uint32_t kn, vn;
        const uint8_t *k, *v;

        memcpy(&kn, it->at, 4);
        k = it->at + 4;
        memcpy(&vn, k + kn, 4);
        v = k + kn + 4;
        it->at = v + vn;
        if (key != NULL && d->key.ser->read(d->key.type, k, kn, key) != 0)
            continue;
        if (value != NULL && d->value.ser->read(d->value.type, v, vn, value) != 0)
            continue;
        return true;
    }
    return false;
}

static bool
rdb_restore_element(struct spate_state *base, const uint8_t *bytes, size_t len)
{
    struct rocksdb_state *st = rdb_state_of(base);

    return st->heap != NULL && HEAP_OPS.restore_element(st->heap, bytes, len);
}

/* ---- timers: the heap's, or in RocksDB (rocksdb_timers.c) ---- */

static void
rdb_register_timer(struct keyed_state_backend *kb, bool event_time, int64_t timestamp)
{
    struct rocksdb_keyed_backend *b = rdb_backend_of(kb);

    if (b->opts.timers_in_rocksdb)
        rdb_timers_register(b, event_time, timestamp);
    else
        HEAP_OPS.register_timer(&b->heap.base, event_time, timestamp);
}

static void
rdb_delete_timer(struct keyed_state_backend *kb, bool event_time, int64_t timestamp)
{
    struct rocksdb_keyed_backend *b = rdb_backend_of(kb);

    if (b->opts.timers_in_rocksdb)
        rdb_timers_delete(b, event_time, timestamp);
    else
        HEAP_OPS.delete_timer(&b->heap.base, event_time, timestamp);
}

static void
rdb_advance(struct keyed_state_backend *kb, bool event_time, int64_t time, keyed_timer_fire_fn fire)
{
    struct rocksdb_keyed_backend *b = rdb_backend_of(kb);

    if (b->opts.timers_in_rocksdb)
        rdb_timers_advance(b, event_time, time, fire);
    else
        HEAP_OPS.advance(&b->heap.base, event_time, time, fire);
}

static void
rdb_on_processing_time(struct keyed_state_backend *kb, uint64_t now, keyed_timer_fire_fn fire)
{
    struct rocksdb_keyed_backend *b = rdb_backend_of(kb);

    if (b->opts.timers_in_rocksdb)
        rdb_timers_on_processing_time(b, now, fire);
    else
        HEAP_OPS.on_processing_time(&b->heap.base, now, fire);
}

/* ---- snapshots ---- */

/* A checkpoint is incremental when so configured; a savepoint, whole. */
static struct keyed_state_snapshot *
rdb_snapshot(struct keyed_state_backend *kb, const struct keyed_snapshot_request *req)
{
    struct rocksdb_keyed_backend *b = rdb_backend_of(kb);
    struct rdb_snapshot_state *s = xcalloc(1, sizeof *s);

    keyed_backend_snapshot(&b->heap, &s->heap);
    s->b = b;
    if (b->opts.incremental && req->shared_dir != NULL)
        rdb_incremental_take(s, req);
    else
        s->snap = b->p->snapshot(b->db);
    return (struct keyed_state_snapshot *)s;
}

/* The heap backend's hash of an entry whose composite key is ck: its
 * key's hash, spread by its namespace and map key (heap_keyed_backend.c's
 * composite_hash), so that the heap backend restores it as its own. */
static uint64_t
heap_hash(const uint8_t *ck, size_t len)
{
    uint32_t klen, nlen;
    uint64_t h;
    size_t rest;

    memcpy(&klen, ck, 4);
    memcpy(&nlen, ck + 4 + klen, 4);
    h = keyed_composite_hash(key_group_hash(ck + 4, klen),
                             nlen ? XXH3_64bits(ck + 8 + klen, nlen) : 0);
    rest = len - 8 - klen - nlen;
    if (rest)
        h ^= XXH3_64bits(ck + 8 + klen + nlen, rest) << 16;
    return h;
}

/* Writes the entries of one keyed state's key group kg (the state file's
 * u32 count, then the entries); false when RocksDB failed (in errbuf). */
static bool
write_key_group(struct rdb_snapshot_state *s, struct rocksdb_state *st, uint32_t kg,
                struct state_file_writer *w, struct byte_buf *buf, char *errbuf, size_t errlen)
{
    struct rocksdb_keyed_backend *b = s->b;
    uint8_t lo[KG_BYTES], hi[KG_BYTES + 1];
    size_t hi_len = KG_BYTES;
    struct rdb_iter *it;
    uint32_t count = 0;
    int rc;

    kg_put(lo, kg);
    if (kg + 1 < 65536) {
        kg_put(hi, kg + 1);
    } else {
        hi[0] = hi[1] = hi[2] = 0xff;
        hi_len = 3;
    }
    buf->len = 0;
    it = b->p->iter(b->db, st->cf, s->snap, lo, sizeof lo, hi, hi_len);
    for (; it != NULL && b->p->iter_valid(it); b->p->iter_next(it)) {
        size_t kl, vl;
        const uint8_t *k = b->p->iter_key(it, &kl), *v = b->p->iter_value(it, &vl);
        uint64_t hash;
        uint32_t n;

        if (kl < KG_BYTES + 8)
            continue;
        hash = heap_hash(k + KG_BYTES, kl - KG_BYTES);
        byte_buf_put(buf, &hash, 8);
        n = (uint32_t)(kl - KG_BYTES);
        byte_buf_put(buf, &n, 4);
        byte_buf_put(buf, k + KG_BYTES, n);
        n = (uint32_t)vl;
        byte_buf_put(buf, &n, 4);
        byte_buf_put(buf, v, n);
        count++;
    }
    rc = it != NULL ? b->p->iter_status(it, errbuf, errlen) : SPATE_ENOMEM;
    b->p->iter_free(it);
    state_file_u32(w, count);
    state_file_put(w, buf->data, buf->len);
    return rc == 0;
}

/* The keyed section in the heap backend's form (heap_snapshot.c), key
 * group by key group. */
static Checkpoint__KeyedStateHandle *
rdb_snapshot_write(struct keyed_state_snapshot *ks, struct state_file_writer *w, const char *path)
{
    struct rdb_snapshot_state *s = (struct rdb_snapshot_state *)ks;
    struct rocksdb_keyed_backend *b = s->b;
    Checkpoint__KeyedStateHandle *h = xcalloc(1, sizeof *h);
    uint32_t nkg = s->heap.kg_end - s->heap.kg_start + 1, nkeyed = 0;
    struct byte_buf buf = { 0 }, timers = { 0 };
    uint64_t start = w->off;
    char errbuf[512];

    for (int i = 0; i < b->nstates; i++)
        nkeyed += b->states[i].heap == NULL;
    checkpoint__keyed_state_handle__init(h);
    h->path = xstrdup(path);
    h->key_group_start = s->heap.kg_start;
    h->key_group_end = s->heap.kg_end;
    h->n_offsets = nkg;
    h->offsets = xcalloc(nkg, sizeof *h->offsets);
    /* Incremental: the entries are in the database's files, uploaded
     * here; the key groups of the state file hold no entries. */
    if (s->local != NULL && !rdb_incremental_upload(s, path, h, errbuf, sizeof errbuf) &&
        w->error == 0) {
        SPATE_LOG_ERROR("rocksdb", "checkpoint of '%s' into '%s': %s", b->dir, path, errbuf);
        w->error = EIO; /* the file is refused (state_file_finish): the checkpoint fails */
    }
    if (s->local == NULL && s->snap == NULL && w->error == 0) {
        SPATE_LOG_ERROR("rocksdb", "checkpoint of '%s': %s", b->dir, s->error);
        w->error = EIO;
    }
    for (uint32_t k = 0; k < nkg; k++) {
        h->offsets[k] = w->off;
        state_file_u32(w, nkeyed);
        for (int i = 0; i < b->nstates; i++) {
            if (b->states[i].heap != NULL)
                continue;
            if (s->snap == NULL) {
                state_file_u32(w, 0);
                continue;
            }
            if (!write_key_group(s, &b->states[i], s->heap.kg_start + k, w, &buf, errbuf,
                                 sizeof errbuf) &&
                w->error == 0) {
                /* The file is refused (state_file_finish): the checkpoint fails. */
                SPATE_LOG_ERROR("rocksdb", "snapshot of '%s' into '%s': %s", b->dir, path, errbuf);
                w->error = EIO;
            }
        }
        /* Timers in RocksDB: a full snapshot's from its column families
         * (an incremental one's are in its files, the heap's none). */
        if (b->opts.timers_in_rocksdb && s->snap != NULL) {
            if (!rdb_timers_snapshot_key_group(b, s->snap, s->heap.kg_start + k, &timers, errbuf,
                                               sizeof errbuf) &&
                w->error == 0) {
                SPATE_LOG_ERROR("rocksdb", "snapshot of the timers of '%s' into '%s': %s", b->dir,
                                path, errbuf);
                w->error = EIO;
            }
            state_file_u32(w, (uint32_t)timers.len);
            state_file_put(w, timers.data, timers.len);
            continue;
        }
        state_file_u32(w, (uint32_t)s->heap.timers[k].len);
        state_file_put(w, s->heap.timers[k].data, s->heap.timers[k].len);
    }
    free(buf.data);
    free(timers.data);
    h->length = w->off - start;
    return h;
}

static void
rdb_snapshot_write_operator(struct keyed_state_snapshot *ks, struct state_file_writer *w,
                            Checkpoint__OperatorStateHandle *h)
{
    struct rdb_snapshot_state *s = (struct rdb_snapshot_state *)ks;

    keyed_backend_snapshot_write_operator((struct keyed_state_snapshot *)&s->heap, w, h);
}

static Checkpoint__StateMeta **
rdb_snapshot_metas(const struct keyed_state_snapshot *ks, size_t *n)
{
    const struct rdb_snapshot_state *s = (const struct rdb_snapshot_state *)ks;

    return keyed_backend_snapshot_metas((const struct keyed_state_snapshot *)&s->heap, n);
}

static void
rdb_snapshot_release(struct keyed_state_snapshot *ks)
{
    struct rdb_snapshot_state *s = (struct rdb_snapshot_state *)ks;

    if (s == NULL)
        return;
    keyed_backend_snapshot_release(&s->heap);
    if (s->snap != NULL)
        s->b->p->snapshot_release(s->b->db, s->snap);
    rdb_incremental_snapshot_release(s);
    free(s);
}

/* ---- restore ---- */

/* An entry of the state file into its state's column family (its key
 * group from its key, which may differ from the hash's with a max
 * parallelism that is no power of two). */
static int
restore_entry(void *arg, int i, uint64_t hash, const uint8_t *key, uint32_t key_len,
              const uint8_t *value, uint32_t value_len, spate_error *err)
{
    struct rocksdb_keyed_backend *b = arg;
    struct rocksdb_state *st = &b->states[i];
    uint32_t klen;
    uint8_t *k;
    int rc;

    UNUSED(hash);
    if (st->heap != NULL)
        return spate_error_set(err, SPATE_EPROTO, "operator state '%s' among keyed state",
                               st->base.desc.name);
    if (key_len < 8 || (memcpy(&klen, key, 4), klen > key_len - 8))
        return spate_error_set(err, SPATE_EPROTO, "a malformed entry key of state '%s'",
                               st->base.desc.name);
    k = buf_room(&b->k, KG_BYTES + key_len);
    kg_put(k, rdb_key_group(b, key_group_hash(key + 4, klen)));
    memcpy(k + KG_BYTES, key, key_len);
    rc = b->p->put(b->db, st->cf, k, KG_BYTES + key_len, value, value_len, b->errbuf,
                   sizeof b->errbuf);
    return rc != 0 ? spate_error_set(err, rc, "restore of state '%s': %s", st->base.desc.name,
                                     b->errbuf)
                   : 0;
}

static int
rdb_restore(struct keyed_state_backend *kb, const Checkpoint__OperatorSubtaskState *st,
            const char *op_name, struct state_file_reader *r, spate_error *err)
{
    struct rocksdb_keyed_backend *b = rdb_backend_of(kb);
    int rc;

    /* The heap's part first: it checks the checkpoint's states against
     * the declared ones, and restores the timers (and the entries of a
     * full snapshot); then the files of an incremental one. */
    if ((rc = keyed_backend_restore_to(&b->heap, st, op_name, r, restore_entry, b, err)) != 0 ||
        (rc = rdb_incremental_restore(b, st, err)) != 0)
        return rc;
    return rdb_timers_restored(b, err);
}

static void
rdb_checkpoint_complete(struct keyed_state_backend *kb, int64_t checkpoint_id)
{
    rdb_incremental_complete(rdb_backend_of(kb), checkpoint_id);
}

/* ---- set-up ---- */

static void
rdb_dispose(struct keyed_state_backend *kb)
{
    struct rocksdb_keyed_backend *b = rdb_backend_of(kb);

    if (b->db != NULL)
        b->p->close(b->db);
    b->db = NULL;
    if (b->shared != NULL && b->opts.slot_resources != NULL)
        shared_resources_unref(b->opts.slot_resources);
    else if (b->shared != NULL)
        b->p->shared_free(b->shared);
    b->shared = NULL;
    tmp_dir_remove(&b->work);
    for (int i = 0; b->states != NULL && i < b->nstates; i++) {
        free(b->states[i].tmp);
        free(b->states[i].tmp2);
        free(b->states[i].ser.data);
        free(b->states[i].read.data);
    }
    free(b->states);
    b->states = NULL;
    rdb_timers_release(b);
    keyed_backend_release(&b->heap);
    free(b->k.data);
    free(b->v.data);
    free(b->dir);
    b->dir = NULL;
    rdb_incremental_release(&b->inc);
}

static const struct rocksdb_plugin *loaded;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static spate_error load_error;

static void
load_plugin(void)
{
    rocksdb_plugin_entry_fn entry;
    char tried[2048];
    void *h = plugin_open(ROCKSDB_PLUGIN_FILE, tried, sizeof tried), *sym;

    if (h == NULL) {
        spate_error_set(&load_error, SPATE_ENOENT, "cannot load the RocksDB plugin (tried %s)",
                        tried);
        return;
    }
    if ((sym = dlsym(h, ROCKSDB_PLUGIN_SYMBOL)) == NULL) {
        spate_error_set(&load_error, SPATE_EPROTO, "the RocksDB plugin has no %s",
                        ROCKSDB_PLUGIN_SYMBOL);
        return;
    }
    /* POSIX: dlsym's address of a function converts to a function pointer. */
    memcpy(&entry, &sym, sizeof entry);
    if ((loaded = entry()) == NULL || loaded->abi_version != ROCKSDB_ABI_VERSION) {
        loaded = NULL;
        spate_error_set(&load_error, SPATE_EPROTO,
                        "the RocksDB plugin is not one this spate can use (ABI %d)",
                        ROCKSDB_ABI_VERSION);
    }
}

int
rdb_open_states(struct rocksdb_keyed_backend *b, const char *dir, struct rdb **out)
{
    const char **names = xcalloc((size_t)b->nstates + 2, sizeof *names);
    bool *append = xcalloc((size_t)b->nstates + 2, sizeof *append);
    bool *bloom = xcalloc((size_t)b->nstates + 2, sizeof *bloom);
    struct rdb_options ro = { append,
                              b->shared,
                              b->opts.block_cache_bytes,
                              b->opts.write_buffer_bytes,
                              b->opts.universal_compaction,
                              bloom };
    int ncf = 0, rc;

    for (int i = 0; i < b->nstates; i++) {
        if (b->states[i].heap != NULL)
            continue;
        names[ncf] = b->states[i].base.desc.name;
        bloom[ncf] = true;
        append[ncf++] = b->states[i].base.desc.kind == STATE_LIST;
    }
    /* The timers' (empty while they are on the heap): a checkpoint's
     * database opens with either factory. */
    names[ncf++] = RDB_TIMER_CF_PROCESSING;
    names[ncf++] = RDB_TIMER_CF_EVENT;
    rc = b->p->open(dir, ncf, names, &ro, out, b->errbuf, sizeof b->errbuf);
    free(names);
    free(append);
    free(bloom);
    return rc;
}

static void *
shared_make(void *arg)
{
    const struct state_backend_options *o = arg;

    return loaded->shared_new(o->managed_bytes, o->write_buffer_ratio, o->high_prio_pool_ratio);
}

static void
shared_free(void *resource)
{
    loaded->shared_free(resource);
}

int
rocksdb_keyed_backend_create(const struct state_backend_options *o,
                             const struct keyed_backend_config *config, const char *name,
                             struct keyed_state_backend **out, spate_error *err)
{
    struct rocksdb_keyed_backend *b;
    char safe[64], *kind;
    int ncf = 0, rc;
    size_t j = 0;

    *out = NULL;
    pthread_once(&load_once, load_plugin);
    if (loaded == NULL)
        return spate_error_set(err, load_error.code ? load_error.code : SPATE_ENOENT, "%s",
                               load_error.message);
    b = xcalloc(1, sizeof *b);
    b->work.lock_fd = -1;
    if ((rc = heap_keyed_backend_init(&b->heap, config, err)) != 0) {
        keyed_backend_release(&b->heap);
        free(b);
        return rc;
    }
    b->base.ops = &rocksdb_keyed_backend_ops;
    b->base.user_ctx = config->user_ctx;
    b->p = loaded;
    b->key = config->key;
    b->max_parallelism = (uint32_t)config->max_parallelism;
    b->kg_mask = (b->max_parallelism & (b->max_parallelism - 1)) == 0 ? b->max_parallelism - 1 : 0;
    b->range = b->heap.range;
    b->now_ms = config->now_ms != NULL ? config->now_ms : clock_wall_ms_fn;
    b->fail = config->fail;
    b->opts = *o;
    rdb_incremental_init(&b->inc);
    b->nstates = config->nstates;
    b->states = xcalloc((size_t)config->nstates + 1, sizeof *b->states);
    for (int i = 0; i < b->nstates; i++) {
        struct rocksdb_state *st = &b->states[i];

        st->base.backend = &b->base;
        st->base.desc = config->states[i];
        st->b = b;
        if (st->base.desc.scope != SCOPE_KEYED) {
            st->heap = &b->heap.states[i].base;
            continue;
        }
        st->cf = ncf++;
        st->tmp = xcalloc(1, st->base.desc.value.size + 16);
        st->tmp2 = xcalloc(1, st->base.desc.value.size + 16);
    }
    rdb_timers_init(b, ncf, ncf + 1);
    b->ncf = ncf + 2;
    /* The working folder: a fresh one per operator instance, its name
     * the instance's (letters and digits kept). */
    for (const char *c = name != NULL ? name : "state"; *c && j + 1 < sizeof safe; c++)
        safe[j++] = (char)((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                                   (*c >= '0' && *c <= '9') || *c == '-'
                               ? *c
                               : '_');
    safe[j] = '\0';
    if ((rc = fs_mkdirs(o->localdir, err)) != 0) {
        spate_error_wrap(err, "state.backend.rocksdb.localdir");
        goto fail;
    }
    /* Locked for the process's life (core/tmp_dir.h): the folders of a
     * TaskManager killed by kill -9 are swept when the next one starts. */
    kind = xasprintf("rocksdb-%s", safe);
    rc = tmp_dir_make(o->localdir, kind, &b->work, err);
    free(kind);
    if (rc != 0) {
        spate_error_wrap(err, "a RocksDB working folder");
        goto fail;
    }
    b->dir = xasprintf("%s/db", b->work.path);
    if (o->memory_managed) {
        b->shared =
            o->slot_resources != NULL
                ? shared_resources_acquire(o->slot_resources, shared_make, shared_free, (void *)o)
                : shared_make((void *)o);
        if (b->shared == NULL) {
            rc = spate_error_set(err, SPATE_ENOMEM, "no memory for RocksDB's managed memory");
            goto fail;
        }
    }
    if ((rc = rdb_open_states(b, b->dir, &b->db)) != 0) {
        rc = spate_error_set(err, rc, "RocksDB working folder '%s': %s", b->dir, b->errbuf);
        goto fail;
    }
    *out = &b->base;
    return 0;
fail:
    rdb_dispose(&b->base);
    free(b);
    return rc;
}

struct heap_keyed_backend *
rocksdb_keyed_backend_heap(struct keyed_state_backend *b)
{
    return &rdb_backend_of(b)->heap;
}

bool
rocksdb_keyed_backend_memory(struct keyed_state_backend *kb, struct rdb_memory_usage *out)
{
    struct rocksdb_keyed_backend *b = rdb_backend_of(kb);

    memset(out, 0, sizeof *out);
    if (b->shared == NULL)
        return false;
    b->p->shared_usage(b->shared, out);
    return true;
}

/* The first nine are the database's, or its block cache's (every column
 * family reports the same value): not summed. */
#define NATIVE_METRICS_OF_THE_DB 9
const char *const rocksdb_native_metrics[ROCKSDB_NATIVE_METRIC_COUNT] = {
    "background-errors",          "num-snapshots",
    "num-running-compactions",    "num-running-flushes",
    "actual-delayed-write-rate",  "is-write-stopped",
    "block-cache-capacity",       "block-cache-usage",
    "block-cache-pinned-usage",   "num-immutable-mem-table",
    "mem-table-flush-pending",    "compaction-pending",
    "cur-size-active-mem-table",  "cur-size-all-mem-tables",
    "size-all-mem-tables",        "num-entries-active-mem-table",
    "num-entries-imm-mem-tables", "num-deletes-active-mem-table",
    "num-deletes-imm-mem-tables", "estimate-num-keys",
    "estimate-table-readers-mem", "num-live-versions",
    "estimate-live-data-size",    "total-sst-files-size",
    "live-sst-files-size",        "estimate-pending-compaction-bytes",
};

bool
rocksdb_keyed_backend_native_metric(struct keyed_state_backend *kb, int i, uint64_t *out)
{
    struct rocksdb_keyed_backend *b = rdb_backend_of(kb);
    char name[64];

    snprintf(name, sizeof name, "rocksdb.%s", rocksdb_native_metrics[i]);
    if (!b->p->property(b->db, name, out))
        return false;
    if (i < NATIVE_METRICS_OF_THE_DB)
        *out /= (uint64_t)b->ncf;
    return true;
}

bool
rocksdb_keyed_backend_timers_in_rocksdb(struct keyed_state_backend *kb)
{
    return rdb_backend_of(kb)->opts.timers_in_rocksdb;
}

bool
rocksdb_keyed_backend_property(struct keyed_state_backend *kb, const char *name, uint64_t *out)
{
    struct rocksdb_keyed_backend *b = rdb_backend_of(kb);

    return b->p->property(b->db, name, out);
}

static const struct keyed_state_backend_ops rocksdb_keyed_backend_ops = {
    .name = "rocksdb",
    .state = rdb_state,
    .value_get = rdb_value_get,
    .value_get_internal = rdb_value_get_internal,
    .value_update = rdb_value_update,
    .add = rdb_add,
    .clear = rdb_clear,
    .exists = rdb_exists,
    .list_iter = rdb_list_iter,
    .list_next = keyed_list_next_timestamped,
    .list_retain = rdb_list_retain,
    .map_get = rdb_map_get,
    .map_put = rdb_map_put,
    .map_remove = rdb_map_remove,
    .map_next = rdb_map_next,
    .register_timer = rdb_register_timer,
    .delete_timer = rdb_delete_timer,
    .advance = rdb_advance,
    .on_processing_time = rdb_on_processing_time,
    .snapshot = rdb_snapshot,
    .snapshot_write = rdb_snapshot_write,
    .snapshot_write_operator = rdb_snapshot_write_operator,
    .snapshot_metas = rdb_snapshot_metas,
    .snapshot_release = rdb_snapshot_release,
    .checkpoint_complete = rdb_checkpoint_complete,
    .restore = rdb_restore,
    .restore_element = rdb_restore_element,
    .dispose = rdb_dispose,
};
