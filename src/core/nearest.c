/* The nearest of some names (nearest.h). */
#include <ctype.h>
#include <string.h>

#include "core/nearest.h"
#include "core/util.h"

int
nearest_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    int row[128], prev;

    if (la >= ARRAY_SIZE(row) || lb >= ARRAY_SIZE(row))
        return 99;
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        prev = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int cur = row[j];
            int cost = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);

            row[j] = MIN(MIN(row[j] + 1, row[j - 1] + 1), prev + cost);
            prev = cur;
        }
    }
    return row[lb];
}

const char *
nearest_name(const char *name, const char *const *names, size_t n, int max_distance)
{
    const char *best = NULL;
    int best_d = max_distance + 1;

    for (size_t i = 0; i < n; i++) {
        int d = nearest_distance(name, names[i]);

        if (d < best_d) {
            best_d = d;
            best = names[i];
        }
    }
    return best;
}
