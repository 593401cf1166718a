/* Control-plane allocation that aborts on out-of-memory (Redis zmalloc, git
 * xmalloc): small allocations whose failure leaves nothing sane to do. The
 * data plane never uses these; it draws from bounded pools. Thread-safe. */
#ifndef SPATE_CORE_ALLOC_H
#define SPATE_CORE_ALLOC_H

#include <stdarg.h>
#include <stddef.h>

void *xmalloc(size_t size) __attribute__((malloc, alloc_size(1), returns_nonnull));
void *xcalloc(size_t n, size_t size) __attribute__((malloc, alloc_size(1, 2), returns_nonnull));
/* n * size bytes aligned to align (a power of two, a multiple of
 * sizeof(void *)), uninitialised; release with free(). */
void *xaligned_alloc(size_t align, size_t n, size_t size);
/* The same, zeroed: cache-line aligned tables. */
void *xaligned_calloc(size_t align, size_t n, size_t size)
    __attribute__((malloc, alloc_size(2, 3), returns_nonnull));
void *xrealloc(void *p, size_t size) __attribute__((alloc_size(2), returns_nonnull));
char *xstrdup(const char *s) __attribute__((malloc, returns_nonnull));
char *xstrndup(const char *s, size_t n) __attribute__((malloc, returns_nonnull));
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2), returns_nonnull));
char *xvasprintf(const char *fmt, va_list ap)
    __attribute__((format(printf, 1, 0), returns_nonnull));

/* Sets the process's allocator up for spate, before any thread starts
 * (spate_cli_main calls it first): blocks up to 32 MB come from malloc's
 * heaps, not from an mmap each (see alloc.c). */
void alloc_init_process(void);

/* Grows *items (of *cap elements of elem_size bytes) to hold at least need. */
void xgrow(void **items, size_t *cap, size_t need, size_t elem_size);

#endif
