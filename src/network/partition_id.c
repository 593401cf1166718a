/* Result partition ids (partition_id.h). */
#include <stdio.h>
#include <string.h>

#include "network/partition_id.h"

void
result_partition_id_random(struct result_partition_id *id)
{
    id_random(&id->partition);
    id_random(&id->producer);
}

bool
result_partition_id_equal(const struct result_partition_id *a, const struct result_partition_id *b)
{
    return id_equal(&a->partition, &b->partition) && id_equal(&a->producer, &b->producer);
}

int
result_partition_id_parse(const char *text, struct result_partition_id *id, spate_error *err)
{
    char part[ID_HEX_LEN + 1];
    size_t len = strnlen(text, RESULT_PARTITION_ID_TEXT_LEN + 1);

    if (len != RESULT_PARTITION_ID_TEXT_LEN || text[ID_HEX_LEN] != '@')
        return spate_error_set(err, SPATE_EINVAL,
                               "malformed result partition id '%.80s': expected "
                               "<32 hex digits>@<32 hex digits>",
                               text);
    memcpy(part, text, ID_HEX_LEN);
    part[ID_HEX_LEN] = '\0';
    if (id_parse(part, &id->partition, err) != 0)
        return SPATE_EINVAL;
    return id_parse(text + ID_HEX_LEN + 1, &id->producer, err);
}

struct result_partition_id_text
result_partition_id_str(const struct result_partition_id *id)
{
    struct result_partition_id_text t;

    id_format(&id->partition, t.s);
    t.s[ID_HEX_LEN] = '@';
    id_format(&id->producer, t.s + ID_HEX_LEN + 1);
    return t;
}
