/* Network buffers (a segment plus fill level, type, queue link, recycler), the
 * TaskManager's network buffer pool and local pools bounded by a minimum taken
 * at creation and a maximum. Running out is backpressure: a request returns
 * NULL and the requester waits on its notifier, which recycling pokes. Pools
 * are thread-safe (a mutex each); a buffer belongs to one thread at a time. */
#ifndef SPATE_NETWORK_BUFFER_H
#define SPATE_NETWORK_BUFFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include <spate/error.h>

#include "core/notifier.h"
#include "core/segment.h"
#include "metrics/metrics.h"

#define NET_FRAME_HEADER_SIZE 24

enum net_buffer_type {
    NET_BUFFER_DATA = 0,  /* length-framed records */
    NET_BUFFER_EVENT = 1, /* one event: u32 type, payload */
};

struct net_buffer;
typedef void (*net_buffer_recycler)(struct net_buffer *buf);

struct net_buffer {
    uint8_t *data;
    uint32_t size;           /* bytes of content */
    uint32_t capacity;       /* bytes data can hold */
    uint8_t type;            /* enum net_buffer_type */
    struct net_buffer *next; /* link of whichever queue holds the buffer */
    net_buffer_recycler recycler;
    void *owner;         /* the recycler's (a pool, an input channel) */
    struct segment *seg; /* NULL for a heap event buffer */
    /* The network I/O thread's, while it writes the buffer out. */
    uv_write_t write_req;
    uint8_t header[NET_FRAME_HEADER_SIZE];
    void *write_ctx;
};

/* Gives a buffer back to whoever owns it (its pool, its channel). Any thread. */
static inline void
net_buffer_recycle(struct net_buffer *buf)
{
    buf->recycler(buf);
}

/* An event buffer from the heap (events are rare and must not wait for pool
 * memory): u32 type, then len payload bytes; recycling frees it. */
struct net_buffer *net_buffer_new_event(uint32_t type, const void *payload, uint32_t len);
/* A heap buffer of capacity bytes (received events); recycling frees it. */
struct net_buffer *net_buffer_new_heap(uint32_t capacity);
/* The type of an event buffer (0 when too short to hold one). */
uint32_t net_buffer_event_type(const struct net_buffer *buf);

/* ---- the TaskManager's network buffer pool ---- */

struct network_buffer_pool;

int network_buffer_pool_new(size_t segment_size, size_t count, struct network_buffer_pool **out,
                            spate_error *err);
/* Every buffer must have come back. NULL is fine. */
void network_buffer_pool_free(struct network_buffer_pool *pool);
/* A free buffer (recycling returns it here), or NULL when none is left. */
struct net_buffer *network_buffer_pool_request(struct network_buffer_pool *pool);
/* A buffer beyond what its taker is guaranteed (a local pool's above its
 * minimum, an input gate's floating ones): NULL also while no more than a
 * quarter of the buffers are free, which stay for the minimums of the
 * partitions and gates still to come (Flink redistributes instead). */
struct net_buffer *network_buffer_pool_request_excess(struct network_buffer_pool *pool);
size_t network_buffer_pool_available(struct network_buffer_pool *pool);
size_t network_buffer_pool_total(const struct network_buffer_pool *pool);
size_t network_buffer_pool_segment_size(const struct network_buffer_pool *pool);

/* ---- local pools ---- */

struct local_buffer_pool;

/* Takes min buffers from global at once (an error naming how many are missing
 * when it cannot) and more on demand, up to max. waiter is poked when a buffer
 * comes back after a request found none. used/capacity (may be NULL) track
 * the pool's usage for a task's outPoolUsage. */
int local_buffer_pool_new(struct network_buffer_pool *global, size_t min, size_t max,
                          struct notifier *waiter, struct metric_level *used,
                          struct metric_level *capacity, struct local_buffer_pool **out,
                          spate_error *err);
/* A buffer, or NULL when the pool is at its maximum or the global pool is
 * empty; then the waiter is poked when one comes back. Any thread. */
struct net_buffer *local_buffer_pool_request(struct local_buffer_pool *pool);
/* Replaces the notifier poked on recycling (NULL: none); once it returns the
 * old one is not touched again. */
void local_buffer_pool_set_waiter(struct local_buffer_pool *pool, struct notifier *waiter);
/* The owner of used/capacity is going (a producer task releasing its
 * partition while consumers still hold buffers): the pool takes back what
 * it added to them and, once this returns, never touches them again. */
void local_buffer_pool_detach_metrics(struct local_buffer_pool *pool);
/* Returns free buffers to the global pool; buffers still out go there when
 * recycled, and the pool's memory goes with the last of them. */
void local_buffer_pool_destroy(struct local_buffer_pool *pool);
size_t local_buffer_pool_max(const struct local_buffer_pool *pool);
/* Buffers handed out and not yet recycled. */
size_t local_buffer_pool_in_use(struct local_buffer_pool *pool);

#endif
