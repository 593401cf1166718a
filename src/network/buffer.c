/* Network buffers and their pools (buffer.h). The global pool is the core
 * segment pool plus one net_buffer descriptor per segment; a local pool keeps
 * a free list of the buffers it took, under its mutex. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/util.h"
#include "network/buffer.h"

/* ---- heap buffers ---- */

static void
heap_recycle(struct net_buffer *buf)
{
    free(buf);
}

struct net_buffer *
net_buffer_new_heap(uint32_t capacity)
{
    struct net_buffer *buf = xmalloc(sizeof *buf + capacity);

    memset(buf, 0, sizeof *buf);
    buf->data = (uint8_t *)(buf + 1);
    buf->capacity = capacity;
    buf->type = NET_BUFFER_EVENT;
    buf->recycler = heap_recycle;
    return buf;
}

struct net_buffer *
net_buffer_new_event(uint32_t type, const void *payload, uint32_t len)
{
    struct net_buffer *buf = net_buffer_new_heap(4 + len);

    memcpy(buf->data, &type, 4); /* little-endian hosts: the wire order */
    if (len > 0)
        memcpy(buf->data + 4, payload, len);
    buf->size = 4 + len;
    return buf;
}

uint32_t
net_buffer_event_type(const struct net_buffer *buf)
{
    uint32_t type = 0;

    if (buf->size >= 4)
        memcpy(&type, buf->data, 4);
    return type;
}

/* ---- the global pool ---- */

struct network_buffer_pool {
    struct segment_pool *segments;
    struct net_buffer *buffers; /* by segment index */
};

static void
global_recycle(struct net_buffer *buf)
{
    segment_pool_put(buf->seg);
}

int
network_buffer_pool_new(size_t segment_size, size_t count, struct network_buffer_pool **out,
                        spate_error *err)
{
    struct network_buffer_pool *pool = xcalloc(1, sizeof *pool);
    int rc = segment_pool_new(segment_size, count, &pool->segments, err);

    if (rc != 0) {
        free(pool);
        return rc;
    }
    pool->buffers = xcalloc(count, sizeof *pool->buffers);
    *out = pool;
    return 0;
}

void
network_buffer_pool_free(struct network_buffer_pool *pool)
{
    if (pool == NULL)
        return;
    segment_pool_free(pool->segments);
    free(pool->buffers);
    free(pool);
}

struct net_buffer *
network_buffer_pool_request(struct network_buffer_pool *pool)
{
    struct segment *seg = segment_pool_get(pool->segments);
    struct net_buffer *buf;

    if (seg == NULL)
        return NULL;
    buf = &pool->buffers[seg->index];
    buf->data = seg->data;
    buf->size = 0;
    buf->capacity = seg->size;
    buf->type = NET_BUFFER_DATA;
    buf->next = NULL;
    buf->recycler = global_recycle;
    buf->owner = pool;
    buf->seg = seg;
    return buf;
}

struct net_buffer *
network_buffer_pool_request_excess(struct network_buffer_pool *pool)
{
    if (segment_pool_available(pool->segments) * 4 <= segment_pool_total(pool->segments))
        return NULL;
    return network_buffer_pool_request(pool);
}

size_t
network_buffer_pool_available(struct network_buffer_pool *pool)
{
    return segment_pool_available(pool->segments);
}

size_t
network_buffer_pool_total(const struct network_buffer_pool *pool)
{
    return segment_pool_total(pool->segments);
}

size_t
network_buffer_pool_segment_size(const struct network_buffer_pool *pool)
{
    return segment_pool_segment_size(pool->segments);
}

/* ---- local pools ---- */

struct local_buffer_pool {
    pthread_mutex_t lock; /* guards every field below but the constants */
    struct network_buffer_pool *global;
    struct net_buffer *free_list;
    size_t held; /* taken from global: free plus out */
    size_t out;  /* handed out, not yet recycled */
    size_t min, max;
    /* A request found nothing: poke the waiter once wake_at buffers are
     * free again (or all but min are back), not at the first: under
     * backpressure a producer woken per buffer and its consumer on the
     * same core took turns per buffer (a context switch each, tens of
     * thousands a second). */
    bool waiting;
    size_t wake_at;
    bool destroyed;
    struct notifier *waiter;
    struct metric_level *used, *capacity;
    /* Pokes of the waiter in flight: decided under the lock, made after it
     * (a notify may write an eventfd, too slow to hold a lock that a
     * producer and consumers on other cores take per buffer); set_waiter
     * waits them out. Not under the lock. */
    _Atomic int pokes;
};

static void local_recycle(struct net_buffer *buf);

static void
local_release_memory(struct local_buffer_pool *pool)
{
    if (pool->capacity != NULL)
        metric_level_add(pool->capacity, -(int64_t)pool->max);
    pthread_mutex_destroy(&pool->lock);
    free(pool);
}

