/* Record deserializers and the record reader (record_reader.h). Task thread
 * only. Records are returned in place; only a record that spans buffers is
 * copied, into a spill area that grows to the largest such record as its
 * bytes arrive: a length prefix alone (a corrupt stream, a peer that stops)
 * reserves nothing. */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/util.h"
#include "network/record_reader.h"
#include "network/record_writer.h"

void
record_deserializer_init(struct record_deserializer *d)
{
    memset(d, 0, sizeof *d);
}

void
record_deserializer_release(struct record_deserializer *d)
{
    if (d->buf != NULL)
        net_buffer_recycle(d->buf);
    free(d->spill);
    memset(d, 0, sizeof *d);
}

void
record_deserializer_set_buffer(struct record_deserializer *d, struct net_buffer *buf)
{
    SPATE_ASSERT(d->buf == NULL);
    d->buf = buf;
    d->pos = buf->data;
    d->end = buf->data + buf->size;
}

/* Appends n bytes of the spanning record to the spill area, which grows to
 * at least twice its size, at most to the record's length. */
static void
spill_append(struct record_deserializer *d, const uint8_t *bytes, size_t n)
{
    size_t need = d->spill_len + n;

    if (n == 0)
        return;
    if (need > d->spill_cap) {
        size_t cap = MAX(need, MIN(2 * (size_t)d->spill_cap, (size_t)d->spill_need));

        d->spill = xrealloc(d->spill, cap);
        d->spill_cap = (uint32_t)cap;
    }
    memcpy(d->spill + d->spill_len, bytes, n);
    d->spill_len = (uint32_t)need;
}

static int
ds_used_up(struct record_deserializer *d)
{
    if (d->buf != NULL) {
        net_buffer_recycle(d->buf);
        d->buf = NULL;
    }
    d->pos = d->end = NULL;
    return 0;
}

int
record_deserializer_next(struct record_deserializer *d, const uint8_t **rec, uint32_t *len,
                         spate_error *err)
{
    size_t avail = (size_t)(d->end - d->pos);
    uint32_t l;

    if (d->spilling) {
        size_t n = MIN(avail, (size_t)(d->spill_need - d->spill_len));

        spill_append(d, d->pos, n);
        d->pos += n;
        if (d->spill_len < d->spill_need)
            return ds_used_up(d);
        d->spilling = 0;
        *rec = d->spill;
        *len = d->spill_need;
        return 1;
    }
    if (likely(avail >= RECORD_LENGTH_BYTES)) {
        memcpy(&l, d->pos, RECORD_LENGTH_BYTES);
        if (likely(l <= avail - RECORD_LENGTH_BYTES)) {
            *rec = d->pos + RECORD_LENGTH_BYTES;
            *len = l;
            d->pos += RECORD_LENGTH_BYTES + l;
            return 1;
        }
        if (l > RECORD_MAX_BYTES)
            return spate_error_set(err, SPATE_EPROTO,
                                   "corrupt record stream: a record of %u bytes (at most %u)", l,
                                   RECORD_MAX_BYTES);
        /* Spans into the next buffer(s). */
        d->spill_len = 0;
        d->spill_need = l;
        spill_append(d, d->pos + RECORD_LENGTH_BYTES, avail - RECORD_LENGTH_BYTES);
        d->spilling = 1;
        return ds_used_up(d);
    }
    if (avail != 0)
        return spate_error_set(err, SPATE_EPROTO,
                               "corrupt record stream: %zu stray bytes at the end of a buffer",
                               avail);
    return ds_used_up(d);
}

/* ---- the record reader ---- */

struct record_reader *
record_reader_new(struct input_gate *g, struct task_io_metrics *metrics)
{
    struct record_reader *r = xcalloc(1, sizeof *r);

    r->gate = g;
    r->metrics = metrics;
    r->counts_records = metrics != NULL && !metrics->task_counts_records;
    r->num_channels = input_gate_num_channels(g);
    r->ds = xcalloc(r->num_channels, sizeof *r->ds);
    return r;
}

void
record_reader_free(struct record_reader *r)
{
    if (r == NULL)
        return;
    for (uint32_t i = 0; i < r->num_channels; i++)
        record_deserializer_release(&r->ds[i]);
    if (r->event != NULL)
        net_buffer_recycle(r->event);
    free(r->ds);
    free(r);
}

int
record_reader_next_slow(struct record_reader *r, struct record_view *out, spate_error *err)
{
    if (r->event != NULL) {
        net_buffer_recycle(r->event);
        r->event = NULL;
    }
    for (;;) {
        struct net_buffer *buf;
        uint32_t ch;
        int rc;

        if (r->has_current) {
            rc = record_deserializer_next(&r->ds[r->current], &out->data, &out->len, err);
            if (rc == 1) {
                out->channel = r->current;
                out->event_type = 0;
                if (r->counts_records)
                    metric_counter_add(&r->metrics->num_records_in, 1);
                return RECORD_READER_RECORD;
            }
            if (rc < 0)
                return spate_error_wrap(err, "input channel %u", r->current);
            r->has_current = false;
        }
        rc = input_gate_poll(r->gate, &buf, &ch, err);
        if (rc == INPUT_GATE_END)
            return RECORD_READER_END;
        if (rc != INPUT_GATE_BUFFER)
            return rc; /* NONE or an error */
        if (buf->type == NET_BUFFER_EVENT) {
            uint32_t type = net_buffer_event_type(buf);

            if (record_deserializer_has_partial(&r->ds[ch])) {
                net_buffer_recycle(buf);
                return spate_error_set(err, SPATE_EPROTO,
                                       "input channel %u: event %u inside a spanning record", ch,
                                       type);
            }
            if (type == NET_EVENT_END_OF_PARTITION) {
                net_buffer_recycle(buf);
                continue;
            }
            r->event = buf;
            out->data = buf->data + 4;
            out->len = buf->size - 4;
            out->channel = ch;
            out->event_type = type;
            return RECORD_READER_EVENT;
        }
        record_deserializer_set_buffer(&r->ds[ch], buf);
        r->current = ch;
        r->has_current = true;
    }
}
