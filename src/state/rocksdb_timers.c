/* Timers in RocksDB (rocksdb_keyed_backend_int.h; Flink's
 * RocksDBCachingPriorityQueueSet in a KeyGroupPartitionedPriorityQueue):
 * every timer is an entry of its time domain's column family, and each key
 * group's first timers are cached, so that registering a later timer or
 * firing one reads nothing from RocksDB until a key group's cache runs
 * empty. Task thread only, but for a full snapshot's walk of a RocksDB
 * snapshot. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "core/key_group.h"
#include "core/log.h"
#include "state/rocksdb_keyed_backend_int.h"
#include "state/timer_service.h"

#define TS_OFF   KG_BYTES       /* the timestamp in an entry key */
#define KLEN_OFF (KG_BYTES + 8) /* the key's length */
#define KEY_OFF  (KG_BYTES + 12)

static inline uint32_t
be32_get(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void
be32_put(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (24 - 8 * i));
}

/* Timestamps sort as unsigned big-endian bytes with the sign bit flipped
 * (Flink's serializer of a timer's timestamp does the same). */
static inline void
ts_put(uint8_t *p, int64_t ts)
{
    uint64_t u = (uint64_t)ts ^ (1ull << 63);

    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(u >> (56 - 8 * i));
}

static inline int64_t
ts_get(const uint8_t *p)
{
    uint64_t u = 0;

    for (int i = 0; i < 8; i++)
        u = u << 8 | p[i];
    return (int64_t)(u ^ (1ull << 63));
}

/* A well-formed entry key: its key's length fits. */
static inline bool
entry_ok(const uint8_t *k, size_t len)
{
    return len >= KEY_OFF && be32_get(k + KLEN_OFF) <= len - KEY_OFF;
}

static inline struct rdb_timer_queue *
queue_of(struct rocksdb_keyed_backend *b, bool event_time)
{
    return &b->timers[event_time];
}

static inline uint32_t
key_group_of(const struct rocksdb_keyed_backend *b, uint64_t hash)
{
    return b->kg_mask != 0 || b->max_parallelism == 1 ? (uint32_t)(hash & b->kg_mask)
                                                      : key_group_of_hash(hash, b->max_parallelism);
}

/* Lexicographic, as RocksDB's default comparator. */
static int
entry_cmp(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);

    return c != 0 ? c : (alen > blen) - (alen < blen);
}

static uint8_t *
bytes_dup(const uint8_t *p, size_t n)
{
    return memcpy(xmalloc(n), p, n);
}

/* ---- the heap of key groups, by their first timer ---- */

static inline int64_t
group_head(const struct rdb_timer_queue *q, uint32_t g)
{
    const struct rdb_timer_group *grp = &q->groups[g];

    return grp->n > 0 ? ts_get(grp->cache[0].key + TS_OFF) : INT64_MAX;
}

static inline void
heap_set(struct rdb_timer_queue *q, uint32_t i, uint32_t g)
{
    q->heap[i] = g;
    q->pos[g] = i;
}

