/* Aborting allocators for the control plane (see alloc.h). Thread-safe. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

static void __attribute__((noreturn)) alloc_oom(size_t size)
{
    fprintf(stderr, "spate: out of memory allocating %zu bytes\n", size);
    abort();
}

void *
xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);

    if (p == NULL)
        alloc_oom(size);
    return p;
}

void *
xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);

    if (p == NULL)
        alloc_oom(n * size);
    return p;
}

void *
xaligned_alloc(size_t align, size_t n, size_t size)
{
    size_t bytes = n * size;
    void *p = NULL;

    if ((size && bytes / size != n) || posix_memalign(&p, align, bytes ? bytes : 1) != 0)
        alloc_oom(bytes);
    return p;
}

void *
xaligned_calloc(size_t align, size_t n, size_t size)
{
    void *p = xaligned_alloc(align, n, size);

    memset(p, 0, n * size);
    return p;
}

void *
xrealloc(void *p, size_t size)
{
    void *q = realloc(p, size ? size : 1);

    if (q == NULL)
        alloc_oom(size);
    return q;
}

/* glibc serves a block of 128 KB or more with an mmap of its own and gives
 * it back with a munmap, raising that threshold only once such a block is
 * freed. Keyed state tables are that size and live until their task ends:
 * at parallelism 2 the window benchmark's two window tasks mapped 250 of
 * them one by one, and at the end unmapped them one by one, each munmap
 * taking the process's address-space lock and flushing the other cores'
 * TLBs, so the two tasks queued behind each other's munmaps (40-70 ms of a
 * 1.1 s job). From malloc's heaps they are reused when freed, and the
 * heaps' free tops still go back to the system. 32 MB is the most glibc's
 * own adaptive threshold would reach. */
void
alloc_init_process(void)
{
    mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
}

char *
xstrdup(const char *s)
{
    return xstrndup(s, strlen(s));
}

char *
xstrndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *p = xmalloc(len + 1);

    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

char *
xvasprintf(const char *fmt, va_list ap)
{
    char *s;

    if (vasprintf(&s, fmt, ap) < 0)
        alloc_oom(strlen(fmt));
    return s;
}

char *
xasprintf(const char *fmt, ...)
{
    va_list ap;
    char *s;

    va_start(ap, fmt);
    s = xvasprintf(fmt, ap);
    va_end(ap);
    return s;
}

void
xgrow(void **items, size_t *cap, size_t need, size_t elem_size)
{
    size_t n = *cap ? *cap : 8;

    if (need <= *cap)
        return;
    while (n < need)
        n *= 2;
    *items = xrealloc(*items, n * elem_size);
    *cap = n;
}
