/* The nearest of some names to a name that is not among them: "did you
 * mean ..." for a misspelled configuration key, SQL column or table. */
#ifndef SPATE_CORE_NEAREST_H
#define SPATE_CORE_NEAREST_H

#include <stddef.h>

/* Edit distance (Levenshtein, ASCII case ignored); 99 for names over 127
 * characters. */
int nearest_distance(const char *a, const char *b);
/* The name of names closest to name within max_distance edits (the first
 * of equals), else NULL. */
const char *nearest_name(const char *name, const char *const *names, size_t n, int max_distance);

#endif
