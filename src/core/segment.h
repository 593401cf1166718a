/* Memory segments: fixed-size blocks (32 KiB by default) carved from one
 * mapping, handed out by a bounded pool. Running out is not an error but
 * backpressure: segment_pool_get returns NULL and the caller waits for a
 * segment to come back. The network stack's buffer pools stand on this.
 * Any thread may get and put; a mutex guards the free list. */
#ifndef SPATE_CORE_SEGMENT_H
#define SPATE_CORE_SEGMENT_H

#include <stddef.h>
#include <stdint.h>

#include <spate/error.h>

struct segment_pool;

struct segment {
    uint8_t *data;
    uint32_t size;  /* capacity in bytes, the pool's segment size */
    uint32_t index; /* position in the pool, stable for the pool's life */
    struct segment_pool *pool;
    struct segment *next_free; /* the pool's, while the segment is free */
};

/* Bytes after each segment's size that belong to it: a reader may read
 * past the end of what it expects there (the network's next frame header
 * read with a buffer's body), never into the next segment. Committed only
 * where touched. */
#define SEGMENT_TAIL_ROOM 4096

/* count segments of segment_size bytes (a multiple of the page size), each
 * followed by SEGMENT_TAIL_ROOM bytes. The memory is reserved at once and
 * committed by the kernel as it is touched. */
int segment_pool_new(size_t segment_size, size_t count, struct segment_pool **out,
                     spate_error *err);
/* Every segment must have been put back. NULL is fine. */
void segment_pool_free(struct segment_pool *pool);

/* A free segment, or NULL when all are in use. */
struct segment *segment_pool_get(struct segment_pool *pool);
/* Returns a segment to its pool. */
void segment_pool_put(struct segment *seg);

size_t segment_pool_segment_size(const struct segment_pool *pool);
size_t segment_pool_total(const struct segment_pool *pool);
size_t segment_pool_available(struct segment_pool *pool);

#endif
