/* The record writer (Flink's RecordWriter + BufferBuilder): serializes opaque
 * records (u32 length, bytes; spanning buffers) into each subpartition's
 * current buffer and sends it when full, at the flush deadline the task's own
 * wait serves, after every record (timeout 0) or before an event; waits for a
 * free buffer under backpressure. The producing task's thread owns it. */
#ifndef SPATE_NETWORK_RECORD_WRITER_H
#define SPATE_NETWORK_RECORD_WRITER_H

#include <stdint.h>
#include <string.h>

#include <spate/error.h>

#include "core/util.h"
#include "network/buffer.h"
#include "network/result_partition.h"

#define RECORD_LENGTH_BYTES 4

/* Lengths are stored in the host's order, which the wire format fixes as
 * little-endian: the hot path is a plain store. */
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "spate's data plane assumes a little-endian host"
#endif
/* The largest record a reader accepts: a length above is a corrupt stream. */
#define RECORD_MAX_BYTES (256u * 1024 * 1024)

/* How far ahead record_writer_write_ahead fetches: about ten records of
 * a few dozen bytes, a few hundred nanoseconds at the writer's pace. */
#define RW_WRITE_AHEAD 512

struct rw_channel {
    uint8_t *pos; /* next byte of the current buffer; pos == end: none or full */
    uint8_t *end;
    struct net_buffer *buf;
};

/* Private to record_writer.c but for the inline fast path below. */
struct record_writer {
    struct rw_channel *channels;
    uint32_t num_channels;
    int flush_always;     /* buffer timeout 0 */
    uint64_t timeout_ns;  /* buffer timeout > 0 */
    uint64_t deadline_ns; /* NOTIFIER_FOREVER while nothing waits */
    uint64_t records;     /* emitted, not yet added to the metric */
    struct result_partition *partition;
    struct task_io_metrics *metrics;
    uint8_t *scratch; /* reserve: a record that does not fit the buffer */
    uint32_t scratch_cap;
    uint32_t reserved_channel;
    int reserved_in_scratch;
};

/* buffer_timeout_ms: execution.buffer-timeout (0: flush every record).
 * metrics (may be NULL): numRecordsOut, numBytesOut, back-pressured time. */
int record_writer_new(struct result_partition *rp, int64_t buffer_timeout_ms,
                      struct task_io_metrics *metrics, struct record_writer **out,
                      spate_error *err);
/* Recycles what was never sent (flush or finish first to send it). */
void record_writer_free(struct record_writer *w);

int record_writer_emit_slow(struct record_writer *w, uint32_t channel, const void *record,
                            uint32_t len, spate_error *err);

/* The output past pos, fetched ahead for writing: a buffer's lines were
 * last read by its consumer, as likely as not on another core, and a store
 * to one waits for its ownership (a full store buffer stalls the writer).
 * Once per record written; PREFETCHW, where the hint for writing exists. */
static inline void
record_writer_write_ahead(uint8_t *pos)
{
#if defined(__x86_64__)
    __asm__ volatile("prefetchw %0" : : "m"(*(const uint8_t *)(pos + RW_WRITE_AHEAD)));
#else
    __builtin_prefetch(pos + RW_WRITE_AHEAD, 1, 3);
#endif
}

/* Appends one record to channel (a subpartition index). May wait for a buffer. */
static inline int
record_writer_emit(struct record_writer *w, uint32_t channel, const void *record, uint32_t len,
                   spate_error *err)
{
    struct rw_channel *c = &w->channels[channel];

    if (likely((size_t)(c->end - c->pos) >= (size_t)len + RECORD_LENGTH_BYTES &&
               !w->flush_always)) {
        record_writer_write_ahead(c->pos);
        memcpy(c->pos, &len, RECORD_LENGTH_BYTES); /* little-endian hosts: the wire order */
        memcpy(c->pos + RECORD_LENGTH_BYTES, record, len);
        c->pos += RECORD_LENGTH_BYTES + len;
        w->records++;
        return 0;
    }
    return record_writer_emit_slow(w, channel, record, len, err);
}

/* Each channel's room in its current buffer, where a caller may append
 * whole records itself (u32 length, bytes; pos moves past them, never past
 * end) instead of calling emit: a hash exchange's fast path. NULL when
 * every record must go through emit (a buffer timeout of 0 sends each at
 * once). Records appended so are not counted in numRecordsOut here: the
 * caller counts them. */
static inline struct rw_channel *
record_writer_room(struct record_writer *w)
{
    return w->flush_always ? NULL : w->channels;
}

/* The record to every channel. */
int record_writer_broadcast_emit(struct record_writer *w, const void *record, uint32_t len,
                                 spate_error *err);
/* Zero-copy path: *out points at max_len writable bytes (in the buffer when
 * they fit, else in a scratch area); record_writer_commit then appends the
 * first len of them as a record. Nothing else may be called in between. */
int record_writer_reserve(struct record_writer *w, uint32_t channel, uint32_t max_len,
                          uint8_t **out, spate_error *err);
int record_writer_commit(struct record_writer *w, uint32_t len, spate_error *err);

/* Flushes every channel, then appends the event (u32 type >=
 * NET_EVENT_USER_MIN, payload) to every channel as its own buffer, in order
 * with the records: checkpoint barriers and the like. */
int record_writer_broadcast_event(struct record_writer *w, uint32_t type, const void *payload,
                                  uint32_t len, spate_error *err);
/* Sends every partly filled buffer now. */
int record_writer_flush_all(struct record_writer *w, spate_error *err);
/* When the oldest unsent record's buffer must go (NOTIFIER_FOREVER: none);
 * the task loop waits no longer than this. */
static inline uint64_t
record_writer_next_deadline(const struct record_writer *w)
{
    return w->deadline_ns;
}
/* Flushes when now_ns has reached the deadline. */
int record_writer_flush_due(struct record_writer *w, uint64_t now_ns, spate_error *err);
/* Flushes, then ends every subpartition (end-of-partition event). */
int record_writer_finish(struct record_writer *w, spate_error *err);

#endif
