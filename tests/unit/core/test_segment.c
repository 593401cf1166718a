/* Unit tests of src/core/segment.c: bounds, reuse, bad sizes, and threads
 * taking and returning segments at once (also under ThreadSanitizer). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

#include "core/segment.h"

Test(segment, pool_is_bounded_and_segments_are_reused)
{
    struct segment_pool *pool;
    struct segment *segs[4];
    spate_error err;

    cr_assert_eq(segment_pool_new(32768, 4, &pool, &err), 0, "%s", err.message);
    cr_assert_eq(segment_pool_total(pool), 4);
    cr_assert_eq(segment_pool_segment_size(pool), 32768);
    for (int i = 0; i < 4; i++) {
        segs[i] = segment_pool_get(pool);
        cr_assert_not_null(segs[i]);
        cr_assert_eq(segs[i]->size, 32768);
        memset(segs[i]->data, i, segs[i]->size); /* writable, whole */
    }
    cr_assert_null(segment_pool_get(pool), "a fifth segment from a pool of four");
    cr_assert_eq(segment_pool_available(pool), 0);
    segment_pool_put(segs[2]);
    cr_assert_eq(segment_pool_get(pool), segs[2]);
    for (int i = 0; i < 4; i++)
        segment_pool_put(segs[i]);
    cr_assert_eq(segment_pool_available(pool), 4);
    segment_pool_free(pool);
}

Test(segment, bad_sizes_are_errors)
{
    struct segment_pool *pool;
    spate_error err;

    cr_assert_eq(segment_pool_new(1000, 4, &pool, &err), SPATE_EINVAL);
    cr_assert(strstr(err.message, "page size") != NULL);
    cr_assert_eq(segment_pool_new(4096, 0, &pool, &err), SPATE_EINVAL);
}

#define THREADS 4
#define ROUNDS  20000

static void *
churn(void *arg)
{
    struct segment_pool *pool = arg;

    for (int i = 0; i < ROUNDS; i++) {
        struct segment *s = segment_pool_get(pool);

        if (s == NULL)
            continue;
        s->data[0] = (uint8_t)i;
        segment_pool_put(s);
    }
    return NULL;
}

Test(segment, threads_share_a_pool, .timeout = 60)
{
    struct segment_pool *pool;
    pthread_t t[THREADS];
    spate_error err;

    cr_assert_eq(segment_pool_new(4096, 2, &pool, &err), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, churn, pool);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    cr_assert_eq(segment_pool_available(pool), 2);
    segment_pool_free(pool);
}

/* A segment's tail room is its own: writing all of every segment's tail
 * changes no byte of another segment (the network reads the next frame's
 * header there). */
Test(segment, tail_room_belongs_to_its_segment)
{
    struct segment_pool *pool;
    struct segment *segs[4];
    spate_error err;

    cr_assert_eq(segment_pool_new(4096, 4, &pool, &err), 0);
    for (int i = 0; i < 4; i++) {
        segs[i] = segment_pool_get(pool);
        cr_assert_not_null(segs[i]);
        memset(segs[i]->data, 'a' + i, segs[i]->size);
    }
    for (int i = 0; i < 4; i++)
        memset(segs[i]->data + segs[i]->size, 0xee, SEGMENT_TAIL_ROOM);
    for (int i = 0; i < 4; i++) {
        for (uint32_t k = 0; k < segs[i]->size; k++)
            cr_assert_eq(segs[i]->data[k], 'a' + i, "segment %d byte %u", i, k);
        segment_pool_put(segs[i]);
    }
    segment_pool_free(pool);
}
