/* Reading records back: a per-channel deserializer (Flink's
 * SpillingAdaptiveSpanningRecordDeserializer) that returns records in place and
 * reassembles those spanning buffers, and a record reader over an input gate.
 * A record stays valid until the next call. The consuming task's thread owns
 * both. A corrupt stream is an error, never a crash. */
#ifndef SPATE_NETWORK_RECORD_READER_H
#define SPATE_NETWORK_RECORD_READER_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <spate/error.h>

#include "core/util.h"
#include "metrics/task_metrics.h"
#include "network/buffer.h"
#include "network/input_gate.h"
#include "network/record_writer.h"

struct record_deserializer {
    struct net_buffer *buf; /* being read; recycled when used up */
    const uint8_t *pos, *end;
    uint8_t *spill; /* a record spanning buffers */
    uint32_t spill_cap;
    uint32_t spill_len;  /* bytes gathered */
    uint32_t spill_need; /* the record's length; 0: no partial record */
    int spilling;
};

void record_deserializer_init(struct record_deserializer *d);
/* Recycles what it holds. */
void record_deserializer_release(struct record_deserializer *d);
/* Hands over a data buffer; the previous one must be used up. */
void record_deserializer_set_buffer(struct record_deserializer *d, struct net_buffer *buf);
/* 1: *rec and *len are the next record; 0: the buffer is used up (and recycled);
 * SPATE_EPROTO: a corrupt stream. */
int record_deserializer_next(struct record_deserializer *d, const uint8_t **rec, uint32_t *len,
                             spate_error *err);
/* True while a record spanning buffers waits for its rest. */
static inline int
record_deserializer_has_partial(const struct record_deserializer *d)
{
    return d->spilling;
}

enum {
    RECORD_READER_NONE = 0,   /* nothing now: wait on the task's notifier */
    RECORD_READER_RECORD = 1, /* out->data/len is a record of out->channel */
    RECORD_READER_EVENT = 2,  /* out->event_type and payload data/len of out->channel */
    RECORD_READER_END = 3,    /* every channel has ended */
};

struct record_view {
    const uint8_t *data;
    uint32_t len;
    uint32_t channel;
    uint32_t event_type;
};

/* Private to record_reader.c but for the inline fast path below. */
struct record_reader {
    struct input_gate *gate;
    struct task_io_metrics *metrics;
    struct record_deserializer *ds; /* per channel */
    uint32_t num_channels;
    uint32_t current;
    bool has_current;
    bool counts_records;      /* numRecordsIn is counted here (not by the task) */
    struct net_buffer *event; /* returned last time; recycled on the next call */
};

/* metrics (may be NULL): numRecordsIn. */
struct record_reader *record_reader_new(struct input_gate *g, struct task_io_metrics *metrics);
/* Recycles held buffers (call before input_gate_free). */
void record_reader_free(struct record_reader *r);
int record_reader_next_slow(struct record_reader *r, struct record_view *out, spate_error *err);

/* The input past pos, fetched ahead with a non-temporal hint: it is read
 * once, past the L2, which keeps the task's state. Once per record read. */
static inline void
record_reader_read_ahead(const uint8_t *pos)
{
    __builtin_prefetch(pos + 1024, 0, 0);
}

/* Non-blocking; one of RECORD_READER_*, or a negative error (a failed channel,
 * a corrupt stream). End-of-partition events are not returned: a channel's
 * end shows as RECORD_READER_END once all channels have ended. A record
 * wholly inside the current buffer is returned inline. */
static inline int
record_reader_next(struct record_reader *r, struct record_view *out, spate_error *err)
{
    if (likely(r->has_current && r->event == NULL)) {
        struct record_deserializer *d = &r->ds[r->current];
        size_t avail = (size_t)(d->end - d->pos);
        uint32_t l;

        if (likely(!d->spilling && avail >= RECORD_LENGTH_BYTES)) {
            memcpy(&l, d->pos, RECORD_LENGTH_BYTES);
            if (likely(l <= avail - RECORD_LENGTH_BYTES)) {
                record_reader_read_ahead(d->pos);
                out->data = d->pos + RECORD_LENGTH_BYTES;
                out->len = l;
                out->channel = r->current;
                out->event_type = 0;
                d->pos += RECORD_LENGTH_BYTES + l;
                if (r->counts_records)
                    metric_counter_add(&r->metrics->num_records_in, 1);
                return RECORD_READER_RECORD;
            }
        }
    }
    return record_reader_next_slow(r, out, err);
}

/* The unread bytes [*pos, *end) of the current channel's buffer, for a
 * caller that reads whole records there itself (each a u32 length and its
 * bytes), while no record spans buffers and no event is held; *channel is
 * the channel. false: read through record_reader_next. Hand back where the
 * caller stopped, and how many records it read, with record_reader_consumed. */
static inline bool
record_reader_span(struct record_reader *r, const uint8_t **pos, const uint8_t **end,
                   uint32_t *channel)
{
    const struct record_deserializer *d;

    if (!r->has_current || r->event != NULL)
        return false;
    d = &r->ds[r->current];
    if (d->spilling || d->pos == NULL)
        return false;
    *pos = d->pos;
    *end = d->end;
    *channel = r->current;
    return true;
}

static inline void
record_reader_consumed(struct record_reader *r, const uint8_t *pos, uint64_t records)
{
    r->ds[r->current].pos = pos;
    if (r->counts_records && records != 0)
        metric_counter_add(&r->metrics->num_records_in, records);
}

#endif
