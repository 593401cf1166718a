/* Exchange outputs (exchange_output.h). A record is written once per
 * channel: header and serialized bytes straight into the room of the
 * channel's buffer when they fit (no call), else through the sink's
 * reserve and commit (a new buffer, a record spanning buffers). */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/bytes.h"
#include "core/key_group.h"
#include "core/util.h"
#include "streaming/exchange_output.h"
#include "streaming/keys.h"
#include "streaming/stream_element.h"
#include "streaming/types.h"

/* The next of the exchange's xorshift numbers (shuffle, latency markers). */
static inline uint64_t
next_random(struct exchange_output *x)
{
    x->random ^= x->random << 13;
    x->random ^= x->random >> 7;
    x->random ^= x->random << 17;
    return x->random;
}

/* Through the sink's reserve and commit: header and record into the
 * reserved room of their size n. */
static SPATE_NOINLINE void
write_element_slow(struct exchange_output *x, uint32_t channel, const void *rec,
                   const struct record_meta *meta, size_t hdr, size_t n)
{
    uint8_t *at;

    if (x->error.code != 0)
        return;
    at = x->ops->reserve(x->sink, channel, (uint32_t)(hdr + n), &x->error);
    if (at == NULL)
        return;
    element_write_record_header(meta, at);
    x->codec.serialize(x->type, rec, at + hdr, n);
    x->ops->commit(x->sink, (uint32_t)(hdr + n), &x->error);
}

/* Writes one element to one channel: a record not plain serialized straight
 * into the room after its header, its length written once its size is
 * known (the serializer says the size it needs when the room is short). */
static SPATE_INLINE void
write_element(struct exchange_output *x, uint32_t channel, const void *rec,
              const struct record_meta *meta)
{
    size_t hdr = element_record_header_size(meta);
    struct rw_channel *c = x->room != NULL ? &x->room[channel] : NULL;
    size_t room = c != NULL ? (size_t)(c->end - c->pos) : 0, n;
    uint32_t len;

    if (unlikely(room < RECORD_LENGTH_BYTES + hdr)) {
        n = x->plain_size != 0 ? x->plain_size : types_serialized_size(x->type, rec);
        write_element_slow(x, channel, rec, meta, hdr, n);
        return;
    }
    room -= RECORD_LENGTH_BYTES + hdr;
    record_writer_write_ahead(c->pos);
    if (x->plain_size != 0) {
        n = x->plain_size;
        if (unlikely(room < n)) {
            write_element_slow(x, channel, rec, meta, hdr, n);
            return;
        }
        bytes_copy_fields(c->pos + RECORD_LENGTH_BYTES + hdr, rec, n);
    } else {
        n = x->codec.serialize(x->type, rec, c->pos + RECORD_LENGTH_BYTES + hdr, room);
        if (unlikely(n > room)) {
            write_element_slow(x, channel, rec, meta, hdr, n);
            return;
        }
    }
    len = (uint32_t)(hdr + n);
    memcpy(c->pos, &len, RECORD_LENGTH_BYTES);
    element_write_record_header(meta, c->pos + RECORD_LENGTH_BYTES);
    c->pos += RECORD_LENGTH_BYTES + len;
}

/* keyBy: the record goes to the subtask of its key's key group, with the
 * key's hash. */
static SPATE_NOINLINE void
exchange_collect_hash_general(struct exchange_output *x, const void *rec,
                              const struct record_meta *meta)
{
    spate_bytes key = keys_get(&x->key_access, x->ctx, rec, x->key_scratch, sizeof x->key_scratch);
    struct record_meta m;
    uint32_t kg;

    x->records++;
    m.timestamp = meta->timestamp;
    m.key_hash = key_group_hash(key.data, key.len);
    m.has_key_hash = true;
    kg = likely(x->kg_shift >= 0) ? (uint32_t)(m.key_hash & x->kg_mask)
                                  : key_group_of_hash(m.key_hash, (uint32_t)x->max_parallelism);
    write_element(x, x->kg_channel[kg], rec, &m);
}

