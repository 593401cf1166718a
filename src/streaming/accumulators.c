/* Accumulators (accumulators.h). */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "streaming/accumulators.h"

void
accumulators_init(struct accumulators *a)
{
    memset(a, 0, sizeof *a);
}

void
accumulators_release(struct accumulators *a)
{
    for (size_t i = 0; i < a->count; i++) {
        free(a->counters[i]->name);
        free(a->counters[i]);
    }
    free(a->counters);
    accumulators_init(a);
}

struct spate_counter *
accumulators_counter(struct accumulators *a, const char *name)
{
    struct spate_counter *c;

    for (size_t i = 0; i < a->count; i++)
        if (strcmp(a->counters[i]->name, name) == 0)
            return a->counters[i];
    c = xcalloc(1, sizeof *c);
    c->name = xstrdup(name);
    xgrow((void **)&a->counters, &a->cap, a->count + 1, sizeof *a->counters);
    a->counters[a->count++] = c;
    return c;
}

void
accumulators_merge(struct accumulators *to, const struct accumulators *from)
{
    for (size_t i = 0; i < from->count; i++)
        accumulators_counter(to, from->counters[i]->name)->value += from->counters[i]->value;
}
