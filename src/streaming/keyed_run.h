/* A run of keyed plain records read where they are in the current input
 * buffer: each a u32 length and the element (its tag, its timestamp when it
 * has one, the key's hash, the record's bytes), copied into an aligned
 * record and handed to a process function, until anything else. The task's
 * loop over keyed records uses it with operator_process; an operator that
 * offers process_keyed_run (operator.h) instantiates it with its own process
 * function, which is then inlined into the loop. Task thread only. */
#ifndef SPATE_STREAMING_KEYED_RUN_H
#define SPATE_STREAMING_KEYED_RUN_H

#include "core/bytes.h"
#include "core/util.h"
#include "network/record_reader.h"
#include "streaming/operator.h"
#include "streaming/stream_element.h"

typedef void (*keyed_run_process_fn)(struct stream_operator *op, const void *rec,
                                     const struct record_meta *meta);
/* Told the key hash of a record KEYED_RUN_AHEAD records ahead (when it is in
 * the buffer: the records of a run have one length), so that it can fetch
 * what that record's processing will read, with data the run's caller
 * prepared; NULL: nothing. */
typedef void (*keyed_run_ahead_fn)(const void *data, uint64_t key_hash);

#define KEYED_RUN_AHEAD 8

/* The records of one shape (tag, header bytes) from *posp on, up to max of
 * them; *posp ends past the last. */
static SPATE_INLINE int
keyed_run(struct stream_operator *op, keyed_run_process_fn process, keyed_run_ahead_fn ahead,
          const void *ahead_data, void *in_rec, size_t plain, const uint8_t **posp,
          const uint8_t *end, int max, uint8_t tag, uint32_t hdr)
{
    struct record_meta meta = { .timestamp = RECORD_NO_TIMESTAMP, .has_key_hash = true };
    uint32_t len = (uint32_t)(hdr + plain);
    const uint8_t *pos = *posp;
    int k = 0;

    while (k < max && (size_t)(end - pos) >= RECORD_LENGTH_BYTES + len &&
           bytes_load32(pos) == len && pos[RECORD_LENGTH_BYTES] == tag) {
        const uint8_t *el = pos + RECORD_LENGTH_BYTES;

        if (ahead != NULL) {
            const uint8_t *far = pos + KEYED_RUN_AHEAD * (RECORD_LENGTH_BYTES + len);

            /* A guess: the record there may be of another shape. */
            if ((size_t)(end - pos) >= (KEYED_RUN_AHEAD + 1) * (RECORD_LENGTH_BYTES + len))
                ahead(ahead_data, bytes_load64(far + RECORD_LENGTH_BYTES + hdr - 8));
        }
        if (hdr == ELEMENT_KEYED_TS_HEADER)
            memcpy(&meta.timestamp, el + 1, 8);
        memcpy(&meta.key_hash, el + hdr - 8, 8);
        bytes_copy(in_rec, el + hdr, plain);
        pos = el + len;
        record_reader_read_ahead(pos);
        k++;
        process(op, in_rec, &meta);
    }
    *posp = pos;
    return k;
}

/* Either shape: with timestamps (timed) or without. */
static SPATE_INLINE int
keyed_run_either(struct stream_operator *op, keyed_run_process_fn process, keyed_run_ahead_fn ahead,
                 const void *ahead_data, void *in_rec, size_t plain, const uint8_t **posp,
                 const uint8_t *end, int max, bool timed)
{
    if (timed)
        return keyed_run(op, process, ahead, ahead_data, in_rec, plain, posp, end, max,
                         ELEMENT_KEYED_TS_TAG, ELEMENT_KEYED_TS_HEADER);
    return keyed_run(op, process, ahead, ahead_data, in_rec, plain, posp, end, max,
                     ELEMENT_KEYED_TAG, ELEMENT_KEYED_HEADER);
}

#endif
