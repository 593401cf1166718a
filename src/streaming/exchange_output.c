/* Exchange outputs (exchange_output.h). */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/util.h"
#include "streaming/exchange_output.h"
#include "streaming/keys.h"
#include "streaming/stream_element.h"
#include "streaming/types.h"

/* Writes one element to one channel. */
static void
write_element(struct exchange_output *x, int channel, const void *rec,
              const struct record_meta *meta)
{
    size_t hdr = element_record_header_size(meta);
    size_t room = 0, n;
    uint8_t *at = x->ops->reserve(x->sink, channel, &room);
    int rc;

    if (at != NULL && room > hdr) {
        n = types_serialize(x->type, rec, at + hdr, room - hdr);
        if (n <= room - hdr) {
            element_write_record_header(meta, at);
            rc = x->ops->commit(x->sink, channel, hdr + n);
            if (rc != 0 && x->error == 0)
                x->error = rc;
            return;
        }
    } else {
        n = types_serialize(x->type, rec, NULL, 0);
    }
    /* Does not fit what is left of the buffer: spill and span. */
    if (hdr + n > x->spill_cap) {
        x->spill_cap = (hdr + n) * 2;
        x->spill = xrealloc(x->spill, x->spill_cap);
    }
    element_write_record_header(meta, x->spill);
    types_serialize(x->type, rec, x->spill + hdr, n);
    rc = x->ops->emit(x->sink, channel, x->spill, hdr + n);
    if (rc != 0 && x->error == 0)
        x->error = rc;
}

static void
exchange_collect(struct output *self, const void *rec, const struct record_meta *meta)
{
    struct exchange_output *x = (struct exchange_output *)self;
    struct record_meta m = *meta;
    int channel;

    switch (x->partitioner) {
    case PARTITIONER_HASH: {
        spate_bytes key =
            keys_extract(&x->key, x->type, x->ctx, rec, x->key_scratch, sizeof x->key_scratch);

        m.key_hash = keys_hash(key);
        m.has_key_hash = true;
        channel = keys_operator_index(keys_key_group(m.key_hash, x->max_parallelism),
                                      x->max_parallelism, x->nchannels);
        break;
    }
    case PARTITIONER_BROADCAST:
        m.has_key_hash = false;
        for (int c = 0; c < x->nchannels; c++)
            write_element(x, c, rec, &m);
        return;
    case PARTITIONER_REBALANCE:
    case PARTITIONER_RESCALE:
        /* Round robin over the channels: all consumers, or the pointwise
         * share (rescale). */
        channel = x->next_channel;
        if (++x->next_channel == x->nchannels)
            x->next_channel = 0;
        m.has_key_hash = false;
        break;
    case PARTITIONER_SHUFFLE:
        x->random ^= x->random << 13;
        x->random ^= x->random >> 7;
        x->random ^= x->random << 17;
        channel = (int)(x->random % (uint64_t)x->nchannels);
        m.has_key_hash = false;
        break;
    case PARTITIONER_FORWARD: /* the one pointwise consumer */
    case PARTITIONER_GLOBAL:  /* consumer subtask 0 */
    default:
        channel = 0;
        m.has_key_hash = false;
        break;
    }
    write_element(x, channel, rec, &m);
}

void
exchange_output_init(struct exchange_output *x, const struct jg_edge *edge,
                     const struct spate_type *type, int nchannels, int consumer_max_parallelism,
                     int subtask, const struct exchange_sink_ops *ops, void *sink,
                     struct spate_ctx *ctx)
{
    memset(x, 0, sizeof *x);
    x->base.collect = exchange_collect;
    x->ops = ops;
    x->sink = sink;
    x->partitioner = edge->partitioner;
    x->key = edge->key;
    x->type = type;
    x->nchannels = nchannels;
    x->max_parallelism = consumer_max_parallelism;
    x->ctx = ctx;
    x->random = 0x9E3779B97F4A7C15ULL ^ (uint64_t)(subtask + 1);
    /* Round robin starts at a different channel per producer, so that
     * producers spread their first records, as Flink's random start. */
    if (nchannels > 0)
        x->next_channel = (int)((uint64_t)subtask * 7919 % (uint64_t)nchannels);
}

void
exchange_output_release(struct exchange_output *x)
{
    free(x->spill);
    x->spill = NULL;
}