/* The shape of most, with no call: a plain record with an 8-byte key at a
 * fixed place, into the room of its channel's buffer in
 * element_write_record_header's form (its timestamp, when it has one, and
 * the key's hash); the rest by the general path. */
static void
exchange_collect_hash(struct output *self, const void *rec, const struct record_meta *meta)
{
    struct exchange_output *x = (struct exchange_output *)self;
    const uint8_t *key = (const uint8_t *)rec + x->key_access.offset;
    int64_t ts = meta->timestamp;
    bool timed = ts != RECORD_NO_TIMESTAMP;
    uint32_t hdr = timed ? ELEMENT_KEYED_TS_HEADER : ELEMENT_KEYED_HEADER;
    uint32_t len = hdr + x->plain_size;
    uint64_t key_hash;
    struct rw_channel *c;
    uint8_t *p;

    if (unlikely(!x->keyed8)) {
        exchange_collect_hash_general(x, rec, meta);
        return;
    }
    key_hash = key_group_hash(key, 8);
    c = &x->room[x->kg_channel[key_hash & x->kg_mask]];
    if (unlikely((size_t)(c->end - c->pos) < RECORD_LENGTH_BYTES + len)) {
        exchange_collect_hash_general(x, rec, meta);
        return;
    }
    x->records++;
    p = c->pos;
    record_writer_write_ahead(p);
    memcpy(p, &len, RECORD_LENGTH_BYTES);
    p[RECORD_LENGTH_BYTES] = ELEMENT_KEYED_TAG | (timed ? ELEMENT_HAS_TIMESTAMP : 0);
    /* The timestamp's place, written either way: without a timestamp the
     * key hash goes over it (the room holds both). */
    memcpy(p + RECORD_LENGTH_BYTES + 1, &ts, 8);
    memcpy(p + RECORD_LENGTH_BYTES + hdr - 8, &key_hash, 8);
    bytes_copy_fields(p + RECORD_LENGTH_BYTES + hdr, rec, x->plain_size);
    c->pos = p + RECORD_LENGTH_BYTES + len;
}

/* The run's records from the first on that have room in their channels
 * (and, timed, a timestamp), written as exchange_collect_hash writes one;
 * the number written. No call inside: what stays the same over the run
 * (header, tag, the exchange's tables) stays in registers. timed, plain
 * (the records' size) and one (a single channel, whose room is looked at
 * once for the run) are constants where the caller gives them. */
static SPATE_INLINE int
hash_run_fit(struct exchange_output *x, const uint8_t *rec, size_t stride, const int64_t *ts, int n,
             bool timed, uint32_t plain, bool one)
{
    uint32_t hdr = timed ? ELEMENT_KEYED_TS_HEADER : ELEMENT_KEYED_HEADER;
    uint32_t len = hdr + plain;
    uint8_t tag = ELEMENT_KEYED_TAG | (timed ? ELEMENT_HAS_TIMESTAMP : 0);
    struct rw_channel *room = x->room;
    const uint32_t *kg_channel = x->kg_channel;
    uint64_t mask = x->kg_mask;
    size_t offset = x->key_access.offset;
    uint8_t *pos = one ? room[0].pos : NULL;
    size_t fit = one ? (size_t)(room[0].end - pos) / (RECORD_LENGTH_BYTES + len) : 0;
    size_t i, count = (size_t)n;

    if (one && fit < count)
        count = fit;
    for (i = 0; i < count; i++, rec += stride) {
        int64_t t = timed ? ts[i] : RECORD_NO_TIMESTAMP;
        uint64_t key_hash = key_group_hash(rec + offset, 8);
        struct rw_channel *c = one ? room : &room[kg_channel[key_hash & mask]];
        uint8_t *p = one ? pos : c->pos;

        if (!one && unlikely((size_t)(c->end - p) < RECORD_LENGTH_BYTES + len))
            break;
        if (timed && unlikely(t == RECORD_NO_TIMESTAMP))
            break;
        record_writer_write_ahead(p);
        memcpy(p, &len, RECORD_LENGTH_BYTES);
        p[RECORD_LENGTH_BYTES] = tag;
        /* As exchange_collect_hash: the key hash over the timestamp's
         * place when there is none. */
        memcpy(p + RECORD_LENGTH_BYTES + 1, &t, 8);
        memcpy(p + RECORD_LENGTH_BYTES + hdr - 8, &key_hash, 8);
        bytes_copy_fields(p + RECORD_LENGTH_BYTES + hdr, rec, plain);
        if (one)
            pos = p + RECORD_LENGTH_BYTES + len;
        else
            c->pos = p + RECORD_LENGTH_BYTES + len;
    }
    if (one)
        room[0].pos = pos;
    x->records += (uint64_t)i;
    return (int)i;
}