int
local_buffer_pool_new(struct network_buffer_pool *global, size_t min, size_t max,
                      struct notifier *waiter, struct metric_level *used,
                      struct metric_level *capacity, struct local_buffer_pool **out,
                      spate_error *err)
{
    struct local_buffer_pool *pool;

    if (min == 0 || max < min)
        return spate_error_set(err, SPATE_EINVAL, "a local buffer pool of %zu to %zu buffers", min,
                               max);
    pool = xcalloc(1, sizeof *pool);
    pthread_mutex_init(&pool->lock, NULL);
    pool->global = global;
    pool->min = min;
    pool->max = max;
    pool->wake_at = (max - min) / 2 + 1;
    pool->waiter = waiter;
    atomic_init(&pool->pokes, 0);
    pool->used = used;
    pool->capacity = capacity;
    for (size_t i = 0; i < min; i++) {
        struct net_buffer *buf = network_buffer_pool_request(global);

        if (buf == NULL) {
            size_t available = i + network_buffer_pool_available(global);

            while ((buf = pool->free_list) != NULL) {
                pool->free_list = buf->next;
                net_buffer_recycle(buf);
            }
            pthread_mutex_destroy(&pool->lock);
            free(pool);
            return spate_error_set(err, SPATE_ENOMEM,
                                   "insufficient number of network buffers: required %zu, but "
                                   "only %zu available (taskmanager.memory.network.*)",
                                   min, available);
        }
        buf->next = pool->free_list;
        pool->free_list = buf;
        pool->held++;
    }
    if (capacity != NULL)
        metric_level_add(capacity, (int64_t)max);
    *out = pool;
    return 0;
}

struct net_buffer *
local_buffer_pool_request(struct local_buffer_pool *pool)
{
    struct net_buffer *buf;

    pthread_mutex_lock(&pool->lock);
    buf = pool->free_list;
    if (buf != NULL) {
        pool->free_list = buf->next;
    } else if (pool->held < pool->max &&
               (buf = network_buffer_pool_request_excess(pool->global)) != NULL) {
        pool->held++;
    }
    if (buf != NULL) {
        pool->out++;
        buf->next = NULL;
        buf->size = 0;
        buf->type = NET_BUFFER_DATA;
        buf->recycler = local_recycle;
        buf->owner = pool;
        /* Under the lock: local_buffer_pool_detach_metrics may free them. */
        if (pool->used != NULL)
            metric_level_add(pool->used, 1);
    } else {
        pool->waiting = true;
    }
    pthread_mutex_unlock(&pool->lock);
    return buf;
}

static void
local_recycle(struct net_buffer *buf)
{
    struct local_buffer_pool *pool = buf->owner;
    struct notifier *poke = NULL;
    bool destroyed, gone = false;

    pthread_mutex_lock(&pool->lock);
    if (pool->used != NULL)
        metric_level_add(pool->used, -1);
    pool->out--;
    destroyed = pool->destroyed;
    if (destroyed) {
        pool->held--;
        gone = pool->held == 0;
    } else {
        buf->next = pool->free_list;
        pool->free_list = buf;
        if (pool->waiting && pool->waiter != NULL &&
            (pool->held - pool->out >= pool->wake_at || pool->out <= pool->min)) {
            pool->waiting = false;
            poke = pool->waiter;
            /* Counted under the lock: a set_waiter(NULL) after it sees it. */
            atomic_fetch_add_explicit(&pool->pokes, 1, memory_order_relaxed);
        }
    }
    pthread_mutex_unlock(&pool->lock);
    if (poke != NULL) {
        notifier_notify(poke);
        /* release: the notify is done before set_waiter sees the count drop */
        atomic_fetch_sub_explicit(&pool->pokes, 1, memory_order_release);
    }
    if (destroyed) {
        buf->recycler = global_recycle;
        net_buffer_recycle(buf);
    }
    if (gone)
        local_release_memory(pool);
}

void
local_buffer_pool_set_waiter(struct local_buffer_pool *pool, struct notifier *waiter)
{
    pthread_mutex_lock(&pool->lock);
    pool->waiter = waiter;
    pthread_mutex_unlock(&pool->lock);
    /* A poke decided before is made after the lock: once none is in flight
     * the old waiter's notifier is no longer touched. (The pool outlives
     * them: it is destroyed only after its producer set no waiter.) */
    while (atomic_load_explicit(&pool->pokes, memory_order_acquire) != 0)
        sched_yield();
}

void
local_buffer_pool_detach_metrics(struct local_buffer_pool *pool)
{
    pthread_mutex_lock(&pool->lock);
    if (pool->used != NULL)
        metric_level_add(pool->used, -(int64_t)pool->out);
    if (pool->capacity != NULL)
        metric_level_add(pool->capacity, -(int64_t)pool->max);
    pool->used = pool->capacity = NULL;
    pthread_mutex_unlock(&pool->lock);
}

void
local_buffer_pool_destroy(struct local_buffer_pool *pool)
{
    struct net_buffer *buf;
    bool gone;

    if (pool == NULL)
        return;
    pthread_mutex_lock(&pool->lock);
    pool->destroyed = true;
    while ((buf = pool->free_list) != NULL) {
        pool->free_list = buf->next;
        pool->held--;
        buf->recycler = global_recycle;
        net_buffer_recycle(buf);
    }
    gone = pool->held == 0;
    pthread_mutex_unlock(&pool->lock);
    if (gone)
        local_release_memory(pool);
}

size_t
local_buffer_pool_max(const struct local_buffer_pool *pool)
{
    return pool->max;
}

size_t
local_buffer_pool_in_use(struct local_buffer_pool *pool)
{
    size_t n;

    pthread_mutex_lock(&pool->lock);
    n = pool->out;
    pthread_mutex_unlock(&pool->lock);
    return n;
}
