/* libFuzzer target for the `_metadata` reader (checkpoint/checkpoint_metadata.c):
 * the input both as a whole file and as a message body framed with a valid
 * header and checksum, so that decoding, the handle checks and the path
 * resolution see arbitrary messages. None may crash, leak, or read out of
 * bounds; anything accepted must survive a restore-time file check. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/sha256.h"
#include "checkpoint/checkpoint_metadata.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Checkpoint__CheckpointMetadata *md = NULL;
    uint8_t *framed = malloc(8 + size + SHA256_BYTES);
    spate_error err;

    if (checkpoint_metadata_decode(data, size, "/fuzz/chk-1/_metadata", &md, &err) == 0)
        checkpoint_metadata_free(md);
    memcpy(framed, "SPCK\1\0\0\0", 8);
    memcpy(framed + 8, data, size);
    sha256(framed, 8 + size, framed + 8 + size);
    md = NULL;
    if (checkpoint_metadata_decode(framed, 8 + size + SHA256_BYTES, "/fuzz/chk-1/_metadata", &md,
                                   &err) == 0) {
        /* Every path is absolute now; none exists under /fuzz. */
        checkpoint_metadata_check_files(md, "/fuzz/chk-1/_metadata", &err);
        checkpoint_metadata_free(md);
    }
    free(framed);
    return 0;
}