/* hash_run_fit of a timed run with the records' size a constant for the
 * common sizes (two, three and four numbers): their copy a few moves, no
 * branch. */
static SPATE_INLINE int
hash_run_fit_sized(struct exchange_output *x, const uint8_t *rec, size_t stride, const int64_t *ts,
                   int n, bool one)
{
    switch (x->plain_size) {
    case 16:
        return hash_run_fit(x, rec, stride, ts, n, true, 16, one);
    case 24:
        return hash_run_fit(x, rec, stride, ts, n, true, 24, one);
    case 32:
        return hash_run_fit(x, rec, stride, ts, n, true, 32, one);
    default:
        return hash_run_fit(x, rec, stride, ts, n, true, x->plain_size, one);
    }
}

/* Timed runs into one channel or several, and runs without timestamps,
 * each its own function with no call, so that its loops have every
 * register. */
static SPATE_NOINLINE int
hash_run_fit_timed(struct exchange_output *x, const uint8_t *rec, size_t stride, const int64_t *ts,
                   int n)
{
    if (x->nchannels == 1)
        return hash_run_fit_sized(x, rec, stride, ts, n, true);
    return hash_run_fit_sized(x, rec, stride, ts, n, false);
}

static SPATE_NOINLINE int
hash_run_fit_untimed(struct exchange_output *x, const uint8_t *rec, size_t stride, int n)
{
    return hash_run_fit(x, rec, stride, NULL, n, false, x->plain_size, false);
}

/* exchange_collect_hash over a run of records (output.collect_run): the
 * records that fit by hash_run_fit, each one that does not (no room, or
 * no timestamp in a timed run) by the general path. */
static void
exchange_collect_hash_run(struct output *self, const void *recs, size_t stride, const int64_t *ts,
                          int n)
{
    struct exchange_output *x = (struct exchange_output *)self;
    const uint8_t *rec = recs;
    int i = 0;

    while (i < n) {
        struct record_meta m = { RECORD_NO_TIMESTAMP, 0, false };

        if (ts != NULL)
            i += hash_run_fit_timed(x, rec + (size_t)i * stride, stride, ts + i, n - i);
        else
            i += hash_run_fit_untimed(x, rec + (size_t)i * stride, stride, n - i);
        if (i == n)
            break;
        if (ts != NULL)
            m.timestamp = ts[i];
        exchange_collect_hash_general(x, rec + (size_t)i * stride, &m);
        i++;
    }
}

/* keyBy of records of their own lengths (a word and its count) by a key
 * read in place (a string field, a fixed-size field): the key's hash, its
 * channel by table, the record serialized by its type's codec straight
 * into the room, then the header and length before it; the rest (no room,
 * a record that does not fit) by the general path. */
