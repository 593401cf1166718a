/* A run of keyed plain records read where they are in the current input
 * buffer: each a u32 length and the element (its tag, its timestamp when it
 * has one, the key's hash, the record's bytes), copied into an aligned
 * record and handed to a process function, until anything else. The task's
 * loop over keyed records uses it with operator_process; an operator that
 * offers process_keyed_run (operator.h) instantiates it with its own process
 * function, which is then inlined into the loop. Task thread only. */
#ifndef SPATE_STREAMING_KEYED_RUN_H
#define SPATE_STREAMING_KEYED_RUN_H

#include <limits.h>

#include "core/bytes.h"
#include "core/util.h"
#include "network/record_reader.h"
#include "streaming/operator.h"
#include "streaming/stream_element.h"
#include "streaming/types.h"

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
    /* Records of this length that the buffer holds from pos on, counted
     * once: the loop then checks each one's length and tag only, and the
     * record KEYED_RUN_AHEAD on is there while k < far_until. */
    size_t fit = (size_t)(end - pos) / (RECORD_LENGTH_BYTES + len);
    int n = max > 0 && (size_t)max > fit ? (int)fit : max;
    int far_until = fit > KEYED_RUN_AHEAD ? (int)MIN(fit - KEYED_RUN_AHEAD, (size_t)INT_MAX) : 0;
    int k = 0;

    while (k < n && bytes_load32(pos) == len && pos[RECORD_LENGTH_BYTES] == tag) {
        const uint8_t *el = pos + RECORD_LENGTH_BYTES;

        /* A guess: the record there may be of another shape. */
        if (ahead != NULL && k < far_until)
            ahead(ahead_data,
                  bytes_load64(el + KEYED_RUN_AHEAD * (RECORD_LENGTH_BYTES + len) + hdr - 8));
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

/* The key hash of the keyed element at pos when it is whole before end,
 * and where the next element starts. */
static SPATE_INLINE bool
keyed_run_hash_at(const uint8_t *pos, const uint8_t *end, uint64_t *key_hash, const uint8_t **next)
{
    uint32_t len, hdr;

    if ((size_t)(end - pos) < RECORD_LENGTH_BYTES + ELEMENT_KEYED_HEADER)
        return false;
    len = bytes_load32(pos);
    if (pos[RECORD_LENGTH_BYTES] == ELEMENT_KEYED_TAG)
        hdr = ELEMENT_KEYED_HEADER;
    else if (pos[RECORD_LENGTH_BYTES] == ELEMENT_KEYED_TS_TAG)
        hdr = ELEMENT_KEYED_TS_HEADER;
    else
        return false;
    if (len < hdr || (size_t)(end - pos) - RECORD_LENGTH_BYTES < len)
        return false;
    *key_hash = bytes_load64(pos + RECORD_LENGTH_BYTES + hdr - 8);
    *next = pos + RECORD_LENGTH_BYTES + len;
    return true;
}

/* A run of keyed records of a type that is not plain (each its own
 * length), deserialized into in_rec by the type's deserializer de
 * (types_codec_of) and handed to operator_process, from
 * *posp on, up to max of them, until anything else or a record that does
 * not read (left to the element path, which reports it); each key's state
 * fetched by ahead KEYED_RUN_AHEAD records before its record. */
static SPATE_INLINE int
keyed_run_var(struct stream_operator *op, const struct spate_type *type, types_deserialize_fn de,
              keyed_run_ahead_fn ahead, const void *ahead_data, void *in_rec, const uint8_t **posp,
              const uint8_t *end, int max)
{
    struct record_meta meta = { .has_key_hash = true };
    const uint8_t *pos = *posp, *far = pos;
    uint64_t far_hash;
    int k = 0, nfar = 0;

    while (k < max) {
        uint64_t key_hash;
        const uint8_t *next;
        uint32_t hdr;

        /* The element KEYED_RUN_AHEAD on: its key's state is fetched. */
        while (ahead != NULL && nfar <= k + KEYED_RUN_AHEAD &&
               keyed_run_hash_at(far, end, &far_hash, &far)) {
            ahead(ahead_data, far_hash);
            nfar++;
        }
        if (!keyed_run_hash_at(pos, end, &key_hash, &next))
            break;
        hdr = pos[RECORD_LENGTH_BYTES] == ELEMENT_KEYED_TS_TAG ? ELEMENT_KEYED_TS_HEADER
                                                               : ELEMENT_KEYED_HEADER;
        if (de(type, pos + RECORD_LENGTH_BYTES + hdr,
               (size_t)(next - pos) - RECORD_LENGTH_BYTES - hdr, in_rec) != 0)
            break;
        meta.timestamp = RECORD_NO_TIMESTAMP;
        if (hdr == ELEMENT_KEYED_TS_HEADER)
            memcpy(&meta.timestamp, pos + RECORD_LENGTH_BYTES + 1, 8);
        meta.key_hash = key_hash;
        pos = next;
        record_reader_read_ahead(pos);
        k++;
        operator_process(op, in_rec, &meta);
    }
    *posp = pos;
    return k;
}

#endif
