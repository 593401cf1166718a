/* Timers of one operator instance (timer_service.h). A timer's identity,
 * [event][timestamp][key length][key][namespace], is an entry of its key
 * group's set; its hash keeps the key's key group. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/clock.h"
#include "state/timer_service.h"

void
timer_service_init(struct timer_service *ts, uint32_t max_parallelism, struct key_group_range range,
                   struct state_key_context *key, uint64_t *wake_ns, void *owner)
{
    memset(ts, 0, sizeof *ts);
    keyed_state_init(&ts->sets, max_parallelism, range);
    ts->key = key;
    ts->wake_ns = wake_ns;
    ts->owner = owner;
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
timer_service_release(struct timer_service *ts)
{
    keyed_state_release(&ts->sets);
    heap_release(&ts->event);
    heap_release(&ts->processing);
    free(ts->buf);
    ts->buf = NULL;
    for (size_t i = 0; i < ts->nspare; i++)
        free(ts->spare[i]);
    free(ts->spare);
    ts->spare = NULL;
    ts->nspare = ts->spare_cap = 0;
}

/* A timer with data bytes of key and namespace: a spare one of that size,
 * else a new one. */
static struct timer *
timer_alloc(struct timer_service *ts, size_t data)
{
    if (data == ts->spare_data && ts->nspare > 0)
        return ts->spare[--ts->nspare];
    return xmalloc(sizeof(struct timer) + data);
}

/* A fired timer: kept when it has the spares' size (the first fired sets
 * it), else freed. */
static void
timer_recycle(struct timer_service *ts, struct timer *t)
{
    size_t data = (size_t)t->key_len + t->ns_len;

    if (ts->spare_cap == 0)
        ts->spare_data = data;
    if (data != ts->spare_data) {
        free(t);
        return;
    }
    xgrow((void **)&ts->spare, &ts->spare_cap, ts->nspare + 1, sizeof *ts->spare);
    ts->spare[ts->nspare++] = t;
}

static uint8_t *
timer_buf(struct timer_service *ts, size_t n)
{
    if (n > ts->buf_cap) {
        ts->buf_cap = n * 2 > 128 ? n * 2 : 128;
        ts->buf = xrealloc(ts->buf, ts->buf_cap);
    }
    return ts->buf;
}

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
timer_identity(struct timer_service *ts, bool event_time, int64_t timestamp, const uint8_t *key,
               size_t klen, const void *ns, size_t nslen, uint64_t *hash, uint64_t key_hash)
{
    uint8_t *id = timer_buf(ts, 1 + 8 + 4 + klen + nslen);
    uint32_t k32 = (uint32_t)klen;

    id[0] = event_time;
    memcpy(id + 1, &timestamp, 8);
    memcpy(id + 9, &k32, 4);
    memcpy(id + 13, key, klen);
    if (nslen)
        memcpy(id + 13 + klen, ns, nslen);
    *hash = key_hash ^ (XXH3_64bits(id, 13) << 16);
    return 13 + klen + nslen;
}

void
timer_service_register(struct timer_service *ts, bool event_time, int64_t timestamp)
{
    const struct state_key_context *ctx = ts->key;
    struct state_map *set = keyed_state_map(&ts->sets, ctx->key_hash);
    uint64_t hash;
    size_t n = timer_identity(ts, event_time, timestamp, ctx->key.data, ctx->key.len, ctx->ns,
                              ctx->ns_len, &hash, ctx->key_hash);
    struct timer *t;

    if (state_map_get(set, hash, ts->buf, n) != NULL)
        return; /* one timer per key, namespace and timestamp */
    state_map_put(set, hash, ts->buf, n, "", 0);
    t = timer_alloc(ts, ctx->key.len + ctx->ns_len);
    t->timestamp = timestamp;
    t->key_hash = ctx->key_hash;
    t->key_len = (uint32_t)ctx->key.len;
    t->ns_len = (uint32_t)ctx->ns_len;
    t->event_time = event_time;
    memcpy(t->data, ctx->key.data, ctx->key.len);
    if (ctx->ns_len)
        memcpy(t->data + ctx->key.len, ctx->ns, ctx->ns_len);
    heap_push(event_time ? &ts->event : &ts->processing, t);
    if (!event_time) {
        /* Wake the task for it: processing time is the wall clock. */
        int64_t in_ms = timestamp - clock_wall_ms();
        uint64_t at = clock_mono_ns() + (uint64_t)(in_ms > 0 ? in_ms : 0) * 1000000u;

        if (*ts->wake_ns == 0 || at < *ts->wake_ns)
            *ts->wake_ns = at;
    }
}

void
timer_service_delete(struct timer_service *ts, bool event_time, int64_t timestamp)
{
    const struct state_key_context *ctx = ts->key;
    struct state_map *set = keyed_state_map(&ts->sets, ctx->key_hash);
    uint64_t hash;
    size_t n = timer_identity(ts, event_time, timestamp, ctx->key.data, ctx->key.len, ctx->ns,
                              ctx->ns_len, &hash, ctx->key_hash);

    /* The heap keeps the timer; it is skipped when it comes up. */
    state_map_remove(set, hash, ts->buf, n);
}

void
timer_service_advance(struct timer_service *ts, bool event_time, int64_t time,
                      keyed_timer_fire_fn fire)
{
    struct timer_heap *h = event_time ? &ts->event : &ts->processing;

    while (h->count > 0 && h->items[0].timestamp <= time) {
        struct timer *t = heap_pop(h);
        struct state_map *set = keyed_state_map(&ts->sets, t->key_hash);
        uint64_t hash;
        size_t n = timer_identity(ts, t->event_time, t->timestamp, t->data, t->key_len,
                                  t->data + t->key_len, t->ns_len, &hash, t->key_hash);

        if (state_map_remove(set, hash, ts->buf, n) == 1) {
            keyed_set_key(ts->key, (spate_bytes){ t->data, t->key_len }, t->key_hash,
                          t->ns_len ? t->data + t->key_len : NULL, t->ns_len);
            fire(ts->owner, t);
        }
        timer_recycle(ts, t);
    }
}