static SPATE_NOINLINE void
exchange_collect_hash_var(struct output *self, const void *rec, const struct record_meta *meta)
{
    struct exchange_output *x = (struct exchange_output *)self;
    spate_bytes key = keys_get(&x->key_access, x->ctx, rec, NULL, 0);
    uint64_t key_hash = key_group_hash(key.data, key.len);
    struct rw_channel *c = &x->room[x->kg_channel[key_hash & x->kg_mask]];
    int64_t ts = meta->timestamp;
    bool timed = ts != RECORD_NO_TIMESTAMP;
    size_t hdr = timed ? ELEMENT_KEYED_TS_HEADER : ELEMENT_KEYED_HEADER;
    size_t room = (size_t)(c->end - c->pos), n;
    uint8_t *p = c->pos;
    uint32_t len;

    if (unlikely(room < RECORD_LENGTH_BYTES + hdr)) {
        exchange_collect_hash_general(x, rec, meta);
        return;
    }
    record_writer_write_ahead(p);
    room -= RECORD_LENGTH_BYTES + hdr;
    n = x->codec.serialize(x->type, rec, p + RECORD_LENGTH_BYTES + hdr, room);
    if (unlikely(n > room)) {
        exchange_collect_hash_general(x, rec, meta);
        return;
    }
    x->records++;
    len = (uint32_t)(hdr + n);
    memcpy(p, &len, RECORD_LENGTH_BYTES);
    p[RECORD_LENGTH_BYTES] = ELEMENT_KEYED_TAG | (timed ? ELEMENT_HAS_TIMESTAMP : 0);
    /* As exchange_collect_hash: the key hash over the timestamp's place
     * when there is none. */
    memcpy(p + RECORD_LENGTH_BYTES + 1, &ts, 8);
    memcpy(p + RECORD_LENGTH_BYTES + hdr - 8, &key_hash, 8);
    c->pos = p + RECORD_LENGTH_BYTES + len;
}

/* keyBy of a word and its count by the word (exchange_output_set_room's
 * word8): the word's hash by XXH3's path for 16 bytes or fewer, inlined,
 * the record written in its serialized form (the count, the word; or the
 * word's length, the word, the count) by a few stores; no call, so no
 * register saved. The rest (no room, a word of more than 16 bytes) by
 * exchange_collect_hash_var. */
static void
exchange_collect_hash_word(struct output *self, const void *rec, const struct record_meta *meta)
{
    struct exchange_output *x = (struct exchange_output *)self;
    const spate_str *word = (const spate_str *)((const uint8_t *)rec + x->key_access.offset);
    /* Read before the stores below, which the compiler cannot tell apart
     * from the record. */
    const uint8_t *data = (const uint8_t *)word->data;
    size_t len = word->len;
    bool last = x->word_last;
    uint64_t count = bytes_load64((const uint8_t *)rec + x->word_count_off);
    int64_t ts = meta->timestamp;
    bool timed = ts != RECORD_NO_TIMESTAMP;
    uint32_t hdr = timed ? ELEMENT_KEYED_TS_HEADER : ELEMENT_KEYED_HEADER;
    uint32_t n = (uint32_t)len + 8 + !last, el;
    uint64_t key_hash;
    struct rw_channel *c;
    uint8_t *p, *body;

    if (unlikely(len > 16)) {
        exchange_collect_hash_var(self, rec, meta);
        return;
    }
    key_hash = key_group_hash_short(data, len);
    c = &x->room[x->kg_channel[key_hash & x->kg_mask]];
    if (unlikely((size_t)(c->end - c->pos) < RECORD_LENGTH_BYTES + hdr + n)) {
        exchange_collect_hash_var(self, rec, meta);
        return;
    }
    x->records++;
    p = c->pos;
    record_writer_write_ahead(p);
    el = hdr + n;
    memcpy(p, &el, RECORD_LENGTH_BYTES);
    p[RECORD_LENGTH_BYTES] = ELEMENT_KEYED_TAG | (timed ? ELEMENT_HAS_TIMESTAMP : 0);
    /* As exchange_collect_hash: the key hash over the timestamp's place
     * when there is none. */
    memcpy(p + RECORD_LENGTH_BYTES + 1, &ts, 8);
    memcpy(p + RECORD_LENGTH_BYTES + hdr - 8, &key_hash, 8);
    body = p + RECORD_LENGTH_BYTES + hdr;
    if (last) {
        memcpy(body, &count, 8);
        bytes_copy_short(body + 8, data, len);
    } else {
        body[0] = (uint8_t)len;
        bytes_copy_short(body + 1, data, len);
        memcpy(body + 1 + len, &count, 8);
    }
    c->pos = body + n;
}

