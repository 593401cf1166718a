/* Stream elements on the wire (Flink's StreamElement serialization): each
 * network record is one element, a tag byte and its body.
 *
 *   record:     tag RECORD [| HAS_TIMESTAMP] [| HAS_KEY_HASH],
 *               [i64 timestamp], [u64 key hash], the record's serialized bytes
 *   watermark:  tag WATERMARK, i64 timestamp
 *   status:     tag WATERMARK_STATUS, u8 idle
 *   latency:    tag LATENCY_MARKER, i64 marked time (ms), 16 bytes source
 *               operator id, i32 source subtask (latency_stats.h)
 *
 * Little-endian, unaligned. The key hash travels with a keyed record so the
 * consumer never hashes the key again. Stateless. */
#ifndef SPATE_STREAMING_STREAM_ELEMENT_H
#define SPATE_STREAMING_STREAM_ELEMENT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/util.h"
#include "streaming/latency_stats.h"
#include "streaming/operator.h"

enum element_kind {
    ELEMENT_RECORD = 0,
    ELEMENT_WATERMARK = 1,
    ELEMENT_WATERMARK_STATUS = 2,
    ELEMENT_LATENCY_MARKER = 3,
};

#define ELEMENT_KIND_MASK     0x07
#define ELEMENT_HAS_TIMESTAMP 0x08
#define ELEMENT_HAS_KEY_HASH  0x10

/* Bytes of a record element's header for meta. */
static inline size_t
element_record_header_size(const struct record_meta *meta)
{
    return 1 + (meta->timestamp != RECORD_NO_TIMESTAMP ? 8 : 0) + (meta->has_key_hash ? 8 : 0);
}

/* Writes a record element's header into out (element_record_header_size
 * bytes); the serialized record follows it. */
static inline size_t
element_write_record_header(const struct record_meta *meta, uint8_t *out)
{
    uint8_t tag = ELEMENT_RECORD;
    size_t n = 1;

    if (meta->timestamp != RECORD_NO_TIMESTAMP) {
        tag |= ELEMENT_HAS_TIMESTAMP;
        memcpy(out + n, &meta->timestamp, 8);
        n += 8;
    }
    if (meta->has_key_hash) {
        tag |= ELEMENT_HAS_KEY_HASH;
        memcpy(out + n, &meta->key_hash, 8);
        n += 8;
    }
    out[0] = tag;
    return n;
}

size_t element_write_watermark(int64_t timestamp, uint8_t out[9]);
size_t element_write_latency_marker(const struct latency_marker *m,
                                    uint8_t out[LATENCY_MARKER_ELEMENT_SIZE]);

struct element {
    enum element_kind kind;
    struct record_meta meta;
    const uint8_t *body; /* records: the serialized record */
    size_t body_len;
    int64_t watermark;
    int idle;
    struct latency_marker latency;
};

/* The shapes of most records after a keyBy: the tag, the timestamp (when
 * the record has one) and the key hash, then the record's bytes. */
#define ELEMENT_KEYED_TS_TAG    (ELEMENT_RECORD | ELEMENT_HAS_TIMESTAMP | ELEMENT_HAS_KEY_HASH)
#define ELEMENT_KEYED_TS_HEADER 17
#define ELEMENT_KEYED_TAG       (ELEMENT_RECORD | ELEMENT_HAS_KEY_HASH)
#define ELEMENT_KEYED_HEADER    9

int element_read_other(const uint8_t *bytes, size_t len, struct element *e);

/* Parses one element: SPATE_EPROTO when malformed. Records inline (once per record
 * on the consumer), the rest out of line. */
static inline int
element_read(const uint8_t *bytes, size_t len, struct element *e)
{
    uint8_t tag;
    size_t n = 1;

    if (len < 1)
        return SPATE_EPROTO;
    tag = bytes[0];
    if (likely(tag == ELEMENT_KEYED_TS_TAG && len >= ELEMENT_KEYED_TS_HEADER)) {
        /* A keyed record with its time: the shape of most. */
        e->kind = ELEMENT_RECORD;
        memcpy(&e->meta.timestamp, bytes + 1, 8);
        memcpy(&e->meta.key_hash, bytes + 9, 8);
        e->meta.has_key_hash = true;
        e->body = bytes + ELEMENT_KEYED_TS_HEADER;
        e->body_len = len - ELEMENT_KEYED_TS_HEADER;
        return 0;
    }
    if ((tag & ELEMENT_KIND_MASK) != ELEMENT_RECORD)
        return element_read_other(bytes, len, e);
    if (tag & ~(ELEMENT_KIND_MASK | ELEMENT_HAS_TIMESTAMP | ELEMENT_HAS_KEY_HASH))
        return SPATE_EPROTO;
    e->kind = ELEMENT_RECORD;
    e->meta.timestamp = RECORD_NO_TIMESTAMP;
    e->meta.has_key_hash = false;
    if (tag & ELEMENT_HAS_TIMESTAMP) {
        if (len < n + 8)
            return SPATE_EPROTO;
        memcpy(&e->meta.timestamp, bytes + n, 8);
        n += 8;
    }
    if (tag & ELEMENT_HAS_KEY_HASH) {
        if (len < n + 8)
            return SPATE_EPROTO;
        memcpy(&e->meta.key_hash, bytes + n, 8);
        e->meta.has_key_hash = true;
        n += 8;
    }
    e->body = bytes + n;
    e->body_len = len - n;
    return 0;
}

/* A checkpoint barrier (Flink's CheckpointBarrier): a network event of its
 * own (in order with the records of its channel), payload i64 checkpoint
 * id, i64 timestamp, i32 type (checkpoint.proto's CheckpointType), u32
 * length and bytes of the folder the state goes to. */
#define NET_EVENT_CHECKPOINT_BARRIER 16u

struct barrier {
    int64_t checkpoint_id;
    int64_t timestamp;
    int32_t type;
    const char *location; /* not NUL-terminated */
    uint32_t location_len;
};

/* The payload's size, written into out when it has room. */
size_t barrier_encode(const struct barrier *b, uint8_t *out, size_t cap);
/* SPATE_EPROTO when malformed; b->location points into bytes. */
int barrier_decode(const uint8_t *bytes, size_t len, struct barrier *b);

#endif