/* Group g's first timer changed: its place in the heap follows. */
static void
heap_fix(struct rdb_timer_queue *q, uint32_t g)
{
    int64_t t = group_head(q, g);
    uint32_t i = q->pos[g];

    while (i > 0 && t < group_head(q, q->heap[(i - 1) / 2])) {
        heap_set(q, i, q->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    for (;;) {
        uint32_t c = 2 * i + 1;

        if (c >= q->ngroups)
            break;
        if (c + 1 < q->ngroups && group_head(q, q->heap[c + 1]) < group_head(q, q->heap[c]))
            c++;
        if (!(group_head(q, q->heap[c]) < t))
            break;
        heap_set(q, i, q->heap[c]);
        i = c;
    }
    heap_set(q, i, g);
}

/* ---- a key group's cache ---- */

/* The entry keys of key group kg: [lo, hi); returns hi's length. */
static size_t
kg_bounds(uint32_t kg, uint8_t lo[KG_BYTES], uint8_t hi[KG_BYTES + 1])
{
    lo[0] = (uint8_t)(kg >> 8);
    lo[1] = (uint8_t)kg;
    if (kg + 1 < 65536) {
        hi[0] = (uint8_t)((kg + 1) >> 8);
        hi[1] = (uint8_t)(kg + 1);
        return KG_BYTES;
    }
    hi[0] = hi[1] = hi[2] = 0xff;
    return KG_BYTES + 1;
}

static void
cache_free_entry(struct rdb_timer_entry *e)
{
    free(e->key);
    e->key = NULL;
}

static void
group_clear(struct rdb_timer_group *grp)
{
    for (uint32_t i = 0; i < grp->n; i++)
        cache_free_entry(&grp->cache[i]);
    grp->n = 0;
}

/* Where key is, or would go, in the cache; *found when it is there. */
static uint32_t
cache_find(const struct rdb_timer_group *grp, const uint8_t *key, size_t len, bool *found)
{
    uint32_t lo = 0, hi = grp->n;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = entry_cmp(grp->cache[mid].key, grp->cache[mid].len, key, len);

        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = false;
    return lo;
}

/* Fills key group g's cache from RocksDB: its first RDB_TIMER_CACHE
 * timers; false when RocksDB failed (b->errbuf). */
static bool
group_load(struct rocksdb_keyed_backend *b, struct rdb_timer_queue *q, uint32_t g)
{
    struct rdb_timer_group *grp = &q->groups[g];
    uint8_t lo[KG_BYTES], hi[KG_BYTES + 1];
    size_t hi_len = kg_bounds(b->range.start + g, lo, hi);
    struct rdb_iter *it;
    int rc;

    group_clear(grp);
    grp->all = true;
    it = b->p->iter(b->db, q->cf, NULL, lo, sizeof lo, hi, hi_len);
    for (; it != NULL && b->p->iter_valid(it); b->p->iter_next(it)) {
        size_t kl, vl;
        const uint8_t *k = b->p->iter_key(it, &kl), *v = b->p->iter_value(it, &vl);
        struct rdb_timer_entry *e;

        if (!entry_ok(k, kl) || vl != 8)
            continue;
        if (grp->n == RDB_TIMER_CACHE) {
            grp->all = false;
            break;
        }
        e = &grp->cache[grp->n++];
        e->key = bytes_dup(k, kl);
        e->len = (uint32_t)kl;
        memcpy(&e->hash, v, 8);
    }
    rc = it != NULL ? b->p->iter_status(it, b->errbuf, sizeof b->errbuf) : SPATE_ENOMEM;
    b->p->iter_free(it);
    heap_fix(q, g);
    return rc == 0;
}

/* The entry key of the current key and namespace's timer at timestamp,
 * in b->k; its key group in *g. */
static const uint8_t *
timer_key(struct rocksdb_keyed_backend *b, int64_t timestamp, uint32_t *g, size_t *len)
{
    const struct state_key_context *ctx = b->key;
    uint32_t kg = key_group_of(b, ctx->key_hash);
    size_t n = KEY_OFF + ctx->key.len + ctx->ns_len;
    uint8_t *k;

    if (n > b->k.cap) {
        b->k.cap = n * 2 + 64;
        b->k.data = xrealloc(b->k.data, b->k.cap);
    }
    k = b->k.data;
    k[0] = (uint8_t)(kg >> 8);
    k[1] = (uint8_t)kg;
    ts_put(k + TS_OFF, timestamp);
    be32_put(k + KLEN_OFF, (uint32_t)ctx->key.len);
    memcpy(k + KEY_OFF, ctx->key.data, ctx->key.len);
    if (ctx->ns_len)
        memcpy(k + KEY_OFF + ctx->key.len, ctx->ns, ctx->ns_len);
    *g = kg - b->range.start;
    *len = n;
    return k;
}

/* ---- the calls ---- */

void
rdb_timers_init(struct rocksdb_keyed_backend *b, int cf_processing, int cf_event)
{
    uint32_t n = b->range.end - b->range.start + 1;

    for (int d = 0; d < 2; d++) {
        struct rdb_timer_queue *q = &b->timers[d];

        q->cf = d ? cf_event : cf_processing;
        q->event_time = d;
        if (!b->opts.timers_in_rocksdb)
            continue;
        q->ngroups = n;
        q->groups = xcalloc(n, sizeof *q->groups);
        q->heap = xcalloc(n, sizeof *q->heap);
        q->pos = xcalloc(n, sizeof *q->pos);
        for (uint32_t g = 0; g < n; g++) {
            q->groups[g].cache = xcalloc(RDB_TIMER_CACHE + 1, sizeof *q->groups[g].cache);
            q->groups[g].all = true; /* a new database has none */
            heap_set(q, g, g);
        }
    }
}

void
rdb_timers_release(struct rocksdb_keyed_backend *b)
{
    for (int d = 0; d < 2; d++) {
        struct rdb_timer_queue *q = &b->timers[d];

        for (uint32_t g = 0; q->groups != NULL && g < q->ngroups; g++) {
            group_clear(&q->groups[g]);
            free(q->groups[g].cache);
        }
        free(q->groups);
        free(q->heap);
        free(q->pos);
        q->groups = NULL;
        q->heap = q->pos = NULL;
        q->ngroups = 0;
    }
    free(b->fired);
    b->fired = NULL;
    b->fired_cap = 0;
}

/* A processing-time timer at timestamp: the wake-up moves earlier when it
 * is earlier (processing time is the wall clock). */
static void
wake_for(struct rocksdb_keyed_backend *b, int64_t timestamp)
{
    uint64_t *wake = b->heap.timers.wake_ns;
    int64_t in_ms = timestamp - clock_wall_ms();
    uint64_t at = clock_mono_ns() + (uint64_t)(in_ms > 0 ? in_ms : 0) * 1000000u;

    if (*wake == 0 || at < *wake)
        *wake = at;
}

void
rdb_timers_register(struct rocksdb_keyed_backend *b, bool event_time, int64_t timestamp)
{
    struct rdb_timer_queue *q = queue_of(b, event_time);
    uint64_t hash = b->key->key_hash;
    struct rdb_timer_group *grp;
    size_t len;
    uint32_t g, at;
    const uint8_t *k = timer_key(b, timestamp, &g, &len);
    bool found;
    int rc;

    /* Written again when it is there: one entry per key, namespace and
     * timestamp. */
    if ((rc = b->p->put(b->db, q->cf, k, len, &hash, 8, b->errbuf, sizeof b->errbuf)) != 0) {
        rdb_failed(b, rc);
        return;
    }
    grp = &q->groups[g];
    at = cache_find(grp, k, len, &found);
    /* The cache holds the group's first timers: a later one than its last
     * stays in RocksDB only, unless the cache holds them all. */
    if (found || (!grp->all && at == grp->n))
        goto wake;
    memmove(&grp->cache[at + 1], &grp->cache[at], (grp->n - at) * sizeof *grp->cache);
    grp->cache[at] = (struct rdb_timer_entry){ bytes_dup(k, len), (uint32_t)len, hash };
    if (++grp->n > RDB_TIMER_CACHE) {
        cache_free_entry(&grp->cache[--grp->n]);
        grp->all = false;
    }
    if (at == 0)
        heap_fix(q, g);
wake:
    if (!event_time)
        wake_for(b, timestamp);
}

/* Removes entry key k of group g: from RocksDB, and from the cache, which
 * is filled again when it ran empty while RocksDB holds more. */
static void
timer_remove(struct rocksdb_keyed_backend *b, struct rdb_timer_queue *q, uint32_t g,
             const uint8_t *k, size_t len)
{
    struct rdb_timer_group *grp = &q->groups[g];
    bool found;
    uint32_t at;
    int rc;

    if ((rc = b->p->remove(b->db, q->cf, k, len, b->errbuf, sizeof b->errbuf)) != 0) {
        rdb_failed(b, rc);
        return;
    }
    at = cache_find(grp, k, len, &found);
    if (!found)
        return;
    cache_free_entry(&grp->cache[at]);
    memmove(&grp->cache[at], &grp->cache[at + 1], (grp->n - at - 1) * sizeof *grp->cache);
    grp->n--;
    if (grp->n == 0 && !grp->all) {
        if (!group_load(b, q, g))
            rdb_failed(b, SPATE_EIO);
    } else if (at == 0) {
        heap_fix(q, g);
    }
}

void
rdb_timers_delete(struct rocksdb_keyed_backend *b, bool event_time, int64_t timestamp)
{
    size_t len;
    uint32_t g;
    const uint8_t *k = timer_key(b, timestamp, &g, &len);

    timer_remove(b, queue_of(b, event_time), g, k, len);
}

/* Entry key k (valid) as the timer fire gets, in b->fired. */
static struct timer *
fired_timer(struct rocksdb_keyed_backend *b, bool event_time, const struct rdb_timer_entry *e)
{
    uint32_t klen = be32_get(e->key + KLEN_OFF);
    size_t data = e->len - KEY_OFF;

    if (sizeof(struct timer) + data > b->fired_cap) {
        b->fired_cap = (sizeof(struct timer) + data) * 2;
        b->fired = xrealloc(b->fired, b->fired_cap);
    }
    b->fired->timestamp = ts_get(e->key + TS_OFF);
    b->fired->key_hash = e->hash;
    b->fired->key_len = klen;
    b->fired->ns_len = (uint32_t)(data - klen);
    b->fired->event_time = event_time;
    memcpy(b->fired->data, e->key + KEY_OFF, data);
    return b->fired;
}

void
rdb_timers_advance(struct rocksdb_keyed_backend *b, bool event_time, int64_t time,
                   keyed_timer_fire_fn fire)
{
    struct rdb_timer_queue *q = queue_of(b, event_time);

    /* An empty group's head is INT64_MAX, which a time of INT64_MAX (the
     * final watermark) reaches: the first group must hold a timer. */
    while (q->ngroups > 0 && q->groups[q->heap[0]].n > 0 && group_head(q, q->heap[0]) <= time) {
        uint32_t g = q->heap[0];
        struct rdb_timer_entry e = q->groups[g].cache[0];
        struct timer *t = fired_timer(b, event_time, &e);

        /* Removed before it fires: fire may register timers (again). */
        timer_remove(b, q, g, e.key, e.len);
        keyed_set_key(b->key, (spate_bytes){ t->data, t->key_len }, t->key_hash,
                      t->ns_len ? t->data + t->key_len : NULL, t->ns_len);
        fire(b->heap.timers.owner, t);
    }
}

void
rdb_timers_on_processing_time(struct rocksdb_keyed_backend *b, uint64_t now,
                              keyed_timer_fire_fn fire)
{
    struct rdb_timer_queue *q = queue_of(b, false);
    uint64_t *wake = b->heap.timers.wake_ns;
    int64_t next;

    *wake = 0;
    rdb_timers_advance(b, false, clock_wall_ms(), fire);
    next = q->ngroups > 0 ? group_head(q, q->heap[0]) : INT64_MAX;
    if (next != INT64_MAX) {
        int64_t in_ms = next - clock_wall_ms();

        *wake = now + (uint64_t)(in_ms > 0 ? in_ms : 0) * 1000000u;
    }
}

/* ---- snapshots and restore ---- */

bool
rdb_timers_snapshot_key_group(struct rocksdb_keyed_backend *b, struct rdb_snapshot *snap,
                              uint32_t kg, struct byte_buf *out, char *errbuf, size_t errlen)
{
    uint8_t lo[KG_BYTES], hi[KG_BYTES + 1];
    size_t hi_len = kg_bounds(kg, lo, hi);
    uint32_t count = 0;
    int rc = 0;

    out->len = 0;
    byte_buf_put(out, &count, 4);
    for (int d = 0; d < 2 && rc == 0; d++) {
        struct rdb_iter *it = b->p->iter(b->db, b->timers[d].cf, snap, lo, sizeof lo, hi, hi_len);
        uint8_t et = (uint8_t)d;

        for (; it != NULL && b->p->iter_valid(it); b->p->iter_next(it)) {
            size_t kl, vl;
            const uint8_t *k = b->p->iter_key(it, &kl), *v = b->p->iter_value(it, &vl);
            uint32_t klen, nslen;
            int64_t ts;

            if (!entry_ok(k, kl) || vl != 8)
                continue;
            klen = be32_get(k + KLEN_OFF);
            nslen = (uint32_t)(kl - KEY_OFF - klen);
            ts = ts_get(k + TS_OFF);
            byte_buf_put(out, &et, 1);
            byte_buf_put(out, &ts, 8);
            byte_buf_put(out, v, 8);
            byte_buf_put(out, &klen, 4);
            byte_buf_put(out, &nslen, 4);
            byte_buf_put(out, k + KEY_OFF, kl - KEY_OFF);
            count++;
        }
        rc = it != NULL ? b->p->iter_status(it, errbuf, errlen) : SPATE_ENOMEM;
        b->p->iter_free(it);
    }
    memcpy(out->data, &count, 4);
    return rc == 0;
}

/* A timer the heap's timer service had: into RocksDB. */
static void
move_to_rocksdb(void *arg, const struct timer *t)
{
    struct rocksdb_keyed_backend *b = arg;

    keyed_set_key(b->key, (spate_bytes){ t->data, t->key_len }, t->key_hash,
                  t->ns_len ? t->data + t->key_len : NULL, t->ns_len);
    rdb_timers_register(b, t->event_time, t->timestamp);
}

/* The timers of an incremental checkpoint's column family q: onto the
 * heap, and out of RocksDB. */
static int
move_to_heap(struct rocksdb_keyed_backend *b, struct rdb_timer_queue *q, spate_error *err)
{
    static const uint8_t lo[KG_BYTES] = { 0, 0 }, hi[KG_BYTES + 1] = { 0xff, 0xff, 0xff };
    struct rdb_iter *it = b->p->iter(b->db, q->cf, NULL, lo, sizeof lo, hi, sizeof hi);
    bool any = false;
    int rc;

    for (; it != NULL && b->p->iter_valid(it); b->p->iter_next(it)) {
        size_t kl, vl;
        const uint8_t *k = b->p->iter_key(it, &kl), *v = b->p->iter_value(it, &vl);
        uint32_t klen;
        uint64_t hash;

        if (!entry_ok(k, kl) || vl != 8)
            continue;
        any = true;
        klen = be32_get(k + KLEN_OFF);
        memcpy(&hash, v, 8);
        keyed_set_key(b->key, (spate_bytes){ k + KEY_OFF, klen }, hash,
                      kl > KEY_OFF + klen ? k + KEY_OFF + klen : NULL, kl - KEY_OFF - klen);
        timer_service_register(&b->heap.timers, q->event_time, ts_get(k + TS_OFF));
    }
    rc = it != NULL ? b->p->iter_status(it, b->errbuf, sizeof b->errbuf) : SPATE_ENOMEM;
    b->p->iter_free(it);
    if (rc == 0 && any)
        rc = b->p->remove_range(b->db, q->cf, lo, sizeof lo, hi, sizeof hi, b->errbuf,
                                sizeof b->errbuf);
    return rc != 0 ? spate_error_set(err, rc, "restore of the timers: %s", b->errbuf) : 0;
}

int
rdb_timers_restored(struct rocksdb_keyed_backend *b, spate_error *err)
{
    int rc = 0;

    if (!b->opts.timers_in_rocksdb) {
        for (int d = 0; d < 2 && rc == 0; d++)
            rc = move_to_heap(b, &b->timers[d], err);
        keyed_set_key(b->key, (spate_bytes){ "", 0 }, 0, NULL, 0);
        return rc;
    }
    /* The caches first: registering checks them. */
    for (int d = 0; d < 2; d++)
        for (uint32_t g = 0; g < b->timers[d].ngroups; g++)
            if (!group_load(b, &b->timers[d], g))
                return spate_error_set(err, SPATE_EIO, "restore of the timers: %s", b->errbuf);
    timer_service_drain(&b->heap.timers, move_to_rocksdb, b);
    keyed_set_key(b->key, (spate_bytes){ "", 0 }, 0, NULL, 0);
    return rc;
}