/* Every other partitioner. */
static void
exchange_collect(struct output *self, const void *rec, const struct record_meta *meta)
{
    struct exchange_output *x = (struct exchange_output *)self;
    struct record_meta m;
    int channel;

    record_meta_copy(&m, meta);
    x->records++;
    switch (x->partitioner) {
    case SHIP_BROADCAST:
        m.has_key_hash = false;
        for (int c = 0; c < x->nchannels; c++)
            write_element(x, (uint32_t)c, rec, &m);
        return;
    case SHIP_REBALANCE:
    case SHIP_RESCALE:
        /* Round robin over the channels: all consumers, or the pointwise
         * share (rescale). */
        channel = x->next_channel;
        if (++x->next_channel == x->nchannels)
            x->next_channel = 0;
        m.has_key_hash = false;
        break;
    case SHIP_SHUFFLE:
        channel = (int)(next_random(x) % (uint64_t)x->nchannels);
        m.has_key_hash = false;
        break;
    case SHIP_HASH:    /* exchange_collect_hash */
    case SHIP_FORWARD: /* the one pointwise consumer */
    case SHIP_GLOBAL:  /* consumer subtask 0 */
    default:
        channel = 0;
        m.has_key_hash = false;
        break;
    }
    write_element(x, (uint32_t)channel, rec, &m);
}

/* Writes a small element (watermark, idleness) to every channel. */
static void
broadcast_element(struct exchange_output *x, const uint8_t *bytes, uint32_t len)
{
    for (int c = 0; c < x->nchannels && x->error.code == 0; c++) {
        uint8_t *at = x->ops->reserve(x->sink, (uint32_t)c, len, &x->error);

        if (at == NULL)
            return;
        memcpy(at, bytes, len);
        x->ops->commit(x->sink, len, &x->error);
    }
}

static void
exchange_watermark(struct output *self, int64_t watermark)
{
    struct exchange_output *x = (struct exchange_output *)self;
    uint8_t el[9];

    /* Only advances travel: consumers keep the last one per channel. */
    if (watermark <= x->last_watermark)
        return;
    x->last_watermark = watermark;
    metric_gauge_set(&self->watermark, watermark);
    broadcast_element(x, el, (uint32_t)element_write_watermark(watermark, el));
}

static void
exchange_idle(struct output *self, bool idle)
{
    struct exchange_output *x = (struct exchange_output *)self;
    uint8_t el[2] = { ELEMENT_WATERMARK_STATUS, idle };

    if (idle == x->idle)
        return;
    x->idle = idle;
    broadcast_element(x, el, sizeof el);
}

/* To one channel at random, as Flink's RecordWriterOutput. */
static void
exchange_latency(struct output *self, const struct latency_marker *m)
{
    struct exchange_output *x = (struct exchange_output *)self;
    uint8_t el[LATENCY_MARKER_ELEMENT_SIZE];
    uint8_t *at;

    if (x->nchannels <= 0 || x->error.code != 0)
        return;
    element_write_latency_marker(m, el);
    at = x->ops->reserve(x->sink, (uint32_t)(next_random(x) % (uint64_t)x->nchannels), sizeof el,
                         &x->error);
    if (at == NULL)
        return;
    memcpy(at, el, sizeof el);
    x->ops->commit(x->sink, sizeof el, &x->error);
}

