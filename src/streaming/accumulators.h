/* Accumulators: named counters that user functions add to (spate_counter),
 * per task; the task reports them when it ends and the JobMaster sums them
 * over subtasks into the job's result. Task thread only. */
#ifndef SPATE_STREAMING_ACCUMULATORS_H
#define SPATE_STREAMING_ACCUMULATORS_H

#include <stddef.h>
#include <stdint.h>

struct spate_counter {
    char *name;
    int64_t value;
};

struct accumulators {
    struct spate_counter **counters;
    size_t count, cap;
};

void accumulators_init(struct accumulators *a);
void accumulators_release(struct accumulators *a);
/* The counter named name, made on first use. */
struct spate_counter *accumulators_counter(struct accumulators *a, const char *name);
/* Adds every counter of from into to (the JobMaster's sum). */
void accumulators_merge(struct accumulators *to, const struct accumulators *from);

#endif
