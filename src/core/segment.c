/* The bounded segment pool of segment.h: one anonymous mapping (each
 * segment followed by its tail room), a header per segment, a LIFO free list (recently used segments are warm in cache) under a
 * mutex. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/segment.h"
#include "core/util.h"

struct segment_pool {
    pthread_mutex_t lock; /* guards free_list and available */
    struct segment *free_list;
    size_t available;
    size_t total;
    size_t segment_size;
    uint8_t *memory;
    struct segment *segments;
};

int
segment_pool_new(size_t segment_size, size_t count, struct segment_pool **out, spate_error *err)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    struct segment_pool *pool;

    if (segment_size == 0 || segment_size % page != 0 || segment_size > UINT32_MAX)
        return spate_error_set(err, SPATE_EINVAL,
                               "segment size %zu is not a positive multiple of the page size %zu",
                               segment_size, page);
    if (count == 0 || count > SIZE_MAX / (segment_size + SEGMENT_TAIL_ROOM))
        return spate_error_set(err, SPATE_EINVAL, "cannot make a pool of %zu segments", count);

    pool = xcalloc(1, sizeof *pool);
    pool->memory = mmap(NULL, (segment_size + SEGMENT_TAIL_ROOM) * count, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (pool->memory == MAP_FAILED) {
        int code = -errno;

        free(pool);
        return spate_error_set(err, code, "cannot map %zu segments of %zu bytes: %s", count,
                               segment_size, spate_strerror(code));
    }
    pthread_mutex_init(&pool->lock, NULL);
    pool->segments = xcalloc(count, sizeof *pool->segments);
    pool->segment_size = segment_size;
    pool->total = count;
    pool->available = count;
    for (size_t i = count; i-- > 0;) {
        struct segment *seg = &pool->segments[i];

        seg->data = pool->memory + i * (segment_size + SEGMENT_TAIL_ROOM);
        seg->size = (uint32_t)segment_size;
        seg->index = (uint32_t)i;
        seg->pool = pool;
        seg->next_free = pool->free_list;
        pool->free_list = seg;
    }
    *out = pool;
    return 0;
}

void
segment_pool_free(struct segment_pool *pool)
{
    if (pool == NULL)
        return;
    SPATE_ASSERT(pool->available == pool->total);
    munmap(pool->memory, (pool->segment_size + SEGMENT_TAIL_ROOM) * pool->total);
    pthread_mutex_destroy(&pool->lock);
    free(pool->segments);
    free(pool);
}

struct segment *
segment_pool_get(struct segment_pool *pool)
{
    struct segment *seg;

    pthread_mutex_lock(&pool->lock);
    seg = pool->free_list;
    if (seg != NULL) {
        pool->free_list = seg->next_free;
        pool->available--;
        seg->next_free = NULL;
    }
    pthread_mutex_unlock(&pool->lock);
    return seg;
}

void
segment_pool_put(struct segment *seg)
{
    struct segment_pool *pool = seg->pool;

    pthread_mutex_lock(&pool->lock);
    SPATE_ASSERT(pool->available < pool->total);
    seg->next_free = pool->free_list;
    pool->free_list = seg;
    pool->available++;
    pthread_mutex_unlock(&pool->lock);
}

size_t
segment_pool_segment_size(const struct segment_pool *pool)
{
    return pool->segment_size;
}

size_t
segment_pool_total(const struct segment_pool *pool)
{
    return pool->total;
}

size_t
segment_pool_available(struct segment_pool *pool)
{
    size_t n;

    pthread_mutex_lock(&pool->lock);
    n = pool->available;
    pthread_mutex_unlock(&pool->lock);
    return n;
}
