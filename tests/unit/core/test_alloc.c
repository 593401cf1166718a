/* Unit tests of src/core/alloc.c. */
#include <criterion/criterion.h>
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
