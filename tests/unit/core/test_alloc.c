/* Unit tests of src/core/alloc.c. */
#include <criterion/criterion.h>
#include <malloc.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

Test(alloc, strings)
{
    char *s = xstrdup("spate");
    char *t = xstrndup("spate", 3);
    char *u = xasprintf("%s-%d", "tm", 7);

    cr_assert_str_eq(s, "spate");
    cr_assert_str_eq(t, "spa");
    cr_assert_str_eq(u, "tm-7");
    free(s);
    free(t);
    free(u);
}

Test(alloc, grow_keeps_contents_and_doubles)
{
    int *items = NULL;
    size_t cap = 0;

    for (int i = 0; i < 1000; i++) {
        xgrow((void **)&items, &cap, (size_t)i + 1, sizeof *items);
        items[i] = i;
    }
    cr_assert_geq(cap, 1000);
    cr_assert_lt(cap, 2048);
    for (int i = 0; i < 1000; i++)
        cr_assert_eq(items[i], i);
    free(items);
}

Test(alloc, zero_sizes_give_valid_pointers)
{
    void *p = xmalloc(0);
    void *q = xcalloc(0, 0);

    cr_assert_not_null(p);
    cr_assert_not_null(q);
    free(p);
    free(q);
}

Test(alloc, out_of_memory_aborts, .signal = SIGABRT)
{
    /* More than any machine has: xmalloc must abort, not return NULL. */
    volatile size_t huge = (size_t)-1 / 2;

    (void)xmalloc(huge);
}

/* The sanitizers bring allocators of their own: what glibc's does is seen
 * only without them. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GLIBC_MALLOC 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define GLIBC_MALLOC 0
#endif
#endif
#ifndef GLIBC_MALLOC
#define GLIBC_MALLOC 1
#endif

/* A state table of 132 KB, as the window benchmark's grow to: glibc would
 * give it an mmap of its own (and take it back with a munmap) at its
 * default threshold; after alloc_init_process it comes from malloc's heaps,
 * and so do blocks up to 32 MB. */
Test(alloc, after_init_process_large_blocks_come_from_the_heaps)
{
    size_t mapped_before;
    void *blocks[3];
    const size_t sizes[] = { 132 * 1024, 4 * 1024 * 1024, 32 * 1024 * 1024 - 4096 };

    if (!GLIBC_MALLOC)
        cr_skip_test("a sanitizer's allocator replaces glibc's");
    alloc_init_process();
    mapped_before = mallinfo2().hblks;
    for (int i = 0; i < 3; i++) {
        blocks[i] = xaligned_calloc(64, sizes[i], 1);
        cr_assert_eq(mallinfo2().hblks, mapped_before, "a block of %zu bytes was mapped", sizes[i]);
    }
    for (int i = 0; i < 3; i++)
        free(blocks[i]);
}

Test(alloc, at_glibcs_default_threshold_a_132_kb_block_is_mapped)
{
    /* The counting above sees a mapped block: glibc's default (which it
     * raises once such a block is freed, as the test runner may have). */
    size_t mapped_before;
    void *p;

    if (!GLIBC_MALLOC)
        cr_skip_test("a sanitizer's allocator replaces glibc's");
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    mapped_before = mallinfo2().hblks;
    p = xaligned_calloc(64, 132 * 1024, 1);

    cr_assert_eq(mallinfo2().hblks, mapped_before + 1);
    free(p);
}
