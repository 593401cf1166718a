/* Result partition ids, as Flink's ResultPartitionID: the intermediate result
 * partition id plus the execution attempt id of its producer, so that a
 * restarted producer's partition is a different one. Plain values; any
 * thread. Text form: "<partition hex>@<attempt hex>". */
#ifndef SPATE_NETWORK_PARTITION_ID_H
#define SPATE_NETWORK_PARTITION_ID_H

#include <stdbool.h>

#include "core/id.h"

#define RESULT_PARTITION_ID_BYTES    (2 * ID_BYTES)
#define RESULT_PARTITION_ID_TEXT_LEN (2 * ID_HEX_LEN + 1)

struct result_partition_id {
    spate_id partition; /* IntermediateResultPartitionID */
    spate_id producer;  /* ExecutionAttemptID of the producing subtask */
};

struct result_partition_id_text {
    char s[RESULT_PARTITION_ID_TEXT_LEN + 1];
};

void result_partition_id_random(struct result_partition_id *id);
bool result_partition_id_equal(const struct result_partition_id *a,
                               const struct result_partition_id *b);
int result_partition_id_parse(const char *text, struct result_partition_id *id, spate_error *err);
struct result_partition_id_text result_partition_id_str(const struct result_partition_id *id);

#endif
