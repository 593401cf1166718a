/* Stream element framing (stream_element.h). */
#include <string.h>

#include "streaming/stream_element.h"

size_t
element_write_watermark(int64_t timestamp, uint8_t out[9])
{
    out[0] = ELEMENT_WATERMARK;
    memcpy(out + 1, &timestamp, 8);
    return 9;
}

size_t
element_write_latency_marker(const struct latency_marker *m,
                             uint8_t out[LATENCY_MARKER_ELEMENT_SIZE])
{
    out[0] = ELEMENT_LATENCY_MARKER;
    memcpy(out + 1, &m->marked_time, 8);
    memcpy(out + 9, m->source_id.bytes, 16);
    memcpy(out + 25, &m->source_subtask, 4);
    return LATENCY_MARKER_ELEMENT_SIZE;
}

/* Watermarks, statuses and latency markers (records are element_read's inline part). */
int
element_read_other(const uint8_t *bytes, size_t len, struct element *e)
{
    uint8_t tag = bytes[0];

    e->kind = (enum element_kind)(tag & ELEMENT_KIND_MASK);
    switch (e->kind) {
    case ELEMENT_WATERMARK:
        if (len != 9 || tag != ELEMENT_WATERMARK)
            return SPATE_EPROTO;
        memcpy(&e->watermark, bytes + 1, 8);
        return 0;
    case ELEMENT_WATERMARK_STATUS:
        if (len != 2 || tag != ELEMENT_WATERMARK_STATUS)
            return SPATE_EPROTO;
        e->idle = bytes[1] != 0;
        return 0;
    case ELEMENT_LATENCY_MARKER:
        if (len != LATENCY_MARKER_ELEMENT_SIZE || tag != ELEMENT_LATENCY_MARKER)
            return SPATE_EPROTO;
        memcpy(&e->latency.marked_time, bytes + 1, 8);
        memcpy(e->latency.source_id.bytes, bytes + 9, 16);
        memcpy(&e->latency.source_subtask, bytes + 25, 4);
        return e->latency.source_subtask >= 0 ? 0 : SPATE_EPROTO;
    case ELEMENT_RECORD:
        break;
    }
    return SPATE_EPROTO;
}

size_t
barrier_encode(const struct barrier *b, uint8_t *out, size_t cap)
{
    size_t n = 24 + b->location_len;

    if (cap < n)
        return n;
    memcpy(out, &b->checkpoint_id, 8);
    memcpy(out + 8, &b->timestamp, 8);
    memcpy(out + 16, &b->type, 4);
    memcpy(out + 20, &b->location_len, 4);
    memcpy(out + 24, b->location, b->location_len);
    return n;
}

int
barrier_decode(const uint8_t *bytes, size_t len, struct barrier *b)
{
    if (len < 24)
        return SPATE_EPROTO;
    memcpy(&b->checkpoint_id, bytes, 8);
    memcpy(&b->timestamp, bytes + 8, 8);
    memcpy(&b->type, bytes + 16, 4);
    memcpy(&b->location_len, bytes + 20, 4);
    if (len - 24 != b->location_len || b->checkpoint_id <= 0)
        return SPATE_EPROTO;
    b->location = (const char *)bytes + 24;
    return 0;
}