int64_t
timer_service_next_processing_time(const struct timer_service *ts)
{
    return ts->processing.count ? ts->processing.items[0].timestamp : INT64_MAX;
}

void
timer_service_on_processing_time(struct timer_service *ts, uint64_t now, keyed_timer_fire_fn fire)
{
    int64_t next;

    *ts->wake_ns = 0;
    timer_service_advance(ts, false, clock_wall_ms(), fire);
    next = timer_service_next_processing_time(ts);
    if (next != INT64_MAX) {
        int64_t in_ms = next - clock_wall_ms();

        *ts->wake_ns = now + (uint64_t)(in_ms > 0 ? in_ms : 0) * 1000000u;
    }
}

void
timer_service_drain(struct timer_service *ts, void (*fn)(void *arg, const struct timer *t),
                    void *arg)
{
    struct timer_heap *heaps[2] = { &ts->event, &ts->processing };

    for (int i = 0; i < 2; i++) {
        struct timer_heap *h = heaps[i];

        for (size_t k = 0; k < h->count; k++) {
            struct timer *t = h->items[k].timer;
            struct state_map *set = keyed_state_map(&ts->sets, t->key_hash);
            uint64_t hash;
            size_t n = timer_identity(ts, t->event_time, t->timestamp, t->data, t->key_len,
                                      t->data + t->key_len, t->ns_len, &hash, t->key_hash);

            if (state_map_remove(set, hash, ts->buf, n) == 1)
                fn(arg, t);
            free(t);
        }
        h->count = 0;
    }
}

/* One live timer: u8 event time, i64 timestamp, u64 key hash, u32 key
 * length, u32 namespace length, key and namespace bytes; the key group's
 * count, first, counts it. */
void
timer_service_snapshot_put(struct timer_service *ts, struct byte_buf *out, bool event_time,
                           int64_t timestamp, uint64_t key_hash, spate_bytes key, const void *ns,
                           size_t ns_len)
{
    struct byte_buf *kg = &out[keyed_state_map(&ts->sets, key_hash) - ts->sets.maps];
    uint8_t et = event_time;
    uint32_t klen = (uint32_t)key.len, nlen = (uint32_t)ns_len, count;

    byte_buf_put(kg, &et, 1);
    byte_buf_put(kg, &timestamp, 8);
    byte_buf_put(kg, &key_hash, 8);
    byte_buf_put(kg, &klen, 4);
    byte_buf_put(kg, &nlen, 4);
    byte_buf_put(kg, key.data, key.len);
    if (ns_len)
        byte_buf_put(kg, ns, ns_len);
    memcpy(&count, kg->data, 4);
    count++;
    memcpy(kg->data, &count, 4);
}

static void
snapshot_heap(struct timer_service *ts, const struct timer_heap *h, struct byte_buf *timers)
{
    for (size_t i = 0; i < h->count; i++) {
        const struct timer *t = h->items[i].timer;
        struct state_map *set = keyed_state_map(&ts->sets, t->key_hash);
        uint64_t hash;
        size_t n = timer_identity(ts, t->event_time, t->timestamp, t->data, t->key_len,
                                  t->data + t->key_len, t->ns_len, &hash, t->key_hash);

        if (state_map_get(set, hash, ts->buf, n) == NULL)
            continue; /* deleted: only its heap entry is left */
        timer_service_snapshot_put(ts, timers, t->event_time, t->timestamp, t->key_hash,
                                   (spate_bytes){ t->data, t->key_len }, t->data + t->key_len,
                                   t->ns_len);
    }
}

void
timer_service_snapshot(struct timer_service *ts, struct byte_buf *out)
{
    uint32_t zero = 0;

    for (uint32_t k = 0; k <= ts->sets.range.end - ts->sets.range.start; k++)
        byte_buf_put(&out[k], &zero, 4);
    snapshot_heap(ts, &ts->event, out);
    snapshot_heap(ts, &ts->processing, out);
    if (ts->form != NULL)
        ts->form->snapshot(ts->form->data, ts, out);
}

bool
timer_service_restore(struct timer_service *ts, const uint8_t *p, size_t len)
{
    const uint8_t *end = p + len;
    uint32_t count;

    if (len < 4)
        return false;
    memcpy(&count, p, 4);
    p += 4;
    for (uint32_t i = 0; i < count; i++) {
        uint8_t et;
        int64_t timestamp;
        uint64_t key_hash;
        uint32_t klen, nslen;

        if (end - p < 25)
            return false;
        et = p[0];
        memcpy(&timestamp, p + 1, 8);
        memcpy(&key_hash, p + 9, 8);
        memcpy(&klen, p + 17, 4);
        memcpy(&nslen, p + 21, 4);
        p += 25;
        if ((size_t)(end - p) < (size_t)klen + nslen || et > 1)
            return false;
        if (ts->form == NULL || !ts->form->adopt(ts->form->data, et == 1, timestamp,
                                                 (spate_bytes){ p, klen }, p + klen, nslen)) {
            keyed_set_key(ts->key, (spate_bytes){ p, klen }, key_hash, nslen ? p + klen : NULL,
                          nslen);
            timer_service_register(ts, et == 1, timestamp);
        }
        p += klen + nslen;
    }
    keyed_set_key(ts->key, (spate_bytes){ "", 0 }, 0, NULL, 0);
    return p == end;
}
