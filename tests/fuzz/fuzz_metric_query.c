/* libFuzzer target for the query parameters of the REST metric handlers:
 * the input's lines are get, agg and subtasks of one request, answered over
 * a small metric store. Nothing may crash, leak or read out of bounds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rest/metric_store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1), *get, *agg = NULL, *subtasks = NULL, *nl;
    struct metric_component a = { 0 }, b = { 0 };
    const struct metric_component *cs[] = { &a, NULL, &b };
    spate_error err;
    bool selected[3];
    unsigned aggs;

    memcpy(text, data, size);
    text[size] = '\0';
    get = text;
    if ((nl = strchr(get, '\n')) != NULL) {
        *nl = '\0';
        agg = nl + 1;
        if ((nl = strchr(agg, '\n')) != NULL) {
            *nl = '\0';
            subtasks = nl + 1;
        }
    }
    metric_component_put(&a, "numRecordsIn", "10");
    metric_component_put(&a, "name", "text");
    metric_component_put(&b, "numRecordsIn", "1e308");
    metric_component_put(&b, "busyTimeMsPerSecond", "nan");
    if (metric_parse_aggregations(agg, &aggs, &err) == 0 &&
        metric_parse_subtasks(subtasks, selected, 3, &err) == 0) {
        json_decref(metric_json_aggregate(cs, 3, get, aggs));
        json_decref(metric_json_values(&a, get));
    }
    metric_component_release(&a);
    metric_component_release(&b);
    free(text);
    return 0;
}
