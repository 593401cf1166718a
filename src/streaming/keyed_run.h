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
#define KEYED_RUN_RING  16 /* a power of two over KEYED_RUN_AHEAD */

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

/* Told the key hash of a record of a run of records of their own lengths
 * KEYED_RUN_AHEAD records before its turn, with data the run's caller
 * prepared: fetches what its processing will read, and returns what that
 * needs to find it again (its state's map), or NULL. */
typedef const void *(*keyed_run_find_fn)(const void *data, uint64_t key_hash);
/* Handed the body of one keyed element of such a run (the record's
 * serialized bytes, len of them), its meta, and what find returned for
 * it: false when the body does not read, which ends the run there (the
 * element path reports it). */
typedef bool (*keyed_run_body_fn)(struct stream_operator *op, const void *data, const void *found,
                                  const uint8_t *body, size_t len, const struct record_meta *meta);

/* A run of keyed records of a type that is not plain (each its own
 * length), from *posp on, up to max of them, until anything else or a body
 * that does not read: each element read once, KEYED_RUN_AHEAD elements
 * before its turn, when find (NULL: none) is told its key hash; then its
 * body handed to process. Both inlined when the caller's are known. */
static SPATE_INLINE int
keyed_run_bodies(struct stream_operator *op, keyed_run_body_fn process, keyed_run_find_fn find,
                 const void *data, const uint8_t **posp, const uint8_t *end, int max)
{
    struct record_meta meta = { .has_key_hash = true };
    /* The elements read ahead, by their index in the run modulo
     * KEYED_RUN_RING: each one's key hash, end, and what find said. */
    uint64_t hashes[KEYED_RUN_RING];
    const uint8_t *ends[KEYED_RUN_RING];
    const void *found[KEYED_RUN_RING];
    const uint8_t *pos = *posp, *far = pos;
    int k = 0, nfar = 0;

    _Static_assert(KEYED_RUN_RING > KEYED_RUN_AHEAD, "the ring holds the elements ahead");
    while (k < max) {
        unsigned at = (unsigned)k % KEYED_RUN_RING;
        const uint8_t *next;
        uint32_t hdr;

        while (nfar <= k + KEYED_RUN_AHEAD &&
               keyed_run_hash_at(far, end, &hashes[(unsigned)nfar % KEYED_RUN_RING], &far)) {
            unsigned f = (unsigned)nfar % KEYED_RUN_RING;

            found[f] = find != NULL ? find(data, hashes[f]) : NULL;
            ends[f] = far;
            nfar++;
        }
        if (nfar == k) /* the element at pos is not a whole keyed one */
            break;
        next = ends[at];
        hdr = pos[RECORD_LENGTH_BYTES] == ELEMENT_KEYED_TS_TAG ? ELEMENT_KEYED_TS_HEADER
                                                               : ELEMENT_KEYED_HEADER;
        meta.timestamp = RECORD_NO_TIMESTAMP;
        if (hdr == ELEMENT_KEYED_TS_HEADER)
            memcpy(&meta.timestamp, pos + RECORD_LENGTH_BYTES + 1, 8);
        meta.key_hash = hashes[at];
        if (!process(op, data, found[at], pos + RECORD_LENGTH_BYTES + hdr,
                     (size_t)(next - pos) - RECORD_LENGTH_BYTES - hdr, &meta))
            break;
        pos = next;
        record_reader_read_ahead(pos);
        k++;
    }
    *posp = pos;
    return k;
}

/* keyed_run_var's: the type's deserializer, where it reads a record, and
 * the state its find fetches ahead. */
struct keyed_run_var_data {
    const struct spate_type *type;
    types_deserialize_fn de;
    void *in_rec;
    keyed_run_ahead_fn ahead;
    const void *ahead_data;
};

static SPATE_INLINE const void *
keyed_run_var_find(const void *data, uint64_t key_hash)
{
    const struct keyed_run_var_data *d = data;

    d->ahead(d->ahead_data, key_hash);
    return NULL;
}

static SPATE_INLINE bool
keyed_run_var_one(struct stream_operator *op, const void *data, const void *found,
                  const uint8_t *body, size_t len, const struct record_meta *meta)
{
    const struct keyed_run_var_data *d = data;

    UNUSED(found);
    if (d->de(d->type, body, len, d->in_rec) != 0)
        return false;
    operator_process(op, d->in_rec, meta);
    return true;
}

/* keyed_run_bodies of records deserialized into in_rec by the type's
 * deserializer de (types_codec_of) and handed to operator_process, each
 * key's state fetched by ahead. */
static SPATE_INLINE int
keyed_run_var(struct stream_operator *op, const struct spate_type *type, types_deserialize_fn de,
              keyed_run_ahead_fn ahead, const void *ahead_data, void *in_rec, const uint8_t **posp,
              const uint8_t *end, int max)
{
    struct keyed_run_var_data d = { type, de, in_rec, ahead, ahead_data };

    return keyed_run_bodies(op, keyed_run_var_one, keyed_run_var_find, &d, posp, end, max);
}

#endif