void
exchange_output_init(struct exchange_output *x, const struct jg_edge *edge,
                     const struct spate_type *type, int nchannels, int consumer_max_parallelism,
                     int subtask, const struct exchange_sink_ops *ops, void *sink,
                     struct spate_ctx *ctx)
{
    memset(x, 0, sizeof *x);
    x->base.collect = edge->partitioner == SHIP_HASH ? exchange_collect_hash : exchange_collect;
    x->base.emit_watermark = exchange_watermark;
    x->base.emit_idle = exchange_idle;
    x->base.emit_latency_marker = exchange_latency;
    metric_gauge_set(&x->base.watermark, INT64_MIN);
    x->last_watermark = INT64_MIN;
    x->ops = ops;
    x->sink = sink;
    x->partitioner = edge->partitioner;
    x->key = edge->key;
    keys_access_init(&x->key_access, &x->key, type);
    x->type = type;
    x->codec = types_codec_of(type);
    if (type->plain && type->kind != TYPE_CUSTOM)
        x->plain_size = (uint32_t)type->size;
    x->nchannels = nchannels;
    x->max_parallelism = consumer_max_parallelism;
    x->ctx = ctx;
    x->kg_shift = -1;
    if (consumer_max_parallelism > 0 &&
        (consumer_max_parallelism & (consumer_max_parallelism - 1)) == 0) {
        x->kg_mask = (uint64_t)consumer_max_parallelism - 1;
        x->kg_shift = __builtin_ctz((unsigned)consumer_max_parallelism);
    }
    if (x->partitioner == SHIP_HASH && consumer_max_parallelism > 0) {
        x->kg_channel = xcalloc((size_t)consumer_max_parallelism, sizeof *x->kg_channel);
        for (int kg = 0; kg < consumer_max_parallelism; kg++)
            x->kg_channel[kg] = key_group_operator_index(
                (uint32_t)kg, (uint32_t)consumer_max_parallelism, (uint32_t)nchannels);
    }
    x->random = 0x9E3779B97F4A7C15ULL ^ (uint64_t)(subtask + 1);
    /* Round robin starts at a different channel per producer, so that
     * producers spread their first records, as Flink's random start. */
    if (nchannels > 0)
        x->next_channel = (int)((uint64_t)subtask * 7919 % (uint64_t)nchannels);
}

void
exchange_output_set_room(struct exchange_output *x, struct rw_channel *room)
{
    bool by_table =
        room != NULL && x->partitioner == SHIP_HASH && x->kg_shift >= 0 && x->kg_channel != NULL;

    x->room = room;
    x->keyed8 = by_table && x->key_access.len == 8 && x->plain_size != 0;
    x->base.collect_run = x->keyed8 ? exchange_collect_hash_run : NULL;
    if (x->partitioner != SHIP_HASH)
        return;
    x->base.collect = exchange_collect_hash;
    if (by_table && !x->keyed8 && (x->key_access.string || x->key_access.len != 0))
        x->base.collect = exchange_collect_hash_var;
    /* A word and its count: a tuple of a string, the key, and one 8-byte
     * leaf (the serialized form is the 8 bytes after the word's length
     * and bytes, or before the word when it is last). */
    x->word8 = by_table && x->key_access.string && x->type->one_string &&
               x->type->str1.pre_len + x->type->str1.post_len == 8 &&
               (x->type->str1.post_len == 0) == x->type->str1.str_last &&
               x->key_access.offset == x->type->str1.str_off;
    if (x->word8) {
        x->word_last = x->type->str1.str_last;
        x->word_count_off = x->word_last ? x->type->str1.pre_off : x->type->str1.post_off;
        x->base.collect = exchange_collect_hash_word;
    }
}

void
exchange_output_release(struct exchange_output *x)
{
    free(x->kg_channel);
    x->kg_channel = NULL;
}
