/* Aborting allocators for the control plane (see alloc.h). Thread-safe. */
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
