/* 16-byte random identifiers with the 32-lowercase-hex text form Flink uses
 * for JobID, AllocationID, JobVertexID, ResourceID and friends. Plain values:
 * copy them freely; thread-safe. */
#ifndef SPATE_CORE_ID_H
#define SPATE_CORE_ID_H

#include <stdbool.h>
#include <stdint.h>

#include <spate/error.h>

#define ID_BYTES   16
#define ID_HEX_LEN 32

typedef struct spate_id {
    uint8_t bytes[ID_BYTES];
} spate_id;

/* Text form plus its terminating NUL. */
typedef struct id_text {
    char s[ID_HEX_LEN + 1];
} id_text;

/* A fresh random id (getrandom(2)). */
void id_random(spate_id *id);
/* The id whose hex form is `text` (exactly 32 hex digits, any case). */
int id_parse(const char *text, spate_id *id, spate_error *err);
/* Writes the 32 lowercase hex digits and a NUL into out; returns out. */
char *id_format(const spate_id *id, char out[ID_HEX_LEN + 1]);
/* The hex form as a value, for log lines: id_str(&job).s */
id_text id_str(const spate_id *id);

bool id_equal(const spate_id *a, const spate_id *b);
bool id_is_zero(const spate_id *id);
uint64_t id_hash(const spate_id *id);

#endif
